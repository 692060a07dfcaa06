//! Errors of the frontier's files: disk spill segments and checkpoints.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// A frontier file that could not be written, read or trusted, named by its path.
///
/// Spilling URLs to disk and checkpointing both report this error. The path is the file (or
/// directory) at fault; [`kind`](Self::kind) says what went wrong.
///
/// # Example
///
/// ```
/// use frontier::{DiskErrorKind, Frontier};
///
/// let dir = std::env::temp_dir().join(format!("frontier-doc-missing-{}", std::process::id()));
/// let err = Frontier::open(&dir, Frontier::builder(), std::time::Instant::now()).unwrap_err();
/// assert!(matches!(err.kind(), DiskErrorKind::Io(_)));
/// assert!(err.path().ends_with("MANIFEST"));
/// assert!(err.to_string().contains("MANIFEST"));
/// ```
#[derive(Debug)]
pub struct DiskError {
    path: PathBuf,
    kind: DiskErrorKind,
}

/// What went wrong with a frontier file. New kinds may be added, so match with a wildcard arm.
///
/// # Example
///
/// ```
/// use frontier::DiskErrorKind;
///
/// fn advice(kind: &DiskErrorKind) -> &'static str {
///     match kind {
///         DiskErrorKind::Io(_) => "check the disk and the permissions",
///         DiskErrorKind::Corrupt(_) | DiskErrorKind::Foreign | DiskErrorKind::Version { .. } => {
///             "this state cannot be used; start a new crawl"
///         }
///         _ => "see the message",
///     }
/// }
/// assert_eq!(advice(&DiskErrorKind::Foreign), "this state cannot be used; start a new crawl");
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum DiskErrorKind {
    /// The operating system refused or failed: missing file, no space, no permission.
    Io(io::Error),
    /// The bytes are not what was written: truncated, or changed after writing. The text
    /// says which check failed.
    Corrupt(&'static str),
    /// Not a frontier file at all: its magic bytes are wrong.
    Foreign,
    /// A frontier file of a format version this build does not read.
    Version {
        /// The version found in the file.
        found: u32,
        /// The version this build reads and writes.
        supported: u32,
    },
    /// The spill directory already holds segment files: another frontier is using it, or a
    /// crashed one left them behind. They are never deleted without being asked.
    InUse,
    /// The seen-test's filter in a checkpoint could not be decoded.
    Filter(bloom::Error),
    /// The checkpoint holds spilled URLs, and the frontier was opened without spill
    /// settings to put them back in.
    SpillRequired,
    /// Bytes at this offset are not what was written, and good bytes follow them: the file
    /// was damaged after it was written (a torn last entry is cut off instead).
    CorruptAt {
        /// Where the damage starts, in bytes from the start of the file.
        offset: u64,
        /// Which check failed.
        what: &'static str,
    },
}

impl DiskError {
    pub(crate) fn new(path: impl Into<PathBuf>, kind: DiskErrorKind) -> Self {
        DiskError {
            path: path.into(),
            kind,
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, err: io::Error) -> Self {
        Self::new(path, DiskErrorKind::Io(err))
    }

    pub(crate) fn corrupt(path: impl Into<PathBuf>, what: &'static str) -> Self {
        Self::new(path, DiskErrorKind::Corrupt(what))
    }

    /// The file or directory at fault.
    ///
    /// # Example
    ///
    /// ```
    /// # use frontier::Frontier;
    /// let err = Frontier::open("/nonexistent/state", Frontier::builder(), std::time::Instant::now()).unwrap_err();
    /// assert_eq!(err.path(), std::path::Path::new("/nonexistent/state/MANIFEST"));
    /// ```
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What went wrong.
    ///
    /// # Example
    ///
    /// ```
    /// # use frontier::{DiskErrorKind, Frontier};
    /// let err = Frontier::open("/nonexistent/state", Frontier::builder(), std::time::Instant::now()).unwrap_err();
    /// assert!(matches!(err.kind(), DiskErrorKind::Io(e) if e.kind() == std::io::ErrorKind::NotFound));
    /// ```
    pub fn kind(&self) -> &DiskErrorKind {
        &self.kind
    }
}

impl fmt::Display for DiskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path.display();
        match &self.kind {
            DiskErrorKind::Io(err) => write!(f, "{path}: {err}"),
            DiskErrorKind::Corrupt(what) => write!(f, "{path}: corrupt ({what})"),
            DiskErrorKind::Foreign => write!(f, "{path}: not a frontier file"),
            DiskErrorKind::Version { found, supported } => write!(
                f,
                "{path}: format version {found}, but this build reads version {supported}"
            ),
            DiskErrorKind::InUse => write!(
                f,
                "{path}: already holds spill segments (another frontier is using it, or a \
                 crashed one left them; remove them to reuse the directory)"
            ),
            DiskErrorKind::Filter(err) => write!(f, "{path}: seen-test filter: {err}"),
            DiskErrorKind::SpillRequired => write!(
                f,
                "{path}: the checkpoint holds URLs spilled to disk; open it with spill settings"
            ),
            DiskErrorKind::CorruptAt { offset, what } => {
                write!(f, "{path}: damaged at byte {offset}: {what}")
            }
        }
    }
}

impl std::error::Error for DiskError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            DiskErrorKind::Io(err) => Some(err),
            DiskErrorKind::Filter(err) => Some(err),
            _ => None,
        }
    }
}
