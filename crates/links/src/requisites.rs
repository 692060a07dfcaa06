//! The requisite rules: what a page needs to render, of the tags and style sheets a
//! tokenizer reports. The rules themselves are listed in the crate documentation.

use std::collections::HashSet;

use crate::css;
use crate::sink::{Element, Tag};

/// The `rel` tokens of a `<link>` whose `href` the page needs to render: a style sheet, an
/// icon, something it asks to have loaded early.
const RELS: [&str; 5] = [
    "stylesheet",
    "icon",
    "apple-touch-icon",
    "preload",
    "modulepreload",
];

/// The page requisites found so far on one page: each once, in document order, at most
/// `cap` of them.
#[derive(Debug, Clone)]
pub(crate) struct Requisites {
    pub(crate) found: Vec<String>,
    seen: HashSet<String>,
    cap: usize,
    pub(crate) over_cap: usize,
}

impl Requisites {
    pub(crate) fn new(cap: usize) -> Self {
        Requisites {
            found: Vec::new(),
            seen: HashSet::new(),
            cap,
            over_cap: 0,
        }
    }

    /// What a start tag needs: its element's URLs (HTML elements only), and the `url()`s of
    /// its `style` attribute and its `background`, whatever the element. In the order
    /// written: the main URL, then `srcset`'s or `poster`.
    pub(crate) fn tag(&mut self, tag: &Tag<'_>) {
        if tag.html {
            let wanted = match tag.element {
                Element::Img
                | Element::Source
                | Element::Script
                | Element::Track
                | Element::Embed
                | Element::Object
                | Element::Media => true,
                Element::Input => tag
                    .kind
                    .is_some_and(|kind| kind.get().trim().eq_ignore_ascii_case("image")),
                Element::Link => tag.rel.is_some_and(|rel| {
                    rel.get()
                        .split_ascii_whitespace()
                        .any(|t| RELS.iter().any(|r| t.eq_ignore_ascii_case(r)))
                }),
                _ => false,
            };
            if wanted && let Some(href) = tag.href {
                self.add(&href.get());
            }
            match tag.element {
                Element::Img | Element::Source => {
                    if let Some(srcset) = tag.srcset {
                        srcset_urls(&srcset.get(), |url| self.add(url));
                    }
                }
                Element::Media => {
                    if let Some(poster) = tag.poster {
                        self.add(&poster.get());
                    }
                }
                _ => {}
            }
        }
        if let Some(style) = tag.style {
            css::urls(&style.get(), false, |url| self.add(&url));
        }
        if let Some(background) = tag.background {
            self.add(&background.get());
        }
    }

    /// What the text of a `<style>` element (or a whole style sheet) needs: its `url()`s
    /// and `@import`s.
    pub(crate) fn style_sheet(&mut self, css: &str) {
        css::urls(css, true, |url| self.add(&url));
    }

    fn add(&mut self, href: &str) {
        let href = href.trim_matches(|c: char| c <= ' ');
        // The page itself (an SVG filter's `url(#id)`), or bytes already in the page.
        let inline = href.len() >= 5 && href.as_bytes()[..5].eq_ignore_ascii_case(b"data:");
        if href.is_empty() || href.starts_with('#') || inline || self.seen.contains(href) {
            return;
        }
        if self.found.len() < self.cap {
            self.seen.insert(href.to_owned());
            self.found.push(href.to_owned());
        } else {
            self.over_cap += 1;
        }
    }
}

/// The URLs of a `srcset` attribute, by the HTML standard's parser: candidates separated by
/// commas, each a URL (which may itself hold commas, but not at its end) and descriptors
/// (`2x`, `480w`) up to the next comma outside parentheses.
fn srcset_urls(srcset: &str, mut found: impl FnMut(&str)) {
    let b = srcset.as_bytes();
    let space = |c: u8| matches!(c, b' ' | b'\t' | b'\n' | b'\x0c' | b'\r');
    let mut i = 0;
    loop {
        while b.get(i).is_some_and(|&c| space(c) || c == b',') {
            i += 1;
        }
        if i >= b.len() {
            return;
        }
        let start = i;
        while b.get(i).is_some_and(|&c| !space(c)) {
            i += 1;
        }
        let url = &srcset[start..i];
        if url.ends_with(',') {
            found(url.trim_end_matches(','));
            continue;
        }
        found(url);
        let mut in_parens = false;
        while let Some(&c) = b.get(i) {
            i += 1;
            match c {
                b'(' => in_parens = true,
                b')' => in_parens = false,
                b',' if !in_parens => break,
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn srcset_candidates_are_read_as_browsers_read_them() {
        let mut urls = Vec::new();
        srcset_urls(
            " a.png 1x, b.png 2x,c.png,, d,e.png 480w, f.png (junk, more) 2x ,g.png",
            |url| urls.push(url.to_owned()),
        );
        assert_eq!(
            urls,
            ["a.png", "b.png", "c.png", "d,e.png", "f.png", "g.png"]
        );
    }
}
