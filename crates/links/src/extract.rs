//! The entry point: a fetched page in, its links and metadata out.

use crate::charset::{decode, decode_stylesheet};
use crate::page::{Extracted, Options, Page};
use crate::requisites::Requisites;
use crate::rules::Collector;
use crate::tokenizer::tokenize;

/// Extracts the links, base URL, canonical URL and robots directives of an HTML page.
///
/// [`decode`](crate::decode), then [`tokenize`](crate::tokenize) into a
/// [`Collector`](crate::Collector). Never panics, whatever the bytes, and costs time linear
/// in the body's length. The rules are in the crate documentation.
///
/// ```
/// let url = url::Url::parse("https://example.com/")?;
/// let page = links::Page {
///     url: &url,
///     body: b"<link rel=canonical href=/home><a href=/next>",
///     content_type: Some("text/html; charset=utf-8"),
/// };
/// let out = links::extract(&page, &links::Options::default());
/// assert_eq!(out.links, ["/next"]);
/// assert_eq!(out.canonical.as_deref(), Some("https://example.com/home"));
/// # Ok::<(), url::ParseError>(())
/// ```
pub fn extract(page: &Page<'_>, options: &Options) -> Extracted {
    let (text, encoding) = decode(page);
    let mut collector = Collector::new(options);
    tokenize(&text, &mut collector);
    collector.finish(page.url, encoding)
}

/// The URLs a style sheet needs (its `url()`s and `@import`s), as
/// [`Extracted::requisites`], relative ones to be resolved against the sheet's own URL
/// ([`Extracted::base`]); links, canonical and robots fields are empty. Decoded as CSS is: a
/// byte order mark, else the Content-Type's `charset=`, else an `@charset` rule, else UTF-8.
/// At most [`Options::max_links`] URLs; the rest are counted in [`Extracted::over_cap`].
/// Never panics, and costs time linear in the body's length.
///
/// ```
/// let url = url::Url::parse("https://cdn.example.com/css/site.css")?;
/// let page = links::Page {
///     url: &url,
///     body: b"@import 'print.css'; body { background: url(../img/bg.png) } /* url(no.png) */",
///     content_type: Some("text/css"),
/// };
/// let out = links::stylesheet(&page, &links::Options::default());
/// assert_eq!(out.requisites, ["print.css", "../img/bg.png"]);
/// assert_eq!(out.base.join(&out.requisites[1])?.as_str(), "https://cdn.example.com/img/bg.png");
/// # Ok::<(), url::ParseError>(())
/// ```
pub fn stylesheet(page: &Page<'_>, options: &Options) -> Extracted {
    let (text, encoding) = decode_stylesheet(page);
    let mut requisites = Requisites::new(options.max_links);
    requisites.style_sheet(&text);
    Extracted {
        base: page.url.clone(),
        links: Vec::new(),
        requisites: requisites.found,
        canonical: None,
        over_cap: requisites.over_cap,
        frames: 0,
        nofollow: 0,
        meta_nofollow: false,
        encoding,
    }
}
