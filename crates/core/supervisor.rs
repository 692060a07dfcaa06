//! The crawl supervised to its end: checkpoints every `state.checkpoint_interval`, the journal's
//! group commit, and Ctrl-C (a grace period for fetches in flight, then the final
//! checkpoint; a second Ctrl-C quits at once).

use std::sync::Arc;

use crate::backend;
use crate::config::Config;
use crate::crawl::{Crawler, Shutdown};
use crate::report;

/// Runs the crawl to its end, checkpointing every `state.checkpoint_interval` when there is
/// a state directory, and stopping on Ctrl-C: fetches in flight get `state.shutdown_grace` to
/// finish, then the crawl is checkpointed and ends. A second Ctrl-C, even during the final
/// checkpoint, quits at once: returns true, and the caller exits.
pub(crate) async fn supervise(
    crawler: &Arc<Crawler>,
    config: &Config,
    checkpoint: Option<&std::path::Path>,
) -> bool {
    // Messages below go through the progress display, lest its next frame overwrite them.
    let source = Arc::clone(crawler);
    let progress = report::Progress::start(move || source.snapshot(), &config.output);
    let shutdown = Shutdown::default();
    let run = crawler.run(shutdown.clone());
    tokio::pin!(run);
    let mut ticks = tokio::time::interval(
        config
            .state
            .checkpoint_interval
            .max(std::time::Duration::from_millis(10)),
    );
    // A slow checkpoint is not followed by a burst of them.
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticks.tick().await;
    let journal_interval = config.state.journal_sync_interval;
    let journaled = checkpoint.is_some() && !journal_interval.is_zero();
    let mut syncs =
        tokio::time::interval(journal_interval.max(std::time::Duration::from_millis(1)));
    syncs.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    syncs.tick().await;
    let mut interrupts = Interrupts::new();
    let mut grace: Option<std::pin::Pin<Box<tokio::time::Sleep>>> = None;
    let mut quit = false;
    loop {
        tokio::select! {
            () = &mut run => break,
            _ = ticks.tick(), if checkpoint.is_some() && !shutdown.stop.is_cancelled() => {
                save(crawler, checkpoint);
            }
            // Group commit: records, then the journal entries that complete them, on disk.
            _ = syncs.tick(), if journaled => {
                tokio::task::block_in_place(|| crawler.sync_journal());
            }
            () = interrupts.next() => {
                if shutdown.stop.is_cancelled() {
                    progress.println("crawler: interrupted again; quitting now");
                    quit = true;
                    shutdown.abort.cancel();
                    continue;
                }
                let queued = crawler.frontier().stats().queues.queued;
                let kept = match (crawler.frontier(), checkpoint.is_some()) {
                    (backend::Backend::Shared(_), _) => KeptIn::Redis,
                    (_, true) => KeptIn::StateDir,
                    (_, false) => KeptIn::Nowhere,
                };
                progress.println(&stopping_message(config.state.shutdown_grace, kept, queued));
                shutdown.stop.cancel();
                grace = Some(Box::pin(tokio::time::sleep(config.state.shutdown_grace)));
            }
            () = async { grace.as_mut().expect("armed").await }, if grace.is_some() => {
                grace = None;
                progress.println(if checkpoint.is_some() {
                    "crawler: fetches still in flight after the grace period; they will be fetched \
                     again on resume"
                } else {
                    "crawler: fetches still in flight after the grace period; stopping without them"
                });
                // Cancelled workers put their leases back, without records, before the final
                // checkpoint holds them as queued.
                shutdown.abort.cancel();
            }
        }
    }
    progress.finish().await;
    if quit {
        return true;
    }
    // The final checkpoint, on a thread of its own, so that a second Ctrl-C still quits.
    let Some(dir) = checkpoint else {
        return false;
    };
    let (crawler, dir) = (Arc::clone(crawler), dir.to_owned());
    let saving = tokio::task::spawn_blocking(move || crawler.checkpoint(&dir));
    tokio::select! {
        _ = saving => false,
        () = interrupts.next() => {
            eprintln!(
                "crawler: interrupted during the final checkpoint; quitting now (the state \
                 directory keeps the previous checkpoint, or this one if it was complete)"
            );
            true
        }
    }
}

