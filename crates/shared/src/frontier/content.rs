//! The content-seen test of the whole crawl: a body's digest tested in the seen-test of the
//! content bucket it picks, the bodies asked for at once grouped in one script a bucket.

use super::*;

impl SharedFrontier {
    /// The content-seen test of the whole crawl: whether a body with this digest (a SHA-1,
    /// say) was read before by any process, marking it read. Of several processes asking
    /// for one digest at once, exactly one hears `false`. The bodies' fingerprints sit in the
    /// seen-test beside the URLs' (hashed from a text no URL can be, so they never meet but
    /// by the seen-test's false-positive rate), in the content bucket the digest picks
    /// ([`crate::Layout::content_buckets`]; with none, the hosts' bucket it picks).
    /// The bodies asked for while a bucket's test is under way go together in its next
    /// script.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f(frontier: shared::SharedFrontier) -> Result<(), shared::Error> {
    /// let digest = [0x5a; 20];
    /// assert!(!frontier.seen_body(&digest).await?);
    /// assert!(frontier.seen_body(&digest).await?);
    /// # Ok(()) }
    /// ```
    pub async fn seen_body(&self, digest: &[u8]) -> Result<bool, Error> {
        let inner = &self.inner;
        let mut key = String::with_capacity(2 + 2 * digest.len());
        // NUL opens no URL: a body's text never equals a URL's.
        key.push_str("\0#");
        for byte in digest {
            let _ = write!(key, "{byte:02x}");
        }
        let bucket = {
            let mut sip = SipHasher13::new_with_key(&inner.keys.sip_key);
            sip.write(key.as_bytes());
            let hash = sip.finish();
            match inner.keys.layout.content_buckets {
                0 => (hash % u64::from(inner.keys.buckets)) as u32,
                n => inner.keys.buckets + (hash % u64::from(n)) as u32,
            }
        };
        let mut probes = inner.keys.schedule.probes(&inner.keys.sip_key, &key);
        if inner.keys.frozen.holds(bucket, &mut probes) {
            return Ok(true);
        }
        let (answered, start) = inner.sent.bodies.wait(bucket, probes);
        if let Some(sending) = start {
            tokio::spawn(Arc::clone(inner).flush_bodies(bucket, sending));
        }
        group::answer(answered, "a content-seen test").await
    }
}

impl Inner {
    /// Sends the bodies waiting for a bucket's content-seen test, a script at a time, until
    /// none waits.
    pub(super) async fn flush_bodies(
        self: Arc<Self>,
        bucket: u32,
        mut sending: Sending<Probes, bool>,
    ) {
        loop {
            self.tick(batch::TICK).await;
            let Some(bodies) = sending.next(|waiting| waiting.len().min(MAX_BATCH)) else {
                break;
            };
            let tag = self.store.tag(bucket);
            let mut invocation = self.scripts.content.prepare_invoke();
            for key in ["seen", "counts", "replies0", "replies1"] {
                invocation.key(format!("{tag}:{key}"));
            }
            invocation
                .arg(&tag)
                .arg(self.keys.schedule.text(bucket))
                .arg(self.request_id());
            for (probes, _) in &bodies {
                invocation.arg(probes.bytes());
            }
            let answer: Result<Vec<i64>, Error> = self.call(&invocation).await;
            // The generations, then the places (from 1) of the bodies read before.
            let read_before = |answer: &[i64]| {
                let mut read = vec![false; bodies.len()];
                for &place in answer.get(1..)? {
                    *read.get_mut(usize::try_from(place).ok()?.checked_sub(1)?)? = true;
                }
                Some(read)
            };
            let answer = answer.map(|answer| (read_before(&answer), answer));
            match answer {
                Ok((Some(read), answer)) => {
                    let generations = answer[0];
                    let bytes = |index| self.keys.schedule.bytes(bucket, index);
                    if let Some(index) = self.keys.frozen.wanted(bucket, generations, bytes) {
                        tokio::spawn(Arc::clone(&self).copy_generation(bucket, index));
                    }
                    for ((_, send), read) in bodies.into_iter().zip(read) {
                        let _ = send.send(Ok(read));
                    }
                }
                other => {
                    let err = other.err().unwrap_or_else(|| {
                        ErrorKind::Server("unexpected answer to a content-seen test".into()).into()
                    });
                    for (_, send) in bodies {
                        let _ = send.send(Err(err.clone()));
                    }
                }
            }
        }
    }
}
