//! The links crate's integration tests, in one binary.

// The agreement with a browser-grade parser (html5ever through scraper), and with the
// html5gum and lol_html adapters; the known differences from a browser.
mod agreement;
// html5gum and lol_html driving the crate's Collector (also used by benches/compare.rs).
mod adapters;
// Fuzz and hostile-input tests: no panic, linear cost, the cap kept.
mod fuzz;
// The requisite rules: agreement with the oracle, and rule by rule.
mod requisites;
// The link rules, rule by rule, on the public API.
mod rules;
// Helpers: extracting from a string.
mod util;
