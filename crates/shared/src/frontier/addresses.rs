//! Politeness per address, for every process of the crawl: a request's turn at the IP
//! address its connection goes to, by `frontier::AddressRecord`'s rule, run in Redis
//! (`scripts/address.lua`) on keys of the address's own (so that, on a cluster, addresses
//! spread over the masters as buckets do).

use std::net::IpAddr;

use frontier::{AddressLimits, FULL_RETRY, TICKET_TTL, Turn};

use super::*;
use crate::scripts::ADDRESS_KEYS;

impl SharedFrontier {
    /// Asks a turn at `address` for a request of `host`, under `limits`, for every process
    /// of the crawl. `token` names the request with its host (a lease's token: another
    /// bucket's lease may have the same), and `hold` is how long it may keep its place at
    /// most: a process killed with the request out gives it back then.
    /// On [`Turn::Go`], [`leave_address`](Self::leave_address) when the request ends.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f(frontier: shared::SharedFrontier) -> Result<(), shared::Error> {
    /// use std::time::Duration;
    /// use frontier::{AddressLimits, Turn};
    ///
    /// let limits = AddressLimits { connections: 2, delay: Duration::from_millis(100) };
    /// let server = "192.0.2.7".parse().unwrap();
    /// if frontier.enter_address(server, "a.example", 7, limits, Duration::from_secs(60)).await? == Turn::Go {
    ///     // ... the request ...
    ///     frontier.leave_address(server, "a.example", 7).await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn enter_address(
        &self,
        address: IpAddr,
        host: &str,
        token: u64,
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
            .arg(format!("{host} {token}"))
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
        token: u64,
    ) -> Result<(), Error> {
        let tag = self.inner.store.address_tag(address);
        let leave = crate::scripts::address_leave(&tag, &format!("{host} {token}"));
        self.inner.store.query::<i64>(&leave).await.map(drop)
    }
}
