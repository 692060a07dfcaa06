//! Parameter-name lists: session ids and tracking parameters.

use super::escape::{Component, normalize};

/// A set of parameter names, matched without regard to ASCII case. A name ending in `*`
/// matches every name that starts with the rest (`utm_*`, `aspsessionid*`).
///
/// Names are stored escape-normalized, as the keys they are compared with are: a configured
/// `my%5Fsid`, `süd` or `a b` matches the key `my_sid`, `s%C3%BCd` or `a%20b`.
#[derive(Clone, Debug, Default)]
pub(crate) struct NameList {
    /// Whole names, lower-cased.
    exact: Vec<String>,
    /// Prefixes, lower-cased, without their `*`.
    prefixes: Vec<String>,
}

impl NameList {
    pub(crate) fn new<I, S>(names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut list = NameList::default();
        for name in names {
            let name = name.as_ref();
            let (stem, prefix) = match name.strip_suffix('*') {
                Some(stem) => (stem, true),
                None => (name, false),
            };
            let stem = normalize(stem, Component::Query).to_ascii_lowercase();
            if prefix {
                list.prefixes.push(stem);
            } else {
                list.exact.push(stem);
            }
        }
        list
    }

    /// Whether `name`, as written in the URL after escape normalization, is on the list.
    pub(crate) fn contains(&self, name: &str) -> bool {
        self.exact.iter().any(|n| n.eq_ignore_ascii_case(name))
            || self.prefixes.iter().any(|p| {
                name.get(..p.len())
                    .is_some_and(|head| head.eq_ignore_ascii_case(p))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::NameList;

    #[test]
    fn exact_and_prefix_names_ignore_case() {
        let list = NameList::new(["SID", "aspsessionid*"]);
        assert!(list.contains("sid"));
        assert!(list.contains("Sid"));
        assert!(!list.contains("sids"));
        assert!(list.contains("ASPSESSIONIDQQGGQGPC"));
        assert!(list.contains("aspsessionid"));
        assert!(!list.contains("aspsession"));
        // A prefix must not slice a multi-byte name inside a character.
        assert!(!NameList::new(["a*"]).contains("é"));
    }

    /// Regression: configured names were only lower-cased, so names written with escapes,
    /// non-ASCII letters or spaces could never match the normalized keys.
    #[test]
    fn configured_names_are_escape_normalized() {
        let list = NameList::new(["my%5Fsid", "süd", "a b", "x%5f*"]);
        assert!(list.contains("my_sid"));
        assert!(list.contains("s%C3%BCd"));
        assert!(list.contains("a%20b"));
        assert!(list.contains("x_anything"));
    }
}
