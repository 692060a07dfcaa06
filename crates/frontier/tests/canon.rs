//! Canonicalization: one test per rule, equivalent spellings, rejections, relative links, and
//! properties (idempotence, no panics) over arbitrary input.

use std::time::{Duration, Instant};

use frontier::{Canonicalizer, RejectKind, Url};
use proptest::prelude::*;

/// The canonical form under the default configuration; panics with the rejection otherwise.
fn canon(input: &str) -> String {
    canon_with(&Canonicalizer::new(), input)
}

fn canon_with(c: &Canonicalizer, input: &str) -> String {
    match c.canonicalize(input) {
        Ok(url) => url.as_str().to_owned(),
        Err(err) => panic!("{input:?} rejected: {err}"),
    }
}

fn rejection(input: &str) -> RejectKind {
    match Canonicalizer::new().canonicalize(input) {
        Ok(url) => panic!("{input:?} accepted as {url}"),
        Err(err) => err.kind().clone(),
    }
}

// ---- One test per rule, in the order of the rule table. ----

#[test]
fn scheme_is_lowercased() {
    assert_eq!(canon("HTTP://example.com/"), "http://example.com/");
    assert_eq!(canon("hTtPs://example.com/"), "https://example.com/");
}

#[test]
fn only_http_and_https_are_accepted() {
    for (input, scheme) in [
        ("mailto:someone@example.com", "mailto"),
        ("javascript:alert(1)", "javascript"),
        ("JavaScript:void(0)", "javascript"),
        ("data:text/html,<p>hi</p>", "data"),
        ("ftp://example.com/file", "ftp"),
        ("file:///etc/passwd", "file"),
        ("tel:+15555550100", "tel"),
        ("ws://example.com/socket", "ws"),
        ("wss://example.com/socket", "wss"),
    ] {
        assert_eq!(
            rejection(input),
            RejectKind::UnsupportedScheme(scheme.into()),
            "{input}"
        );
    }
}

#[test]
fn host_is_lowercased() {
    assert_eq!(canon("http://Example.COM/"), "http://example.com/");
    // Full-width letters are mapped too (UTS 46), as browsers do.
    assert_eq!(canon("http://ＥＸＡＭＰＬＥ.com/"), "http://example.com/");
}

#[test]
fn idn_host_becomes_punycode() {
    assert_eq!(
        canon("http://bücher.example/"),
        "http://xn--bcher-kva.example/"
    );
    assert_eq!(
        canon("http://BÜCHER.example/"),
        "http://xn--bcher-kva.example/"
    );
    assert_eq!(
        canon("http://xn--bcher-kva.example/"),
        "http://xn--bcher-kva.example/"
    );
    assert_eq!(canon("http://例え.jp/"), "http://xn--r8jz45g.jp/");
}

#[test]
fn trailing_dot_is_removed_from_host() {
    assert_eq!(canon("http://example.com./"), "http://example.com/");
    assert_eq!(canon("http://example.com../"), "http://example.com/");
    assert_eq!(
        canon("http://example.com.:8080/a"),
        "http://example.com:8080/a"
    );
    assert_eq!(
        canon("http://bücher.example./"),
        "http://xn--bcher-kva.example/"
    );
    // An address with one trailing dot is read as IPv4 by the parser; with two, only once
    // the dots are gone, with the same result.
    assert_eq!(canon("http://1.2.3.4./"), "http://1.2.3.4/");
    assert_eq!(canon("http://1.2.3.4../"), "http://1.2.3.4/");
}

#[test]
fn ip_addresses_take_their_standard_form() {
    assert_eq!(canon("http://[0:0:0:0:0:0:0:1]/"), "http://[::1]/");
    assert_eq!(
        canon("http://[::FFFF:7F00:1]:8080/"),
        "http://[::ffff:7f00:1]:8080/"
    );
    assert_eq!(canon("http://0x7f.1/"), "http://127.0.0.1/");
    assert_eq!(canon("http://2130706433/"), "http://127.0.0.1/");
    assert_eq!(canon("http://127.000.000.001/"), "http://127.0.0.1/");
}

#[test]
fn default_port_is_removed() {
    assert_eq!(canon("http://example.com:80/"), "http://example.com/");
    assert_eq!(canon("https://example.com:443/"), "https://example.com/");
    assert_eq!(canon("http://example.com:/"), "http://example.com/");
    assert_eq!(canon("http://example.com:0080/"), "http://example.com/");
    // Other ports, including the other scheme's default, stay.
    assert_eq!(canon("http://example.com:443/"), "http://example.com:443/");
    assert_eq!(canon("https://example.com:80/"), "https://example.com:80/");
    assert_eq!(canon("http://example.com:8080"), "http://example.com:8080/");
}

