//! One page's links, each judged once: the rule both stores follow for a link repeated on the
//! page it was found on.

use std::collections::HashMap;

/// The verdicts of a page's links so far, so that a link repeated on the page (the same text
/// before its `#`) is not judged again: its repeats count as its first occurrence was
/// decided. A link longer than the canonicalizer's limit is judged on its whole length
/// (fragment included) and never taken for a repeat of a shorter one, so it has no key here.
///
/// Both stores use it: [`Frontier::push_links_on`](crate::Frontier::push_links_on), and the
/// frontier kept in Redis when it pushes a page's links.
///
/// # Example
///
/// ```
/// use frontier::PageLinks;
///
/// let mut links = PageLinks::new(2048, 3);
/// assert_eq!(links.first_of("/a#top"), None);
/// links.judged("/a#top", "queued");
/// assert_eq!(links.first_of("/a#bottom"), Some("queued")); // the same link
/// assert_eq!(links.first_of("/b"), None);
/// ```
pub struct PageLinks<'a, V> {
    /// The longest href judged on its text before its `#`.
    max_length: usize,
    /// The verdict of each link's first occurrence, by its text before its `#`.
    firsts: HashMap<&'a str, V>,
}

impl<'a, V: Copy> PageLinks<'a, V> {
    /// Room for a page of `links` links, with hrefs up to `max_length` bytes keyed (the
    /// canonicalizer's [`max_length`](crate::Canonicalizer::max_length)).
    ///
    /// # Example
    ///
    /// ```
    /// let links: frontier::PageLinks<'_, bool> = frontier::PageLinks::new(2048, 100);
    /// assert_eq!(links.first_of("/a"), None);
    /// ```
    pub fn new(max_length: usize, links: usize) -> Self {
        PageLinks {
            max_length,
            firsts: HashMap::with_capacity(links),
        }
    }

    /// The verdict of `href`'s first occurrence on the page, if it was judged already.
    ///
    /// # Example
    ///
    /// ```
    /// let mut links = frontier::PageLinks::new(10, 2);
    /// links.judged("/a", 1);
    /// assert_eq!(links.first_of("/a#x"), Some(1));
    /// let long = "/aaaaaaaaaaaaaaaa";
    /// links.judged(long, 2);
    /// assert_eq!(links.first_of(long), None); // over the limit: judged every time
    /// ```
    pub fn first_of(&self, href: &str) -> Option<V> {
        self.key(href).and_then(|key| self.firsts.get(key).copied())
    }

    /// Records the verdict of `href`'s first occurrence.
    ///
    /// # Example
    ///
    /// ```
    /// let mut links = frontier::PageLinks::new(2048, 1);
    /// links.judged("/a", "dropped");
    /// assert_eq!(links.first_of("/a"), Some("dropped"));
    /// ```
    pub fn judged(&mut self, href: &'a str, verdict: V) {
        if let Some(key) = self.key(href) {
            self.firsts.insert(key, verdict);
        }
    }

    fn key<'h>(&self, href: &'h str) -> Option<&'h str> {
        (href.len() <= self.max_length).then(|| href.split_once('#').map_or(href, |(k, _)| k))
    }
}
