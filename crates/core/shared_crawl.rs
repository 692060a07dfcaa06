//! Joining a crawl shared through Redis (`--redis`): creating it with this process's settings
//! and seeds, or taking the stored ones, and `--remove-crawl`.

use std::collections::BTreeMap;

use anyhow::{Context, Result, bail};

use crate::cli::Cli;
use crate::config::{self, BucketsBy, Config};
use crate::exit::EXIT_FINISHED;
use crate::output;

/// Connects to the shared crawl of `config.redis`, creating it with this process's settings
/// and seeds unless it exists; a process that joins takes the crawl's stored settings, but
/// for its own per-process ones (concurrency, page budget, outputs, state), and learns its
/// seeds.
pub(crate) async fn join_shared(
    cli: &Cli,
    config: &mut Config,
    seeds: &mut Vec<String>,
) -> Result<Joined> {
    if cli.state_dir.is_some() {
        bail!(
            "--state-dir does not apply to a crawl shared through Redis (--redis): its state \
             lives in Redis, and a process that stops is replaced by starting it again"
        );
    }
    let r = config.redis.clone();
    let shown = frontier::redact_url(&r.url);
    let store = shared::Store::connect(&r.url, &r.crawl_name).await?;
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
            let layout = shared::Layout {
                buckets: r.buckets.unwrap_or_else(|| store.default_buckets()),
                seen_initial_capacity: r.seen_initial_capacity,
                seen_rate: config.frontier.seen_false_positive_rate,
                buckets_by: buckets_by(config),
                ..shared::Layout::default()
            };
            let stored = config
                .storable(&format!("in Redis ({}:meta)", r.crawl_name))
                .context("bad setting")?;
            let settings = serde_json::to_string(&stored).context("saving the settings")?;
            store.create(layout, &settings, seeds).await?
        }
    };
    let asked = buckets_by(config);
    if config.redis.buckets_by != BucketsBy::Auto && asked != stored.layout.buckets_by {
        // The layout is the crawl's, fixed when it was created: this process follows it.
        eprintln!(
            "crawler: the crawl {:?} on {shown} was created with its hosts bucketed by {}: \
             --redis-buckets-by {} (redis.buckets_by) counts only when a crawl is created",
            r.crawl_name,
            stored.layout.buckets_by.as_str(),
            asked.as_str()
        );
    }
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
    // Where names live and which CAs are trusted are this machine's view of the network.
    theirs.fetch.resolve = mine.fetch.resolve.clone();
    theirs.fetch.dns_servers = mine.fetch.dns_servers.clone();
    theirs.fetch.ca_file = mine.fetch.ca_file.clone();
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
             give another --crawl-name; to add pages to it, give seeds it does not have with --join.",
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
             where this command's differ (only concurrency, max_pages, outputs, \
             names, DNS servers and CA files are per process):\n  {list}",
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

/// What a crawl created by this process buckets its hosts by: a budget per domain is
/// counted in the domain's bucket (`Config::validate` refuses one by address); limits per
/// address, by default, are one process's work by address.
fn buckets_by(config: &Config) -> shared::BucketsBy {
    let p = &config.politeness;
    match config.redis.buckets_by {
        _ if config.crawl.per_domain_hosts > 0 || config.crawl.per_domain_pages > 0 => {
            shared::BucketsBy::Domain
        }
        BucketsBy::Auto if p.address_connections > 0 || !p.address_delay.is_zero() => {
            shared::BucketsBy::Address
        }
        BucketsBy::Auto | BucketsBy::Host => shared::BucketsBy::Host,
        BucketsBy::Domain => shared::BucketsBy::Domain,
        BucketsBy::Address => shared::BucketsBy::Address,
    }
}

/// The crawl, once a process has created it, or `None` after [`JOIN_WAIT`].
async fn wait_for_crawl(store: &shared::Store) -> Result<Option<shared::Stored>> {
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
pub(crate) enum Joined {
    /// A crawl to work on (boxed: far larger than the other variant).
    Crawl(Box<(shared::Store, shared::Stored)>),
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
pub(crate) fn remove_crawl(runtime: &tokio::runtime::Runtime, config: &Config) -> Result<()> {
    let r = &config.redis;
    if r.url.is_empty() {
        bail!("--remove-crawl needs --redis URL (and --crawl-name, if not the default)");
    }
    let shown = frontier::redact_url(&r.url);
    runtime.block_on(async {
        let store = shared::Store::connect(&r.url, &r.crawl_name).await?;
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

    #[test]
    fn a_crawl_with_limits_per_address_is_bucketed_by_address_unless_told_otherwise() {
        let mut config = Config::default();
        assert_eq!(buckets_by(&config), shared::BucketsBy::Address);
        config.politeness.address_connections = 0;
        assert_eq!(buckets_by(&config), shared::BucketsBy::Address);
        config.politeness.address_delay = std::time::Duration::ZERO;
        assert_eq!(buckets_by(&config), shared::BucketsBy::Host);
        config.redis.buckets_by = BucketsBy::Address;
        assert_eq!(buckets_by(&config), shared::BucketsBy::Address);
        config.redis.buckets_by = BucketsBy::Host;
        config.politeness.address_connections = 8;
        assert_eq!(buckets_by(&config), shared::BucketsBy::Host);
        // A domain's budget is counted in its bucket, whatever was asked.
        config.redis.buckets_by = BucketsBy::Auto;
        config.crawl.per_domain_pages = 10;
        assert_eq!(buckets_by(&config), shared::BucketsBy::Domain);
    }
}
