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
