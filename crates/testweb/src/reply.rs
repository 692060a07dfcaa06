//! What the server answers with: a response whose body is whole, repeated or trickled, the
//! wait before it, and the count of requests in flight that ends with its last byte.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Frame, SizeHint};
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Response, StatusCode};
use tokio::time::Sleep;

use crate::site::HostStats;

/// Counts a request as in flight until dropped, which happens when its response body is
/// fully handed to the connection (or the connection dies).
#[derive(Debug)]
pub(crate) struct InFlight([Arc<HostStats>; 2]);

impl InFlight {
    /// Counts a request in flight at its host and at its address; answers the counts, itself
    /// included.
    pub(crate) fn start(
        host: &Arc<HostStats>,
        address: &Arc<HostStats>,
    ) -> (InFlight, usize, usize) {
        let counts = [host, address].map(|stats| {
            let n = stats.in_flight.fetch_add(1, Relaxed) + 1;
            stats.max_in_flight.fetch_max(n, Relaxed);
            stats.requests.fetch_add(1, Relaxed);
            n
        });
        let guard = InFlight([Arc::clone(host), Arc::clone(address)]);
        (guard, counts[0], counts[1])
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        for stats in &self.0 {
            stats.in_flight.fetch_sub(1, Relaxed);
        }
    }
}

/// A response body: all at once, a repeated chunk, or chunks trickled with pauses.
#[derive(Debug)]
pub(crate) struct Body {
    inner: Inner,
    /// The request's count in flight, ended with the body's last byte.
    pub(crate) guard: Option<InFlight>,
}

#[derive(Debug)]
enum Inner {
    Full(Option<Bytes>),
    Repeat {
        chunk: Bytes,
        remaining: u64,
    },
    Trickle {
        chunk: Bytes,
        remaining: u32,
        interval: Duration,
        sleep: Option<Pin<Box<Sleep>>>,
    },
}

impl Body {
    /// The whole body at once.
    pub(crate) fn full(bytes: impl Into<Bytes>) -> Body {
        Body {
            inner: Inner::Full(Some(bytes.into())),
            guard: None,
        }
    }

    /// `total` bytes made of `chunk` repeated (and cut).
    pub(crate) fn repeat(chunk: Bytes, total: u64) -> Body {
        Body {
            inner: Inner::Repeat {
                chunk,
                remaining: total,
            },
            guard: None,
        }
    }

    /// `chunks` copies of `chunk`, the first at once, then one every `interval`.
    pub(crate) fn trickle(chunk: Bytes, chunks: u32, interval: Duration) -> Body {
        Body {
            inner: Inner::Trickle {
                chunk,
                remaining: chunks,
                interval,
                sleep: None,
            },
            guard: None,
        }
    }

    fn remaining(&self) -> u64 {
        match &self.inner {
            Inner::Full(bytes) => bytes.as_ref().map_or(0, |b| b.len() as u64),
            Inner::Repeat { remaining, .. } => *remaining,
            Inner::Trickle {
                chunk, remaining, ..
            } => chunk.len() as u64 * u64::from(*remaining),
        }
    }
}

impl hyper::body::Body for Body {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        let frame = match &mut this.inner {
            Inner::Full(bytes) => bytes.take(),
            Inner::Repeat { chunk, remaining } => {
                if *remaining == 0 || chunk.is_empty() {
                    None
                } else {
                    let n = (*remaining).min(chunk.len() as u64);
                    *remaining -= n;
                    Some(chunk.slice(..n as usize))
                }
            }
            Inner::Trickle {
                chunk,
                remaining,
                interval,
                sleep,
            } => {
                if *remaining == 0 {
                    None
                } else {
                    if let Some(sleep) = sleep {
                        ready!(sleep.as_mut().poll(cx));
                    }
                    *remaining -= 1;
                    *sleep = Some(Box::pin(tokio::time::sleep(*interval)));
                    Some(chunk.clone())
                }
            }
        };
        // Ended as the last bytes are handed to the connection, not when hyper drops the
        // body after writing them: a client that read them all may send its next request
        // before this task runs again, and would be counted two in flight where it never was.
        if frame.is_none() || this.remaining() == 0 {
            this.guard = None;
        }
        Poll::Ready(frame.map(|bytes| Ok(Frame::data(bytes))))
    }

    fn is_end_stream(&self) -> bool {
        self.remaining() == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining())
    }
}

/// What a handler does before answering.
#[derive(Debug)]
pub(crate) enum Wait {
    /// Nothing: answer at once.
    None,
    /// Sleep this long first.
    Delay(Duration),
    /// Never answer.
    Forever,
}

/// A response with a body of our type.
pub(crate) type Reply = Response<Body>;

/// A response with a status, a content type and a body.
pub(crate) fn reply(status: u16, content_type: &'static str, body: Body) -> Reply {
    let mut response = Response::new(body);
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}
