//! The queues' part of a checkpoint: every host's state and queued URLs (the ones on disk as
//! links into the spill segments), the leases in flight, and the counters. Each URL carries
//! its referrer as spill runs write it (see `spill.rs`), since state version 2.
//!
//! Instants are not portable across processes, so a host's next-allowed instant is stored
//! as the time left from the checkpoint's `now`, and restored relative to the `now` of
//! [`HostQueues::decode`]: a host that had to wait 3 more seconds still waits 3 seconds.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::entry::{encode_from, encode_parts};
use super::host::{HostQueue, HostState, Spilled};
use super::spill::{RunRef, SpillSettings, SpillStore};
use super::{Entry, HostQueues, Politeness, QueueStats, Spill, later};
use crate::codec::{Reader, put_bytes, put_varint};

impl HostQueues {
    /// Appends the queues' state, as of `now`, to `out`.
    pub(crate) fn encode(&self, now: Instant, out: &mut Vec<u8>) {
        let mut stats = self.stats;
        for n in counters(&mut stats) {
            put_varint(out, *n);
        }
        let mut names = vec![""; self.hosts.len()];
        for (name, &h) in &self.index {
            names[h as usize] = name;
        }
        put_varint(out, self.hosts.len() as u64);
        for (host, name) in self.hosts.iter().zip(names) {
            put_bytes(out, name.as_bytes());
            put_varint(out, host.crawl_delay.as_millis() as u64);
            put_varint(out, host.record.errors_in_row.into());
            put_varint(out, host.record.given_up.into());
            // 0 for none, else 1 + milliseconds left, rounded up so no wait gets shorter.
            let wait = host.record.next_allowed.map_or(0, |t| {
                let left = t.saturating_duration_since(now);
                1 + left.as_millis() as u64 + u64::from(left.subsec_nanos() % 1_000_000 > 0)
            });
            put_varint(out, wait);
            encode_entries(out, &host.queue.front);
            match &host.queue.spilled {
                None => put_varint(out, 0),
                Some(spilled) => {
                    put_varint(out, 1);
                    encode_run(out, spilled.first);
                    encode_run(out, spilled.last);
                    put_varint(out, spilled.runs);
                    put_varint(out, spilled.urls);
                    encode_entries(out, &spilled.back);
                }
            }
        }
        // Leases in flight, oldest first: they go back to the front of their host's queue.
        let mut leased: Vec<_> = self.leased.iter().collect();
        leased.sort_unstable_by_key(|&(&id, _)| id);
        put_varint(out, leased.len() as u64);
        let mut previous = None;
        for (_, lease) in leased {
            put_varint(out, lease.host.into());
            encode_parts(out, &lease.url, lease.depth, lease.attempts);
            encode_from(
                out,
                lease.from.as_ref(),
                lease.memo.as_deref().map(|memo| &**memo),
                &mut previous,
            );
        }
    }

