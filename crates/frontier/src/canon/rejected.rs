//! Why a URL has no canonical form.

use std::fmt;

/// A URL the [`Canonicalizer`](crate::Canonicalizer) refused, with the reason.
///
/// Inspect [`Rejected::kind`] to react to a particular cause, use [`Rejected::reason`] as a
/// counter key, and `Display` for a sentence for a person.
///
/// # Example
///
/// ```
/// use frontier::{Canonicalizer, RejectKind};
///
/// let err = Canonicalizer::new().canonicalize("mailto:someone@example.com").unwrap_err();
/// assert_eq!(err.kind(), &RejectKind::UnsupportedScheme("mailto".into()));
/// assert_eq!(err.reason(), "unsupported_scheme");
/// assert!(err.to_string().contains("mailto"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejected {
    kind: RejectKind,
    /// The parser's complaint, for [`RejectKind::Unparsable`].
    parse_error: Option<url::ParseError>,
}

/// Why a URL was rejected. New kinds may be added, so match with a wildcard arm.
///
/// # Example
///
/// ```
/// use frontier::{Canonicalizer, RejectKind};
///
/// match Canonicalizer::new().canonicalize("http://").unwrap_err().kind() {
///     RejectKind::Unparsable => {}
///     other => panic!("unexpected {other:?}"),
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RejectKind {
    /// Not a URL: no scheme, an empty or invalid host, an invalid port, or a relative
    /// reference that cannot be resolved against its base.
    Unparsable,
    /// A scheme other than `http` and `https` (lower-cased as the parser reports it):
    /// `mailto`, `javascript`, `data`, `ftp`, `file`, `tel`...
    UnsupportedScheme(String),
    /// The input, or the canonical URL built from it, is longer than the limit (see
    /// [`CanonicalizerBuilder::max_length`](crate::CanonicalizerBuilder::max_length)).
    TooLong {
        /// The length in bytes of the offending string.
        len: usize,
        /// The limit in bytes.
        max: usize,
    },
    /// The host is made only of dots (`http://./`): once the trailing dots are removed,
    /// nothing is left to connect to.
    NoHost,
}

impl RejectKind {
    /// A short, stable, `snake_case` name for the kind, fit for a counter or a log field:
    /// `unparsable`, `unsupported_scheme`, `too_long` or `no_host`.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::RejectKind;
    ///
    /// assert_eq!(RejectKind::TooLong { len: 3000, max: 2048 }.reason(), "too_long");
    /// ```
    pub fn reason(&self) -> &'static str {
        match self {
            RejectKind::Unparsable => "unparsable",
            RejectKind::UnsupportedScheme(_) => "unsupported_scheme",
            RejectKind::TooLong { .. } => "too_long",
            RejectKind::NoHost => "no_host",
        }
    }
}

impl Rejected {
    pub(crate) fn new(kind: RejectKind) -> Self {
        Rejected {
            kind,
            parse_error: None,
        }
    }

    pub(crate) fn unparsable(err: url::ParseError) -> Self {
        Rejected {
            kind: RejectKind::Unparsable,
            parse_error: Some(err),
        }
    }

    /// The cause of the rejection.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{Canonicalizer, RejectKind};
    ///
    /// let err = Canonicalizer::new().canonicalize("http://./").unwrap_err();
    /// assert_eq!(err.kind(), &RejectKind::NoHost);
    /// ```
    pub fn kind(&self) -> &RejectKind {
        &self.kind
    }

    /// The kind's short name, fit for a counter key; see [`RejectKind::reason`].
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::Canonicalizer;
    ///
    /// let err = Canonicalizer::new().canonicalize("not a url").unwrap_err();
    /// assert_eq!(err.reason(), "unparsable");
    /// ```
    pub fn reason(&self) -> &'static str {
        self.kind.reason()
    }
}

impl From<RejectKind> for Rejected {
    fn from(kind: RejectKind) -> Self {
        Rejected::new(kind)
    }
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            RejectKind::Unparsable => match &self.parse_error {
                Some(err) => write!(f, "unparsable URL: {err}"),
                None => write!(f, "unparsable URL"),
            },
            RejectKind::UnsupportedScheme(scheme) => write!(
                f,
                "unsupported scheme \"{scheme}\": only http and https URLs are crawled"
            ),
            RejectKind::TooLong { len, max } => {
                write!(f, "URL is {len} bytes long, over the limit of {max}")
            }
            RejectKind::NoHost => write!(f, "URL has no host"),
        }
    }
}

impl std::error::Error for Rejected {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.parse_error
            .as_ref()
            .map(|err| err as &(dyn std::error::Error + 'static))
    }
}
