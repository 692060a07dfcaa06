//! The process's limit on open files (`RLIMIT_NOFILE`): every connection is one, and a broad
//! crawl holds thousands. Many systems start a process with a soft limit of 1,024 under a
//! hard limit hundreds of times larger; the crawl raises the soft limit to the hard one at
//! start, and when even that cannot hold `fetch.concurrency` fetches, it says so once and
//! fetches fewer at a time, rather than let connections fail with "too many open files".

/// Files kept for what is not a fetch's connection: the records, WARC files, spill runs and
/// the journal, Redis connections, the resolver's sockets, the metrics listener, the
/// runtime's own and the standard streams.
pub(crate) const RESERVED: u64 = 64;

/// Files a fetch in flight may take: its connection, and the idle connection its host keeps
/// in the pool for its next request.
pub(crate) const PER_FETCH: u64 = 2;

/// The soft and hard limits on open files after [`raise`], or `None` where the system has no
/// such limit (or it cannot be read).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Limits {
    /// The limit in force.
    pub(crate) soft: u64,
    /// The most the soft limit may be raised to.
    pub(crate) hard: u64,
}

/// Raises the soft limit on open files to the hard limit, and answers the limits then in
/// force; `None` where they cannot be read. A failure to raise is not an error: the limit
/// stays, and [`fit`] sizes the crawl to it.
#[cfg(unix)]
#[expect(
    unsafe_code,
    reason = "getrlimit and setrlimit are the system's one way to read and set the limit"
)]
pub(crate) fn raise() -> Option<Limits> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit, which `limit` is.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return None;
    }
    if limit.rlim_cur < limit.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: limit.rlim_max,
            rlim_max: limit.rlim_max,
        };
        // SAFETY: setrlimit reads one rlimit, which `raised` is.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            limit = raised;
        }
    }
    Some(Limits {
        soft: limit.rlim_cur,
        hard: limit.rlim_max,
    })
}

/// Where there is no such limit to read or raise.
#[cfg(not(unix))]
pub(crate) fn raise() -> Option<Limits> {
    None
}

/// Whether an error is this machine's want of a resource a connection needs before it sends
/// anything: open files (the process's limit or the system's). Not "cannot assign requested
/// address" (EADDRNOTAVAIL): out of local ports, but also what every connection to an IPv6
/// address gets on a machine without IPv6, a host's failure to reach, not one to wait out. An
/// I/O error nested in another is looked for by the caller.
pub(crate) fn is_local(e: &(dyn std::error::Error + 'static)) -> bool {
    #[cfg(unix)]
    const LOCAL: [i32; 2] = [libc::EMFILE, libc::ENFILE];
    #[cfg(not(unix))]
    const LOCAL: [i32; 0] = [];
    e.downcast_ref::<std::io::Error>()
        .and_then(std::io::Error::raw_os_error)
        .is_some_and(|code| LOCAL.contains(&code))
}

/// Whether this process (or the system) has no file to spare right now: a socket it tries
/// to open fails for want of one. Asked after a failure that may hide its cause (the
/// resolver reports sockets it could not open as "no connections available", as it does a
/// DNS server that refuses them).
#[cfg(unix)]
pub(crate) fn exhausted() -> bool {
    match std::net::UdpSocket::bind((std::net::Ipv4Addr::LOCALHOST, 0)) {
        Ok(_) => false,
        Err(err) => matches!(err.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)),
    }
}

/// Where there is no such limit, never.
#[cfg(not(unix))]
pub(crate) fn exhausted() -> bool {
    false
}

/// The fetches that fit in `limits` at once: `concurrency`, or fewer when the files they may
/// take ([`PER_FETCH`] each, beside [`RESERVED`]) would pass the limit; at least one.
pub(crate) fn fit(concurrency: usize, limits: Option<Limits>) -> usize {
    let Some(limits) = limits else {
        return concurrency;
    };
    let room = limits.soft.saturating_sub(RESERVED) / PER_FETCH;
    let fits = usize::try_from(room).unwrap_or(usize::MAX).max(1);
    concurrency.min(fits)
}

/// [`raise`], then [`fit`], saying once, as a warning, when the concurrency was cut and how
/// to have it.
pub(crate) fn raise_and_fit(concurrency: usize) -> usize {
    let limits = raise();
    let fits = fit(concurrency, limits);
    if fits < concurrency
        && let Some(limits) = limits
    {
        let needed = concurrency as u64 * PER_FETCH + RESERVED;
        tracing::warn!(
            "fetch.concurrency {concurrency} needs about {needed} open files, and this process \
             may have {} (ulimit -n; the hard limit is {}): fetching {fits} at a time. Raise \
             the hard limit (ulimit -Hn, LimitNOFILE= in a systemd unit) to fetch more.",
            limits.soft,
            limits.hard,
        );
    }
    fits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_concurrency_that_fits_is_kept() {
        let limits = Limits {
            soft: 20_000,
            hard: 20_000,
        };
        assert_eq!(fit(4000, Some(limits)), 4000);
        assert_eq!(fit(4000, None), 4000);
    }

    #[test]
    fn a_concurrency_that_does_not_fit_is_cut_to_what_does() {
        let limits = Limits {
            soft: 1024,
            hard: 1024,
        };
        assert_eq!(fit(4000, Some(limits)), 480);
        let tiny = Limits { soft: 10, hard: 10 };
        assert_eq!(fit(4000, Some(tiny)), 1);
    }

    #[cfg(unix)]
    #[test]
    fn a_machine_out_of_files_or_ports_is_told_from_a_host_that_fails() {
        use std::io::Error;
        for code in [libc::EMFILE, libc::ENFILE] {
            assert!(is_local(&Error::from_raw_os_error(code)), "{code}");
        }
        // EADDRNOTAVAIL: also an IPv6 address on a machine without IPv6, never waited out.
        for code in [
            libc::ECONNREFUSED,
            libc::ECONNRESET,
            libc::ETIMEDOUT,
            libc::EADDRNOTAVAIL,
        ] {
            assert!(!is_local(&Error::from_raw_os_error(code)), "{code}");
        }
        assert!(!is_local(&Error::other("no code")));
        assert!(!is_local(&std::fmt::Error));
    }

    #[test]
    fn a_process_with_files_to_spare_is_not_exhausted() {
        assert!(!exhausted());
    }

    #[test]
    fn the_soft_limit_is_raised_to_the_hard_one() {
        let Some(limits) = raise() else { return };
        // An unlimited hard limit cannot be the soft one: the kernel caps open files anyway.
        #[cfg(unix)]
        if limits.hard == libc::RLIM_INFINITY {
            return;
        }
        assert_eq!(limits.soft, limits.hard);
    }
}
