//! The crate's one error type.

use std::fmt;

/// An error from sizing, building or decoding a filter.
///
/// Inspect [`Error::kind`] to react to a particular cause; `Display` gives a sentence for a
/// person.
///
/// # Example
///
/// ```
/// use bloom::{BloomFilter, ErrorKind};
///
/// let err = BloomFilter::new(1_000, 1.5).unwrap_err();
/// assert!(matches!(err.kind(), ErrorKind::InvalidFalsePositiveRate(_)));
/// assert!(err.to_string().contains("false-positive rate"));
/// ```
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
}

/// What went wrong. New kinds may be added, so match with a wildcard arm.
///
/// # Example
///
/// ```
/// use bloom::{BloomFilter, ErrorKind};
///
/// match BloomFilter::from_bytes(b"not a filter").unwrap_err().kind() {
///     ErrorKind::Truncated | ErrorKind::BadMagic => {}
///     other => panic!("unexpected {other:?}"),
/// }
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The target false-positive rate is NaN or outside the open interval (0, 1).
    InvalidFalsePositiveRate(f64),
    /// The filter was asked to hold zero items: its size would be meaningless.
    ZeroItems,
    /// A filter with zero bits was requested.
    ZeroBits,
    /// A filter with zero hash functions was requested.
    ZeroHashes,
    /// More hash functions were requested (or implied by the rate) than
    /// [`MAX_HASHES`](crate::MAX_HASHES).
    TooManyHashes(u64),
    /// The filter would need more than [`MAX_BITS`](crate::MAX_BITS) bits.
    TooLarge {
        /// The number of bits the parameters called for.
        bits: f64,
    },
    /// Blocked filters put each item in one or two blocks; another count was requested.
    InvalidBlocksPerKey(u32),
    /// Fewer hashes than blocks per item: some block would get no probe.
    FewerHashesThanBlocks {
        /// The hashes requested.
        hashes: u32,
        /// The blocks per item requested.
        blocks_per_key: u32,
    },
    /// Two filters cannot be combined: they differ in size, hashes, layout or key. The text
    /// says which.
    Incompatible(&'static str),
    /// Only filters whose bit count (blocked: block count) is a power of two, larger than the
    /// minimum, can be folded.
    CannotFold,
    /// A scalable filter's growth factor must be 2 to 16.
    InvalidGrowth(u32),
    /// A scalable filter's tightening ratio must lie strictly between 0 and 1.
    InvalidTightening(f64),
    /// Counting filters have 4- or 8-bit counters; another width was requested.
    InvalidCounterBits(u32),
    /// A compressed filter would restore to more bytes than the caller's limit (`max_len`
    /// of [`decompress`](crate::decompress)).
    OverLimit {
        /// The bytes it would restore to.
        bytes: u64,
        /// The caller's limit.
        limit: u64,
    },
    /// The allocator could not provide the filter's memory.
    OutOfMemory {
        /// The number of bytes requested.
        bytes: u64,
    },
    /// Serialized input ended early.
    Truncated,
    /// Serialized input does not start with the filter magic bytes.
    BadMagic,
    /// Serialized input uses a format version this build cannot read.
    UnsupportedVersion(u16),
    /// Serialized input holds a different kind of filter than the one being decoded.
    WrongLayout {
        /// The layout the caller asked for.
        expected: &'static str,
        /// The layout id found in the input.
        found: u8,
    },
    /// Serialized input names a hash function this build does not implement.
    UnknownHash(u8),
    /// A field or the payload is out of range or inconsistent; the text says which.
    Corrupt(&'static str),
    /// A checksum did not match: the input was damaged in storage or transit.
    ChecksumMismatch {
        /// Which part failed: `"header"` or `"payload"`.
        part: &'static str,
    },
    /// `from_bytes` was given more bytes than the filter occupies.
    TrailingBytes(usize),
    /// Reading or writing the underlying stream failed.
    Io(std::io::Error),
}

impl Error {
    pub(crate) fn new(kind: ErrorKind) -> Self {
        Error { kind }
    }

    /// The cause of the error.
    ///
    /// # Example
    ///
    /// ```
    /// use bloom::{BloomFilter, ErrorKind};
    ///
    /// let err = BloomFilter::new(0, 0.01).unwrap_err();
    /// assert!(matches!(err.kind(), ErrorKind::ZeroItems));
    /// ```
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Self {
        Error::new(kind)
    }
}

impl From<std::io::Error> for Error {
    fn from(err: std::io::Error) -> Self {
        if err.kind() == std::io::ErrorKind::UnexpectedEof {
            Error::new(ErrorKind::Truncated)
        } else {
            Error::new(ErrorKind::Io(err))
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ErrorKind::InvalidFalsePositiveRate(p) => {
                write!(f, "false-positive rate {p} is not strictly between 0 and 1")
            }
            ErrorKind::ZeroItems => write!(f, "expected item count must be at least 1"),
            ErrorKind::ZeroBits => write!(f, "a filter needs at least 1 bit"),
            ErrorKind::ZeroHashes => write!(f, "a filter needs at least 1 hash function"),
            ErrorKind::TooManyHashes(k) => write!(
                f,
                "{k} hash functions exceed the maximum of {}",
                crate::MAX_HASHES
            ),
            ErrorKind::TooLarge { bits } => write!(
                f,
                "{bits:.0} bits exceed the maximum filter size of {} bits",
                crate::MAX_BITS
            ),
            ErrorKind::InvalidBlocksPerKey(b) => {
                write!(f, "blocks per key must be 1 or 2, not {b}")
            }
            ErrorKind::FewerHashesThanBlocks {
                hashes,
                blocks_per_key,
            } => write!(
                f,
                "{hashes} hashes cannot give each of {blocks_per_key} blocks per item a probe"
            ),
            ErrorKind::Incompatible(what) => write!(f, "filters are incompatible: {what}"),
            ErrorKind::CannotFold => write!(
                f,
                "only a filter whose size is a power of two (at least 128 bits, or 2 blocks) can fold"
            ),
            ErrorKind::InvalidGrowth(g) => write!(f, "growth factor {g} is not between 2 and 16"),
            ErrorKind::InvalidTightening(r) => {
                write!(f, "tightening ratio {r} is not strictly between 0 and 1")
            }
            ErrorKind::InvalidCounterBits(w) => {
                write!(f, "counters must be 4 or 8 bits wide, not {w}")
            }
            ErrorKind::OverLimit { bytes, limit } => write!(
                f,
                "the compressed filter restores to {bytes} bytes, over the limit of {limit}"
            ),
            ErrorKind::OutOfMemory { bytes } => {
                write!(f, "could not allocate {bytes} bytes for the filter")
            }
            ErrorKind::Truncated => write!(f, "serialized filter is truncated"),
            ErrorKind::BadMagic => write!(f, "input is not a serialized Bloom filter (bad magic)"),
            ErrorKind::UnsupportedVersion(v) => {
                write!(f, "serialized filter has unsupported format version {v}")
            }
            ErrorKind::WrongLayout { expected, found } => write!(
                f,
                "serialized filter has layout id {found}, expected a {expected} filter"
            ),
            ErrorKind::UnknownHash(h) => write!(f, "serialized filter uses unknown hash id {h}"),
            ErrorKind::Corrupt(what) => write!(f, "serialized filter is corrupt: {what}"),
            ErrorKind::ChecksumMismatch { part } => {
                write!(f, "serialized filter {part} checksum mismatch")
            }
            ErrorKind::TrailingBytes(n) => {
                write!(f, "{n} unexpected bytes after the serialized filter")
            }
            ErrorKind::Io(err) => write!(f, "I/O error: {err}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ErrorKind::Io(err) => Some(err),
            _ => None,
        }
    }
}

/// Shorthand for results in this crate.
///
/// # Example
///
/// ```
/// fn build() -> bloom::Result<bloom::BloomFilter> {
///     bloom::BloomFilter::new(100, 0.01)
/// }
/// assert!(build().is_ok());
/// ```
pub type Result<T, E = Error> = std::result::Result<T, E>;
