//! `crawler --seed URL`: a fast, polite web crawler on a Bloom-filter frontier. See README.md.
//!
//! The crawler is its library (`crates/core/lib.rs`); this entry parses the command line, sets
//! up logging, runs it, and turns how it ended into a message and an exit code.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
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
