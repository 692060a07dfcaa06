//! Start-up: the command line and the settings it names become a crawler ready to run, its
//! frontier built, its outputs opened and its seeds queued. Every mistake a user can make is
//! found here, before anything is written: the caller reports it and exits 2.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, anyhow, bail};
use frontier::{
    Canonical, Canonicalizer, Frontier, FrontierBuilder, Politeness, ScopeErrorKind, ScopeMode,
    ScopeRules, SeenSet, SpillSettings,
};

use crate::cli::Cli;
use crate::config::{self, Config, Scope};
use crate::crawl::Crawler;
use crate::requisite::Memo;
use crate::state::{Recrawl, StateDir};
use crate::{
    backend, crawl, dns, fetch, guard, hosts, open_files, output, recrawl, report, shared_crawl,
    sitemap, warc,
};

/// A crawl set up and ready to run.
pub(crate) struct Ready {
    /// The crawler, its seeds queued.
    pub(crate) crawler: Arc<Crawler>,
    /// The settings the crawl runs with (a shared crawl's, once joined).
    pub(crate) config: Config,
    /// `--state-dir`, locked.
    pub(crate) state: Option<StateDir>,
    /// `--metrics`: bound, not yet served.
    pub(crate) metrics: Option<std::net::TcpListener>,
    /// The spill directory made for this crawl, removed when it ends.
    pub(crate) spill_dir: Option<PathBuf>,
    /// Held to the end: no other process may use the state directory meanwhile.
    pub(crate) lock: Option<std::fs::File>,
}

/// What start-up came to.
pub(crate) enum Start {
    /// A crawl to run (boxed: far larger than the other variant).
    Ready(Box<Ready>),
    /// The shared crawl had finished before this run, and this command brings no seed new
    /// to it: nothing to do.
    AlreadyFinished,
}

