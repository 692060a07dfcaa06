//! A page's links through the frontier, per link, as a documentation page has them. Run with
//! `cargo bench -p politecrawl-frontier --bench page_links`.
//!
//! The page is shaped after a rustdoc page of the toolchain's docs (`benches/docs.sh`, 46
//! links a page): 50 links, of which 29 repeat a link of the same page (the same target,
//! often with another fragment), relative paths with `..` and `.`, two absolute links to
//! other hosts. Every link was seen before, as on a real site (1.27 of 1.47 million links on
//! the docs).
//!
//! * `one_by_one`: each link resolved by the URL parser, canonicalized and tested on its
//!   own ([`Frontier::push_link_on`], the path before `push_links_on`);
//! * `page_at_once`: [`Frontier::push_links_on`]: repeats counted from their first
//!   occurrence, plain links judged on their text in a reused buffer.

use std::hint::black_box;
use std::time::Instant;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use frontier::{Canonicalizer, Frontier, ScopeRules, Url};

/// The page's hrefs as written.
fn hrefs() -> Vec<String> {
    let mut hrefs = vec![
        "../../std/index.html".to_owned(),
        "../index.html".to_owned(),
        "index.html".to_owned(),
        "struct.Vec.html".to_owned(),
        "https://doc.rust-lang.org/nightly/std/vec/struct.Vec.html".to_owned(),
        "../../src/alloc/vec/mod.rs.html#400".to_owned(),
        "../../settings.html".to_owned(),
        "../../help.html".to_owned(),
    ];
    for name in [
        "Clone",
        "Debug",
        "Default",
        "Drop",
        "Eq",
        "Hash",
        "Ord",
        "PartialEq",
        "Send",
    ] {
        let module = name.to_lowercase();
        hrefs.push(format!("../../core/{module}/trait.{name}.html"));
        hrefs.push(format!(
            "../../core/{module}/trait.{name}.html#tymethod.{module}"
        ));
        hrefs.push(format!(
            "../../core/{module}/trait.{name}.html#method.{module}_from"
        ));
    }
    for method in ["push", "pop", "len", "insert", "remove", "truncate"] {
        hrefs.push(format!("struct.Vec.html#method.{method}"));
        hrefs.push(format!("../primitive.slice.html#method.{method}"));
    }
    hrefs.push("https://github.com/rust-lang/rust".to_owned());
    hrefs.push("./fn.from_elem.html".to_owned());
    hrefs.push("../../alloc/alloc/struct.Global.html".to_owned());
    hrefs
}

fn page_links(c: &mut Criterion) {
    let canon = Canonicalizer::new();
    let seed = canon
        .canonicalize("http://127.0.0.1:8080/")
        .expect("valid seed");
    let scope = ScopeRules::builder()
        .seed(&seed)
        .build()
        .expect("valid scope");
    let frontier = Frontier::builder()
        .scope(scope)
        .build()
        .expect("a frontier");
    let page = Url::parse("http://127.0.0.1:8080/std/vec/struct.Vec.html").expect("a URL");
    let hrefs = hrefs();
    let now = Instant::now();
    // Every link seen before, as most are on a real site.
    frontier
        .push_links_on(&page, &page, &hrefs, 1, now)
        .expect("room");

    let mut group = c.benchmark_group("page_links");
    group.throughput(Throughput::Elements(hrefs.len() as u64));
    group.bench_function("one_by_one", |b| {
        b.iter(|| {
            for href in &hrefs {
                black_box(
                    frontier
                        .push_link_on(&page, &page, href, 1, now)
                        .expect("room"),
                );
            }
        })
    });
    group.bench_function("page_at_once", |b| {
        b.iter(|| {
            black_box(
                frontier
                    .push_links_on(&page, &page, &hrefs, 1, now)
                    .expect("room"),
            )
        })
    });
    group.finish();
}

criterion_group!(benches, page_links);
criterion_main!(benches);
