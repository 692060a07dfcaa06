//! The traps visible in a path: too many segments, or one segment over and over.

use super::DropReason;

/// How many non-empty segments are compared in place, on the stack. The default limit on
/// segments is the same, so only a raised limit ever reaches the sorting fallback.
const INLINE: usize = 32;

/// Checks the number of segments, then their repetition, of a canonical path (which starts
/// with `/`).
pub(super) fn check(path: &str, max_segments: u32, max_repeats: u32) -> Result<(), DropReason> {
    let max_segments = usize::try_from(max_segments).unwrap_or(usize::MAX);
    let max_repeats = usize::try_from(max_repeats).unwrap_or(usize::MAX);
    let body = path.strip_prefix('/').unwrap_or(path);
    // A trailing slash ends the last segment; it does not start an empty one.
    let body = body.strip_suffix('/').unwrap_or(body);
    if body.is_empty() {
        return Ok(());
    }

    let mut inline = [""; INLINE];
    let mut len = 0;
    // Only for paths with more than INLINE non-empty segments, allowed by a raised limit.
    let mut spilled: Vec<&str> = Vec::new();
    for (count, segment) in body.split('/').enumerate() {
        // Stopping at the limit bounds the work on a hostile path by the limit, not the path.
        if count >= max_segments {
            return Err(DropReason::TooManySegments);
        }
        if segment.is_empty() {
            continue;
        }
        if len < INLINE {
            inline[len] = segment;
        } else {
            if spilled.is_empty() {
                spilled.extend_from_slice(&inline);
            }
            spilled.push(segment);
        }
        len += 1;
    }
    let segments = if spilled.is_empty() {
        &mut inline[..len]
    } else {
        &mut spilled[..]
    };
    if occurs_more_than(segments, max_repeats) {
        return Err(DropReason::RepeatedSegment);
    }
    Ok(())
}

/// Whether some segment occurs more than `max` times.
fn occurs_more_than(segments: &mut [&str], max: usize) -> bool {
    if segments.len() <= max {
        return false;
    }
    if segments.len() > INLINE {
        segments.sort_unstable();
        return segments.chunk_by(|a, b| a == b).any(|run| run.len() > max);
    }
    // Quadratic, but over at most INLINE short strings: cheaper than hashing them, and
    // nothing to allocate. Most pairs differ in length or at either end, which a comparison of
    // fingerprints finds without calling `memcmp`.
    let mut prints = [0u64; INLINE];
    for (print, segment) in prints.iter_mut().zip(segments.iter()) {
        *print = fingerprint(segment);
    }
    let prints = &prints[..segments.len()];
    for (i, (segment, print)) in segments.iter().zip(prints).enumerate() {
        let rest = i + 1..segments.len();
        if rest.len() < max {
            // Too few segments left for this one, or any later one, to exceed the limit.
            break;
        }
        let same = rest
            .filter(|&j| prints[j] == *print && segments[j] == *segment)
            .count();
        if same >= max {
            return true;
        }
    }
    false
}

/// A summary of a non-empty segment that equal segments share: its length and its first and
/// last two bytes.
fn fingerprint(segment: &str) -> u64 {
    let bytes = segment.as_bytes();
    let end = |i: usize| u64::from(bytes.get(i).copied().unwrap_or(0));
    let len = bytes.len();
    (len as u64) << 32
        | end(0) << 24
        | end(1) << 16
        | end(len.saturating_sub(2)) << 8
        | end(len - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(path: &str) -> Result<(), DropReason> {
        check(path, 32, 2)
    }

    #[test]
    fn segments_are_counted_without_the_trailing_slash() {
        assert_eq!(check("/", 0, 2), Ok(()));
        assert_eq!(check("/a/", 1, 2), Ok(()));
        assert_eq!(check("/a/b", 1, 2), Err(DropReason::TooManySegments));
        // Empty segments count towards the limit...
        assert_eq!(check("/a//", 1, 2), Err(DropReason::TooManySegments));
        assert_eq!(check("/a//", 2, 2), Ok(()));
    }

    #[test]
    fn empty_segments_are_not_repetitions() {
        assert_eq!(verdict("/a////b/"), Ok(()));
    }

    #[test]
    fn zero_repeats_refuses_every_non_empty_path() {
        assert_eq!(check("/", 32, 0), Ok(()));
        assert_eq!(check("/a", 32, 0), Err(DropReason::RepeatedSegment));
    }

    #[test]
    fn long_paths_fall_back_to_sorting() {
        let distinct: String = (0..100).map(|i| format!("/s{i}")).collect();
        assert_eq!(check(&distinct, 200, 2), Ok(()));
        let repeated = format!("{distinct}/s7/s7");
        assert_eq!(check(&repeated, 200, 2), Err(DropReason::RepeatedSegment));
        assert_eq!(check(&repeated, 200, 3), Ok(()));
    }

    #[test]
    fn quadratic_scan_finds_late_repetitions() {
        assert_eq!(
            verdict("/a/b/c/d/e/f/g/e/h/e"),
            Err(DropReason::RepeatedSegment)
        );
        assert_eq!(verdict("/a/b/c/d/e/f/g/e/h/i"), Ok(()));
    }
}
