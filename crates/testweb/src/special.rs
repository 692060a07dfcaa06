//! The special pages' responses. Their links for the ground truth are the site model's
//! (`site::special_links`); the tests check the two against an HTML parser.

use std::io::Write;
use std::sync::atomic::Ordering::Relaxed;

use bytes::Bytes;
use flate2::write::{GzEncoder, ZlibEncoder};
use flate2::{Compress, Compression, FlushCompress};
use hyper::header::{
    CONTENT_ENCODING, CONTENT_TYPE, HeaderName, HeaderValue, LOCATION, RETRY_AFTER,
};

use crate::config::{Charset, Declared, NonHtml, Robots, SitemapFormat, SpecialKind};
use crate::reply::{Body, Reply, Wait, reply};
use crate::site::{Site, encoded_targets, mix};

const HTML: &str = "text/html; charset=utf-8";
const TEXT: &str = "text/plain; charset=utf-8";

/// The answer to `/robots.txt`.
pub(crate) fn robots(site: &Site, host: usize) -> Reply {
    let host = &site.hosts[host];
    match (&host.config.robots, &host.robots_txt) {
        (Robots::Rules(_), Some(text)) => reply(200, TEXT, Body::full(text.clone())),
        (Robots::Status(status), _) => reply(
            *status,
            TEXT,
            Body::full(format!("robots.txt answers {status}\n")),
        ),
        _ => not_found(),
    }
}

/// 404 for a path that names nothing.
pub(crate) fn not_found() -> Reply {
    reply(
        404,
        TEXT,
        Body::full(Bytes::from_static(b"404 not found\n")),
    )
}

/// The answer to a request for a name the address does not serve (RFC 9110's 421).
pub(crate) fn misdirected() -> Reply {
    reply(
        421,
        TEXT,
        Body::full(Bytes::from_static(b"421 no such host at this address\n")),
    )
}

/// A small HTML page without links.
fn leaf_html(title: &str) -> Body {
    Body::full(format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title></head>\n\
         <body><p>A page without links: {title}</p></body></html>\n"
    ))
}

/// The answer to a helper path under `/t/`: a small page, or, for a `.css`, `.png` or `.js`
/// path, a body of that type (what a [`SpecialKind::Styled`] page needs).
pub(crate) fn leaf(path: &str) -> Reply {
    let name = path.rsplit('/').next().unwrap_or_default();
    match name.rsplit_once('.').map(|(_, extension)| extension) {
        Some("css") => {
            let css = match name {
                "site.css" => "@import \"base.css\";\nbody { background: url(\"bg.png\") }\n",
                "base.css" => "h1 { background-image: url(base.png) }\n",
                _ => "/* nothing to load */\n",
            };
            reply(200, "text/css", Body::full(css))
        }
        Some("png") => {
            // Bytes of their own, so that no two images are duplicates of each other.
            let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
            png.extend_from_slice(path.as_bytes());
            reply(200, "image/png", Body::full(png))
        }
        Some("js") => reply(
            200,
            "text/javascript",
            Body::full(format!("console.log({:?});\n", path)),
        ),
        _ => reply(200, HTML, leaf_html(&html_escape(path))),
    }
}

/// The HTML of a [`SpecialKind::Styled`] page whose requisites start with `t`, with an
/// image on the host at `cdn`, if any.
fn styled(t: &str, cdn: Option<&str>) -> String {
    let cdn = cdn
        .map(|origin| format!("<img src=\"{origin}/t/cdn/photo.png\" alt=\"photo\">\n"))
        .unwrap_or_default();
    format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>styled</title>\n\
         <link rel=\"stylesheet\" href=\"{t}/site.css\">\n\
         <link rel=\"icon\" href=\"{t}/favicon.png\">\n\
         <style>.hero {{ background: url({t}/hero.png) }}</style>\n\
         <script src=\"{t}/app.js\"></script></head>\n\
         <body><h1 class=\"hero\">A page that needs requisites</h1>\n\
         <img src=\"{t}/logo.png\" srcset=\"{t}/logo-2x.png 2x, {t}/logo-3x.png 3x\" alt=\"logo\">\n\
         <div style=\"background-image: url('{t}/div.png')\">text</div>\n{cdn}\
         </body></html>\n"
    )
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn with_header(mut response: Reply, name: HeaderName, value: &str) -> Reply {
    if let Ok(value) = HeaderValue::from_str(value) {
        response.headers_mut().insert(name, value);
    }
    response
}

