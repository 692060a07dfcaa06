//! Politeness per address, for every process of the crawl: a request's turn at the IP
//! address its connection goes to, by `frontier::AddressRecord`'s rule, run in Redis
//! (`scripts/address.lua`) on keys of the address's own (so that, on a cluster, addresses
//! spread over the masters as buckets do). The turns asked and the requests ended at an
//! address while its last script is under way go together in its next (`group.rs`): a busy
//! address costs Redis a script for many requests, not one a request and a command a leave.
//! Not at the process's ticks, as batches go: a turn waits for no tick (its connection
//! would, and at a full address every place handed on would lose that wait).

use std::net::IpAddr;

use frontier::{AddressLimits, FULL_RETRY, TICKET_TTL, Turn};

use super::*;
use crate::scripts::ADDRESS_KEYS;

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
        let call = AddressCall::Enter {
            host: host.to_owned(),
            name: request.member(host),
            limits,
            hold: millis(hold).max(1),
        };
        let wait = self.inner.at_address(address, call).await?;
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
            .queue_at_address(address, AddressCall::Leave(request.member(host)));
        async move {
            group::answer(answered, "a leave of an address")
                .await
                .map(drop)
        }
    }
}

/// A request of this process at an address, waiting for the address's next script.
pub(super) enum AddressCall {
    /// Asks its turn: its host, its name ([`AddressRequest::member`]), the limits it is held
    /// to and how long it may hold its place (ms).
    Enter {
        host: String,
        name: String,
        limits: AddressLimits,
        hold: i64,
    },
    /// Has ended: its name.
    Leave(String),
}

impl AddressCall {
    /// The limits and hold an entering request asks under (one script takes requests of one
    /// kind only: a process asks all its turns under the same).
    fn terms(&self) -> Option<(AddressLimits, i64)> {
        match self {
            AddressCall::Enter { limits, hold, .. } => Some((*limits, *hold)),
            AddressCall::Leave(_) => None,
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

impl Inner {
    /// Adds a request to `address`'s next script, and waits for its answer.
    async fn at_address(
        self: &Arc<Self>,
        address: IpAddr,
        call: AddressCall,
    ) -> Result<i64, Error> {
        let answered = self.queue_at_address(address, call);
        group::answer(answered, "a turn at an address").await
    }

    /// Adds a request to `address`'s next script (starting its sending task if none is
    /// under way, on the frontier's runtime: a leave may be queued outside one): where its
    /// answer will come (0 for a leave).
    fn queue_at_address(
        self: &Arc<Self>,
        address: IpAddr,
        call: AddressCall,
    ) -> oneshot::Receiver<Result<i64, Error>> {
        let (answered, start) = self.sent.addresses.wait(address, call);
        if let Some(sending) = start {
            self.sent
                .runtime
                .spawn(Arc::clone(self).flush_address(address, sending));
        }
        answered
    }

    /// Sends the requests waiting at an address, a script at a time, until none waits: the
    /// ended requests' leaves first, then the turns asked, in the order they came.
    async fn flush_address(
        self: Arc<Self>,
        address: IpAddr,
        mut sending: Sending<AddressCall, i64, IpAddr>,
    ) {
        loop {
            let Some(mut calls) = sending.next(fit) else {
                break;
            };
            // A turn no one waits for any more (its request was cancelled) is not asked.
            calls.retain(|(call, reply)| call.terms().is_none() || !reply.is_closed());
            let tag = self.store.address_tag(address);
            let mut ended = Vec::new();
            let mut asking = Vec::new();
            let mut terms = None;
            for (call, _) in &calls {
                match call {
                    AddressCall::Leave(name) => ended.push(name.as_str()),
                    AddressCall::Enter {
                        host,
                        name,
                        limits,
                        hold,
                    } => {
                        terms = Some((*limits, *hold));
                        asking.push((host.as_str(), name.as_str()));
                    }
                }
            }
            let leave = || crate::scripts::address_leave(&tag, &ended);
            let answer: Result<Vec<i64>, Error> = match terms {
                None if ended.is_empty() => Ok(Vec::new()),
                // Leaves alone: a plain command.
                None => self.store.query::<i64>(&leave()).await.map(|_| Vec::new()),
                Some((limits, hold)) => {
                    let mut invocation = self.scripts.address.prepare_invoke();
                    for key in ADDRESS_KEYS {
                        invocation.key(format!("{tag}:{key}"));
                    }
                    invocation
                        .arg(&tag)
                        .arg(limits.connections)
                        .arg(millis(limits.delay))
                        .arg(hold)
                        .arg(millis(limits.delay.max(FULL_RETRY)))
                        .arg(millis(TICKET_TTL))
                        .arg(ended.len());
                    for name in &ended {
                        invocation.arg(*name);
                    }
                    invocation.arg(asking.len());
                    for (host, _) in &asking {
                        invocation.arg(*host);
                    }
                    for (_, name) in &asking {
                        invocation.arg(*name);
                    }
                    self.call(&invocation).await
                }
            };
            let answer = match answer {
                Ok(waits) if waits.len() == asking.len() => Ok(waits),
                Ok(_) => {
                    Err(ErrorKind::Server("unexpected answer to an address script".into()).into())
                }
                Err(err) => Err(err),
            };
            // A script refused (Redis out of memory past the retries refuses scripts that
            // write, not a plain removal; an ACL may too) or unanswered would leave the
            // requests that ended holding their places until their hold: they leave alone,
            // and the turns hear the error.
            let left = match (&answer, terms, ended.is_empty()) {
                (Err(_), Some(_), false) => self.store.query::<i64>(&leave()).await.map(drop),
                (answer, _, _) => answer.as_ref().map(drop).map_err(Clone::clone),
            };
            let mut waits = answer.as_ref().map(|waits| waits.iter());
            for (call, reply) in calls {
                match call {
                    AddressCall::Leave(_) => {
                        let _ = reply.send(left.clone().map(|()| 0));
                    }
                    AddressCall::Enter { name, .. } => {
                        let wait = match &mut waits {
                            Ok(waits) => Ok(waits.next().copied().unwrap_or(0)),
                            Err(err) => Err(err.clone()),
                        };
                        let went = matches!(wait, Ok(0));
                        if reply.send(wait).is_err() && went {
                            // Its request was cancelled while its turn was asked: the place
                            // it was given is given back, in this task's next script.
                            let (unheard, _) = oneshot::channel();
                            let call = AddressCall::Leave(name);
                            let none = self.sent.addresses.push(address, call, unheard);
                            debug_assert!(none.is_none());
                        }
                    }
                }
            }
        }
    }
}
