//! The tokenizer question, measured: the crate's [`links::extract`] against the same link
//! rules driven by html5gum and by lol_html (`tests/adapters.rs`), on (a) the typical 8.5 KB
//! page, (b) the 500 KB page with 10,240 links, (c) the hostile pages at doubling sizes.
//! (At commit d2dc2cf it also runs html5gum steered by the crate's tree simulation; the
//! crate's README has the numbers of all five, and why the hand-written tokenizer stays.)
//!
//! `cargo bench -p politecrawl-links --bench compare` (`-- quick` for fewer rounds). The contenders run
//! interleaved (A B C A B C ...) in one process, so that load from other processes on the
//! machine falls on all of them alike; the medians and, above all, their ratios are the
//! result. Not criterion: criterion runs one function at a time.

use std::hint::black_box;
use std::time::{Duration, Instant};

use links::{Extracted, Options, Page};
use url::Url;

#[path = "../tests/adapters.rs"]
mod adapters;
mod pages;

type Extract = fn(&Page<'_>, &Options) -> Extracted;

/// The contenders, the crate's own first: every ratio is to it.
const CONTENDERS: [(&str, Extract); 4] = [
    ("hand-written", links::extract),
    ("html5gum 0.9", adapters::extract_html5gum),
    (
        "html5gum 0.9, callback emitter",
        adapters::extract_html5gum_callback,
    ),
    ("lol_html 3", adapters::extract_lol_html),
];

/// The median of `rounds` samples of each contender's time per page, the contenders
/// interleaved within each round; `iters[i]` extractions per sample of contender `i`.
fn interleaved(
    page: &Page<'_>,
    options: &Options,
    contenders: &[(&str, Extract)],
    iters: &[u32],
    rounds: usize,
) -> Vec<Duration> {
    let mut samples = vec![Vec::with_capacity(rounds); contenders.len()];
    for _ in 0..rounds {
        for ((_, extract), (samples, &iters)) in
            contenders.iter().zip(samples.iter_mut().zip(iters))
        {
            let start = Instant::now();
            for _ in 0..iters {
                black_box(extract(black_box(page), options));
            }
            samples.push(start.elapsed() / iters);
        }
    }
    samples
        .into_iter()
        .map(|mut s| {
            s.sort();
            s[s.len() / 2]
        })
        .collect()
}

/// Extractions per sample so that one sample takes about `target`.
fn calibrate(page: &Page<'_>, options: &Options, extract: Extract, target: Duration) -> u32 {
    let start = Instant::now();
    black_box(extract(page, options));
    let once = start.elapsed().max(Duration::from_nanos(100));
    (target.as_nanos() / once.as_nanos()).clamp(1, 100_000) as u32
}

fn micros(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

fn millis(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    let quick = std::env::args().any(|a| a == "quick");
    let rounds = if quick { 5 } else { 21 };
    let url = Url::parse("https://example.com/articles/crawler-notes").expect("valid URL");
    let options = Options::default();

    println!("(a) and (b): median time per page over {rounds} interleaved rounds");
    println!("| page | {} |", CONTENDERS.map(|c| c.0).join(" | "));
    println!("|---|{}", "---|".repeat(CONTENDERS.len()));
    let typical = pages::typical_page();
    let big = pages::big_page();
    for (name, body, content_type, unit) in [
        (
            "(a) typical, 8.5 KB, 30 links",
            &typical,
            Some("text/html; charset=utf-8"),
            micros as fn(Duration) -> String,
        ),
        ("(b) big, 500 KB, 10,240 links", &big, None, millis),
    ] {
        let page = Page {
            url: &url,
            body: body.as_bytes(),
            content_type,
        };
        // Each contender finds the same links on these pages, or the race is not fair.
        let expected = links::extract(&page, &options);
        for (contender, extract) in CONTENDERS {
            assert_eq!(extract(&page, &options), expected, "{contender} on {name}");
        }
        let iters: Vec<u32> = CONTENDERS
            .iter()
            .map(|c| calibrate(&page, &options, c.1, Duration::from_millis(20)))
            .collect();
        let medians = interleaved(&page, &options, &CONTENDERS, &iters, rounds);
        let base = medians[0].as_secs_f64();
        let cells: Vec<String> = medians
            .iter()
            .map(|m| format!("{} ({:.1}x)", unit(*m), m.as_secs_f64() / base))
            .collect();
        println!("| {name} | {} |", cells.join(" | "));
    }

    // (c): each hostile page at n and 2n. Linear cost doubles with n; quadratic cost
    // quadruples. A contender that takes longer than `BUDGET` once is not run at the next
    // size.
    const BUDGET: Duration = Duration::from_secs(3);
    let sizes: &[usize] = if quick {
        &[25_000, 50_000]
    } else {
        &[25_000, 50_000, 100_000, 200_000]
    };
    let hostile_rounds = if quick { 3 } else { 5 };
    println!();
    println!(
        "(c) hostile pages: median of {hostile_rounds} interleaved runs at n, and t(n) / t(n/2) \
         (2 is linear, 4 quadratic)"
    );
    println!("| page | n | {} |", CONTENDERS.map(|c| c.0).join(" | "));
    println!("|---|---|{}", "---|".repeat(CONTENDERS.len()));
    let kinds = pages::hostile_pages(1).len();
    for kind in 0..kinds {
        let mut previous: Vec<Option<Duration>> = vec![None; CONTENDERS.len()];
        for &n in sizes {
            let (name, body) = pages::hostile_pages(n).swap_remove(kind);
            let page = Page {
                url: &url,
                body: body.as_bytes(),
                content_type: None,
            };
            let running: Vec<(usize, (&str, Extract))> = CONTENDERS
                .iter()
                .copied()
                .enumerate()
                .filter(|(i, _)| previous[*i].is_none_or(|t| t < BUDGET) || n == sizes[0])
                .collect();
            let contenders: Vec<(&str, Extract)> = running.iter().map(|r| r.1).collect();
            let iters = vec![1; contenders.len()];
            let medians = interleaved(&page, &options, &contenders, &iters, hostile_rounds);
            let mut cells = vec!["(skipped)".to_owned(); CONTENDERS.len()];
            for ((i, _), median) in running.iter().zip(medians) {
                cells[*i] = match previous[*i] {
                    Some(p) if n > sizes[0] => format!(
                        "{} ({:.1})",
                        millis(median),
                        median.as_secs_f64() / p.as_secs_f64()
                    ),
                    _ => millis(median),
                };
                previous[*i] = Some(median);
            }
            println!("| {name} | {n} | {} |", cells.join(" | "));
        }
    }
}
