//! What a tokenizer hands to whatever collects links: [`Sink`], fed [`Tag`]s.
//!
//! The shape of ripgrep's `searcher::Sink`: the tokenizer knows nothing of link rules, and
//! the rules ([`Collector`](crate::Collector)) know nothing of tokenizing. That is also what
//! let the benchmarks drive the same rules from other tokenizers (html5gum, lol_html; see
//! the crate's README).

use std::borrow::Cow;

use crate::entities;

/// The elements whose start tags a [`Sink`] is told of: the ones the link rules read, and,
/// for a sink that [wants page requisites](Sink::wants_requisites), those that name what a
/// page needs to render.
///
/// ```
/// use links::Element;
///
/// assert_eq!(Element::from_name("AREA"), Some(Element::Area));
/// assert_eq!(Element::from_name("img"), Some(Element::Img));
/// assert_eq!(Element::from_name("div"), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Element {
    /// `<a>`: a link, from its `href`.
    A,
    /// `<area>`: a link, from its `href`.
    Area,
    /// `<base>`: the URL links are resolved against, from its `href`.
    Base,
    /// `<link>`: the canonical URL, when its `rel` has `canonical`.
    Link,
    /// `<meta>`: robots directives, from its `name` and `content`.
    Meta,
    /// `<frame>` and `<iframe>`: a page shown inside this one, from its `src` (handed over
    /// as [`Tag::href`]).
    Frame,
    /// `<img>` (and `<image>`, which the parser renames): its `src` (as [`Tag::href`]) and
    /// `srcset`.
    Img,
    /// `<source>` of `<picture>`, `<video>` or `<audio>`: its `src` (as [`Tag::href`]) and
    /// `srcset`.
    Source,
    /// `<script>`: its `src` (as [`Tag::href`]).
    Script,
    /// `<video>` and `<audio>`: the `src` (as [`Tag::href`]) and `<video>`'s `poster`.
    Media,
    /// `<track>`: its `src` (as [`Tag::href`]).
    Track,
    /// `<embed>`: its `src` (as [`Tag::href`]).
    Embed,
    /// `<object>`: its `data` (as [`Tag::href`]).
    Object,
    /// `<input>`: its `src` (as [`Tag::href`]) and `type` (as [`Tag::kind`]).
    Input,
    /// Any other element with a `style` or `background` attribute: reported only to a sink
    /// that wants page requisites, for those attributes.
    Styled,
}

impl Element {
    /// The element of a tag name (ASCII case-insensitive), if it is one of these.
    ///
    /// ```
    /// assert_eq!(links::Element::from_name("Meta"), Some(links::Element::Meta));
    /// ```
    pub fn from_name(name: &str) -> Option<Element> {
        let element = match name.len() {
            1 if name.eq_ignore_ascii_case("a") => Element::A,
            4 if name.eq_ignore_ascii_case("area") => Element::Area,
            4 if name.eq_ignore_ascii_case("base") => Element::Base,
            4 if name.eq_ignore_ascii_case("link") => Element::Link,
            4 if name.eq_ignore_ascii_case("meta") => Element::Meta,
            5 if name.eq_ignore_ascii_case("frame") => Element::Frame,
            6 if name.eq_ignore_ascii_case("iframe") => Element::Frame,
            3 if name.eq_ignore_ascii_case("img") => Element::Img,
            5 if name.eq_ignore_ascii_case("image") => Element::Img,
            6 if name.eq_ignore_ascii_case("source") => Element::Source,
            6 if name.eq_ignore_ascii_case("script") => Element::Script,
            5 if name.eq_ignore_ascii_case("video") || name.eq_ignore_ascii_case("audio") => {
                Element::Media
            }
            5 if name.eq_ignore_ascii_case("track") => Element::Track,
            5 if name.eq_ignore_ascii_case("embed") => Element::Embed,
            6 if name.eq_ignore_ascii_case("object") => Element::Object,
            5 if name.eq_ignore_ascii_case("input") => Element::Input,
            _ => return None,
        };
        Some(element)
    }
}

/// An attribute value, either as written in the page (character references still to be
/// decoded) or already decoded by the tokenizer that found it.
///
/// ```
/// use links::Value;
///
/// assert_eq!(Value::as_written("/s?a=1&amp;b=2").get(), "/s?a=1&b=2");
/// assert_eq!(Value::decoded("/s?a=1&amp;b=2").get(), "/s?a=1&amp;b=2");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Value<'s> {
    text: &'s str,
    decoded: bool,
}

impl<'s> Value<'s> {
    /// A value as written between the quotes: [`get`](Self::get) decodes its character
    /// references, carriage returns and NULs as the HTML tokenizer does.
    pub fn as_written(text: &'s str) -> Self {
        Value {
            text,
            decoded: false,
        }
    }

    /// A value a tokenizer has already decoded: [`get`](Self::get) returns it as it is.
    pub fn decoded(text: &'s str) -> Self {
        Value {
            text,
            decoded: true,
        }
    }

