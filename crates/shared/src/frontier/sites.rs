//! What the crawl knows of its sites, kept in Redis for every process: seeds and their
//! redirects, robots.txt files and crawl delays, sitemaps.

use super::*;

/// What [`SharedFrontier::mark_sitemap`] did.
///
/// # Example
///
/// See [`SharedFrontier::mark_sitemap`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SitemapMark {
    /// Taken as a sitemap by this process: push it.
    Taken,
    /// Known as one already (pushed by whoever took it).
    Known,
    /// Its host has the most sitemaps it may: not taken.
    OverCap,
}

/// What [`SharedFrontier::robots_or_claim`] found of a robots.txt.
///
/// # Example
///
/// See [`SharedFrontier::robots_or_claim`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RobotsRead {
    /// A process stored it ([`SharedFrontier::put_robots`]): how long ago, and its text.
    /// Nothing was claimed: one too old to trust is claimed with
    /// [`SharedFrontier::claim_robots`].
    Stored(Duration, Vec<u8>),
    /// Not stored, and this process holds the claim on its fetch now: fetch it, then
    /// [`SharedFrontier::put_robots`] (or [`SharedFrontier::release_robots`]).
    Claimed,
    /// Not stored, and another process fetches it: what it stores comes in a moment.
    Elsewhere,
}

impl SharedFrontier {
    /// Makes `url`, a seed's redirect target, a seed of the scope: its host (or domain) joins
    /// this process's scope, and the crawl's list of redirect targets, which processes that
    /// join later put in their scope ([`Stored::redirect_targets`]), never among the seeds a
    /// user gave.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f(frontier: shared::SharedFrontier) -> Result<(), Box<dyn std::error::Error>> {
    /// let moved = frontier::Canonicalizer::new().canonicalize("https://www.example.com/")?;
    /// frontier.add_seed(&moved).await?;
    /// # Ok(()) }
    /// ```
    pub async fn add_seed(&self, url: &Canonical) -> Result<(), Error> {
        self.inner.rules.scope.add_seed(url);
        self.inner
            .store
            .add_redirect_targets(&[url.as_str().to_owned()])
            .await
    }