#[test]
fn fragment_is_removed() {
    assert_eq!(canon("http://example.com/a#top"), "http://example.com/a");
    assert_eq!(
        canon("http://example.com/a?b=1#top"),
        "http://example.com/a?b=1"
    );
    assert_eq!(canon("http://example.com/a#"), "http://example.com/a");
    assert_eq!(
        canon("http://example.com/#!/app/route"),
        "http://example.com/"
    );
}

#[test]
fn empty_path_becomes_slash() {
    assert_eq!(canon("http://example.com"), "http://example.com/");
    assert_eq!(canon("http://example.com?a=1"), "http://example.com/?a=1");
    assert_eq!(
        canon("http://example.com:8080#x"),
        "http://example.com:8080/"
    );
}

#[test]
fn dot_segments_are_resolved() {
    assert_eq!(
        canon("http://example.com/a/./b/../c"),
        "http://example.com/a/c"
    );
    assert_eq!(canon("http://example.com/../../a"), "http://example.com/a");
    assert_eq!(canon("http://example.com/a/b/.."), "http://example.com/a/");
    assert_eq!(canon("http://example.com/a/."), "http://example.com/a/");
    // Escaped dots are dots (WHATWG), in either case.
    assert_eq!(
        canon("http://example.com/a/%2e%2E/b/%2e/c"),
        "http://example.com/b/c"
    );
    assert_eq!(canon("http://example.com/a/.%2e/b"), "http://example.com/b");
    // Backslashes are slashes in http(s) URLs, as browsers read them.
    assert_eq!(
        canon("http://example.com/a\\b\\..\\c"),
        "http://example.com/a/c"
    );
    // Not dot segments: dots inside a name.
    assert_eq!(
        canon("http://example.com/a../...b"),
        "http://example.com/a../...b"
    );
}

#[test]
fn unreserved_escapes_are_decoded() {
    assert_eq!(
        canon("http://example.com/%7Euser/%41%62%2D%5f%2e%7e%30"),
        "http://example.com/~user/Ab-_.~0"
    );
    assert_eq!(
        canon("http://example.com/?%6B%65%79=%76%61%6c"),
        "http://example.com/?key=val"
    );
}

#[test]
fn escape_hex_is_uppercased() {
    assert_eq!(
        canon("http://example.com/a%2fb%c3%bc?q=%e2%82%ac&r=%3d"),
        "http://example.com/a%2Fb%C3%BC?q=%E2%82%AC&r=%3D"
    );
}

#[test]
fn reserved_escapes_stay_encoded() {
    // `%2F` in a path segment is data, not a separator, and dot resolution must not see it.
    assert_eq!(
        canon("http://example.com/a%2Fb"),
        "http://example.com/a%2Fb"
    );
    assert_eq!(
        canon("http://example.com/a%2F..%2Fb/"),
        "http://example.com/a%2F..%2Fb/"
    );
    // `%26` and `%3D` are data inside one parameter: the query is not split on them, and
    // sorting moves the whole parameter.
    assert_eq!(
        canon("http://example.com/?z=1&a=%26b%3D2"),
        "http://example.com/?a=%26b%3D2&z=1"
    );
    assert_eq!(
        canon("http://example.com/?k%3Dv=1"),
        "http://example.com/?k%3Dv=1"
    );
    for reserved in [
        "%3A", "%40", "%3F", "%23", "%5B", "%5D", "%21", "%24", "%2B", "%2C", "%3B",
    ] {
        let url = format!("http://example.com/x{reserved}y?q=x{reserved}y");
        assert_eq!(canon(&url), url);
    }
}

#[test]
fn non_ascii_is_escaped_as_utf8() {
    assert_eq!(
        canon("http://example.com/ü?ü=€"),
        "http://example.com/%C3%BC?%C3%BC=%E2%82%AC"
    );
}

#[test]
fn disallowed_characters_are_escaped() {
    // The parser escapes some of these itself but leaves `|`, `^`, `[`, `]` (and in queries
    // also `{`, `}`, `` ` ``, `\`) raw; a server reads the raw and the escaped byte alike.
    assert_eq!(
        canon("http://example.com/a|b^c[d]{e}`f g\"h<i>"),
        "http://example.com/a%7Cb%5Ec%5Bd%5D%7Be%7D%60f%20g%22h%3Ci%3E"
    );
    assert_eq!(
        canon("http://example.com/?q=a|b^c[]{}`\\ \"<>'"),
        "http://example.com/?q=a%7Cb%5Ec%5B%5D%7B%7D%60%5C%20%22%3C%3E%27"
    );
}

