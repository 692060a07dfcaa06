//! The link rules, rule by rule, on the public API.

use links::Options;

use crate::util::{PAGE, links, run, run_with};

#[test]
fn extract_links_from_a_and_area_in_document_order() {
    let out = run(concat!(
        "<html><head><link rel=stylesheet href=/style.css>",
        "<script src=/app.js></script></head><body>",
        "<a href=\"child/\">relative</a> <img src=/img.png>",
        "<a href='https://other.example.org/x?y=1'>absolute</a>",
        "<map><area href=\"/map-area\" shape=rect></map>",
        "<a href=\"//cdn.example.net/p\">scheme-relative</a>",
        "<a>no href</a><a href=\"\">empty</a><a href=\"  \">blank</a>",
        "<a href=\"#section\">fragment</a><a href=\" \n ../up.html\t\">trimmed</a>",
        "<a href=\"mailto:me@example.com\">mail</a><a href=\"javascript:void(0)\">js</a>",
        "<iframe src=/frame></iframe></body></html>",
    ));
    assert_eq!(
        out.links,
        [
            "child/",
            "https://other.example.org/x?y=1",
            "/map-area",
            "//cdn.example.net/p",
            "../up.html",
            "mailto:me@example.com",
            "javascript:void(0)",
            "/frame",
        ]
    );
    assert_eq!(out.frames, 1);
    assert_eq!(out.base.as_str(), PAGE);
    assert_eq!((out.over_cap, out.nofollow), (0, 0));
    assert!(!out.meta_nofollow);
    assert_eq!(out.canonical, None);
    assert_eq!(out.encoding, "UTF-8");
    // Resolved against the base, as the caller does.
    assert_eq!(
        out.base.join(&out.links[4]).unwrap().as_str(),
        "https://example.com/up.html"
    );
}

#[test]
fn extract_character_references_in_hrefs() {
    assert_eq!(
        links(concat!(
            "<a href=\"/s?a=1&amp;b=2&AMP;c=3\">",
            "<a href=\"/s?a=1&copy=2&para;x&notit&not;\">",
            "<a href=\"/s?x=&#x41;&#66&#128;&#0;&#xD800;&#1114112;\">",
            "<a href=\"/&notin;&hellip;&bigstar;&amp\">",
            "<a href=/&lt;&gt;&quot;&apos;>",
        )),
        [
            "/s?a=1&b=2&c=3",
            "/s?a=1&copy=2\u{B6}x&notit\u{AC}",
            "/s?x=AB\u{20AC}\u{FFFD}\u{FFFD}\u{FFFD}",
            "/\u{2209}\u{2026}&bigstar;&",
            "/<>\"'",
        ]
    );
}

#[test]
fn extract_base_href() {
    // Relative base, resolved against the page; it applies to links before it too.
    let out = run(concat!(
        "<a href=x>before</a><base target=_blank><base href=\"../other/\">",
        "<base href=\"https://ignored.example/\"><a href=y>",
    ));
    assert_eq!(out.base.as_str(), "https://example.com/other/");
    assert_eq!(out.links, ["x", "y"]);

    // A base that does not parse is ignored, and later ones are not looked at.
    let out = run("<base href=\"http://[::1\"><base href=\"https://b.example/\"><a href=x>");
    assert_eq!(out.base.as_str(), PAGE);

    // Inside <template> or <svg> a <base> is not the document's.
    let out = run("<template><base href=/t/></template><svg><base href=/s/></svg>");
    assert_eq!(out.base.as_str(), PAGE);
}

#[test]
fn extract_fragment_links_only_when_base_is_another_document() {
    let html = "<a href=\"#top\">top</a><a href=a>a</a><a href=\"#other\">";
    assert_eq!(links(html), ["a"]);
    // The base's own fragment does not make it another document.
    let out = run(&format!("<base href=\"{PAGE}#frag\">{html}"));
    assert_eq!(out.links, ["a"]);
    // Another document: the first fragment link stays, in its place.
    let out = run(&format!("<base href=\"/index.html\">{html}"));
    assert_eq!(out.links, ["#top", "a"]);
    let nofollow = run("<base href=/index.html><a href=#x rel=nofollow><a href=a>");
    assert_eq!(nofollow.links, ["a"]);
    assert_eq!(
        out.base.join(&out.links[0]).unwrap().as_str(),
        "https://example.com/index.html#top"
    );
}

#[test]
fn extract_rel_nofollow() {
    let html = concat!(
        "<a href=1 rel=nofollow><a href=2 rel=\"external  NoFollow\">",
        "<a href=3 rel=\"nofollowing\"><a href=4 rel=\"noopener\tnofollow\n\">",
        "<area href=5 rel=NOFOLLOW><a href=6>",
    );
    let out = run(html);
    assert_eq!(out.links, ["3", "6"]);
    assert_eq!(out.nofollow, 4);
    assert!(!out.meta_nofollow);

    let options = Options {
        follow_nofollow: true,
        ..Options::default()
    };
    let out = run_with(html.as_bytes(), None, &options);
    assert_eq!(out.links, ["1", "2", "3", "4", "5", "6"]);
    assert_eq!(out.nofollow, 0);
}

