//! The shared frontier's errors.

use std::fmt;

/// Why the shared frontier could not do what was asked.
///
/// # Example
///
/// ```
/// use shared::{Error, ErrorKind};
///
/// let err = Error::from(ErrorKind::BadCrawlName("a b".into()));
/// assert!(err.to_string().contains("a b"));
/// ```
#[derive(Clone, Debug)]
pub struct Error {
    kind: ErrorKind,
}

/// What went wrong.
///
/// # Example
///
/// ```
/// use shared::ErrorKind;
///
/// let kind = ErrorKind::Unreachable { url: "redis://127.0.0.1:1".into(), detail: "refused".into() };
/// assert!(matches!(kind, ErrorKind::Unreachable { .. }));
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The server could not be reached or did not answer, even after retries.
    Unreachable {
        /// The server's address as given, its password hidden (`redis://:***@host`).
        url: String,
        /// What the client said.
        detail: String,
    },
    /// The server answered, and refused the connection's password (or wants one).
    Auth {
        /// The server's address as given, its password hidden.
        url: String,
        /// Whether the URL gave a password.
        given: bool,
    },
    /// The server answered with an error (a script error, or out of memory).
    Server(String),
    /// The crawl's name holds a character other than letters, digits, `-`, `_` and `.`.
    BadCrawlName(String),
    /// The crawl stored in Redis is not one this version understands.
    BadLayout(String),
    /// The crawl cannot be removed: this many of its processes are present.
    InUse(u64),
    /// The server would evict the crawl's keys when full (`maxmemory-policy` is not
    /// `noeviction`): URLs would be lost silently.
    Evicting(String),
}

impl Error {
    /// What went wrong.
    ///
    /// # Example
    ///
    /// ```
    /// use shared::{Error, ErrorKind};
    ///
    /// let err = Error::from(ErrorKind::Server("OOM".into()));
    /// assert!(matches!(err.kind(), ErrorKind::Server(_)));
    /// ```
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Error {
        Error { kind }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ErrorKind::Unreachable { url, detail } => {
                // The message goes to logs and terminals: a password in the URL stays out.
                write!(
                    f,
                    "cannot reach Redis at {}: {detail}",
                    frontier::redact_url(url)
                )
            }
            ErrorKind::Auth { url, given: true } => write!(
                f,
                "Redis at {} refused the password in its URL: check it (redis://:PASSWORD@HOST:PORT, \
                 or redis://USER:PASSWORD@HOST:PORT for an ACL user)",
                frontier::redact_url(url)
            ),
            ErrorKind::Auth { url, given: false } => write!(
                f,
                "Redis at {} wants a password: give it in the URL, redis://:PASSWORD@HOST:PORT \
                 (or redis://USER:PASSWORD@HOST:PORT for an ACL user)",
                frontier::redact_url(url)
            ),
            ErrorKind::Server(detail) => write!(f, "Redis answered with an error: {detail}"),
            ErrorKind::BadCrawlName(name) => write!(
                f,
                "bad crawl name {name:?}: use letters, digits, '-', '_' and '.' only"
            ),
            ErrorKind::BadLayout(detail) => {
                write!(f, "the crawl stored in Redis cannot be read: {detail}")
            }
            ErrorKind::InUse(processes) => write!(
                f,
                "{processes} of the crawl's processes are running (heard from in the last \
                 5 s): stop them first"
            ),
            ErrorKind::Evicting(policy) => write!(
                f,
                "Redis evicts keys when full (maxmemory-policy {policy}): the crawl's URLs \
                 would be lost silently; set maxmemory-policy noeviction"
            ),
        }
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_never_reaches_the_message() {
        let kind = ErrorKind::Unreachable {
            url: "redis://:pw@h:6379/0".into(),
            detail: "refused".into(),
        };
        let message = Error::from(kind).to_string();
        assert_eq!(
            message,
            "cannot reach Redis at redis://:***@h:6379/0: refused"
        );
    }
}
