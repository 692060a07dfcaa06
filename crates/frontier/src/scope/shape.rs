//! URL shapes: what a calendar's pages have in common. A URL's shape is its host, its path
//! with every run of digits (and every long hex token: ids, hashes) generalized, and the
//! names of its query parameters without their values. `/cal/2026/7` and `/cal/2031/12`
//! have one shape; `/book/ch03-02-data-types.html` and `/book/ch03-03-how-functions-work.html`
//! do not.

use url::Url;

/// Hex tokens at least this long are ids or hashes, generalized like digits.
const HEX_ID: usize = 8;

/// What the shape of a URL is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Parts<'a> {
    /// The host as written in the URL ([`Url::host_str`]).
    pub(crate) host: Option<&'a str>,
    /// The port, if not the scheme's default.
    pub(crate) port: Option<u16>,
    /// The path.
    pub(crate) path: &'a str,
    /// The query, without its `?`.
    pub(crate) query: Option<&'a str>,
}

impl<'a> Parts<'a> {
    /// The parts of a parsed URL.
    pub(crate) fn of(url: &'a Url) -> Parts<'a> {
        Parts {
            host: url.host_str(),
            port: url.port(),
            path: url.path(),
            query: url.query(),
        }
    }
}

/// Whether two URLs have the same shape. Allocates: asked only of links deeper than a
/// limit, a small share of a crawl.
pub(crate) fn same_shape(a: &Parts<'_>, b: &Parts<'_>) -> bool {
    a.host == b.host
        && a.port == b.port
        && generalized(a.path) == generalized(b.path)
        && query_names(a.query).eq(query_names(b.query))
}

/// The path with each long hex token as `#`, and each run of digits as `#`.
fn generalized(path: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(path.len());
    let bytes = path.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        let len = bytes[at..]
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric())
            .count();
        if len == 0 {
            out.push(bytes[at]);
            at += 1;
            continue;
        }
        let token = &bytes[at..at + len];
        let hex_id = len >= HEX_ID
            && token.iter().all(u8::is_ascii_hexdigit)
            && token.iter().any(u8::is_ascii_digit);
        if hex_id {
            out.push(b'#');
        } else {
            for &byte in token {
                if !byte.is_ascii_digit() {
                    out.push(byte);
                } else if out.last() != Some(&b'#') {
                    out.push(b'#');
                }
            }
        }
        at += len;
    }
    out
}

/// The query's parameter names, in order (canonical URLs have them sorted).
fn query_names(query: Option<&str>) -> impl Iterator<Item = &str> {
    query
        .into_iter()
        .flat_map(|q| q.split('&'))
        .map(|pair| pair.split_once('=').map_or(pair, |(name, _)| name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same(a: &str, b: &str) -> bool {
        let (a, b) = (Url::parse(a).unwrap(), Url::parse(b).unwrap());
        same_shape(&Parts::of(&a), &Parts::of(&b))
    }

    #[test]
    fn numbers_ids_and_query_values_are_generalized() {
        assert!(same(
            "http://a.example/cal/2026/7",
            "http://a.example/cal/2031/12"
        ));
        assert!(same(
            "http://a.example/blog/page/2",
            "http://a.example/blog/page/3"
        ));
        assert!(same(
            "http://a.example/p?month=2026-07&y=1",
            "http://a.example/p?month=x&y=2"
        ));
        assert!(same(
            "http://a.example/item/9f86d081884c7d65/view",
            "http://a.example/item/2c26b46b68ffc68f/view"
        ));
        assert!(same(
            "http://a.example/ch03.html",
            "http://a.example/ch11.html"
        ));
    }

    #[test]
    fn names_hosts_and_parameters_tell_shapes_apart() {
        assert!(!same(
            "http://a.example/book/ch03-02-data-types.html",
            "http://a.example/book/ch03-03-how-functions-work.html"
        ));
        assert!(!same("http://a.example/cal/1", "http://b.example/cal/1"));
        assert!(!same(
            "http://a.example/cal/1",
            "http://a.example:8080/cal/1"
        ));
        assert!(!same("http://a.example/p?a=1", "http://a.example/p?b=1"));
        assert!(!same("http://a.example/cal/1", "http://a.example/cal/1/2"));
        // Short hex words are words: `cafe` and `beef` are not ids.
        assert!(!same("http://a.example/cafe", "http://a.example/beef"));
    }
}
