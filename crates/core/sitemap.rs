//! Sitemaps (sitemaps.org protocol 0.9): XML `urlset` and `sitemapindex`, plain text, gzip;
//! read as a stream of entries, and the set of URLs the crawl knows to be sitemaps.
//!
//! A sitemap is fetched by a worker like any page, through the frontier (so once, politely,
//! after robots.txt); what makes it a sitemap is that the crawl listed it as one (a
//! `Sitemap:` line of robots.txt, `--sitemap`, an index) or that its body is a `<urlset>` or
//! a `<sitemapindex>`. Its entries are then pushed as links are.
//!
//! Sitemaps are written by strangers. The protocol's limits hold while reading: at most
//! [`MAX_URLS`] entries per file (the rest are counted, not kept) and [`MAX_BYTES`] read per
//! file after decompression (a gzip bomb stops there); no single element or line may
//! take more than [`MAX_TOKEN_BYTES`], so the memory a file takes is bounded whatever it
//! holds; indexes nest at most [`MAX_NESTING`] deep and a host lists at most
//! [`MAX_PER_HOST`] sitemaps.

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use frontier::{Canonical, Canonicalizer};
use quick_xml::events::Event;
use url::Url;

/// Entries kept per sitemap file (the protocol's limit); the rest are counted and dropped.
pub(crate) const MAX_URLS: usize = 50_000;
/// Bytes read per sitemap file, after decompression (the protocol's 50 MB).
pub(crate) const MAX_BYTES: u64 = 50_000_000;
/// The most bytes read without an element, text or line ending: what one token may make the
/// parser buffer. A URL is at most 2,048 bytes; 64 KiB leaves room for long comments and
/// attribute lists, and keeps a file of one endless text node from taking 50 MB.
pub(crate) const MAX_TOKEN_BYTES: u64 = 64 << 10;
/// The longest `loc` kept (the protocol: less than 2,048 characters).
const MAX_LOC_BYTES: usize = 2048;
/// The longest `lastmod` kept: a W3C datetime with fractions of a second is 32 bytes.
const MAX_LASTMOD_BYTES: usize = 40;
/// Index levels followed: a sitemap listed by robots.txt or `--sitemap` is at 0, a sitemap
/// an index at level n lists is at n + 1, and an index at this level lists nothing more.
/// Real sites use one level (an index of sitemaps); three leave room and stop a loop of
/// indexes listing each other under new names.
pub(crate) const MAX_NESTING: u8 = 3;
/// Sitemaps taken per host: an index pointing to thousands more is cut here.
pub(crate) const MAX_PER_HOST: u32 = 1_000;
/// Sitemap URLs remembered by the crawl, all hosts together (about 200 bytes each).
const MAX_KNOWN: usize = 100_000;
/// `lastmod` values waiting for their page's record, all sitemaps together (about 200 bytes
/// each); past this, pages get a null `lastmod`.
const MAX_LASTMODS: usize = 200_000;

/// What a sitemap file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `<urlset>`: pages.
    Urlset,
    /// `<sitemapindex>`: other sitemaps.
    Index,
    /// One URL per line.
    Text,
}

/// One URL a sitemap lists.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    /// The `loc`, as written (entities resolved, whitespace trimmed).
    pub(crate) loc: String,
    /// The `lastmod`, as written, when there is one that looks like a date.
    pub(crate) lastmod: Option<String>,
}

/// Counts a capped reader keeps, which the parser reads back.
struct Capped<R> {
    inner: R,
    /// Bytes read so far.
    read: u64,
    /// Bytes read since the parser last finished a token.
    since_token: u64,
    /// The file went past [`MAX_BYTES`].
    over_bytes: bool,
    /// One token went past [`MAX_TOKEN_BYTES`].
    over_token: bool,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.read >= MAX_BYTES {
            self.over_bytes = true;
            return Ok(0);
        }
        if self.since_token >= MAX_TOKEN_BYTES {
            self.over_token = true;
            return Ok(0);
        }
        let room = (MAX_BYTES - self.read).min(MAX_TOKEN_BYTES - self.since_token);
        let want = buf.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.read += n as u64;
        self.since_token += n as u64;
        Ok(n)
    }
}

/// The body as bytes to read: gunzipped when it starts with the gzip magic, whatever its
/// name or content type said (a `.xml.gz` file is often served as `application/octet-stream`,
/// and a server may gzip one twice).
type Source<'a> = BufReader<Capped<Box<dyn Read + Send + 'a>>>;

