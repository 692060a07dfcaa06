//! The `crawler` binary as a library: a run from a parsed command line to how it ended. The
//! binary (`main.rs`) only parses, reports and exits; everything else is here, so that tests
//! and benchmarks reach it as any user of a library would.
//!
//! ```no_run
//! use clap::Parser;
//! let cli = crawler::Cli::parse_from(["crawler", "--seed", "http://127.0.0.1:8080/"]);
//! match crawler::run(&cli) {
//!     Ok(ended) => std::process::exit(ended.exit_code().into()),
//!     Err(err) => {
//!         eprintln!("crawler: {err}");
//!         std::process::exit(crawler::EXIT_ERROR.into());
//!     }
//! }
//! ```
//!
//! Where things live, in the order a URL meets them:
//!
//! - a run: [`run`](run()) ([`run.rs`](run)), start-up in `setup` (settings, seeds, the
//!   frontier, outputs; joining a shared crawl in `shared_crawl`), the crawl supervised to its end in
//!   `supervisor` (checkpoints, Ctrl-C), how it ended in [`exit`];
//! - the settings: [`cli`] (flags), `config` (keys and their defaults), `hosts` (`[[hosts]]`:
//!   each host's own settings, headers, cookies and credentials), `state` (`--state-dir`), `recrawl` (`--since`: an earlier crawl's records),
//!   `open_files` (the limit on open files, raised at start);
//! - the crawl: `crawl` (the `Crawler`, made of parts that own their state), with one file
//!   per job under it: `worker` (the dispatcher, a task per lease), `pace` (the page budget
//!   and the stop), `visit` (robots, the SSRF guard, the fetch, WARC; the `Fetching` part),
//!   `follow` (links, sitemaps, requisites), `record` (records and their counts), `outputs`
//!   (the records' and WARC files' writing); `backend` is the one seam to the frontier, local
//!   (`frontier` crate) or shared (`shared` crate);
//! - what a visit uses: `fetch` (HTTP), `robots` (robots.txt), `sitemap` (sitemaps), `guard`
//!   (the SSRF guard), [`content`] (body digests, the content-seen test), `requisite` (page
//!   requisites and the lease memo that marks them), `warc`;
//! - what comes out: `output` (records) and `errors` (their error kinds), `snapshot` (the
//!   crawl's counters at one moment), which `report` (progress, the summary) and `metrics`
//!   (`/metrics`, `--summary-json`) render.

mod backend;
mod cdx;
pub mod cli;
mod config;
pub mod content;
mod crawl;
mod dns;
mod errors;
pub mod exit;
mod fetch;
mod guard;
mod hosts;
mod metrics;
mod open_files;
mod output;
mod recrawl;
mod report;
mod requisite;
mod robots;
mod run;
mod setup;
mod shared_crawl;
mod sitemap;
mod snapshot;
mod state;
mod supervisor;
mod wacz;
mod warc;

pub use cli::Cli;
pub use exit::{EXIT_ERROR, EXIT_FINISHED, EXIT_NOTHING_FETCHED, EXIT_QUIT, Ended};
pub use report::log_to_stderr;
pub use run::{RunError, run};

/// Cases for the `fuzz_` unit tests: `FUZZ_CASES` when set (to fuzz longer, see docs/testing.md),
/// else `default`.
#[cfg(test)]
fn fuzz_cases(default: u32) -> u32 {
    std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}
