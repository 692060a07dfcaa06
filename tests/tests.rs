//! Integration tests of the `crawler` binary, run against `testweb` sites on loopback.

// Starting sites, running the binary, reading its records.
mod util;
// Real redis-server processes on free loopback ports (shared with crates/shared's tests).
#[path = "../crates/shared/tests/support/redis.rs"]
#[allow(dead_code, unreachable_pub)]
mod redis_server;

// Coverage equals ground truth, every page fetched once, with every special page kind.
mod coverage;
// Errors, retries, redirects, timeouts, caps, content types and encodings, one by one.
mod errors;
// Broken pages, failing and unreachable hosts: retried, recorded, given up only when down.
mod failures;
// README.md's offline demo, run as pasted.
mod demo;
// Seeds whose redirects lead to another host: the target is a seed too.
mod seeds;
// robots.txt rules, Crawl-delay, and unreachable robots.txt.
mod robots;
// Sitemaps: robots.txt's and --sitemap, nested, gzipped, text, a bomb; each URL once.
mod sitemaps;
// Per-host delay and connection limits, from the server's request log.
mod politeness;
// The limit on open files: raised at start, the concurrency cut to it, no fetch failing.
mod open_files;
// Bad command lines and config files: a message naming the problem, exit code 2.
mod cli;
// What is followed besides links: frames and iframes.
mod follow;
// Live metrics in Prometheus text format, and the summary as JSON.
mod metrics;
// Crawler traps and link floods: the crawl ends, good pages are found, skips are counted.
mod hostile;
// [[hosts]]: headers, credentials and cookies seen by the server only where they belong;
// robots.txt per host; --explain-host; bad entries refused before anything is written.
mod hosts;
// An explicit proxy, the SSRF guard still judging targets; none from the environment.
mod proxy;
// Names the user controls: --resolve, DNS servers asked once a name, a private CA.
mod names;
// The SSRF guard: links to private addresses are not fetched unless allowed.
mod ssrf;
// Record fields: from, fetched_at, digest, lastmod from Last-Modified; the content-seen test.
mod records;
// Budgets per registrable domain: a spam farm's subdomains stopped, a domain's pages capped.
mod budgets;
// Page requisites: fetched with their page, on any host, one hop; marked in the records.
mod requisites;
// WARC output, read back with a WARC library.
mod warc;
// The journal: killed with SIGKILL again and again, the crawl loses nothing and repeats
// little; a state directory in use is locked.
mod journal;
// Recrawls from an earlier crawl's records (--since): only what changed fetched in full.
mod recrawl;
// --state-dir and --resume: a crawl killed with SIGKILL resumes and loses nothing.
mod resume;
// The modules of crates/core import one another without a cycle.
mod layering;
// Several processes sharing one crawl through Redis: once each, politeness, SIGKILL, restarts.
mod shared;
