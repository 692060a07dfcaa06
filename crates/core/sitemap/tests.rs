//! The sitemap reader on well-formed and hostile files, and the crawl's set of sitemaps.

use std::io::Write;

use super::*;

/// Every entry of `body`, and the reader after the last.
fn read_all(body: &[u8]) -> (Vec<Entry>, Reader<'_>) {
    let mut reader = Reader::new(body);
    let mut entries = Vec::new();
    while let Some(entry) = reader.next_entry() {
        entries.push(entry);
    }
    (entries, reader)
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(data).unwrap();
    encoder.finish().unwrap()
}

fn locs(entries: &[Entry]) -> Vec<&str> {
    entries.iter().map(|e| e.loc.as_str()).collect()
}

#[test]
fn a_urlset_gives_its_locs_and_lastmods() {
    let body = br#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc> http://a.example/x?a=1&amp;b=2 </loc><lastmod>2024-05-01T10:00:00+02:00</lastmod></url>
  <url><loc><![CDATA[http://a.example/y]]></loc><lastmod>yesterday</lastmod><priority>0.5</priority></url>
  <url><lastmod>2024-01-01</lastmod></url>
  <url><loc>http://a.example/&#122;</loc></url>
</urlset>"#;
    let (entries, reader) = read_all(body);
    assert_eq!(reader.kind(), Some(Kind::Urlset));
    assert_eq!(
        locs(&entries),
        [
            "http://a.example/x?a=1&b=2",
            "http://a.example/y",
            "http://a.example/z"
        ]
    );
    assert_eq!(
        entries[0].lastmod.as_deref(),
        Some("2024-05-01T10:00:00+02:00")
    );
    assert_eq!(entries[1].lastmod, None, "not a date");
    assert_eq!(reader.error, None);
}

#[test]
fn an_index_gzipped_is_read_by_its_content_not_its_name() {
    let body = gzip(
        br#"<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<sitemap><loc>http://a.example/s1.xml</loc><lastmod>2024-05-01</lastmod></sitemap>
<sitemap><loc>http://a.example/s2.txt</loc></sitemap></sitemapindex>"#,
    );
    let (entries, reader) = read_all(&body);
    assert_eq!(reader.kind(), Some(Kind::Index));
    assert_eq!(
        locs(&entries),
        ["http://a.example/s1.xml", "http://a.example/s2.txt"]
    );
    assert!(sniff(&body));
}

#[test]
fn a_text_sitemap_skips_and_counts_junk_lines() {
    let mut body = b"\xef\xbb\xbfhttp://a.example/1\r\n\n  junk line\nftp://a.example/f\n".to_vec();
    body.extend_from_slice(&[b'h'; 5000]);
    body.extend_from_slice(b"\n\xff\xfe\nhttps://a.example/2");
    let (entries, reader) = read_all(&body);
    assert_eq!(reader.kind(), Some(Kind::Text));
    assert_eq!(
        locs(&entries),
        ["http://a.example/1", "https://a.example/2"]
    );
    assert_eq!(reader.dropped, 4, "junk, ftp, the long line, binary");
    assert!(!sniff(&body));
}

#[test]
fn sixty_thousand_urls_keep_the_first_fifty_thousand_and_count_the_rest() {
    let mut body = String::from("<urlset>");
    for i in 0..60_000 {
        body.push_str(&format!("<url><loc>http://a.example/{i}</loc></url>"));
    }
    body.push_str("</urlset>");
    let (entries, reader) = read_all(body.as_bytes());
    assert_eq!(entries.len(), MAX_URLS);
    assert_eq!(entries.last().unwrap().loc, "http://a.example/49999");
    assert_eq!(reader.dropped, 10_000);
}

#[test]
fn a_gzip_bomb_stops_at_the_protocols_fifty_megabytes() {
    // 60 MB of short elements between two entries (each a token, so that only the byte
    // cap stops them), a few hundred KB gzipped.
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder
        .write_all(b"<urlset><url><loc>http://a.example/1</loc></url>")
        .unwrap();
    let mut blanks = vec![b' '; 1 << 20];
    for chunk in blanks.chunks_mut(1024) {
        chunk[..4].copy_from_slice(b"<x/>");
    }
    for _ in 0..60 {
        encoder.write_all(&blanks).unwrap();
    }
    encoder
        .write_all(b"<url><loc>http://a.example/2</loc></url></urlset>")
        .unwrap();
    let body = encoder.finish().unwrap();
    let (entries, reader) = read_all(&body);
    assert_eq!(locs(&entries), ["http://a.example/1"]);
    let error = reader.error.unwrap();
    assert!(error.contains("50000000 bytes"), "{error}");
}

#[test]
fn one_endless_text_node_is_cut_without_being_held() {
    let mut body = b"<urlset><url><loc>http://a.example/".to_vec();
    body.extend(std::iter::repeat_n(b'a', 10 << 20));
    body.extend_from_slice(b"</loc></url></urlset>");
    let (entries, reader) = read_all(&body);
    assert!(entries.is_empty());
    let error = reader.error.unwrap();
    assert!(error.contains("without an element"), "{error}");
}

#[test]
fn bad_xml_keeps_the_entries_before_the_fault() {
    for body in [
        &b"<urlset><url><loc>http://a.example/1</loc></url><url><loc>http://a.example/2</url"[..],
        b"<urlset><url><loc>http://a.example/1</loc></url><<<>>>&&&</urlset>",
        b"<urlset><url><loc>http://a.example/1</loc></url><url><loc>http://a.ex\xff\xfe</loc></url>",
    ] {
        let (entries, _) = read_all(body);
        assert_eq!(
            locs(&entries).first(),
            Some(&"http://a.example/1"),
            "{}",
            String::from_utf8_lossy(body)
        );
    }
    for body in [
        &b""[..],
        b"<html><a href=x>",
        b"<?xml version='1.0'?><rss/>",
        b"\x1f\x8bnot gzip",
    ] {
        let (entries, reader) = read_all(body);
        assert!(entries.is_empty());
        assert!(!sniff(body));
        let _ = reader.error;
    }
}

#[test]
fn an_index_listing_itself_or_thousands_is_bounded() {
    let sitemaps = Sitemaps::new(true);
    let canon = Canonicalizer::new();
    let url = |s: &str| canon.canonicalize(s).unwrap();
    let index = url("http://a.example/index.xml");
    assert!(sitemaps.mark(&index, 0));
    // The index lists itself: known already, not taken again.
    assert!(!sitemaps.mark(&index, 1));
    assert_eq!(sitemaps.nesting(index.as_str()), Some(0));
    // Nesting past the bound is refused.
    assert!(!sitemaps.mark(&url("http://a.example/deep.xml"), MAX_NESTING + 1));
    // A host's thousands: the first MAX_PER_HOST taken.
    let taken = (0..2_000)
        .filter(|i| sitemaps.mark(&url(&format!("http://a.example/s{i}.xml")), 1))
        .count();
    assert_eq!(taken, MAX_PER_HOST as usize - 1);
    assert!(
        sitemaps.mark(&url("http://b.example/s.xml"), 1),
        "another host's own count"
    );
    assert_eq!(sitemaps.refused.load(Ordering::Relaxed), 1 + 2_000 - 999);
}

#[test]
fn lastmods_wait_for_their_records_once() {
    let sitemaps = Sitemaps::new(true);
    let page = Canonicalizer::new()
        .canonicalize("http://a.example/p")
        .unwrap();
    assert_eq!(sitemaps.take_lastmod(page.as_str()), None);
    assert!(sitemaps.keep_lastmod(&page, "2024-05-01"));
    assert!(
        !sitemaps.keep_lastmod(&page, "2023-01-01"),
        "the first sitemap's stays"
    );
    assert_eq!(
        sitemaps.take_lastmod(page.as_str()).as_deref(),
        Some("2024-05-01")
    );
    assert_eq!(sitemaps.take_lastmod(page.as_str()), None);
}

#[test]
fn content_types_that_may_hide_a_sitemap() {
    for t in [
        None,
        Some("application/xml"),
        Some("text/xml; charset=utf-8"),
        Some("application/x-gzip"),
        Some("application/octet-stream"),
    ] {
        assert!(may_be_sitemap(t), "{t:?}");
    }
    for t in ["text/html", "image/png", "text/plain"] {
        assert!(!may_be_sitemap(Some(t)), "{t}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config::with_cases(crate::fuzz_cases(256)))]

    /// Any bytes, sitemap-shaped or not, gzipped or not, read without a panic and within
    /// the limits.
    #[test]
    fn fuzz_sitemaps_never_panic(
        parts in proptest::collection::vec(
            "(<urlset>|<sitemapindex>|<url>|</url>|<loc>|</loc>|<lastmod>|</lastmod>|<sitemap>|&amp;|&#x41;|&bogus;|<!--|-->|<!\\[CDATA\\[|\\]\\]>|http://a.example/[a-z]{0,5}|\n|[ -~]{0,10})",
            0..60,
        ),
        zipped in proptest::prelude::any::<bool>(),
    ) {
        let body = parts.concat().into_bytes();
        let body = if zipped { gzip(&body) } else { body };
        let (entries, _) = read_all(&body);
        proptest::prop_assert!(entries.len() <= MAX_URLS);
        let _ = sniff(&body);
    }
}
