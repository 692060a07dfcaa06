//! The URLs a stylesheet needs: its `url()` values and `@import` strings, read with as much
//! of CSS's tokenizer (CSS Syntax Level 3) as tells them from comments, strings and other
//! functions.

use std::borrow::Cow;

use crate::scan::find_seq;

/// Calls `found` with each URL `css` needs, as written (CSS escapes decoded, not yet
/// resolved), in order: every `url(...)` (quoted or not) outside comments and strings, and
/// every `@import "..."`. With `imports` false (a `style` attribute, which holds
/// declarations only) `@import` is not read.
///
/// Linear in `css`'s length; never panics.
pub(crate) fn urls(css: &str, imports: bool, mut found: impl FnMut(Cow<'_, str>)) {
    let b = css.as_bytes();
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        match c {
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i = find_seq(b"*/", &b[i + 2..]).map_or(b.len(), |at| i + 2 + at + 2);
            }
            b'"' | b'\'' => i = string(css, i).1,
            // An escaped character is part of a name, never a delimiter.
            b'\\' => i += escape_len(b, i),
            b'@' if imports && keyword(b, i + 1, b"import") => {
                i = skip_space_and_comments(b, i + 7);
                if matches!(b.get(i), Some(b'"' | b'\'')) {
                    let (value, next) = string(css, i);
                    found(value);
                    i = next;
                }
                // `@import url(...)` is read by the `url(` case next.
            }
            b'u' | b'U' if (i == 0 || !is_name_byte(b[i - 1])) && keyword(b, i, b"url(") => {
                let (value, next) = url(css, i + 4);
                if let Some(value) = value {
                    found(value);
                }
                i = next;
            }
            _ => i += 1,
        }
    }
}

/// Whether `word` (ASCII, lowercase) is at `i`, ASCII case-insensitively, and, if it is a
/// name, not followed by more of a name (`@importx` is another at-rule).
fn keyword(b: &[u8], i: usize, word: &[u8]) -> bool {
    let Some(there) = b.get(i..i + word.len()) else {
        return false;
    };
    there.eq_ignore_ascii_case(word)
        && (word.ends_with(b"(") || !b.get(i + word.len()).is_some_and(|&c| is_name_byte(c)))
}

/// A byte of a CSS name (an identifier's letters, digits, `-`, `_`, non-ASCII, an escape).
fn is_name_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'\\') || c >= 0x80
}

fn is_css_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c')
}

/// The length of the UTF-8 character whose first byte is `c` (1 for a stray byte: the text
/// is a `str`, so there is none).
fn utf8_len(c: u8) -> usize {
    match c {
        0xf0.. => 4,
        0xe0.. => 3,
        0xc0.. => 2,
        _ => 1,
    }
}

/// The length of the escape whose `\\` is at `i`: up to six hex digits and one whitespace
/// after them, or the one character after it.
fn escape_len(b: &[u8], i: usize) -> usize {
    let hex = b
        .get(i + 1..)
        .unwrap_or_default()
        .iter()
        .take(6)
        .take_while(|c| c.is_ascii_hexdigit())
        .count();
    if hex == 0 {
        return 1 + b.get(i + 1).map_or(0, |&c| utf8_len(c));
    }
    1 + hex + usize::from(b.get(i + 1 + hex).is_some_and(|&c| is_css_space(c)))
}

fn skip_space_and_comments(b: &[u8], mut i: usize) -> usize {
    loop {
        while b.get(i).is_some_and(|&c| is_css_space(c)) {
            i += 1;
        }
        if b.get(i..i + 2) == Some(b"/*") {
            i = find_seq(b"*/", &b[i + 2..]).map_or(b.len(), |at| i + 2 + at + 2);
        } else {
            return i;
        }
    }
}

/// A string token whose quote is at `start`: its value (escapes decoded) and the position
/// after it. A newline ends it unclosed (a bad string, whose value is not used by the
/// caller's rules any differently), as does the end of the input.
fn string(css: &str, start: usize) -> (Cow<'_, str>, usize) {
    let b = css.as_bytes();
    let quote = b[start];
    let mut i = start + 1;
    let mut plain = true;
    while let Some(&c) = b.get(i) {
        match c {
            c if c == quote => return (unescape(&css[start + 1..i], plain), i + 1),
            b'\n' | b'\r' | b'\x0c' => return (unescape(&css[start + 1..i], plain), i),
            b'\\' => {
                plain = false;
                i += escape_len(b, i);
            }
            _ => i += 1,
        }
    }
    let end = b.len();
    (unescape(&css[start + 1..end], plain), end)
}

