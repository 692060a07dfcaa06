//! Character encoding: which one a page is in, and its text.
//!
//! In the order browsers use: a byte order mark (UTF-8 or UTF-16) wins; else the `charset=`
//! of the Content-Type header; else a `<meta charset>` or `<meta http-equiv=Content-Type
//! content="...; charset=...">` found by the HTML standard's prescan of the first 1024
//! bytes; else UTF-8.

use std::borrow::Cow;

use encoding_rs::{Encoding, UTF_8, UTF_16BE, UTF_16LE, WINDOWS_1252, X_USER_DEFINED};

use crate::page::Page;
use crate::scan::{find_byte, find_seq, is_space};

/// The text of a page, decoded as a browser would, and the name of its encoding (e.g.
/// `"UTF-8"`, `"windows-1252"`).
///
/// Malformed bytes become U+FFFD, so a page in a wrong or missing declared encoding still
/// yields its markup. [`extract`](crate::extract) starts with this; another tokenizer fed
/// to a [`Collector`](crate::Collector) should too.
///
/// ```
/// let url = url::Url::parse("https://example.com/")?;
/// let page = links::Page {
///     url: &url,
///     body: b"<meta charset=windows-1252><a href=/caf\xE9>",
///     content_type: Some("text/html"),
/// };
/// let (text, encoding) = links::decode(&page);
/// assert_eq!(encoding, "windows-1252");
/// assert!(text.ends_with("/caf\u{E9}>"));
/// # Ok::<(), url::ParseError>(())
/// ```
pub fn decode<'b>(page: &Page<'b>) -> (Cow<'b, str>, &'static str) {
    let declared = page
        .content_type
        .and_then(charset_from_content_type)
        .or_else(|| prescan(page.body))
        .unwrap_or(UTF_8);
    // `decode` sniffs a byte order mark first, which then overrides `declared`.
    let (text, encoding, _malformed) = declared.decode(page.body);
    (text, encoding.name())
}

/// The text of a style sheet, decoded as CSS Syntax says: a byte order mark wins; else the
/// Content-Type's `charset=`; else an `@charset "...";` rule at its very start (UTF-16 named
/// there means UTF-8, as the standard says); else UTF-8.
pub(crate) fn decode_stylesheet<'b>(page: &Page<'b>) -> (Cow<'b, str>, &'static str) {
    let declared = page
        .content_type
        .and_then(charset_from_content_type)
        .or_else(|| {
            let rest = page.body.strip_prefix(b"@charset \"")?;
            let end = rest.iter().take(64).position(|&c| c == b'"')?;
            if rest.get(end + 1) != Some(&b';') {
                return None;
            }
            let named = Encoding::for_label(&rest[..end])?;
            Some(if named == UTF_16BE || named == UTF_16LE {
                UTF_8
            } else {
                named
            })
        })
        .unwrap_or(UTF_8);
    let (text, encoding, _malformed) = declared.decode(page.body);
    (text, encoding.name())
}

/// The encoding named by the `charset` parameter of a Content-Type header value.
fn charset_from_content_type(content_type: &str) -> Option<&'static Encoding> {
    content_type.split(';').skip(1).find_map(|param| {
        let (name, value) = param.split_once('=')?;
        if !name.trim().eq_ignore_ascii_case("charset") {
            return None;
        }
        let value = value.trim();
        let value = value
            .strip_prefix('"')
            .map_or(value, |v| v.split('"').next().unwrap_or(v));
        Encoding::for_label(value.as_bytes())
    })
}

/// How many bytes the meta prescan looks at.
const PRESCAN_BYTES: usize = 1024;

/// The HTML standard's "prescan a byte stream to determine its encoding", over the first
/// [`PRESCAN_BYTES`] bytes: finds `<meta charset>` or `<meta http-equiv=content-type
/// content="...charset=...">`, skipping comments and other tags' attributes.
fn prescan(body: &[u8]) -> Option<&'static Encoding> {
    let b = &body[..body.len().min(PRESCAN_BYTES)];
    let mut pos = 0;
    while pos < b.len() {
        let rest = &b[pos..];
        if rest.starts_with(b"<!--") {
            // Up to the first "-->" after "<!", so "<!-->" is a whole comment.
            pos += 2 + find_seq(b"-->", &rest[2..])? + 3;
            continue;
        }
        if rest.len() > 5
            && rest[..5].eq_ignore_ascii_case(b"<meta")
            && matches!(rest[5], b'\t' | b'\n' | b'\x0C' | b'\r' | b' ' | b'/')
        {
            pos += 6;
            if let Some(encoding) = prescan_meta(b, &mut pos)? {
                return Some(encoding);
            }
        } else if rest[0] == b'<'
            && (rest.get(1).is_some_and(u8::is_ascii_alphabetic)
                || (rest.get(1) == Some(&b'/') && rest.get(2).is_some_and(u8::is_ascii_alphabetic)))
        {
            pos += rest
                .iter()
                .position(|&c| matches!(c, b'\t' | b'\n' | b'\x0C' | b'\r' | b' ' | b'>'))?;
            while prescan_attribute(b, &mut pos)?.is_some() {}
        } else if rest.starts_with(b"<!") || rest.starts_with(b"</") || rest.starts_with(b"<?") {
            pos += find_byte(b'>', rest)?;
        }
        pos += 1;
    }
    None
}

