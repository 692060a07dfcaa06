//! Extracting from a string, as the tests do.

use links::{Extracted, Options, Page, extract};
use url::Url;

/// The URL the test pages are fetched from.
pub(crate) const PAGE: &str = "https://example.com/dir/page.html";

pub(crate) fn run_with(body: &[u8], content_type: Option<&str>, options: &Options) -> Extracted {
    let url = Url::parse(PAGE).unwrap();
    let page = Page {
        url: &url,
        body,
        content_type,
    };
    extract(&page, options)
}

pub(crate) fn run(html: &str) -> Extracted {
    run_with(html.as_bytes(), None, &Options::default())
}

pub(crate) fn links(html: &str) -> Vec<String> {
    run(html).links
}

/// The document a browser-grade parser (html5ever's tree builder, into scraper's tree)
/// builds with scripting disabled, as the crawler reads pages: the tests' oracle.
pub(crate) fn parse_as_a_browser(html: &str) -> scraper::Html {
    use html5ever::tendril::TendrilSink;

    let opts = html5ever::ParseOpts {
        tree_builder: html5ever::tree_builder::TreeBuilderOpts {
            scripting_enabled: false,
            ..Default::default()
        },
        ..Default::default()
    };
    html5ever::parse_document(
        scraper::HtmlTreeSink::new(scraper::Html::new_document()),
        opts,
    )
    .one(html)
}

/// xorshift64*: a fixed-seed generator for the property tests.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}
