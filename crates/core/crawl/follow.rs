//! What a response leads to: its redirect target (a seed's redirect is a seed too), its
//! page's links, a sitemap's entries, and the content-seen test that may skip them.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Mutex, PoisonError};

use frontier::{Canonical, Canonicalizer, Push};
use url::Url;

use crate::content::Digest;
use crate::errors::ErrorKind;
use crate::fetch::{self, Fetched};
use crate::sitemap::{self};
use crate::state::StateDir;
use links::{Extracted, Options, Page};

use super::*;
use crate::output::Revisit;
use crate::recrawl::Known;
use crate::requisite::{self, Memo};

/// What became of a page since the earlier crawl that recorded it as `known` (`None`: it
/// did not), now that it answered `fetched`, whose body's digest is `digest`.
fn revisit(known: Option<&Known>, fetched: &Fetched, digest: Option<&Digest>) -> Revisit {
    let Some(known) = known else {
        return Revisit::New;
    };
    let gone = |status| matches!(status, 404 | 410);
    match fetched.status {
        304 => Revisit::Unchanged,
        // A page gone before is still gone: not news.
        now if gone(now) && !known.status.is_some_and(gone) => Revisit::Gone,
        200..=299 => {
            let same = digest
                .zip(known.digest.as_ref())
                .is_some_and(|(now, then)| now.as_bytes() == then);
            if same {
                Revisit::Unchanged
            } else {
                Revisit::Changed
            }
        }
        // A redirect, an error answer: the same status as before is the same answer.
        now if known.status == Some(now) => Revisit::Unchanged,
        _ => Revisit::Changed,
    }
}

/// Sitemap entries read between two pushes: enough to make a push's await cheap, few enough
/// to keep a batch small (a few hundred KiB at most).
pub(super) const SITEMAP_BATCH: usize = 1_000;

/// Redirects followed from a seed before a target stops being a seed: enough for the usual
/// `http://` to `https://` to `www.` to `/en/` chains, few enough that a seed redirecting on
/// and on cannot widen the scope much.
pub(super) const MAX_SEED_REDIRECTS: u8 = 5;

/// A seed's redirect target is a seed too (Heritrix: "seeds redirect new seeds"): in scope,
/// at depth 0, so that `example.com` answering with a redirect to `www.example.com` crawls
/// `www.example.com`, and a list of URLs crawled with `crawl.max_depth = 0` follows its
/// redirects. The SSRF guard trusts a target only where it is the same server as the URL
/// that redirected to it ([`Guard::trust_redirect`]): the seed's server chose the target.
pub(crate) struct SeedRedirects {
    canon: Canonicalizer,
    /// Each target, with its redirects from a seed the user gave, and the targets in the
    /// order they were met with the URL that redirected to each (unknown for those of a
    /// shared crawl's other processes, or of an older state). A std mutex: taken once per
    /// redirect of a depth-0 URL.
    met: Mutex<(HashMap<String, u8>, Vec<Redirect>)>,
    /// Where the targets are kept for a resume, which puts them back in the scope.
    pub(super) state: Option<StateDir>,
}

/// A seed's redirect target, and the URL that redirected to it if known.
pub(crate) type Redirect = (String, Option<String>);

impl SeedRedirects {
    /// No targets yet, or those a resumed crawl had (`known`, each counted as one hop).
    pub(crate) fn new(canon: Canonicalizer, state: Option<StateDir>, known: &[Redirect]) -> Self {
        let hops = known.iter().map(|(url, _)| (url.clone(), 1)).collect();
        SeedRedirects {
            canon,
            met: Mutex::new((hops, known.to_vec())),
            state,
        }
    }

