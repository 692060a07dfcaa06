//! Why a URL has no usable page: the `error` field of its record, one kind for the fetcher,
//! the workers, the summary and the output alike.

use std::fmt;

use serde::Serialize;

/// The kinds a record's `error` can take; docs/guide.md's "Output" table lists them, and a test
/// checks that it lists exactly these.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ErrorKind {
    /// The host's name could not be resolved.
    Dns,
    /// The connection could not be made (refused, unreachable, reset before an answer).
    Connect,
    /// The TLS handshake failed (bad certificate, not TLS on the other end).
    Tls,
    /// No answer, or no whole body, within the timeout.
    Timeout,
    /// The response broke off or could not be decoded (bad gzip, reset mid-body).
    Body,
    /// Anything else the HTTP client refused (a malformed response).
    Http,
    /// The body went past the cap; its beginning was read.
    TooLarge,
    /// robots.txt forbids the URL.
    RobotsDenied,
    /// robots.txt answered with a server error, which closes the host for a while.
    RobotsUnreachable,
    /// The host resolves only to non-public addresses (see `guard.rs`).
    SsrfBlocked,
    /// The host failed for too long and was given up: the URL was not fetched.
    HostGivenUp,
    /// The fetch worker panicked.
    Internal,
}

impl ErrorKind {
    /// Every kind, in the order docs/guide.md lists them.
    #[cfg(test)]
    pub(crate) const ALL: [ErrorKind; 12] = [
        ErrorKind::Dns,
        ErrorKind::Connect,
        ErrorKind::Tls,
        ErrorKind::Timeout,
        ErrorKind::Body,
        ErrorKind::Http,
        ErrorKind::TooLarge,
        ErrorKind::RobotsDenied,
        ErrorKind::RobotsUnreachable,
        ErrorKind::SsrfBlocked,
        ErrorKind::HostGivenUp,
        ErrorKind::Internal,
    ];

    /// The name records carry.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Dns => "dns",
            ErrorKind::Connect => "connect",
            ErrorKind::Tls => "tls",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Body => "body",
            ErrorKind::Http => "http",
            ErrorKind::TooLarge => "too_large",
            ErrorKind::RobotsDenied => "robots_denied",
            ErrorKind::RobotsUnreachable => "robots_unreachable",
            ErrorKind::SsrfBlocked => "ssrf_blocked",
            ErrorKind::HostGivenUp => "host_given_up",
            ErrorKind::Internal => "internal",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_carry_the_serde_name() {
        for kind in ErrorKind::ALL {
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{}\"", kind.as_str()));
        }
    }

    /// The guide's table of the `error` field is the contract users read: it must list
    /// exactly the kinds records carry.
    #[test]
    fn the_guide_lists_exactly_the_error_kinds() {
        let readme = include_str!("../../docs/guide.md");
        let row = readme
            .lines()
            .find(|line| line.starts_with("| `error` |"))
            .expect("docs/guide.md has a row for the error field");
        let listed: Vec<&str> = row
            .split('`')
            .skip(3) // "| ", "error", " | ..." : the kinds are the odd pieces after these
            .step_by(2)
            .collect();
        let kinds: Vec<&str> = ErrorKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(listed, kinds, "docs/guide.md's error row: {row}");
    }
}
