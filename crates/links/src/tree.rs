//! The little of the HTML tree builder that changes how a page is tokenized or which
//! elements are in the document: open SVG/MathML elements (where `<title>`, `<style>` and
//! `<script>` are ordinary elements, except inside integration points), the HTML elements
//! whose end tags close them, and `<template>` nesting (its contents are inert).

use crate::token::{Tag, TagName};

/// The deepest SVG/MathML nesting tracked element by element; deeper elements are only
/// counted, which bounds the work per end tag.
const MAX_FOREIGN_DEPTH: usize = 64;

/// An open SVG or MathML element.
#[derive(Debug, Clone, Copy)]
struct Foreign {
    hash: u64,
    math: bool,
    /// Its children are parsed as HTML (`foreignObject`, `mi`, ...).
    integration_point: bool,
}

/// The little of the tree builder that changes how the page is tokenized or which elements
/// are in the document: open SVG/MathML elements and `<template>` nesting.
#[derive(Debug)]
pub(crate) struct Tree {
    foreign: Vec<Foreign>,
    /// Open foreign elements beyond [`MAX_FOREIGN_DEPTH`].
    foreign_overflow: usize,
    templates: usize,
    /// Start tags minus end tags of the HTML elements [`Tree::end_tag`] may close around
    /// SVG/MathML, by a hash of the name (collisions only make a close more likely).
    open: [u32; 64],
}

impl TagName {
    /// An HTML element that can contain SVG/MathML, and whose end tag then closes it.
    #[inline]
    fn closes_foreign(self) -> bool {
        matches!(
            self,
            TagName::A | TagName::Font | TagName::Breakout | TagName::BrOrP | TagName::Container
        )
    }
}

/// What the tokenizer does after a start tag.
pub(crate) enum AfterStartTag {
    Data,
    /// Skip text up to the end tag of this name.
    Text(&'static str),
    Script,
    Plaintext,
}

impl Default for Tree {
    fn default() -> Self {
        Tree {
            foreign: Vec::new(),
            foreign_overflow: 0,
            templates: 0,
            open: [0; 64],
        }
    }
}

impl Tree {
    /// Inside the inert contents of a `<template>`.
    #[inline]
    pub(crate) fn in_template(&self) -> bool {
        self.templates > 0
    }

    #[inline]
    fn open_count(&mut self, tag: &Tag<'_>) -> &mut u32 {
        &mut self.open[(tag.hash % 64) as usize]
    }

    /// The current node is an SVG/MathML element whose children are not HTML.
    #[inline]
    fn in_foreign_content(&self) -> bool {
        self.foreign_overflow > 0 || self.foreign.last().is_some_and(|f| !f.integration_point)
    }

    fn push_foreign(&mut self, foreign: Foreign) {
        if self.foreign.len() < MAX_FOREIGN_DEPTH {
            self.foreign.push(foreign);
        } else {
            self.foreign_overflow += 1;
        }
    }

    fn leave_foreign_content(&mut self) {
        self.foreign.clear();
        self.foreign_overflow = 0;
    }

    /// Handles a start tag; returns whether it is an HTML element (not SVG/MathML), and what
    /// the tokenizer does next.
    #[inline(always)]
    pub(crate) fn start_tag(&mut self, tag: &Tag<'_>) -> (bool, AfterStartTag) {
        if self.in_foreign_content() {
            let breaks_out = matches!(
                tag.name,
                TagName::Breakout | TagName::BodyOrHead | TagName::BrOrP | TagName::Meta
            ) || (tag.name == TagName::Font && tag.attrs.font_breakout);
            if !breaks_out {
                if !tag.self_closing {
                    let math = self.foreign.last().is_some_and(|f| f.math);
                    let integration_point = match tag.name {
                        TagName::SvgIntegrationPoint | TagName::RcData("title") => !math,
                        TagName::MathIntegrationPoint => math,
                        _ => false,
                    };
                    self.push_foreign(Foreign {
                        hash: tag.hash,
                        math,
                        integration_point,
                    });
                }
                return (false, AfterStartTag::Data);
            }
            self.leave_foreign_content();
        }
        if tag.name.closes_foreign() {
            let open = self.open_count(tag);
            *open = open.saturating_add(1);
        }
        let then = match tag.name {
            TagName::Svg | TagName::Math => {
                if !tag.self_closing {
                    self.push_foreign(Foreign {
                        hash: tag.hash,
                        math: tag.name == TagName::Math,
                        integration_point: false,
                    });
                }
                return (false, AfterStartTag::Data);
            }
            TagName::Template => {
                self.templates += 1;
                AfterStartTag::Data
            }
            TagName::Script => AfterStartTag::Script,
            TagName::RawText(name) | TagName::RcData(name) => AfterStartTag::Text(name),
            TagName::Plaintext => AfterStartTag::Plaintext,
            _ => AfterStartTag::Data,
        };
        (true, then)
    }

    #[inline]
    pub(crate) fn end_tag(&mut self, tag: &Tag<'_>) {
        if self.foreign.is_empty() && self.foreign_overflow == 0 {
            if tag.name == TagName::Template {
                self.templates = self.templates.saturating_sub(1);
            } else if tag.name.closes_foreign() {
                let open = self.open_count(tag);
                *open = open.saturating_sub(1);
            }
            return;
        }
        if self.in_foreign_content() && tag.name == TagName::BrOrP {
            self.leave_foreign_content();
        } else if self.foreign_overflow > 0 {
            self.foreign_overflow -= 1;
        } else if let Some(at) = self.foreign.iter().rposition(|f| f.hash == tag.hash) {
            self.foreign.truncate(at);
        } else if self.in_foreign_content()
            && ((tag.name.closes_foreign() && *self.open_count(tag) > 0)
                || (tag.name == TagName::Template && self.templates > 0))
        {
            // The end tag of an open HTML element around the SVG/MathML (`<div><svg><path>
            // </div>`): the tree builder closes it, and the foreign elements in it.
            self.leave_foreign_content();
            if tag.name == TagName::Template {
                self.templates -= 1;
            } else {
                *self.open_count(tag) -= 1;
            }
        }
    }

    /// Whether `<![CDATA[` starts a CDATA section (inside SVG/MathML) or a bogus comment.
    #[inline]
    pub(crate) fn cdata_allowed(&self) -> bool {
        self.in_foreign_content()
    }
}