    /// What the crawl knows of a robots.txt (`key`: `scheme://host:port` of host `host`), as
    /// a process stored it ([`SharedFrontier::put_robots`]): how long ago it was stored (by
    /// this machine's clock against that process's stamp) and its text. So that a host's robots.txt is
    /// fetched once for the crawl, not once per process.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f(frontier: shared::SharedFrontier) -> Result<(), shared::Error> {
    /// let key = "https://example.com";
    /// if frontier.robots(key, "example.com").await?.is_none()
    ///     && frontier.claim_robots(key, "example.com", std::time::Duration::from_secs(60)).await?
    /// {
    ///     // Fetch it, then:
    ///     frontier.put_robots(key, "example.com", b"200\nUser-agent: *\nDisallow: /private").await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn robots(
        &self,
        key: &str,
        host: &str,
    ) -> Result<Option<(Duration, Vec<u8>)>, Error> {
        let mut cmd = redis::cmd("HGET");
        cmd.arg(self.inner.robots_key(host)).arg(key);
        let stored: Option<Vec<u8>> = self.inner.store.query(&cmd).await?;
        Ok(stored.as_deref().and_then(stored_robots))
    }

    /// What [`robots`](Self::robots) answers, or, when no process stored the file, what
    /// [`claim_robots`](Self::claim_robots) answers, in one request: a host's first visit
    /// read the file's state and then claimed its fetch, two requests of every host.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f(frontier: shared::SharedFrontier) -> Result<(), shared::Error> {
    /// use shared::RobotsRead;
    ///
    /// let key = "https://example.com";
    /// let minute = std::time::Duration::from_secs(60);
    /// match frontier.robots_or_claim(key, "example.com", minute).await? {
    ///     RobotsRead::Stored(age, text) => println!("stored {age:?} ago: {} bytes", text.len()),
    ///     RobotsRead::Claimed => {
    ///         // Fetch it, then:
    ///         frontier.put_robots(key, "example.com", b"allow").await?;
    ///     }
    ///     RobotsRead::Elsewhere => println!("another process fetches it"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn robots_or_claim(
        &self,
        key: &str,
        host: &str,
        ttl: Duration,
    ) -> Result<RobotsRead, Error> {
        let inner = &self.inner;
        inner.be_present().await?;
        let robots = inner.robots_key(host);
        let claim = format!("{robots}:{key}");
        let answer = match inner
            .claim_robots(&claim, ttl, None, Some((&robots, key)))
            .await?
        {
            Claim::Stored(text) => match stored_robots(&text) {
                Some((age, text)) => return Ok(RobotsRead::Stored(age, text)),
                // Not a stored file (written by something else): claimed as if none.
                None => inner.claim_robots(&claim, ttl, None, None).await?,
            },
            answer => answer,
        };
        Ok(match inner.claimed(&claim, ttl, answer).await? {
            true => RobotsRead::Claimed,
            false => RobotsRead::Elsewhere,
        })
    }

    /// Claims the fetch of a robots.txt for `ttl`: true for the one process that is to fetch
    /// it now; the others wait for what it stores. A claim whose process has not said it
    /// is present for 10 s (it died while it fetched) is taken over, rather than waited out
    /// for the whole of `ttl`: every lease of its host waited for it, and a crawl whose
    /// other hosts were done stalled for a minute. A live process that stalled that long
    /// has its claim taken over too: the file is fetched twice.
    ///
    /// # Example
    ///
    /// See [`SharedFrontier::robots`].
    pub async fn claim_robots(&self, key: &str, host: &str, ttl: Duration) -> Result<bool, Error> {
        let inner = &self.inner;
        inner.be_present().await?;
        let claim = format!("{}:{key}", inner.robots_key(host));
        let answer = inner.claim_robots(&claim, ttl, None, None).await?;
        inner.claimed(&claim, ttl, answer).await
    }

    /// Stores what a robots.txt said (see [`SharedFrontier::robots`]), stamped with this
    /// process's clock, and lets go of the claim on it.
    ///
    /// # Example
    ///
    /// See [`SharedFrontier::robots`].
    pub async fn put_robots(&self, key: &str, host: &str, text: &[u8]) -> Result<(), Error> {
        let at = crate::store::unix_millis();
        let robots = self.inner.robots_key(host);
        let mut value = format!("{at} ").into_bytes();
        value.extend_from_slice(text);
        let claim = format!("{robots}:{key}");
        let mut invocation = self.inner.scripts.release_robots.prepare_invoke();
        invocation.key(&claim).key(&robots);
        invocation.arg(&self.inner.id).arg(key).arg(value);
        self.inner.store.eval::<i64>(&invocation).await.map(drop)
    }

    /// Lets go of the claim on a robots.txt without storing anything (its fetch had no
    /// answer): the others fetch it themselves rather than wait for the claim to pass. A
    /// claim another process took over (see [`claim_robots`](Self::claim_robots)) is left
    /// to it.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f(frontier: shared::SharedFrontier) -> Result<(), shared::Error> {
    /// frontier.release_robots("https://example.com", "example.com").await?;
    /// # Ok(()) }
    /// ```
    pub async fn release_robots(&self, key: &str, host: &str) -> Result<(), Error> {
        let claim = format!("{}:{key}", self.inner.robots_key(host));
        self.inner.release_robots(&claim).await
    }

    /// Takes `url` as a sitemap of the crawl at index level `level` (0 for a sitemap listed
    /// by robots.txt or given as a seed, one more for each index above it), unless it is
    /// known already or its host has `max_per_host` sitemaps: so that the process that
    /// leases it reads it as one, at its level, and a host's cap holds for the crawl.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f(frontier: shared::SharedFrontier) -> Result<(), Box<dyn std::error::Error>> {
    /// let sitemap = frontier::Canonicalizer::new().canonicalize("https://example.com/sitemap.xml")?;
    /// if frontier.mark_sitemap(&sitemap, 0, 1000).await? == shared::SitemapMark::Taken {
    ///     frontier.push_seeds(vec![sitemap.clone()]).await?;
    /// }
    /// assert_eq!(frontier.sitemap_level(&sitemap).await?, Some(0));
    /// # Ok(()) }
    /// ```
    pub async fn mark_sitemap(
        &self,
        url: &Canonical,
        level: u8,
        max_per_host: u32,
    ) -> Result<SitemapMark, Error> {
        let inner = &self.inner;
        let host = url.host_key();
        let tag = inner.store.tag(inner.site_bucket(host));
        let mut invocation = inner.scripts.mark_sitemap.prepare_invoke();
        invocation
            .key(format!("{tag}:sitemaps"))
            .key(format!("{tag}:sitemap-hosts"))
            .arg(&tag)
            .arg(url.as_str())
            .arg(host)
            .arg(level)
            .arg(max_per_host)
            .arg(&inner.id);
        Ok(match inner.call::<i64>(&invocation).await? {
            1 => SitemapMark::Taken,
            0 => SitemapMark::Known,
            _ => SitemapMark::OverCap,
        })
    }

    /// Forgets a sitemap [marked](Self::mark_sitemap) whose push was not admitted (seen
    /// before, or out of scope), so that it does not count against its host.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f(frontier: shared::SharedFrontier) -> Result<(), Box<dyn std::error::Error>> {
    /// let sitemap = frontier::Canonicalizer::new().canonicalize("https://example.com/s.xml")?;
    /// frontier.mark_sitemap(&sitemap, 0, 1000).await?;
    /// frontier.unmark_sitemap(&sitemap).await?;
    /// assert_eq!(frontier.sitemap_level(&sitemap).await?, None);
    /// # Ok(()) }
    /// ```
    pub async fn unmark_sitemap(&self, url: &Canonical) -> Result<(), Error> {
        let inner = &self.inner;
        let host = url.host_key();
        let tag = inner.store.tag(inner.site_bucket(host));
        let mut invocation = inner.scripts.unmark_sitemap.prepare_invoke();
        invocation
            .key(format!("{tag}:sitemaps"))
            .key(format!("{tag}:sitemap-hosts"))
            .arg(&tag)
            .arg(url.as_str())
            .arg(host);
        inner.call::<i64>(&invocation).await.map(drop)
    }

    /// The index level of `url` if a process of the crawl [took](Self::mark_sitemap) it as a
    /// sitemap.
    ///
    /// # Example
    ///
    /// See [`SharedFrontier::mark_sitemap`].
    pub async fn sitemap_level(&self, url: &Canonical) -> Result<Option<u8>, Error> {
        let inner = &self.inner;
        let tag = inner.store.tag(inner.site_bucket(url.host_key()));
        let mut cmd = redis::cmd("HGET");
        cmd.arg(format!("{tag}:sitemaps")).arg(url.as_str());
        let stored: Option<String> = inner.store.query(&cmd).await?;
        Ok(stored.and_then(|s| s.split(' ').next()?.parse().ok()))
    }

    /// Sets a host's robots.txt `Crawl-delay` (capped as the politeness settings say), for
    /// every process.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f(frontier: shared::SharedFrontier) -> Result<(), shared::Error> {
    /// frontier.set_crawl_delay("example.com", std::time::Duration::from_secs(5)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn set_crawl_delay(&self, host: &str, delay: Duration) -> Result<(), Error> {
        let inner = &self.inner;
        let own = inner.rules.politeness.host(host).delay;
        let delay = delay
            .min(inner.rules.politeness.max_crawl_delay())
            .max(own.unwrap_or(inner.rules.politeness.delay()));
        // The bucket's owner schedules the host: this process, as it fetched from it. A
        // process whose bucket went to another meanwhile leaves the delay to that one,
        // which reads the robots.txt too before it fetches from the host.
        let bucket = inner.bucket_of(host);
        let mut buckets = inner.owners.buckets();
        let set = buckets
            .get_mut(&bucket)
            .is_some_and(|owned| owned.crawl_delay(host, delay));
        if !set && inner.keys.layout.buckets_by == crate::BucketsBy::Address {
            // Its place forgotten (a broad crawl's map is bounded): whichever owned bucket
            // schedules it.
            buckets
                .values_mut()
                .any(|owned| owned.crawl_delay(host, delay));
        }
        Ok(())
    }
}

