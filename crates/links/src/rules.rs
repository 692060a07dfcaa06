//! The link rules: what to keep of the tags a tokenizer reports. The rules themselves are
//! listed in the crate documentation.

use url::{Position, Url};

use crate::page::{Extracted, Options};
use crate::requisites::Requisites;
use crate::sink::{Element, Sink, Tag, Value};

/// The [`Sink`] that applies the link rules: give it the start tags of a page, then
/// [`finish`](Self::finish) it into the page's [`Extracted`].
///
/// [`extract`](crate::extract) is this collector fed by the crate's own tokenizer; the
/// collector is public so that another tokenizer can feed it.
///
/// ```
/// use links::{Collector, Element, Options, Sink, Tag, Value};
///
/// let url = url::Url::parse("https://example.com/dir/")?;
/// let mut collector = Collector::new(&Options::default());
/// let mut tag = Tag::new(Element::A);
/// tag.href = Some(Value::as_written(" next.html "));
/// collector.start_tag(&tag);
/// let out = collector.finish(&url, "UTF-8");
/// assert_eq!(out.links, ["next.html"]);
/// # Ok::<(), url::ParseError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Collector {
    /// [`Options::max_links`].
    max_links: usize,
    /// [`Options::follow_nofollow`].
    follow_nofollow: bool,
    /// [`Options::follow_frames`].
    follow_frames: bool,
    /// Frame and iframe sources found.
    frames: usize,
    links: Vec<String>,
    over_cap: usize,
    nofollow: usize,
    meta_nofollow: bool,
    /// The `href` of the first `<base>` that has one.
    base_href: Option<String>,
    /// The `href` of the first `<link rel=canonical>` with a non-empty one.
    canonical_href: Option<String>,
    /// The first pure-fragment href and the index in `links` it would have had: kept only if
    /// the base turns out to be another document.
    fragment: Option<(usize, String)>,
    /// With [`Options::requisites`], what the page needs to render.
    requisites: Option<Box<Requisites>>,
}

impl Sink for Collector {
    #[inline]
    fn start_tag(&mut self, tag: &Tag<'_>) {
        if let Some(requisites) = &mut self.requisites {
            requisites.tag(tag);
        }
        match tag.element {
            Element::A | Element::Area => {
                if let Some(href) = tag.href {
                    self.link(&href.get(), tag.rel);
                }
            }
            Element::Frame => {
                if let Some(src) = tag.href
                    && !trim_url(&src.get()).is_empty()
                {
                    self.frames += 1;
                    if self.follow_frames {
                        self.link(&src.get(), None);
                    }
                }
            }
            Element::Base if tag.html && self.base_href.is_none() => {
                if let Some(href) = tag.href {
                    self.base_href = Some(href.get().into_owned());
                }
            }
            Element::Link if tag.html && self.canonical_href.is_none() => {
                if let (Some(href), Some(rel)) = (tag.href, tag.rel)
                    && has_token(&rel.get(), "canonical")
                {
                    let href = href.get();
                    let href = trim_url(&href);
                    if !href.is_empty() {
                        self.canonical_href = Some(href.to_owned());
                    }
                }
            }
            Element::Meta => {
                if let (Some(name), Some(content)) = (tag.name, tag.content)
                    && trim_url(&name.get()).eq_ignore_ascii_case("robots")
                    && content
                        .get()
                        .split(|c: char| c == ',' || c.is_ascii_whitespace())
                        .any(|t| {
                            t.eq_ignore_ascii_case("nofollow") || t.eq_ignore_ascii_case("none")
                        })
                {
                    self.meta_nofollow = true;
                }
            }
            _ => {}
        }
    }

    fn wants_requisites(&self) -> bool {
        self.requisites.is_some()
    }

    fn style_text(&mut self, css: &str) {
        if let Some(requisites) = &mut self.requisites {
            requisites.style_sheet(css);
        }
    }
}

impl Collector {
    /// A collector for one page.
    pub fn new(options: &Options) -> Self {
        Collector {
            max_links: options.max_links,
            follow_nofollow: options.follow_nofollow,
            follow_frames: options.follow_frames,
            frames: 0,
            links: Vec::new(),
            over_cap: 0,
            nofollow: 0,
            meta_nofollow: false,
            base_href: None,
            canonical_href: None,
            fragment: None,
            requisites: options
                .requisites
                .then(|| Box::new(Requisites::new(options.max_links))),
        }
    }

    #[inline]
    fn link(&mut self, href: &str, rel: Option<Value<'_>>) {
        let href = trim_url(href);
        if href.is_empty() {
            return;
        }
        let nofollow = !self.follow_nofollow
            && (self.meta_nofollow || rel.is_some_and(|rel| has_token(&rel.get(), "nofollow")));
        if href.starts_with('#') {
            // The page itself, unless `<base>` names another document (see `finish`).
            if self.fragment.is_none() && !nofollow {
                self.fragment = Some((self.links.len(), href.to_owned()));
            }
        } else if nofollow {
            self.nofollow += 1;
        } else if self.links.len() < self.max_links {
            self.links.push(href.to_owned());
        } else {
            self.over_cap += 1;
        }
    }

    /// The page's links and metadata, given the URL it was fetched from and the name of the
    /// encoding it was decoded with (kept in [`Extracted::encoding`]).
    pub fn finish(mut self, url: &Url, encoding: &'static str) -> Extracted {
        let base = match &self.base_href {
            Some(href) => url.join(href).unwrap_or_else(|_| url.clone()),
            None => url.clone(),
        };
        // A pure fragment names the base's document: keep one if that is not this page.
        if let Some((at, href)) = self.fragment.take()
            && base[..Position::AfterQuery] != url[..Position::AfterQuery]
        {
            if at < self.max_links {
                self.links.insert(at.min(self.links.len()), href);
                if self.links.len() > self.max_links {
                    self.links.pop();
                    self.over_cap += 1;
                }
            } else {
                self.over_cap += 1;
            }
        }
        if self.meta_nofollow && !self.follow_nofollow {
            self.nofollow += self.links.len() + self.over_cap;
            self.links.clear();
            self.over_cap = 0;
        }
        let canonical = self
            .canonical_href
            .and_then(|href| base.join(&href).ok())
            .map(String::from);
        let (requisites, requisites_over_cap) = self
            .requisites
            .map_or((Vec::new(), 0), |r| (r.found, r.over_cap));
        Extracted {
            base,
            links: self.links,
            requisites,
            canonical,
            over_cap: self.over_cap + requisites_over_cap,
            frames: self.frames,
            nofollow: self.nofollow,
            meta_nofollow: self.meta_nofollow,
            encoding,
        }
    }
}

/// Trims what the URL parser strips from both ends of its input: C0 controls and spaces.
#[inline]
fn trim_url(s: &str) -> &str {
    s.trim_matches(|c: char| c <= ' ')
}

/// Whether a whitespace-separated token list (`rel`) has `token`, ASCII case-insensitively.
#[inline]
fn has_token(list: &str, token: &str) -> bool {
    list.split_ascii_whitespace()
        .any(|t| t.eq_ignore_ascii_case(token))
}