#[test]
fn extract_meta_robots_nofollow() {
    for meta in [
        "<meta name=robots content=nofollow>",
        "<META NAME=\"Robots\" CONTENT=\"noindex, NOFOLLOW\">",
        "<meta content=\"noindex,nofollow\" name=\" robots \">",
        "<meta name=robots content=\"noarchive none\">",
    ] {
        // Before or after the links: it applies to all of them.
        for html in [
            format!("<head>{meta}</head><a href=a><a href=b rel=nofollow><a href=c>"),
            format!("<a href=a><a href=b rel=nofollow><a href=c>{meta}"),
        ] {
            let out = run(&html);
            assert!(out.meta_nofollow, "{html}");
            assert!(out.links.is_empty(), "{html}");
            assert_eq!(out.nofollow, 3, "{html}");
            assert_eq!(out.over_cap, 0);

            let options = Options {
                follow_nofollow: true,
                ..Options::default()
            };
            let out = run_with(html.as_bytes(), None, &options);
            assert!(out.meta_nofollow);
            assert_eq!(out.links, ["a", "b", "c"]);
            assert_eq!(out.nofollow, 0);
        }
    }
    for html in [
        "<meta name=robots content=noindex><a href=a>",
        "<meta name=googlebot content=nofollow><a href=a>",
        "<meta name=description content=nofollow><a href=a>",
        "<meta http-equiv=robots content=nofollow><a href=a>",
        "<template><meta name=robots content=nofollow></template><a href=a>",
    ] {
        let out = run(html);
        assert!(!out.meta_nofollow, "{html}");
        assert_eq!(out.links, ["a"], "{html}");
    }
}

#[test]
fn extract_canonical() {
    let out = run(concat!(
        "<base href=\"https://example.com/base/\">",
        "<link rel=canonical><link rel=\"Canonical\" href=\"  \">",
        "<link rel=\"alternate canonical\" href=\"canon?id=1#frag\">",
        "<link rel=canonical href=\"/second\"><a href=x>",
    ));
    assert_eq!(
        out.canonical.as_deref(),
        Some("https://example.com/base/canon?id=1#frag")
    );
    assert_eq!(out.links, ["x"]);
    assert_eq!(
        run("<link rel=canonical href=\"http://[bad\">").canonical,
        None
    );
    // <link> is never a link to follow.
    assert!(links("<link rel=next href=/page2>").is_empty());
}

#[test]
fn extract_cap() {
    let html = concat!(
        "<a href=1><a href=2 rel=nofollow><a href=3><a href=4><a href=\"#x\">",
        "<a href=5><a href=6>"
    );
    let options = Options {
        max_links: 3,
        ..Options::default()
    };
    let out = run_with(html.as_bytes(), None, &options);
    assert_eq!(out.links, ["1", "3", "4"]);
    assert_eq!((out.over_cap, out.nofollow), (2, 1));

    // A kept fragment link takes its place in document order within the cap.
    let html = format!("<base href=/elsewhere>{html}");
    let out = run_with(html.as_bytes(), None, &options);
    assert_eq!(out.links, ["1", "3", "4"]);
    assert_eq!(out.over_cap, 3);
    let options = Options {
        max_links: 4,
        ..Options::default()
    };
    let out = run_with(html.as_bytes(), None, &options);
    assert_eq!(out.links, ["1", "3", "4", "#x"]);
    assert_eq!(out.over_cap, 2);

    let options = Options {
        max_links: 0,
        ..Options::default()
    };
    let out = run_with(html.as_bytes(), None, &options);
    assert!(out.links.is_empty());
    assert_eq!((out.over_cap, out.nofollow), (6, 1));
}