/// The attributes of a `<meta` tag in the prescan; `Some(None)` if it declares no usable
/// encoding, `None` at the end of the input.
fn prescan_meta(b: &[u8], pos: &mut usize) -> Option<Option<&'static Encoding>> {
    let (mut seen_http_equiv, mut seen_content, mut seen_charset) = (false, false, false);
    let mut got_pragma = false;
    let mut need_pragma = None;
    // `None`: not set; `Some(None)`: set to a label that names no encoding.
    let mut charset: Option<Option<&'static Encoding>> = None;
    while let Some((name, value)) = prescan_attribute(b, pos)? {
        if name.eq_ignore_ascii_case(b"http-equiv") && !seen_http_equiv {
            seen_http_equiv = true;
            got_pragma = value.eq_ignore_ascii_case(b"content-type");
        } else if name.eq_ignore_ascii_case(b"content") && !seen_content {
            seen_content = true;
            if charset.is_none()
                && let Some(label) = charset_from_meta_content(value)
            {
                charset = Some(Encoding::for_label(label));
                need_pragma = Some(true);
            }
        } else if name.eq_ignore_ascii_case(b"charset") && !seen_charset {
            seen_charset = true;
            charset = Some(Encoding::for_label(value));
            need_pragma = Some(false);
        }
    }
    let usable = match need_pragma {
        None => false,
        Some(need) => !need || got_pragma,
    };
    Some(match charset {
        Some(Some(encoding)) if usable => Some(if encoding == UTF_16BE || encoding == UTF_16LE {
            UTF_8
        } else if encoding == X_USER_DEFINED {
            WINDOWS_1252
        } else {
            encoding
        }),
        _ => None,
    })
}

/// The standard's "get an attribute" for the prescan: the next attribute's name and value
/// (compared ASCII case-insensitively by the caller), `Some(None)` at the tag's `>`, `None`
/// at the end of the input.
fn prescan_attribute<'b>(b: &'b [u8], pos: &mut usize) -> Option<Option<(&'b [u8], &'b [u8])>> {
    while is_space(*b.get(*pos)?) || b[*pos] == b'/' {
        *pos += 1;
    }
    if b[*pos] == b'>' {
        return Some(None);
    }
    let name_start = *pos;
    loop {
        let c = *b.get(*pos)?;
        if c == b'=' && *pos > name_start {
            break;
        }
        if is_space(c) {
            let name = &b[name_start..*pos];
            while is_space(*b.get(*pos)?) {
                *pos += 1;
            }
            if b[*pos] != b'=' {
                return Some(Some((name, &[])));
            }
            break;
        }
        if c == b'/' || c == b'>' {
            return Some(Some((&b[name_start..*pos], &[])));
        }
        *pos += 1;
    }
    let name = &b[name_start..*pos];
    // Past the `=`.
    *pos += 1;
    while is_space(*b.get(*pos)?) {
        *pos += 1;
    }
    let c = b[*pos];
    if c == b'"' || c == b'\'' {
        let start = *pos + 1;
        let len = find_byte(c, b.get(start..)?)?;
        *pos = start + len + 1;
        return Some(Some((name, &b[start..start + len])));
    }
    if c == b'>' {
        return Some(Some((name, &[])));
    }
    let start = *pos;
    loop {
        let c = *b.get(*pos)?;
        if is_space(c) || c == b'>' {
            return Some(Some((name, &b[start..*pos])));
        }
        *pos += 1;
    }
}

/// The standard's "extract a character encoding from a meta element": the label after
/// `charset=` in a `content` value.
fn charset_from_meta_content(content: &[u8]) -> Option<&[u8]> {
    let is_space = |c: &u8| is_space(*c);
    let mut pos = 0;
    loop {
        pos += content
            .get(pos..)?
            .windows(7)
            .position(|w| w.eq_ignore_ascii_case(b"charset"))?
            + 7;
        while content.get(pos).is_some_and(is_space) {
            pos += 1;
        }
        if content.get(pos) == Some(&b'=') {
            pos += 1;
            break;
        }
    }
    while content.get(pos).is_some_and(is_space) {
        pos += 1;
    }
    let rest = &content[pos..];
    match *rest.first()? {
        q @ (b'"' | b'\'') => {
            let len = find_byte(q, &rest[1..])?;
            Some(&rest[1..1 + len])
        }
        _ => {
            let len = rest
                .iter()
                .position(|c| is_space(c) || *c == b';')
                .unwrap_or(rest.len());
            Some(&rest[..len])
        }
    }
}
