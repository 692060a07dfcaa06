//! Throughput of canonicalization, per URL.
//!
//! Run with `cargo bench -p politecrawl-frontier --bench canon` (`-- --quick` for a short run).
//!
//! * `canonical`: URLs already in canonical form, the common case for links on a
//!   well-behaved site: the parser's work plus a pass over the path and query that changes
//!   nothing.
//! * `messy`: spellings that exercise every rule (case, IDN, ports, dot segments, escapes,
//!   session ids, query order).
//! * `relative`: links resolved against a page, as link extraction produces them.
//! * `rejected`: other schemes and unparsable input, and an over-long input refused before
//!   parsing.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use frontier::Canonicalizer;

const CANONICAL: &[&str] = &[
    "https://example.com/",
    "https://example.com/docs/guide/intro.html",
    "https://example.com/search?page=2&q=bloom+filter",
    "https://www.example.org/wiki/Uniform_Resource_Locator",
    "http://example.net:8080/api/v1/items?id=42&sort=asc",
    "https://xn--bcher-kva.example/katalog/neu",
    "https://example.com/a%2Fb/%C3%BC?x=%26",
    "https://cdn.example.com/static/css/site.min.css?v=3",
];

const MESSY: &[&str] = &[
    "HTTP://Example.COM:80",
    "https://Bücher.example.:443/katalog/./neu/../alt#top",
    "http://example.com/%7euser/a%2fb%c3%bc?b=2&a=1&a=0",
    "http://example.com/shop;jsessionid=0A1B2C3D/cart.jsp?PHPSESSID=9f86&item=7",
    "http://example.com/a|b c?q=100%&sid=123&z=&y",
    "http://[0:0:0:0:0:0:0:1]:8080/x/../y?ASPSESSIONIDQQGGQGPC=ABC&k=v",
    "https://example.com/p?utm_source=feed&utm_medium=rss&id=9&fbclid=x",
    "http://0x7f.1/a/b/c/d/e/../../../f?&&x=1&",
];

const RELATIVE: &[&str] = &[
    "../a",
    "next.html",
    "/root/index.html",
    "?page=3",
    "#comments",
    "//other.example/x",
    "https://elsewhere.example/p?b=1&a=2",
    "  images/logo.png\n",
];

const REJECTED: &[&str] = &[
    "mailto:someone@example.com",
    "javascript:void(0)",
    "data:image/png;base64,iVBORw0KGgo=",
    "http://",
    "not a url",
    "tel:+15555550100",
];

fn absolute(c: &mut Criterion) {
    let canon = Canonicalizer::new();
    for (name, urls) in [
        ("canonical", CANONICAL),
        ("messy", MESSY),
        ("rejected", REJECTED),
    ] {
        let mut group = c.benchmark_group(name);
        group.throughput(Throughput::Elements(urls.len() as u64));
        group.bench_function("canonicalize", |b| {
            b.iter(|| {
                for url in urls {
                    let _ = black_box(canon.canonicalize(black_box(url)));
                }
            })
        });
        group.finish();
    }
}

fn relative(c: &mut Criterion) {
    let canon = Canonicalizer::new();
    let base = canon
        .canonicalize("https://example.com/docs/guide/intro.html?lang=en")
        .expect("a valid base");
    let mut group = c.benchmark_group("relative");
    group.throughput(Throughput::Elements(RELATIVE.len() as u64));
    group.bench_function("canonicalize_relative", |b| {
        b.iter(|| {
            for href in RELATIVE {
                let _ = black_box(canon.canonicalize_relative(base.as_url(), black_box(href)));
            }
        })
    });
    group.finish();
}

fn too_long(c: &mut Criterion) {
    let canon = Canonicalizer::new();
    let huge = format!("http://example.com/{}", "a".repeat(10 << 20));
    c.bench_function("rejected/too_long_10MB", |b| {
        b.iter(|| black_box(canon.canonicalize(black_box(&huge))))
    });
}

criterion_group!(benches, absolute, relative, too_long);
criterion_main!(benches);
