//! The tokenizer: a byte-level HTML tokenizer that follows the WHATWG tokenizer states that
//! decide where tags begin and end and what an attribute value is, and hands start tags to a
//! [`Sink`]. Which state text after a start tag is in (`<script>`, `<title>`, ...) is the
//! tree builder's decision, simulated in [`crate::tree`].

use crate::scan::{EQUALS, GT, SLASH, SPACE, find_byte, find_seq, is, is_space};
use crate::sink::{Sink, Tag as SinkTag, Value};
use crate::token::{Attrs, Tag, TagName};
use crate::tree::{AfterStartTag, Tree};

/// Which attributes to capture for a tag.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Capture {
    Nothing,
    HrefRel,
    NameContent,
    Font,
    /// `src`, kept where `href` is.
    Src,
}

/// Tokenizes a tag whose name starts at `start` (just after `<` or `</`), through its `>`.
/// `None` if the input ends inside the tag: the tokenizer then drops it.
#[inline(always)]
fn read_tag(src: &str, start: usize, is_start: bool) -> Option<Tag<'_>> {
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
    let want = match (is_start, name) {
        (false, _) => Capture::Nothing,
        (true, TagName::A | TagName::Area | TagName::Base | TagName::Link) => Capture::HrefRel,
        (true, TagName::Meta) => Capture::NameContent,
        (true, TagName::Font) => Capture::Font,
        (true, TagName::Frame | TagName::RawText("iframe")) => Capture::Src,
        _ => Capture::Nothing,
    };
    let mut tag = Tag {
        name,
        hash,
        self_closing: false,
        attrs: Attrs::default(),
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
        if want != Capture::Nothing {
            // Always a `str` slice: the value is delimited by ASCII bytes.
            let value = src.get(value).unwrap_or_default();
            tag.attrs.capture(want, attr_name, value);
        }
    }
}

impl<'s> Attrs<'s> {
    #[inline]
    fn capture(&mut self, want: Capture, name: &[u8], value: &'s str) {
        let slot = match (want, name.len()) {
            (Capture::HrefRel, 4) if name.eq_ignore_ascii_case(b"href") => &mut self.href,
            (Capture::HrefRel, 3) if name.eq_ignore_ascii_case(b"rel") => &mut self.rel,
            (Capture::Src, 3) if name.eq_ignore_ascii_case(b"src") => &mut self.href,
            (Capture::NameContent, 4) if name.eq_ignore_ascii_case(b"name") => &mut self.name,
            (Capture::NameContent, 7) if name.eq_ignore_ascii_case(b"content") => &mut self.content,
            (Capture::Font, _) => {
                self.font_breakout |= [&b"color"[..], b"face", b"size"]
                    .iter()
                    .any(|n| name.eq_ignore_ascii_case(n));
                return;
            }
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
    let src = text;
    let b = src.as_bytes();
    let mut tree = Tree::default();
    let mut pos = 0;
    // Data state.
    while let Some(found) = find_byte(b'<', &b[pos..]) {
        let lt = pos + found;
        pos = match b.get(lt + 1) {
            Some(b'!') => skip_markup_declaration(b, lt + 2, tree.cdata_allowed()),
            Some(b'?') => skip_bogus_comment(b, lt + 1),
            Some(b'/') => match b.get(lt + 2) {
                Some(c) if c.is_ascii_alphabetic() => {
                    let Some(tag) = read_tag(src, lt + 2, false) else {
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
                let Some(tag) = read_tag(src, lt + 1, true) else {
                    return;
                };
                let (html, then) = tree.start_tag(&tag);
                if !tree.in_template()
                    && let Some(element) = tag.name.element()
                {
                    sink.start_tag(&SinkTag {
                        element,
                        html,
                        href: tag.attrs.href.map(Value::as_written),
                        rel: tag.attrs.rel.map(Value::as_written),
                        name: tag.attrs.name.map(Value::as_written),
                        content: tag.attrs.content.map(Value::as_written),
                    });
                }
                let end = match then {
                    AfterStartTag::Data => Some(tag.next),
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