fn status_reply(status: u16, retry_after: Option<u32>) -> Reply {
    let response = reply(status, TEXT, Body::full(format!("status {status}\n")));
    match retry_after {
        Some(seconds) => with_header(response, RETRY_AFTER, &seconds.to_string()),
        None => response,
    }
}

/// The answer of special page `index` of `host`, and what to wait for before sending it.
pub(crate) fn respond(site: &Site, host: usize, index: usize) -> (Reply, Wait) {
    let host_site = &site.hosts[host];
    let special = &host_site.config.specials[index];
    let path = special.path.as_str();
    let t = format!("/t{path}");
    let now = |reply| (reply, Wait::None);
    match &special.kind {
        SpecialKind::Status {
            status,
            retry_after,
        } => now(status_reply(*status, *retry_after)),
        SpecialKind::Flaky {
            status,
            failures,
            retry_after,
        } => {
            let hit = host_site.hits[index].fetch_add(1, Relaxed);
            if hit < *failures {
                now(status_reply(*status, *retry_after))
            } else {
                now(reply(200, HTML, leaf_html(path)))
            }
        }
        SpecialKind::Redirect {
            status,
            host: target,
            to,
        } => {
            let location = match target {
                Some(target) => format!("{}{to}", site.hosts[*target].origin),
                None => to.clone(),
            };
            let body = Body::full(format!("moved to {location}\n"));
            now(with_header(reply(*status, TEXT, body), LOCATION, &location))
        }
        SpecialKind::Delay(delay) => (reply(200, HTML, leaf_html(path)), Wait::Delay(*delay)),
        SpecialKind::Trickle {
            chunk_bytes,
            chunks,
            interval,
        } => {
            let chunk = site.filler(mix(index as u64), *chunk_bytes);
            now(reply(200, HTML, Body::trickle(chunk, *chunks, *interval)))
        }
        SpecialKind::Hang => (reply(200, HTML, leaf_html(path)), Wait::Forever),
        SpecialKind::Huge { bytes } => {
            let chunk = site.filler(0, 65_536);
            now(reply(200, HTML, Body::repeat(chunk, *bytes)))
        }
        SpecialKind::Chapter { next } => {
            let next = next
                .as_ref()
                .map(|next| format!("<a href=\"{next}\">next chapter</a>"))
                .unwrap_or_default();
            let html = format!(
                "<!DOCTYPE html>\n<html><head><title>{path}</title></head>\n\
                 <body><p>A chapter.</p><p>{next}</p></body></html>\n"
            );
            now(reply(200, HTML, Body::full(html.into_bytes())))
        }
        SpecialKind::Gzip => {
            let html = format!(
                "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>gzip</title></head>\n\
                 <body><p>This page was sent compressed.</p>\n\
                 <p><a href=\"{t}/1\">one</a> <a href=\"{t}/2\">two</a></p>\n<p>{}</p>\n\
                 </body></html>\n",
                String::from_utf8_lossy(&site.filler(7, 2_000)),
            );
            let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
            let compressed = encoder
                .write_all(html.as_bytes())
                .and_then(|()| encoder.finish());
            let response = reply(200, HTML, Body::full(compressed.unwrap_or_default()));
            now(with_header(response, CONTENT_ENCODING, "gzip"))
        }
        SpecialKind::GzipBomb { decompressed_bytes } => {
            let bomb = host_site.bombs[index].get_or_init(|| gzip_spaces(*decompressed_bytes));
            let response = reply(200, HTML, Body::full(bomb.clone()));
            now(with_header(response, CONTENT_ENCODING, "gzip"))
        }
        SpecialKind::Sitemap {
            format,
            entries,
            gzip: zipped,
        } => {
            let (body, content_type) = sitemap(&host_site.origin, *format, entries);
            if *zipped {
                now(reply(
                    200,
                    "application/gzip",
                    Body::full(gzip(body.as_bytes())),
                ))
            } else {
                now(reply(200, content_type, Body::full(body)))
            }
        }
        SpecialKind::SitemapBomb { decompressed_bytes } => {
            let bomb = host_site.bombs[index]
                .get_or_init(|| sitemap_bomb(&host_site.origin, &t, *decompressed_bytes));
            now(reply(200, "application/gzip", Body::full(bomb.clone())))
        }
        SpecialKind::NonHtml(kind) => {
            let origin = &host_site.origin;
            let body = match kind {
                NonHtml::Png => png(&t, origin),
                NonHtml::Pdf => pdf(&t, origin),
            };
            now(reply(200, kind.content_type(), Body::full(body)))
        }
        SpecialKind::Malformed => now(reply(200, HTML, Body::full(malformed(&t)))),
        SpecialKind::Encoded { charset, declared } => {
            let (body, content_type) = encoded(&t, *charset, *declared);
            let mut response = reply(200, HTML, Body::full(body));
            if let Ok(value) = HeaderValue::from_str(&content_type) {
                response.headers_mut().insert(CONTENT_TYPE, value);
            }
            now(response)
        }
        SpecialKind::Styled { cdn } => {
            let cdn = cdn.and_then(|cdn| site.hosts.get(cdn)).map(|h| &h.origin);
            now(reply(
                200,
                HTML,
                Body::full(styled(&t, cdn.map(String::as_str))),
            ))
        }
        SpecialKind::BaseHref
        | SpecialKind::Nofollow
        | SpecialKind::MetaNofollow
        | SpecialKind::Canonical { .. } => {
            now(reply(200, HTML, Body::full(link_page(&special.kind, &t))))
        }
    }
}

