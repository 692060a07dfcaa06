//! Tests of testweb over real loopback connections.
//!
//! The central one runs a small reference crawler (an HTML5 parser, the WHATWG URL parser,
//! robots.txt, nofollow) over a site with every special kind and checks that what it fetches
//! is exactly `expected_pages()`: the expected set is closed and nothing is missing.

mod common;

use std::collections::{BTreeSet, VecDeque};
use std::io::Read;
use std::time::{Duration, Instant};

use common::{Conn, get};
use scraper::{Html, Selector};
use testweb::{
    Charset, Declared, ExpectOptions, HostConfig, NonHtml, Robots, RobotsRules, SiteConfig,
    Special, SpecialKind, Testweb,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use url::Url;

/// Decodes escapes of unreserved characters, as the canonical form does.
fn decode_unreserved(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%' && i + 2 < bytes.len())
            .then(|| u8::from_str_radix(&s[i + 1..i + 3], 16).ok())
            .flatten()
            .filter(|c| c.is_ascii_alphanumeric() || b"-._~".contains(c));
        if let Some(c) = escaped {
            out.push(c);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).expect("ASCII replaced by ASCII")
}

/// The canonical form of a parsed URL.
fn canonical(mut url: Url) -> String {
    url.set_fragment(None);
    if let Some(name) = url
        .domain()
        .and_then(|d| d.strip_suffix('.'))
        .map(str::to_owned)
    {
        url.set_host(Some(&name)).expect("a name without its dot");
    }
    if url.query() == Some("") {
        url.set_query(None);
    }
    decode_unreserved(url.as_str())
}

/// robots.txt rules of the `*` group, or a verdict for the whole host.
#[derive(Debug)]
enum RobotsView {
    AllowAll,
    DisallowAll,
    Rules {
        allow: Vec<String>,
        disallow: Vec<String>,
    },
}

impl RobotsView {
    fn parse(status: u16, text: &str) -> RobotsView {
        match status {
            200..=299 => {}
            500..=599 => return RobotsView::DisallowAll,
            _ => return RobotsView::AllowAll,
        }
        let (mut allow, mut disallow) = (Vec::new(), Vec::new());
        let mut in_star = false;
        let mut last_was_agent = false;
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or("").trim();
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let (key, value) = (key.trim().to_ascii_lowercase(), value.trim());
            if key == "user-agent" {
                if !last_was_agent {
                    in_star = false;
                }
                in_star |= value == "*";
                last_was_agent = true;
                continue;
            }
            last_was_agent = false;
            if !in_star || value.is_empty() {
                continue;
            }
            match key.as_str() {
                "allow" => allow.push(value.to_owned()),
                "disallow" => disallow.push(value.to_owned()),
                _ => {}
            }
        }
        RobotsView::Rules { allow, disallow }
    }

    fn allows(&self, target: &str) -> bool {
        match self {
            RobotsView::AllowAll => true,
            RobotsView::DisallowAll => false,
            RobotsView::Rules { allow, disallow } => {
                let longest = |rules: &[String]| {
                    rules
                        .iter()
                        .filter(|r| target.starts_with(r.as_str()))
                        .map(String::len)
                        .max()
                };
                match (longest(allow), longest(disallow)) {
                    (_, None) => true,
                    (None, Some(_)) => false,
                    (Some(a), Some(d)) => a >= d,
                }
            }
        }
    }
}

/// The encoding of an HTML body: header charset, then a `<meta>` prescan, then UTF-8.
fn encoding_of(content_type: &str, body: &[u8]) -> &'static encoding_rs::Encoding {
    let label_after = |text: &str| {
        let lower = text.to_ascii_lowercase();
        let at = lower.find("charset=")? + "charset=".len();
        let rest = lower[at..].trim_start_matches(['"', '\'']);
        let end = rest.find(['"', '\'', ';', ' ', '>']).unwrap_or(rest.len());
        encoding_rs::Encoding::for_label(&rest.as_bytes()[..end])
    };
    label_after(content_type)
        .or_else(|| label_after(&String::from_utf8_lossy(&body[..body.len().min(1024)])))
        .unwrap_or(encoding_rs::UTF_8)
}

