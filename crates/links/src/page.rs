//! What extraction takes and gives: a fetched page, the options, the page's links.

use url::Url;

/// A fetched HTML page, as [`extract`](crate::extract()) takes it.
///
/// ```
/// let url = url::Url::parse("https://example.com/")?;
/// let page = links::Page { url: &url, body: b"<a href=/x>", content_type: None };
/// assert_eq!(links::extract(&page, &links::Options::default()).links, ["/x"]);
/// # Ok::<(), url::ParseError>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Page<'a> {
    /// The URL the body was fetched from (after redirects).
    pub url: &'a Url,
    /// The (decompressed) body, in whatever encoding the server sent.
    pub body: &'a [u8],
    /// The Content-Type header, if any; only its `charset=` parameter is read.
    pub content_type: Option<&'a str>,
}

/// What [`extract`](crate::extract()) keeps and follows.
///
/// ```
/// let options = links::Options { max_links: 100, ..links::Options::default() };
/// assert!(!options.follow_nofollow);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// At most this many links are returned per page: the first ones, in document order;
    /// the rest are counted in [`Extracted::over_cap`]. Default 10,000.
    pub max_links: usize,
    /// Return links marked `rel=nofollow` and the links of pages marked
    /// `<meta name=robots content=nofollow>` too. Default false.
    pub follow_nofollow: bool,
    /// Return the `src` of `<frame>` and `<iframe>` as links (as wget2 and Heritrix do: a
    /// book's table of contents, a site's navigation live in them). Default true.
    pub follow_frames: bool,
    /// Return what the page needs to render as [`Extracted::requisites`]: images, style
    /// sheets, scripts, media, icons (the rules are in the crate documentation). Default
    /// false: a tokenizer asked for links only does no more work than that.
    pub requisites: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            max_links: 10_000,
            follow_nofollow: false,
            follow_frames: true,
            requisites: false,
        }
    }
}

/// The links and metadata of one page.
///
/// ```
/// let url = url::Url::parse("https://example.com/a/")?;
/// let page = links::Page {
///     url: &url,
///     body: b"<base href=/b/><a href=c rel=nofollow><a href=d>",
///     content_type: None,
/// };
/// let out = links::extract(&page, &links::Options::default());
/// assert_eq!(out.base.join(&out.links[0])?.as_str(), "https://example.com/b/d");
/// assert_eq!(out.nofollow, 1);
/// # Ok::<(), url::ParseError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Extracted {
    /// The URL to resolve [`links`](Self::links) against: the page URL, or the first
    /// `<base href>` resolved against it.
    pub base: Url,
    /// The hrefs to follow, as written in the page (character references decoded, trimmed),
    /// in document order; relative ones are to be resolved against [`base`](Self::base).
    pub links: Vec<String>,
    /// With [`Options::requisites`], the URLs the page needs to render, as written (trimmed,
    /// escapes decoded), each once, in document order; relative ones are to be resolved
    /// against [`base`](Self::base) (for a style sheet, [`stylesheet`](crate::stylesheet()),
    /// against its own URL). Empty otherwise.
    pub requisites: Vec<String>,
    /// The first `<link rel=canonical href>`, resolved against [`base`](Self::base).
    pub canonical: Option<String>,
    /// Links dropped because the page had more than [`Options::max_links`], and requisites
    /// dropped because it needed more than that many.
    pub over_cap: usize,
    /// Of the links found, those from `<frame src>` and `<iframe src>` (followed only with
    /// [`Options::follow_frames`]; otherwise counted here and not returned).
    pub frames: usize,
    /// Links not returned because of `rel=nofollow` or a robots `nofollow` meta tag.
    pub nofollow: usize,
    /// The page has `<meta name=robots>` with `nofollow` or `none`.
    pub meta_nofollow: bool,
    /// The name of the encoding the body was decoded with, e.g. `"UTF-8"`, `"windows-1252"`.
    pub encoding: &'static str,
}
