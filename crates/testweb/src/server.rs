//! The HTTP side: one accept loop per host (or per address, for hosts served by name), hyper
//! HTTP/1.1 connections with keep-alive, the request handler and the request log; what it
//! answers with is `reply.rs`'s.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use hyper::body::Incoming;
use hyper::header::{ETAG, HeaderValue, IF_MODIFIED_SINCE, IF_NONE_MATCH, LAST_MODIFIED};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::Request;
use crate::reply::{Body, InFlight, Reply, Wait, reply};
use crate::site::{HostStats, Route, Site, decode_unreserved};
use crate::special;

/// Counts an open connection until dropped.
struct Connection(Arc<HostStats>);

impl Drop for Connection {
    fn drop(&mut self) {
        self.0.connections.fetch_sub(1, Relaxed);
    }
}

/// What a listener serves: one host on its own port, or every host of one address by name.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Serving {
    Host(usize),
    Address(usize),
}

/// Regular page `n` of `host`, with its validators, or 304 Not Modified when the request's
/// conditions (RFC 9110, section 13.2.2) say the client holds it already: `If-None-Match`
/// decides when present (a strong comparison of ETags, or `*`), else `If-Modified-Since`.
fn page(site: &Site, host: usize, n: u64, headers: &hyper::HeaderMap) -> Reply {
    let (etag, modified) = site.validators(host, n);
    let not_modified = match headers.get(IF_NONE_MATCH) {
        Some(tags) => tags.to_str().is_ok_and(|tags| {
            tags.split(',')
                .map(str::trim)
                .any(|tag| tag == "*" || tag == etag)
        }),
        None => headers
            .get(IF_MODIFIED_SINCE)
            .and_then(|since| since.to_str().ok())
            .and_then(|since| httpdate::parse_http_date(since).ok())
            .is_some_and(|since| modified <= since),
    };
    let stats = &site.hosts[host].stats;
    let mut response = if not_modified {
        stats.not_modified.fetch_add(1, Relaxed);
        let mut response = Response::new(Body::full(Vec::new()));
        *response.status_mut() = StatusCode::NOT_MODIFIED;
        response
    } else {
        let html = site.render_page(host, n);
        stats.page_bytes.fetch_add(html.len() as u64, Relaxed);
        reply(200, "text/html; charset=utf-8", Body::full(html))
    };
    let headers = response.headers_mut();
    if let Ok(etag) = HeaderValue::from_str(&etag) {
        headers.insert(ETAG, etag);
    }
    if let Ok(modified) = HeaderValue::from_str(&httpdate::fmt_http_date(modified)) {
        headers.insert(LAST_MODIFIED, modified);
    }
    response
}

/// Serves one request of `host`, or of the host its `Host` header names.
async fn handle(
    site: Arc<Site>,
    serving: Serving,
    request: hyper::Request<Incoming>,
) -> Result<Reply, Infallible> {
    let at = Instant::now();
    let host = match serving {
        Serving::Host(host) => host,
        Serving::Address(address) => {
            let named = request
                .headers()
                .get(hyper::header::HOST)
                .and_then(|v| v.to_str().ok())
                .and_then(|authority| site.host_named(&authority.to_ascii_lowercase()));
            match named {
                Some(host) if site.hosts[host].address == address => host,
                _ => return Ok(special::misdirected()),
            }
        }
    };
    let host_site = &site.hosts[host];
    let address = host_site.address;
    let stats = &host_site.stats;
    let (guard, in_flight, at_address) = InFlight::start(stats, &site.addresses[address].1);
    if let Some(log) = &site.log {
        let path = request
            .uri()
            .path_and_query()
            .map_or("/", |pq| pq.as_str())
            .to_owned();
        let connections = stats.connections.load(Relaxed);
        let entry = Request {
            host,
            address,
            path,
            at,
            in_flight,
            at_address,
            connections,
        };
        log.lock().unwrap_or_else(|e| e.into_inner()).push(entry);
    }
    let latency = host_site.config.latency;
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    let path = decode_unreserved(request.uri().path());
    let (mut response, wait) = match site.route(host, &path) {
        Route::Page(n) => (page(&site, host, n, request.headers()), Wait::None),
        Route::Robots => (special::robots(&site, host), Wait::None),
        Route::Leaf => (special::leaf(&path), Wait::None),
        Route::NotFound => (special::not_found(), Wait::None),
        Route::Special(i) => special::respond(&site, host, i),
    };
    match wait {
        Wait::None => {}
        Wait::Delay(delay) => tokio::time::sleep(delay).await,
        Wait::Forever => std::future::pending::<()>().await,
    }
    response.body_mut().guard = Some(guard);
    Ok(response)
}

/// Accepts and serves connections to one host, or to one address's hosts, until `shutdown`
/// changes or is dropped.
pub(crate) async fn serve(
    site: Arc<Site>,
    serving: Serving,
    listener: TcpListener,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => {
                    // Out of file descriptors, say: let connections finish.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
            _ = shutdown.changed() => return,
        };
        let _ = stream.set_nodelay(true);
        let site = Arc::clone(&site);
        let mut shutdown = shutdown.clone();
        tokio::spawn(async move {
            let stats = match serving {
                Serving::Host(host) => &site.hosts[host].stats,
                Serving::Address(address) => &site.addresses[address].1,
            };
            let stats = Arc::clone(stats);
            stats.connections.fetch_add(1, Relaxed);
            let _open = Connection(stats);
            let service = service_fn(move |request| handle(Arc::clone(&site), serving, request));
            let connection = http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                _ = connection => {}
                _ = shutdown.changed() => {}
            }
        });
    }
}