/// The links of an HTML page: (absolute URL, nofollow).
fn extract(page: &Url, html: &str) -> Vec<(Url, bool)> {
    let doc = Html::parse_document(html);
    let select = |s: &str| Selector::parse(s).expect("valid selector");
    let base = doc
        .select(&select("base[href]"))
        .next()
        .and_then(|b| page.join(b.value().attr("href")?).ok())
        .unwrap_or_else(|| page.clone());
    let meta_nofollow = doc.select(&select("meta[name]")).any(|m| {
        m.value()
            .attr("name")
            .is_some_and(|n| n.eq_ignore_ascii_case("robots"))
            && m.value().attr("content").is_some_and(|c| {
                c.split(',')
                    .any(|t| t.trim().eq_ignore_ascii_case("nofollow"))
            })
    });
    let mut out = Vec::new();
    for a in doc.select(&select("a[href]")) {
        let nofollow = meta_nofollow
            || a.value().attr("rel").is_some_and(|rel| {
                rel.split_ascii_whitespace()
                    .any(|t| t.eq_ignore_ascii_case("nofollow"))
            });
        if let Ok(url) = base.join(a.value().attr("href").unwrap_or("")) {
            out.push((url, nofollow));
        }
    }
    out
}

/// What the reference crawl saw.
#[derive(Debug, Default)]
struct Crawl {
    /// Canonical URLs requested (or, for hanging pages, that would have been).
    fetched: BTreeSet<String>,
    /// Canonical URLs of the site skipped because robots.txt disallows them.
    disallowed: BTreeSet<String>,
    /// Links to other hosts than the site's.
    offsite: BTreeSet<String>,
    /// Canonical URLs only seen in nofollow links.
    nofollow: BTreeSet<String>,
}

/// A breadth-first crawl of `web` from its seeds, one request per URL, no retries.
async fn reference_crawl(web: &Testweb, follow_nofollow: bool) -> Crawl {
    let origins: Vec<String> = (0..web.hosts())
        .map(|h| web.host_url(h).trim_end_matches('/').to_owned())
        .collect();
    let hanging: BTreeSet<String> = web
        .specials()
        .into_iter()
        .filter(|(_, kind)| matches!(kind, SpecialKind::Hang))
        .map(|(url, _)| url)
        .collect();
    let addresses = web.addresses();
    let mut conns: Vec<Conn> = (0..web.hosts())
        .map(|h| {
            let authority = origins[h]["http://".len()..].to_owned();
            Conn::at(addresses[web.address_of(h)], web.port(h), authority)
        })
        .collect();
    let mut robots: Vec<Option<RobotsView>> = origins.iter().map(|_| None).collect();
    let mut crawl = Crawl::default();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut queue: VecDeque<String> = VecDeque::new();
    for seed in web.seeds() {
        seen.insert(seed.clone());
        queue.push_back(seed);
    }
    while let Some(url_text) = queue.pop_front() {
        let url = Url::parse(&url_text).expect("canonical URLs parse");
        let origin = url.origin().ascii_serialization();
        let host = origins
            .iter()
            .position(|o| *o == origin)
            .expect("a site URL");
        let target = &url[url::Position::BeforePath..url::Position::AfterQuery];
        if robots[host].is_none() {
            let response = conns[host]
                .get("/robots.txt", 1 << 20)
                .await
                .expect("robots.txt");
            robots[host] = Some(RobotsView::parse(response.status, &response.text()));
        }
        if !robots[host].as_ref().is_some_and(|r| r.allows(target)) {
            crawl.disallowed.insert(url_text);
            continue;
        }
        crawl.fetched.insert(url_text.clone());
        if hanging.contains(&url_text) {
            continue;
        }
        let response =
            tokio::time::timeout(Duration::from_secs(5), conns[host].get(target, 1 << 20))
                .await
                .unwrap_or_else(|_| panic!("{url_text} timed out"))
                .unwrap_or_else(|e| panic!("{url_text}: {e}"));
        let mut links = Vec::new();
        if (300..400).contains(&response.status) {
            let location = response.header("location").expect("a Location");
            links.push((url.join(location).expect("valid Location"), false));
        }
        let content_type = response.header("content-type").unwrap_or("").to_owned();
        if response.status == 200 && content_type.starts_with("text/html") && !response.truncated {
            let mut body = response.body.clone();
            if response.header("content-encoding") == Some("gzip") {
                let mut decoded = Vec::new();
                flate2::read::GzDecoder::new(&body[..])
                    .take(1 << 20)
                    .read_to_end(&mut decoded)
                    .expect("gzip decodes");
                body = decoded;
            }
            let (text, _, _) = encoding_of(&content_type, &body).decode(&body);
            links.extend(extract(&url, &text));
        }
        for (link, nofollow) in links {
            let link = canonical(link);
            let ours = origins.iter().any(|o| {
                link.strip_prefix(o.as_str())
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with(['/', '?']))
            });
            if !ours {
                crawl.offsite.insert(link);
                continue;
            }
            if nofollow && !follow_nofollow {
                crawl.nofollow.insert(link);
                continue;
            }
            if seen.insert(link.clone()) {
                queue.push_back(link);
            }
        }
    }
    crawl.nofollow.retain(|url| !seen.contains(url));
    crawl
}

