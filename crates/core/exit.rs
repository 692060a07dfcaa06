//! How a run ended, as an exit code: what scripts driving the crawler test.
//!
//! ```
//! use crawler::{EXIT_ERROR, EXIT_FINISHED, EXIT_NOTHING_FETCHED, EXIT_QUIT, Ended};
//! let codes = [Ended::Crawled, Ended::NothingFetched, Ended::AlreadyFinished, Ended::Quit]
//!     .map(Ended::exit_code);
//! assert_eq!(codes, [0, EXIT_NOTHING_FETCHED, EXIT_FINISHED, EXIT_QUIT]);
//! assert!(!codes.contains(&EXIT_ERROR)); // a run that failed has no `Ended`
//! ```

/// The exit code of a crawl that ran but got not a single answer: every seed's host failed
/// to resolve, refused the connection, failed TLS or timed out (or robots.txt allowed
/// nothing). Scripts tell it from a crawl with some broken pages, which exits 0.
pub const EXIT_NOTHING_FETCHED: u8 = 3;

/// The exit code of a run that found its shared crawl finished already, with no seed new to
/// it: the same command run twice does not pass for a crawl that fetched nothing.
pub const EXIT_FINISHED: u8 = 4;

/// The exit code after a second Ctrl-C, as shells give a process ended by SIGINT.
pub const EXIT_QUIT: u8 = 130;

/// The exit code of a run that could not start or could not write its results: a bad
/// setting or seed, an unusable state directory, Redis out of reach, records not written.
pub const EXIT_ERROR: u8 = 2;

/// How a run ended, when it ran.
///
/// ```
/// assert_eq!(crawler::Ended::Crawled.exit_code(), 0);
/// assert_eq!(crawler::Ended::Quit.exit_code(), crawler::EXIT_QUIT);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// At least one URL had an HTTP answer (or there was nothing left to do).
    Crawled,
    /// URLs were tried, and none had an answer.
    NothingFetched,
    /// A second Ctrl-C: quit at once, without the final checkpoint.
    Quit,
    /// The shared crawl had finished before this run: nothing was done.
    AlreadyFinished,
}

impl Ended {
    /// The process's exit code for this ending.
    ///
    /// ```
    /// assert_eq!(crawler::Ended::NothingFetched.exit_code(), crawler::EXIT_NOTHING_FETCHED);
    /// ```
    pub fn exit_code(self) -> u8 {
        match self {
            Ended::Crawled => 0,
            Ended::NothingFetched => EXIT_NOTHING_FETCHED,
            Ended::Quit => EXIT_QUIT,
            Ended::AlreadyFinished => EXIT_FINISHED,
        }
    }
}