#[test]
fn stray_percent_is_escaped() {
    assert_eq!(
        canon("http://example.com/100%/x%zz?off=100%&y=%4"),
        "http://example.com/100%25/x%25zz?off=100%25&y=%254"
    );
}

#[test]
fn session_id_path_parameters_are_removed() {
    assert_eq!(
        canon("http://example.com/a;jsessionid=0A1B2C"),
        "http://example.com/a"
    );
    assert_eq!(
        canon("http://example.com/a;JSESSIONID=0A1B2C?p=1"),
        "http://example.com/a?p=1"
    );
    assert_eq!(
        canon("http://example.com/d;jsessionid=1/e.jsp"),
        "http://example.com/d/e.jsp"
    );
    assert_eq!(
        canon("http://example.com/;jsessionid=1"),
        "http://example.com/"
    );
    // Other path parameters stay, in place.
    assert_eq!(
        canon("http://example.com/a;v=2;jsessionid=1;lang=en"),
        "http://example.com/a;v=2;lang=en"
    );
    // Removing the parameter can leave a `..`, which is then resolved, as by servers that
    // strip path parameters.
    assert_eq!(
        canon("http://example.com/a/..;jsessionid=1/b"),
        "http://example.com/b"
    );
}

#[test]
fn session_id_query_parameters_are_removed() {
    for input in [
        "http://example.com/a?p=2&PHPSESSID=9f86d081",
        "http://example.com/a?jsessionid=1&p=2",
        "http://example.com/a?sid=1&p=2",
        "http://example.com/a?SessionId=1&p=2",
        "http://example.com/a?session_id=&p=2",
        "http://example.com/a?ASPSESSIONID=1&p=2",
        "http://example.com/a?ASPSESSIONIDQQGGQGPC=MBHPJKFBAFNNHNNDPLCHCEFB&p=2",
        "http://example.com/a?CFID=12&CFTOKEN=34&p=2",
        "http://example.com/a?p=2&sid",
        // Matched after escape normalization: `%73id` is `sid`.
        "http://example.com/a?%73id=1&p=2",
    ] {
        assert_eq!(canon(input), "http://example.com/a?p=2", "{input}");
    }
    // Names that merely contain a session name stay.
    assert_eq!(
        canon("http://example.com/a?sids=1&side=2&xsid=3"),
        "http://example.com/a?side=2&sids=1&xsid=3"
    );
    // The list is configurable.
    let custom = Canonicalizer::builder()
        .session_params(["token", "s_*"])
        .build();
    assert_eq!(
        canon_with(&custom, "http://example.com/a;token=1?sid=1&S_ID=2&Token=3"),
        "http://example.com/a?sid=1"
    );
    let none = Canonicalizer::builder()
        .session_params(Vec::<String>::new())
        .build();
    assert_eq!(
        canon_with(&none, "http://example.com/a;jsessionid=1?sid=2"),
        "http://example.com/a;jsessionid=1?sid=2"
    );
}

#[test]
fn tracking_parameters_are_removed_only_when_asked() {
    let input = "http://example.com/a?utm_source=news&UTM_Medium=email&utm_campaign=x&gclid=1\
                 &fbclid=2&msclkid=3&mc_cid=4&mc_eid=5&_ga=6&yclid=7&id=42";
    let removing = Canonicalizer::builder().remove_tracking(true).build();
    assert_eq!(canon_with(&removing, input), "http://example.com/a?id=42");
    // Off by default.
    assert!(canon(input).contains("utm_source=news"));
    // The list is configurable.
    let custom = Canonicalizer::builder()
        .remove_tracking(true)
        .tracking_params(["ref"])
        .build();
    assert_eq!(
        canon_with(&custom, "http://example.com/?ref=hn&utm_source=x"),
        "http://example.com/?utm_source=x"
    );
}