/// How the file is being read.
enum Syntax<'a> {
    Xml(Box<quick_xml::Reader<Source<'a>>>),
    Text(Source<'a>),
}

/// A sitemap read one entry at a time: never the whole (decompressed) file in memory.
pub(crate) struct Reader<'a> {
    syntax: Syntax<'a>,
    kind: Option<Kind>,
    /// Entries handed out.
    taken: usize,
    /// Entries seen past [`MAX_URLS`], or too long, or not a URL (text): counted, dropped.
    pub(crate) dropped: u64,
    /// Why reading stopped before the end, if it did.
    pub(crate) error: Option<String>,
    done: bool,
    /// Reused buffers: quick-xml's event buffer, and the `loc` and `lastmod` being read.
    buf: Vec<u8>,
    loc: String,
    lastmod: String,
    /// Which text is being read: none, the `loc` or the `lastmod` of an entry.
    field: Field,
    /// Elements open.
    open: usize,
}

/// The elements the reader tells apart, by local name (any namespace prefix).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Name {
    Urlset,
    Index,
    /// `url` or `sitemap`.
    Entry,
    Loc,
    Lastmod,
    Other,
}

/// An XML event, as much of it as the reader needs, owned.
enum Token {
    Open {
        name: Name,
        empty: bool,
    },
    Close(Name),
    /// Text, CDATA or a resolved reference.
    Text(String),
    Eof,
    Other,
}

impl Token {
    fn of(event: Event<'_>) -> Token {
        let name = |local: &str| match local {
            "urlset" => Name::Urlset,
            "sitemapindex" => Name::Index,
            "url" | "sitemap" => Name::Entry,
            "loc" => Name::Loc,
            "lastmod" => Name::Lastmod,
            _ => Name::Other,
        };
        match event {
            Event::Start(start) => Token::Open {
                name: name(start.local_name().as_ref()),
                empty: false,
            },
            Event::Empty(start) => Token::Open {
                name: name(start.local_name().as_ref()),
                empty: true,
            },
            Event::End(end) => Token::Close(name(end.local_name().as_ref())),
            Event::Text(text) => Token::Text(text.xml10_content().into_owned()),
            Event::CData(data) => Token::Text(data.xml10_content().into_owned()),
            Event::GeneralRef(reference) => {
                let resolved = match reference.resolve_char_ref() {
                    Ok(Some(c)) => Some(c.to_string()),
                    Ok(None) => {
                        quick_xml::escape::resolve_predefined_entity(&reference).map(str::to_owned)
                    }
                    Err(_) => None,
                };
                resolved.map_or(Token::Other, Token::Text)
            }
            Event::Eof => Token::Eof,
            _ => Token::Other,
        }
    }
}

/// The field of an entry whose text is being read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Field {
    None,
    Loc,
    Lastmod,
}

impl<'a> Reader<'a> {
    /// A reader of `body`, gunzipped if it is gzip, read as XML if its first non-blank byte
    /// is `<` and as text otherwise.
    pub(crate) fn new(body: &'a [u8]) -> Reader<'a> {
        let raw: Box<dyn Read + Send + 'a> = if body.starts_with(&[0x1f, 0x8b]) {
            Box::new(flate2::read::MultiGzDecoder::new(body))
        } else {
            Box::new(body)
        };
        let mut source = BufReader::with_capacity(
            8 << 10,
            Capped {
                inner: raw,
                read: 0,
                since_token: 0,
                over_bytes: false,
                over_token: false,
            },
        );
        let xml = sniff_xml(&mut source);
        let syntax = if xml {
            let mut reader = quick_xml::Reader::from_reader(source);
            // Mismatched end tags are common and harmless here: the entries are what matter.
            reader.config_mut().check_end_names = false;
            Syntax::Xml(Box::new(reader))
        } else {
            Syntax::Text(source)
        };
        Reader {
            syntax,
            kind: (!xml).then_some(Kind::Text),
            taken: 0,
            dropped: 0,
            error: None,
            done: false,
            buf: Vec::new(),
            loc: String::new(),
            lastmod: String::new(),
            field: Field::None,
            open: 0,
        }
    }

    /// What the file is, once known (after the first entry, or the root element).
    pub(crate) fn kind(&self) -> Option<Kind> {
        self.kind
    }

    /// The next entry kept, or `None` at the end of the file (or of what is read of it).
    /// Entries past [`MAX_URLS`] are counted in `dropped` while the rest of the file is read.
    pub(crate) fn next_entry(&mut self) -> Option<Entry> {
        loop {
            if self.done {
                return None;
            }
            let entry = match self.syntax {
                Syntax::Xml(_) => self.next_xml(),
                Syntax::Text(_) => self.next_line(),
            }?;
            if self.taken >= MAX_URLS {
                self.dropped += 1;
                continue;
            }
            self.taken += 1;
            return Some(entry);
        }
    }

