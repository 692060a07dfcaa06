//! The tokenizer: a byte-level HTML tokenizer that follows the WHATWG tokenizer states that
//! decide where tags begin and end and what an attribute value is, and hands start tags to a
//! [`Sink`]. Which state text after a start tag is in (`<script>`, `<title>`, ...) is the
//! tree builder's decision, simulated in [`crate::tree`].

use crate::scan::{EQUALS, GT, SLASH, SPACE, find_byte, find_seq, is, is_space};
use crate::sink::{Element, Sink, Tag as SinkTag, Value};
use crate::token::{Attrs, Extra, Tag, TagName};
use crate::tree::{AfterStartTag, Tree};

/// Which attributes to capture for a tag: a set of these bits.
type Capture = u16;
const HREF: Capture = 1;
const REL: Capture = 1 << 1;
const NAME: Capture = 1 << 2;
const CONTENT: Capture = 1 << 3;
const FONT: Capture = 1 << 4;
/// `src`, kept where `href` is.
const SRC: Capture = 1 << 5;
/// `data` (of `<object>`), kept where `href` is.
const DATA: Capture = 1 << 6;
const SRCSET: Capture = 1 << 7;
const POSTER: Capture = 1 << 8;
const TYPE: Capture = 1 << 9;
const STYLE: Capture = 1 << 10;
const BACKGROUND: Capture = 1 << 11;

/// The element a page needs to render that a start tag's lowercased name is, if any, and
/// the attributes that name what it needs.
fn embed_of(lower: &[u8]) -> Option<(Element, Capture)> {
    Some(match lower {
        // The tree builder renames `<image>` to `<img>` in HTML content.
        b"img" | b"image" => (Element::Img, SRC | SRCSET),
        b"source" => (Element::Source, SRC | SRCSET),
        b"script" => (Element::Script, SRC),
        b"video" => (Element::Media, SRC | POSTER),
        b"audio" => (Element::Media, SRC),
        b"track" => (Element::Track, SRC),
        b"embed" => (Element::Embed, SRC),
        b"object" => (Element::Object, DATA),
        b"input" => (Element::Input, SRC | TYPE),
        _ => return None,
    })
}

/// Tokenizes a tag whose name starts at `start` (just after `<` or `</`), through its `>`.
/// `None` if the input ends inside the tag: the tokenizer then drops it.
#[inline(always)]
fn read_tag<'s, const REQUISITES: bool>(
    src: &'s str,
    start: usize,
    is_start: bool,
    extra: &mut Extra<'s>,
) -> Option<Tag<'s>> {
    let b = src.as_bytes();
    // Tag name state.
    let mut i = start;
    let mut lower = [0u8; 16];
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    loop {
        let c = *b.get(i)?;
        if is(c, SPACE | SLASH | GT) {
            break;
        }
        let c = c.to_ascii_lowercase();
        if let Some(slot) = lower.get_mut(i - start) {
            *slot = c;
        }
        hash = (hash ^ u64::from(c)).wrapping_mul(0x0000_0100_0000_01b3);
        i += 1;
    }
    let len = i - start;
    let name = if len <= lower.len() {
        TagName::classify(&lower[..len])
    } else {
        TagName::Other
    };
    let mut want = match (is_start, name) {
        (false, _) => 0,
        (true, TagName::A | TagName::Area | TagName::Base | TagName::Link) => HREF | REL,
        (true, TagName::Meta) => NAME | CONTENT,
        (true, TagName::Font) => FONT,
        (true, TagName::Frame | TagName::RawText("iframe")) => SRC,
        _ => 0,
    };
    let mut embed = None;
    if REQUISITES && is_start {
        // Any element's `style` may name images; `background` is HTML 4's.
        want |= STYLE | BACKGROUND;
        if let Some((element, attrs)) = lower.get(..len).and_then(embed_of) {
            embed = Some(element);
            want |= attrs;
        }
    }
    let mut tag = Tag {
        name,
        hash,
        self_closing: false,
        attrs: Attrs::default(),
        embed,
        next: 0,
    };
    loop {
        // Before attribute name state.
        while is_space(*b.get(i)?) {
            i += 1;
        }
        match b[i] {
            b'>' => {
                tag.next = i + 1;
                return Some(tag);
            }
            b'/' => {
                // Self-closing start tag state; anything but `>` is reconsumed above.
                i += 1;
                if *b.get(i)? == b'>' {
                    tag.self_closing = true;
                    tag.next = i + 1;
                    return Some(tag);
                }
                continue;
            }
            _ => {}
        }
        // Attribute name state: the first character may be `=`.
        let name_start = i;
        i += 1;
        while !is(*b.get(i)?, SPACE | SLASH | GT | EQUALS) {
            i += 1;
        }
        let attr_name = &b[name_start..i];
        // After attribute name state.
        while is_space(*b.get(i)?) {
            i += 1;
        }
        let value = if b[i] == b'=' {
            // Before attribute value state.
            i += 1;
            while is_space(*b.get(i)?) {
                i += 1;
            }
            match b[i] {
                q @ (b'"' | b'\'') => {
                    let len = find_byte(q, &b[i + 1..])?;
                    i += len + 2;
                    i - 1 - len..i - 1
                }
                // A missing value: the `>` ends the tag, below.
                b'>' => i..i,
                _ => {
                    let from = i;
                    while !is(*b.get(i)?, SPACE | GT) {
                        i += 1;
                    }
                    from..i
                }
            }
        } else {
            i..i
        };
        if want != 0 {
            // Always a `str` slice: the value is delimited by ASCII bytes.
            let value = src.get(value).unwrap_or_default();
            if REQUISITES && want & (SRCSET | POSTER | TYPE | STYLE | BACKGROUND) != 0 {
                extra.capture(want, attr_name, value);
            }
            tag.attrs.capture(want, attr_name, value);
        }
    }
}