/// A robots.txt as [`SharedFrontier::put_robots`] stored it (its stamp, a space, its text):
/// how long ago, by this machine's clock, and its text; None for bytes that are not one.
fn stored_robots(stored: &[u8]) -> Option<(Duration, Vec<u8>)> {
    // Bytes, as sent: a file need not be UTF-8.
    let space = stored.iter().position(|&b| b == b' ')?;
    let at: u64 = std::str::from_utf8(&stored[..space]).ok()?.parse().ok()?;
    let age = Duration::from_millis(crate::store::unix_millis().saturating_sub(at));
    Some((age, stored[space + 1..].to_vec()))
}

/// What `scripts/claim_robots.lua` answered.
enum Claim {
    /// This process holds the claim.
    Held,
    /// Another process holds it: its id.
    Holder(String),
    /// The file is stored (asked with the hash of files): its stored bytes.
    Stored(Vec<u8>),
}

impl Inner {
    /// Says this process is present if it has not yet: a claim is never of a process no
    /// other has heard of.
    async fn be_present(&self) -> Result<(), Error> {
        if !self.presence.is_present(&self.id) {
            self.present().await?;
        }
        Ok(())
    }

    /// Claims a robots.txt's fetch (see [`SharedFrontier::claim_robots`]), taking it over
    /// from `gone` if that process holds it; with `stored` (the hash of the bucket's files
    /// and the file's field), answers the file instead when it is stored there.
    async fn claim_robots(
        &self,
        claim: &str,
        ttl: Duration,
        gone: Option<&str>,
        stored: Option<(&str, &str)>,
    ) -> Result<Claim, Error> {
        // A claim already this process's is its own: a claim sent again after its answer was
        // lost must not take this process for another and wait for itself.
        let mut invocation = self.scripts.claim_robots.prepare_invoke();
        invocation.key(claim);
        invocation
            .arg(&self.id)
            .arg(millis(ttl).max(1))
            .arg(gone.unwrap_or(""));
        if let Some((robots, field)) = stored {
            invocation.key(robots).arg(field);
        }
        match self.store.eval(&invocation).await? {
            redis::Value::Int(1) => Ok(Claim::Held),
            redis::Value::BulkString(holder) => {
                Ok(Claim::Holder(String::from_utf8_lossy(&holder).into()))
            }
            redis::Value::Array(file) if stored.is_some() => match file.as_slice() {
                [redis::Value::BulkString(text)] => Ok(Claim::Stored(text.clone())),
                _ => Err(ErrorKind::Server("unexpected answer to a claim".into()).into()),
            },
            other => {
                Err(ErrorKind::Server(format!("unexpected answer to a claim: {other:?}")).into())
            }
        }
    }

