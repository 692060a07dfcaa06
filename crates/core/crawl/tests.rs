//! The crawl loop on a fake site under tokio's paused clock: the budget, stop, abort and
//! panic paths, without a network or a wall clock.

use std::collections::HashMap;
use std::io::{self, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use frontier::{Frontier, Politeness, ScopeMode, ScopeRules};
use serde_json::Value;

use frontier::Canonicalizer;
use url::Url;

use super::*;
use crate::fetch::{FetchError, Fetched};

/// What a fake page does when fetched.
#[derive(Clone)]
enum Behaviour {
    /// Answers 200 with links to these paths after `delay`.
    Page { delay: Duration, links: Vec<String> },
    /// Panics, as a bug in the fetch path would.
    Panic,
}

/// A site of `http://site.test/`: the root links to `/p/0` .. `/p/{n-1}`.
struct FakeSite {
    pages: HashMap<String, Behaviour>,
    /// Paths requested, in order.
    log: Mutex<Vec<String>>,
}

impl FakeSite {
    fn new(n: usize, delay: Duration) -> FakeSite {
        let links = (0..n).map(|i| format!("/p/{i}")).collect();
        let mut pages = HashMap::new();
        pages.insert("/".to_owned(), Behaviour::Page { delay, links });
        for i in 0..n {
            let page = Behaviour::Page {
                delay,
                links: Vec::new(),
            };
            pages.insert(format!("/p/{i}"), page);
        }
        FakeSite {
            pages,
            log: Mutex::new(Vec::new()),
        }
    }
}

impl Fetcher for Arc<FakeSite> {
    fn get<'a>(
        &'a self,
        url: &'a Url,
        _max_body: u64,
        _keep_headers: bool,
        _validators: Option<&'a crate::fetch::Validators>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Fetched, FetchError>> + Send + 'a>>
    {
        Box::pin(async move {
            let path = url.path().to_owned();
            self.log.lock().unwrap().push(path.clone());
            let (delay, links) = match self.pages.get(&path).cloned() {
                Some(Behaviour::Page { delay, links }) => (delay, links),
                Some(Behaviour::Panic) => panic!("a bug fetching {path}"),
                None => (Duration::ZERO, Vec::new()),
            };
            tokio::time::sleep(delay).await;
            // Its path first: pages with the same links are not one content.
            let body: String = std::iter::once(format!("<!-- {path} -->"))
                .chain(links.iter().map(|l| format!("<a href=\"{l}\">x</a>")))
                .collect();
            Ok(Fetched {
                status: 200,
                content_type: Some("text/html".to_owned()),
                location: None,
                retry_after: None,
                last_modified: None,
                etag: None,
                body: body.into_bytes(),
                too_large: false,
                headers: None,
            })
        })
    }
}

/// Records written into memory.
#[derive(Clone, Default)]
struct Records(Arc<Mutex<Vec<u8>>>);

impl Write for Records {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Records {
    fn all(&self) -> Vec<Value> {
        let text = String::from_utf8(self.0.lock().unwrap().clone()).unwrap();
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

/// A crawler of `site` with `concurrency` workers and `max_pages`, no robots.txt, no delay.
fn crawler(site: &Arc<FakeSite>, concurrency: usize, max_pages: u64) -> (Arc<Crawler>, Records) {
    let mut config = Config::default();
    config.fetch.concurrency = concurrency;
    config.crawl.max_pages = max_pages;
    config.politeness.robots = false;
    crawler_with(site, config, Duration::ZERO)
}

/// A crawler of `site` with `config` and `delay` between two requests to a host.
fn crawler_with(
    site: &Arc<FakeSite>,
    mut config: Config,
    delay: Duration,
) -> (Arc<Crawler>, Records) {
    config.politeness.delay = delay;
    config.politeness.connections_per_host = 64;
    let frontier = Frontier::builder()
        .scope(
            ScopeRules::builder()
                .mode(ScopeMode::AnyHost)
                .build()
                .unwrap(),
        )
        .politeness(
            Politeness::builder()
                .delay(delay)
                .connections_per_host(64)
                .backoff_base(Duration::from_millis(1))
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    let records = Records::default();
    let hosts = Arc::new(crate::hosts::HostRules::new(&config).unwrap());
    let crawler = Crawler::new(
        config,
        Backend::local(frontier, 4, frontier::AddressLimits::default()),
        Box::new(Arc::clone(site)),
        Arc::new(Guard::new(
            false,
            [],
            Arc::new(crate::dns::Resolver::new(&[], &[]).unwrap().0),
        )),
        hosts,
        Sink::to_writer(records.clone()),
        None,
        SeedRedirects::new(Canonicalizer::new(), None, &[]),
    );
    (Arc::new(crawler), records)
}

async fn seed(crawler: &Crawler) {
    let root = Canonicalizer::new()
        .canonicalize("http://site.test/")
        .unwrap();
    crawler.frontier().push_seeds(vec![root]).await.unwrap();
}

/// A crawl running in a task: 4 workers on a site of a root and 10 pages, each answering
/// after 10 s; with what a test stops it with.
async fn slow_crawl() -> (
    Arc<FakeSite>,
    Arc<Crawler>,
    Records,
    Shutdown,
    tokio::task::JoinHandle<()>,
) {
    let site = Arc::new(FakeSite::new(10, Duration::from_secs(10)));
    let (crawler, records) = crawler(&site, 4, 0);
    seed(&crawler).await;
    let shutdown = Shutdown::default();
    let run = tokio::spawn({
        let (crawler, shutdown) = (Arc::clone(&crawler), shutdown.clone());
        async move { crawler.run(shutdown).await }
    });
    (site, crawler, records, shutdown, run)
}

#[tokio::test(start_paused = true)]
async fn max_pages_is_exact_with_many_workers() {
    let site = Arc::new(FakeSite::new(50, Duration::from_millis(10)));
    let (crawler, records) = crawler(&site, 8, 7);
    seed(&crawler).await;
    crawler.run(Shutdown::default()).await;
    assert_eq!(records.all().len(), 7);
    assert_eq!(site.log.lock().unwrap().len(), 7);
    let queues = crawler.frontier().stats().queues;
    assert_eq!((queues.in_flight, queues.queued), (0, 44));
}

#[tokio::test(start_paused = true)]
async fn stop_lets_the_leases_in_flight_finish_and_takes_no_more() {
    let (site, crawler, records, shutdown, run) = slow_crawl().await;
    // The root at 0 s, four pages from 10 s on; stopped at 11 s.
    tokio::time::sleep(Duration::from_secs(11)).await;
    shutdown.stop.cancel();
    let started = tokio::time::Instant::now();
    run.await.unwrap();
    // The four in flight finish (at 20 s), and no more start.
    assert_eq!(started.elapsed(), Duration::from_secs(9));
    assert_eq!(records.all().len(), 5);
    assert_eq!(site.log.lock().unwrap().len(), 5);
    let queues = crawler.frontier().stats().queues;
    assert_eq!((queues.in_flight, queues.queued), (0, 6));
}

#[tokio::test(start_paused = true)]
async fn abort_gives_the_leases_back_without_records() {
    let (_site, crawler, records, shutdown, run) = slow_crawl().await;
    tokio::time::sleep(Duration::from_secs(11)).await;
    shutdown.stop.cancel();
    tokio::time::sleep(Duration::from_secs(1)).await;
    shutdown.abort.cancel();
    let started = tokio::time::Instant::now();
    run.await.unwrap();
    // At once: the four fetches in flight are dropped, their URLs queued again.
    assert_eq!(started.elapsed(), Duration::ZERO);
    assert_eq!(records.all().len(), 1, "only the root ended");
    let queues = crawler.frontier().stats().queues;
    assert_eq!((queues.in_flight, queues.queued), (0, 10));
}

#[tokio::test(start_paused = true)]
async fn a_panicking_fetch_is_recorded_as_internal_and_the_crawl_ends() {
    let mut site = FakeSite::new(10, Duration::from_millis(10));
    site.pages.insert("/p/3".to_owned(), Behaviour::Panic);
    let site = Arc::new(site);
    // More workers than pages: losing one to the panic leaves enough.
    let (crawler, records) = crawler(&site, 4, 0);
    seed(&crawler).await;
    crawler.run(Shutdown::default()).await;
    let records = records.all();
    assert_eq!(records.len(), 11);
    let panicked: Vec<&Value> = records
        .iter()
        .filter(|r| r["url"] == "http://site.test/p/3")
        .collect();
    assert_eq!(panicked.len(), 1);
    assert_eq!(panicked[0]["error"], "internal");
    assert_eq!(crawler.frontier().stats().queues.in_flight, 0);
}

/// A crawl of `site` with robots.txt obeyed, 10 hours between two requests to its host, and
/// `config`'s other settings: the paths it requested, in order.
async fn crawl_for_days(site: &Arc<FakeSite>, config: Config) -> Vec<String> {
    let (crawler, _) = crawler_with(site, config, Duration::from_secs(10 * 3600));
    seed(&crawler).await;
    crawler.run(Shutdown::default()).await;
    site.log.lock().unwrap().clone()
}

#[tokio::test(start_paused = true)]
async fn robots_txt_is_fetched_again_once_its_rules_are_a_day_old() {
    // The root and four pages, one every 10 hours: the rules are 40 hours old at the last.
    let site = Arc::new(FakeSite::new(4, Duration::ZERO));
    let log = crawl_for_days(&site, Config::default()).await;
    let robots = |log: &[String]| log.iter().filter(|p| *p == "/robots.txt").count();
    // robots.txt is a request of its host: fetched at hour 0, the root at 10; fetched again
    // at 30 (24 hours passed), its page at 40, and again at 60.
    assert_eq!(robots(&log), 3, "{log:?}");
    assert_eq!(log.len(), 5 + 3, "{log:?}");

    // Kept 10 hours, the host's delay: fetched again before every page after the root, and
    // each page fetched all the same (the rules serve one page however old they are).
    let site = Arc::new(FakeSite::new(4, Duration::ZERO));
    let mut config = Config::default();
    config.politeness.robots_max_age = Duration::from_secs(10 * 3600);
    let log = crawl_for_days(&site, config).await;
    assert_eq!(robots(&log), 5, "{log:?}");
    assert_eq!(log.len(), 5 + 5, "{log:?}");
}
