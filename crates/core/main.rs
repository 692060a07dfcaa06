//! `crawler --seed URL`: a fast, polite web crawler on a Bloom-filter frontier. See README.md.
//!
//! Where things live: [`cli`] (flags), [`config`] (the settings and their defaults), [`crawl`]
//! (the fetch workers), [`fetch`] (HTTP), [`robots`] (robots.txt), [`output`] (records),
//! [`report`] (progress and the final summary); links come out of pages through the `links`
//! crate. This file turns the command line into a crawl, and errors into messages and exit
//! codes.

mod cli;
mod config;
mod crawl;
mod errors;
mod fetch;
mod guard;
mod output;
mod report;
mod robots;
mod state;
mod warc;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use clap::Parser;
use frontier::{
    Canonical, Canonicalizer, Frontier, FrontierBuilder, Politeness, ScopeMode, ScopeRules,
    SeenSet, SpillSettings,
};

use crate::cli::Cli;
use crate::config::{Config, Scope};
use crate::crawl::Crawler;
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
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match run(&cli) {
        Ok(Ended::Crawled) => ExitCode::SUCCESS,
        Ok(Ended::NothingFetched) => ExitCode::from(EXIT_NOTHING_FETCHED),
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

/// How a crawl that ran ended.
enum Ended {
    /// At least one URL had an HTTP answer (or there was nothing left to do).
    Crawled,
    /// URLs were tried, and none had an answer.
    NothingFetched,
}

/// Settings, seeds and frontier first (any problem there is the user's to fix: exit 2), then
/// the crawl, which ends with exit 0 however many fetches failed, unless not one had an
/// answer.
fn run(cli: &Cli) -> Result<Ended> {
    let state = cli.state_dir.as_deref().map(StateDir::new);
    let (config, mut seed_texts) = match &state {
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
    };
    config.validate().context("bad setting")?;
    for seed in seed_texts_from(cli)? {
        // A resume given its seeds again does not list them twice.
        if !seed_texts.contains(&seed) {
            seed_texts.push(seed);
        }
    }
    if seed_texts.is_empty() {
        bail!("no seeds: give at least one --seed URL or a --seeds-file");
    }
    let canon = Canonicalizer::new();
    let seeds = canonical_seeds(&seed_texts, &canon)?;
    // Targets of the seeds' redirects a resumed crawl had: seeds of its scope again.
    let redirect_texts = match &state {
        Some(state) if cli.resume => state.load_seed_redirects()?,
        _ => Vec::new(),
    };
    let redirected = canonical_seeds(&redirect_texts, &canon)
        .context("the state directory's seed-redirects.txt")?;
    match &state {
        Some(state) if cli.resume => state.save(&config, &seed_texts)?,
        Some(state) => state.create(&config, &seed_texts)?,
        None => {}
    }
    let now = std::time::Instant::now();
    let scope_seeds: Vec<Canonical> = seeds.iter().chain(&redirected).cloned().collect();
    let (builder, spill_dir) = frontier_builder(&config, canon, &scope_seeds, state.as_ref())?;
    let frontier = match &state {
        Some(state) if cli.resume && state.has_checkpoint() => {
            let frontier = Frontier::open(state.checkpoint(), builder, now).with_context(|| {
                format!(
                    "cannot resume from {} (a damaged state, or one another version wrote)",
                    state.checkpoint().display()
                )
            })?;
            let stats = frontier.stats();
            eprintln!(
                "crawler: resumed from {} in {} ms: {} URLs queued, {} seen",
                state.checkpoint().display(),
                now.elapsed().as_millis(),
                stats.queues.queued,
                stats.admission.seen_set.urls
            );
            frontier
        }
        _ => builder.build().context("frontier settings (frontier.*)")?,
    };
    let guard = Arc::new(guard::Guard::new(
        !config.fetch.allow_private_addresses,
        seeds.iter().map(Canonical::as_url),
    ));
    let client = fetch::client(&config, Arc::clone(&guard)).context(
        "cannot set up the HTTP client (is politeness.user_agent a valid header value?)",
    )?;
    let sink = output::Sink::open(&config.output.file, cli.resume)
        .with_context(|| format!("cannot write records to {}", config.output.file.display()))?;

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let warc = if config.output.warc.as_os_str().is_empty() {
        None
    } else {
        let path = &config.output.warc;
        Some(warc::Warc::open(path).with_context(|| format!("cannot write {}", path.display()))?)
    };
    let seed_redirects = crawl::SeedRedirects::new(
        Canonicalizer::new(),
        cli.state_dir.as_deref().map(StateDir::new),
        &redirect_texts,
    );
    let crawler = Arc::new(Crawler::new(
        config.clone(),
        frontier,
        client,
        guard,
        sink,
        warc,
        seed_redirects,
    ));
    for seed in seeds {
        // On resume the seeds are seen already: pushing them again is a no-op.
        crawler
            .frontier()
            .push_canonical(seed, 0, now)
            .context("cannot queue the seeds")?;
    }
    let checkpoint = state.as_ref().map(StateDir::checkpoint);
    runtime.block_on(drive(&crawler, &config, checkpoint.as_deref()));
    eprint!("{}", report::summary(&crawler));
    eprint!("{}", report::failed_hosts(&crawler));
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
    if let Some(dir) = spill_dir {
        // Ours, made for this crawl: its segment files went with the frontier.
        let _ = std::fs::remove_dir(dir);
    }
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

/// Runs the crawl to its end, checkpointing every `state.checkpoint_interval` when there is
/// a state directory, and stopping on Ctrl-C: fetches in flight get `state.shutdown_grace` to
/// finish, then the crawl is checkpointed and ends; a second Ctrl-C quits at once.
async fn drive(crawler: &Arc<Crawler>, config: &Config, checkpoint: Option<&std::path::Path>) {
    let progress = report::Progress::start(crawler, &config.output);
    let run = crawler.run();
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
    let interrupt = tokio::signal::ctrl_c();
    tokio::pin!(interrupt);
    let mut grace: Option<std::pin::Pin<Box<tokio::time::Sleep>>> = None;
    loop {
        tokio::select! {
            () = &mut run => break,
            _ = ticks.tick(), if checkpoint.is_some() => save(crawler, checkpoint),
            signal = &mut interrupt, if grace.is_none() => {
                if signal.is_err() {
                    eprintln!("crawler: cannot listen for Ctrl-C; quitting now");
                    std::process::exit(130);
                }
                eprintln!(
                    "crawler: stopping; fetches in flight have {:?} to finish (Ctrl-C again to quit now)",
                    config.state.shutdown_grace
                );
                // From now to the end, through the final checkpoint, a second Ctrl-C quits.
                tokio::spawn(async {
                    if tokio::signal::ctrl_c().await.is_ok() {
                        eprintln!("crawler: interrupted again; quitting now");
                        std::process::exit(130);
                    }
                });
                crawler.stop();
                grace = Some(Box::pin(tokio::time::sleep(config.state.shutdown_grace)));
            }
            () = async { grace.as_mut().expect("armed").await }, if grace.is_some() => {
                eprintln!("crawler: fetches still in flight after the grace period; they will be fetched again on resume");
                // Cancelled workers put their leases back, without records, before the final
                // checkpoint holds them as queued.
                crawler.abort();
                (&mut run).await;
                break;
            }
        }
    }
    progress.finish().await;
    // The final checkpoint.
    save(crawler, checkpoint);
}

/// Checkpoints the crawl to `checkpoint`, if there is a state directory.
fn save(crawler: &Crawler, checkpoint: Option<&std::path::Path>) {
    let Some(dir) = checkpoint else { return };
    // A checkpoint writes files and holds up the workers: keep it off the scheduler.
    tokio::task::block_in_place(|| crawler.checkpoint(dir));
}

/// The seed texts from `--seed` and `--seeds-file`, with where each came from.
fn seed_texts_from(cli: &Cli) -> Result<Vec<String>> {
    let mut texts = cli.seeds.clone();
    if let Some(path) = &cli.seeds_file {
        let file = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read seeds file {}", path.display()))?;
        for (n, line) in file.lines().enumerate() {
            let line = line.trim();
            if !line.is_empty() && !line.starts_with('#') {
                // Checked here, so that the message can name the line.
                Canonicalizer::new().canonicalize(line).map_err(|err| {
                    anyhow::anyhow!(
                        "bad seed {line:?} ({} line {}): {err}",
                        path.display(),
                        n + 1
                    )
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
                .map_err(|err| anyhow::anyhow!("bad seed {text:?}: {err}"))
        })
        .collect()
}

/// The frontier the settings describe (to build, or to open a checkpoint with), and the
/// spill directory made for it, if one was.
fn frontier_builder(
    config: &Config,
    canon: Canonicalizer,
    seeds: &[Canonical],
    state: Option<&StateDir>,
) -> Result<(FrontierBuilder, Option<PathBuf>)> {
    let c = &config.crawl;
    let mut scope = ScopeRules::builder()
        .seeds(seeds)
        .mode(match c.scope {
            Scope::Hosts => ScopeMode::SeedHosts,
            Scope::Domains => ScopeMode::SeedDomains,
            Scope::Any => ScopeMode::AnyHost,
        })
        .max_depth(Some(c.max_depth))
        .max_repeated_segment(c.max_repeated_segment)
        .max_path_segments(c.max_path_segments)
        .per_host_budget((c.per_host_pages > 0).then_some(c.per_host_pages));
    for pattern in &c.include {
        scope = scope.include(pattern.as_str());
    }
    for pattern in &c.exclude {
        scope = scope.exclude(pattern.as_str());
    }
    let scope = scope.build().context("crawl.include / crawl.exclude")?;
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
        .max_attempts(p.max_attempts)
        .build()
        .context("politeness settings")?;
    let f = &config.frontier;
    let (spill_dir, made) = if let Some(state) = state {
        state.clear_spill()?;
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
    let builder = Frontier::builder()
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
    Ok((builder, made))
}