#[test]
fn query_is_sorted_by_key_then_value() {
    assert_eq!(
        canon("http://example.com/?b=2&a=1&a=0&c"),
        "http://example.com/?a=0&a=1&b=2&c"
    );
    // By key first: `a=9` before `a-b=1`, although `=` sorts after `-` as text.
    assert_eq!(
        canon("http://example.com/?a-b=1&a=9"),
        "http://example.com/?a=9&a-b=1"
    );
    // A bare key before an empty value before a value.
    assert_eq!(
        canon("http://example.com/?a=1&a=&a"),
        "http://example.com/?a&a=&a=1"
    );
    let unsorted = Canonicalizer::builder().sort_query(false).build();
    assert_eq!(
        canon_with(&unsorted, "http://example.com/?b=2&a=1&sid=9"),
        "http://example.com/?b=2&a=1"
    );
}

#[test]
fn empty_parameters_are_dropped() {
    assert_eq!(
        canon("http://example.com/?a=1&&b=2&"),
        "http://example.com/?a=1&b=2"
    );
    assert_eq!(canon("http://example.com/?&a=1"), "http://example.com/?a=1");
}

#[test]
fn empty_query_is_removed() {
    assert_eq!(canon("http://example.com/?"), "http://example.com/");
    assert_eq!(canon("http://example.com/a?#top"), "http://example.com/a");
    assert_eq!(canon("http://example.com/?&&"), "http://example.com/");
    assert_eq!(canon("http://example.com/?sid=1"), "http://example.com/");
    assert_eq!(
        canon("http://example.com/?PHPSESSID=1&jsessionid=2"),
        "http://example.com/"
    );
}

#[test]
fn parameters_without_value_are_kept_as_written() {
    assert_eq!(
        canon("http://example.com/?a=&b"),
        "http://example.com/?a=&b"
    );
    assert_eq!(canon("http://example.com/?=x"), "http://example.com/?=x");
    assert_ne!(
        canon("http://example.com/?a"),
        canon("http://example.com/?a=")
    );
}

#[test]
fn plus_in_query_is_kept() {
    // Only form decoding reads `+` as a space; `%20` and `+` stay distinct.
    assert_eq!(
        canon("http://example.com/?q=a+b"),
        "http://example.com/?q=a+b"
    );
    assert_ne!(
        canon("http://example.com/?q=a+b"),
        canon("http://example.com/?q=a%20b")
    );
}

/// Regression guard: a popular Rust crawler lower-cases whole URLs, merging `/A` and `/a`,
/// which most servers serve as different pages.
#[test]
fn path_case_is_kept() {
    assert_eq!(
        canon("http://example.com/A/b/C"),
        "http://example.com/A/b/C"
    );
    assert_ne!(canon("http://example.com/A"), canon("http://example.com/a"));
    assert_ne!(
        canon("http://example.com/?Q=A"),
        canon("http://example.com/?q=a")
    );
}

#[test]
fn userinfo_is_kept() {
    assert_eq!(
        canon("http://user:pw@example.com/"),
        "http://user:pw@example.com/"
    );
    // An empty one is dropped by the parser.
    assert_eq!(canon("http://@example.com/"), "http://example.com/");
}

#[test]
fn host_key_is_host_and_non_default_port() {
    let c = Canonicalizer::new();
    let key = |s: &str| c.canonicalize(s).unwrap().host_key().to_owned();
    assert_eq!(key("http://Example.com/a"), "example.com");
    assert_eq!(key("https://example.com:443/"), "example.com");
    assert_eq!(key("http://example.com:8080/"), "example.com:8080");
    assert_eq!(key("http://u:p@example.com:81/"), "example.com:81");
    assert_eq!(key("http://[::1]/"), "[::1]");
    assert_eq!(key("http://[::1]:8080/"), "[::1]:8080");
    assert_eq!(key("http://bücher.example./"), "xn--bcher-kva.example");
    assert_eq!(key("http://10.0.0.1:80/"), "10.0.0.1");
}

#[test]
fn canonical_exposes_text_bytes_and_url() {
    let url = Canonicalizer::new()
        .canonicalize("http://example.com/a?b=1")
        .unwrap();
    assert_eq!(url.as_bytes(), url.as_str().as_bytes());
    assert_eq!(url.to_string(), url.as_str());
    assert_eq!(AsRef::<[u8]>::as_ref(&url), url.as_bytes());
    assert_eq!(AsRef::<str>::as_ref(&url), url.as_str());
    assert_eq!(url.as_url().as_str(), url.as_str());
    assert_eq!(url.clone().into_url().as_str(), url.as_str());
}

// ---- Equivalent spellings. ----

