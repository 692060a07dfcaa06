//! The same link rules ([`links::Collector`]) driven by two other tokenizers, html5gum and
//! lol_html, for the comparison in the crate's README: `tests/agreement.rs` checks what they
//! find, `benches/compare.rs` (which includes this file) times them.
//!
//! Each adapter does what [`links::extract`] does with another tokenizer in the middle:
//! [`links::decode`], tokenize, hand each start tag of an [`Element`] to the collector,
//! finish. Both are thin, as a crawler built on them would be: neither simulates the tree
//! builder beyond what the crate itself does.

use links::{Collector, Element, Extracted, Options, Page, Sink, Tag, Value};

/// A start tag of `element` with its href, rel, name and content values, character
/// references already decoded (as html5gum hands them over).
fn decoded_tag<'a, S: AsRef<str>>(element: Element, values: &'a [Option<S>; 4]) -> Tag<'a> {
    let [href, rel, name, content] = values
        .each_ref()
        .map(|v| v.as_ref().map(|v| Value::decoded(v.as_ref())));
    let mut tag = Tag::new(element);
    tag.href = href;
    tag.rel = rel;
    tag.name = name;
    tag.content = content;
    tag
}

/// html5gum 0.9: a WHATWG tokenizer without a tree builder (its `tree-builder` feature is
/// html5ever's), with its naive state switching (`<script>`, `<style>`, `<title>`, ... by
/// tag name) turned on, as its documentation suggests for scraping. It decodes character
/// references itself, so values are handed over as [`Value::decoded`].
pub(crate) fn extract_html5gum(page: &Page<'_>, options: &Options) -> Extracted {
    let (text, encoding) = links::decode(page);
    let mut collector = Collector::new(options);
    let mut emitter = html5gum::DefaultEmitter::default();
    emitter.naively_switch_states(true);
    for token in html5gum::Tokenizer::new_with_emitter(&*text, emitter) {
        let Ok(html5gum::Token::StartTag(start)) = token else {
            continue;
        };
        let Some(element) = std::str::from_utf8(&start.name)
            .ok()
            .and_then(Element::from_name)
        else {
            continue;
        };
        let attr = |name: &str| {
            start
                .attributes
                .get(name.as_bytes())
                .map(|v| String::from_utf8_lossy(&v.value))
        };
        let values = [attr("href"), attr("rel"), attr("name"), attr("content")];
        collector.start_tag(&decoded_tag(element, &values));
    }
    collector.finish(page.url, encoding)
}

/// html5gum 0.9 as its documentation recommends for speed: the callback emitter, which hands
/// over tag names, attribute names and values as borrowed slices instead of building a
/// token (and a map of attributes) per tag. Same naive state switching as
/// [`extract_html5gum`]; the first of duplicate attributes is kept here, as html5gum's
/// default emitter does.
pub(crate) fn extract_html5gum_callback(page: &Page<'_>, options: &Options) -> Extracted {
    use html5gum::emitters::callback::{CallbackEmitter, CallbackEvent};

    /// The start tag being read, if it is one of the elements the rules read.
    #[derive(Default)]
    struct Current {
        element: Option<Element>,
        /// href, rel, name, content: the first of each.
        values: [Option<String>; 4],
        /// Which of `values` the attribute being read goes to.
        slot: Option<usize>,
    }

    let (text, encoding) = links::decode(page);
    let mut collector = Collector::new(options);
    {
        let collector = &mut collector;
        let mut current = Current::default();
        let mut emitter = CallbackEmitter::new(
            move |event: CallbackEvent<'_>, _: html5gum::Span<()>| -> Option<()> {
                match event {
                    CallbackEvent::OpenStartTag { name } => {
                        current.element =
                            std::str::from_utf8(name).ok().and_then(Element::from_name);
                        current.values = Default::default();
                        current.slot = None;
                    }
                    CallbackEvent::AttributeName { name } if current.element.is_some() => {
                        current.slot = [&b"href"[..], b"rel", b"name", b"content"]
                            .iter()
                            .position(|n| *n == name)
                            .filter(|&i| current.values[i].is_none());
                        if let Some(i) = current.slot {
                            current.values[i] = Some(String::new());
                        }
                    }
                    CallbackEvent::AttributeValue { value } => {
                        if let Some(i) = current.slot {
                            current.values[i] = Some(String::from_utf8_lossy(value).into_owned());
                        }
                    }
                    CallbackEvent::CloseStartTag { .. } => {
                        if let Some(element) = current.element.take() {
                            collector.start_tag(&decoded_tag(element, &current.values));
                        }
                        current.slot = None;
                    }
                    _ => {}
                }
                None
            },
        );
        emitter.naively_switch_states(true);
        for _ in html5gum::Tokenizer::new_with_emitter(&*text, emitter) {}
    }
    collector.finish(page.url, encoding)
}

/// lol_html 3: Cloudflare's streaming rewriter, which a popular Rust crawler (spider) parses
/// with. Its tokenizer is driven by its own tree-builder simulation (text states, SVG and
/// MathML namespaces), and CSS selectors pick the elements: one handler for the five
/// elements the rules read, reading their attributes as written ([`Value::as_written`]:
/// lol_html leaves character references in attribute values undecoded). The rewritten
/// output is thrown away.
pub(crate) fn extract_lol_html(page: &Page<'_>, options: &Options) -> Extracted {
    use lol_html::{HtmlRewriter, Settings, element};

    let (text, encoding) = links::decode(page);
    let mut collector = Collector::new(options);
    {
        let collector = &mut collector;
        let mut rewriter = HtmlRewriter::new(
            Settings::new().append_element_content_handler(element!(
                "a, area, base, link, meta",
                |el| {
                    let Some(element) = Element::from_name(&el.tag_name()) else {
                        return Ok(());
                    };
                    let (href, rel) = (el.get_attribute("href"), el.get_attribute("rel"));
                    let (name, content) = (el.get_attribute("name"), el.get_attribute("content"));
                    let mut tag = Tag::new(element);
                    tag.html = el.namespace_uri() == "http://www.w3.org/1999/xhtml";
                    tag.href = href.as_deref().map(Value::as_written);
                    tag.rel = rel.as_deref().map(Value::as_written);
                    tag.name = name.as_deref().map(Value::as_written);
                    tag.content = content.as_deref().map(Value::as_written);
                    collector.start_tag(&tag);
                    Ok(())
                }
            )),
            |_: &[u8]| {},
        );
        // An error (a memory limit, none by default) ends the page with the links so far.
        if rewriter.write(text.as_bytes()).is_ok() {
            let _ = rewriter.end();
        }
    }
    collector.finish(page.url, encoding)
}
