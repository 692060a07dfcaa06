//! A run of the crawler, from the parsed command line to how it ended: start-up
//! ([`setup`](crate::setup)), the crawl driven to its end ([`supervisor`](crate::supervisor)), then the
//! summary and the outputs' last words.

use std::sync::Arc;

use anyhow::Context;

use crate::cli::Cli;
use crate::exit::{EXIT_NOTHING_FETCHED, Ended};
use crate::setup::{self, Ready, Start};
use crate::{metrics, report, shared_crawl, supervisor};

/// Why a run failed: each is a message for a person, and exit code
/// [`EXIT_ERROR`](crate::EXIT_ERROR).
///
/// ```
/// let err = crawler::RunError::Setup(anyhow::anyhow!("bad setting: crawl.max_depth"));
/// assert_eq!(err.to_string(), "bad setting: crawl.max_depth");
/// ```
#[derive(Debug)]
pub enum RunError {
    /// Nothing was crawled: a setting, seed, state directory or server the user must fix.
    Setup(anyhow::Error),
    /// The crawl ran, but its records or its summary could not be written whole.
    Output(anyhow::Error),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            // `:#`: the whole chain of causes, on one line.
            RunError::Setup(err) | RunError::Output(err) => write!(f, "{err:#}"),
        }
    }
}

impl std::error::Error for RunError {}

/// Runs what the command line asks: `--explain-host`, `--remove-crawl`, or a crawl. Settings,
/// seeds and frontier first (any problem there is the user's to fix), then the crawl, which
/// ends with [`Ended::Crawled`] however many fetches failed, unless not one had an answer.
///
/// ```no_run
/// use clap::Parser;
/// let cli = crawler::Cli::parse_from(["crawler", "--seed", "http://127.0.0.1:8080/"]);
/// let ended = crawler::run(&cli)?;
/// std::process::exit(ended.exit_code().into());
/// # Ok::<(), crawler::RunError>(())
/// ```
pub fn run(cli: &Cli) -> Result<Ended, RunError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
        .map_err(RunError::Setup)?;
    if let Some(host) = &cli.explain_host {
        // Reads the settings, writes nothing: no lock, no seeds needed.
        print!(
            "{}",
            setup::explain_host(cli, host).map_err(RunError::Setup)?
        );
        return Ok(Ended::Crawled);
    }
    if cli.remove_crawl {
        let config = setup::settings_alone(cli).map_err(RunError::Setup)?;
        shared_crawl::remove_crawl(&runtime, &config).map_err(RunError::Setup)?;
        return Ok(Ended::Crawled);
    }
    match setup::start(cli, &runtime).map_err(RunError::Setup)? {
        Start::Ready(ready) => crawl(cli, runtime, *ready),
        Start::AlreadyFinished => Ok(Ended::AlreadyFinished),
    }
}

/// Runs the crawl that start-up made ready, then says how it went.
fn crawl(cli: &Cli, runtime: tokio::runtime::Runtime, ready: Ready) -> Result<Ended, RunError> {
    let Ready {
        crawler,
        config,
        state,
        metrics,
        spill_dir,
        lock: _lock,
    } = ready;
    let checkpoint = state.as_ref().map(crate::state::StateDir::checkpoint);
    let metrics_stop = tokio_util::sync::CancellationToken::new();
    if let Some(listener) = metrics {
        let _entered = runtime.enter();
        let listener = tokio::net::TcpListener::from_std(listener)
            .context("cannot serve metrics")
            .map_err(RunError::Setup)?;
        if let Ok(addr) = listener.local_addr() {
            eprintln!("crawler: metrics at http://{addr}/metrics");
        }
        let source = Arc::clone(&crawler);
        runtime.spawn(metrics::serve(
            listener,
            move || source.snapshot(),
            metrics_stop.clone(),
        ));
    }
    let quit = runtime.block_on(supervisor::supervise(
        &crawler,
        &config,
        checkpoint.as_deref(),
    ));
    metrics_stop.cancel();
    let remove_spill = || {
        if let Some(dir) = &spill_dir {
            // Ours, made for this crawl, and of no use after it.
            let _ = std::fs::remove_dir_all(dir);
        }
    };
    if quit {
        // At once: the final checkpoint may be running on its thread and holding the
        // frontier's locks, which the summary would wait for; its files are written to
        // temporary names and renamed only when whole, so leaving it midway is safe.
        runtime.shutdown_background();
        remove_spill();
        return Ok(Ended::Quit);
    }
    if let Some(shared) = crawler.frontier().as_shared() {
        // The whole crawl as it ends, not as last read in passing.
        if let Err(err) = runtime.block_on(shared.totals()) {
            tracing::warn!("reading the shared crawl's counts: {err}");
        }
    }
    let ending = report::Ending {
        resumed: cli.resume,
        keeps_state: state.is_some(),
    };
    let snapshot = crawler.snapshot();
    eprint!("{}", report::summary(&snapshot, ending));
    let failed_hosts = crawler.failed_hosts();
    eprint!("{}", report::failed_hosts(&failed_hosts));
    let summary = metrics::summary_json(&snapshot, &failed_hosts, cli.resume);
    let summary_written = write_summary_json(&config.output.summary_json, &summary);
    let sink_failed = crawler.outputs.failed();
    let ended = if snapshot.records > 0 && !snapshot.any_answer() {
        Ended::NothingFetched
    } else {
        Ended::Crawled
    };
    drop(crawler);
    drop(runtime);
    remove_spill();
    summary_written.map_err(RunError::Output)?;
    if sink_failed {
        return Err(RunError::Output(anyhow::anyhow!(
            "records could not be written to {}; the crawl stopped early",
            config.output.file.display()
        )));
    }
    if let Ended::NothingFetched = ended {
        eprintln!(
            "crawler: no page could be fetched: no request had an answer (exit code \
             {EXIT_NOTHING_FETCHED}); the records' error and error_detail say why"
        );
    }
    Ok(ended)
}

/// Writes the summary as JSON to `path`, if one is set.
fn write_summary_json(path: &std::path::Path, summary: &serde_json::Value) -> anyhow::Result<()> {
    if path.as_os_str().is_empty() {
        return Ok(());
    }
    let text = serde_json::to_string_pretty(summary).context("cannot write the summary")?;
    std::fs::write(path, text + "\n")
        .with_context(|| format!("cannot write the summary to {}", path.display()))
}