    /// Stops reading with `why`, noting the cap the source hit if it hit one.
    fn stop(&mut self, why: Option<String>) {
        self.done = true;
        let source = match &self.syntax {
            Syntax::Xml(reader) => reader.get_ref().get_ref(),
            Syntax::Text(source) => source.get_ref(),
        };
        let capped = if source.over_bytes {
            Some(format!(
                "over the protocol's {MAX_BYTES} bytes; the rest not read"
            ))
        } else if source.over_token {
            Some(format!(
                "{MAX_TOKEN_BYTES} bytes without an element or line ending; the rest not read"
            ))
        } else {
            None
        };
        self.error = capped.or(why);
    }

    /// The next `<url>` or `<sitemap>` entry with a `loc`.
    fn next_xml(&mut self) -> Option<Entry> {
        loop {
            let Syntax::Xml(reader) = &mut self.syntax else {
                return None;
            };
            self.buf.clear();
            reader.get_mut().get_mut().since_token = 0;
            // Turned into owned facts at once: the event borrows the buffer.
            let token = match reader.read_event_into(&mut self.buf) {
                Ok(event) => Token::of(event),
                Err(err) => {
                    let why = format!("malformed XML: {err}");
                    self.stop(Some(why));
                    return None;
                }
            };
            match token {
                Token::Open { name, empty } => {
                    if !empty {
                        self.open += 1;
                    }
                    if self.kind.is_none() {
                        self.kind = match name {
                            Name::Urlset => Some(Kind::Urlset),
                            Name::Index => Some(Kind::Index),
                            _ => {
                                let why = "not a sitemap: the root is not <urlset> or \
                                           <sitemapindex>";
                                self.stop(Some(why.to_owned()));
                                return None;
                            }
                        };
                        continue;
                    }
                    match name {
                        Name::Entry => {
                            self.loc.clear();
                            self.lastmod.clear();
                        }
                        Name::Loc if !empty => self.field = Field::Loc,
                        Name::Lastmod if !empty => self.field = Field::Lastmod,
                        _ => {}
                    }
                }
                Token::Close(name) => {
                    self.open = self.open.saturating_sub(1);
                    self.field = Field::None;
                    if name == Name::Entry {
                        if let Some(entry) = self.entry() {
                            return Some(entry);
                        }
                    } else if self.open == 0 {
                        // The root closed: what follows is not the sitemap's.
                        self.stop(None);
                        return None;
                    }
                }
                Token::Text(text) => self.append(&text),
                Token::Eof => {
                    let why = self
                        .kind
                        .is_none()
                        .then(|| "empty, or not a sitemap".to_owned());
                    self.stop(why);
                    return None;
                }
                Token::Other => {}
            }
        }
    }

    /// Adds text to the field being read, up to its bound (a longer one is spoiled, and
    /// dropped with its entry for a `loc`, ignored for a `lastmod`).
    fn append(&mut self, text: &str) {
        let (field, max) = match self.field {
            Field::None => return,
            Field::Loc => (&mut self.loc, MAX_LOC_BYTES),
            Field::Lastmod => (&mut self.lastmod, MAX_LASTMOD_BYTES),
        };
        if field.len() + text.len() <= max + 1 {
            field.push_str(text);
        } else {
            // Past the bound: marked as too long without holding more of it.
            field.clear();
            field.extend(std::iter::repeat_n('x', max + 1));
        }
    }

    /// The entry just closed, if it has a usable `loc`.
    fn entry(&mut self) -> Option<Entry> {
        let loc = self.loc.trim();
        if loc.is_empty() || loc.len() > MAX_LOC_BYTES {
            if !loc.is_empty() {
                self.dropped += 1;
            }
            return None;
        }
        let lastmod = self.lastmod.trim();
        let lastmod = (is_date(lastmod)).then(|| lastmod.to_owned());
        Some(Entry {
            loc: loc.to_owned(),
            lastmod,
        })
    }

