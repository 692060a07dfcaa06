//! Query rules: parameters split without decoding, filtered, optionally sorted, rebuilt.

use std::cmp::Ordering;

use super::escape::{self, Component};
use super::names::NameList;

/// One `key[=value]` piece of a query, as written (after escape normalization).
#[derive(Clone, Copy, Debug)]
struct Param<'a> {
    key: &'a str,
    /// `None` for a bare `key`, `Some("")` for `key=`: both are kept as written, because a
    /// server may tell them apart.
    value: Option<&'a str>,
    raw: &'a str,
}

impl<'a> Param<'a> {
    fn parse(raw: &'a str) -> Self {
        match raw.split_once('=') {
            Some((key, value)) => Param {
                key,
                value: Some(value),
                raw,
            },
            None => Param {
                key: raw,
                value: None,
                raw,
            },
        }
    }

    fn order(&self, other: &Self) -> Ordering {
        self.key
            .cmp(other.key)
            .then_with(|| self.value.cmp(&other.value))
    }
}

/// What the query rules need from the configuration.
pub(crate) struct QueryRules<'a> {
    pub(crate) session: &'a NameList,
    /// `None` when tracking parameters are kept.
    pub(crate) tracking: Option<&'a NameList>,
    pub(crate) sort: bool,
}

/// Applies the query rules to a raw query (without its `?`); `None` means no query at all.
///
/// The query is split on `&` only after escapes are normalized, and pieces are never decoded,
/// so `a=%26b` stays one parameter whose value contains an ampersand. Empty pieces (`a&&b`,
/// a trailing `&`) are dropped: a server that reads the query as parameters sees none there.
pub(crate) fn canonical_query(query: &str, rules: &QueryRules<'_>) -> Option<String> {
    let normalized = escape::normalize(query, Component::Query);
    let mut params: Vec<Param<'_>> = normalized
        .split('&')
        .filter(|piece| !piece.is_empty())
        .map(Param::parse)
        .filter(|p| {
            !rules.session.contains(p.key) && !rules.tracking.is_some_and(|t| t.contains(p.key))
        })
        .collect();
    if params.is_empty() {
        return None;
    }
    if rules.sort {
        // Stable: pieces equal in key and value are equal as text, so the order is total.
        params.sort_by(Param::order);
    }
    let mut out = String::with_capacity(normalized.len());
    for (i, p) in params.iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        out.push_str(p.raw);
    }
    Some(out)
}
