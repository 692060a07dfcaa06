//! Helpers shared by the examples: the `main` wrapper, the flag parser, a self-removing temp
//! dir, SplitMix64's finalizer, memory readings from `/proc` and the number formatting.
//!
//! A directory module, so that cargo does not take it for an example of its own; each example
//! includes it with `mod common;`.

// Every example compiles this module on its own and uses only some of it; the rest would warn
// as dead code in that example.
#![allow(dead_code)]

use std::fmt::Display;
use std::fs;
use std::io::{self, Write};
use std::iter::Skip;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// An example's `main`: parses the command line with `parse_args` and runs the result with
/// `run`. `Ok(None)` from `parse_args` asks for the `usage` text on stdout; a parse error exits
/// with 2 and a run error with 1, each after a message on stderr that starts with `name`.
pub(crate) fn main<C>(
    name: &str,
    usage: &str,
    parse_args: impl FnOnce(Skip<std::env::Args>) -> Result<Option<C>, String>,
    run: impl FnOnce(&C) -> Result<(), String>,
) -> ExitCode {
    let config = match parse_args(std::env::args().skip(1)) {
        Ok(Some(config)) => config,
        Ok(None) => {
            // Not println!, which panics when stdout is a closed pipe (`--help | head -1`).
            let _ = writeln!(io::stdout(), "{usage}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("{name}: {message}\nrun with --help for usage");
            return ExitCode::from(2);
        }
    };
    match run(&config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{name}: error: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Command-line flags, one at a time: `--flag value` or `--flag=value`.
pub(crate) struct Flags<I> {
    args: I,
    /// The current argument as given, for error messages.
    arg: String,
    /// The current flag: the argument, or its part before the first `=` in `--flag=value`.
    flag: String,
    /// The value after the `=`, if any.
    inline: Option<String>,
}

impl<I: Iterator<Item = String>> Flags<I> {
    pub(crate) fn new(args: I) -> Self {
        Flags {
            args,
            arg: String::new(),
            flag: String::new(),
            inline: None,
        }
    }

    /// Moves on to the next argument and returns its flag; `None` after the last.
    pub(crate) fn next_flag(&mut self) -> Option<String> {
        let arg = self.args.next()?;
        (self.flag, self.inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => {
                (flag.to_string(), Some(value.to_string()))
            }
            _ => (arg.clone(), None),
        };
        self.arg = arg;
        Some(self.flag.clone())
    }

    /// The current flag's value: the text after its `=`, or else the next argument.
    pub(crate) fn value(&mut self) -> Result<String, String> {
        self.inline
            .clone()
            .or_else(|| self.args.next())
            .ok_or_else(|| format!("{} needs a value", self.flag))
    }

    /// Checks that the current flag, a switch, was given no `=value`.
    pub(crate) fn no_value(&self) -> Result<(), String> {
        match self.inline {
            Some(_) => Err(format!("{} takes no value", self.flag)),
            None => Ok(()),
        }
    }

    /// The error for an argument that is no known flag.
    pub(crate) fn unknown(&self) -> String {
        format!("unknown argument {:?}", self.arg)
    }

    /// The current flag's value as a whole number (`_` ignored, as in `1_000_000`).
    pub(crate) fn count(&mut self) -> Result<u64, String> {
        self.count_where(|_| true, "expects a non-negative whole number")
    }

    /// The current flag's value as a whole number (`_` ignored) that `valid` accepts; else the
    /// error "FLAG `expected`, got TEXT".
    pub(crate) fn count_where(
        &mut self,
        valid: impl FnOnce(u64) -> bool,
        expected: &str,
    ) -> Result<u64, String> {
        self.parse_where(
            |text| text.replace('_', "").parse().ok().filter(|&n| valid(n)),
            expected,
        )
    }

    /// The current flag's value as a number that `valid` accepts; else the error
    /// "FLAG `expected`, got TEXT".
    pub(crate) fn number_where(
        &mut self,
        valid: impl FnOnce(f64) -> bool,
        expected: &str,
    ) -> Result<f64, String> {
        self.parse_where(|text| text.parse().ok().filter(|&v| valid(v)), expected)
    }

    /// The current flag's value through `parse`; `None` from it gives the error
    /// "FLAG `expected`, got TEXT".
    fn parse_where<T>(
        &mut self,
        parse: impl FnOnce(&str) -> Option<T>,
        expected: &str,
    ) -> Result<T, String> {
        let text = self.value()?;
        parse(&text).ok_or_else(|| format!("{} {expected}, got {text:?}", self.flag))
    }
}

/// A directory under the system temp dir with a unique name, removed with its contents when
/// dropped.
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    pub(crate) fn new(prefix: &str) -> io::Result<Self> {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let base = std::env::temp_dir();
        for attempt in 0..100 {
            let path = base.join(format!("{prefix}-{}-{nanos}-{attempt}", std::process::id()));
            match fs::create_dir(&path) {
                Ok(()) => return Ok(TempDir(path)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
            }
        }
        Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "no unused temp dir name after 100 attempts",
        ))
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        // Best effort: a leftover temp dir must not turn a result into an error.
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// SplitMix64's finalizer: a bijection on `u64`.
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The slots hashbrown (std's `HashSet`) gives `n` entries, whether it grew to them by
/// doubling or was made `with_capacity(n)`: the next power of two at or above `n * 8 / 7`, its
/// maximum load being 7/8, and at least 4.
pub(crate) fn hashbrown_slots(n: u64) -> u64 {
    match n {
        0..4 => 4,
        4..8 => 8,
        _ => (n * 8).div_ceil(7).next_power_of_two(),
    }
}

/// A size from `/proc/self/status` (Linux): `VmRSS:` the resident set, `VmHWM:` its peak since
/// start or the last reset.
pub(crate) fn proc_status_bytes(field: &str) -> Option<u64> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// `n` as a `usize`, or an error on a platform where it does not fit.
pub(crate) fn usize_from(n: u64) -> Result<usize, String> {
    usize::try_from(n).map_err(|_| format!("{n} does not fit in this platform's usize"))
}

/// `1234567` as `1,234,567`.
pub(crate) fn group(n: impl Display) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `bytes` in MiB, two decimals.
pub(crate) fn mib(bytes: u64) -> String {
    format!("{:.2} MiB", bytes as f64 / (1 << 20) as f64)
}

/// `d` in seconds, three decimals.
pub(crate) fn secs(d: Duration) -> String {
    format!("{:.3} s", d.as_secs_f64())
}

/// `part / whole`, or 0 when `whole` is 0.
pub(crate) fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}