    /// The value, decoded; borrowed unless decoding changed it.
    ///
    /// ```
    /// use std::borrow::Cow;
    ///
    /// assert!(matches!(links::Value::as_written("/plain").get(), Cow::Borrowed("/plain")));
    /// ```
    #[inline]
    pub fn get(self) -> Cow<'s, str> {
        if self.decoded {
            Cow::Borrowed(self.text)
        } else {
            entities::decode_attribute(self.text)
        }
    }
}

/// A start tag of one of the [`Element`]s, with the attributes the link rules read (the
/// first of each name, as the HTML tokenizer keeps). The attributes that only name page
/// requisites (`srcset`, `poster`, `type`, `style`, `background`) are given only to a sink
/// that [wants them](Sink::wants_requisites).
///
/// ```
/// use links::{Element, Tag, Value};
///
/// let mut tag = Tag::new(Element::A);
/// tag.href = Some(Value::as_written("/next"));
/// assert!(tag.html && tag.rel.is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Tag<'s> {
    /// Which element.
    pub element: Element,
    /// The element is in the HTML namespace; false inside inline SVG or MathML (where an
    /// `<a href>` is still a link, but a `<base>` or `<link>` is not the document's).
    pub html: bool,
    /// The attribute that names the element's URL: `href`; `src` for [`Element::Frame`] and
    /// most of the elements of page requisites; `data` for [`Element::Object`].
    pub href: Option<Value<'s>>,
    /// The `rel` attribute.
    pub rel: Option<Value<'s>>,
    /// The `name` attribute (of `<meta>`).
    pub name: Option<Value<'s>>,
    /// The `content` attribute (of `<meta>`).
    pub content: Option<Value<'s>>,
    /// The `srcset` attribute (of `<img>` and `<source>`).
    pub srcset: Option<Value<'s>>,
    /// The `poster` attribute (of `<video>`).
    pub poster: Option<Value<'s>>,
    /// The `type` attribute (of `<input>`).
    pub kind: Option<Value<'s>>,
    /// The `style` attribute, of any element.
    pub style: Option<Value<'s>>,
    /// The `background` attribute, of any element (HTML 4's, on `<body>` and tables).
    pub background: Option<Value<'s>>,
}

impl<'s> Tag<'s> {
    /// A tag of `element` in the HTML namespace, without attributes.
    pub fn new(element: Element) -> Self {
        Tag {
            element,
            html: true,
            href: None,
            rel: None,
            name: None,
            content: None,
            srcset: None,
            poster: None,
            kind: None,
            style: None,
            background: None,
        }
    }
}

/// Receives the start tags a tokenizer finds, in document order.
///
/// A tokenizer calls [`start_tag`](Self::start_tag) for every start tag of an [`Element`]
/// that is in the document a browser builds: not for text that only looks like a tag
/// (inside comments, `<script>`, `<title>`, ...), nor for the inert contents of
/// `<template>`. [`Collector`](crate::Collector) is the sink that applies the link rules;
/// [`tokenize`](crate::tokenize) feeds any sink:
///
/// ```
/// use links::{Element, Sink, Tag};
///
/// /// Counts `<area>` tags.
/// struct Areas(usize);
///
/// impl Sink for Areas {
///     fn start_tag(&mut self, tag: &Tag<'_>) {
///         if tag.element == Element::Area {
///             self.0 += 1;
///         }
///     }
/// }
///
/// let mut areas = Areas(0);
/// links::tokenize("<map><area href=/a><!-- <area href=/b> --></map>", &mut areas);
/// assert_eq!(areas.0, 1);
/// ```
pub trait Sink {
    /// A start tag of an element the link rules read.
    fn start_tag(&mut self, tag: &Tag<'_>);

    /// Whether to be told of what a page needs to render as well: the start tags of the
    /// requisite elements ([`Element::Img`] to [`Element::Styled`]) with their attributes,
    /// and the text of `<style>` elements ([`style_text`](Self::style_text)). Asked once,
    /// before the first tag; false unless the sink says otherwise, so that a sink of links
    /// only pays for nothing else.
    fn wants_requisites(&self) -> bool {
        false
    }

    /// The text of a `<style>` element of the page (raw text: no character reference is
    /// decoded in it), for a sink that [wants page requisites](Self::wants_requisites).
    ///
    /// ```
    /// use links::{Sink, Tag};
    ///
    /// #[derive(Default)]
    /// struct Styles(Vec<String>);
    ///
    /// impl Sink for Styles {
    ///     fn start_tag(&mut self, _: &Tag<'_>) {}
    ///     fn wants_requisites(&self) -> bool {
    ///         true
    ///     }
    ///     fn style_text(&mut self, css: &str) {
    ///         self.0.push(css.to_owned());
    ///     }
    /// }
    ///
    /// let mut styles = Styles::default();
    /// links::tokenize("<style>p { color: red }</style><!-- <style>no</style> -->", &mut styles);
    /// assert_eq!(styles.0, ["p { color: red }"]);
    /// ```
    fn style_text(&mut self, css: &str) {
        let _ = css;
    }
}

impl<S: Sink + ?Sized> Sink for &mut S {
    fn start_tag(&mut self, tag: &Tag<'_>) {
        (**self).start_tag(tag);
    }

    fn wants_requisites(&self) -> bool {
        (**self).wants_requisites()
    }

    fn style_text(&mut self, css: &str) {
        (**self).style_text(css);
    }
}
