use std::collections::BTreeSet;
use std::io::BufReader;

use testweb::{HostConfig, SiteConfig};
use warc::{RecordType, WarcHeader, WarcReader};

use crate::util::{Site, crawl_site};

#[test]
fn the_warc_file_holds_every_response_with_its_request() {
    let site = Site::start(SiteConfig {
        pages_per_host: 20,
        host_configs: vec![HostConfig::default()],
        ..SiteConfig::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crawl.warc.gz");
    let crawl = crawl_site(&site, &["--warc", path.to_str().unwrap()]);

    // Read back as any .warc.gz reader does: gzip members, one record each.
    let file = std::fs::File::open(&path).unwrap();
    let reader = WarcReader::new(BufReader::new(flate2::read::MultiGzDecoder::new(file)));
    let (mut responses, mut requests) = (BTreeSet::new(), 0);
    for record in reader.iter_records() {
        let record = record.expect("a well-formed WARC record");
        let target = record.header(WarcHeader::TargetURI).unwrap().into_owned();
        match record.warc_type() {
            RecordType::Response => {
                let body = String::from_utf8_lossy(record.body());
                assert!(
                    body.starts_with("HTTP/1.1 200 OK\r\n"),
                    "{target}: {body:.40}"
                );
                assert!(body.contains("<a "), "{target}: the page is in the record");
                responses.insert(target);
            }
            RecordType::Request => {
                assert!(record.header(WarcHeader::ConcurrentTo).is_some());
                let body = String::from_utf8_lossy(record.body());
                assert!(body.starts_with("GET /"), "{body}");
                requests += 1;
            }
            other => panic!("unexpected record type {other:?}"),
        }
    }
    let fetched: BTreeSet<String> = crawl
        .records
        .iter()
        .filter(|(_, r)| r["status"].is_number())
        .map(|(url, _)| url.clone())
        .collect();
    assert_eq!(responses, fetched);
    assert_eq!(requests, fetched.len());
}

#[test]
fn large_incompressible_bodies_are_stored_whole() {
    // 1 MB of noise: compresses to about its own size, far past a gzip buffer.
    let noise: Vec<u8> = (0..1_000_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let expected = noise.clone();
    let (port, _log) = crate::util::serve(move |path| match path {
        "/" => (200, "text/html", b"<a href=/noise.bin>n</a>".to_vec()),
        _ => (200, "application/octet-stream", noise.clone()),
    });
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.warc.gz");
    let mut args = crate::util::fast();
    let seed = format!("http://127.0.0.1:{port}/");
    args.extend(["--seed", &seed, "--warc", path.to_str().unwrap()].map(String::from));
    let run = crate::util::crawl(&args);
    assert!(run.output.status.success(), "{}", run.stderr());

    let file = std::fs::File::open(&path).unwrap();
    let reader = WarcReader::new(BufReader::new(flate2::read::MultiGzDecoder::new(file)));
    let mut found = false;
    for record in reader.iter_records() {
        let record = record.expect("a well-formed WARC record");
        if record
            .header(WarcHeader::TargetURI)
            .unwrap()
            .ends_with("/noise.bin")
            && *record.warc_type() == RecordType::Response
        {
            let body = record.body();
            let split = body.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
            assert_eq!(
                &body[split..],
                &expected[..],
                "the whole body is in the record"
            );
            found = true;
        }
    }
    assert!(found);
}
