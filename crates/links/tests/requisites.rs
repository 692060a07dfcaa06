//! The requisite rules: agreement with a browser-grade parser (html5ever's tree builder,
//! through scraper) on which elements and attributes a page has, on generated soup where
//! comments, scripts, `<template>`, `<textarea>` and SVG hide or change them; and the
//! rules one by one.

use std::collections::BTreeSet;

use links::Options;

use crate::util::{Rng, parse_as_a_browser, run_with};

/// The URLs of the soup's requisites: some relative, one with a character reference, one
/// with spaces around it.
const URLS: [&str; 5] = [
    "a.png",
    "/b.png",
    "../c.png?x=1&amp;y=2",
    " d.png ",
    "&#x65;.png",
];

/// Tag soup of requisites in every form the rules read, mixed with markup that hides
/// elements from a browser or puts them outside the HTML namespace.
fn soup(seed: u64) -> String {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut html = String::new();
    for _ in 0..30 {
        let u = URLS[rng.below(URLS.len())];
        let t = u.trim();
        let piece = match rng.below(24) {
            0 => format!("<img src=\"{u}\" alt=x>"),
            1 => format!("<img srcset=\"{t} 1x, {t}-2x 2x\">"),
            2 => format!("<picture><source srcset=\"{t}-pic\"><img src='{u}'></picture>"),
            3 => format!("<script src=\"{u}\"></script>"),
            4 => format!("<video src=\"{u}\" poster=\"{t}-poster\"></video>"),
            5 => format!("<audio><source src=\"{u}\"><track src=\"{t}-track\"></audio>"),
            6 => format!("<embed src=\"{u}\">"),
            7 => format!("<object data=\"{u}\"></object>"),
            8 => format!("<input type=IMAGE src=\"{u}\"><input type=text src=not-image>"),
            9 => format!("<link rel=\"Stylesheet\" href=\"{u}\"><link rel=alternate href=no>"),
            10 => format!("<div style=\"background: url('{u}')\">"),
            11 => format!("<table background=\"{u}\"><tr><td>x</td></tr></table>"),
            12 => format!("<style>p {{ background: url({t}-style) }}</style>"),
            13 => "<!-- <img src=comment> -->".to_owned(),
            14 => "<textarea><img src=textarea></textarea>".to_owned(),
            15 => "<template><img src=tpl><style>x{background:url(tpl-style)}</style></template>"
                .to_owned(),
            16 => "<svg><image href=svg-image /><style>x{background:url(svg-style)}</style></svg>"
                .to_owned(),
            17 => "<script>document.write('<img src=in-script>')</script>".to_owned(),
            18 => format!("<noscript><img src=\"{t}-noscript\"></noscript>"),
            19 => "<img src><img src=\"data:image/png;base64,AAAA\">".to_owned(),
            20 => format!("<image src=\"{t}-image\">"),
            21 => format!("<link rel=\"shortcut icon\" href=\"{t}-icon\">"),
            22 => format!("<math><mi><img src=\"{t}-math\"></mi></math>"),
            _ => "<p style=\"color: red\">text</p>".to_owned(),
        };
        html.push_str(&piece);
    }
    html
}

/// The `url()`s of the soup's simple CSS: each `url(` to its `)`, quotes and spaces
/// trimmed. Enough for the soup, whose CSS is the same few forms; the crate's own CSS reading
/// is tested on its own.
fn css_urls(css: &str, out: &mut BTreeSet<String>) {
    for (at, _) in css.match_indices("url(") {
        let rest = &css[at + 4..];
        let end = rest.find(')').unwrap_or(rest.len());
        let url = rest[..end].trim_matches(|c: char| c <= ' ' || c == '\'' || c == '"');
        out.insert(url.to_owned());
    }
}