/// Each pair: two spellings of one page, which must produce one canonical string.
const EQUIVALENT: &[(&str, &str)] = &[
    ("HTTP://EXAMPLE.COM/", "http://example.com/"),
    ("http://example.com", "http://example.com/"),
    ("http://example.com:80/", "http://example.com/"),
    ("https://example.com:443/x", "https://example.com/x"),
    ("http://example.com./", "http://example.com/"),
    ("http://bücher.example/", "http://xn--bcher-kva.example/"),
    (
        "http://BÜCHER.example./",
        "http://xn--bcher-kva.example:80/",
    ),
    ("http://example.com/a#section", "http://example.com/a"),
    ("http://example.com/a/b/../c", "http://example.com/a/c"),
    ("http://example.com/./a/./", "http://example.com/a/"),
    ("http://example.com/%7Euser", "http://example.com/~user"),
    ("http://example.com/%7euser", "http://example.com/~user"),
    ("http://example.com/a%2fb", "http://example.com/a%2Fb"),
    ("http://example.com/caf%c3%a9", "http://example.com/café"),
    ("http://example.com/a b", "http://example.com/a%20b"),
    ("http://example.com/a|b", "http://example.com/a%7cb"),
    ("http://example.com/?q=%e2%82%ac", "http://example.com/?q=€"),
    ("http://example.com/?b=2&a=1", "http://example.com/?a=1&b=2"),
    ("http://example.com/?", "http://example.com/"),
    ("http://example.com/?#", "http://example.com"),
    (
        "http://example.com/x;jsessionid=ABC123",
        "http://example.com/x",
    ),
    (
        "http://example.com/x;JSESSIONID=ABC123?id=1",
        "http://example.com/x?id=1",
    ),
    (
        "http://example.com/x?PHPSESSID=abc&id=1",
        "http://example.com/x?id=1",
    ),
    (
        "http://example.com/x?id=1&sid=abc",
        "http://example.com/x?id=1",
    ),
    (
        "http://example.com/x?ASPSESSIONIDSCQRTBQD=abc&id=1",
        "http://example.com/x?id=1",
    ),
    ("http://example.com/x?id=1&&", "http://example.com/x?id=1"),
    ("http://example.com/?q=100%", "http://example.com/?q=100%25"),
    ("http://[0:0::1]:80/", "http://[::1]/"),
    ("http://0x7f.0.0.1/", "http://127.0.0.1/"),
    ("http://example.com\\a\\b", "http://example.com/a/b"),
    ("  http://example.com/\t\n ", "http://example.com/"),
    ("http://ex%41mple.com/", "http://example.com/"),
    ("http://example.com/%2e%2e/a", "http://example.com/a"),
    ("http://example.com/?%61=1", "http://example.com/?a=1"),
];

#[test]
fn equivalent_spellings_have_one_canonical_form() {
    assert!(EQUIVALENT.len() >= 25);
    for (a, b) in EQUIVALENT {
        assert_eq!(canon(a), canon(b), "{a:?} and {b:?}");
    }
}

#[test]
fn distinct_pages_keep_distinct_forms() {
    for (a, b) in [
        ("http://example.com/a", "http://example.com/A"),
        ("http://example.com/a", "https://example.com/a"),
        ("http://example.com/a", "http://example.com:8080/a"),
        ("http://example.com/a", "http://www.example.com/a"),
        ("http://example.com/a/b", "http://example.com/a%2Fb"),
        ("http://example.com/a", "http://example.com/a/"),
        (
            "http://example.com/?a=1&b=2",
            "http://example.com/?a=1%26b%3D2",
        ),
        ("http://example.com/?a=1", "http://example.com/?a=2"),
        ("http://example.com/?q=a+b", "http://example.com/?q=a%2Bb"),
        ("http://example.com/?a", "http://example.com/?a="),
    ] {
        assert_ne!(canon(a), canon(b), "{a:?} and {b:?}");
    }
}

// ---- Rejections. ----

#[test]
fn unparsable_urls_are_rejected() {
    for input in [
        "",
        "   ",
        "example.com",
        "/relative/path",
        "http://",
        "http://exa mple.com/",
        "http://example.com:99999/",
        "http://example.com:port/",
        "http://[::1/",
        "http://a<b/",
        "https://%/",
    ] {
        let err = Canonicalizer::new().canonicalize(input).unwrap_err();
        assert_eq!(err.kind(), &RejectKind::Unparsable, "{input:?}");
        assert_eq!(err.reason(), "unparsable");
        assert!(err.to_string().starts_with("unparsable URL"), "{err}");
        assert!(std::error::Error::source(&err).is_some());
    }
}