/// Four hosts: every special kind on host 0, robots rules on host 1, robots 503 on host 2,
/// latency and cross-host redirects on host 3.
fn rich_config() -> SiteConfig {
    let mut specials = HostConfig::every_special();
    for special in &mut specials.specials {
        if let SpecialKind::Trickle { interval, .. } = &mut special.kind {
            *interval = Duration::from_millis(2);
        }
        if let SpecialKind::Delay(delay) = &mut special.kind {
            *delay = Duration::from_millis(20);
        }
    }
    SiteConfig {
        hosts: 4,
        pages_per_host: 60,
        children_per_page: 3,
        random_links_per_page: 3,
        inter_host_fraction: 0.3,
        page_bytes: 700,
        seed: 42,
        offsite_links: true,
        host_configs: vec![
            specials,
            HostConfig {
                robots: Robots::Rules(RobotsRules {
                    disallow: vec!["/p/1".into()],
                    allow: vec!["/p/12".into()],
                    crawl_delay: Some(Duration::from_millis(100)),
                    sitemaps: Vec::new(),
                }),
                ..HostConfig::default()
            },
            HostConfig {
                robots: Robots::Status(503),
                ..HostConfig::default()
            },
            HostConfig {
                robots: Robots::Status(404),
                latency: Duration::from_millis(1),
                specials: vec![
                    Special::new(
                        "/to-host-1",
                        SpecialKind::Redirect {
                            status: 308,
                            host: Some(1),
                            to: "/p/12".into(),
                        },
                    ),
                    Special::new(
                        "/to-disallowed",
                        SpecialKind::Redirect {
                            status: 307,
                            host: Some(1),
                            to: "/p/10".into(),
                        },
                    ),
                    Special::new("/to-missing", SpecialKind::redirect(301, "/nowhere")),
                ],
            },
        ],
        ..SiteConfig::default()
    }
}

#[tokio::test]
async fn reference_crawl_fetches_exactly_the_expected_pages() {
    reference_crawl_of(rich_config()).await;
}

#[tokio::test]
async fn reference_crawl_of_hosts_served_by_name_fetches_exactly_the_expected_pages() {
    let config = SiteConfig {
        addresses: 3,
        ..rich_config()
    };
    let web = reference_crawl_of(config).await;
    assert!(web.url(3, "/").starts_with("http://h3.test:"));
    // Every address served its own hosts' requests, and only those.
    let requests = web.requests();
    for a in 0..3 {
        assert!(web.max_in_flight_at_address(a) >= 1);
        assert!(requests.iter().any(|r| r.address == a));
    }
    assert!(requests.iter().all(|r| r.address == web.address_of(r.host)));
    // A name asked of an address that does not serve it: 421.
    let (h1, h0) = (web.url(1, "/"), web.url(0, "/"));
    let port = web.port(0);
    let mut wrong = Conn::at(web.addresses()[1], port, h0[7..h0.len() - 1].to_owned());
    assert_eq!(
        wrong.get("/", 1 << 20).await.expect("an answer").status,
        421
    );
    let mut right = Conn::at(web.addresses()[1], port, h1[7..h1.len() - 1].to_owned());
    assert_eq!(
        right.get("/", 1 << 20).await.expect("an answer").status,
        200
    );
}