#[test]
fn extract_windows_1252_from_header_and_meta() {
    let body = b"<p>Caf\xE9</p><a href=\"/caf\xE9?q=\x93x\x94\">caf\xE9</a>";
    let expected = "/caf\u{E9}?q=\u{201C}x\u{201D}";
    for content_type in [
        "text/html; charset=windows-1252",
        "text/html;charset=\"ISO-8859-1\"",
        "text/html; Charset=latin1 ; foo=bar",
    ] {
        let out = run_with(body, Some(content_type), &Options::default());
        assert_eq!(out.encoding, "windows-1252", "{content_type}");
        assert_eq!(out.links, [expected], "{content_type}");
    }
    // Without a declaration, the bytes are malformed UTF-8: replaced, link still found.
    let out = run_with(body, Some("text/html"), &Options::default());
    assert_eq!(out.encoding, "UTF-8");
    assert_eq!(out.links, ["/caf\u{FFFD}?q=\u{FFFD}x\u{FFFD}"]);

    for meta in [
        &b"<meta charset=windows-1252>"[..],
        b"<META CHARSET='iso-8859-1'/>",
        b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=windows-1252\">",
        b"<meta content='text/html;charset = \"cp1252\"' http-equiv=content-type>",
    ] {
        let mut page = b"<!DOCTYPE html><html><head>".to_vec();
        page.extend_from_slice(meta);
        page.extend_from_slice(body);
        let out = run_with(&page, Some("text/html"), &Options::default());
        assert_eq!(
            out.encoding,
            "windows-1252",
            "{}",
            String::from_utf8_lossy(meta)
        );
        assert_eq!(out.links, [expected]);
        // The header's charset wins over the meta.
        let out = run_with(&page, Some("text/html; charset=utf-8"), &Options::default());
        assert_eq!(out.encoding, "UTF-8");
    }
    // A content charset without http-equiv, a meta in a comment, and a meta past the
    // first 1024 bytes are not declarations.
    let mut late = format!("<!-- {} -->", "x".repeat(1024)).into_bytes();
    late.extend_from_slice(b"<meta charset=windows-1252>");
    for page in [
        &b"<meta content=\"text/html; charset=windows-1252\">"[..],
        b"<!-- <meta charset=windows-1252> -->",
        &late,
    ] {
        assert_eq!(run_with(page, None, &Options::default()).encoding, "UTF-8");
    }
}

#[test]
fn extract_shift_jis_from_meta() {
    let (path, _, unmappable) = encoding_rs::SHIFT_JIS.encode("/wiki/日本語?q=東京");
    assert!(!unmappable);
    let mut body =
        b"<html><head><meta http-equiv=Content-Type content=\"text/html; charset=Shift_JIS\">"
            .to_vec();
    body.extend_from_slice(b"</head><body><a href=\"");
    body.extend_from_slice(&path);
    body.extend_from_slice(b"\">link</a></body></html>");
    let out = run_with(&body, Some("text/html"), &Options::default());
    assert_eq!(out.encoding, "Shift_JIS");
    assert_eq!(out.links, ["/wiki/日本語?q=東京"]);
    // The URL parser percent-encodes the path as UTF-8.
    assert_eq!(
        out.base.join(&out.links[0]).unwrap().path(),
        "/wiki/%E6%97%A5%E6%9C%AC%E8%AA%9E"
    );
}

#[test]
fn extract_byte_order_mark_wins() {
    let mut body = b"\xEF\xBB\xBF<meta charset=windows-1252><a href=\"/\xC3\xA9\">".to_vec();
    let out = run_with(
        &body,
        Some("text/html; charset=windows-1252"),
        &Options::default(),
    );
    assert_eq!(out.encoding, "UTF-8");
    assert_eq!(out.links, ["/\u{E9}"]);

    body = vec![0xFF, 0xFE];
    for unit in "<a href=\"/utf16\">".encode_utf16() {
        body.extend_from_slice(&unit.to_le_bytes());
    }
    let out = run_with(&body, None, &Options::default());
    assert_eq!(out.encoding, "UTF-16LE");
    assert_eq!(out.links, ["/utf16"]);

    // A meta claiming UTF-16 in an ASCII-compatible page means UTF-8.
    let out = run_with(
        b"<meta charset=utf-16><a href=/x>",
        None,
        &Options::default(),
    );
    assert_eq!(out.encoding, "UTF-8");
    assert_eq!(out.links, ["/x"]);
}

#[test]
fn extract_from_malformed_html() {
    assert_eq!(
        links(concat!(
            "<html><body><div><p>unclosed <b>bold <i>italic",
            "<a href=one>one<a href=two>two",
            "<table><tr><td>cell<a href=in-table>x</a><tr><a href=fostered>y</table>",
            "<table><a href=x>broken table",
            "<ul><li><a HREF=UPPER>u<li><A href='single'>s</A></ul>",
            "<a href=unquoted/path?x=1&y=2>no quotes</a>",
            "<a id=\"i\"href=\"no-space\">",
            "<a href=\"first\" href=\"second\">",
            "<a href = \"spaced\" >",
            "<a href=\"a>b\">gt in quotes</a>",
            "<a href=self-closing/>",
            "<a\nhref\n=\nnewlines\n>",
            "<a/href=slash>",
            "<a =x href=eq>",
            "<a href>no value</a><a href=>empty</a>",
            "<a foo\"bar href=odd-name>",
            "<a href=\"nul\0char\">",
            "<a href=\"/cr\r\nlf\">",
            "< a href=not-a-tag>",
            "<a href=\"cut off",
        )),
        [
            "one",
            "two",
            "in-table",
            "fostered",
            "x",
            "UPPER",
            "single",
            "unquoted/path?x=1&y=2",
            "no-space",
            "first",
            "spaced",
            "a>b",
            "self-closing/",
            "newlines",
            "slash",
            "eq",
            "odd-name",
            "nul\u{FFFD}char",
            "/cr\nlf",
        ]
    );
    // A tag cut off by the end of the input is dropped, as browsers do.
    assert!(links("<a href=x").is_empty());
    assert!(links("<a href=x ").is_empty());
    assert!(links("<a href='x'").is_empty());
    assert!(links("<a href=x /").is_empty());
}