/// The HTML of a special page that tests how links are read (a base URL, nofollow, a
/// canonical link), whose links start with `t`; empty for other kinds.
fn link_page(kind: &SpecialKind, t: &str) -> String {
    match kind {
        SpecialKind::BaseHref => format!(
            "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\
             <base href=\"{t}/base/\"><base href=\"{t}/wrong/\"><title>base</title></head>\n\
             <body><p>Links resolved against the base URL:\n<a href=\"a\">a</a>\n\
             <a href=\"sub/b\">b</a>\n<a href=\"../c\">c</a>\n<a href=\"/\">home</a></p>\n\
             </body></html>\n"
        ),
        SpecialKind::Nofollow => format!(
            "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>nofollow</title>\
             </head>\n<body><ul>\n\
             <li><a href=\"{t}/followed\">followed</a></li>\n\
             <li><a rel=\"nofollow\" href=\"{t}/nofollow-1\">nofollow</a></li>\n\
             <li><a rel=\"external NoFollow\" href=\"{t}/nofollow-2\">nofollow too</a></li>\n\
             <li><a rel=\"nofollowers\" href=\"{t}/followed-2\">not nofollow</a></li>\n\
             </ul></body></html>\n"
        ),
        SpecialKind::MetaNofollow => format!(
            "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\
             <meta name=\"robots\" content=\"noindex, NoFollow\"><title>meta nofollow</title>\
             </head>\n<body><p><a href=\"{t}/1\">one</a> <a href=\"{t}/2\">two</a></p>\n\
             </body></html>\n"
        ),
        SpecialKind::Canonical { href } => format!(
            "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\
             <link rel=\"canonical\" href=\"{}\"><title>canonical</title></head>\n\
             <body><p>The canonical version of this page is elsewhere.</p></body></html>\n",
            html_escape(href)
        ),
        _ => String::new(),
    }
}

/// A sitemap's text and its content type.
fn sitemap(origin: &str, format: SitemapFormat, entries: &[String]) -> (String, &'static str) {
    const XML: &str = "application/xml";
    const HEAD: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    const NS: &str = "xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\"";
    let mut out = String::new();
    match format {
        SitemapFormat::Urlset => {
            out.push_str(&format!("{HEAD}<urlset {NS}>\n"));
            for path in entries {
                out.push_str(&format!(
                    "  <url><loc>{origin}{}</loc><lastmod>2024-05-01</lastmod></url>\n",
                    html_escape(path)
                ));
            }
            out.push_str("</urlset>\n");
            (out, XML)
        }
        SitemapFormat::Index => {
            out.push_str(&format!("{HEAD}<sitemapindex {NS}>\n"));
            for path in entries {
                out.push_str(&format!(
                    "  <sitemap><loc>{origin}{}</loc></sitemap>\n",
                    html_escape(path)
                ));
            }
            out.push_str("</sitemapindex>\n");
            (out, XML)
        }
        SitemapFormat::Text => {
            out.push_str("# not a URL: a reader skips this line\n");
            for path in entries {
                out.push_str(&format!("{origin}{path}\n"));
            }
            (out, TEXT)
        }
    }
}

