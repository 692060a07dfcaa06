//! Cost of the scope and trap rules, per URL checked: `check` runs on every extracted link.
//!
//! Run with `cargo bench -p politecrawl-frontier --bench scope` (`-- --quick` for a short run).
//!
//! * `in_scope/no_patterns`: links on a seed host that pass every rule, the common case: a
//!   host lookup, the depth, and the path's segments.
//! * `in_scope/two_patterns`: the same links with an include and an exclude pattern.
//! * `in_scope/seed_domains`: links on subdomains of a seed's registrable domain.
//! * `dropped`: links refused by each rule in turn.
//! * `host_budget/charge`: charging hosts under a limit.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use frontier::{Canonical, Canonicalizer, HostBudget, ScopeMode, ScopeRules};

const IN_SCOPE: &[&str] = &[
    "https://example.com/",
    "https://example.com/docs/guide/intro.html",
    "https://example.com/search?page=2&q=bloom+filter",
    "https://example.com/wiki/Uniform_Resource_Locator",
    "https://example.com/api/v1/items/42/reviews?sort=asc",
    "https://example.com/blog/2024/01/15/a-post-with-a-long-slug-for-good-measure/",
    "https://example.com/static/css/site.min.css?v=3",
    "https://example.com/a/b/c/d/e/f/g/h/",
];

const SUBDOMAINS: &[&str] = &[
    "https://example.com/",
    "https://www.example.com/docs/guide/intro.html",
    "https://shop.example.com/search?page=2&q=bloom+filter",
    "https://en.wiki.example.com/wiki/Uniform_Resource_Locator",
];

const DROPPED: &[&str] = &[
    "https://other.example/docs/",
    "https://example.com/a/b/a/b/a/",
    "https://example.com/2024/01/2024/01/2024/01/",
    "https://example.com/1/2/3/4/5/6/7/8/9/10/11/12/13/14/15/16/17/18/19/20/21/22/23/24/25/26/27/28/29/30/31/32/33",
];

fn canonical(urls: &[&str]) -> Vec<Canonical> {
    let canon = Canonicalizer::new();
    urls.iter()
        .map(|u| canon.canonicalize(u).expect("a valid URL"))
        .collect()
}

fn check_all(c: &mut Criterion, group: &str, name: &str, rules: &ScopeRules, urls: &[Canonical]) {
    let mut group = c.benchmark_group(group);
    group.throughput(Throughput::Elements(urls.len() as u64));
    group.bench_function(name, |b| {
        b.iter(|| {
            for url in urls {
                let _ = black_box(rules.check(black_box(url), black_box(3)));
            }
        })
    });
    group.finish();
}

fn check(c: &mut Criterion) {
    let seed = canonical(&["https://example.com/"]);
    let in_scope = canonical(IN_SCOPE);

    let plain = ScopeRules::builder()
        .seeds(&seed)
        .build()
        .expect("valid rules");
    check_all(c, "in_scope", "no_patterns", &plain, &in_scope);

    let patterns = ScopeRules::builder()
        .seeds(&seed)
        .include(r"^https?://example\.com/")
        .exclude(r"\.(?:jpe?g|png|gif|zip|pdf)$|[?&]sessionid=")
        .build()
        .expect("valid rules");
    check_all(c, "in_scope", "two_patterns", &patterns, &in_scope);

    let domains = ScopeRules::builder()
        .seeds(&seed)
        .mode(ScopeMode::SeedDomains)
        .build()
        .expect("valid rules");
    check_all(
        c,
        "in_scope",
        "seed_domains",
        &domains,
        &canonical(SUBDOMAINS),
    );

    check_all(c, "dropped", "no_patterns", &plain, &canonical(DROPPED));
}

fn budget(c: &mut Criterion) {
    let budget = HostBudget::new(Some(u64::MAX));
    let hosts: Vec<String> = (0..64).map(|i| format!("host{i}.example.com")).collect();
    let mut group = c.benchmark_group("host_budget");
    group.throughput(Throughput::Elements(hosts.len() as u64));
    group.bench_function("charge", |b| {
        b.iter(|| {
            for host in &hosts {
                let _ = black_box(budget.charge(black_box(host)));
            }
        })
    });
    group.finish();
}

criterion_group!(benches, check, budget);
criterion_main!(benches);