/// Settings, seeds, frontier and outputs, each checked before the state directory or Redis is
/// written; then the seeds queued.
pub(crate) fn start(cli: &Cli, runtime: &tokio::runtime::Runtime) -> Result<Start> {
    let state = cli.state_dir.as_deref().map(StateDir::new);
    let lock = state.as_ref().map(StateDir::lock).transpose()?;
    let Command {
        mut config,
        mut seed_texts,
        hosts,
        proxy,
        earlier,
    } = Command::read(cli, state.as_ref())?;
    let shared = if config.redis.url.is_empty() {
        None
    } else {
        match runtime.block_on(shared_crawl::join_shared(cli, &mut config, &mut seed_texts))? {
            shared_crawl::Joined::Crawl(joined) => Some(*joined),
            shared_crawl::Joined::Finished => return Ok(Start::AlreadyFinished),
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
    let Seeds {
        seeds,
        redirects,
        redirected,
    } = Seeds::read(
        cli,
        &seed_texts,
        state.as_ref(),
        shared.as_ref().map(|(_, s)| s),
    )?;
    let canon = Canonicalizer::new();
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
    let Outputs { warc, metrics } =
        Outputs::open(&config, &user_agent, seeds.len(), state.is_some())?;
    // The last run's spilled URLs are in its checkpoint: the spill directory starts empty.
    if let Some(state) = &state {
        state.clear_spill()?;
    }
    // Fetches in flight each take a file or two (their connections): this process's limit
    // is raised, and the concurrency cut to it if it must be, for this run only (a resumed
    // crawl keeps the setting as given, for a machine where it fits).
    let concurrency = open_files::raise_and_fit(config.fetch.concurrency);
    let guard = guard_for(
        runtime,
        &config,
        &seeds,
        &redirects,
        resolver(runtime, &config)?,
    );
    let backend = backend_for(
        cli,
        runtime,
        &config,
        (&hosts, &guard),
        (shared, local),
        &scope_seeds,
        state.as_ref(),
        concurrency,
    )?;
    // Only now, with every setting checked and the frontier built (its seen-test sized), is
    // the state directory written.
    match &state {
        Some(state) if cli.resume => state.save(&config, &seed_texts)?,
        Some(state) => state.create(&config, &seed_texts)?,
        None => {}
    }
    let recrawl = recrawl_of(cli, state.as_ref(), earlier.is_some())?;
    config.fetch.concurrency = concurrency;
    // Before the user agent is resolved, which makes it look written.
    let anonymous = anonymity_warning(&config.politeness, &seeds);
    // Resolved once, for the HTTP client and the robots.txt rules, after the state directory
    // saved the setting as given: a resume with another --contact builds it anew.
    config.politeness.user_agent = user_agent;
    let clients = fetch::clients(&config, Arc::clone(&guard), &hosts, proxy.clone())
        .map_err(|e| anyhow!("{e}"))?;
    // The same, built again to drop their idle connections (see `fetch::Http::shed_idle`).
    let rebuild = {
        let (config, guard, hosts) = (config.clone(), Arc::clone(&guard), Arc::clone(&hosts));
        move || fetch::clients(&config, Arc::clone(&guard), &hosts, proxy.clone())
    };
    let (sink, warc) = records(cli, &config, &backend, warc)?;
    let seed_redirects = crawl::SeedRedirects::new(
        Canonicalizer::new(),
        cli.state_dir.as_deref().map(StateDir::new),
        &redirects,
    );
    let crawler = Crawler::new(
        config.clone(),
        backend,
        Box::new(fetch::Http::new(clients, rebuild, Arc::clone(&hosts))),
        guard,
        hosts,
        sink,
        warc,
        seed_redirects,
    );
    let (crawler, earlier_urls) = recrawling(crawler, earlier, recrawl);
    let crawler = Arc::new(crawler);
    queue(cli, runtime, &crawler, state.as_ref(), seeds, earlier_urls)?;
    if let Some(warning) = anonymous {
        // Last before the crawl, so that a bad setting found later is not preceded by it.
        tracing::warn!("{warning}");
    }
    Ok(Start::Ready(Box::new(Ready {
        crawler,
        config,
        state,
        metrics,
        spill_dir,
        lock,
    })))
}

/// The resolver of the crawl's names (`fetch.resolve`, `fetch.dns_servers`), its warning said.
fn resolver(runtime: &tokio::runtime::Runtime, config: &Config) -> Result<Arc<dns::Resolver>> {
    let _runtime = runtime.enter();
    let (resolver, warning) = dns::Resolver::new(&config.fetch.resolve, &config.fetch.dns_servers)
        .map_err(|e| anyhow!("bad setting: {e}"))?;
    if let Some(warning) = warning {
        tracing::warn!("{warning}");
    }
    Ok(Arc::new(resolver))
}

/// The records' file, opened (appended to on `--resume`), and the WARC files. A completion on
/// a shared crawl is in Redis the moment it is made: what its fetch wrote goes to the
/// operating system as it is written, so that a process killed then loses none of it.
fn records(
    cli: &Cli,
    config: &Config,
    backend: &backend::Backend,
    warc: Option<warc::Warc>,
) -> Result<(output::Sink, Option<warc::Warc>)> {
    let sink = output::Sink::open(&config.output.file, cli.resume)
        .with_context(|| format!("cannot write records to {}", config.output.file.display()))?;
    Ok(match backend {
        backend::Backend::Shared(_) => (
            sink.flushing_each_record(),
            warc.map(warc::Warc::flushing_each_record),
        ),
        _ => (sink, warc),
    })
}

/// What the command says, read and checked before anything is written: its settings (the
/// state directory's on `--resume`), its seeds, each host's own settings with their secrets,
/// the proxy, and `--since`'s earlier records.
struct Command {
    config: Config,
    seed_texts: Vec<String>,
    hosts: Arc<hosts::HostRules>,
    proxy: Option<reqwest::Proxy>,
    earlier: Option<recrawl::Earlier>,
}

impl Command {
    fn read(cli: &Cli, state: Option<&StateDir>) -> Result<Command> {
        let (config, mut seed_texts) = settings(cli, state)?;
        config.validate().context("bad setting")?;
        // The secrets are read here, before anything is written: a missing one stops the
        // start.
        let hosts = Arc::new(
            hosts::HostRules::new(&config).map_err(|why| anyhow::anyhow!("bad setting: {why}"))?,
        );
        let proxy = fetch::proxy(&config).map_err(|why| anyhow::anyhow!("bad setting: {why}"))?;
        // A secret must not reach the state directory or Redis: refused before either is
        // written.
        if let Some(state) = state {
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
        // Read before anything is written: a file that cannot be read stops the start.
        let earlier = if cli.since.is_empty() {
            None
        } else {
            Some(recrawl::Earlier::load(&cli.since)?)
        };
        // A recrawl given no seeds crawls from the earlier crawl's: its URLs at depth 0.
        if seed_texts.is_empty()
            && let Some(earlier) = &earlier
        {
            seed_texts = earlier.seeds();
        }
        Ok(Command {
            config,
            seed_texts,
            hosts,
            proxy,
            earlier,
        })
    }
}

/// The seeds, canonical, and the targets of their redirects that are seeds too.
struct Seeds {
    seeds: Vec<Canonical>,
    /// Each target with the URL that redirected to it, when known.
    redirects: Vec<(String, Option<String>)>,
    /// The targets, canonical.
    redirected: Vec<Canonical>,
}

impl Seeds {
    /// The seeds of `seed_texts`, and the redirect targets a resumed crawl (`state`) or the
    /// shared crawl joined (`shared`) had.
    fn read(
        cli: &Cli,
        seed_texts: &[String],
        state: Option<&StateDir>,
        shared: Option<&shared::Stored>,
    ) -> Result<Seeds> {
        let canon = Canonicalizer::new();
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
        let seeds = canonical_seeds(seed_texts, &canon)?;
        // Targets of the seeds' redirects a resumed crawl had: seeds of its scope again.
        // Each with the URL that redirected to it, when known: the guard trusts a target only
        // where it is the same server as that URL.
        let mut redirects: Vec<(String, Option<String>)> = match state {
            Some(state) if cli.resume => state.load_seed_redirects()?,
            _ => Vec::new(),
        };
        // A shared crawl's: in the scope, never trusted (another process saw the redirect).
        if let Some(stored) = shared {
            redirects.extend(stored.redirect_targets.iter().map(|t| (t.clone(), None)));
        }
        let redirect_texts: Vec<String> = redirects.iter().map(|(t, _)| t.clone()).collect();
        let redirected = canonical_seeds(&redirect_texts, &canon)
            .context("the seeds' redirect targets (seed-redirects.txt)")?;
        Ok(Seeds {
            seeds,
            redirects,
            redirected,
        })
    }
}

/// Queues what the crawl starts from: the sitemaps of `--sitemap` (known as sitemaps before
/// they are queued, so that no worker takes one for a page; a resume knows again those its
/// last checkpoint knew), the seeds and the earlier URLs of `--since`.
fn queue(
    cli: &Cli,
    runtime: &tokio::runtime::Runtime,
    crawler: &Crawler,
    state: Option<&StateDir>,
    seeds: Vec<Canonical>,
    earlier_urls: recrawl::Listed,
) -> Result<()> {
    for sitemap in canonical_seeds(&cli.sitemaps, &Canonicalizer::new())? {
        crawler.leads.sitemaps.mark(&sitemap, 0);
        // Known to the whole crawl, so that whichever process leases it reads it as one.
        if let Some(shared) = crawler.frontier().as_shared() {
            let marked = shared.mark_sitemap(&sitemap, 0, sitemap::MAX_PER_HOST);
            if let Err(err) = runtime.block_on(marked) {
                tracing::warn!("taking {sitemap} as a sitemap of the crawl: {err}");
            }
        }
    }
    if let Some(state) = state
        && cli.resume
    {
        let canon = Canonicalizer::new();
        for (url, level) in state.load_sitemaps()? {
            if let Ok(url) = canon.canonicalize(&url) {
                crawler.leads.sitemaps.mark(&url, level);
            }
        }
    }
    // The seeds the earlier crawl did not record first (a per-host page budget charges them
    // before the earlier URLs), then the earlier URLs, each with its record, then the seeds
    // recorded, seen by then. On resume the seeds are seen already: pushing them again is a
    // no-op.
    let (recorded, fresh): (Vec<_>, Vec<_>) = {
        let pages = earlier_urls.pages.iter();
        let listed: HashSet<&str> = pages.map(|(u, _, _)| u.as_str()).collect();
        seeds
            .into_iter()
            .partition(|seed| listed.contains(seed.as_str()))
    };
    runtime
        .block_on(crawler.frontier().push_seeds(fresh))
        .context("cannot queue the seeds")?;
    if !(earlier_urls.pages.is_empty() && earlier_urls.requisites.is_empty()) {
        if let Some(state) = state {
            state.mark_recrawl(false)?;
        }
        runtime.block_on(push_earlier(crawler, earlier_urls));
        if let Some(state) = state {
            // Once every admission is in the journal: a crash from here on loses none.
            crawler.sync_journal();
            state.mark_recrawl(true)?;
        }
    }
    runtime
        .block_on(crawler.frontier().push_seeds(recorded))
        .context("cannot queue the seeds")?;
    Ok(())
}

/// Whether this run is a recrawl: given `--since` (`since`), or resuming one. A recrawl
/// resumed is one again, as its queued URLs have their earlier records with them; a resume
/// that cannot be one is refused.
fn recrawl_of(cli: &Cli, state: Option<&StateDir>, since: bool) -> Result<bool> {
    let shown = cli.state_dir.as_deref().unwrap_or(Path::new("")).display();
    Ok(match state {
        Some(state) if cli.resume => match (state.recrawl(), since) {
            (Recrawl::No, true) => bail!(
                "--since: the crawl in {} was not started with --since, and its URLs queued \
                 already cannot take earlier records now: recrawl in a new state directory",
                shown
            ),
            (Recrawl::Queuing, false) => bail!(
                "the crawl in {} stopped while queuing its --since records: resume it with the \
                 same --since files, so that those not queued yet are",
                shown
            ),
            (recrawl, _) => recrawl != Recrawl::No,
        },
        _ => since,
    })
}

/// The outputs besides the records, opened (or bound) with the records' checks, before the
/// state directory is written: the WARC file (its first file created, nothing written in it
/// yet) and the metrics listener.
struct Outputs {
    warc: Option<warc::Warc>,
    metrics: Option<std::net::TcpListener>,
}

impl Outputs {
    fn open(config: &Config, user_agent: &str, seeds: usize, synced: bool) -> Result<Outputs> {
        for (path, key) in [
            (&config.output.file, "output.file"),
            (&config.output.summary_json, "output.summary_json"),
        ] {
            output::check_writable(path)
                .with_context(|| format!("bad setting: {key}: cannot write {}", path.display()))?;
        }
        let warc = if config.output.warc.as_os_str().is_empty() {
            None
        } else {
            let settings = warc::Settings {
                path: config.output.warc.clone(),
                max_bytes: config.output.warc_max_bytes,
                revisits: config.output.warc_revisits,
                cdx: (!config.output.cdx.as_os_str().is_empty()).then(|| config.output.cdx.clone()),
                wacz: (!config.output.wacz.as_os_str().is_empty())
                    .then(|| config.output.wacz.clone()),
                info: warc::Info::new(config, user_agent, seeds),
                synced,
            };
            Some(warc::Warc::open(settings).map_err(|err| {
                anyhow::anyhow!("bad setting: output.warc: cannot write the WARC file: {err}")
            })?)
        };
        let metrics = if config.output.metrics.is_empty() {
            None
        } else {
            let addr =
                config::metrics_address(&config.output.metrics).map_err(anyhow::Error::msg)?;
            let listener = std::net::TcpListener::bind(addr)
                .and_then(|l| l.set_nonblocking(true).map(|()| l))
                .with_context(|| format!("bad setting: output.metrics: cannot listen on {addr}"))?;
            Some(listener)
        };
        Ok(Outputs { warc, metrics })
    }
}

/// The SSRF guard: the seeds' hosts and the proxy trusted, and a resumed crawl's redirect
/// targets where they are the same server as the URL that redirected (resolved anew:
/// addresses may have changed since).
fn guard_for(
    runtime: &tokio::runtime::Runtime,
    config: &Config,
    seeds: &[Canonical],
    redirects: &[(String, Option<String>)],
    resolver: Arc<dns::Resolver>,
) -> Arc<guard::Guard> {
    let mut guard = guard::Guard::new(
        !config.fetch.allow_private_addresses,
        seeds.iter().map(Canonical::as_url),
        resolver,
    );
    if let Ok(proxy) = url::Url::parse(&config.fetch.proxy)
        && let Some(host) = proxy.host_str()
    {
        guard.trust_proxy(host);
    }
    for (target, from) in redirects {
        if let (Some(from), Ok(target)) = (from, url::Url::parse(target))
            && let Ok(from) = url::Url::parse(from)
        {
            runtime.block_on(guard.trust_redirect(&from, &target));
        }
    }
    Arc::new(guard)
}

/// The frontier the crawl runs on: the shared crawl joined (its store and what it holds), or
/// this process's own from `builder`, resumed from the state directory if asked; sized for
/// `concurrency` fetches. A shared crawl bucketed by address places hosts where the SSRF
/// guard says their fetches connect.
#[expect(
    clippy::too_many_arguments,
    reason = "each is a part start-up checked on its own before the frontier is built"
)]
fn backend_for(
    cli: &Cli,
    runtime: &tokio::runtime::Runtime,
    config: &Config,
    (hosts, guard): (&Arc<hosts::HostRules>, &Arc<guard::Guard>),
    frontiers: (
        Option<(shared::Store, shared::Stored)>,
        Option<FrontierBuilder>,
    ),
    scope_seeds: &[Canonical],
    state: Option<&StateDir>,
    concurrency: usize,
) -> Result<backend::Backend> {
    let now = std::time::Instant::now();
    Ok(match frontiers {
        (Some((store, stored)), _) => {
            let scope = scope_rules(config, scope_seeds)?;
            let _entered = runtime.enter();
            let frontier = shared::SharedFrontier::new(
                store,
                &stored,
                Canonicalizer::new(),
                scope,
                politeness(config, hosts)?,
                config.redis.lease_time,
            )?
            .with_locator(Arc::clone(guard) as Arc<dyn shared::Locate>);
            // A request keeps its place at its address for as long as it may last.
            let hold = config.fetch.connect_timeout + config.fetch.timeout + ADDRESS_MARGIN;
            let workers = crawl::worker_tasks(concurrency, true);
            backend::Backend::shared(frontier, workers, (address_limits(config), hold))
        }
        (None, Some(builder)) => {
            let seen = (
                config.frontier.seen_initial_capacity,
                config.frontier.seen_false_positive_rate,
            );
            let frontier = local_frontier(cli, state, builder, seen, now)?;
            let workers = crawl::worker_tasks(concurrency, false);
            backend::Backend::local(frontier, workers, address_limits(config))
        }
        (None, None) => unreachable!("a local frontier is built when no Redis is given"),
    })
}

/// How much longer than its fetch a request keeps its place at its address in a shared
/// crawl: the time to record it, and the clocks of two machines.
const ADDRESS_MARGIN: std::time::Duration = std::time::Duration::from_secs(10);

/// The limits per address of `politeness.address_connections` and `address_delay`.
fn address_limits(config: &Config) -> frontier::AddressLimits {
    frontier::AddressLimits {
        connections: config.politeness.address_connections,
        delay: config.politeness.address_delay,
    }
}

/// The crawler, made a recrawl if it is one, and the earlier URLs of `--since` to queue.
fn recrawling(
    crawler: Crawler,
    earlier: Option<recrawl::Earlier>,
    recrawl: bool,
) -> (Crawler, recrawl::Listed) {
    match earlier {
        None if recrawl => (crawler.recrawling(), recrawl::Listed::default()),
        Some(mut earlier) => {
            tracing::info!("--since: {} URLs of earlier crawls", earlier.len());
            let urls = earlier.take_listed();
            let unreadable = earlier.unreadable();
            if unreadable > 0 {
                tracing::warn!(
                    "--since: {unreadable} recorded URLs are not URLs this crawler fetches"
                );
            }
            (crawler.recrawling(), urls)
        }
        None => (crawler, recrawl::Listed::default()),
    }
}

/// Queues the URLs an earlier crawl recorded (`--since`), each at its depth: the scope
/// and trap rules judge them as links, and the seen-test drops those queued already (by a
/// resume). In a shared crawl, the processes given the same records each queue a share of
/// them: the list is named by a digest of its URLs.
async fn push_earlier(crawler: &Crawler, urls: recrawl::Listed) {
    use sha1::{Digest as _, Sha1};
    let recrawl::Listed { pages, requisites } = urls;
    let mut digest = Sha1::new();
    for (url, depth, memo) in pages.iter().chain(&requisites) {
        digest.update(url.as_str().as_bytes());
        digest.update(depth.to_le_bytes());
        if let Some(memo) = memo {
            digest.update(memo);
        }
    }
    let digest = digest.finalize();
    let list = format!("since-{}", data_encoding::HEXLOWER.encode(&digest[..8]));
    let count = pages.len();
    crawler.frontier().push_list(&list, pages, false).await;
    // Page requisites go by the requisite rules, past the scope, marked as requisites (their
    // page's own: the hops were not recorded); a crawl that fetches none leaves them out.
    if crawler.leads.requisites.is_some() {
        let count = requisites.len();
        let requisites = requisites
            .into_iter()
            .map(|(url, depth, memo)| {
                let memo = Memo::requisite_with(1, memo.as_deref().unwrap_or_default());
                (url, depth, Some(memo))
            })
            .collect();
        crawler
            .frontier()
            .push_list(&format!("{list}-requisites"), requisites, true)
            .await;
        tracing::info!("--since: the {count} earlier page requisites are queued");
    } else if !requisites.is_empty() {
        tracing::info!(
            "--since: {} page requisites left out (crawl.page_requisites is off)",
            requisites.len()
        );
    }
    // What a process joining without --since waits for: see the guide's "Recrawling".
    tracing::info!("--since: the {count} earlier URLs are queued, each with its record");
}

/// The local frontier: the checkpoint's, resumed, or a new one (replaying a journal a crash
/// left, if there is one).
fn local_frontier(
    cli: &Cli,
    state: Option<&StateDir>,
    builder: FrontierBuilder,
    (capacity, rate): (usize, f64),
    now: std::time::Instant,
) -> Result<Frontier> {
    Ok(match state {
        Some(state) if cli.resume && state.has_checkpoint() => {
            let frontier = Frontier::open(state.checkpoint(), builder, now).with_context(|| {
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

/// The settings of this run, checked, for a command that crawls nothing (`--remove-crawl`).
pub(crate) fn settings_alone(cli: &Cli) -> Result<Config> {
    let (config, _) = settings(cli, None)?;
    config.validate().context("bad setting")?;
    Ok(config)
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
pub(crate) fn explain_host(cli: &Cli, host: &str) -> Result<String> {
    let state = cli.state_dir.as_deref().map(StateDir::new);
    let (config, _) = settings(cli, state.as_ref())?;
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
    let mut out = rules.explain(&config, url.host_key());
    out.push_str(&explain_address(&config, url.as_url())?);
    Ok(out)
}

/// `--explain-host`'s lines on the host's address: where its name lives (as a crawl would
/// resolve it) and the limits it shares with the address's other names.
fn explain_address(config: &Config, url: &url::Url) -> Result<String> {
    let host = url.host_str().unwrap_or_default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting a runtime to resolve the host")?;
    let found = runtime.block_on(async {
        let (resolver, _) = dns::Resolver::new(&config.fetch.resolve, &config.fetch.dns_servers)
            .map_err(|e| anyhow!("bad setting: {e}"))?;
        let source = if resolver.fixed(host).is_some() {
            "fetch.resolve"
        } else {
            "DNS or the hosts file"
        };
        Ok::<_, anyhow::Error>((resolver.lookup(host).await, source))
    })?;
    let p = &config.politeness;
    let limits = address_limits(config);
    let shared = if limits.is_unlimited() {
        "no limit per address (politeness.address_connections = 0, address_delay = \"0\")"
            .to_owned()
    } else {
        let connections = match p.address_connections {
            0 => "no limit of requests in flight".to_owned(),
            n => format!("at most {n} requests in flight"),
        };
        format!(
            "{connections} and {} between starts, across every name it serves \
             (politeness.address_connections, politeness.address_delay)",
            hosts::show_duration(p.address_delay)
        )
    };
    Ok(match found {
        (Ok(addresses), source) => {
            let list: Vec<String> = addresses.iter().map(ToString::to_string).collect();
            format!(
                "address: {} ({source}; the first is the one connected to)\nper address: {shared}\n",
                list.join(", ")
            )
        }
        (Err(err), _) => {
            format!("address: unknown ({err})\nper address: {shared}, once it resolves\n")
        }
    })
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

/// The seed texts from `--seed` and `--seeds-file`, with where each came from.
fn seed_texts_from(cli: &Cli) -> Result<Vec<String>> {
    // A sitemap given by the user is a seed: its host is in scope, and a resume has it.
    let mut texts = cli.seeds.clone();
    texts.extend(cli.sitemaps.iter().cloned());
    // Checked here, before a shared crawl is created with them in Redis: a bad seed stored
    // there would refuse every later start of the crawl, the corrected one's too.
    canonical_seeds(&texts, &Canonicalizer::new())?;
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
        .per_host_budget((c.per_host_pages > 0).then_some(c.per_host_pages))
        .per_domain_budget(
            (c.per_domain_hosts > 0).then_some(c.per_domain_hosts),
            (c.per_domain_pages > 0).then_some(c.per_domain_pages),
        );
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
