//! The state directory (`--state-dir`): what a crawl needs to be resumed.
//!
//! | path | content |
//! |------|---------|
//! | `crawl.toml` | the crawl's effective settings, rewritten on each resume with its overrides |
//! | `seeds.txt` | its seeds, one per line |
//! | `seed-redirects.txt` | targets of the seeds' redirects, each with the URL that redirected: seeds of the scope, trusted by the SSRF guard only where they are the same server |
//! | `sitemaps.txt` | the URLs known as sitemaps, each after its index level, written with each checkpoint |
//! | `checkpoint/` | the frontier's latest checkpoint (see the frontier crate: atomic, typed errors) |
//! | `spill/` | the running crawl's spilled queue; a resume clears it, the checkpoint holds copies |
//! | `checkpoint/journal-G.log` | what changed since checkpoint `G` (see the frontier crate) |
//! | `recrawl` | in a recrawl (`--since`): `queuing` while its earlier URLs are being queued, then `queued` (they are in the frontier, each with its record) |
//! | `lock` | locked (an OS file lock) by the process using the directory |

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::config::Config;

/// Whether a crawl is a recrawl (`--since`), and how far the queuing of its earlier URLs got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Recrawl {
    No,
    /// Stopped while queuing them: some may not be in the frontier.
    Queuing,
    Queued,
}

/// A crawl's state directory.
pub(crate) struct StateDir {
    dir: PathBuf,
}

impl StateDir {
    pub(crate) fn new(dir: &Path) -> StateDir {
        StateDir {
            dir: dir.to_path_buf(),
        }
    }

    /// `crawl.toml`, where the settings are kept.
    pub(crate) fn settings(&self) -> PathBuf {
        self.dir.join("crawl.toml")
    }

    fn seeds(&self) -> PathBuf {
        self.dir.join("seeds.txt")
    }

    fn seed_redirects(&self) -> PathBuf {
        self.dir.join("seed-redirects.txt")
    }

    /// The targets of the seeds' redirects so far, in the order they were met, each with the
    /// URL that redirected to it (`None` in a file an older version wrote); none when the
    /// file is not there.
    pub(crate) fn load_seed_redirects(&self) -> Result<Vec<(String, Option<String>)>> {
        read_lines(&self.seed_redirects(), |line| {
            let line = line.trim();
            (!line.is_empty()).then(|| match line.split_once(' ') {
                Some((target, from)) => (target.to_owned(), Some(from.to_owned())),
                None => (line.to_owned(), None),
            })
        })
    }

    /// Writes the targets of the seeds' redirects, each before the URL that
    /// redirected to it (`TARGET FROM`, canonical URLs hold no space), atomically.
    pub(crate) fn save_seed_redirects(&self, redirects: &[(String, Option<String>)]) -> Result<()> {
        let text: String = redirects
            .iter()
            .map(|(target, from)| match from {
                Some(from) => format!("{target} {from}\n"),
                None => format!("{target}\n"),
            })
            .collect();
        write_atomically(&self.seed_redirects(), text.as_bytes())
    }

    fn sitemaps(&self) -> PathBuf {
        self.dir.join("sitemaps.txt")
    }

    /// The URLs a resumed crawl knew as sitemaps, with their index levels (none if the file
    /// is missing; a line that does not read is skipped: its URL, if queued, is then read as
    /// a sitemap only if its body is XML).
    pub(crate) fn load_sitemaps(&self) -> Result<Vec<(String, u8)>> {
        read_lines(&self.sitemaps(), |line| {
            let (level, url) = line.split_once(' ')?;
            Some((url.to_owned(), level.parse().ok()?))
        })
    }

    /// Writes the URLs known as sitemaps, each after its index level, atomically.
    pub(crate) fn save_sitemaps(&self, known: &[(String, u8)]) -> Result<()> {
        let text: String = known
            .iter()
            .map(|(url, level)| format!("{level} {url}\n"))
            .collect();
        write_atomically(&self.sitemaps(), text.as_bytes())
    }

    fn recrawl_marker(&self) -> PathBuf {
        self.dir.join("recrawl")
    }

    /// Marks the crawl as a recrawl (`--since`) whose earlier URLs are being queued, or
    /// (`queued`) are all in the frontier, each with its record: resumed, it is one again
    /// without `--since`.
    pub(crate) fn mark_recrawl(&self, queued: bool) -> Result<()> {
        let text = if queued { "queued\n" } else { "queuing\n" };
        write_atomically(&self.recrawl_marker(), text.as_bytes())
    }

    /// Whether the crawl here is a recrawl, and how far the queuing of its earlier URLs got
    /// ([`mark_recrawl`](Self::mark_recrawl)).
    pub(crate) fn recrawl(&self) -> Recrawl {
        match fs::read_to_string(self.recrawl_marker()) {
            Err(_) => Recrawl::No,
            Ok(text) if text.trim() == "queued" => Recrawl::Queued,
            Ok(_) => Recrawl::Queuing,
        }
    }

    /// Where the frontier is checkpointed.
    pub(crate) fn checkpoint(&self) -> PathBuf {
        self.dir.join("checkpoint")
    }

    /// Where the running crawl spills queued URLs.
    pub(crate) fn spill(&self) -> PathBuf {
        self.dir.join("spill")
    }

    /// Whether a checkpoint was written (a crawl killed before its first has none).
    pub(crate) fn has_checkpoint(&self) -> bool {
        self.checkpoint().join("MANIFEST").exists()
    }