    /// The next line that is an absolute http(s) URL; other lines are junk, counted.
    fn next_line(&mut self) -> Option<Entry> {
        loop {
            let Syntax::Text(source) = &mut self.syntax else {
                return None;
            };
            source.get_mut().since_token = 0;
            let mut line = Vec::new();
            let mut too_long = false;
            let ended = loop {
                let chunk = match source.fill_buf() {
                    Ok(chunk) => chunk,
                    Err(err) => {
                        let why = format!("reading: {err}");
                        self.stop(Some(why));
                        return None;
                    }
                };
                if chunk.is_empty() {
                    break false;
                }
                let (part, found) = match chunk.iter().position(|&b| b == b'\n') {
                    Some(i) => (&chunk[..i], true),
                    None => (chunk, false),
                };
                if line.len() + part.len() <= MAX_LOC_BYTES {
                    line.extend_from_slice(part);
                } else {
                    too_long = true;
                }
                let used = part.len() + usize::from(found);
                source.consume(used);
                // A long line is not a token the parser holds: only its count goes on.
                source.get_mut().since_token = 0;
                if found {
                    break true;
                }
            };
            let text = String::from_utf8_lossy(&line);
            let text = text.trim_start_matches('\u{feff}').trim();
            if !ended && text.is_empty() && !too_long {
                self.stop(None);
                return None;
            }
            if too_long {
                self.dropped += 1;
                continue;
            }
            if text.is_empty() {
                continue;
            }
            let url = Url::parse(text)
                .ok()
                .filter(|u| matches!(u.scheme(), "http" | "https"));
            match url {
                Some(_) => {
                    return Some(Entry {
                        loc: text.to_owned(),
                        lastmod: None,
                    });
                }
                None => self.dropped += 1,
            }
        }
    }
}

/// Whether the body starts, after a byte-order mark and blanks, with `<`.
fn sniff_xml(source: &mut Source<'_>) -> bool {
    let Ok(head) = source.fill_buf() else {
        return false;
    };
    let head = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    head.iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|&b| b == b'<')
}

/// Whether a `lastmod` looks like a W3C datetime (`2024-05-01`, `2024-05-01T10:00:00+02:00`):
/// digits, `-`, `:`, `T`, `Z`, `+`, `.`, starting with four digits.
fn is_date(text: &str) -> bool {
    text.len() >= 4
        && text.len() <= MAX_LASTMOD_BYTES
        && text.bytes().take(4).all(|b| b.is_ascii_digit())
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'-' | b':' | b'T' | b'Z' | b'+' | b'.'))
}

/// Whether a body whose URL the crawl does not know as a sitemap is one all the same: an
/// XML (or gzipped XML) body whose root is `<urlset>` or `<sitemapindex>`. Reads at most a
/// few KiB. HTML bodies never get here.
pub(crate) fn sniff(body: &[u8]) -> bool {
    const HEAD: usize = 4096;
    let mut head = Vec::with_capacity(HEAD);
    if body.starts_with(&[0x1f, 0x8b]) {
        let decoder = flate2::read::MultiGzDecoder::new(body);
        if decoder.take(HEAD as u64).read_to_end(&mut head).is_err() && head.is_empty() {
            return false;
        }
    } else {
        head.extend_from_slice(&body[..body.len().min(HEAD)]);
    }
    let head = String::from_utf8_lossy(&head);
    // The root element: the first `<` not opening a declaration, comment or instruction.
    let mut rest = head.as_ref();
    while let Some(at) = rest.find('<') {
        rest = &rest[at + 1..];
        if rest.starts_with('?') || rest.starts_with('!') {
            continue;
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == ':' || *c == '_' || *c == '-')
            .collect();
        let local = name.rsplit(':').next().unwrap_or_default();
        return matches!(local, "urlset" | "sitemapindex");
    }
    false
}

/// Whether a response with this content type may be a sitemap not known as one: XML,
/// gzip, an unnamed binary, or no type at all. Checked before any look at the body, so
/// that HTML pages, the crawl's bulk, cost nothing.
pub(crate) fn may_be_sitemap(content_type: Option<&str>) -> bool {
    content_type.is_none_or(|t| {
        let t = t.to_ascii_lowercase();
        t.contains("xml") || t.contains("gzip") || t.contains("octet-stream")
    })
}

/// The sitemaps of the crawl: which URLs are sitemaps (and how deep in indexes), what each
/// host has listed, the `lastmod` of pages waiting for their records, and counts for the
/// summary.
pub(crate) struct Sitemaps {
    /// `crawl.sitemaps`: follow robots.txt's `Sitemap:` lines and read bodies that are
    /// sitemaps. `--sitemap` seeds are read either way.
    pub(crate) enabled: bool,
    canon: Canonicalizer,
    /// Set once any URL is known as a sitemap: until then, pages cost no lock.
    any: AtomicBool,
    /// A std mutex, held for a lookup or an insert, never across an await.
    known: Mutex<Known>,
    /// Canonical page URL to its `lastmod`, until its record is written.
    lastmods: Mutex<HashMap<Box<str>, Box<str>>>,
    /// Entries in `lastmods`: when 0, records skip the lock.
    waiting: AtomicUsize,
    /// Sitemaps read.
    pub(crate) fetched: AtomicU64,
    /// Entries read from them and pushed (new or not).
    pub(crate) listed: AtomicU64,
    /// Entries dropped: past the protocol's limits, too long, not URLs.
    pub(crate) dropped: AtomicU64,
    /// Sitemaps not taken: too deeply nested, over a host's or the crawl's cap.
    pub(crate) refused: AtomicU64,
}