#[test]
fn extract_skips_text_comments_and_scripts() {
    assert_eq!(
        links(concat!(
            "<!DOCTYPE html PUBLIC \"-//W3C//DTD <a href=d1>\" \"x\">",
            "<title>A <a href=t1> title</title >",
            "<textarea><a href=t2></textarea>",
            "<style>a[href] { content: \"<a href=s1>\" }</style>",
            "<script>document.write('<a href=\"s2\">'); if (a<b) {}</script>",
            "<script>'</scriptx><a href=s3>'</script\t>",
            "<script><!-- x('<script>'); '</script>'; '<a href=s4>' --></script>",
            "<script><!-- x('<script>'); --></script>",
            "<a href=after-scripts>",
            "<!-- <a href=c1> -- > --!> <a href=c2> -->",
            "<!--><a href=after-empty-comment>",
            "<!---><a href=after-dash-comment>",
            "<!-- x --!><a href=after-bang-comment>",
            "<? pi <a href=p1 ?>",
            "</ bogus <a href=b1><a href=after-bogus>",
            "<![CDATA[<a href=in-bogus-comment]]><a href=x>",
            "<noscript><a href=in-noscript></noscript>",
            "<xmp><a href=x1></xmp><iframe><a href=x2></iframe>",
            "<noembed><a href=x3></noembed><noframes><a href=x4></noframes>",
            "<a href=last>",
            "<plaintext></plaintext><a href=plain>",
        )),
        [
            "after-scripts",
            "c2",
            "after-empty-comment",
            "after-dash-comment",
            "after-bang-comment",
            "after-bogus",
            "x",
            "in-noscript",
            "last",
        ]
    );
    // Unterminated: everything after is text.
    for html in [
        "<!-- <a href=x>",
        "<script><a href=x>",
        "<title><a href=x>",
        "<style></styl><a href=x>",
        "<script><!--<script></script><a href=x>",
    ] {
        assert!(links(html).is_empty(), "{html}");
    }
}

/// Regression: mdBook loads its whole table of contents through `<iframe src>`,
/// which was not followed. Frames and iframes are links, unless turned off.
#[test]
fn frames_and_iframes_are_links_unless_turned_off() {
    let page = concat!(
        "<frameset><frame src=nav.html><FRAME SRC=' main.html '><frame></frameset>",
        "<iframe src=toc.html><a href=not-a-link-inside-iframe></a></iframe>",
        "<iframe srcdoc='<a href=x>'></iframe><a href=after>",
    );
    let out = run(page);
    assert_eq!(out.links, ["nav.html", "main.html", "toc.html", "after"]);
    assert_eq!(out.frames, 3);
    let off = Options {
        follow_frames: false,
        ..Options::default()
    };
    let out = run_with(page.as_bytes(), Some("text/html"), &off);
    assert_eq!(out.links, ["after"]);
    assert_eq!(out.frames, 3);
    // A page marked nofollow follows no frame either.
    let out = run("<meta name=robots content=nofollow><iframe src=toc.html>");
    assert!(out.links.is_empty());
}

#[test]
fn extract_svg_math_and_template() {
    assert_eq!(
        links(concat!(
            "<svg viewBox=\"0 0 1 1\"><title/><style/><path d=\"M0\"/>",
            "<a href=\"svg-link\"><text>x</text></a></svg>",
            "<a href=after-svg>",
            "<svg><style><a href=in-svg-style></style>",
            "<![CDATA[<a href=in-cdata>]]>",
            "<foreignObject><title><a href=html-title></title><a href=in-fo></foreignObject>",
            "</svg>",
            "<math><mi><style><a href=math-style></style></mi><mtext>t</mtext></math>",
            "<svg><g><path></svg><title><a href=html-again></title>",
            "<div><svg><g></div><style><a href=unclosed-svg></style>",
            "<svg><g><p>breakout<style><a href=breakout-style></style>",
            "<template><a href=in-template><template></template><a href=still>",
            "</template><a href=after-template>",
            "<template><svg></template><a href=after-svg-template>",
        )),
        [
            "svg-link",
            "after-svg",
            "in-svg-style",
            "in-fo",
            "after-template",
            "after-svg-template",
        ]
    );
}
