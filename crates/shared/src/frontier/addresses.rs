//! Politeness per address, for every process of the crawl: a request's turn at the IP
//! address its connection goes to, by `frontier::AddressRecord`'s rule, run in Redis
//! (`scripts/address.lua`) on keys of the address's own, tagged with its group (one on a
//! single server; on a cluster, spread over the masters as buckets are: see
//! `Store::address_group`). The turns asked and the requests ended at any address of a
//! group while the group's last script is under way go together in its next (`group.rs`):
//! busy addresses cost Redis a script for many requests, not one a request and a command a
//! leave, and so do many addresses asked a turn at a time each. Not at the process's ticks,
//! as batches go: a turn waits for no tick (its connection would, and at a full address
//! every place handed on would lose that wait).

use std::net::IpAddr;

use frontier::{AddressLimits, FULL_RETRY, TICKET_TTL, Turn};

use super::*;

/// Names a request among those in flight at an address, for every process of the crawl:
/// the token of its lease (unique to one lease with its host: another bucket's lease may
/// have the same token), and a number its process gives each of its requests. A lease that
/// left an address and came back is then another request there: its leave, sent in the
/// background, cannot land after its new turn and take that away.
///
/// # Example
///
/// ```
/// let request = shared::AddressRequest { token: 7, number: 1 };
/// assert_ne!(request, shared::AddressRequest { token: 7, number: 2 });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AddressRequest {
    /// Its lease's token ([`SharedLease::token`]).
    pub token: u64,
    /// Its process's number for it: one no other request of the same lease has.
    pub number: u64,
}

impl AddressRequest {
    /// The request as the address's requests in flight hold it.
    fn member(&self, host: &str) -> String {
        format!("{host} {} {}", self.token, self.number)
    }
}

impl SharedFrontier {
    /// Asks a turn at `address` for `request`, of `host`, under `limits`, for every process
    /// of the crawl. `hold` is how long it may keep its place at most: a process killed with
    /// the request out gives it back then. The turns and leaves of the process's requests
    /// at an address that come while its last script is under way go together in one.
    /// On [`Turn::Go`], [`leave_address`](Self::leave_address) when the request ends. A
    /// turn dropped before its answer (cancelled) holds no place: it is not asked, or the
    /// place it was given is given back.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f(frontier: shared::SharedFrontier) -> Result<(), shared::Error> {
    /// use std::time::Duration;
    /// use frontier::{AddressLimits, Turn};
    /// use shared::AddressRequest;
    ///
    /// let limits = AddressLimits { connections: 2, delay: Duration::from_millis(100) };
    /// let server = "192.0.2.7".parse().unwrap();
    /// let request = AddressRequest { token: 7, number: 1 };
    /// let hold = Duration::from_secs(60);
    /// if frontier.enter_address(server, "a.example", request, limits, hold).await? == Turn::Go {
    ///     // ... the request ...
    ///     frontier.leave_address(server, "a.example", request).await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn enter_address(
        &self,
        address: IpAddr,
        host: &str,
        request: AddressRequest,
        limits: AddressLimits,
        hold: Duration,
    ) -> Result<Turn, Error> {
        if limits.is_unlimited() {
            return Ok(Turn::Go);
        }
        let name = request.member(host);
        let call = Ask::Enter {
            host: host.to_owned(),
            name: name.clone(),
            limits,
            hold: millis(hold).max(1),
        };
        let asked = Asked {
            inner: Arc::clone(&self.inner),
            address,
            name,
            answer: self.inner.queue_at_address(address, call),
            read: false,
        };
        let wait = asked.answer().await?;
        let after = |ms: i64| Instant::now() + Duration::from_millis(ms.unsigned_abs());
        Ok(match wait {
            0 => Turn::Go,
            full if full < 0 => Turn::Full(after(full)),
            ms => Turn::WaitUntil(after(ms)),
        })
    }

    /// A request that [`enter_address`](Self::enter_address) let go has ended. Its leave is
    /// queued at once, before the future runs: a turn this process asks at the address
    /// after this call goes to Redis after it (in the same script, or a later one), so a
    /// request of this process waiting for a place there may ask as soon as this returns.
    /// The future is answered once the place is free for every process; it need not be
    /// awaited (it borrows nothing), nor this be called within a runtime (the leave is sent
    /// on the frontier's).
    /// Should the script it rides in be refused, the leave goes alone.
    ///
    /// # Example
    ///
    /// See [`enter_address`](Self::enter_address).
    pub fn leave_address(
        &self,
        address: IpAddr,
        host: &str,
        request: AddressRequest,
    ) -> impl Future<Output = Result<(), Error>> + Send + use<> {
        let answered = self
            .inner
            .queue_at_address(address, Ask::Leave(request.member(host)));
        async move {
            group::answer(answered, "a leave of an address")
                .await
                .map(drop)
        }
    }
}

