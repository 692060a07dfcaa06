//! Group commit by bucket: requests wait for their bucket's next script, and one task per
//! busy bucket sends them, as many as fit a script, until none waits. Requests that come while
//! a script is under way go together in the next: no timer, and a busy bucket costs one
//! script for many requests. Batches of completions and links, and content-seen tests, both
//! wait this way.

use super::*;

/// Where a request's answer goes.
pub(super) type Reply<A> = oneshot::Sender<Result<A, Error>>;

/// The requests waiting for each bucket's next script (`R`, answered with an `A`).
pub(super) struct Groups<R, A> {
    buckets: Mutex<HashMap<u32, Waiting<R, A>>>,
}

/// A bucket's waiting requests, and whether a task is sending them.
struct Waiting<R, A> {
    requests: Vec<(R, Reply<A>)>,
    sending: bool,
}

impl<R, A> Default for Groups<R, A> {
    fn default() -> Self {
        Self {
            buckets: Mutex::new(HashMap::new()),
        }
    }
}

impl<R, A> Groups<R, A> {
    /// Adds a request to `bucket`'s next script. Answers where its answer will come and
    /// whether the caller must start the bucket's sending task (none is under way).
    pub(super) fn wait(
        &self,
        bucket: u32,
        request: R,
    ) -> (oneshot::Receiver<Result<A, Error>>, bool) {
        let (reply, answer) = oneshot::channel();
        (answer, self.push(bucket, request, reply))
    }

    /// Adds a request whose answer goes to `reply`; answers whether the caller must start
    /// the bucket's sending task.
    pub(super) fn push(&self, bucket: u32, request: R, reply: Reply<A>) -> bool {
        let mut buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        let waiting = buckets.entry(bucket).or_insert_with(|| Waiting {
            requests: Vec::new(),
            sending: false,
        });
        waiting.requests.push((request, reply));
        !std::mem::replace(&mut waiting.sending, true)
    }

    /// The sending task's next group: the first `fit` of the waiting requests (at least one),
    /// or `None` when none waits, after which the task ends (the next request starts another).
    pub(super) fn next(
        &self,
        bucket: u32,
        fit: impl FnOnce(&[(R, Reply<A>)]) -> usize,
    ) -> Option<Vec<(R, Reply<A>)>> {
        let mut buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        let waiting = buckets.get_mut(&bucket)?;
        if waiting.requests.is_empty() {
            buckets.remove(&bucket);
            return None;
        }
        let take = fit(&waiting.requests).clamp(1, waiting.requests.len());
        Some(waiting.requests.drain(..take).collect())
    }
}

/// The answer of a request whose reply was dropped: its script's task ended without one.
pub(super) async fn answer<A>(
    answer: oneshot::Receiver<Result<A, Error>>,
    what: &str,
) -> Result<A, Error> {
    answer
        .await
        .unwrap_or_else(|_| Err(ErrorKind::Server(format!("{what} was dropped unanswered")).into()))
}
