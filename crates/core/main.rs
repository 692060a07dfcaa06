//! `crawler --seed URL`: a fast, polite web crawler on a Bloom-filter frontier. See README.md.
//!
//! The crawler is its library (`crates/core/lib.rs`); this entry tunes the process's allocator
//! (`allocator.rs`), parses the command line, sets up logging, runs it, and turns how it ended
//! into a message and an exit code.

mod allocator;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // First, before any thread starts.
    allocator::tune();
    crawler::log_to_stderr();
    let cli = crawler::Cli::parse();
    match crawler::run(&cli) {
        Ok(ended) => ExitCode::from(ended.exit_code()),
        Err(err) => {
            eprintln!("crawler: {err}");
            ExitCode::from(crawler::EXIT_ERROR)
        }
    }
}