/// A request of this process at an address, waiting for its address group's next script.
pub(super) struct AddressCall {
    /// The address its connection goes to.
    address: IpAddr,
    /// What it asks.
    ask: Ask,
}

/// What a request at an address asks.
enum Ask {
    /// Its turn: its host, its name ([`AddressRequest::member`]), the limits it is held to
    /// and how long it may hold its place (ms).
    Enter {
        host: String,
        name: String,
        limits: AddressLimits,
        hold: i64,
    },
    /// To leave, having ended: its name.
    Leave(String),
}

impl AddressCall {
    /// The limits and hold an entering request asks under (one script takes requests of one
    /// kind only: a process asks all its turns under the same).
    fn terms(&self) -> Option<(AddressLimits, i64)> {
        match &self.ask {
            Ask::Enter { limits, hold, .. } => Some((*limits, *hold)),
            Ask::Leave(_) => None,
        }
    }
}

/// The most requests one address script takes.
const MAX_AT_ADDRESS: usize = 256;

/// The requests of one address script: the first waiting, and those after it asking under
/// the same terms, up to [`MAX_AT_ADDRESS`].
fn fit(waiting: &[(AddressCall, Reply<i64>)]) -> usize {
    let mut terms = None;
    waiting
        .iter()
        .take(MAX_AT_ADDRESS)
        .take_while(|(call, _)| match call.terms() {
            None => true,
            Some(these) => *terms.get_or_insert(these) == these,
        })
        .count()
}

/// The requests of one script at one address: the places (in the script's requests) of
/// those that ended and of those asking.
struct AtAddress {
    address: IpAddr,
    ended: Vec<usize>,
    asking: Vec<usize>,
}

/// The script's requests by address, in the order each address first comes.
fn by_address(calls: &[(AddressCall, Reply<i64>)]) -> Vec<AtAddress> {
    let mut addresses: Vec<AtAddress> = Vec::new();
    for (i, (call, _)) in calls.iter().enumerate() {
        let at = match addresses.iter().position(|a| a.address == call.address) {
            Some(at) => at,
            None => {
                addresses.push(AtAddress {
                    address: call.address,
                    ended: Vec::new(),
                    asking: Vec::new(),
                });
                addresses.len() - 1
            }
        };
        match call.ask {
            Ask::Enter { .. } => addresses[at].asking.push(i),
            Ask::Leave(_) => addresses[at].ended.push(i),
        }
    }
    addresses
}

/// A turn asked, until its answer reaches its caller: dropped before (its request
/// cancelled), it gives back the place it was given, if it was. (A turn cancelled before its
/// answer is sent is the sending task's to give back: see [`Inner::flush_addresses`].)
struct Asked {
    inner: Arc<Inner>,
    address: IpAddr,
    name: String,
    answer: oneshot::Receiver<Result<i64, Error>>,
    /// Its caller has the answer.
    read: bool,
}

impl Asked {
    /// The turn's answer: 0 to go, else the wait in ms (negative: the address is full).
    async fn answer(mut self) -> Result<i64, Error> {
        let got = group::answer(&mut self.answer, "a turn at an address").await;
        self.read = true;
        got
    }
}

impl Drop for Asked {
    fn drop(&mut self) {
        if self.read {
            return;
        }
        self.answer.close();
        if let Ok(Ok(0)) = self.answer.try_recv() {
            let leave = Ask::Leave(std::mem::take(&mut self.name));
            drop(self.inner.queue_at_address(self.address, leave));
        }
    }
}

impl Inner {
    /// Adds a request to its address group's next script (starting the group's sending
    /// task if none is under way, on the frontier's runtime: a leave may be queued outside
    /// one): where its answer will come (0 for a leave).
    fn queue_at_address(
        self: &Arc<Self>,
        address: IpAddr,
        ask: Ask,
    ) -> oneshot::Receiver<Result<i64, Error>> {
        let group = self.store.address_group(address);
        let (answered, start) = self
            .sent
            .addresses
            .wait(group, AddressCall { address, ask });
        if let Some(sending) = start {
            self.sent
                .runtime
                .spawn(Arc::clone(self).flush_addresses(group, sending));
        }
        answered
    }

