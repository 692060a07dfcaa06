//! Include and exclude patterns, compiled for the cheapest test of the common cases: no
//! pattern, or one.

use regex::{Regex, RegexSet};

use super::{ScopeError, ScopeErrorKind};

/// One list of patterns, any of which may match.
#[derive(Clone, Debug)]
pub(super) enum Patterns {
    /// No pattern: nothing to run. An empty `RegexSet` would still start a search.
    None,
    /// One pattern, alone: a lone `Regex` stops early on anchored patterns (`^https://...`),
    /// which a set does not, and it is the usual case.
    One(Regex),
    /// Several, compiled together so that one pass over the URL tests them all.
    Many(RegexSet),
}

impl Patterns {
    /// Compiles a list of patterns; `invalid` names the list in the error.
    pub(super) fn compile(
        patterns: &[String],
        invalid: fn(String) -> ScopeErrorKind,
    ) -> Result<Patterns, ScopeError> {
        // One at a time first, because a set's error does not say which pattern is at fault.
        let mut compiled = Vec::with_capacity(patterns.len());
        for pattern in patterns {
            match Regex::new(pattern) {
                Ok(regex) => compiled.push(regex),
                Err(err) => return Err(ScopeError::new(invalid(pattern.clone()), err)),
            }
        }
        if compiled.len() <= 1 {
            return Ok(compiled.pop().map_or(Patterns::None, Patterns::One));
        }
        match RegexSet::new(patterns) {
            Ok(set) => Ok(Patterns::Many(set)),
            Err(err) => {
                // Every pattern compiles alone, so together they exceed a size limit: name the
                // pattern that tips the set over it.
                let culprit = (2..patterns.len())
                    .find(|&n| RegexSet::new(&patterns[..n]).is_err())
                    .unwrap_or(patterns.len())
                    - 1;
                Err(ScopeError::new(invalid(patterns[culprit].clone()), err))
            }
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        matches!(self, Patterns::None)
    }

    /// Whether some pattern matches somewhere in `text`; false when there are none.
    pub(super) fn is_match(&self, text: &str) -> bool {
        match self {
            Patterns::None => false,
            Patterns::One(regex) => regex.is_match(text),
            Patterns::Many(set) => set.is_match(text),
        }
    }
}
