//! `crawler --seed URL`: a fast, polite web crawler on a Bloom-filter frontier. See README.md.
//!
//! Where things live: [`cli`] (flags), [`config`] (the settings and their defaults), [`crawl`]
//! (the fetch workers), [`backend`] (the one seam to the frontier), [`fetch`] (HTTP),
//! [`robots`] (robots.txt), [`sitemap`] (sitemaps), [`guard`] (the SSRF guard), [`output`]
//! (records) and [`errors`] (their error kinds), [`content`] (body digests, the content-seen
//! test), [`warc`], [`state`] (`--state-dir`), [`hosts`] (`[[hosts]]`: each host's own
//! settings, headers, cookies and credentials),
//! [`report`] (progress and the final summary); links come out of pages through the `links`
//! crate. This file turns the command line into a crawl, runs Ctrl-C, checkpoints and the
//! journal's group commit, and turns errors into messages and exit codes.

mod allocator;
mod backend;
mod cli;
mod config;
mod content;
mod crawl;
mod errors;
mod fetch;
mod guard;
mod hosts;
mod metrics;
mod output;
mod report;
mod robots;
mod sitemap;
mod state;
mod warc;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use clap::Parser;
use frontier::{
    Canonical, Canonicalizer, Frontier, FrontierBuilder, Politeness, ScopeErrorKind, ScopeMode,
    ScopeRules, SeenSet, SpillSettings,
};

use crate::cli::Cli;
use crate::config::{Config, Scope};
use crate::crawl::{Crawler, Shutdown};
use crate::state::StateDir;

