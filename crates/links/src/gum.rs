//! Candidate: html5gum's tokenizer driven by the crate's tree simulation.

use html5gum::emitters::callback::{CallbackEmitter, CallbackEvent};
use html5gum::{Span, State, Tokenizer};

use crate::sink::{Sink, Tag as SinkTag, Value};
use crate::tokenizer::{Attrs, Tag, TagName, classify_name};
use crate::tree::{Then, Tree};

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

/// Streams the start tags of `text` to `sink`, with html5gum's tokenizer.
pub fn tokenize_html5gum(text: &str, sink: &mut impl Sink) {
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
            next: 0,
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
            Then::Text(_) => tokenizer.set_state(State::RawText),
            Then::Script => tokenizer.set_state(State::ScriptData),
            Then::Plaintext => tokenizer.set_state(State::PlainText),
        }
    }
}