/// `data` as one gzip member.
fn gzip(data: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
    encoder
        .write_all(data)
        .and_then(|()| encoder.finish())
        .unwrap_or_default()
}

/// The sitemap bomb: three gzip members (a file may hold several), the entries before the
/// blanks, the blanks, the entry after them.
fn sitemap_bomb(origin: &str, t: &str, total: u64) -> Bytes {
    let head = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset>\n\
         <url><loc>{origin}{t}/1</loc></url>\n<url><loc>{origin}{t}/2</loc></url>\n\
         <url><loc>{origin}{t}/3</loc></url>\n"
    );
    let tail = format!("<url><loc>{origin}{t}/after-cap</loc></url>\n</urlset>\n");
    let blanks = total.saturating_sub((head.len() + tail.len()) as u64);
    let mut out = gzip(head.as_bytes());
    if blanks > 0 {
        out.extend_from_slice(&gzip_spaces(blanks));
    }
    out.extend_from_slice(&gzip(tail.as_bytes()));
    Bytes::from(out)
}

/// The malformed page.
fn malformed(t: &str) -> String {
    format!(
        "<html><head><title>malformed</title>\n<body>\n\
         <div class=main><p>An unclosed paragraph in an unclosed div.\n\
         <a href={t}/1>unquoted value</a>\n\
         <A HREF='{t}/2'>upper-case tag, single quotes</A>\n\
         <a  href = \"{t}/3\" >spaces around the equals sign</a>\n\
         <a href=\"{t}/4\">an anchor never closed\n\
         <a href=\"{t}/5\">which this one closes</a>\n\
         <table><a href=\"{t}/6\">inside a table, moved out by the parser</a><tr><td>cell</table>\n\
         <a href=\"{t}/&#55;\">a character reference</a>\n\
         <a href=\"{t}/\n8\">a newline in the value</a>\n\
         <a href=\"  {t}/9  \">spaces around the value</a>\n\
         <a href=\"{t}/10\" href=\"{t}/hidden-duplicate\">two href attributes</a>\n\
         <!-- <a href=\"{t}/hidden-comment\">in a comment</a> -->\n\
         <script>var html = '<a href=\"{t}/hidden-script\">in a script</a>';</script>\n\
         <textarea><a href=\"{t}/hidden-textarea\">in a textarea</a></textarea>\n\
         <p>Plain text: href=\"{t}/hidden-text\" is not a link.\n\
         <a data-href=\"{t}/hidden-data\">no href</a>\n\
         <a href=\"{t}/11\">unclosed, at the end of the file\n"
    )
}

/// An encoded page and its `Content-Type`.
fn encoded(t: &str, charset: Charset, declared: Declared) -> (Vec<u8>, String) {
    let label = charset.label();
    let meta = match declared {
        Declared::Header => String::new(),
        Declared::MetaCharset => format!("<meta charset=\"{label}\">"),
        Declared::MetaHttpEquiv => {
            format!("<meta http-equiv=\"Content-Type\" content=\"text/html; charset={label}\">")
        }
    };
    let (lang, title, text) = match charset {
        Charset::Windows1252 => (
            "fr",
            "Café crème",
            "Une page encodée en windows-1252 : café, crème brûlée, 10 € ; « naïve ».",
        ),
        Charset::ShiftJis => (
            "ja",
            "日本語のページ",
            "これはシフトJISで書かれたページです。",
        ),
    };
    let mut html = format!(
        "<!DOCTYPE html>\n<html lang=\"{lang}\"><head>{meta}<title>{title}</title></head>\n\
         <body><p>{text}</p>\n<ul>\n"
    );
    for target in encoded_targets(charset) {
        html.push_str(&format!("<li><a href=\"{t}/{target}\">{target}</a></li>\n"));
    }
    html.push_str("</ul></body></html>\n");
    let encoding = match charset {
        Charset::Windows1252 => encoding_rs::WINDOWS_1252,
        Charset::ShiftJis => encoding_rs::SHIFT_JIS,
    };
    let (bytes, _, _) = encoding.encode(&html);
    let content_type = match declared {
        Declared::Header => format!("text/html; charset={label}"),
        _ => "text/html".to_owned(),
    };
    (bytes.into_owned(), content_type)
}

/// A PNG chunk: length, type, data, CRC of type and data.
fn png_chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    let mut crc = crc32fast::Hasher::new();
    crc.update(kind);
    crc.update(data);
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    out.extend_from_slice(&crc.finalize().to_be_bytes());
}