/// Crawls `config` with the reference crawler and checks it fetched exactly the expected
/// pages, and what the ground truth promises of the special ones; answers the site.
async fn reference_crawl_of(config: SiteConfig) -> Testweb {
    let web = Testweb::start(config).await.expect("start");
    let expected = web.expected_pages();
    let crawl = reference_crawl(&web, false).await;
    let missing: Vec<_> = expected.difference(&crawl.fetched).collect();
    let extra: Vec<_> = crawl.fetched.difference(&expected).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "missing {missing:#?}\nextra {extra:#?}"
    );

    // Everything the crawl skipped is disallowed, nofollow or off-site, and documented so.
    assert!(!crawl.disallowed.is_empty());
    for url in &crawl.disallowed {
        assert!(web.is_disallowed(url), "{url}");
        assert!(!expected.contains(url), "{url}");
    }
    assert_eq!(
        crawl.offsite,
        BTreeSet::from(["http://offsite.invalid/".to_owned()])
    );
    let with_nofollow = web.expected_pages_with(ExpectOptions {
        follow_nofollow: true,
        ..ExpectOptions::default()
    });
    for url in &crawl.nofollow {
        assert!(
            with_nofollow.contains(url) && !expected.contains(url),
            "{url}"
        );
    }
    assert_eq!(crawl.nofollow.len(), 4, "{:#?}", crawl.nofollow);

    // What the ground truth promises about particular pages.
    let url = |host, path| web.url(host, path);
    for path in [
        "/",
        "/p/59",
        "/status/404",
        "/slow/hang",
        "/gzip-bomb",
        "/redirect/loop-b",
        "/t/redirect/301-target",
        "/t/gzip/1",
        "/t/malformed/8",
        "/t/malformed/11",
        "/t/charset/windows-1252-header/caf%C3%A9",
        "/t/charset/windows-1252-meta/%E2%82%AC",
        "/t/charset/shift-jis-meta/%E6%97%A5%E6%9C%AC%E8%AA%9E",
        "/t/base-href/base/sub/b",
        "/t/base-href/c",
        "/t/nofollow/followed-2",
    ] {
        assert!(expected.contains(&url(0, path)), "{path}");
    }
    for path in [
        "/robots.txt",
        "/t/malformed/hidden-comment",
        "/t/malformed/hidden-duplicate",
        "/t/binary/png/in-png",
        "/t/binary/pdf/in-pdf-uri",
        "/t/nofollow/nofollow-2",
        "/t/meta-nofollow/1",
        "/t/base-href/wrong/a",
    ] {
        assert!(!expected.contains(&url(0, path)), "{path}");
    }
    assert!(expected.contains(&url(1, "/p/12")) && expected.contains(&url(1, "/p/2")));
    assert!(!expected.contains(&url(1, "/p/1")) && !expected.contains(&url(1, "/p/10")));
    assert!(expected.contains(&url(3, "/to-disallowed")) && expected.contains(&url(3, "/nowhere")));
    assert!(!expected.iter().any(|u| u.starts_with(&web.host_url(2))));
    assert_eq!(
        expected
            .iter()
            .filter(|u| u.starts_with(&web.host_url(3)))
            .count(),
        64
    );

    // The log saw each fetched URL once, in canonical form, plus one robots.txt per host.
    let counts = web.fetch_counts();
    for (url, count) in &counts {
        assert_eq!(*count, 1, "{url}");
        assert!(
            expected.contains(url) || url.ends_with("/robots.txt"),
            "{url}"
        );
    }
    let hang = url(0, "/slow/hang");
    assert_eq!(
        counts.len(),
        expected.len() - 1 + web.hosts(),
        "all but {hang}"
    );
    web
}

#[tokio::test]
async fn reference_crawl_following_nofollow_and_ignoring_robots() {
    let config = SiteConfig {
        host_configs: vec![HostConfig {
            robots: Robots::disallow(["/p/3", "/nofollow"]),
            specials: vec![
                Special::new("/nofollow", SpecialKind::Nofollow),
                Special::new("/meta-nofollow", SpecialKind::MetaNofollow),
            ],
            ..HostConfig::default()
        }],
        pages_per_host: 40,
        seed: 7,
        ..SiteConfig::default()
    };
    let web = Testweb::start(config).await.expect("start");
    let follow = ExpectOptions {
        follow_nofollow: true,
        ..ExpectOptions::default()
    };
    let crawl = reference_crawl(&web, true).await;
    assert_eq!(crawl.fetched, web.expected_pages_with(follow));
    assert!(crawl.fetched.contains(&web.url(0, "/t/meta-nofollow/2")));
    assert!(
        !crawl
            .fetched
            .contains(&web.url(0, "/t/nofollow/nofollow-1"))
    );

    let everything = web.expected_pages_with(ExpectOptions {
        follow_nofollow: true,
        ignore_robots: true,
        ignore_sitemaps: false,
        page_requisites: false,
    });
    assert!(everything.contains(&web.url(0, "/t/nofollow/nofollow-1")));
    assert!(everything.contains(&web.url(0, "/p/3")));
    let pages = (0..40).map(|i| {
        if i == 0 {
            web.host_url(0)
        } else {
            web.url(0, &format!("/p/{i}"))
        }
    });
    assert!(pages.clone().all(|p| everything.contains(&p)));
    // "/p/3" is a prefix: /p/30 .. /p/39 are disallowed too.
    let robots_obeyed = web.expected_pages();
    assert!(!robots_obeyed.contains(&web.url(0, "/p/3")));
    assert!(!robots_obeyed.contains(&web.url(0, "/p/30")));
}

/// Replaces every port of `web` in `text` with a placeholder.
fn without_ports(web: &Testweb, text: &str) -> String {
    (0..web.hosts()).fold(text.to_owned(), |t, h| {
        t.replace(&web.port(h).to_string(), &format!("PORT{h}"))
    })
}