    /// Sends the requests waiting in an address group, a script at a time, until none
    /// waits: at each address, the ended requests' leaves first, then the turns asked, in
    /// the order they came.
    async fn flush_addresses(
        self: Arc<Self>,
        group: u32,
        mut sending: Sending<AddressCall, i64, u32>,
    ) {
        let tag = self.store.address_tag(group);
        loop {
            let Some(mut calls) = sending.next(fit) else {
                break;
            };
            // A turn no one waits for any more (its request was cancelled) is not asked.
            calls.retain(|(call, reply)| call.terms().is_none() || !reply.is_closed());
            let addresses = by_address(&calls);
            let name = |i: usize| match &calls[i].0.ask {
                Ask::Enter { name, .. } | Ask::Leave(name) => name.as_str(),
            };
            let texts: Vec<String> = addresses.iter().map(|a| a.address.to_string()).collect();
            // Leaves alone, one plain command an address.
            // With `asked`, the turns' names too: those of a script that may have run.
            let leaves = |asked: bool| -> Vec<redis::Cmd> {
                addresses
                    .iter()
                    .zip(&texts)
                    .filter_map(|(a, text)| {
                        let asked = a.asking.iter().filter(|_| asked);
                        let names: Vec<&str> =
                            a.ended.iter().chain(asked).map(|&i| name(i)).collect();
                        let leave = crate::scripts::address_leave(&tag, text, &names);
                        (!names.is_empty()).then_some(leave)
                    })
                    .collect()
            };
            let terms = calls.iter().find_map(|(call, _)| call.terms());
            let asked = addresses.iter().map(|a| a.asking.len()).sum::<usize>();
            let any_ended = addresses.iter().any(|a| !a.ended.is_empty());
            let answer: Result<Vec<i64>, Error> = match terms {
                None if !any_ended => Ok(Vec::new()),
                None => self
                    .store
                    .query_each::<i64>(&leaves(false))
                    .await
                    .map(|_| Vec::new()),
                Some((limits, hold)) => {
                    let mut invocation = self.scripts.address.prepare_invoke();
                    for text in &texts {
                        for key in crate::scripts::address_keys(&tag, text) {
                            invocation.key(key);
                        }
                    }
                    invocation
                        .arg(&tag)
                        .arg(limits.connections)
                        .arg(millis(limits.delay))
                        .arg(hold)
                        .arg(millis(limits.delay.max(FULL_RETRY)))
                        .arg(millis(TICKET_TTL));
                    for at in &addresses {
                        invocation.arg(at.ended.len());
                        for &i in &at.ended {
                            invocation.arg(name(i));
                        }
                        invocation.arg(at.asking.len());
                        for &i in &at.asking {
                            if let Ask::Enter { host, .. } = &calls[i].0.ask {
                                invocation.arg(host.as_str());
                            }
                        }
                        for &i in &at.asking {
                            invocation.arg(name(i));
                        }
                    }
                    self.call(&invocation).await
                }
            };
            let answer = match answer {
                Ok(waits) if waits.len() == asked => Ok(waits),
                Ok(_) => {
                    Err(ErrorKind::Server("unexpected answer to an address script".into()).into())
                }
                Err(err) => Err(err),
            };
            // A script refused (Redis out of memory past the retries refuses scripts that
            // write, not a plain removal; an ACL may too) or unanswered (it may have run)
            // would leave the requests that ended, and the turns it let go, holding their
            // places until their hold: they leave alone (a name not held is no matter), and
            // the turns hear the error (their requests go without a place: see the crawler's
            // `Lease::enter_address`).
            let left = match (&answer, terms) {
                (Err(_), Some(_)) => self.store.query_each::<i64>(&leaves(true)).await.map(drop),
                (answer, _) => answer.as_ref().map(drop).map_err(Clone::clone),
            };
            // Each turn's answer, by its place among the script's requests.
            let mut waits: Vec<Option<i64>> = vec![None; calls.len()];
            if let Ok(answer) = &answer {
                let places = addresses.iter().flat_map(|a| a.asking.iter().copied());
                for (place, &wait) in places.zip(answer) {
                    waits[place] = Some(wait);
                }
            }
            for ((call, reply), wait) in calls.into_iter().zip(waits) {
                let AddressCall { address, ask } = call;
                match ask {
                    Ask::Leave(_) => {
                        let _ = reply.send(left.clone().map(|()| 0));
                    }
                    Ask::Enter { name, .. } => {
                        let wait = match (&answer, wait) {
                            (Ok(_), wait) => Ok(wait.unwrap_or(0)),
                            (Err(err), _) => Err(err.clone()),
                        };
                        let went = matches!(wait, Ok(0));
                        if reply.send(wait).is_err() && went {
                            // Its request was cancelled while its turn was asked: the place
                            // it was given is given back, in this task's next script.
                            let (unheard, _) = oneshot::channel();
                            let call = AddressCall {
                                address,
                                ask: Ask::Leave(name),
                            };
                            let none = self.sent.addresses.push(group, call, unheard);
                            debug_assert!(none.is_none());
                        }
                    }
                }
            }
        }
    }
}
