//! Fuzz and hostile-input tests: whatever the bytes, no panic, and the cap is kept.

use links::Options;

use crate::util::{PAGE, Rng, run_with};

/// Cases for the `fuzz_` tests: `FUZZ_CASES` when set (to fuzz longer, see the workspace's
/// docs/testing.md), else `default`.
fn fuzz_cases(default: u32) -> u32 {
    std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

#[test]
fn extract_never_panics_on_random_bytes() {
    // Fragments that steer the tokenizer into its states, glued with random bytes.
    const PIECES: &[&[u8]] = &[
        b"<",
        b">",
        b"</",
        b"/>",
        b"<a href=",
        b"<area href='",
        b"\"",
        b"'",
        b"=",
        b" ",
        b"&",
        b"&amp",
        b"&#x",
        b"&#",
        b";",
        b"<!--",
        b"-->",
        b"--!>",
        b"<!",
        b"<?",
        b"<![CDATA[",
        b"]]>",
        b"<script>",
        b"</script>",
        b"<!--<script>",
        b"<style>",
        b"</style",
        b"<title>",
        b"<textarea>",
        b"<plaintext>",
        b"<svg>",
        b"</svg>",
        b"<math><mi>",
        b"<foreignObject>",
        b"<template>",
        b"</template>",
        b"<p>",
        b"</p>",
        b"<base href=",
        b"<meta charset=",
        b"<meta name=robots content=",
        b"nofollow",
        b"<link rel=canonical href=",
        b"rel=nofollow",
        b"#",
        b"\0",
        b"\r",
        b"\xEF\xBB\xBF",
        b"\xFF\xFE",
        b"\xC3",
        b"\xE9",
        b"\x82\xA0",
        b"http://[",
        b"<img srcset=",
        b"<style>",
        b"</style>",
        b" style=",
        b"url(",
        b"@import ",
        b"\\",
        b"/*",
        b"*/",
        b"\"",
        b")",
        b",",
    ];
    const CHARSETS: &[Option<&str>] = &[
        None,
        Some("text/html"),
        Some("text/html; charset=windows-1252"),
        Some("text/html; charset=shift_jis"),
        Some("text/html; charset=utf-16be"),
        Some("text/html; charset=iso-2022-jp"),
        Some("text/html; charset=\""),
    ];
    let mut rng = Rng(0x0123_4567_89AB_CDEF);
    let mut body = Vec::new();
    for round in 0..3_000 {
        body.clear();
        let len = rng.below(if round % 100 == 0 { 20_000 } else { 400 });
        while body.len() < len {
            if rng.below(3) == 0 {
                body.push(rng.next() as u8);
            } else {
                body.extend_from_slice(PIECES[rng.below(PIECES.len())]);
            }
        }
        let options = Options {
            max_links: rng.below(8),
            follow_nofollow: rng.below(2) == 0,
            follow_frames: rng.below(2) == 0,
            requisites: rng.below(2) == 0,
        };
        let content_type = CHARSETS[rng.below(CHARSETS.len())];
        let out = run_with(&body, content_type, &options);
        assert!(out.links.len() <= options.max_links);
        assert!(out.requisites.len() <= options.max_links);
        assert!(options.requisites || out.requisites.is_empty());
        let url = url::Url::parse(PAGE).unwrap();
        let sheet = links::Page {
            url: &url,
            body: &body,
            content_type,
        };
        assert!(links::stylesheet(&sheet, &options).requisites.len() <= options.max_links);
        assert!(out.links.iter().all(|l| !l.is_empty()));
        assert!(!out.meta_nofollow || options.follow_nofollow || out.links.is_empty());
    }
}

/// Regression: this test used to assert only `links.len() <= n + 1`, which any cap (or
/// none) passes. Each hostile page now gets exactly the links it has, and the cap keeps
/// exactly the first `max_links` of them and counts the rest. Speed is the bench's job
/// (`benches/extract.rs` and `benches/compare.rs` time the hostile pages); here they must
/// end, without a panic, with the right answer.
#[test]
fn extract_keeps_the_cap_exactly_on_hostile_input() {
    let n = 100_000;
    let options = Options::default();
    let cap = options.max_links;
    assert!(n > cap);
    let numbered: String = (0..n).map(|i| format!("<div><a href={i}>")).collect();
    let entities = "&amp;&#x41;&notit;&".repeat(n);
    let hostile: [(String, Vec<String>); 10] = [
        // One tag with many (duplicate) attributes: the first href wins.
        (
            format!("<a {}href=x>", "href=y rel=z ".repeat(n)),
            vec!["y".into()],
        ),
        // Deep nesting with a link at every level, then one more: n + 1 links.
        (
            format!("{numbered}<a href=x>"),
            (0..n).map(|i| i.to_string()).chain(["x".into()]).collect(),
        ),
        // Deep SVG nesting and unmatched end tags: the <a> is still inside the SVG.
        (
            format!("<svg>{}{}<a href=x>", "<g>".repeat(n), "</q>".repeat(n)),
            vec!["x".into()],
        ),
        // Unterminated constructs: everything after them is text.
        (format!("<!--{}", "-".repeat(n)), vec![]),
        (format!("<script>{}", "<!--<script>-<".repeat(n)), vec![]),
        (format!("<title>{}", "</titl".repeat(n)), vec![]),
        (format!("<a href='{}", "x".repeat(n)), vec![]),
        ("<".repeat(n), vec![]),
        ("&".repeat(n), vec![]),
        // A long href full of character references, decoded.
        (
            format!("<a href=\"{entities}\">"),
            vec!["&A&notit;&".repeat(n)],
        ),
    ];
    for (html, all) in &hostile {
        let out = run_with(html.as_bytes(), None, &options);
        let kept = all.len().min(cap);
        assert_eq!(out.links, all[..kept], "{}", &html[..40.min(html.len())]);
        assert_eq!(out.over_cap, all.len() - kept);
        assert_eq!(out.nofollow, 0);
    }
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config::with_cases(fuzz_cases(256)))]

    /// Markup-shaped bytes (tag and attribute fragments glued with arbitrary bytes) never
    /// panic the extractor, whatever the declared charset.
    #[test]
    fn fuzz_extractor_never_panics(
        parts in proptest::collection::vec(
            proptest::prop_oneof![
                proptest::strategy::Strategy::prop_map(
                    proptest::prelude::any::<u8>(),
                    |b| vec![b],
                ),
                proptest::strategy::Strategy::prop_map(
                    proptest::sample::select(vec![
                        &b"<a href="[..], b"<base href=", b"<meta charset=", b"<!--", b"-->",
                        b"<script>", b"</script>", b"<svg>", b"<math>", b"<template>", b"'",
                        b"\"", b"&#x", b"&amp", b">", b"/>", b"<", b"rel=nofollow",
                        b"\xEF\xBB\xBF",
                    ]),
                    <[u8]>::to_vec,
                ),
            ],
            0..200,
        ),
        charset in proptest::sample::select(vec![None, Some("text/html; charset=shift_jis"), Some("text/html; charset=windows-1252")]),
    ) {
        let body: Vec<u8> = parts.concat();
        let _ = run_with(&body, charset, &Options::default());
    }
}
