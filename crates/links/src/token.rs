//! The tokens the tokenizer makes and the tree simulation reads: tag names as the two care
//! about them, and a tag with the attributes the link rules read.

use crate::sink::Element;

/// The tag names the tokenizer and the tree simulation care about (ASCII case-insensitive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TagName {
    A,
    Area,
    Base,
    Link,
    Meta,
    /// `frame`: a link, from its `src`.
    Frame,
    Script,
    /// `style`, `xmp`, `iframe`, `noembed`, `noframes`: raw text up to the end tag.
    RawText(&'static str),
    /// `title`, `textarea`: RCDATA up to the end tag.
    RcData(&'static str),
    Plaintext,
    Template,
    Svg,
    Math,
    Font,
    /// `br` and `p`, which also break out of SVG/MathML as end tags.
    BrOrP,
    /// The other start tags that break out of SVG/MathML (as end tags, see [`Tree::end_tag`](crate::tree::Tree::end_tag)).
    Breakout,
    /// `body` and `head`, which break out of SVG/MathML as start tags only.
    BodyOrHead,
    /// Other HTML elements that contain flow content, for [`Tree::end_tag`](crate::tree::Tree::end_tag).
    Container,
    /// The names of SVG's HTML integration points other than `title`.
    SvgIntegrationPoint,
    /// MathML's text integration points: `mi`, `mo`, `mn`, `ms`, `mtext`.
    MathIntegrationPoint,
    Other,
}

impl TagName {
    /// The [`Element`] a [`Sink`](crate::Sink) is told of, if any.
    #[inline]
    pub(crate) fn element(self) -> Option<Element> {
        Some(match self {
            TagName::A => Element::A,
            TagName::Area => Element::Area,
            TagName::Base => Element::Base,
            TagName::Link => Element::Link,
            TagName::Meta => Element::Meta,
            TagName::Frame | TagName::RawText("iframe") => Element::Frame,
            _ => return None,
        })
    }

    #[inline]
    pub(crate) fn classify(lower: &[u8]) -> TagName {
        use TagName::*;
        match lower {
            b"a" => A,
            b"area" => Area,
            b"base" => Base,
            b"link" => Link,
            b"meta" => Meta,
            b"frame" => Frame,
            b"script" => Script,
            b"style" => RawText("style"),
            b"xmp" => RawText("xmp"),
            b"iframe" => RawText("iframe"),
            b"noembed" => RawText("noembed"),
            b"noframes" => RawText("noframes"),
            b"title" => RcData("title"),
            b"textarea" => RcData("textarea"),
            b"plaintext" => Plaintext,
            b"template" => Template,
            b"svg" => Svg,
            b"math" => Math,
            b"font" => Font,
            b"br" | b"p" => BrOrP,
            b"b" | b"big" | b"blockquote" | b"center" | b"code" | b"dd" | b"div" | b"dl"
            | b"dt" | b"em" | b"embed" | b"h1" | b"h2" | b"h3" | b"h4" | b"h5" | b"h6" | b"hr"
            | b"i" | b"img" | b"li" | b"listing" | b"menu" | b"nobr" | b"ol" | b"pre" | b"ruby"
            | b"s" | b"small" | b"span" | b"strong" | b"strike" | b"sub" | b"sup" | b"table"
            | b"tt" | b"u" | b"ul" | b"var" => Breakout,
            b"body" | b"head" => BodyOrHead,
            b"address" | b"article" | b"aside" | b"button" | b"caption" | b"details"
            | b"fieldset" | b"figcaption" | b"figure" | b"footer" | b"form" | b"header"
            | b"label" | b"legend" | b"main" | b"nav" | b"noscript" | b"object" | b"section"
            | b"summary" | b"tbody" | b"td" | b"tfoot" | b"th" | b"thead" | b"tr" => Container,
            b"foreignobject" | b"desc" => SvgIntegrationPoint,
            b"mi" | b"mo" | b"mn" | b"ms" | b"mtext" => MathIntegrationPoint,
            _ => Other,
        }
    }
}

/// The attributes the link rules read: the first occurrence of each (duplicates are dropped,
/// as the tokenizer does).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Attrs<'s> {
    pub(crate) href: Option<&'s str>,
    pub(crate) rel: Option<&'s str>,
    pub(crate) name: Option<&'s str>,
    pub(crate) content: Option<&'s str>,
    /// `<font>` has `color`, `face` or `size` (then it breaks out of SVG/MathML).
    pub(crate) font_breakout: bool,
}

/// The attributes only a sink that wants page requisites is told of (see
/// [`Sink::wants_requisites`](crate::Sink::wants_requisites)): kept apart from [`Attrs`], so
/// that a tag read for its links alone is as small as it was.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Extra<'s> {
    pub(crate) srcset: Option<&'s str>,
    pub(crate) poster: Option<&'s str>,
    pub(crate) kind: Option<&'s str>,
    pub(crate) style: Option<&'s str>,
    pub(crate) background: Option<&'s str>,
}

/// A tag token.
#[derive(Debug)]
pub(crate) struct Tag<'s> {
    pub(crate) name: TagName,
    /// A hash of the lowercased name, to match end tags inside SVG/MathML.
    pub(crate) hash: u64,
    pub(crate) self_closing: bool,
    pub(crate) attrs: Attrs<'s>,
    /// The element a page needs to render, when the sink wants page requisites and the tag
    /// is one (`<img>`, `<script>`, ...).
    pub(crate) embed: Option<Element>,
    /// The input position after the tag's `>`.
    pub(crate) next: usize,
}