#[test]
fn hosts_of_dots_only_are_rejected() {
    for input in ["http://./", "http://../a", "https://...:8080/"] {
        let err = Canonicalizer::new().canonicalize(input).unwrap_err();
        assert_eq!(err.kind(), &RejectKind::NoHost, "{input:?}");
        assert_eq!(err.reason(), "no_host");
        assert_eq!(err.to_string(), "URL has no host");
    }
}

#[test]
fn unsupported_schemes_are_rejected_with_the_scheme() {
    let err = Canonicalizer::new()
        .canonicalize("FTP://example.com/")
        .unwrap_err();
    assert_eq!(err.kind(), &RejectKind::UnsupportedScheme("ftp".into()));
    assert_eq!(err.reason(), "unsupported_scheme");
    assert_eq!(
        err.to_string(),
        "unsupported scheme \"ftp\": only http and https URLs are crawled"
    );
}

#[test]
fn urls_over_the_length_limit_are_rejected() {
    let c = Canonicalizer::new();
    let at_limit = format!("http://example.com/{}", "a".repeat(2048 - 19));
    assert_eq!(at_limit.len(), 2048);
    assert_eq!(canon(&at_limit), at_limit);

    let over = format!("{at_limit}a");
    let err = c.canonicalize(&over).unwrap_err();
    assert_eq!(
        err.kind(),
        &RejectKind::TooLong {
            len: 2049,
            max: 2048
        }
    );
    assert_eq!(err.reason(), "too_long");
    assert_eq!(
        err.to_string(),
        "URL is 2049 bytes long, over the limit of 2048"
    );
}

#[test]
fn length_limit_applies_to_the_result_too() {
    // 1,999 bytes of input, but each space becomes a three-byte escape. (Leading and
    // trailing spaces would be trimmed by the parser, so they sit between letters.)
    let input = format!("http://example.com/{}", " a".repeat(990));
    let err = Canonicalizer::new().canonicalize(&input).unwrap_err();
    assert!(
        matches!(err.kind(), RejectKind::TooLong { len, max: 2048 } if *len > 2048),
        "{err:?}"
    );
    // And to links, whose result includes the base.
    let small = Canonicalizer::builder().max_length(30).build();
    let base = small.canonicalize("http://example.com/dir/").unwrap();
    assert!(
        small
            .canonicalize_relative(base.as_url(), "abcdefgh")
            .is_err()
    );
    assert_eq!(
        small
            .canonicalize_relative(base.as_url(), "abc")
            .unwrap()
            .as_str(),
        "http://example.com/dir/abc"
    );
}

#[test]
fn length_limit_is_configurable() {
    let c = Canonicalizer::builder().max_length(4096).build();
    let long = format!("http://example.com/{}", "a".repeat(3000));
    assert!(c.canonicalize(&long).is_ok());
    assert!(Canonicalizer::new().canonicalize(&long).is_err());
}

/// A hostile "URL" of 10 MB is refused on its length alone, before the parser sees it.
#[test]
fn huge_input_is_rejected_without_parsing() {
    let huge = format!("http://example.com/{}", "%41".repeat((10 << 20) / 3));
    let c = Canonicalizer::new();
    let start = Instant::now();
    for _ in 0..1000 {
        let err = c.canonicalize(&huge).unwrap_err();
        assert!(matches!(err.kind(), RejectKind::TooLong { .. }));
    }
    // Parsing 10 MB a thousand times would take many seconds.
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "{:?}",
        start.elapsed()
    );
}

// ---- Relative links. ----

#[test]
fn relative_links_resolve_against_the_base() {
    let c = Canonicalizer::new();
    let base = c
        .canonicalize("http://example.com/docs/guide/intro.html?lang=en")
        .unwrap();
    let resolve = |href: &str| -> String {
        c.canonicalize_relative(base.as_url(), href)
            .unwrap_or_else(|err| panic!("{href:?} rejected: {err}"))
            .as_str()
            .to_owned()
    };
    for (href, expected) in [
        ("../a", "http://example.com/docs/a"),
        ("a", "http://example.com/docs/guide/a"),
        ("./a/../b", "http://example.com/docs/guide/b"),
        ("/root", "http://example.com/root"),
        ("?q", "http://example.com/docs/guide/intro.html?q"),
        ("?", "http://example.com/docs/guide/intro.html"),
        ("#frag", "http://example.com/docs/guide/intro.html?lang=en"),
        ("", "http://example.com/docs/guide/intro.html?lang=en"),
        ("//other.host/x", "http://other.host/x"),
        ("//Other.Host:80", "http://other.host/"),
        (
            "https://Elsewhere.example/p?b=1&a=2",
            "https://elsewhere.example/p?a=2&b=1",
        ),
        ("../../../../../up", "http://example.com/up"),
        (
            "  \n next.html\t ",
            "http://example.com/docs/guide/next.html",
        ),
        (
            "x;jsessionid=1?sid=2&p=3",
            "http://example.com/docs/guide/x?p=3",
        ),
        ("%7Eme", "http://example.com/docs/guide/~me"),
        ("a b", "http://example.com/docs/guide/a%20b"),
    ] {
        assert_eq!(resolve(href), expected, "{href:?}");
    }
}

