//! Group commit by bucket (or by address): requests wait for their bucket's next script, and
//! one task per busy bucket sends them, as many as fit a script, until none waits. Requests
//! that come while a script is under way go together in the next, and a busy bucket costs
//! one script for many requests. Batches of completions and links, content-seen tests, and
//! an address's turns and leaves (keyed by the address) all wait this way; a batch also waits
//! a moment for more while its process is busy (`batch::LINGER`).

use super::*;

/// Where a request's answer goes.
pub(super) type Reply<A> = oneshot::Sender<Result<A, Error>>;

/// Where a request's answer comes.
pub(super) type Answer<A> = oneshot::Receiver<Result<A, Error>>;

/// The requests waiting for each bucket's next script (`R`, answered with an `A`), the
/// buckets named by a `K`.
pub(super) struct Groups<R, A, K = u32> {
    buckets: Arc<Buckets<R, A, K>>,
}

/// Each bucket's waiting requests, shared with the sending tasks' holds.
type Buckets<R, A, K> = Mutex<HashMap<K, Waiting<R, A>>>;

/// A bucket's waiting requests, and whether a task is sending them.
struct Waiting<R, A> {
    requests: Vec<(R, Reply<A>)>,
    sending: bool,
}

impl<R, A, K> Default for Groups<R, A, K> {
    fn default() -> Self {
        Self {
            buckets: Arc::new(Mutex::new(HashMap::new())),
        }
    }
}

impl<R, A, K: Copy + Eq + std::hash::Hash> Groups<R, A, K> {
    /// Adds a request to `bucket`'s next script. Answers where its answer will come and,
    /// when no task is sending the bucket's requests, the hold on them of the task the
    /// caller must start.
    pub(super) fn wait(&self, bucket: K, request: R) -> (Answer<A>, Option<Sending<R, A, K>>) {
        let (reply, answer) = oneshot::channel();
        (answer, self.push(bucket, request, reply))
    }

    /// Adds a request whose answer goes to `reply`; answers the hold of the task the caller
    /// must start, if none is under way (see [`Sending`]).
    pub(super) fn push(&self, bucket: K, request: R, reply: Reply<A>) -> Option<Sending<R, A, K>> {
        let mut buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        let waiting = buckets.entry(bucket).or_insert_with(|| Waiting {
            requests: Vec::new(),
            sending: false,
        });
        waiting.requests.push((request, reply));
        let start = !std::mem::replace(&mut waiting.sending, true);
        start.then(|| Sending {
            buckets: Arc::clone(&self.buckets),
            bucket,
            done: false,
        })
    }

    /// How many requests wait for `bucket`'s next script, and the sum of `size` over them.
    pub(super) fn waiting(&self, bucket: K, size: impl Fn(&R) -> usize) -> (usize, usize) {
        let buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        buckets.get(&bucket).map_or((0, 0), |w| {
            let total = w.requests.iter().map(|(r, _)| size(r)).sum();
            (w.requests.len(), total)
        })
    }
}

/// A sending task's hold on a bucket's requests: it takes them group by group
/// ([`Sending::next`]) until none waits. Made with the request that starts the task, before
/// the task is spawned: should the task end otherwise (a panic, or dropped unrun when its
/// runtime shuts down), the requests still waiting are answered with an error and the next
/// request starts a task anew, rather than waiting for a task that is gone.
pub(super) struct Sending<R, A, K: Copy + Eq + std::hash::Hash = u32> {
    buckets: Arc<Buckets<R, A, K>>,
    bucket: K,
    /// None waited at the last look: the bucket was left to the next request.
    done: bool,
}

impl<R, A, K: Copy + Eq + std::hash::Hash> Sending<R, A, K> {
    /// The next group: the first `fit` of the waiting requests (at least one), or `None` when
    /// none waits, after which the task ends (the next request starts another).
    pub(super) fn next(
        &mut self,
        fit: impl FnOnce(&[(R, Reply<A>)]) -> usize,
    ) -> Option<Vec<(R, Reply<A>)>> {
        let mut buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        let waiting = buckets.get_mut(&self.bucket);
        let Some(waiting) = waiting.filter(|w| !w.requests.is_empty()) else {
            buckets.remove(&self.bucket);
            self.done = true;
            return None;
        };
        let take = fit(&waiting.requests).clamp(1, waiting.requests.len());
        Some(waiting.requests.drain(..take).collect())
    }
}

impl<R, A, K: Copy + Eq + std::hash::Hash> Drop for Sending<R, A, K> {
    fn drop(&mut self) {
        if !self.done {
            // Their replies dropped, the waiting requests hear that no script will answer.
            self.buckets
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&self.bucket);
        }
    }
}

/// A request's answer (the receiver, or a borrow of it), an error if its reply was dropped:
/// its script's task ended without one.
pub(super) async fn answer<A>(
    answer: impl Future<Output = Result<Result<A, Error>, oneshot::error::RecvError>>,
    what: &str,
) -> Result<A, Error> {
    answer
        .await
        .unwrap_or_else(|_| Err(ErrorKind::Server(format!("{what} was dropped unanswered")).into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_task_sends_a_bucket_until_none_waits_then_the_next_request_starts_another() {
        let groups: Groups<u32, u32> = Groups::default();
        let (_a, sending) = groups.wait(1, 10);
        let mut sending = sending.expect("the first request starts a task");
        let (_b, start) = groups.wait(1, 11);
        assert!(start.is_none(), "a task is under way for the bucket");
        let (_other, start) = groups.wait(2, 20);
        assert!(start.is_some(), "buckets are sent apart");
        let group: Vec<u32> = sending
            .next(|w| w.len())
            .unwrap()
            .into_iter()
            .map(|(r, _)| r)
            .collect();
        assert_eq!(group, [10, 11]);
        assert!(sending.next(|w| w.len()).is_none());
        drop(sending);
        let (_c, start) = groups.wait(1, 12);
        assert!(start.is_some());
    }

    #[test]
    fn a_sending_task_gone_early_fails_the_waiting_requests_and_lets_the_next_start_anew() {
        let groups: Groups<u32, u32> = Groups::default();
        let (mut first, start) = groups.wait(3, 1);
        // The task ends (a panic, or dropped unrun) before it takes the request.
        drop(start.expect("the first request starts a task"));
        assert!(matches!(
            first.try_recv(),
            Err(oneshot::error::TryRecvError::Closed)
        ));
        let (_next, start) = groups.wait(3, 2);
        assert!(
            start.is_some(),
            "a request after it starts a task of its own"
        );
    }
}
