use crate::util::{crawl, fast, serve};

/// Regression: mdBook puts its table of contents in `toc.html`, loaded through
/// `<iframe src>`, which was not followed. Frames are links by default, counted in the
/// summary, and `--follow-frames false` turns them off.
#[test]
fn frames_are_followed_and_counted_unless_turned_off() {
    let (port, _log) = serve(|path| match path {
        "/" => (
            200,
            "text/html",
            b"<iframe src=toc.html></iframe><frameset><frame src=nav.html></frameset>".to_vec(),
        ),
        "/toc.html" => (
            200,
            "text/html",
            b"<a href=ch1.html>1</a><a href=ch2.html>2</a>".to_vec(),
        ),
        "/robots.txt" => (404, "text/plain", Vec::new()),
        _ => (200, "text/html", b"<p>chapter</p>".to_vec()),
    });
    let seed = format!("http://127.0.0.1:{port}/");
    let mut args = fast();
    args.extend(["--seed".to_owned(), seed.clone()]);
    let run = crawl(&args);
    run.assert_success();
    for path in ["/toc.html", "/nav.html", "/ch1.html", "/ch2.html"] {
        let url = format!("http://127.0.0.1:{port}{path}");
        assert_eq!(run.record(&url)["status"], 200, "{path}");
    }
    assert_eq!(run.record(&seed)["links"], 2);
    assert!(run.stderr().contains("(2 of frames)"), "{}", run.stderr());

    args.extend(["--follow-frames".to_owned(), "false".to_owned()]);
    let run = crawl(&args);
    run.assert_success();
    assert_eq!(run.records.len(), 1, "{:?}", run.records.keys());
    assert_eq!(run.record(&seed)["links"], 2);
}
