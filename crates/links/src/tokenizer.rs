//! The tokenizer: html5gum's WHATWG tokenizer, told by the tree simulation ([`crate::tree`])
//! which state to go on in after each start tag (`<script>`, `<title>`, `<plaintext>`, ...),
//! as a browser's tree builder tells its tokenizer; it hands the start tags of the
//! [`Element`]s the link rules read to a [`Sink`]. html5gum decodes character references in
//! attribute values itself.
//!
//! Only the tags are taken from html5gum, through its callback emitter, which lends names
//! and values as slices instead of building a token per tag: text, comments and DOCTYPEs
//! are skipped, and only the first `href`, `rel`, `name` and `content` of the five elements
//! (and whether a `<font>` has `color`, `face` or `size`) are copied.

use html5gum::emitters::callback::{CallbackEmitter, CallbackEvent};
use html5gum::{Span, State, Tokenizer};

use crate::sink::{Element, Sink, Tag as SinkTag, Value};
use crate::tree::{Then, Tree};

/// The tag names the tokenizer and the tree simulation care about (ASCII case-insensitive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TagName {
    A,
    Area,
    Base,
    Link,
    Meta,
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
    /// The other start tags that break out of SVG/MathML (as end tags, see [`Tree::end_tag`]).
    Breakout,
    /// `body` and `head`, which break out of SVG/MathML as start tags only.
    BodyOrHead,
    /// Other HTML elements that contain flow content, for [`Tree::end_tag`].
    Container,
    /// The names of SVG's HTML integration points other than `title`.
    SvgIntegrationPoint,
    /// MathML's text integration points: `mi`, `mo`, `mn`, `ms`, `mtext`.
    MathIntegrationPoint,
    Other,
}