#[test]
fn relative_links_are_rejected_with_a_reason() {
    let c = Canonicalizer::new();
    let base = c.canonicalize("http://example.com/a/").unwrap();
    for (href, reason) in [
        ("mailto:someone@example.com", "unsupported_scheme"),
        ("javascript:void(0)", "unsupported_scheme"),
        ("data:image/png;base64,AAAA", "unsupported_scheme"),
        ("tel:+15555550100", "unsupported_scheme"),
        ("http://", "unparsable"),
        ("//", "unparsable"),
        ("http://example.com:99999/", "unparsable"),
        ("//./x", "no_host"),
    ] {
        let err = c.canonicalize_relative(base.as_url(), href).unwrap_err();
        assert_eq!(err.reason(), reason, "{href:?}: {err}");
    }
    let long = "a".repeat(2049);
    assert_eq!(
        c.canonicalize_relative(base.as_url(), &long)
            .unwrap_err()
            .reason(),
        "too_long"
    );
    // A base that is not http(s) yields what resolution against it yields.
    let mailto = Url::parse("mailto:a@example.com").unwrap();
    assert_eq!(
        c.canonicalize_relative(&mailto, "x").unwrap_err().reason(),
        "unparsable"
    );
    let file = Url::parse("file:///home/a/").unwrap();
    assert_eq!(
        c.canonicalize_relative(&file, "b").unwrap_err().reason(),
        "unsupported_scheme"
    );
}

#[test]
fn relative_resolution_accepts_a_raw_base() {
    // A `<base href>` the caller has parsed itself need not be canonical.
    let c = Canonicalizer::new();
    let base = Url::parse("HTTP://Example.COM:80/a/b/c?x#y").unwrap();
    assert_eq!(
        c.canonicalize_relative(&base, "../d").unwrap().as_str(),
        "http://example.com/a/d"
    );
}

// ---- Properties. ----

/// Building blocks of URL-shaped strings, weighted towards what the rules act on.
fn url_like() -> impl Strategy<Value = String> {
    let scheme = prop::sample::select(vec![
        "http://", "HTTPS://", "https://", "hTtP://", "ftp://", "mailto:", "http:", "http:///", "",
    ]);
    let host = prop::sample::select(vec![
        "example.com",
        "Example.COM.",
        "bücher.example",
        "xn--bcher-kva.example.",
        "1.2.3.4",
        "1.2.3.4..",
        "0x7f.1",
        "[::1]",
        "[0:0::FFFF:1]",
        ".",
        "a..b",
        "user:pw@h",
        "@h",
        "ex%41mple",
        "",
    ]);
    let port = prop::sample::select(vec!["", "", ":80", ":443", ":8080", ":", ":0", ":99999"]);
    let piece = prop::sample::select(vec![
        "/",
        "/",
        "a",
        "B",
        ".",
        "..",
        "%2e",
        "%2E",
        "%2f",
        "%2F",
        "%7e",
        "%41",
        "%zz",
        "%",
        "%4",
        ";jsessionid=1",
        ";JSESSIONID=x",
        ";v=2",
        "?",
        "?",
        "&",
        "&",
        "=",
        "#",
        "sid",
        "PHPSESSID",
        "utm_source",
        "ASPSESSIONIDAB",
        "ü",
        "€",
        "|",
        "^",
        " ",
        "'",
        "[",
        "]",
        "{",
        "\\",
        ":",
        "@",
        "%26",
        "%3d",
        "+",
        "\t",
        "\n",
        "~",
        "%C3%bc",
        "%00",
        "\u{0}",
    ]);
    // Mostly a slash after the authority, so that the pieces land in the path and query
    // rather than making the host invalid.
    let separator = prop::sample::select(vec!["/", "/", "/", "/", "?", "#", ""]);
    (
        scheme,
        host,
        port,
        separator,
        prop::collection::vec(piece, 0..24),
    )
        .prop_map(|(scheme, host, port, separator, pieces)| {
            format!("{scheme}{host}{port}{separator}{}", pieces.concat())
        })
}

