//! A page's links to buckets this process does not own go to the bucket's list of links
//! (`{tag}:links`) with a plain `RPUSH`, not through a batch script: a script costs Redis
//! some 100,000 instructions whatever it carries, and half of a two-process crawl's batches
//! carried only such links, half of them seen already (each process sends each URL it meets
//! once). The bucket's owner reads the list (`LRANGE`), drops the links it has itself had
//! admitted in Redis (its [`Sent::pushed`](super::batch::Sent::pushed), a subset of what the
//! bucket's seen-test holds), and admits the rest in a step of its own batch, which trims
//! what was read. The crawl is not over while a list holds links.

use super::batch::{Link, MAX_BATCH, Step, StepAnswer};
use super::*;

/// The most links an owner reads from its bucket's list at once: one step of its batch.
const READ_AT_ONCE: usize = MAX_BATCH;

/// A read of a bucket's list, carried by the step of its links for the batch to trim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Read {
    /// Entries read from the head of the list.
    pub(super) links: usize,
    /// The bucket's count of links read before (`links_read` in its counts), read before
    /// the list: a batch trims only while it is unchanged, so that it never trims links it
    /// did not read (another owner's trim since, or Redis gone back to an older state).
    pub(super) before: i64,
    /// Which Redis it was read from (see [`Inner::reached`]): a batch sent to another
    /// trims nothing.
    pub(super) reached: (u64, u64),
}

impl Inner {
    /// Which Redis this process talks to, as far as it knows: its count of servers met
    /// and of times it forgot what it sent (Redis went back).
    pub(super) fn reached(&self) -> (u64, u64) {
        (
            self.store.server_changes(),
            self.presence.forgets.load(Ordering::Relaxed),
        )
    }

    /// Sends a batch's links to their bucket's list, for its owner: the batch of a bucket
    /// this process does not own, with only links to forward. Links that a copy of a frozen
    /// generation holds are seen, and not sent. Answers as a batch script would, each step
    /// [`StepAnswer::forwarded`], and no generations read.
    pub(super) async fn forward(
        &self,
        bucket: u32,
        steps: &[(Step, Reply<StepAnswer>)],
    ) -> Result<(Vec<StepAnswer>, i64), Error> {
        let mut cmd = redis::cmd("RPUSH");
        cmd.arg(format!("{}:links", self.store.tag(bucket)));
        let mut sent = 0;
        for link in steps.iter().flat_map(|(step, _)| &step.links) {
            let mut probes = link.probes;
            if self.keys.frozen.holds(bucket, &mut probes) {
                tracing::trace!(url = %link.url, "link not sent: a frozen generation holds it");
                continue;
            }
            cmd.arg(scripts::queue_entry(
                link.depth,
                link.url.as_str(),
                link.from.as_deref(),
                link.memo.as_deref(),
            ));
            sent += 1;
        }
        if sent > 0 {
            self.store.query::<i64>(&cmd).await?;
        }
        let answer = StepAnswer {
            forwarded: true,
            ..StepAnswer::default()
        };
        Ok((vec![answer; steps.len()], -1))
    }

    /// Reads an owned bucket's list if its last batch said links wait there and no read is
    /// under way; again after each read, while links wait.
    pub(super) fn read_links_if_waiting(self: &Arc<Self>, bucket: u32) {
        let epoch = {
            let mut buckets = self.owners.buckets();
            let Some(owned) = buckets.get_mut(&bucket) else {
                return;
            };
            if !owned.links_waiting || owned.reading_links {
                return;
            }
            owned.links_waiting = false;
            owned.reading_links = true;
            owned.epoch
        };
        let inner = Arc::clone(self);
        tokio::spawn(async move {
            if let Err(err) = Arc::clone(&inner).read_links(bucket).await {
                // Left in the list: read again after the bucket's next batch.
                tracing::debug!("reading the links of bucket {bucket}: {err}");
            }
            let done = inner
                .owners
                .buckets()
                .get_mut(&bucket)
                .filter(|owned| owned.epoch == epoch)
                .map(|owned| owned.reading_links = false);
            if done.is_some() {
                inner.read_links_if_waiting(bucket);
            }
        });
    }

