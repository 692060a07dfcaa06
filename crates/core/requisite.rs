//! Page requisites (`crawl.page_requisites`): what a page needs to render, fetched with it so
//! that an archive replays it whole. The links crate finds them (in the page, and in its
//! style sheets), the frontier admits them by its requisite rules
//! (`ScopeRules::check_requisite`: past the scope and the depth limit, one hop), and the
//! URL's memo says that it is one, how many hops from its page, so that whichever process
//! leases it follows no links from it and reads a style sheet for more requisites only so far.

use std::sync::atomic::{AtomicU64, Ordering};

use frontier::{Canonical, Canonicalizer};
use url::Url;

use crate::fetch;
use crate::recrawl::Known;

/// Hops from its page a requisite may be: the page's own (1), what its style sheets load
/// (2), and two levels of `@import` beyond. A server that makes up a new style sheet for
/// every `@import` stops here.
pub(crate) const MAX_HOPS: u8 = 4;

/// The first byte of a requisite's memo (an earlier crawl's record is 1, `recrawl.rs`): then
/// its hops, then the earlier record's memo, if any. A version that does not know it reads no
/// memo, and fetches the URL as a page.
const MEMO_FORMAT: u8 = 2;

/// What a lease's memo tells.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Memo {
    /// The earlier crawl's record of the URL, in a recrawl.
    pub(crate) known: Option<Known>,
    /// For a page requisite, how many hops from its page.
    pub(crate) hops: Option<u8>,
}

impl Memo {
    /// Reads a lease's memo; bytes this version did not write tell nothing.
    pub(crate) fn read(memo: Option<&[u8]>) -> Memo {
        match memo {
            Some([MEMO_FORMAT, hops, rest @ ..]) => Memo {
                known: (!rest.is_empty()).then(|| Known::from_memo(rest)).flatten(),
                hops: Some((*hops).clamp(1, MAX_HOPS)),
            },
            Some(memo) => Memo {
                known: Known::from_memo(memo),
                hops: None,
            },
            None => Memo::default(),
        }
    }

    /// Whether a memo is a requisite's: what a record needs, without reading the rest.
    pub(crate) fn is_requisite(memo: Option<&[u8]>) -> bool {
        memo.is_some_and(|memo| memo.first() == Some(&MEMO_FORMAT))
    }

    /// The memo of a requisite `hops` from its page.
    pub(crate) fn requisite(hops: u8) -> Box<[u8]> {
        Box::new([MEMO_FORMAT, hops])
    }

    /// The memo of a requisite `hops` from its page that an earlier crawl recorded, with
    /// that record's memo ([`Known::memo`]).
    pub(crate) fn requisite_with(hops: u8, known: &[u8]) -> Box<[u8]> {
        [&[MEMO_FORMAT, hops][..], known].concat().into()
    }
}

/// The requisite part of a crawl: their canonical form, and how many were fetched.
pub(crate) struct Requisites {
    canon: Canonicalizer,
    /// Requisites recorded, for the summary.
    pub(crate) recorded: AtomicU64,
}

impl Requisites {
    pub(crate) fn new() -> Self {
        Requisites {
            canon: Canonicalizer::new(),
            recorded: AtomicU64::new(0),
        }
    }

    /// The canonical forms of `hrefs` resolved against `base`; those that are no URL this
    /// crawler fetches (a `javascript:` source, say) are left out.
    pub(crate) fn canonicalize(&self, base: &Url, hrefs: &[String]) -> Vec<Canonical> {
        hrefs
            .iter()
            .filter_map(|href| self.canon.canonicalize_relative(base, href).ok())
            .collect()
    }

    pub(crate) fn note_recorded(&self) {
        self.recorded.fetch_add(1, Ordering::Relaxed);
    }
}

/// Whether a response is a style sheet, to be read for what it loads: served as `text/css`,
/// or, served without a type, named `.css`.
pub(crate) fn is_stylesheet(content_type: Option<&str>, url: &Url) -> bool {
    match content_type {
        Some(ct) => fetch::essence(ct).eq_ignore_ascii_case("text/css"),
        None => url.path().to_ascii_lowercase().ends_with(".css"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_requisite_memo_keeps_its_hops_and_the_earlier_record() {
        let known = Known {
            status: Some(200),
            bytes: 12,
            ..Known::default()
        };
        let memo = Memo::requisite_with(2, &known.memo());
        assert_eq!(
            Memo::read(Some(&memo)),
            Memo {
                known: Some(known.clone()),
                hops: Some(2)
            }
        );
        assert_eq!(Memo::read(Some(&Memo::requisite(1))).hops, Some(1));
        // An earlier record alone, as a recrawl of pages queues it.
        let page = Memo::read(Some(&known.memo()));
        assert_eq!((page.known, page.hops), (Some(known), None));
        // Other bytes tell nothing; hops out of range are brought within.
        assert_eq!(Memo::read(Some(b"\x07junk")), Memo::default());
        assert_eq!(Memo::read(Some(&[MEMO_FORMAT, 200])).hops, Some(MAX_HOPS));
    }

    #[test]
    fn a_style_sheet_is_told_by_its_type_or_else_its_name() {
        let url = Url::parse("https://cdn.example.net/a/site.CSS?v=2").unwrap();
        assert!(is_stylesheet(Some("text/css; charset=utf-8"), &url));
        assert!(!is_stylesheet(Some("text/plain"), &url));
        assert!(is_stylesheet(None, &url));
    }
}