#[tokio::test]
async fn deterministic_for_a_seed() {
    let config = SiteConfig {
        hosts: 2,
        pages_per_host: 500,
        seed: 99,
        ..SiteConfig::default()
    };
    let a = Testweb::start(config.clone()).await.expect("start");
    let b = Testweb::start(config.clone()).await.expect("start");
    let c = Testweb::start(SiteConfig {
        seed: 100,
        ..config
    })
    .await
    .expect("start");
    let set = |web: &Testweb| -> BTreeSet<String> {
        web.expected_pages()
            .iter()
            .map(|u| without_ports(web, u))
            .collect()
    };
    assert_eq!(set(&a), set(&b));
    assert_eq!(a.expected_pages().len(), 1_000);
    let mut differs = false;
    for path in ["/", "/p/1", "/p/77", "/p/499"] {
        let page = |web: &Testweb| {
            let web_port = web.port(1);
            async move { get(web_port, path).await.expect("get").text() }
        };
        let (pa, pb, pc) = (page(&a).await, page(&b).await, page(&c).await);
        assert_eq!(without_ports(&a, &pa), without_ports(&b, &pb), "{path}");
        differs |= without_ports(&a, &pa) != without_ports(&c, &pc);
        assert!(
            (2_000..2_300).contains(&pa.len()),
            "{path}: {} bytes",
            pa.len()
        );
    }
    assert!(differs, "another seed gives other pages");
    assert_eq!(get(a.port(0), "/p/500").await.expect("get").status, 404);
    assert_eq!(get(a.port(0), "/p/012").await.expect("get").status, 404);
    // Escaped unreserved characters name the same page.
    let plain = get(a.port(0), "/p/12").await.expect("get").text();
    assert_eq!(get(a.port(0), "/p/%312").await.expect("get").text(), plain);
}

#[tokio::test]
async fn plain_spellings_and_page_size() {
    let config = SiteConfig {
        pages_per_host: 100_000,
        children_per_page: 10,
        random_links_per_page: 20,
        page_bytes: 8_500,
        varied_spellings: false,
        ..SiteConfig::default()
    };
    let web = Testweb::start(config).await.expect("start");
    let page = get(web.port(0), "/p/7").await.expect("get").text();
    assert!(
        (8_450..=8_550).contains(&page.len()),
        "{} bytes",
        page.len()
    );
    let hrefs: Vec<&str> = page
        .split("href=\"")
        .skip(1)
        .map(|s| &s[..s.find('"').unwrap()])
        .collect();
    assert_eq!(hrefs.len(), 1 + 10 + 1 + 20);
    assert!(
        hrefs.iter().all(|h| h.starts_with("/p/") || *h == "/"),
        "{hrefs:?}"
    );
    assert_eq!(&hrefs[1..3], ["/p/71", "/p/72"]);
    let started = Instant::now();
    assert_eq!(web.expected_pages().len(), 100_000);
    eprintln!("expected_pages of 100,000 pages: {:?}", started.elapsed());
}

#[tokio::test]
async fn robots_txt_as_configured() {
    let config = SiteConfig {
        hosts: 4,
        host_configs: vec![
            HostConfig {
                robots: Robots::Rules(RobotsRules {
                    disallow: vec!["/p/".into(), "/private".into()],
                    allow: vec!["/p/5".into()],
                    crawl_delay: Some(Duration::from_millis(1_500)),
                    sitemaps: Vec::new(),
                }),
                ..HostConfig::default()
            },
            HostConfig {
                robots: Robots::Missing,
                ..HostConfig::default()
            },
            HostConfig {
                robots: Robots::Status(500),
                ..HostConfig::default()
            },
            HostConfig {
                robots: Robots::Status(503),
                ..HostConfig::default()
            },
        ],
        ..SiteConfig::default()
    };
    let web = Testweb::start(config).await.expect("start");
    let rules = get(web.port(0), "/robots.txt").await.expect("get");
    assert_eq!(rules.status, 200);
    assert!(
        rules
            .header("content-type")
            .unwrap()
            .starts_with("text/plain")
    );
    let text = rules.text();
    let star = text.split("User-agent: *\n").nth(1).expect("a * group");
    assert_eq!(
        star,
        "Allow: /p/5\nDisallow: /p/\nDisallow: /private\nCrawl-delay: 1.5\n"
    );
    assert!(text.contains("User-agent: testweb-other-bot\nDisallow: /\n"));
    assert_eq!(
        get(web.port(1), "/robots.txt").await.expect("get").status,
        404
    );
    assert_eq!(
        get(web.port(2), "/robots.txt").await.expect("get").status,
        500
    );
    assert_eq!(
        get(web.port(3), "/robots.txt").await.expect("get").status,
        503
    );

    assert!(web.is_disallowed(&web.url(0, "/p/1")));
    assert!(!web.is_disallowed(&web.url(0, "/p/5")) && !web.is_disallowed(&web.url(0, "/p/50")));
    assert!(web.is_disallowed(&web.url(0, "/private/x?y")));
    assert!(!web.is_disallowed(&web.host_url(0)) && !web.is_disallowed(&web.url(0, "/robots.txt")));
    assert!(!web.is_disallowed(&web.url(1, "/p/1")));
    assert!(web.is_disallowed(&web.url(2, "/")) && web.is_disallowed(&web.url(3, "/p/3")));
    // Host 0's root and the roots of 1, 2, 3 (linked from it), then everything on host 1.
    let expected = web.expected_pages();
    for url in expected.iter().filter(|u| u.starts_with(&web.host_url(0))) {
        let path = &url[web.host_url(0).len() - 1..];
        assert!(path == "/" || path.starts_with("/p/5"), "{url}");
    }
    assert!(!expected.iter().any(|u| u.starts_with(&web.host_url(2))));
    assert!(expected.contains(&web.host_url(1)));
}