    /// Locks the directory for this process (an OS lock on `DIR/lock`, released when the
    /// returned file is closed, even by a crash): two processes on one state would corrupt
    /// it. Creates the directory if need be.
    pub(crate) fn lock(&self) -> Result<fs::File> {
        self.make_dir()?;
        let path = self.dir.join("lock");
        let file = private(
            fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true),
        )
        .open(&path)
        .with_context(|| format!("cannot open {}", path.display()))?;
        match file.try_lock() {
            Ok(()) => Ok(file),
            Err(fs::TryLockError::WouldBlock) => bail!(
                "{} is in use by another crawler process; wait for it to end, or give another \
                 --state-dir",
                self.dir.display()
            ),
            Err(fs::TryLockError::Error(err)) => {
                Err(err).with_context(|| format!("cannot lock {}", path.display()))
            }
        }
    }

    /// Refuses a directory that holds a crawl already, for a new crawl; writes nothing.
    pub(crate) fn refuse_if_in_use(&self) -> Result<()> {
        if self.settings().exists() || self.has_checkpoint() {
            bail!(
                "{} holds a crawl already: resume it with --resume, or give an empty directory",
                self.dir.display()
            );
        }
        Ok(())
    }

    /// Starts a new crawl here: the directory must not hold one already.
    pub(crate) fn create(&self, config: &Config, seeds: &[String]) -> Result<()> {
        self.refuse_if_in_use()?;
        self.make_dir()?;
        // Left by a crawl whose other files were removed by hand: not this crawl's.
        let _ = fs::remove_file(self.recrawl_marker());
        self.save(config, seeds)
    }

    /// Creates the directory if need be, readable by its owner alone (0700): what it holds
    /// (the settings, the queued URLs) is the crawl's business. A directory that exists keeps
    /// its permissions: the user chose them.
    fn make_dir(&self) -> Result<()> {
        let mut builder = fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder
            .create(&self.dir)
            .with_context(|| format!("cannot create state directory {}", self.dir.display()))
    }

    /// Writes the settings and seeds, each atomically (a temporary file renamed).
    pub(crate) fn save(&self, config: &Config, seeds: &[String]) -> Result<()> {
        let stored = config
            .storable(&format!("in {}", self.settings().display()))
            .context("bad setting")?;
        let settings = toml::to_string(&stored).context("cannot write the settings")?;
        write_atomically(&self.settings(), settings.as_bytes())?;
        write_atomically(&self.seeds(), (seeds.join("\n") + "\n").as_bytes())
    }

    /// The settings and seeds of the crawl to resume.
    pub(crate) fn load(&self) -> Result<(Config, Vec<String>)> {
        if !self.settings().exists() {
            bail!(
                "{} holds no crawl to resume (no crawl.toml): start one with --state-dir alone",
                self.dir.display()
            );
        }
        let config = Config::from_file(&self.settings())
            .context("the state directory's settings (from another version of the crawler?)")?;
        let seeds = fs::read_to_string(self.seeds())
            .with_context(|| format!("cannot read {}", self.seeds().display()))?
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_owned)
            .collect();
        Ok((config, seeds))
    }

    /// Empties the spill directory of a previous run: its URLs are in the checkpoint, which
    /// the resumed frontier copies from.
    pub(crate) fn clear_spill(&self) -> Result<()> {
        let spill = self.spill();
        if spill.exists() {
            fs::remove_dir_all(&spill)
                .with_context(|| format!("cannot clear {}", spill.display()))?;
        }
        Ok(())
    }
}

/// The lines of a list file that `parse` takes; none when the file is not there (a crawl
/// that never wrote it).
fn read_lines<T>(path: &Path, parse: impl FnMut(&str) -> Option<T>) -> Result<Vec<T>> {
    match fs::read_to_string(path) {
        Ok(text) => Ok(text.lines().filter_map(parse).collect()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(err) => Err(err).with_context(|| format!("cannot read {}", path.display())),
    }
}

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    // One a crash left, perhaps with wider permissions: the mode applies to new files only.
    let _ = fs::remove_file(&tmp);
    private(
        fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true),
    )
    .open(&tmp)
    .and_then(|mut f| {
        f.write_all(bytes)?;
        f.sync_all()
    })
    .with_context(|| format!("cannot write {}", tmp.display()))?;
    fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))
}

/// Files of the state directory are created readable and writable by their owner alone
/// (0600), whatever the umask lets through.
fn private(options: &mut fs::OpenOptions) -> &mut fs::OpenOptions {
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(options, 0o600);
    options
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_sitemaps_round_trip_and_bad_lines_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::new(dir.path());
        assert!(state.load_sitemaps().unwrap().is_empty(), "no file: none");
        let known = vec![
            ("http://a.example/index.xml".to_owned(), 0),
            ("http://a.example/s 1.txt".to_owned(), 2),
        ];
        state.save_sitemaps(&known).unwrap();
        assert_eq!(state.load_sitemaps().unwrap(), known);
        fs::write(
            dir.path().join("sitemaps.txt"),
            "x http://a.example/bad-level\nno-space\n1 http://a.example/ok\n",
        )
        .unwrap();
        assert_eq!(
            state.load_sitemaps().unwrap(),
            [("http://a.example/ok".to_owned(), 1)]
        );
    }
}
