//! `crawler --seed URL`: a fast, polite web crawler on a Bloom-filter frontier. See README.md.
//!
//! Where things live: [`cli`] (flags), [`config`] (the settings and their defaults), [`crawl`]
//! (the fetch workers), [`fetch`] (HTTP), [`robots`] (robots.txt), [`extract`] (links from
//! pages), [`output`] (records), [`report`] (progress and the final summary). This file turns
//! the command line into a crawl, and errors into messages and exit codes.

mod cli;
mod config;
mod crawl;
mod extract;
mod fetch;
mod output;
mod report;
mod robots;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use clap::Parser;
use frontier::{
    Canonical, Canonicalizer, Frontier, Politeness, ScopeMode, ScopeRules, SeenSet, SpillSettings,
};

use crate::cli::Cli;
use crate::config::{Config, Scope};
use crate::crawl::Crawler;

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
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("crawler: {err:#}");
            ExitCode::from(2)
        }
    }
}

/// Settings, seeds and frontier first (any problem there is the user's to fix: exit 2), then
/// the crawl, which ends with exit 0 however many fetches failed.
fn run(cli: &Cli) -> Result<()> {
    let config = match &cli.config {
        Some(path) => Config::from_file(path)?,
        None => Config::default(),
    };
    let config = cli.apply(config);
    config.validate().context("bad setting")?;
    let canon = Canonicalizer::new();
    let seeds = seeds(cli, &canon)?;
    let (frontier, spill_dir) = build_frontier(&config, canon, &seeds)?;
    let client = fetch::client(&config).context(
        "cannot set up the HTTP client (is politeness.user_agent a valid header value?)",
    )?;
    let sink = output::Sink::open(&config.output.file)
        .with_context(|| format!("cannot write records to {}", config.output.file.display()))?;

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let crawler = Arc::new(Crawler::new(config.clone(), frontier, client, sink));
    let now = std::time::Instant::now();
    for seed in seeds {
        crawler
            .frontier()
            .push_canonical(seed, 0, now)
            .context("cannot queue the seeds")?;
    }
    runtime.block_on(async {
        let progress = report::Progress::start(&crawler, &config.output);
        crawler.run().await;
        progress.finish().await;
    });
    eprint!("{}", report::summary(&crawler));
    let sink_failed = crawler
        .sink_failed
        .load(std::sync::atomic::Ordering::Relaxed);
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
    Ok(())
}

/// The seeds from `--seed` and `--seeds-file`, canonical; a bad one is an error naming it.
fn seeds(cli: &Cli, canon: &Canonicalizer) -> Result<Vec<Canonical>> {
    let mut texts: Vec<(String, String)> = cli
        .seeds
        .iter()
        .map(|s| (s.clone(), "--seed".to_owned()))
        .collect();
    if let Some(path) = &cli.seeds_file {
        let file = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read seeds file {}", path.display()))?;
        for (n, line) in file.lines().enumerate() {
            let line = line.trim();
            if !line.is_empty() && !line.starts_with('#') {
                texts.push((
                    line.to_owned(),
                    format!("{} line {}", path.display(), n + 1),
                ));
            }
        }
    }
    if texts.is_empty() {
        bail!("no seeds: give at least one --seed URL or a --seeds-file");
    }
    texts
        .into_iter()
        .map(|(text, place)| {
            canon
                .canonicalize(&text)
                .map_err(|err| anyhow::anyhow!("bad seed {text:?} ({place}): {err}"))
        })
        .collect()
}

/// The frontier the settings describe, and the spill directory made for it, if one was.
fn build_frontier(
    config: &Config,
    canon: Canonicalizer,
    seeds: &[Canonical],
) -> Result<(Frontier, Option<PathBuf>)> {
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
        .max_attempts(p.max_attempts)
        .build()
        .context("politeness settings")?;
    let f = &config.frontier;
    let (spill_dir, made) = if f.spill_dir.as_os_str().is_empty() {
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
    let frontier = Frontier::builder()
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
        )
        .build()
        .context("frontier settings (frontier.*)")?;
    Ok((frontier, made))
}