/// The URLs known as sitemaps, and how many each host listed.
#[derive(Default)]
struct Known {
    /// Canonical URL to its nesting level.
    urls: HashMap<Box<str>, u8>,
    /// Host key to its sitemaps taken.
    per_host: HashMap<Box<str>, u32>,
}

impl Sitemaps {
    /// None known yet; `enabled` is `crawl.sitemaps`.
    pub(crate) fn new(enabled: bool) -> Self {
        Sitemaps {
            enabled,
            canon: Canonicalizer::new(),
            any: AtomicBool::new(false),
            known: Mutex::new(Known::default()),
            lastmods: Mutex::new(HashMap::new()),
            waiting: AtomicUsize::new(0),
            fetched: AtomicU64::new(0),
            listed: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        }
    }

    /// The canonical form of `href` resolved against `base`.
    pub(crate) fn canonicalize(&self, base: &Url, href: &str) -> Option<Canonical> {
        self.canon.canonicalize_relative(base, href).ok()
    }

    /// Takes `url` as a sitemap at `nesting`, unless it is too deep or its host or the crawl
    /// has too many. Returns whether it was newly taken (a URL known already is not, and
    /// keeps its level).
    pub(crate) fn mark(&self, url: &Canonical, nesting: u8) -> bool {
        if nesting > MAX_NESTING {
            self.refused.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        let mut known = self.known.lock().unwrap_or_else(PoisonError::into_inner);
        if known.urls.contains_key(url.as_str()) {
            return false;
        }
        let host = url.host_key();
        let taken = known.per_host.get(host).copied().unwrap_or(0);
        if taken >= MAX_PER_HOST || known.urls.len() >= MAX_KNOWN {
            self.refused.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        known.per_host.insert(host.into(), taken + 1);
        known.urls.insert(url.as_str().into(), nesting);
        self.any.store(true, Ordering::Release);
        true
    }

    /// Forgets a sitemap just marked whose push was not admitted (seen, or out of scope):
    /// it is not fetched, so it does not count against its host.
    pub(crate) fn unmark(&self, url: &Canonical) {
        let mut known = self.known.lock().unwrap_or_else(PoisonError::into_inner);
        if known.urls.remove(url.as_str()).is_some()
            && let Some(n) = known.per_host.get_mut(url.host_key())
        {
            *n = n.saturating_sub(1);
        }
    }

    /// Every URL known as a sitemap, with its level, for the state directory.
    pub(crate) fn known(&self) -> Vec<(String, u8)> {
        let known = self.known.lock().unwrap_or_else(PoisonError::into_inner);
        let mut all: Vec<(String, u8)> = known
            .urls
            .iter()
            .map(|(url, level)| (url.to_string(), *level))
            .collect();
        all.sort();
        all
    }

    /// The nesting level of `url` if it is known as a sitemap.
    pub(crate) fn nesting(&self, url: &str) -> Option<u8> {
        if !self.any.load(Ordering::Acquire) {
            return None;
        }
        let known = self.known.lock().unwrap_or_else(PoisonError::into_inner);
        known.urls.get(url).copied()
    }

    /// Keeps `lastmod` for the page `url` until its record, unless one is kept already or
    /// too many are. Returns whether it was kept.
    pub(crate) fn keep_lastmod(&self, url: &Canonical, lastmod: &str) -> bool {
        let mut lastmods = self.lastmods.lock().unwrap_or_else(PoisonError::into_inner);
        if lastmods.len() >= MAX_LASTMODS || lastmods.contains_key(url.as_str()) {
            return false;
        }
        lastmods.insert(url.as_str().into(), lastmod.into());
        self.waiting.fetch_add(1, Ordering::Release);
        true
    }

    /// Takes the `lastmod` kept for `url`, if any.
    pub(crate) fn take_lastmod(&self, url: &str) -> Option<Box<str>> {
        if self.waiting.load(Ordering::Acquire) == 0 {
            return None;
        }
        let mut lastmods = self.lastmods.lock().unwrap_or_else(PoisonError::into_inner);
        let taken = lastmods.remove(url);
        if taken.is_some() {
            self.waiting.fetch_sub(1, Ordering::Release);
        }
        taken
    }
}

#[cfg(test)]
mod tests;