#[tokio::test]
async fn special_kinds_answer_as_documented() {
    let web = Testweb::start(SiteConfig {
        host_configs: vec![HostConfig::every_special()],
        ..SiteConfig::default()
    })
    .await
    .expect("start");
    let port = web.port(0);
    let fetch = |path: &'static str| async move { get(port, path).await.expect(path) };

    for (path, status, retry) in [
        ("/status/404", 404, None),
        ("/status/410", 410, None),
        ("/status/500", 500, None),
        ("/status/503", 503, Some("1")),
        ("/status/429", 429, Some("1")),
        ("/nowhere", 404, None),
    ] {
        let response = fetch(path).await;
        assert_eq!(
            (response.status, response.header("retry-after")),
            (status, retry),
            "{path}"
        );
    }
    for expected in [503, 503, 200, 200] {
        assert_eq!(fetch("/flaky/503").await.status, expected);
    }
    assert_eq!(fetch("/flaky/500").await.status, 500);
    assert_eq!(fetch("/flaky/500").await.status, 200);
    for (path, status, location) in [
        ("/redirect/301", 301, "/t/redirect/301-target"),
        ("/redirect/302", 302, "/t/redirect/302-target"),
        ("/redirect/loop-a", 302, "/redirect/loop-b"),
        ("/redirect/loop-b", 302, "/redirect/loop-a"),
    ] {
        let response = fetch(path).await;
        assert_eq!(
            (response.status, response.header("location")),
            (status, Some(location))
        );
    }
    assert_eq!(fetch("/t/redirect/301-target").await.status, 200);

    let started = Instant::now();
    assert_eq!(fetch("/slow/delay").await.status, 200);
    assert!(started.elapsed() >= Duration::from_millis(200));

    // Trickle: the headers at once, the body over about a second.
    let started = Instant::now();
    let stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    let mut stream = tokio::io::BufReader::new(stream);
    stream
        .get_mut()
        .write_all(b"GET /slow/trickle HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut first = [0u8; 12];
    stream.read_exact(&mut first).await.unwrap();
    assert_eq!(&first, b"HTTP/1.1 200");
    assert!(
        started.elapsed() < Duration::from_millis(300),
        "headers at once"
    );
    let mut rest = Vec::new();
    stream.read_to_end(&mut rest).await.expect("read");
    let rest = String::from_utf8_lossy(&rest).into_owned();
    assert!(rest.contains("content-length: 2000\r\n"), "{rest}");
    assert_eq!(rest.split("\r\n\r\n").nth(1).map(str::len), Some(2_000));
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "{:?}",
        started.elapsed()
    );

    // Hang: no answer; once the client leaves, the request stops counting as in flight.
    let hang = tokio::time::timeout(Duration::from_millis(300), fetch("/slow/hang")).await;
    assert!(hang.is_err(), "no answer");
    tokio::time::sleep(Duration::from_millis(100)).await;
    web.clear_log();
    fetch("/").await;
    assert_eq!(
        web.requests()[0].in_flight,
        1,
        "the hanging request is over"
    );

    let mut conn = Conn::new(port);
    let huge = conn.get("/huge", 1 << 20).await.expect("huge");
    assert_eq!(huge.header("content-length"), Some("50000000"));
    assert!(huge.truncated && huge.body.len() == 1 << 20);

    let gzip = fetch("/gzip").await;
    assert_eq!(gzip.header("content-encoding"), Some("gzip"));
    let mut html = String::new();
    flate2::read::GzDecoder::new(&gzip.body[..])
        .read_to_string(&mut html)
        .expect("gunzip");
    assert!(html.contains("<a href=\"/t/gzip/1\">") && html.contains("<a href=\"/t/gzip/2\">"));

    let bomb = fetch("/gzip-bomb").await;
    assert_eq!(bomb.header("content-encoding"), Some("gzip"));
    assert!(
        bomb.body.len() < 2 << 20,
        "{} compressed bytes",
        bomb.body.len()
    );
    let isize = u32::from_le_bytes(bomb.body[bomb.body.len() - 4..].try_into().unwrap());
    assert_eq!(isize, 1 << 30);
    let mut start = Vec::new();
    flate2::read::GzDecoder::new(&bomb.body[..])
        .take(4 << 20)
        .read_to_end(&mut start)
        .unwrap();
    assert!(start.len() == 4 << 20 && start.iter().all(|&b| b == b' '));

    let png = fetch("/binary/png").await;
    assert_eq!(
        png.header("content-type"),
        Some(NonHtml::Png.content_type())
    );
    assert!(
        png.body.starts_with(b"\x89PNG\r\n\x1a\n") && png.text().contains("/t/binary/png/in-png")
    );
    let pdf = fetch("/binary/pdf").await;
    assert_eq!(pdf.header("content-type"), Some("application/pdf"));
    assert!(pdf.body.starts_with(b"%PDF-") && pdf.text().contains("/t/binary/pdf/in-pdf-uri"));

    for (path, charset, declared, word) in [
        (
            "/charset/windows-1252-header",
            Charset::Windows1252,
            Declared::Header,
            "café",
        ),
        (
            "/charset/windows-1252-meta",
            Charset::Windows1252,
            Declared::MetaCharset,
            "10 €",
        ),
        (
            "/charset/shift-jis-header",
            Charset::ShiftJis,
            Declared::Header,
            "日本語",
        ),
        (
            "/charset/shift-jis-meta",
            Charset::ShiftJis,
            Declared::MetaHttpEquiv,
            "テスト",
        ),
    ] {
        let response = fetch(path).await;
        let content_type = response.header("content-type").unwrap();
        let label = charset.label();
        match declared {
            Declared::Header => assert_eq!(content_type, format!("text/html; charset={label}")),
            _ => {
                assert_eq!(content_type, "text/html");
                assert!(
                    response.text().contains(&format!("charset={label}"))
                        || response.text().contains(&format!("charset=\"{label}\""))
                );
            }
        }
        assert!(
            std::str::from_utf8(&response.body).is_err(),
            "{path} is not UTF-8"
        );
        let encoding = encoding_rs::Encoding::for_label(label.as_bytes()).unwrap();
        let (text, _, errors) = encoding.decode(&response.body);
        assert!(!errors && text.contains(word), "{path}");
    }

    let canonical = fetch("/canonical").await.text();
    assert!(canonical.contains("<link rel=\"canonical\" href=\"/\">"));
    let base = fetch("/base-href").await.text();
    assert!(base.find("/t/base-href/base/") < base.find("/t/base-href/wrong/"));
    let leaf = fetch("/t/anything/at/all").await;
    assert_eq!(leaf.status, 200);
    assert!(!leaf.text().contains("href"));
}

