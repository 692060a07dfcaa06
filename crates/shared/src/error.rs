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
        /// The server's address as given.
        url: String,
        /// What the client said.
        detail: String,
    },
    /// The server answered with an error (a script error, or out of memory).
    Server(String),
    /// The crawl's name holds a character other than letters, digits, `-`, `_` and `.`.
    BadCrawlName(String),
    /// The crawl stored in Redis is not one this version understands.
    BadLayout(String),
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
                    without_password(url)
                )
            }
            ErrorKind::Server(detail) => write!(f, "Redis answered with an error: {detail}"),
            ErrorKind::BadCrawlName(name) => write!(
                f,
                "bad crawl name {name:?}: use letters, digits, '-', '_' and '.' only"
            ),
            ErrorKind::BadLayout(detail) => {
                write!(f, "the crawl stored in Redis cannot be read: {detail}")
            }
            ErrorKind::Evicting(policy) => write!(
                f,
                "Redis evicts keys when full (maxmemory-policy {policy}): the crawl's URLs \
                 would be lost silently; set maxmemory-policy noeviction"
            ),
        }
    }
}

impl std::error::Error for Error {}

/// `url` with its password, if it has one, as `***`: `redis://:secret@host` is
/// `redis://:***@host`. Text, not a parsed URL, so that a URL that does not parse is hidden
/// the same.
fn without_password(url: &str) -> String {
    let Some(start) = url.find("://").map(|i| i + 3) else {
        return url.to_owned();
    };
    let authority_end = url[start..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| start + i);
    let Some(at) = url[start..authority_end].rfind('@').map(|i| start + i) else {
        return url.to_owned();
    };
    match url[start..at].find(':').map(|i| start + i) {
        Some(colon) => format!("{}:***{}", &url[..colon], &url[at..]),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_never_reaches_the_message() {
        assert_eq!(
            without_password("redis://:pw@h:6379/0"),
            "redis://:***@h:6379/0"
        );
        assert_eq!(without_password("redis://u:p@ss@h"), "redis://u:***@h");
        assert_eq!(without_password("redis://u@h"), "redis://u@h");
        assert_eq!(without_password("redis://h:6379"), "redis://h:6379");
        assert_eq!(without_password("redis://h/x@y:z"), "redis://h/x@y:z");
        let err = Error::from(ErrorKind::Unreachable {
            url: "rediss://:hunter2@cache:6380".into(),
            detail: "refused".into(),
        });
        assert_eq!(
            err.to_string(),
            "cannot reach Redis at rediss://:***@cache:6380: refused"
        );
    }
}