/// The argument of `url(` whose text starts at `start`: the URL (`None` for a bad one,
/// which CSS ignores) and the position after its `)`.
fn url(css: &str, start: usize) -> (Option<Cow<'_, str>>, usize) {
    let b = css.as_bytes();
    let mut i = start;
    while b.get(i).is_some_and(|&c| is_css_space(c)) {
        i += 1;
    }
    if matches!(b.get(i), Some(b'"' | b'\'')) {
        // A function whose argument is a string: `url("a.png")`.
        let (value, next) = string(css, i);
        let close = skip_space_and_comments(b, next);
        return if b.get(close) == Some(&b')') {
            (Some(value), close + 1)
        } else {
            (None, close)
        };
    }
    let from = i;
    let mut plain = true;
    while let Some(&c) = b.get(i) {
        match c {
            b')' => return (Some(unescape(&css[from..i], plain)), i + 1),
            c if is_css_space(c) => {
                let value = unescape(&css[from..i], plain);
                while b.get(i).is_some_and(|&c| is_css_space(c)) {
                    i += 1;
                }
                return match b.get(i) {
                    Some(b')') => (Some(value), i + 1),
                    None => (Some(value), i),
                    _ => (None, bad_url_end(b, i)),
                };
            }
            b'"' | b'\'' | b'(' | 0..=0x08 | 0x0b | 0x0e..=0x1f | 0x7f => {
                return (None, bad_url_end(b, i));
            }
            b'\\' => {
                plain = false;
                i += escape_len(b, i);
            }
            _ => i += 1,
        }
    }
    (Some(unescape(&css[from..], plain)), b.len())
}

/// The remnants of a bad URL: up to and including the next `)` not escaped.
fn bad_url_end(b: &[u8], mut i: usize) -> usize {
    while let Some(&c) = b.get(i) {
        match c {
            b')' => return i + 1,
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
    b.len()
}

/// `text` with its CSS escapes decoded (`plain`: it has none): `\` and up to six hex digits
/// (and one whitespace after them) is that code point (U+FFFD for zero, a surrogate or past
/// U+10FFFF); `\` and a newline is nothing; `\` and any other character is that character.
fn unescape(text: &str, plain: bool) -> Cow<'_, str> {
    if plain {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.peek().copied() {
            None => out.push('\u{FFFD}'),
            Some('\n' | '\r' | '\x0c') => {
                chars.next();
            }
            Some(h) if h.is_ascii_hexdigit() => {
                let mut code = 0u32;
                for _ in 0..6 {
                    match chars.peek().and_then(|c| c.to_digit(16)) {
                        Some(d) => {
                            code = code * 16 + d;
                            chars.next();
                        }
                        None => break,
                    }
                }
                if chars.peek().is_some_and(|&c| c.is_ascii_whitespace()) {
                    chars.next();
                }
                let decoded = char::from_u32(code).filter(|&c| c != '\0');
                out.push(decoded.unwrap_or('\u{FFFD}'));
            }
            Some(other) => {
                out.push(other);
                chars.next();
            }
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(css: &str, imports: bool) -> Vec<String> {
        let mut out = Vec::new();
        urls(css, imports, |url| out.push(url.into_owned()));
        out
    }

    #[test]
    fn reads_urls_and_imports_as_css_tokenizes_them() {
        let css = r#"
            @import "base.css";
            @IMPORT url(print.css) print;
            @import 'single.css' screen;
            body { background: URL( "bg.png" ) no-repeat; }
            .a { background-image: url(  a\ b.png  ) }
            .b::after { content: "url(not-a-url.png)"; }
            /* url(comment.png) @import "comment.css"; */
            .c { mask: myurl(other.png); src: url('font.woff2') format("woff2"); }
            .d { background: url(\31 23.png) }
            .e { background: url(bad url.png) } .f { background: url(after-bad.png) }
            @importer "not-an-import.css";
        "#;
        assert_eq!(
            all(css, true),
            [
                "base.css",
                "print.css",
                "single.css",
                "bg.png",
                "a b.png",
                "font.woff2",
                "123.png",
                "after-bad.png",
            ]
        );
        assert_eq!(all(css, false)[..2], ["print.css", "bg.png"]);
    }

    #[test]
    fn hostile_stylesheets_end_without_panics() {
        for css in [
            "url(",
            "url(\"",
            "url(a\\",
            "@import",
            "@import '",
            "/*",
            "\\",
            "url(\\\u{e9}.png)",
            "'\\\u{1F600}",
            "url( a.png",
            "u",
            "url(a b",
        ] {
            let _ = all(css, true);
        }
        assert_eq!(all("url(\\\u{e9}.png)", true), ["\u{e9}.png"]);
        assert_eq!(all("url( a.png", true), ["a.png"]);
    }
}