impl<'s> Attrs<'s> {
    #[inline]
    fn capture(&mut self, want: Capture, name: &[u8], value: &'s str) {
        let is = |bit: Capture, attr: &[u8]| want & bit != 0 && name.eq_ignore_ascii_case(attr);
        let slot = match name.len() {
            4 if is(HREF, b"href") => &mut self.href,
            3 if is(REL, b"rel") => &mut self.rel,
            3 if is(SRC, b"src") => &mut self.href,
            4 if is(DATA, b"data") => &mut self.href,
            4 if is(NAME, b"name") => &mut self.name,
            7 if is(CONTENT, b"content") => &mut self.content,
            _ => {
                if want & FONT != 0 {
                    self.font_breakout |= [&b"color"[..], b"face", b"size"]
                        .iter()
                        .any(|n| name.eq_ignore_ascii_case(n));
                }
                return;
            }
        };
        if slot.is_none() {
            *slot = Some(value);
        }
    }
}

impl<'s> Extra<'s> {
    #[inline]
    fn capture(&mut self, want: Capture, name: &[u8], value: &'s str) {
        let is = |bit: Capture, attr: &[u8]| want & bit != 0 && name.eq_ignore_ascii_case(attr);
        let slot = match name.len() {
            6 if is(SRCSET, b"srcset") => &mut self.srcset,
            6 if is(POSTER, b"poster") => &mut self.poster,
            4 if is(TYPE, b"type") => &mut self.kind,
            5 if is(STYLE, b"style") => &mut self.style,
            10 if is(BACKGROUND, b"background") => &mut self.background,
            _ => return,
        };
        if slot.is_none() {
            *slot = Some(value);
        }
    }
}

/// Streams the start tags of a page's text to `sink`, in document order, following the
/// HTML tokenizer and as much of the tree builder as decides what is markup (see the
/// crate documentation). `text` is the decoded page ([`decode`](crate::decode)).
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
    // Two copies of the loop: the one for links only captures and reports nothing more.
    if sink.wants_requisites() {
        tokenize_with::<true>(text, sink);
    } else {
        tokenize_with::<false>(text, sink);
    }
}

