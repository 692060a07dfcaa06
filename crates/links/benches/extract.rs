//! Link extraction per page: `cargo bench -p politecrawl-links --bench extract`.
//!
//! Two deterministic pages: a typical ~8.5 KB article page with 30 links (10 relative child
//! links, 20 absolute) amid head boilerplate, navigation markup, an inline script and style,
//! and paragraphs of text; a ~500 KB directory-style page with 10,000+ links; and a hostile
//! page whose one tag has 200,000 attributes, which must cost time linear in its size.
//! Criterion reports the time per page and, through its throughput line, pages per second.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use url::Url;

use links::{Options, Page, extract};

mod pages;

use pages::{big_page, hostile_pages, typical_page};

fn bench(c: &mut Criterion) {
    let url = Url::parse("https://example.com/articles/crawler-notes").expect("valid URL");
    let options = Options::default();

    let typical = typical_page();
    let page = Page {
        url: &url,
        body: typical.as_bytes(),
        content_type: Some("text/html; charset=utf-8"),
    };
    let out = extract(&page, &options);
    assert_eq!(out.links.len(), 30, "30 links in the typical page");
    eprintln!("typical page: {} bytes, 30 links", typical.len());

    let mut group = c.benchmark_group("extract");
    group.throughput(Throughput::Elements(1));
    group.bench_function("typical_8.5KB_30_links", |b| {
        b.iter(|| extract(black_box(&page), &options));
    });
    // The same page read for its requisites too, as a crawl that archives does.
    let requisites = Options {
        requisites: true,
        ..Options::default()
    };
    group.bench_function("typical_8.5KB_with_requisites", |b| {
        b.iter(|| extract(black_box(&page), &requisites));
    });

    let big = big_page();
    let page = Page {
        url: &url,
        body: big.as_bytes(),
        content_type: None,
    };
    let out = extract(&page, &options);
    assert!(out.links.len() + out.over_cap >= 10_000);
    eprintln!(
        "big page: {} bytes, {} links followed, {} over the cap",
        big.len(),
        out.links.len(),
        out.over_cap
    );
    group.sample_size(20);
    group.bench_function("big_500KB_10k_links", |b| {
        b.iter(|| extract(black_box(&page), &options));
    });

    // A hostile page: one tag with 200,000 attributes (2.6 MB). html5ever's tokenizer is
    // quadratic here (seconds for a tenth of it); this must stay linear.
    let (_, hostile) = hostile_pages(200_000).swap_remove(0);
    let page = Page {
        url: &url,
        body: hostile.as_bytes(),
        content_type: None,
    };
    group.sample_size(10);
    group.bench_function("hostile_one_tag_200k_attributes", |b| {
        b.iter(|| extract(black_box(&page), &options));
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