#[tokio::test]
async fn request_log_counts_requests_and_concurrency() {
    let config = SiteConfig {
        hosts: 2,
        host_configs: vec![
            HostConfig::default(),
            HostConfig {
                latency: Duration::from_millis(150),
                ..HostConfig::default()
            },
        ],
        ..SiteConfig::default()
    };
    let web = Testweb::start(config).await.expect("start");
    let mut conn = Conn::new(web.port(0));
    for path in ["/", "/p/1", "/p/1", "/p/2?a=b", "/robots.txt"] {
        conn.get(path, usize::MAX).await.expect("get");
    }
    let log = web.requests();
    assert_eq!(log.len(), 5);
    assert!(
        log.iter()
            .all(|r| r.host == 0 && r.in_flight == 1 && r.connections == 1)
    );
    assert!(log.windows(2).all(|w| w[0].at <= w[1].at));
    assert_eq!(log[3].path, "/p/2?a=b");
    let counts = web.fetch_counts();
    assert_eq!(counts[&web.url(0, "/p/1")], 2);
    assert_eq!(counts[&web.url(0, "/p/2?a=b")], 1);
    assert_eq!(counts[&web.url(0, "/robots.txt")], 1);
    assert_eq!((web.max_in_flight(0), web.requests_served(0)), (1, 5));

    // Three clients at once on the slow host: three requests in flight.
    let port = web.port(1);
    let tasks: Vec<_> = (1..=3)
        .map(|i| tokio::spawn(async move { get(port, &format!("/p/{i}")).await.expect("get") }))
        .collect();
    for task in tasks {
        assert_eq!(task.await.unwrap().status, 200);
    }
    assert_eq!(web.max_in_flight(1), 3);
    assert_eq!(
        web.requests()
            .iter()
            .filter(|r| r.host == 1)
            .map(|r| r.in_flight)
            .max(),
        Some(3)
    );

    // A client that gives up: its request stops being in flight.
    let gave_up = tokio::time::timeout(Duration::from_millis(50), get(port, "/p/4")).await;
    assert!(gave_up.is_err());
    tokio::time::sleep(Duration::from_millis(200)).await;
    web.clear_log();
    assert!(web.requests().is_empty() && web.requests_served(1) == 0);
    get(port, "/p/5").await.expect("get");
    assert_eq!(web.requests()[0].in_flight, 1);
    assert_eq!(web.max_in_flight(1), 1);

    // Without the log, the counters still count.
    let quiet = Testweb::start(SiteConfig {
        log_requests: false,
        ..SiteConfig::default()
    })
    .await
    .expect("start");
    get(quiet.port(0), "/").await.expect("get");
    assert!(quiet.requests().is_empty() && quiet.fetch_counts().is_empty());
    assert_eq!(quiet.requests_served(0), 1);
}

