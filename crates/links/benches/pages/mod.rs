//! The benchmark pages, shared by `extract.rs` and `compare.rs`: deterministic, so the same
//! on every run.

use std::fmt::Write as _;

/// A deterministic pseudo-random generator (xorshift64*), so the pages are the same on
/// every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const WORDS: &[&str] = &[
    "crawler",
    "frontier",
    "page",
    "the",
    "of",
    "and",
    "a",
    "to",
    "in",
    "is",
    "link",
    "that",
    "for",
    "it",
    "with",
    "as",
    "was",
    "on",
    "index",
    "robots",
    "politeness",
    "host",
    "queue",
    "fetch",
    "document",
    "parser",
    "token",
    "stream",
    "bloom",
    "filter",
    "memory",
    "budget",
];

fn words(rng: &mut Rng, out: &mut String, n: usize) {
    for i in 0..n {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(WORDS[rng.below(WORDS.len())]);
    }
}

/// The ~8.5 KB article page: 10 relative links and 20 absolute ones.
pub(crate) fn typical_page() -> String {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut s = String::with_capacity(9 * 1024);
    s.push_str(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>Notes on building a polite web crawler</title>\n\
         <link rel=\"stylesheet\" href=\"/static/css/site.css?v=3\">\n\
         <link rel=\"canonical\" href=\"https://example.com/articles/crawler-notes\">\n\
         <link rel=\"icon\" href=\"/favicon.ico\">\n\
         <meta name=\"description\" content=\"How a crawler keeps its frontier small.\">\n\
         <style>body{font-family:sans-serif;margin:0 auto;max-width:42em}\
         nav a{padding:0 .5em}.note{color:#555}</style>\n\
         <script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments)}\
         gtag('js',new Date());if(a<b&&c>d){gtag('config','UA-000000-1')}</script>\n\
         </head>\n<body class=\"article\">\n<header id=\"top\"><div class=\"wrap\">\n",
    );
    // Navigation: 8 absolute links.
    s.push_str("<nav aria-label=\"Main\"><ul>\n");
    for i in 0..8 {
        let _ = writeln!(
            s,
            "<li class=\"nav-item\"><a class=\"nav-link\" href=\"https://example.com/section/{i}/\">Section {i}</a></li>"
        );
    }
    s.push_str("</ul></nav></div></header>\n<main><article>\n<h1>Notes on crawling</h1>\n");
    // Body text with 10 relative child links and 6 absolute links to other hosts.
    let mut relative = 0;
    let mut absolute = 0;
    for p in 0..16 {
        s.push_str("<p class=\"para\">");
        words(&mut rng, &mut s, 32);
        if relative < 10 && p % 3 != 2 {
            let _ = write!(
                s,
                " <a href=\"part-{relative}/index.html\" title=\"Part {relative}\">part {relative}</a> "
            );
            relative += 1;
        } else if absolute < 6 {
            let _ = write!(
                s,
                " <a href=\"https://other{absolute}.example.org/wiki/Page_{absolute}?ref=notes&amp;lang=en\" rel=\"external\">reference</a> "
            );
            absolute += 1;
        }
        words(&mut rng, &mut s, 22);
        s.push_str("</p>\n");
        if p == 7 {
            s.push_str(
                "<figure><img src=\"/img/diagram.png\" alt=\"A diagram of the frontier\" \
                 width=\"640\" height=\"360\" loading=\"lazy\"><figcaption>The frontier.\
                 </figcaption></figure>\n<!-- figure end -->\n",
            );
        }
    }
    assert_eq!((relative, absolute), (10, 6));
    s.push_str("</article></main>\n<footer><div class=\"wrap\"><ul class=\"footer-links\">\n");
    // Footer: 6 absolute links.
    for i in 0..6 {
        let _ = writeln!(
            s,
            "<li><a href=\"https://example.com/about/{i}\" rel=\"noopener\">About {i}</a></li>"
        );
    }
    s.push_str("</ul>\n<p class=\"note\">Copyright &copy; 2026 Example. ");
    words(&mut rng, &mut s, 12);
    s.push_str("</p></div></footer>\n");
    s.push_str(
        "<script src=\"/static/js/app.js\" defer></script>\n\
         <script>document.querySelectorAll('a').forEach(function(a){if(a.href.indexOf('<')<0){}});</script>\n",
    );
    s.push_str("</body>\n</html>\n");
    s
}

/// The ~500 KB page: a directory listing with 10,240 links.
pub(crate) fn big_page() -> String {
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    let mut s = String::with_capacity(520 * 1024);
    s.push_str(
        "<!DOCTYPE html><html><head><meta charset=utf-8><title>Index</title></head><body>\n\
         <h1>Directory</h1>\n<ul class=\"listing\">\n",
    );
    for i in 0..10_240 {
        if i % 2 == 0 {
            let _ = write!(s, "<li><a href=\"item/{i}.html\">{i}</a> ");
        } else {
            let _ = write!(
                s,
                "<li><a href=\"https://m{}.example.net/i/{i}\">{i}</a> ",
                i % 7
            );
        }
        words(&mut rng, &mut s, 1);
        s.push('\n');
    }
    s.push_str("</ul>\n</body></html>\n");
    s
}

/// The hostile pages, each built from a size `n` so that a bench can tell linear from
/// quadratic cost by doubling it: the name, and the page. The first is the one tag with
/// `n` attributes (200,000 in `extract.rs`); the others are the other quadratic bait of the
/// tests (`tests/fuzz.rs`).
pub(crate) fn hostile_pages(n: usize) -> Vec<(&'static str, String)> {
    vec![
        (
            "one_tag_n_attributes",
            format!("<a {}href=x>", "href=y rel=z ".repeat(n)),
        ),
        (
            "nested_div_a",
            format!("{}<a href=x>", "<div><a href=y>".repeat(n)),
        ),
        (
            "nested_svg_then_stray_end_tags",
            format!("<svg>{}{}<a href=x>", "<g>".repeat(n), "</q>".repeat(n)),
        ),
        ("unclosed_comment", format!("<!--{}", "-".repeat(n))),
        (
            "script_escapes",
            format!("<script>{}", "<!--<script>-<".repeat(n)),
        ),
        ("unclosed_title", format!("<title>{}", "</titl".repeat(n))),
        (
            "href_of_entities",
            format!("<a href=\"{}\">", "&amp;&#x41;&notit;&".repeat(n)),
        ),
        ("unclosed_attribute", format!("<a href='{}", "x".repeat(n))),
        ("lt_run", "<".repeat(n)),
        ("amp_run", "&".repeat(n)),
        ("unclosed_tags", "<a href=x <b c=d ".repeat(n)),
    ]
}
