//! Percent-escape normalization for paths and queries (RFC 3986, sections 2.1 to 2.4 and 6.2.2).
//!
//! After this pass a path or query has exactly one spelling per byte: unreserved characters
//! appear as themselves, everything a URI may not carry raw appears as an escape with
//! upper-case hex, and the reserved characters keep whichever form they were written in,
//! because `/` and `%2F` (or `&` and `%26`) mean different things to a server.

/// Which component is being normalized: each allows a slightly different set of raw bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Component {
    Path,
    Query,
}

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";

/// `ALPHA / DIGIT / "-" / "." / "_" / "~"`: escaping them never changes meaning, so the
/// escaped spelling is decoded.
pub(crate) fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// The bytes the component may carry unescaped besides the unreserved ones: RFC 3986's
/// sub-delims, `:` and `@` (`pchar`), `/`, and `?` in queries.
///
/// The apostrophe is left out of queries because the `url` crate escapes it there (the WHATWG
/// special-query set) and would re-escape a raw one when the query is set back; keeping it
/// escaped makes this pass and the parser agree, which idempotence needs.
fn is_allowed_raw(b: u8, component: Component) -> bool {
    match b {
        b'!' | b'$' | b'&' | b'(' | b')' | b'*' | b'+' | b',' | b';' | b'=' | b':' | b'@'
        | b'/' => true,
        b'\'' => component == Component::Path,
        b'?' => component == Component::Query,
        _ => is_unreserved(b),
    }
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

fn push_escaped(out: &mut String, b: u8) {
    out.push('%');
    out.push(char::from(HEX_UPPER[usize::from(b >> 4)]));
    out.push(char::from(HEX_UPPER[usize::from(b & 0x0F)]));
}

/// Whether [`normalize`] would give `input` back as it is because it holds no escape and no
/// byte to escape: the common case, told without allocating.
pub(crate) fn is_plain(input: &str, component: Component) -> bool {
    input
        .bytes()
        .all(|b| b != b'%' && is_allowed_raw(b, component))
}

/// Normalizes every escape in `input` and escapes what may not appear raw.
///
/// * `%XX` of an unreserved character is decoded: `%7E` and `%7e` become `~`.
/// * Any other `%XX` keeps its escape with upper-case hex: `%2f` becomes `%2F`.
/// * A `%` that does not start an escape is itself escaped (`100%` becomes `100%25`): servers
///   read it as a literal percent sign, which is what `%25` says unambiguously.
/// * A byte the component may not carry raw (space, `"`, `<`, `>`, `[`, `]`, `^`, `` ` ``,
///   `{`, `|`, `}`, `\`, controls, non-ASCII) is escaped. The `url` parser already escapes
///   most of them, but not the same set in every component, and a raw `|` and its escape
///   `%7C` reach a server as the same byte.
///
/// Linear in the input; the output is ASCII.
pub(crate) fn normalize(input: &str, component: Component) -> String {
    let bytes = input.as_bytes();
    let mut out = String::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%'
            && let Some(&[hi, lo]) = bytes.get(i + 1..i + 3)
            && let (Some(hi), Some(lo)) = (hex_value(hi), hex_value(lo))
        {
            let decoded = hi << 4 | lo;
            if is_unreserved(decoded) {
                out.push(char::from(decoded));
            } else {
                push_escaped(&mut out, decoded);
            }
            i += 3;
            continue;
        }
        if b != b'%' && is_allowed_raw(b, component) {
            out.push(char::from(b));
        } else {
            push_escaped(&mut out, b);
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{Component, is_plain, normalize};

    proptest::proptest! {
        /// The shortcut the canonicalizer takes for plain paths: only where normalizing
        /// would change nothing, and on every text of unreserved and raw-allowed bytes.
        #[test]
        fn plain_text_is_what_normalizing_leaves_alone(
            input in "[a-zA-Z0-9._~!$&'()*+,;=:@/?%|^ \\[\\]\"<>{}\t\u{0}\u{7f}\u{e9}-]{0,24}",
        ) {
            for component in [Component::Path, Component::Query] {
                let unchanged = normalize(&input, component) == input;
                if is_plain(&input, component) {
                    proptest::prop_assert!(unchanged, "{:?} {:?}", input, component);
                } else if !input.contains('%') {
                    proptest::prop_assert!(!unchanged, "{:?} {:?}", input, component);
                }
            }
        }
    }

    #[test]
    fn decodes_unreserved_and_uppercases_the_rest() {
        assert_eq!(normalize("/%7e%41%2d%2f%3a", Component::Path), "/~A-%2F%3A");
    }

    #[test]
    fn stray_percent_is_escaped() {
        assert_eq!(normalize("100%", Component::Query), "100%25");
        assert_eq!(normalize("%zz%4", Component::Query), "%25zz%254");
    }

    #[test]
    fn disallowed_bytes_are_escaped() {
        assert_eq!(normalize("a|b^c[d]", Component::Path), "a%7Cb%5Ec%5Bd%5D");
        assert_eq!(normalize("ü", Component::Path), "%C3%BC");
        assert_eq!(normalize("'?", Component::Path), "'%3F");
        assert_eq!(normalize("'?", Component::Query), "%27?");
    }

    #[test]
    fn normalized_output_is_a_fixed_point() {
        for s in ["/a%2fb%7E%zz", "q=%26&r=%3d|x", "%%%", "%C3%bc"] {
            for c in [Component::Path, Component::Query] {
                let once = normalize(s, c);
                assert_eq!(normalize(&once, c), once, "{s:?}");
            }
        }
    }
}