#[tokio::test]
async fn invalid_configurations_are_refused() {
    let with_special = |path: &str, kind: SpecialKind| SiteConfig {
        host_configs: vec![HostConfig {
            specials: vec![Special::new(path, kind)],
            ..HostConfig::default()
        }],
        ..SiteConfig::default()
    };
    for config in [
        SiteConfig {
            hosts: 0,
            ..SiteConfig::default()
        },
        SiteConfig {
            pages_per_host: 0,
            ..SiteConfig::default()
        },
        SiteConfig {
            inter_host_fraction: 1.5,
            ..SiteConfig::default()
        },
        with_special("/p/3", SpecialKind::Hang),
        with_special("/t/x", SpecialKind::Hang),
        with_special("/robots.txt", SpecialKind::Hang),
        with_special("nothing", SpecialKind::Hang),
        with_special("/a/../b", SpecialKind::Hang),
        with_special("/a?b", SpecialKind::Hang),
        with_special("/r", SpecialKind::redirect(200, "/")),
        with_special(
            "/r",
            SpecialKind::Redirect {
                status: 301,
                host: Some(5),
                to: "/".into(),
            },
        ),
        SiteConfig {
            host_configs: vec![HostConfig {
                robots: Robots::disallow(["/a*b"]),
                ..HostConfig::default()
            }],
            ..SiteConfig::default()
        },
    ] {
        let error = Testweb::start(config).await.expect_err("refused");
        assert_eq!(error.kind(), std::io::ErrorKind::InvalidInput);
    }
}

#[tokio::test]
async fn shutdown_closes_the_ports() {
    let web = Testweb::start(SiteConfig {
        hosts: 2,
        ..SiteConfig::default()
    })
    .await
    .expect("start");
    let ports = [web.port(0), web.port(1)];
    let mut conn = Conn::new(ports[0]);
    conn.get("/", usize::MAX).await.expect("get");
    drop(web);
    tokio::time::sleep(Duration::from_millis(50)).await;
    for port in ports {
        assert!(
            tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_err()
        );
    }
    assert!(
        conn.get("/", usize::MAX).await.is_err(),
        "open connections are closed too"
    );
}

/// A styled page's requisites are in the ground truth only for a crawl that fetches them,
/// and answer as what they are: a style sheet that imports another, images, a script.
#[tokio::test]
async fn a_styled_page_needs_requisites_of_their_own_types() {
    let config = SiteConfig {
        hosts: 2,
        host_configs: vec![HostConfig {
            specials: vec![Special::new(
                "/styled",
                SpecialKind::Styled { cdn: Some(1) },
            )],
            ..HostConfig::default()
        }],
        ..SiteConfig::default()
    };
    let web = Testweb::start(config).await.expect("start");
    let with = web.expected_pages_with(ExpectOptions {
        page_requisites: true,
        ..ExpectOptions::default()
    });
    let extra: Vec<_> = with.difference(&web.expected_pages()).cloned().collect();
    assert_eq!(extra.len(), 12, "{extra:?}");
    assert!(extra.contains(&web.url(1, "/t/cdn/photo.png")));
    let page = get(web.port(0), "/styled").await.expect("get").text();
    for href in [
        "/t/styled/site.css",
        "/t/styled/logo-2x.png 2x",
        "url('/t/styled/div.png')",
    ] {
        assert!(page.contains(href), "{href} in {page}");
    }
    let css = get(web.port(0), "/t/styled/site.css").await.expect("get");
    assert_eq!(css.header("content-type"), Some("text/css"));
    assert!(css.text().starts_with("@import \"base.css\";"));
    let png = get(web.port(0), "/t/styled/logo.png").await.expect("get");
    assert_eq!(png.header("content-type"), Some("image/png"));
    let js = get(web.port(0), "/t/styled/app.js").await.expect("get");
    assert_eq!(js.header("content-type"), Some("text/javascript"));
}