    /// Whether this process holds a robots.txt's claim, `answer` being what its claim was
    /// answered: held by this process; or, by another, not while that one is present (it
    /// fetches, and this process waits), and taken over from one not heard from for twice
    /// [`PRESENT_FOR`] (it died holding it).
    async fn claimed(&self, claim: &str, ttl: Duration, answer: Claim) -> Result<bool, Error> {
        let holder = match answer {
            Claim::Holder(holder) => holder,
            // (A file is answered only to a claim asked with the hash of files.)
            Claim::Held | Claim::Stored(_) => return Ok(true),
        };
        let holder = holder.as_str();
        // Present as last heard: it fetches, and this process waits.
        if self.presence.is_present(holder) {
            return Ok(false);
        }
        let gone_after = PRESENT_FOR * 2;
        if let Some(ago) = self.heard_ago(holder).await?
            && ago < gone_after
        {
            // Not asked again while it would still be present: a waiting process asks for
            // the claim every few tens of ms, and a holder heard from a few seconds ago (not
            // in the heartbeat's last list) cost a call each time.
            self.presence.note_present(holder, gone_after - ago);
            return Ok(false);
        }
        Ok(matches!(
            self.claim_robots(claim, ttl, Some(holder), None).await?,
            Claim::Held
        ))
    }

    /// Lets go of a robots.txt's claim if it is still this process's.
    async fn release_robots(&self, claim: &str) -> Result<(), Error> {
        let mut invocation = self.scripts.release_robots.prepare_invoke();
        invocation.key(claim).arg(&self.id);
        self.store.eval::<i64>(&invocation).await.map(drop)
    }

    /// How long ago process `id` last said it is present, by Redis's clock; None if it
    /// never did. A claim's holder not heard from for twice
    /// [`PRESENT_FOR`](crate::store::PRESENT_FOR) is gone (killed), or stalled for that long.
    pub(super) async fn heard_ago(&self, id: &str) -> Result<Option<Duration>, Error> {
        let mut invocation = self.scripts.heard_from.prepare_invoke();
        invocation.key(self.store.procs_key()).arg("").arg(id);
        let ago: i64 = self.call(&invocation).await?;
        Ok(u64::try_from(ago).ok().map(Duration::from_millis))
    }

    /// The hash of `host`'s robots.txt files, in its site's bucket (`Inner::site_bucket`; its
    /// claims are keys beside it).
    pub(super) fn robots_key(&self, host: &str) -> String {
        format!("{}:robots", self.store.tag(self.site_bucket(host)))
    }
}
