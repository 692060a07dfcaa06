//! Politeness per address, for every process of the crawl: a request's turn at the IP
//! address its connection goes to, by `frontier::AddressRecord`'s rule, run in Redis
//! (`scripts/address.lua`) on keys of the address's own (so that, on a cluster, addresses
//! spread over the masters as buckets do).

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
    /// the request out gives it back then.
    /// On [`Turn::Go`], [`leave_address`](Self::leave_address) when the request ends.
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
        let tag = self.inner.store.address_tag(address);
        let mut invocation = self.inner.scripts.address.prepare_invoke();
        for key in ADDRESS_KEYS {
            invocation.key(format!("{tag}:{key}"));
        }
        invocation
            .arg(&tag)
            .arg(host)
            .arg(request.member(host))
            .arg(limits.connections)
            .arg(millis(limits.delay))
            .arg(millis(hold).max(1))
            .arg(millis(limits.delay.max(FULL_RETRY)))
            .arg(millis(TICKET_TTL));
        let wait: i64 = self.inner.call(&invocation).await?;
        let after = |ms: i64| Instant::now() + Duration::from_millis(ms.unsigned_abs());
        Ok(match wait {
            0 => Turn::Go,
            full if full < 0 => Turn::Full(after(full)),
            ms => Turn::WaitUntil(after(ms)),
        })
    }

    /// A request that [`enter_address`](Self::enter_address) let go has ended.
    ///
    /// # Example
    ///
    /// See [`enter_address`](Self::enter_address).
    pub async fn leave_address(
        &self,
        address: IpAddr,
        host: &str,
        request: AddressRequest,
    ) -> Result<(), Error> {
        let tag = self.inner.store.address_tag(address);
        let leave = crate::scripts::address_leave(&tag, &request.member(host));
        self.inner.store.query::<i64>(&leave).await.map(drop)
    }
}