/// Cases for the `fuzz_` unit tests: `FUZZ_CASES` when set (to fuzz longer, see README.md),
/// else `default`.
#[cfg(test)]
fn fuzz_cases(default: u32) -> u32 {
    std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

fn main() -> ExitCode {
    allocator::tune();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(|| report::LogWriter)
        .with_ansi(report::colour())
        .init();
    let cli = Cli::parse();
    match run(&cli) {
        Ok(Ended::Crawled) => ExitCode::SUCCESS,
        Ok(Ended::NothingFetched) => ExitCode::from(EXIT_NOTHING_FETCHED),
        Ok(Ended::Quit) => ExitCode::from(EXIT_QUIT),
        Ok(Ended::AlreadyFinished) => ExitCode::from(EXIT_FINISHED),
        Err(err) => {
            eprintln!("crawler: {err:#}");
            ExitCode::from(2)
        }
    }
}

/// The exit code of a crawl that ran but got not a single answer: every seed's host failed
/// to resolve, refused the connection, failed TLS or timed out (or robots.txt allowed
/// nothing). Scripts tell it from a crawl with some broken pages, which exits 0.
const EXIT_NOTHING_FETCHED: u8 = 3;

/// The exit code of a run that found its shared crawl finished already, with no seed new to
/// it: the same command run twice does not pass for a crawl that fetched nothing.
const EXIT_FINISHED: u8 = 4;

/// The exit code after a second Ctrl-C, as shells give a process ended by SIGINT.
const EXIT_QUIT: u8 = 130;

/// How a crawl that ran ended.
enum Ended {
    /// At least one URL had an HTTP answer (or there was nothing left to do).
    Crawled,
    /// URLs were tried, and none had an answer.
    NothingFetched,
    /// A second Ctrl-C: quit at once, without the final checkpoint.
    Quit,
    /// The shared crawl had finished before this run: nothing was done.
    AlreadyFinished,
}

/// Settings, seeds and frontier first (any problem there is the user's to fix: exit 2), then
/// the crawl, which ends with exit 0 however many fetches failed, unless not one had an
/// answer.
fn run(cli: &Cli) -> Result<Ended> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let state = cli.state_dir.as_deref().map(StateDir::new);
    if let Some(host) = &cli.explain_host {
        // Reads the settings, writes nothing: no lock, no seeds needed.
        print!("{}", explain_host(cli, state.as_ref(), host)?);
        return Ok(Ended::Crawled);
    }
    if cli.remove_crawl {
        let (config, _) = settings(cli, None)?;
        config.validate().context("bad setting")?;
        remove_crawl(&runtime, &config)?;
        return Ok(Ended::Crawled);
    }
    // Held to the end: no other process may use the state meanwhile.
    let _lock = state.as_ref().map(StateDir::lock).transpose()?;
    let (mut config, mut seed_texts) = settings(cli, state.as_ref())?;
    config.validate().context("bad setting")?;
    // The secrets are read here, before anything is written: a missing one stops the start.
    let hosts = Arc::new(
        hosts::HostRules::new(&config).map_err(|why| anyhow::anyhow!("bad setting: {why}"))?,
    );
    let proxy = fetch::proxy(&config).map_err(|why| anyhow::anyhow!("bad setting: {why}"))?;
    // A secret must not reach the state directory or Redis: refused before either is written.
    if let Some(state) = &state {
        config
            .storable(&format!("in {}", state.settings().display()))
            .context("bad setting")?;
    }
    for seed in seed_texts_from(cli)? {
        // A resume given its seeds again does not list them twice.
        if !seed_texts.contains(&seed) {
            seed_texts.push(seed);
        }
    }
    let shared = if config.redis.url.is_empty() {
        None
    } else {
        match runtime.block_on(join_shared(cli, &mut config, &mut seed_texts))? {
            Joined::Crawl(joined) => Some(*joined),
            Joined::Finished => return Ok(Ended::AlreadyFinished),
        }
    };
    // Joined, the crawl's settings apply: its hosts' rules and its proxy (with the secrets
    // they name), not this command's, read above only to fail before Redis was written.
    let (hosts, proxy) = if shared.is_some() {
        let hosts = hosts::HostRules::new(&config)
            .map_err(|why| anyhow::anyhow!("the shared crawl's settings: {why}"))?;
        let proxy = fetch::proxy(&config)
            .map_err(|why| anyhow::anyhow!("the shared crawl's settings: {why}"))?;
        (Arc::new(hosts), proxy)
    } else {
        (hosts, proxy)
    };
    if seed_texts.is_empty() {
        match &cli.seeds_file {
            Some(path) => bail!(
                "no seeds: {} holds no URL (only blank lines and lines starting with #), and no \
                 --seed was given",
                path.display()
            ),
            None => {
                bail!("no seeds: give at least one --seed URL, --sitemap URL or a --seeds-file")
            }
        }
    }
    let canon = Canonicalizer::new();
    let seeds = canonical_seeds(&seed_texts, &canon)?;
    // Targets of the seeds' redirects a resumed crawl had: seeds of its scope again.
    // Each with the URL that redirected to it, when known: the guard trusts a target only
    // where it is the same server as that URL.
    let mut redirects: Vec<(String, Option<String>)> = match &state {
        Some(state) if cli.resume => state.load_seed_redirects()?,
        _ => Vec::new(),
    };
    // A shared crawl's: in the scope, never trusted (another process saw the redirect).
    if let Some((_, stored)) = &shared {
        redirects.extend(stored.redirect_targets.iter().map(|t| (t.clone(), None)));
    }
    let redirect_texts: Vec<String> = redirects.iter().map(|(t, _)| t.clone()).collect();
    let redirected = canonical_seeds(&redirect_texts, &canon)
        .context("the seeds' redirect targets (seed-redirects.txt)")?;
    // Everything is checked before the state directory is written: a setting refused after
    // it would leave a crawl there that the corrected command could not start, or a resume
    // whose every later run fails on the saved mistake.
    if let Some(state) = &state
        && !cli.resume
    {
        state.refuse_if_in_use()?;
    }
    let user_agent = config.politeness.user_agent();
    reqwest::header::HeaderValue::from_str(&user_agent).with_context(|| {
        format!(
            "bad setting: politeness.user_agent / politeness.contact: {user_agent:?} is not a \
             valid User-Agent header"
        )
    })?;
    let scope_seeds: Vec<Canonical> = seeds.iter().chain(&redirected).cloned().collect();
    let (local, spill_dir) = match shared {
        Some(_) => (None, None),
        None => {
            let (builder, spill_dir) =
                frontier_builder(&config, canon.clone(), &scope_seeds, state.as_ref(), &hosts)?;
            (Some(builder), spill_dir)
        }
    };
    for (path, key) in [
        (&config.output.file, "output.file"),
        (&config.output.summary_json, "output.summary_json"),
    ] {
        output::check_writable(path)
            .with_context(|| format!("bad setting: {key}: cannot write {}", path.display()))?;
    }
    // Opened (its first file created, nothing written in it yet) with the other outputs'
    // checks, before the state directory is written.
    let warc = if config.output.warc.as_os_str().is_empty() {
        None
    } else {
        let settings = warc::Settings {
            path: config.output.warc.clone(),
            max_bytes: config.output.warc_max_bytes,
            revisits: config.output.warc_revisits,
            info: warc::Info::new(&config, &user_agent, seeds.len()),
            synced: state.is_some(),
        };
        Some(warc::Warc::open(settings).map_err(|err| {
            anyhow::anyhow!("bad setting: output.warc: cannot write the WARC file: {err}")
        })?)
    };
    let metrics = if config.output.metrics.is_empty() {
        None
    } else {
        let addr = metrics::address(&config.output.metrics).map_err(anyhow::Error::msg)?;
        let listener = std::net::TcpListener::bind(addr)
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .with_context(|| format!("bad setting: output.metrics: cannot listen on {addr}"))?;
        Some(listener)
    };
    // The last run's spilled URLs are in its checkpoint: the spill directory starts empty.
    if let Some(state) = &state {
        state.clear_spill()?;
    }
    let now = std::time::Instant::now();
    let backend = match (shared, local) {
        (Some((store, stored)), _) => {
            let scope = scope_rules(&config, &scope_seeds)?;
            let _entered = runtime.enter();
            let frontier = frontier_redis::SharedFrontier::new(
                store,
                &stored,
                canon,
                scope,
                politeness(&config, &hosts)?,
                config.redis.lease_time,
                crawl::worker_tasks(config.fetch.concurrency, true),
            )?;
            backend::Backend::shared(
                frontier,
                crawl::worker_tasks(config.fetch.concurrency, true),
            )
        }
        (None, Some(builder)) => {
            let seen = (
                config.frontier.seen_initial_capacity,
                config.frontier.seen_false_positive_rate,
            );
            backend::Backend::local(local_frontier(cli, state.as_ref(), builder, seen, now)?)
        }
        (None, None) => unreachable!("a local frontier is built when no Redis is given"),
    };
    fn local_frontier(
        cli: &Cli,
        state: Option<&StateDir>,
        builder: FrontierBuilder,
        (capacity, rate): (usize, f64),
        now: std::time::Instant,
    ) -> Result<Frontier> {
        Ok(match state {
            Some(state) if cli.resume && state.has_checkpoint() => {
                let frontier =
                    Frontier::open(state.checkpoint(), builder, now).with_context(|| {
                        format!(
                            "cannot resume from {} (a damaged state, or one another version wrote)",
                            state.checkpoint().display()
                        )
                    })?;
                resumed_message(&frontier, &state.checkpoint(), now);
                frontier
            }
            _ => {
                let frontier = builder
                    .build()
                    .map_err(|err| frontier_settings_error(&err, capacity, rate))?;
                if let Some(state) = state
                    && frontier.replayed().is_some()
                {
                    resumed_message(&frontier, &state.checkpoint(), now);
                }
                frontier
            }
        })
    }
    // Only now, with every setting checked and the frontier built (its seen-test sized), is
    // the state directory written.
    match &state {
        Some(state) if cli.resume => state.save(&config, &seed_texts)?,
        Some(state) => state.create(&config, &seed_texts)?,
        None => {}
    }
    // Before the user agent is resolved, which makes it look written.
    let anonymous = anonymity_warning(&config.politeness, &seeds);
    // Resolved once, for the HTTP client and the robots.txt rules, after the state directory
    // saved the setting as given: a resume with another --contact builds it anew.
    config.politeness.user_agent = user_agent;
    let mut guard = guard::Guard::new(
        !config.fetch.allow_private_addresses,
        seeds.iter().map(Canonical::as_url),
    );
    if let Ok(proxy) = url::Url::parse(&config.fetch.proxy)
        && let Some(host) = proxy.host_str()
    {
        guard.trust_proxy(host);
    }
    // A resumed crawl's redirect targets, trusted again where they are the same server as
    // the URL that redirected (resolved anew: addresses may have changed since).
    for (target, from) in &redirects {
        if let (Some(from), Ok(target)) = (from, url::Url::parse(target))
            && let Ok(from) = url::Url::parse(from)
        {
            runtime.block_on(guard.trust_redirect(&from, &target));
        }
    }
    let guard = Arc::new(guard);
    let client = fetch::client(&config, Arc::clone(&guard), &hosts, proxy).context(
        "cannot set up the HTTP client (is politeness.user_agent a valid header value?)",
    )?;
    let mut sink = output::Sink::open(&config.output.file, cli.resume)
        .with_context(|| format!("cannot write records to {}", config.output.file.display()))?;
    // A completion is in Redis the moment it is made: what its fetch wrote goes to the
    // operating system as it is written, so that a process killed then loses none of it.
    let warc = if matches!(backend, backend::Backend::Shared(_)) {
        sink = sink.flushing_each_record();
        warc.map(warc::Warc::flushing_each_record)
    } else {
        warc
    };

    let seed_redirects = crawl::SeedRedirects::new(
        Canonicalizer::new(),
        cli.state_dir.as_deref().map(StateDir::new),
        &redirects,
    );
    let crawler = Arc::new(Crawler::new(
        config.clone(),
        backend,
        Box::new(fetch::Http {
            client,
            hosts: Arc::clone(&hosts),
        }),
        guard,
        hosts,
        sink,
        warc,
        seed_redirects,
    ));
    // Known as sitemaps before they are queued, so that no worker takes one for a page; a
    // resume knows again those its last checkpoint knew.
    for sitemap in canonical_seeds(&cli.sitemaps, &Canonicalizer::new())? {
        crawler.sitemaps.mark(&sitemap, 0);
        // Known to the whole crawl, so that whichever process leases it reads it as one.
        if let Some(shared) = crawler.frontier().as_shared() {
            let marked = shared.mark_sitemap(&sitemap, 0, sitemap::MAX_PER_HOST);
            if let Err(err) = runtime.block_on(marked) {
                tracing::warn!("taking {sitemap} as a sitemap of the crawl: {err}");
            }
        }
    }
    if let Some(state) = &state
        && cli.resume
    {
        let canon = Canonicalizer::new();
        for (url, level) in state.load_sitemaps()? {
            if let Ok(url) = canon.canonicalize(&url) {
                crawler.sitemaps.mark(&url, level);
            }
        }
    }
    // On resume the seeds are seen already: pushing them again is a no-op.
    runtime
        .block_on(crawler.frontier().push_seeds(seeds))
        .context("cannot queue the seeds")?;
    if let Some(warning) = anonymous {
        // Last before the crawl, so that a bad setting found later is not preceded by it.
        tracing::warn!("{warning}");
    }
    let checkpoint = state.as_ref().map(StateDir::checkpoint);
    let metrics_stop = tokio_util::sync::CancellationToken::new();
    if let Some(listener) = metrics {
        let _entered = runtime.enter();
        let listener =
            tokio::net::TcpListener::from_std(listener).context("cannot serve metrics")?;
        if let Ok(addr) = listener.local_addr() {
            eprintln!("crawler: metrics at http://{addr}/metrics");
        }
        runtime.spawn(metrics::serve(
            listener,
            Arc::clone(&crawler),
            metrics_stop.clone(),
        ));
    }
    let quit = runtime.block_on(drive(&crawler, &config, checkpoint.as_deref()));
    metrics_stop.cancel();
    if quit {
        // At once: the final checkpoint may be running on its thread and holding the
        // frontier's locks, which the summary would wait for; its files are written to
        // temporary names and renamed only when whole, so leaving it midway is safe.
        runtime.shutdown_background();
        if let Some(dir) = spill_dir {
            let _ = std::fs::remove_dir_all(dir);
        }
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
    eprint!("{}", report::summary(&crawler, ending));
    eprint!("{}", report::failed_hosts(&crawler));
    let summary_written = write_summary_json(&config.output.summary_json, &crawler, cli.resume);
    let sink_failed = crawler
        .sink_failed
        .load(std::sync::atomic::Ordering::Relaxed);
    let records = crawler
        .stats
        .records
        .load(std::sync::atomic::Ordering::Relaxed);
    let ended = if records > 0 && !crawler.stats.any_answer() {
        Ended::NothingFetched
    } else {
        Ended::Crawled
    };
    drop(crawler);
    drop(runtime);
    if let Some(dir) = spill_dir {
        // Ours, made for this crawl, and of no use after it.
        let _ = std::fs::remove_dir_all(dir);
    }
    summary_written?;
    if sink_failed {
        bail!(
            "records could not be written to {}; the crawl stopped early",
            config.output.file.display()
        );
    }
    if let Ended::NothingFetched = ended {
        eprintln!(
            "crawler: no page could be fetched: no request had an answer (exit code \
             {EXIT_NOTHING_FETCHED}); the records' error and error_detail say why"
        );
    }
    Ok(ended)
}

/// The settings of this run and the seeds a resumed crawl had: the state directory's with
/// `--resume`, else the config file's (or the defaults), with the flags applied.
fn settings(cli: &Cli, state: Option<&StateDir>) -> Result<(Config, Vec<String>)> {
    Ok(match state {
        Some(state) if cli.resume => {
            let (saved, seeds) = state.load()?;
            (cli.apply(saved), seeds)
        }
        _ => {
            let config = match &cli.config {
                Some(path) => Config::from_file(path)?,
                None => Config::default(),
            };
            (cli.apply(config), Vec::new())
        }
    })
}

/// `--explain-host`: the settings `host` (a host, `host:port` or a URL) gets, in words.
/// Checked as a crawl would check them, secrets read (so that a missing one shows here).
fn explain_host(cli: &Cli, state: Option<&StateDir>, host: &str) -> Result<String> {
    let (config, _) = settings(cli, state)?;
    config.validate().context("bad setting")?;
    let rules =
        hosts::HostRules::new(&config).map_err(|why| anyhow::anyhow!("bad setting: {why}"))?;
    let text = host.trim();
    let url = if text.contains("://") {
        text.to_owned()
    } else {
        format!("http://{text}/")
    };
    let url = Canonicalizer::new()
        .canonicalize(&url)
        .map_err(|err| anyhow::anyhow!("--explain-host {text:?}: not a host or URL: {err}"))?;
    Ok(rules.explain(&config, url.host_key()))
}

/// Why the frontier could not be built from its settings, in words: a seen-test too large
/// for `frontier.seen_initial_capacity` names the key and the limit. Said once: the error's
/// own words are not chained after it again.
fn frontier_settings_error(
    err: &frontier::FrontierError,
    capacity: usize,
    rate: f64,
) -> anyhow::Error {
    if let frontier::FrontierError::Filter(filter) = err
        && let bloom::ErrorKind::TooLarge { bits } = filter.kind()
    {
        let most = bloom::capacity(bloom::MAX_BITS, rate).unwrap_or_default();
        // Two significant digits, rounded down: the sizing is not exact to the URL.
        let scale = 10u64.pow(most.checked_ilog10().unwrap_or(0).saturating_sub(1));
        let most = most / scale * scale;
        return anyhow::anyhow!(
            "bad setting: frontier.seen_initial_capacity (--seen-initial-capacity): {} URLs at \
             a false-positive rate of {} (frontier.seen_false_positive_rate) would need a \
             seen-test of {}, and the largest is {}: at most about {} URLs at that rate (the \
             seen-test grows as URLs come: start it near the crawl's expected size)",
            report::count(capacity as u64),
            report::one_in(rate),
            report::bytes((*bits / 8.0) as u64),
            report::bytes(bloom::MAX_BITS / 8),
            report::count(most)
        );
    }
    anyhow::anyhow!("bad setting: frontier: {err}")
}

/// Writes the summary as JSON to `path`, if one is set.
fn write_summary_json(path: &std::path::Path, crawler: &Crawler, resumed: bool) -> Result<()> {
    if path.as_os_str().is_empty() {
        return Ok(());
    }
    let summary = metrics::summary_json(crawler, resumed);
    let text = serde_json::to_string_pretty(&summary).context("cannot write the summary")?;
    std::fs::write(path, text + "\n")
        .with_context(|| format!("cannot write the summary to {}", path.display()))
}

/// Says what a resume found: the checkpoint, and the journal replayed on top of it.
fn resumed_message(frontier: &Frontier, dir: &std::path::Path, started: std::time::Instant) {
    let stats = frontier.stats();
    let journal = match frontier.replayed() {
        Some(replayed) if replayed.torn_bytes > 0 => format!(
            " and {} journal entries (a torn last write of {} bytes cut off)",
            report::count(replayed.entries),
            report::count(replayed.torn_bytes)
        ),
        Some(replayed) => format!(" and {} journal entries", report::count(replayed.entries)),
        None => String::new(),
    };
    eprintln!(
        "crawler: resumed from {}{journal} in {} ms: {} URLs queued, {} seen so far",
        dir.display(),
        started.elapsed().as_millis(),
        report::count(stats.queues.queued),
        report::count(stats.admission.seen_set.urls)
    );
}

/// Runs the crawl to its end, checkpointing every `state.checkpoint_interval` when there is
/// a state directory, and stopping on Ctrl-C: fetches in flight get `state.shutdown_grace` to
/// finish, then the crawl is checkpointed and ends. A second Ctrl-C, even during the final
/// checkpoint, quits at once: returns true, and the caller exits.
async fn drive(
    crawler: &Arc<Crawler>,
    config: &Config,
    checkpoint: Option<&std::path::Path>,
) -> bool {
    // Messages below go through the progress display, lest its next frame overwrite them.
    let progress = report::Progress::start(crawler, &config.output);
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
                    (backend::Backend::Shared(_), _) => Kept::Redis,
                    (_, true) => Kept::StateDir,
                    (_, false) => Kept::Nowhere,
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
enum Kept {
    /// In the state directory's checkpoint.
    StateDir,
    /// In Redis, with the shared crawl.
    Redis,
    /// Nowhere: they are lost.
    Nowhere,
}

/// What Ctrl-C prints: how long fetches in flight have, and what becomes of the queued URLs,
/// which only a state directory or a shared crawl keeps.
fn stopping_message(grace: std::time::Duration, kept: Kept, queued: u64) -> String {
    let mut message = format!(
        "crawler: stopping; fetches in flight have {grace:?} to finish. Ctrl-C again to quit now."
    );
    if let Kept::StateDir = kept {
        message.push_str(
            "\ncrawler: the queued URLs go into the checkpoint: --resume goes on with them.",
        );
    } else if let Kept::Redis = kept {
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

/// Why a site owner could not reach whoever runs this crawl, when that is so: no contact and
/// the built User-Agent. Quiet when every seed is on this machine (the local benchmark, tests):
/// nobody else's site is crawled, unless links lead away, which the scope mostly forbids.
fn anonymity_warning(politeness: &config::Politeness, seeds: &[Canonical]) -> Option<String> {
    let local = |seed: &Canonical| match seed.as_url().host() {
        Some(url::Host::Domain(name)) => {
            name.eq_ignore_ascii_case("localhost")
                || name.to_ascii_lowercase().ends_with(".localhost")
        }
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    if !politeness.is_anonymous() || seeds.iter().all(local) {
        return None;
    }
    Some(format!(
        "no contact set: site owners see User-Agent {:?} and cannot reach you. Give a URL or an \
         e-mail address with --contact (politeness.contact)",
        politeness.user_agent()
    ))
}

/// Checkpoints the crawl to `checkpoint`, if there is a state directory.
fn save(crawler: &Crawler, checkpoint: Option<&std::path::Path>) {
    let Some(dir) = checkpoint else { return };
    // A checkpoint writes files and holds up the workers: keep it off the scheduler.
    tokio::task::block_in_place(|| crawler.checkpoint(dir));
}

/// The seed texts from `--seed` and `--seeds-file`, with where each came from.
fn seed_texts_from(cli: &Cli) -> Result<Vec<String>> {
    // A sitemap given by the user is a seed: its host is in scope, and a resume has it.
    let mut texts = cli.seeds.clone();
    texts.extend(cli.sitemaps.iter().cloned());
    if let Some(path) = &cli.seeds_file {
        let file = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read seeds file {}", path.display()))?;
        for (n, line) in file.lines().enumerate() {
            let line = line.trim();
            if !line.is_empty() && !line.starts_with('#') {
                // Checked here, so that the message can name the line.
                let canon = Canonicalizer::new();
                canon.canonicalize(line).map_err(|err| {
                    let place = format!(" ({} line {})", path.display(), n + 1);
                    bad_seed(line, &place, &err, &canon)
                })?;
                texts.push(line.to_owned());
            }
        }
    }
    Ok(texts)
}

/// The seeds in canonical form; a bad one is an error naming it.
fn canonical_seeds(texts: &[String], canon: &Canonicalizer) -> Result<Vec<Canonical>> {
    texts
        .iter()
        .map(|text| {
            canon
                .canonicalize(text)
                .map_err(|err| bad_seed(text, "", &err, canon))
        })
        .collect()
}

/// A bad seed's error: the text, where it came from (`place`), why; and for a URL without its
/// scheme (`example.com`), the URL it most likely meant.
fn bad_seed(
    text: &str,
    place: &str,
    err: &dyn std::fmt::Display,
    canon: &Canonicalizer,
) -> anyhow::Error {
    let guess = format!("https://{text}");
    // A user name in the guess means the text had a scheme of its own (`mailto:me@host`).
    let suggestion = (!text.contains("://"))
        .then(|| canon.canonicalize(&guess).ok())
        .flatten()
        .filter(|url| url.as_url().username().is_empty() && url.as_url().password().is_none());
    match suggestion {
        Some(url) => anyhow::anyhow!(
            "bad seed {text:?}{place}: {err}; a URL needs its scheme: did you mean {}?",
            url.as_str()
        ),
        None => anyhow::anyhow!("bad seed {text:?}{place}: {err}"),
    }
}

/// The crawl's scope and trap rules, from its settings and seeds.
fn scope_rules(config: &Config, seeds: &[Canonical]) -> Result<ScopeRules> {
    let c = &config.crawl;
    let mut scope = ScopeRules::builder()
        .seeds(seeds)
        .mode(match c.scope {
            Scope::Hosts => ScopeMode::SeedHosts,
            Scope::Domains => ScopeMode::SeedDomains,
            Scope::Any => ScopeMode::AnyHost,
        })
        .max_depth(Some(c.max_depth))
        .max_same_shape_depth((c.max_same_shape_depth > 0).then_some(c.max_same_shape_depth))
        .max_repeated_segment(c.max_repeated_segment)
        .max_path_segments(c.max_path_segments)
        .per_host_budget((c.per_host_pages > 0).then_some(c.per_host_pages));
    for pattern in &c.include {
        scope = scope.include(pattern.as_str());
    }
    for pattern in &c.exclude {
        scope = scope.exclude(pattern.as_str());
    }
    // The error's own message holds the regex crate's, which is also its source: give the
    // message alone, lest the pattern's fault be printed twice.
    let scope = scope.build().map_err(|err| {
        let key = match err.kind() {
            ScopeErrorKind::InvalidInclude(_) => "crawl.include",
            _ => "crawl.exclude",
        };
        anyhow::anyhow!("{key}: {err}")
    })?;
    Ok(scope)
}

/// The politeness settings, as the frontiers take them, with the hosts' own from `[[hosts]]`.
fn politeness(config: &Config, hosts: &Arc<hosts::HostRules>) -> Result<Politeness> {
    let p = &config.politeness;
    let politeness = Politeness::builder()
        .connections_per_host(p.connections_per_host)
        .delay(p.delay)
        .max_crawl_delay(p.max_crawl_delay)
        .max_retry_after(p.max_retry_after)
        .backoff_base(p.backoff_base)
        .backoff_max(p.backoff_max)
        .max_consecutive_errors(p.max_consecutive_errors)
        .give_up_after(p.give_up_after)
        .max_attempts(p.max_attempts);
    // Only with entries: without, no host has politeness of its own to ask for.
    let politeness = if config.hosts.is_empty() {
        politeness
    } else {
        let hosts = Arc::clone(hosts);
        politeness.per_host(move |host: &str| hosts.politeness(host))
    };
    politeness.build().context("politeness settings")
}

/// The frontier the settings describe (to build, or to open a checkpoint with), and the
/// spill directory made for it, if one was.
fn frontier_builder(
    config: &Config,
    canon: Canonicalizer,
    seeds: &[Canonical],
    state: Option<&StateDir>,
    hosts: &Arc<hosts::HostRules>,
) -> Result<(FrontierBuilder, Option<PathBuf>)> {
    let scope = scope_rules(config, seeds)?;
    let politeness = politeness(config, hosts)?;
    let f = &config.frontier;
    let (spill_dir, made) = if let Some(state) = state {
        (state.spill(), None)
    } else if f.spill_dir.as_os_str().is_empty() {
        // Process id and start time: unique even where process ids repeat (containers).
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        let dir =
            std::env::temp_dir().join(format!("crawler-spill-{}-{started}", std::process::id()));
        (dir.clone(), Some(dir))
    } else {
        (f.spill_dir.clone(), None)
    };
    let mut builder = Frontier::builder()
        .canonicalizer(canon)
        .scope(scope)
        .seen(
            SeenSet::builder()
                .initial_capacity(f.seen_initial_capacity)
                .false_positive_rate(f.seen_false_positive_rate),
        )
        .politeness(politeness)
        .spill(
            SpillSettings::new(&spill_dir)
                .memory_budget(f.memory_budget_mib.saturating_mul(1 << 20)),
        );
    if let Some(state) = state
        && !config.state.journal_sync_interval.is_zero()
    {
        builder = builder.journal(state.checkpoint());
    }
    Ok((builder, made))
}

/// Connects to the shared crawl of `config.redis`, creating it with this process's settings
/// and seeds unless it exists; a process that joins takes the crawl's stored settings, but
/// for its own per-process ones (concurrency, page budget, outputs, state), and learns its
/// seeds.
async fn join_shared(cli: &Cli, config: &mut Config, seeds: &mut Vec<String>) -> Result<Joined> {
    if cli.state_dir.is_some() {
        bail!(
            "--state-dir does not apply to a crawl shared through Redis (--redis): its state \
             lives in Redis, and a process that stops is replaced by starting it again"
        );
    }
    let r = config.redis.clone();
    let shown = frontier::redact_url(&r.url);
    let store = frontier_redis::Store::connect(&r.url, &r.crawl_name).await?;
    // A crawl this process waited for was not there before it started: finished since, it is
    // not a finished crawl run again.
    let mut waited = false;
    let stored = match store.load().await? {
        Some(stored) => stored,
        None if seeds.is_empty() => match wait_for_crawl(&store).await? {
            Some(stored) => {
                waited = true;
                stored
            }
            None => bail!(
                "no crawl named {:?} on {shown} yet (waited {} s for one to be started): give \
                 --seed URL to start it",
                r.crawl_name,
                JOIN_WAIT.as_secs()
            ),
        },
        None => {
            let layout = frontier_redis::Layout {
                buckets: r.buckets,
                seen_initial_capacity: r.seen_initial_capacity,
                seen_rate: config.frontier.seen_false_positive_rate,
                ..frontier_redis::Layout::default()
            };
            let stored = config
                .storable(&format!("in Redis ({}:meta)", r.crawl_name))
                .context("bad setting")?;
            let settings = serde_json::to_string(&stored).context("saving the settings")?;
            store.create(layout, &settings, seeds).await?
        }
    };
    if stored.removing {
        bail!(
            "the crawl {:?} on {shown} is being removed (or a removal was cut short): run \
             crawler --redis URL --crawl-name {} --remove-crawl to finish it, then start again",
            r.crawl_name,
            r.crawl_name
        );
    }
    let mine = config.clone();
    let mut theirs: Config = serde_json::from_str(&stored.settings)
        .context("the shared crawl's stored settings cannot be read (another version?)")?;
    // Each process's own: not part of the crawl.
    theirs.fetch.concurrency = mine.fetch.concurrency;
    theirs.crawl.max_pages = mine.crawl.max_pages;
    theirs.output = mine.output.clone();
    theirs.state = mine.state.clone();
    theirs.redis = mine.redis.clone();
    let new_seeds: Vec<&String> = seeds
        .iter()
        .filter(|s| !stored.seeds.contains(s) && !stored.redirect_targets.contains(s))
        .collect();
    if new_seeds.is_empty()
        && !waited
        && let Some(at) = stored.finished
    {
        let at = output::Rfc3339(std::time::UNIX_EPOCH + std::time::Duration::from_millis(at));
        let at = String::from_utf8_lossy(&at.text()).into_owned();
        eprintln!(
            "crawler: the crawl {name:?} on {shown} finished at {at}: nothing is left to \
             fetch (exit code {EXIT_FINISHED}). To crawl again from the start, remove it \
             (crawler --redis URL --crawl-name {name} --remove-crawl) and run this again, or \
             give another --crawl-name; to add pages, give seeds it does not have.",
            name = r.crawl_name,
        );
        return Ok(Joined::Finished);
    }
    let mut differences = settings_differences(&mine, &theirs)?;
    if !new_seeds.is_empty() {
        let list: Vec<&str> = new_seeds.iter().map(|s| s.as_str()).collect();
        differences.push(format!("seeds it does not have: {}", list.join(" ")));
    }
    if !differences.is_empty() {
        let list = differences.join("\n  ");
        if !cli.join {
            bail!(
                "the crawl {name:?} on {shown} was started with other settings or seeds than \
                 this command's:\n  {list}\nAdd --join to join it anyway (its stored settings \
                 apply; new seeds are added to it), or give another --crawl-name to start a \
                 crawl of your own.",
                name = r.crawl_name,
            );
        }
        eprintln!(
            "crawler: joining the crawl {:?} on {shown} (--join): its stored settings apply \
             where this command's differ (only concurrency, max_pages and outputs are per \
             process):\n  {list}",
            r.crawl_name,
        );
    }
    *config = theirs;
    store.add_seeds(seeds).await?;
    for seed in &stored.seeds {
        if !seeds.contains(seed) {
            seeds.push(seed.clone());
        }
    }
    Ok(Joined::Crawl(Box::new((store, stored))))
}

/// How long a process started without seeds waits for its crawl to be created: processes
/// started together (one with the seeds, the others to join) must not fail on which of them
/// reached Redis first.
const JOIN_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The crawl, once a process has created it, or `None` after [`JOIN_WAIT`].
async fn wait_for_crawl(store: &frontier_redis::Store) -> Result<Option<frontier_redis::Stored>> {
    let deadline = tokio::time::Instant::now() + JOIN_WAIT;
    while tokio::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        if let Some(stored) = store.load().await? {
            return Ok(Some(stored));
        }
    }
    Ok(None)
}

/// What joining a shared crawl found.
enum Joined {
    /// A crawl to work on (boxed: far larger than the other variant).
    Crawl(Box<(frontier_redis::Store, frontier_redis::Stored)>),
    /// The crawl had finished, and this command brings no seed new to it.
    Finished,
}

/// The settings where `mine` and the crawl's (`theirs`) differ, one line each, by key:
/// `politeness.delay: "1s" here, "250ms" in the crawl`.
fn settings_differences(mine: &Config, theirs: &Config) -> Result<Vec<String>> {
    fn flatten(prefix: &str, table: &toml::Table, out: &mut BTreeMap<String, String>) {
        for (key, value) in table {
            let key = if prefix.is_empty() {
                key.clone()
            } else {
                format!("{prefix}.{key}")
            };
            match value {
                toml::Value::Table(inner) => flatten(&key, inner, out),
                other => {
                    out.insert(key, other.to_string());
                }
            }
        }
    }
    let table = |config: &Config| -> Result<BTreeMap<String, String>> {
        let mut out = BTreeMap::new();
        flatten("", &toml::Table::try_from(config)?, &mut out);
        Ok(out)
    };
    let (mine, theirs) = (table(mine)?, table(theirs)?);
    let keys: std::collections::BTreeSet<&String> = mine.keys().chain(theirs.keys()).collect();
    let none = "(none)".to_owned();
    Ok(keys
        .into_iter()
        .filter(|key| mine.get(*key) != theirs.get(*key))
        .map(|key| {
            // Shown on a terminal: a URL's password, or a secret header's value, is not.
            let shown = |value: Option<&String>| {
                let value = value.unwrap_or(&none);
                let name = key.rsplit('.').next().unwrap_or_default();
                if key.contains("headers.") && config::is_secret_header(name) {
                    "\"***\"".to_owned()
                } else {
                    frontier::redact_url(value).into_owned()
                }
            };
            let (here, there) = (shown(mine.get(key)), shown(theirs.get(key)));
            format!("{key}: {here} here, {there} in the crawl")
        })
        .collect())
}

/// `--remove-crawl`: every key of the shared crawl, removed.
fn remove_crawl(runtime: &tokio::runtime::Runtime, config: &Config) -> Result<()> {
    let r = &config.redis;
    if r.url.is_empty() {
        bail!("--remove-crawl needs --redis URL (and --crawl-name, if not the default)");
    }
    let shown = frontier::redact_url(&r.url);
    runtime.block_on(async {
        let store = frontier_redis::Store::connect(&r.url, &r.crawl_name).await?;
        if store.load().await?.is_none() {
            bail!(
                "no crawl named {:?} on {shown}: nothing to remove",
                r.crawl_name
            );
        }
        let removed = store
            .remove()
            .await
            .with_context(|| format!("cannot remove the crawl {:?}", r.crawl_name))?;
        eprintln!(
            "crawler: removed the crawl {:?} from {shown}: {removed} keys",
            r.crawl_name
        );
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seeds(urls: &[&str]) -> Vec<Canonical> {
        let canon = Canonicalizer::new();
        urls.iter()
            .map(|u| canon.canonicalize(u).unwrap())
            .collect()
    }

    #[test]
    fn an_anonymous_crawl_of_others_sites_is_warned_about() {
        let anonymous = config::Politeness::default();
        let warning = anonymity_warning(&anonymous, &seeds(&["https://example.com/"])).unwrap();
        assert!(warning.contains("--contact"), "{warning}");
        let warning = anonymity_warning(
            &anonymous,
            &seeds(&["http://127.0.0.1:8080/", "https://example.com/"]),
        );
        assert!(warning.is_some());
        let named = config::Politeness {
            contact: "ops@example.org".into(),
            ..config::Politeness::default()
        };
        assert_eq!(
            anonymity_warning(&named, &seeds(&["https://example.com/"])),
            None
        );
        let written = config::Politeness {
            user_agent: "MyBot/1.0 (+https://example.org/bot)".into(),
            ..config::Politeness::default()
        };
        assert_eq!(
            anonymity_warning(&written, &seeds(&["https://example.com/"])),
            None
        );
    }

    #[test]
    fn crawls_of_this_machine_stay_quiet() {
        let local = seeds(&[
            "http://127.0.0.1:8080/",
            "http://localhost/",
            "http://[::1]:9000/",
            "http://app.localhost/",
        ]);
        assert_eq!(
            anonymity_warning(&config::Politeness::default(), &local),
            None
        );
    }

    #[test]
    fn ctrl_c_without_a_state_dir_says_the_queue_is_lost_and_how_to_keep_it() {
        let grace = std::time::Duration::from_secs(10);
        let message = stopping_message(grace, Kept::Nowhere, 12_345);
        assert!(
            message.contains("12,345 queued URLs will be lost"),
            "{message}"
        );
        assert!(message.contains("--state-dir DIR"), "{message}");
        assert!(message.contains("--resume"), "{message}");
        assert!(message.contains("Ctrl-C again to quit now"), "{message}");
        let message = stopping_message(grace, Kept::StateDir, 12_345);
        assert!(!message.contains("lost"), "{message}");
        let message = stopping_message(grace, Kept::Redis, 12_345);
        assert!(!message.contains("lost"), "{message}");
        assert!(message.contains("stay in Redis"), "{message}");
    }

    #[test]
    fn a_seed_without_its_scheme_gets_a_suggestion() {
        let canon = Canonicalizer::new();
        let err = canonical_seeds(&["example.com".to_owned()], &canon).unwrap_err();
        assert!(
            err.to_string()
                .contains("did you mean https://example.com/?"),
            "{err}"
        );
        let err = canonical_seeds(&["example.com:8080/a".to_owned()], &canon).unwrap_err();
        assert!(
            err.to_string()
                .contains("did you mean https://example.com:8080/a?"),
            "{err}"
        );
        for hopeless in ["mailto:me@example.com", "not a url", "ftp://example.com/"] {
            let err = canonical_seeds(&[hopeless.to_owned()], &canon).unwrap_err();
            assert!(!err.to_string().contains("did you mean"), "{err}");
        }
    }
}