/// The name, and a hash of the name, of a tag from its lowercased name.
pub(crate) fn classify_name(lower: &[u8]) -> (TagName, u64) {
    let hash = lower.iter().fold(0xcbf2_9ce4_8422_2325_u64, |hash, &c| {
        (hash ^ u64::from(c)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    let name = if lower.len() <= 16 {
        TagName::classify(lower)
    } else {
        TagName::Other
    };
    (name, hash)
}

impl TagName {
    /// The [`Element`] a [`Sink`] is told of, if any.
    #[inline]
    pub(crate) fn element(self) -> Option<Element> {
        Some(match self {
            TagName::A => Element::A,
            TagName::Area => Element::Area,
            TagName::Base => Element::Base,
            TagName::Link => Element::Link,
            TagName::Meta => Element::Meta,
            _ => return None,
        })
    }

    #[inline]
    fn classify(lower: &[u8]) -> TagName {
        use TagName::*;
        match lower {
            b"a" => A,
            b"area" => Area,
            b"base" => Base,
            b"link" => Link,
            b"meta" => Meta,
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

/// The attributes the link rules and the tree simulation read: the first occurrence of each
/// (the tokenizer drops duplicates).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Attrs<'s> {
    pub(crate) href: Option<&'s str>,
    pub(crate) rel: Option<&'s str>,
    pub(crate) name: Option<&'s str>,
    pub(crate) content: Option<&'s str>,
    /// `<font>` has `color`, `face` or `size` (then it breaks out of SVG/MathML).
    pub(crate) font_breakout: bool,
}

/// A tag token.
#[derive(Debug)]
pub(crate) struct Tag<'s> {
    pub(crate) name: TagName,
    /// A hash of the lowercased name, to match end tags inside SVG/MathML.
    pub(crate) hash: u64,
    pub(crate) self_closing: bool,
    pub(crate) attrs: Attrs<'s>,
}

/// A tag as the callback hands it over.
#[derive(Default)]
struct Event {
    start: bool,
    name: Option<TagName>,
    hash: u64,
    self_closing: bool,
    font_breakout: bool,
    /// href, rel, name, content: the first of each.
    values: [Option<String>; 4],
}

/// Streams the start tags of a page's text to `sink`, in document order, following the
/// HTML tokenizer (html5gum's) and as much of the tree builder as decides what is markup
/// (see the crate documentation). `text` is the decoded page ([`decode`](crate::decode)).
///
/// Costs time linear in `text`'s length, and never panics.
///
/// ```
/// let url = url::Url::parse("https://example.com/")?;
/// let mut collector = links::Collector::new(&links::Options::default());
/// links::tokenize("<script>'<a href=/no>'</script><a href=/yes>", &mut collector);
/// assert_eq!(collector.finish(&url, "UTF-8").links, ["/yes"]);
/// # Ok::<(), url::ParseError>(())
/// ```
pub fn tokenize(text: &str, sink: &mut impl Sink) {
    let mut current = Event::default();
    // Which of `current.values` the attribute being read goes to.
    let mut slot: Option<usize> = None;
    let emitter = CallbackEmitter::new(
        move |event: CallbackEvent<'_>, _: Span<()>| -> Option<Event> {
            match event {
                CallbackEvent::OpenStartTag { name } => {
                    let (tag, hash) = classify_name(name);
                    current = Event {
                        start: true,
                        name: Some(tag),
                        hash,
                        ..Event::default()
                    };
                    slot = None;
                    None
                }
                CallbackEvent::AttributeName { name } => {
                    slot = None;
                    let wanted: &[&[u8]] = match current.name {
                        Some(TagName::A | TagName::Area | TagName::Base | TagName::Link) => {
                            &[b"href", b"rel"]
                        }
                        Some(TagName::Meta) => &[b"", b"", b"name", b"content"],
                        Some(TagName::Font) => {
                            current.font_breakout |= matches!(name, b"color" | b"face" | b"size");
                            &[]
                        }
                        _ => &[],
                    };
                    if let Some(i) = wanted.iter().position(|n| !n.is_empty() && *n == name)
                        && current.values[i].is_none()
                    {
                        current.values[i] = Some(String::new());
                        slot = Some(i);
                    }
                    None
                }
                CallbackEvent::AttributeValue { value } => {
                    if let Some(i) = slot {
                        current.values[i] = Some(String::from_utf8_lossy(value).into_owned());
                    }
                    None
                }
                CallbackEvent::CloseStartTag { self_closing } => {
                    slot = None;
                    current.self_closing = self_closing;
                    Some(std::mem::take(&mut current))
                }
                CallbackEvent::EndTag { name } => {
                    let (tag, hash) = classify_name(name);
                    Some(Event {
                        start: false,
                        name: Some(tag),
                        hash,
                        ..Event::default()
                    })
                }
                _ => None,
            }
        },
    );
    let mut tokenizer = Tokenizer::new_with_emitter(text, emitter);
    let mut tree = Tree::default();
    while let Some(Ok(event)) = tokenizer.next() {
        let [href, rel, name, content] = &event.values;
        let tag = Tag {
            name: event.name.unwrap_or(TagName::Other),
            hash: event.hash,
            self_closing: event.self_closing,
            attrs: Attrs {
                href: href.as_deref(),
                rel: rel.as_deref(),
                name: name.as_deref(),
                content: content.as_deref(),
                font_breakout: event.font_breakout,
            },
        };
        if !event.start {
            tree.end_tag(&tag);
            continue;
        }
        let (html, then) = tree.start_tag(&tag);
        if !tree.in_template()
            && let Some(element) = tag.name.element()
        {
            sink.start_tag(&SinkTag {
                element,
                html,
                href: tag.attrs.href.map(Value::decoded),
                rel: tag.attrs.rel.map(Value::decoded),
                name: tag.attrs.name.map(Value::decoded),
                content: tag.attrs.content.map(Value::decoded),
            });
        }
        match then {
            Then::Data => {}
            Then::Text => tokenizer.set_state(State::RawText),
            Then::Script => tokenizer.set_state(State::ScriptData),
            Then::Plaintext => tokenizer.set_state(State::PlainText),
        }
    }
}
