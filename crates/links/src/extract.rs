//! The entry point: a fetched page in, its links and metadata out.

use crate::charset::decode;
use crate::page::{Extracted, Options, Page};
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