/// [`tokenize`], for a sink that wants page requisites or not. Each copy is a function of
/// its own, so that the compiler inlines into it as it did when there was one.
#[inline(never)]
fn tokenize_with<'s, const REQUISITES: bool>(text: &'s str, sink: &mut impl Sink) {
    let src = text;
    let b = src.as_bytes();
    let mut tree = Tree::default();
    let mut extra = Extra::default();
    let mut pos = 0;
    // Data state.
    while let Some(found) = find_byte(b'<', &b[pos..]) {
        let lt = pos + found;
        pos = match b.get(lt + 1) {
            Some(b'!') => skip_markup_declaration(b, lt + 2, tree.cdata_allowed()),
            Some(b'?') => skip_bogus_comment(b, lt + 1),
            Some(b'/') => match b.get(lt + 2) {
                Some(c) if c.is_ascii_alphabetic() => {
                    let Some(tag) = read_tag::<false>(src, lt + 2, false, &mut extra) else {
                        return;
                    };
                    tree.end_tag(&tag);
                    tag.next
                }
                Some(b'>') => lt + 3,
                Some(_) => skip_bogus_comment(b, lt + 2),
                None => return,
            },
            Some(c) if c.is_ascii_alphabetic() => {
                let Some(tag) = read_tag::<REQUISITES>(src, lt + 1, true, &mut extra) else {
                    return;
                };
                let (html, then) = tree.start_tag(&tag);
                let inert = tree.in_template();
                if !inert && let Some(element) = reported(&tag, &extra, REQUISITES) {
                    let attr = |value: Option<&'s str>| value.map(Value::as_written);
                    sink.start_tag(&SinkTag {
                        element,
                        html,
                        href: attr(tag.attrs.href),
                        rel: attr(tag.attrs.rel),
                        name: attr(tag.attrs.name),
                        content: attr(tag.attrs.content),
                        srcset: attr(extra.srcset),
                        poster: attr(extra.poster),
                        kind: attr(extra.kind),
                        style: attr(extra.style),
                        background: attr(extra.background),
                    });
                }
                if REQUISITES {
                    extra = Extra::default();
                }
                let end = match then {
                    AfterStartTag::Data => Some(tag.next),
                    AfterStartTag::Text("style") if REQUISITES && html && !inert => {
                        // Unclosed, it runs to the end of the page, as in a browser.
                        let end = find_end_tag(b, tag.next, b"style");
                        sink.style_text(&src[tag.next..end.unwrap_or(b.len())]);
                        end
                    }
                    AfterStartTag::Text(name) => find_end_tag(b, tag.next, name.as_bytes()),
                    AfterStartTag::Script => find_script_end(b, tag.next),
                    AfterStartTag::Plaintext => None,
                };
                match end {
                    Some(end) => end,
                    None => return,
                }
            }
            _ => lt + 1,
        };
    }
}

/// The element a start tag is reported to the sink as, if any: one of the link rules', or
/// with `requisites`, one a page needs to render, or any element with a `style` or
/// `background` attribute.
#[inline]
fn reported(tag: &Tag<'_>, extra: &Extra<'_>, requisites: bool) -> Option<Element> {
    tag.name.element().or(tag.embed).or_else(|| {
        let styled = extra.style.is_some() || extra.background.is_some();
        (requisites && styled).then_some(Element::Styled)
    })
}

/// After `<!` at `i`: a comment, DOCTYPE, CDATA section or bogus comment; returns the
/// position after it.
#[inline]
fn skip_markup_declaration(b: &[u8], i: usize, cdata_allowed: bool) -> usize {
    let rest = &b[i..];
    if rest.starts_with(b"--") {
        skip_comment(b, i + 2)
    } else if rest.len() >= 7 && rest[..7].eq_ignore_ascii_case(b"DOCTYPE") {
        // Every DOCTYPE state ends at the first `>`, quoted identifiers included.
        skip_bogus_comment(b, i + 7)
    } else if cdata_allowed && rest.starts_with(b"[CDATA[") {
        find_seq(b"]]>", &rest[7..]).map_or(b.len(), |at| i + 7 + at + 3)
    } else {
        skip_bogus_comment(b, i)
    }
}

/// A bogus comment from `i`: up to and including the first `>`.
#[inline]
fn skip_bogus_comment(b: &[u8], i: usize) -> usize {
    find_byte(b'>', &b[i..]).map_or(b.len(), |at| i + at + 1)
}

/// A comment whose text starts at `start` (after `<!--`); returns the position after it.
/// It ends at `<!-->`, `<!--->`, or the first `-->` or `--!>` after `<!--`.
#[inline]
fn skip_comment(b: &[u8], start: usize) -> usize {
    match (b.get(start), b.get(start + 1)) {
        (Some(b'>'), _) => return start + 1,
        (Some(b'-'), Some(b'>')) => return start + 2,
        _ => {}
    }
    let mut i = start;
    while let Some(at) = find_byte(b'>', &b[i..]) {
        let gt = i + at;
        if (gt >= start + 2 && &b[gt - 2..gt] == b"--")
            || (gt >= start + 3 && &b[gt - 3..gt] == b"--!")
        {
            return gt + 1;
        }
        i = gt + 1;
    }
    b.len()
}

