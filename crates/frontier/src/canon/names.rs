//! Parameter-name lists: session ids and tracking parameters.

/// A set of parameter names, matched without regard to ASCII case. A name ending in `*`
/// matches every name that starts with the rest (`utm_*`, `aspsessionid*`).
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
            let name = name.as_ref().to_ascii_lowercase();
            match name.strip_suffix('*') {
                Some(prefix) => list.prefixes.push(prefix.to_owned()),
                None => list.exact.push(name),
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
}