/// What a browser-grade parser's document (scripting disabled, as the crawler reads pages)
/// holds of the requisite rules: the elements of the HTML namespace outside `<template>`
/// contents, their attributes, and the text of their `<style>` elements.
fn oracle(html: &str) -> BTreeSet<String> {
    let doc = parse_as_a_browser(html);
    let mut out = BTreeSet::new();
    for node in doc.tree.nodes() {
        let Some(e) = scraper::ElementRef::wrap(node) else {
            continue;
        };
        if e.ancestors().any(|n| n.value().is_fragment()) {
            continue;
        }
        let el = e.value();
        let attr = |name: &str| el.attr(name).map(|v| v.trim_matches(|c: char| c <= ' '));
        if let Some(style) = el.attr("style") {
            css_urls(style, &mut out);
        }
        if let Some(background) = attr("background") {
            out.insert(background.to_owned());
        }
        if el.name.ns != html5ever::ns!(html) {
            continue;
        }
        let mut urls = Vec::new();
        match el.name() {
            "img" | "source" => {
                urls.extend(attr("src"));
                for candidate in attr("srcset").unwrap_or("").split(',') {
                    urls.extend(candidate.split_whitespace().next());
                }
            }
            "script" | "track" | "embed" => urls.extend(attr("src")),
            "video" | "audio" => urls.extend(attr("src").into_iter().chain(attr("poster"))),
            "object" => urls.extend(attr("data")),
            "input" if attr("type").is_some_and(|t| t.eq_ignore_ascii_case("image")) => {
                urls.extend(attr("src"));
            }
            "link" => {
                let rel = attr("rel").unwrap_or("").to_ascii_lowercase();
                if rel
                    .split_whitespace()
                    .any(|t| ["stylesheet", "icon"].contains(&t))
                {
                    urls.extend(attr("href"));
                }
            }
            "style" => css_urls(&e.text().collect::<String>(), &mut out),
            _ => {}
        }
        out.extend(urls.into_iter().map(str::to_owned));
    }
    out.retain(|url| !url.is_empty() && !url.starts_with("data:"));
    out
}

#[test]
fn finds_the_requisites_a_browser_grade_parser_finds() {
    let options = Options {
        requisites: true,
        ..Options::default()
    };
    for seed in 0..1_000 {
        let html = soup(seed);
        let ours: BTreeSet<String> = run_with(html.as_bytes(), None, &options)
            .requisites
            .into_iter()
            .collect();
        assert_eq!(ours, oracle(&html), "seed {seed}: {html}");
    }
}

#[test]
fn requisites_are_found_only_when_asked_for_and_links_are_the_same_either_way() {
    let html = soup(7);
    let without = run_with(html.as_bytes(), None, &Options::default());
    assert!(without.requisites.is_empty());
    let with = run_with(
        html.as_bytes(),
        None,
        &Options {
            requisites: true,
            ..Options::default()
        },
    );
    assert!(!with.requisites.is_empty());
    assert_eq!(with.links, without.links);
}

#[test]
fn each_requisite_once_in_document_order_under_the_cap_and_past_nofollow() {
    let html = "<meta name=robots content=nofollow>\
                <img src=b.png><img src=a.png><img src=b.png><a href=/page>\
                <style>@import 'print.css'; p { background: url(#gradient) }</style>\
                <img src=c.png><img src=d.png>";
    let options = Options {
        requisites: true,
        max_links: 3,
        ..Options::default()
    };
    let out = run_with(html.as_bytes(), None, &options);
    assert_eq!(out.requisites, ["b.png", "a.png", "print.css"]);
    assert_eq!(out.over_cap, 2);
    assert!(out.links.is_empty() && out.meta_nofollow);
    // The README's example: an element's main URL, then its srcset.
    let html = "<link rel=stylesheet href=/s.css><img src=a.png srcset='a-2x.png 2x'>";
    let options = Options {
        requisites: true,
        ..Options::default()
    };
    let out = run_with(html.as_bytes(), None, &options);
    assert_eq!(out.requisites, ["/s.css", "a.png", "a-2x.png"]);
}

#[test]
fn a_stylesheet_is_decoded_as_css_is() {
    let url = url::Url::parse("https://example.com/site.css").unwrap();
    let sheet = |body: &[u8], content_type| {
        let page = links::Page {
            url: &url,
            body,
            content_type,
        };
        let out = links::stylesheet(&page, &Options::default());
        (out.requisites, out.encoding)
    };
    let latin = b"@charset \"windows-1252\"; p { background: url(caf\xE9.png) }";
    assert_eq!(
        sheet(latin, None),
        (vec!["caf\u{e9}.png".to_owned()], "windows-1252")
    );
    let (_, encoding) = sheet(latin, Some("text/css; charset=utf-8"));
    assert_eq!(encoding, "UTF-8");
    let utf16 = b"@charset \"utf-16\"; p{}";
    assert_eq!(sheet(utf16, None).1, "UTF-8");
}
