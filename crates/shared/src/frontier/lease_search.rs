//! Which buckets this process owns among the processes present (rendezvous hashing), and
//! the count of leases held by workers.

use super::*;

/// The fetch workers' leases: how many of them hold one.
pub(super) struct Search {
    /// Workers holding a lease.
    pub(super) working: Arc<AtomicUsize>,
}

/// Counts one in `count` until dropped, however its holder ends (an early return, a
/// panic): a lease with a worker, until the worker completes it, gives it back or drops it;
/// a completion under way (see `Sent::completing`).
#[derive(Debug)]
pub(super) struct Counted(pub(super) Arc<AtomicUsize>);

impl Counted {
    pub(super) fn new(count: &Arc<AtomicUsize>) -> Counted {
        count.fetch_add(1, Ordering::Relaxed);
        Counted(Arc::clone(count))
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Which of `buckets` process `me` owns among `present` (itself counted present): those
/// for which its id hashes highest (rendezvous hashing).
pub(super) fn owned_buckets(
    me: &str,
    present: &[String],
    buckets: u32,
    key: &[u8; 16],
) -> Vec<bool> {
    let rank = |id: &str, bucket: u32| {
        let mut sip = SipHasher13::new_with_key(key);
        sip.write(id.as_bytes());
        sip.write_u32(bucket);
        sip.finish()
    };
    (0..buckets)
        .map(|bucket| {
            let mine = rank(me, bucket);
            present
                .iter()
                .all(|other| other == me || rank(other, bucket) < mine)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_bucket_has_one_owner_and_a_process_leaving_moves_only_its_own() {
        let key = [3; 16];
        let ids: Vec<String> = (0..4).map(|i| format!("process-{i}")).collect();
        let of_all: Vec<Vec<bool>> = ids
            .iter()
            .map(|me| owned_buckets(me, &ids, 64, &key))
            .collect();
        for bucket in 0..64 {
            assert_eq!(
                of_all.iter().filter(|o| o[bucket]).count(),
                1,
                "bucket {bucket}"
            );
        }
        assert!(of_all.iter().all(|o| o.iter().filter(|&&b| b).count() >= 4));
        // Alone (or not yet in the list it read): everything.
        assert!(owned_buckets("process-9", &[], 64, &key).iter().all(|&b| b));
        // Process 3 leaves: the others keep what they had and share its buckets.
        let rest = &ids[..3];
        for (me, before) in rest.iter().zip(&of_all) {
            let after = owned_buckets(me, rest, 64, &key);
            for bucket in 0..64 {
                assert!(!before[bucket] || after[bucket]);
                assert_eq!(
                    after[bucket],
                    before[bucket] || (of_all[3][bucket] && after[bucket])
                );
            }
        }
    }
}