/// Whether an appropriate end tag for `name` starts at `lt`: `</name` followed by
/// whitespace, `/` or `>`.
#[inline]
fn is_end_tag(b: &[u8], lt: usize, name: &[u8]) -> bool {
    b.get(lt + 1) == Some(&b'/')
        && b.get(lt + 2..lt + 2 + name.len())
            .is_some_and(|n| n.eq_ignore_ascii_case(name))
        && b.get(lt + 2 + name.len())
            .is_some_and(|&c| is_space(c) || c == b'/' || c == b'>')
}

/// Raw text or RCDATA from `i`: the position of its end tag's `<`, `None` if none.
#[inline]
fn find_end_tag(b: &[u8], mut i: usize, name: &[u8]) -> Option<usize> {
    loop {
        let lt = i + find_byte(b'<', &b[i..])?;
        if is_end_tag(b, lt, name) {
            return Some(lt);
        }
        i = lt + 1;
    }
}

/// Script data from `i`, through the escaped (`<!--`) and double-escaped (`<!--<script>`)
/// states: the position of the `</script` that ends it, `None` if none.
#[inline]
fn find_script_end(b: &[u8], mut i: usize) -> Option<usize> {
    #[derive(Clone, Copy, PartialEq, Eq)]
    enum S {
        Data,
        Escaped,
        EscapedDash,
        EscapedDashDash,
        DoubleEscaped,
        DoubleEscapedDash,
        DoubleEscapedDashDash,
    }
    /// The length of the ASCII letters at `i`, if they are followed by a delimiter (which
    /// ends the double escape start/end states), and whether they spell `script`.
    fn word(b: &[u8], i: usize) -> Option<(usize, bool)> {
        let len = b
            .get(i..)?
            .iter()
            .take_while(|c| c.is_ascii_alphabetic())
            .count();
        let next = *b.get(i + len)?;
        let delimited = is_space(next) || next == b'/' || next == b'>';
        Some((
            len,
            delimited && b[i..i + len].eq_ignore_ascii_case(b"script"),
        ))
    }
    let mut s = S::Data;
    loop {
        if s == S::Data {
            let lt = i + find_byte(b'<', &b[i..])?;
            if is_end_tag(b, lt, b"script") {
                return Some(lt);
            }
            if b.get(lt + 1..lt + 4) == Some(b"!--") {
                s = S::EscapedDashDash;
                i = lt + 4;
            } else {
                i = lt + 1;
            }
            continue;
        }
        let c = *b.get(i)?;
        i += 1;
        s = match (s, c) {
            (S::Escaped | S::EscapedDash, b'-') => {
                if s == S::Escaped {
                    S::EscapedDash
                } else {
                    S::EscapedDashDash
                }
            }
            (S::EscapedDashDash, b'-') => S::EscapedDashDash,
            (S::EscapedDashDash, b'>') => S::Data,
            (S::Escaped | S::EscapedDash | S::EscapedDashDash, b'<') => {
                let lt = i - 1;
                if is_end_tag(b, lt, b"script") {
                    return Some(lt);
                }
                if b.get(i).is_some_and(u8::is_ascii_alphabetic) {
                    // Script data double escape start state.
                    let (len, script) = word(b, i)?;
                    if script {
                        i += len + 1;
                        S::DoubleEscaped
                    } else {
                        i += len;
                        S::Escaped
                    }
                } else {
                    S::Escaped
                }
            }
            (S::Escaped | S::EscapedDash | S::EscapedDashDash, _) => S::Escaped,
            (S::DoubleEscaped, b'-') => S::DoubleEscapedDash,
            (S::DoubleEscapedDash | S::DoubleEscapedDashDash, b'-') => S::DoubleEscapedDashDash,
            (S::DoubleEscapedDashDash, b'>') => S::Data,
            (S::DoubleEscaped | S::DoubleEscapedDash | S::DoubleEscapedDashDash, b'<') => {
                if b.get(i) == Some(&b'/') {
                    // Script data double escape end state.
                    i += 1;
                    let (len, script) = word(b, i)?;
                    if script {
                        i += len + 1;
                        S::Escaped
                    } else {
                        i += len;
                        S::DoubleEscaped
                    }
                } else {
                    S::DoubleEscaped
                }
            }
            (S::DoubleEscaped | S::DoubleEscapedDash | S::DoubleEscapedDashDash, _) => {
                S::DoubleEscaped
            }
            (S::Data, _) => S::Data,
        };
    }
}