fn configurations() -> Vec<Canonicalizer> {
    vec![
        Canonicalizer::new(),
        Canonicalizer::builder()
            .remove_tracking(true)
            .sort_query(false)
            .build(),
        Canonicalizer::builder().max_length(40).build(),
    ]
}

/// Canonicalizing must be idempotent: the canonical form of a canonical URL is itself.
/// Otherwise a page fetched under its canonical URL would resurface, through a redirect or a
/// link back, as a "new" URL.
fn assert_idempotent(c: &Canonicalizer, input: &str) -> Result<(), TestCaseError> {
    if let Ok(first) = c.canonicalize(input) {
        let again = c.canonicalize(first.as_str());
        prop_assert!(again.is_ok(), "{input:?} -> {first} -> {again:?}");
        let again = again.unwrap();
        prop_assert_eq!(again.as_str(), first.as_str(), "input {:?}", input);
        prop_assert!(first.as_str().len() <= c.max_length());
        prop_assert!(first.as_str().starts_with("http"));
        prop_assert!(!first.as_str().contains('#'));
        prop_assert!(first.as_str().is_ascii());
        // Queues keep canonical URLs as text and parse them back when leased: the text must
        // parse to itself.
        let reparsed = frontier::Url::parse(first.as_str());
        prop_assert_eq!(
            reparsed.map(String::from).ok(),
            Some(first.as_str().to_owned())
        );
    }
    Ok(())
}

proptest! {
    // Over half of `url_like`'s inputs are no URL any configuration takes: each such case
    // is drawn again, so that 2,000 cases check something.
    #![proptest_config(ProptestConfig {
        cases: 2000,
        max_global_rejects: 10_000,
        ..ProptestConfig::default()
    })]

    #[test]
    fn canonicalization_is_idempotent(input in url_like()) {
        // A case none of the configurations takes checks nothing: proptest draws another,
        // and fails the test if too many are drawn for nothing.
        let configurations = configurations();
        prop_assume!(configurations.iter().any(|c| c.canonicalize(&input).is_ok()));
        for c in configurations {
            assert_idempotent(&c, &input)?;
        }
    }

    #[test]
    fn relative_canonicalization_is_idempotent(href in url_like(), tail in "[a-z/.?&=#;%]{0,12}") {
        let c = Canonicalizer::new();
        let base = c.canonicalize("http://example.com/a/b;v=1/c?d=1").unwrap();
        let mut taken = 0;
        for href in [href.as_str(), tail.as_str()] {
            if let Ok(first) = c.canonicalize_relative(base.as_url(), href) {
                taken += 1;
                let again = c.canonicalize(first.as_str()).unwrap();
                prop_assert_eq!(again.as_str(), first.as_str());
            }
        }
        prop_assume!(taken > 0);
    }

}

/// Cases for the `fuzz_` harnesses: `FUZZ_CASES` when set (to fuzz longer, see the
/// workspace's docs/testing.md), else `default`.
fn fuzz_cases(default: u32) -> u32 {
    std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

proptest! {
    // Long random strings are slow to generate in debug builds: fewer cases, same reach.
    #![proptest_config(ProptestConfig::with_cases(fuzz_cases(256)))]

    #[test]
    fn fuzz_canonicalizer_never_panics_and_is_idempotent(input in ".{0,3000}") {
        for c in configurations() {
            assert_idempotent(&c, &input)?;
            let _ = c.canonicalize_relative(
                &Url::parse("http://example.com/a/").unwrap(),
                &input,
            );
        }
    }

    #[test]
    fn arbitrary_urls_never_panic(tail in "\\PC{0,3000}", scheme in "(https?|HTTP)://") {
        let input = format!("{scheme}{tail}");
        for c in configurations() {
            assert_idempotent(&c, &input)?;
        }
    }

    #[test]
    fn byte_soup_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..3000)) {
        // Arbitrary bytes made into text the way a careless caller would.
        let input = format!("http://{}", String::from_utf8_lossy(&bytes));
        for c in configurations() {
            assert_idempotent(&c, &input)?;
        }
    }
}
