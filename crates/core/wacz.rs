//! WACZ (`output.wacz`): the crawl's WARC files, their CDXJ index, the list of its pages and
//! a data package that names each file with its size and SHA-256, in one ZIP file (Web
//! Archive Collection Zipped 1.1.1, as py-wacz writes and validates it): what ReplayWeb.page
//! opens as it is, and what Browsertrix hands archivists.
//!
//! Every entry is stored, not deflated: the WARC files are compressed already, and a replay
//! tool reads a record at its offset inside the ZIP without unpacking anything.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use sha2::{Digest as _, Sha256};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

use crate::output::{Rfc3339, at};

/// The version of the format written.
const WACZ_VERSION: &str = "1.1.1";

/// Writes the WACZ file `path` of `warcs` (the WARC files, whole) and `index` (their sorted
/// CDXJ lines), its pages those of the index's captures that are HTML answered 200. Written
/// to a temporary file renamed over `path`, so that a reader never sees half of it.
pub(crate) fn write(path: &Path, warcs: &[PathBuf], index: &[String]) -> io::Result<()> {
    let tmp = path.with_extension("wacz.tmp");
    let file = File::create(&tmp).map_err(|e| at(&tmp, e))?;
    let mut zip = ZipWriter::new(BufWriter::new(file));
    let mut resources = Vec::new();
    let mut add = |zip: &mut ZipWriter<BufWriter<File>>, name: String, from: &mut dyn Read| {
        let options = SimpleFileOptions::default()
            .compression_method(CompressionMethod::Stored)
            .large_file(true);
        zip.start_file(name.as_str(), options)
            .map_err(io::Error::other)?;
        let mut hash = Sha256::new();
        let mut bytes = 0u64;
        let mut buf = vec![0; 1 << 16];
        loop {
            let n = from.read(&mut buf)?;
            if n == 0 {
                break;
            }
            hash.update(&buf[..n]);
            zip.write_all(&buf[..n])?;
            bytes += n as u64;
        }
        resources.push(Resource {
            path: name,
            hash: hex(&hash.finalize()),
            bytes,
        });
        Ok::<(), io::Error>(())
    };
    for warc in warcs {
        let name = warc.file_name().unwrap_or_default().to_string_lossy();
        let mut file = File::open(warc).map_err(|e| at(warc, e))?;
        add(&mut zip, format!("archive/{name}"), &mut file)?;
    }
    let cdx: String = index.iter().map(|line| format!("{line}\n")).collect();
    add(&mut zip, "indexes/index.cdx".into(), &mut cdx.as_bytes())?;
    add(
        &mut zip,
        "pages/pages.jsonl".into(),
        &mut pages(index).as_bytes(),
    )?;
    let package = datapackage(&resources);
    let options = SimpleFileOptions::default().compression_method(CompressionMethod::Stored);
    zip.start_file("datapackage.json", options)
        .map_err(io::Error::other)?;
    zip.write_all(package.as_bytes())?;
    let digest = serde_json::json!({
        "path": "datapackage.json",
        "hash": format!("sha256:{}", hex(&Sha256::digest(package.as_bytes()))),
    });
    zip.start_file("datapackage-digest.json", options)
        .map_err(io::Error::other)?;
    zip.write_all(digest.to_string().as_bytes())?;
    let mut out = zip.finish().map_err(io::Error::other)?;
    out.flush().map_err(|e| at(&tmp, e))?;
    drop(out);
    std::fs::rename(&tmp, path).map_err(|e| at(path, e))
}

/// A file of the package, as `datapackage.json` lists it.
struct Resource {
    path: String,
    hash: String,
    bytes: u64,
}

/// `datapackage.json`: every file but itself, with its SHA-256 and size.
fn datapackage(resources: &[Resource]) -> String {
    let resources: Vec<serde_json::Value> = resources
        .iter()
        .map(|r| {
            let name = r.path.rsplit('/').next().unwrap_or(&r.path);
            serde_json::json!({
                "name": name,
                "path": r.path,
                "hash": format!("sha256:{}", r.hash),
                "bytes": r.bytes,
            })
        })
        .collect();
    let created = String::from_utf8_lossy(&Rfc3339(SystemTime::now()).text()).into_owned();
    let package = serde_json::json!({
        "profile": "data-package",
        "resources": resources,
        "created": created,
        "wacz_version": WACZ_VERSION,
        "software": format!("crawler {}", env!("CARGO_PKG_VERSION")),
    });
    serde_json::to_string_pretty(&package).unwrap_or_default()
}

/// `pages/pages.jsonl`: its header, then each HTML page the index has answered 200, with
/// when it was captured.
fn pages(index: &[String]) -> String {
    let mut out = String::from(
        "{\"format\": \"json-pages-1.0\", \"id\": \"pages\", \"title\": \"All Pages\"}\n",
    );
    for line in index {
        let mut parts = line.splitn(3, ' ');
        let (Some(_), Some(ts), Some(json)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let Ok(fields) = serde_json::from_str::<serde_json::Value>(json) else {
            continue;
        };
        let html = fields["mime"].as_str() == Some("text/html");
        if html && fields["status"].as_str() == Some("200") && ts.len() == 14 {
            let ts = format!(
                "{}-{}-{}T{}:{}:{}Z",
                &ts[0..4],
                &ts[4..6],
                &ts[6..8],
                &ts[8..10],
                &ts[10..12],
                &ts[12..14]
            );
            // An id of its own, as the format asks (and its validator reads the rows under
            // the header's columns: format, id, title).
            let url = fields["url"].as_str().unwrap_or_default();
            let id = hex(&Sha256::digest(format!("{url} {ts}").as_bytes())[..8]);
            let page = serde_json::json!({ "id": id, "url": url, "ts": ts });
            out.push_str(&page.to_string());
            out.push('\n');
        }
    }
    out
}

/// Lower-case hex, as the data package writes hashes.
fn hex(bytes: &[u8]) -> String {
    data_encoding::HEXLOWER.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_the_html_answered_200() {
        let index = [
            r#"com,example)/ 20261127075307 {"url": "https://example.com/", "mime": "text/html", "status": "200", "length": "1", "offset": "0", "filename": "a.warc.gz"}"#,
            r#"com,example)/a.png 20261127075308 {"url": "https://example.com/a.png", "mime": "image/png", "status": "200", "length": "1", "offset": "9", "filename": "a.warc.gz"}"#,
            r#"com,example)/gone 20261127075309 {"url": "https://example.com/gone", "mime": "text/html", "status": "404", "length": "1", "offset": "19", "filename": "a.warc.gz"}"#,
        ]
        .map(String::from);
        let text = pages(&index);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(lines[0].contains("json-pages-1.0"));
        let page: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(page["url"], "https://example.com/");
        assert_eq!(page["ts"], "2026-11-27T07:53:07Z");
        assert_eq!(page["id"].as_str().map(str::len), Some(16));
    }
}