    /// Reads links from the head of a bucket's list and admits those this process has not
    /// had admitted itself, in a step of the bucket's batch that trims what was read.
    async fn read_links(self: Arc<Self>, bucket: u32) -> Result<(), Error> {
        self.tick(batch::TICK).await;
        self.check_server();
        let reached = self.reached();
        let tag = self.store.tag(bucket);
        // The count first: a trim between the two reads then makes this read's count stale
        // (its trim refused, its links admitted twice, harmless), where the other order
        // would trim links never read. One round trip on one server (a pipeline keeps its
        // order); a cluster's pipelines do not, and it reads them one after the other.
        let mut count = redis::cmd("HGET");
        count.arg(format!("{tag}:counts")).arg("links_read");
        let mut range = redis::cmd("LRANGE");
        range
            .arg(format!("{tag}:links"))
            .arg(0)
            .arg(READ_AT_ONCE - 1);
        let (before, entries) = match self.store.is_cluster() {
            true => (
                self.store.query::<redis::Value>(&count).await?,
                self.store.query::<redis::Value>(&range).await?,
            ),
            false => {
                let mut both = self
                    .store
                    .query_each::<redis::Value>(&[count, range])
                    .await?;
                let entries = both.pop().unwrap_or(redis::Value::Nil);
                (both.pop().unwrap_or(redis::Value::Nil), entries)
            }
        };
        let bad = |what| Error::from(ErrorKind::Server(format!("unexpected answer to {what}")));
        let before: Option<i64> = redis::from_redis_value(before).map_err(|_| bad("HGET"))?;
        let entries: Vec<Vec<u8>> = redis::from_redis_value(entries).map_err(|_| bad("LRANGE"))?;
        if entries.is_empty() || self.reached() != reached {
            return Ok(());
        }
        let mut links = Vec::with_capacity(entries.len());
        for entry in &entries {
            let Some(link) = self.read_entry(&String::from_utf8_lossy(entry), bucket) else {
                tracing::warn!("a link in the list of bucket {bucket} does not read: dropped");
                self.count_invalid("unreadable_link");
                continue;
            };
            if link.bucket != bucket {
                tracing::warn!(url = %link.url, "a link in the list of bucket {bucket} is another's: dropped");
                self.count_invalid("unreadable_link");
            } else if self.owner_first(&link.url) {
                links.push(link);
            }
        }
        let read = Read {
            links: entries.len(),
            before: before.unwrap_or(0),
            reached,
        };
        let sent = links.len();
        let step = Step {
            read: Some(read),
            ..Step::links(links)
        };
        let answer = Arc::clone(&self).submit(bucket, step).await?;
        self.count_admitted(sent, answer.admitted, answer.refused);
        Ok(())
    }

    /// A link as [`Inner::forward`] queued it in the list of `bucket`.
    fn read_entry(&self, entry: &str, bucket: u32) -> Option<Link> {
        let mut parts = entry.splitn(4, ' ');
        let (Some(_), Some(depth), Some(url)) = (parts.next(), parts.next(), parts.next()) else {
            return None;
        };
        let (referrer, memo) = batch::entry_tail(parts.next());
        let depth: u32 = depth.parse().ok()?;
        let url = super::owners::canonical_again(&self.rules.canon, url)?;
        // Its sender placed its host here (by address), whether this process knew or not.
        self.learn_place(url.host_key(), bucket);
        let mut link = self.link(
            url,
            depth,
            referrer.map(Arc::from),
            memo.as_deref(),
            &Placed::default(),
        );
        if self.keys.layout.buckets_by == crate::BucketsBy::Address {
            // The sender's place, even against this process's (one Redis went back on).
            link.bucket = bucket;
        }
        Some(link)
    }
}

#[cfg(test)]
mod tests {
    use crate::scripts::queue_entry;

    #[test]
    fn a_forwarded_entry_holds_what_a_queue_entry_holds() {
        let entry = queue_entry(3, "http://a/x", Some("http://a/"), Some("~AAE"));
        assert_eq!(entry, "0 3 http://a/x http://a/ ~AAE");
        let (referrer, memo) = super::batch::entry_tail(entry.splitn(4, ' ').nth(3));
        assert_eq!(referrer.as_deref(), Some("http://a/"));
        assert_eq!(memo, Some(vec![0, 1]));
        // A referrer that is not one token is not kept.
        assert_eq!(
            queue_entry(0, "http://a/", Some("a b"), None),
            "0 0 http://a/"
        );
    }
}