    /// The target of a redirect from `from` (a URL at depth 0) to `location`, if it is to be
    /// a seed: not too many redirects from a seed the user gave, and a URL we fetch.
    fn target(&self, from: &Url, location: &str) -> Option<Canonical> {
        let target = self.canon.canonicalize_relative(from, location).ok()?;
        let mut met = self.met.lock().unwrap_or_else(PoisonError::into_inner);
        let (hops, order) = &mut *met;
        let n = hops.get(from.as_str()).copied().unwrap_or(0) + 1;
        if n > MAX_SEED_REDIRECTS || hops.contains_key(target.as_str()) {
            return None;
        }
        hops.insert(target.as_str().to_owned(), n);
        order.push((target.as_str().to_owned(), Some(from.as_str().to_owned())));
        if let Some(state) = &self.state
            && let Err(err) = state.save_seed_redirects(order)
        {
            // The crawl goes on; a resume would only miss this target's host in scope.
            tracing::warn!("{err:#}");
        }
        Some(target)
    }
}

impl Crawler {
    /// Pushes what a response leads to (its redirect target, its page's links and
    /// requisites; a requisite `hops` from its page, only what a style sheet loads) and
    /// describes it for the record.
    pub(super) async fn follow<'a>(
        &self,
        depth: u32,
        url: &Url,
        fetched: &'a Fetched,
        digest: Option<Digest>,
        known: Option<&'a Known>,
        hops: Option<u8>,
    ) -> Draft<'a> {
        let mut result = Draft {
            status: Some(fetched.status),
            error: fetched.too_large.then_some(ErrorKind::TooLarge),
            detail: fetched.too_large.then(|| {
                format!(
                    "the body is larger than fetch.max_body_bytes ({}); only its first {} were \
                     read, and no links were taken from it",
                    crate::report::bytes(self.config.fetch.max_body_bytes),
                    crate::report::bytes(fetched.body.len() as u64)
                )
            }),
            content_type: fetched.content_type.as_deref(),
            bytes: fetched.body.len() as u64,
            links: 0,
            redirect: None,
            canonical: None,
            last_modified: fetched.last_modified.as_deref(),
            etag: fetched.etag.as_deref(),
            revisit: self
                .recrawl()
                .then(|| revisit(known, fetched, digest.as_ref())),
            unsent: known
                .filter(|_| fetched.status == 304)
                .map(|k| (k.digest.map(|d| Digest::from_bytes(d).text()), k.bytes)),
            // A 304 has no body of its own: its record keeps the earlier one's (`unsent`).
            digest: digest
                .as_ref()
                .filter(|_| self.config.output.digest && fetched.status != 304)
                .map(Digest::text),
            duplicate: false,
        };
        if (300..400).contains(&fetched.status)
            && let Some(location) = &fetched.location
        {
            result.redirect = url.join(location).ok().map(String::from);
            if let Some(hops) = hops {
                // The page needs what the redirect leads to: a requisite too, a hop further.
                self.push_requisites(url, url, std::slice::from_ref(location), depth + 1, hops)
                    .await;
                return result;
            }
            let seed = (depth == 0)
                .then(|| self.leads.seed_redirects.target(url, location))
                .flatten();
            match seed {
                Some(target) => {
                    tracing::info!("{url} redirects to {target}: a seed too, its host in scope");
                    if self
                        .fetching
                        .guard
                        .trust_redirect(url, target.as_url())
                        .await
                    {
                        tracing::info!(
                            "{target} is the same server as {url}: trusted by the SSRF guard \
                             at its addresses"
                        );
                    }
                    self.frontier.add_seed(&target).await;
                    let pushed = self.frontier.push_canonical(target, Some(url.as_str()), 0);
                    if let Err(err) = pushed.await {
                        tracing::warn!("pushing {location}: {err}");
                    }
                }
                // One link further, like any link: a chain of redirects ends at the depth
                // limit.
                None => {
                    self.push(url, url, std::slice::from_ref(location), depth + 1)
                        .await
                }
            }
        }
        let ok = (200..300).contains(&fetched.status);
        if let Some(hops) = hops {
            // A requisite's own links are not followed; a style sheet's loads are requisites.
            if ok && requisite::is_stylesheet(fetched.content_type.as_deref(), url) {
                result.links = self.follow_stylesheet(depth, url, fetched, hops).await;
            }
            return result;
        }
        let tested = ok && !fetched.body.is_empty();
        let seen_before = async {
            match &digest {
                Some(digest) if tested => self.seen_body(digest).await,
                _ => false,
            }
        };
        if self.config.crawl.follow_duplicates {
            // The answer is the record's only: the links are followed either way, so a test
            // kept in Redis adds no round trip before them.
            let (duplicate, (links, canonical)) =
                tokio::join!(seen_before, self.follow_links(depth, url, fetched, ok));
            (result.duplicate, result.links, result.canonical) = (duplicate, links, canonical);
        } else if seen_before.await {
            // Its links were followed from the first copy: not extracted again.
            result.duplicate = true;
        } else {
            (result.links, result.canonical) = self.follow_links(depth, url, fetched, ok).await;
        }
        result
    }

    /// Pushes the links of a 2xx (`ok`) sitemap or HTML page: how many it has, and its
    /// canonical URL, if it names one.
    pub(super) async fn follow_links(
        &self,
        depth: u32,
        url: &Url,
        fetched: &Fetched,
        ok: bool,
    ) -> (u64, Option<String>) {
        if ok && let Some(nesting) = self.sitemap_nesting(url, fetched).await {
            // A sitemap cut at the body cap is read as far as it goes.
            return (
                self.read_sitemap(url, &fetched.body, depth, nesting).await,
                None,
            );
        }
        let html = fetch::is_html(fetched.content_type.as_deref())
            || (fetched.content_type.is_none() && fetch::sniff_html(&fetched.body));
        if !(ok && html && !fetched.too_large) {
            return (0, None);
        }
        let extracted = cpu_bound(fetched.body.len(), || self.extract(url, fetched));
        // Frames not followed are found all the same.
        let unfollowed_frames = if self.config.extract.follow_frames {
            0
        } else {
            extracted.frames
        };
        let found =
            extracted.links.len() + extracted.nofollow + extracted.over_cap + unfollowed_frames;
        self.stats.links.fetch_add(found as u64, Ordering::Relaxed);
        self.stats
            .nofollow
            .fetch_add(extracted.nofollow as u64, Ordering::Relaxed);
        self.stats
            .over_cap
            .fetch_add(extracted.over_cap as u64, Ordering::Relaxed);
        if extracted.frames > 0 {
            self.stats
                .frames
                .fetch_add(extracted.frames as u64, Ordering::Relaxed);
        }
        // The trap rules compare links with this page, not with its `<base href>`.
        self.push(url, &extracted.base, &extracted.links, depth + 1)
            .await;
        self.push_requisites(url, &extracted.base, &extracted.requisites, depth + 1, 0)
            .await;
        (found as u64, extracted.canonical)
    }

    /// Pushes what a style sheet, a requisite `hops` from its page, loads (its `url()`s and
    /// `@import`s): requisites a hop further. Answers how many it names.
    async fn follow_stylesheet(&self, depth: u32, url: &Url, fetched: &Fetched, hops: u8) -> u64 {
        if fetched.too_large {
            return 0;
        }
        let page = Page {
            url,
            body: &fetched.body,
            content_type: fetched.content_type.as_deref(),
        };
        let found = cpu_bound(fetched.body.len(), || {
            links::stylesheet(&page, &self.extract_options())
        });
        self.push_requisites(url, url, &found.requisites, depth + 1, hops)
            .await;
        found.requisites.len() as u64
    }

    /// Pushes the requisites `hrefs` (resolved against `base`) that `page`, itself `hops`
    /// from the page that needs them (0 for that page), names: a hop further, unless that is
    /// more than [`requisite::MAX_HOPS`], or the crawl fetches no requisites.
    async fn push_requisites(
        &self,
        page: &Url,
        base: &Url,
        hrefs: &[String],
        depth: u32,
        hops: u8,
    ) {
        let Some(requisites) = &self.leads.requisites else {
            return;
        };
        if hrefs.is_empty() || hops >= requisite::MAX_HOPS {
            return;
        }
        let urls = requisites.canonicalize(base, hrefs);
        let memo = Memo::requisite(hops + 1);
        if let Err(err) = self
            .frontier
            .push_requisites(page, urls, &memo, depth)
            .await
        {
            tracing::warn!("pushing the requisites of {page}: {err}");
        }
    }

    /// The content-seen test: whether a body was read before under another URL, in this
    /// process's filter, or, in a crawl shared through Redis, by any of its processes.
    pub(super) async fn seen_body(&self, digest: &Digest) -> bool {
        let Some(content) = &self.leads.content else {
            return false;
        };
        let Some(shared) = self.frontier.as_shared().filter(|_| content.is_elsewhere()) else {
            return content.seen_before(digest);
        };
        let seen = shared
            .seen_body(digest.as_bytes())
            .await
            .unwrap_or_else(|err| {
                tracing::warn!("the content-seen test: {err}; the body is taken as new");
                false
            });
        content.note(seen);
        seen
    }

    /// The index nesting of a response that is a sitemap: a URL known as one, or, with
    /// `crawl.sitemaps`, a body whose root is `<urlset>` or `<sitemapindex>` (then at 0).
    /// HTML pages of a crawl without sitemaps cost one atomic load.
    ///
    /// In a crawl shared through Redis, a sitemap another process took is known there: a
    /// body that looks like one asks for its level (one request, for sitemaps only).
    pub(super) async fn sitemap_nesting(&self, url: &Url, fetched: &Fetched) -> Option<u8> {
        if let Some(level) = self.leads.sitemaps.nesting(url.as_str()) {
            return Some(level);
        }
        let looks = sitemap::may_be_sitemap(fetched.content_type.as_deref())
            && sitemap::sniff(&fetched.body);
        if !looks {
            return None;
        }
        if let Some(shared) = self.frontier.as_shared()
            && let Some(url) = self.leads.sitemaps.canonicalize(url, url.as_str())
        {
            match shared.sitemap_level(&url).await {
                Ok(Some(level)) => return Some(level),
                Ok(None) => {}
                Err(err) => tracing::warn!("asking whether {url} is a sitemap: {err}"),
            }
        }
        self.leads.sitemaps.enabled.then_some(0)
    }

    /// Takes `url` as a sitemap at `level`, in this process and, in a crawl shared through
    /// Redis, for the crawl (where a host's cap is counted): whether to push it.
    pub(super) async fn mark_sitemap(&self, url: &Canonical, level: u8) -> bool {
        if !self.leads.sitemaps.mark(url, level) {
            return false;
        }
        let Some(shared) = self.frontier.as_shared() else {
            return true;
        };
        match shared.mark_sitemap(url, level, sitemap::MAX_PER_HOST).await {
            Ok(shared::SitemapMark::Taken) => true,
            // Pushed by the process that took it; known here at the level it was given.
            Ok(shared::SitemapMark::Known) => false,
            Ok(shared::SitemapMark::OverCap) => {
                self.leads.sitemaps.unmark(url);
                self.leads.sitemaps.refused.fetch_add(1, Ordering::Relaxed);
                false
            }
            Err(err) => {
                // Pushed all the same: a sitemap read by this process only is not lost.
                tracing::warn!("taking {url} as a sitemap of the crawl: {err}");
                true
            }
        }
    }

    /// Reads a sitemap's entries and pushes them, a batch at a time, one link deeper than
    /// the sitemap; the sitemaps an index lists are taken as sitemaps one level deeper.
    /// Returns the entries read.
    pub(super) async fn read_sitemap(
        &self,
        url: &Url,
        body: &[u8],
        depth: u32,
        nesting: u8,
    ) -> u64 {
        let mut reader = sitemap::Reader::new(body);
        let mut listed = 0;
        loop {
            let batch = cpu_bound(body.len(), || {
                let mut batch = Vec::new();
                while batch.len() < SITEMAP_BATCH
                    && let Some(entry) = reader.next_entry()
                {
                    batch.push(entry);
                }
                batch
            });
            if batch.is_empty() {
                break;
            }
            listed += batch.len() as u64;
            let children = (reader.kind() == Some(sitemap::Kind::Index)).then_some(nesting + 1);
            self.push_listed(url, Some(url.as_str()), &batch, depth + 1, children)
                .await;
        }
        let stats = &self.leads.sitemaps;
        stats.fetched.fetch_add(1, Ordering::Relaxed);
        stats.listed.fetch_add(listed, Ordering::Relaxed);
        stats.dropped.fetch_add(reader.dropped, Ordering::Relaxed);
        if reader.dropped > 0 || reader.error.is_some() {
            tracing::info!(
                "sitemap {url}: {listed} URLs read, {} dropped{}",
                reader.dropped,
                reader.error.map(|e| format!("; {e}")).unwrap_or_default()
            );
        }
        listed
    }

    /// Pushes URLs a sitemap or robots.txt (`from`) lists, at `depth`: pages (with their
    /// `lastmod` kept for their records), or, with `nesting`, sitemaps at that index level.
    pub(super) async fn push_listed(
        &self,
        base: &Url,
        from: Option<&str>,
        entries: &[sitemap::Entry],
        depth: u32,
        nesting: Option<u8>,
    ) {
        let stats = &self.leads.sitemaps;
        for entry in entries {
            let Some(target) = stats.canonicalize(base, &entry.loc) else {
                stats.dropped.fetch_add(1, Ordering::Relaxed);
                continue;
            };
            // Marked before the push, so that no worker leases it unmarked.
            if let Some(level) = nesting
                && !self.mark_sitemap(&target, level).await
            {
                // Known already (an index listing itself), or over a bound (counted).
                continue;
            }
            let kept = nesting.is_none()
                && entry
                    .lastmod
                    .as_deref()
                    .is_some_and(|lastmod| stats.keep_lastmod(&target, lastmod));
            let pushed = self
                .frontier
                .push_canonical(target.clone(), from, depth)
                .await;
            if !matches!(pushed, Ok(Push::Queued | Push::HostGivenUp)) {
                // Seen before, or out of scope: not fetched for this listing.
                if nesting.is_some() {
                    stats.unmark(&target);
                    if let Some(shared) = self.frontier.as_shared()
                        && let Err(err) = shared.unmark_sitemap(&target).await
                    {
                        tracing::warn!("forgetting the sitemap {target}: {err}");
                    }
                }
                if kept {
                    stats.take_lastmod(target.as_str());
                }
            }
            if let Err(err) = pushed {
                tracing::warn!("pushing {} from {base}: {err}", entry.loc);
            }
        }
    }

    /// The links of an HTML page.
    pub(super) fn extract(&self, url: &Url, fetched: &Fetched) -> Extracted {
        let page = Page {
            url,
            body: &fetched.body,
            content_type: fetched.content_type.as_deref(),
        };
        links::extract(&page, &self.extract_options())
    }

    /// What the links crate is asked for: the `extract` settings, and requisites when the
    /// crawl fetches them.
    fn extract_options(&self) -> Options {
        Options {
            max_links: self.config.extract.max_links_per_page,
            follow_nofollow: self.config.extract.follow_nofollow,
            follow_frames: self.config.extract.follow_frames,
            requisites: self.leads.requisites.is_some(),
        }
    }

    /// Pushes the links of `page` (or a redirect's target), resolved against `base`, as one
    /// batch.
    pub(super) async fn push(&self, page: &Url, base: &Url, hrefs: &[String], depth: u32) {
        if let Err(err) = self.frontier.push_links(page, base, hrefs, depth).await {
            // The seen-test could not grow (memory), or spilling failed (the URLs are queued
            // in memory all the same): worth a word, not the crawl.
            tracing::warn!("pushing the links of {base}: {err}");
        }
    }
}