/// A valid 1×1 PNG whose `tEXt` chunk holds link-like text.
fn png(t: &str, origin: &str) -> Vec<u8> {
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    // Width 1, height 1, 8 bits per channel, RGB, no interlace.
    png_chunk(&mut out, b"IHDR", &[0, 0, 0, 1, 0, 0, 0, 1, 8, 2, 0, 0, 0]);
    let text =
        format!("Comment\0<a href=\"{t}/in-png\">not a link</a> {origin}{t}/in-png-absolute");
    png_chunk(&mut out, b"tEXt", text.as_bytes());
    let mut zlib = ZlibEncoder::new(Vec::new(), Compression::default());
    // One scanline: filter byte 0, then one red pixel.
    let idat = zlib
        .write_all(&[0, 255, 0, 0])
        .and_then(|()| zlib.finish())
        .unwrap_or_default();
    png_chunk(&mut out, b"IDAT", &idat);
    png_chunk(&mut out, b"IEND", &[]);
    out
}

/// A small PDF whose page text and link annotation hold link-like text.
fn pdf(t: &str, origin: &str) -> Vec<u8> {
    let content = format!("BT /F1 12 Tf 72 720 Td (<a href=\"{t}/in-pdf\">not a link</a>) Tj ET");
    format!(
        "%PDF-1.4\n\
         1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n\
         2 0 obj\n<< /Type /Pages /Kids [3 0 R] /Count 1 >>\nendobj\n\
         3 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R \
         /Annots [5 0 R] >>\nendobj\n\
         4 0 obj\n<< /Length {} >>\nstream\n{content}\nendstream\nendobj\n\
         5 0 obj\n<< /Type /Annot /Subtype /Link /Rect [72 700 300 730] \
         /A << /S /URI /URI ({origin}{t}/in-pdf-uri) >> >>\nendobj\n\
         trailer\n<< /Root 1 0 R >>\n%%EOF\n",
        content.len()
    )
    .into_bytes()
}

/// Raw deflate of `input`, ended by a full flush: byte-aligned, and with no reference to
/// anything before it, so that copies of it can be concatenated.
fn deflate_block(input: &[u8]) -> Vec<u8> {
    let mut compress = Compress::new(Compression::best(), false);
    let mut out = Vec::with_capacity(input.len() / 256 + 1_024);
    loop {
        let consumed = compress.total_in() as usize;
        if out.len() == out.capacity() {
            out.reserve(out.capacity());
        }
        if compress
            .compress_vec(&input[consumed..], &mut out, FlushCompress::Full)
            .is_err()
        {
            return Vec::new();
        }
        if compress.total_in() as usize == input.len() && out.len() < out.capacity() {
            return out;
        }
    }
}

/// A gzip stream that decodes to `total` spaces, about a thousand times smaller, built from
/// copies of one compressed megabyte (so it costs the compression of a megabyte at most).
pub(crate) fn gzip_spaces(total: u64) -> Bytes {
    const CHUNK: u64 = 1 << 20;
    let spaces = vec![b' '; CHUNK.min(total) as usize];
    let full = deflate_block(&spaces);
    let rest_len = (total % CHUNK) as usize;
    let rest = if rest_len > 0 {
        deflate_block(&spaces[..rest_len])
    } else {
        Vec::new()
    };
    let copies = total / CHUNK;
    let mut out = Vec::with_capacity(18 + full.len() * copies as usize + rest.len() + 2);
    // Header: magic, deflate, no flags, no time, no extra flags, unknown OS.
    out.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255]);
    let mut crc = crc32fast::Hasher::new();
    let mut chunk_crc = crc32fast::Hasher::new();
    chunk_crc.update(&spaces);
    for _ in 0..copies {
        out.extend_from_slice(&full);
        crc.combine(&chunk_crc);
    }
    if rest_len > 0 {
        out.extend_from_slice(&rest);
        let mut rest_crc = crc32fast::Hasher::new();
        rest_crc.update(&spaces[..rest_len]);
        crc.combine(&rest_crc);
    }
    // A final, empty, fixed-Huffman block.
    out.extend_from_slice(&[0x03, 0x00]);
    out.extend_from_slice(&crc.finalize().to_le_bytes());
    out.extend_from_slice(&(total as u32).to_le_bytes());
    Bytes::from(out)
}