/// Ctrl-C, one press at a time, none missed between two waits (a press is kept until asked
/// for). If it cannot be listened for, the crawl runs on without it (said once), rather than
/// not at all.
struct Interrupts {
    #[cfg(unix)]
    signal: Option<tokio::signal::unix::Signal>,
    #[cfg(not(unix))]
    listening: bool,
}

impl Interrupts {
    #[cfg(unix)]
    fn new() -> Self {
        use tokio::signal::unix::{SignalKind, signal};
        let signal = signal(SignalKind::interrupt())
            .map_err(|err| {
                tracing::warn!("cannot listen for Ctrl-C ({err}); the crawl runs without it");
            })
            .ok();
        Interrupts { signal }
    }

    #[cfg(not(unix))]
    fn new() -> Self {
        Interrupts { listening: true }
    }

    /// The next Ctrl-C; never, if it cannot be listened for.
    #[cfg(unix)]
    async fn next(&mut self) {
        if let Some(signal) = &mut self.signal
            && signal.recv().await.is_some()
        {
            return;
        }
        std::future::pending().await
    }

    /// The next Ctrl-C; never, once listening has failed.
    #[cfg(not(unix))]
    async fn next(&mut self) {
        if self.listening {
            match tokio::signal::ctrl_c().await {
                Ok(()) => return,
                Err(err) => {
                    tracing::warn!("cannot listen for Ctrl-C ({err}); the crawl runs without it");
                    self.listening = false;
                }
            }
        }
        std::future::pending::<()>().await;
    }
}

/// Where the queued URLs are kept when a crawl stops.
#[derive(Clone, Copy)]
enum KeptIn {
    /// In the state directory's checkpoint.
    StateDir,
    /// In Redis, with the shared crawl.
    Redis,
    /// Nowhere: they are lost.
    Nowhere,
}

/// What Ctrl-C prints: how long fetches in flight have, and what becomes of the queued URLs,
/// which only a state directory or a shared crawl keeps.
fn stopping_message(grace: std::time::Duration, kept: KeptIn, queued: u64) -> String {
    let mut message = format!(
        "crawler: stopping; fetches in flight have {grace:?} to finish. Ctrl-C again to quit now."
    );
    if let KeptIn::StateDir = kept {
        message.push_str(
            "\ncrawler: the queued URLs go into the checkpoint: --resume goes on with them.",
        );
    } else if let KeptIn::Redis = kept {
        message.push_str(
            "\ncrawler: the queued URLs stay in Redis with the shared crawl, and this \
             process's leases go back to it (at once, or when their lease_time ends): the other \
             processes go on with them, and so does a crawler started again with the same \
             --redis.",
        );
    } else {
        message.push_str(&format!(
            "\ncrawler: the {} queued URLs will be lost: there is no --state-dir. To be able to \
             stop and go on later, start crawls with --state-dir DIR, then resume with --resume \
             --state-dir DIR.",
            report::count(queued)
        ));
    }
    message
}

/// Checkpoints the crawl to `checkpoint`, if there is a state directory.
fn save(crawler: &Crawler, checkpoint: Option<&std::path::Path>) {
    let Some(dir) = checkpoint else { return };
    // A checkpoint writes files and holds up the workers: keep it off the scheduler.
    tokio::task::block_in_place(|| crawler.checkpoint(dir));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctrl_c_without_a_state_dir_says_the_queue_is_lost_and_how_to_keep_it() {
        let grace = std::time::Duration::from_secs(10);
        let message = stopping_message(grace, KeptIn::Nowhere, 12_345);
        assert!(
            message.contains("12,345 queued URLs will be lost"),
            "{message}"
        );
        assert!(message.contains("--state-dir DIR"), "{message}");
        assert!(message.contains("--resume"), "{message}");
        assert!(message.contains("Ctrl-C again to quit now"), "{message}");
        let message = stopping_message(grace, KeptIn::StateDir, 12_345);
        assert!(!message.contains("lost"), "{message}");
        let message = stopping_message(grace, KeptIn::Redis, 12_345);
        assert!(!message.contains("lost"), "{message}");
        assert!(message.contains("stay in Redis"), "{message}");
    }
}