    /// Rebuilds queues from [`encode`](Self::encode)'s bytes at `now`, with the leases that
    /// were in flight queued again at the front of their hosts, as if abandoned. `spill` holds
    /// the checkpoint's segments already; it is required when any host has URLs on disk.
    /// `referrers`: whether entries carry their referrers (not in checkpoints of versions
    /// before them, whose URLs come back with their referrer unknown). `None` when the bytes
    /// do not decode.
    pub(crate) fn decode(
        reader: &mut Reader<'_>,
        referrers: bool,
        politeness: Politeness,
        spill: Option<(SpillSettings, SpillStore)>,
        now: Instant,
    ) -> Option<HostQueues> {
        let mut queues = HostQueues::new(politeness);
        let mut stats = QueueStats::default();
        for n in counters(&mut stats) {
            *n = reader.varint()?;
        }
        let hosts = reader.varint()?;
        let mut names = Vec::new();
        for h in 0..hosts {
            let h = u32::try_from(h).ok()?;
            let name = reader.str()?;
            if queues.index.insert(name.into(), h).is_some() {
                return None;
            }
            names.push(name);
            let crawl_delay = Duration::from_millis(reader.varint()?);
            let consecutive_errors = reader.u32()?;
            let given_up = match reader.varint()? {
                0 => false,
                1 => true,
                _ => return None,
            };
            let next_allowed = match reader.varint()? {
                0 => None,
                wait => Some(later(now, Duration::from_millis(wait - 1))),
            };
            let front = decode_entries(reader, name, referrers)?;
            let spilled = match reader.varint()? {
                0 => None,
                1 => {
                    let first = decode_run(reader)?;
                    let last = decode_run(reader)?;
                    let runs = reader.varint()?;
                    let urls = reader.varint()?;
                    let back = decode_entries(reader, name, referrers)?;
                    let within = |run| spill.as_ref().is_some_and(|(_, store)| store.holds(run));
                    if runs == 0 || urls < runs || !within(first) || !within(last) {
                        return None;
                    }
                    Some(Box::new(Spilled {
                        first,
                        last,
                        runs,
                        urls,
                        back,
                    }))
                }
                _ => return None,
            };
            let queue = HostQueue { front, spilled };
            let in_memory = queue.in_memory();
            let on_disk = queue.spilled.as_ref().map_or(0, |s| s.urls);
            stats.queued = stats
                .queued
                .checked_add(in_memory as u64)?
                .checked_add(on_disk)?;
            stats.on_disk = stats.on_disk.checked_add(on_disk)?;
            stats.hosts_queued += u64::from(!queue.is_empty());
            queues.memory += queue.front.iter().map(Entry::bytes).sum::<usize>()
                + queue
                    .spilled
                    .as_ref()
                    .map_or(0, |s| s.back.iter().map(Entry::bytes).sum::<usize>());
            queues.hosts.push(HostState {
                queue,
                in_flight: 0,
                record: super::HostRecord {
                    errors_in_row: consecutive_errors,
                    // The clock is not kept: restarted, a failing host gets the whole time
                    // again.
                    failing_since: (consecutive_errors > 0).then_some(now),
                    given_up,
                    next_allowed,
                    last_start: None,
                },
                crawl_delay: crawl_delay.min(queues.politeness.max_crawl_delay()),
                own: Some(queues.politeness.host(name))
                    .filter(|own| !own.is_default())
                    .map(Box::new),
                entry: None,
            });
        }
        stats.hosts = hosts;
        let in_flight = reader.varint()?;
        let mut requeued: Vec<(u32, Entry)> = Vec::new();
        let mut previous = None;
        for _ in 0..in_flight {
            let h = reader.u32()?;
            let name = names.get(h as usize)?;
            let previous = referrers.then_some(&mut previous);
            let entry = Entry::decode(reader, Some(name), previous)?;
            requeued.push((h, entry));
        }
        // Newest first to the front, so the oldest lease's URL ends up first in line.
        for (h, entry) in requeued.into_iter().rev() {
            let host = &mut queues.hosts[h as usize];
            if host.queue.is_empty() {
                stats.hosts_queued += 1;
            }
            queues.memory += entry.bytes();
            host.queue.push_front(entry);
            stats.queued += 1;
        }
        let accounted = stats.accounted_for()?;
        // Every URL pushed is accounted for exactly once (retries move a URL, they do not
        // add one); counters that disagree are corruption.
        if accounted != stats.pushed {
            return None;
        }
        queues.stats = stats;
        queues.spill = spill.map(|(settings, store)| Spill { settings, store });
        for h in 0..queues.hosts.len() as u32 {
            queues.schedule(h, now);
        }
        Some(queues)
    }
}

/// The counters a checkpoint keeps, in the order it writes them; the others (queued, in
/// flight, on disk, hosts) follow from the hosts restored.
fn counters(s: &mut QueueStats) -> [&mut u64; 10] {
    [
        &mut s.pushed,
        &mut s.leases,
        &mut s.retries,
        &mut s.succeeded,
        &mut s.failed,
        &mut s.exhausted,
        &mut s.given_up_hosts,
        &mut s.given_up_urls,
        &mut s.evictions,
        &mut s.lost_urls,
    ]
}

fn encode_entries(out: &mut Vec<u8>, entries: &VecDeque<Entry>) {
    put_varint(out, entries.len() as u64);
    let mut previous = None;
    for entry in entries {
        entry.encode(out, &mut previous);
    }
}

/// Entries of the host named `host`: an entry of another host is corruption. `referrers`:
/// whether they carry their referrers.
fn decode_entries(reader: &mut Reader<'_>, host: &str, referrers: bool) -> Option<VecDeque<Entry>> {
    let n = reader.varint()?;
    // No capacity from the count: a damaged count must not allocate before it fails.
    let mut entries = VecDeque::new();
    let mut previous = None;
    for _ in 0..n {
        let previous = referrers.then_some(&mut previous);
        let entry = Entry::decode(reader, Some(host), previous)?;
        entries.push_back(entry);
    }
    Some(entries)
}

fn encode_run(out: &mut Vec<u8>, run: RunRef) {
    put_varint(out, run.segment.into());
    put_varint(out, run.size.into());
    put_varint(out, run.offset);
}

fn decode_run(reader: &mut Reader<'_>) -> Option<RunRef> {
    Some(RunRef {
        segment: reader.u32()?,
        size: reader.u32()?,
        offset: reader.varint()?,
    })
}
