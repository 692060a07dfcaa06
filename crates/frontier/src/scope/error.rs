//! Why scope rules could not be built.

use std::fmt;

/// Scope rules that could not be built, with the reason.
///
/// Inspect [`ScopeError::kind`] for the cause; `Display` names the pattern and quotes the
/// regex crate's explanation, which is also the error's
/// [`source`](std::error::Error::source).
///
/// # Example
///
/// ```
/// use frontier::{ScopeErrorKind, ScopeRules};
///
/// let err = ScopeRules::builder().include(r"^https://[a-z+/").build().unwrap_err();
/// assert_eq!(err.kind(), &ScopeErrorKind::InvalidInclude(r"^https://[a-z+/".into()));
/// assert!(err.to_string().starts_with(r#"invalid include pattern "^https://[a-z+/": "#));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ScopeError {
    kind: ScopeErrorKind,
    /// The regex crate's complaint about the pattern.
    regex: regex::Error,
}

/// Why scope rules could not be built. New kinds may be added, so match with a wildcard arm.
///
/// # Example
///
/// ```
/// use frontier::{ScopeErrorKind, ScopeRules};
///
/// match ScopeRules::builder().exclude("*.pdf").build().unwrap_err().kind() {
///     ScopeErrorKind::InvalidExclude(pattern) => assert_eq!(pattern, "*.pdf"),
///     other => panic!("unexpected {other:?}"),
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ScopeErrorKind {
    /// An include pattern, given here, is not a valid regular expression (or is too large).
    InvalidInclude(String),
    /// An exclude pattern, given here, is not a valid regular expression (or is too large).
    InvalidExclude(String),
}

impl ScopeError {
    pub(super) fn new(kind: ScopeErrorKind, regex: regex::Error) -> Self {
        ScopeError { kind, regex }
    }

    /// The cause of the error.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{ScopeErrorKind, ScopeRules};
    ///
    /// let err = ScopeRules::builder().include("a{2,1}").build().unwrap_err();
    /// assert_eq!(err.kind(), &ScopeErrorKind::InvalidInclude("a{2,1}".into()));
    /// ```
    pub fn kind(&self) -> &ScopeErrorKind {
        &self.kind
    }
}

impl fmt::Display for ScopeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (list, pattern) = match &self.kind {
            ScopeErrorKind::InvalidInclude(pattern) => ("include", pattern),
            ScopeErrorKind::InvalidExclude(pattern) => ("exclude", pattern),
        };
        write!(f, "invalid {list} pattern \"{pattern}\": {}", self.regex)
    }
}

impl std::error::Error for ScopeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.regex)
    }
}
