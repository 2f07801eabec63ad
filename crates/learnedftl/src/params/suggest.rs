//! What an unknown key probably meant: the valid keys closest to it by edit distance.

/// Edits (insertions, deletions, substitutions, swaps of neighbours) between `a` and `b`, case
/// and `-`/`_` ignored (optimal string alignment distance).
fn distance(a: &str, b: &str) -> usize {
    let norm = |s: &str| -> Vec<char> {
        s.chars()
            .map(|c| {
                if c == '-' {
                    '_'
                } else {
                    c.to_ascii_lowercase()
                }
            })
            .collect()
    };
    let (a, b) = (norm(a), norm(b));
    // Three rows of the dynamic programme: the one before last (for swaps), last and current.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut last: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (last[j] + 1).min(cur[j - 1] + 1).min(last[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                cur[j] = cur[j].min(before[j - 2] + 1);
            }
        }
        before = std::mem::replace(&mut last, cur);
    }
    last[b.len()]
}

/// The keys of `valid` closest to `unknown`: those at the smallest distance, if it is small
/// for the key's length (a third of its characters, at least 1 and at most 3 edits); else
/// none.
pub fn closest<'a>(unknown: &str, valid: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let limit = (unknown.chars().count() / 3).clamp(1, 3);
    let mut best: Vec<&str> = Vec::new();
    let mut best_d = limit + 1;
    for v in valid {
        let d = distance(unknown, v);
        if d < best_d {
            best_d = d;
            best.clear();
        }
        if d == best_d && !best.contains(&v) {
            best.push(v);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(distance("cmt_ratio", "cmt_ratio"), 0);
        assert_eq!(distance("cmt_ration", "cmt_ratio"), 1);
        assert_eq!(distance("cmt_raito", "cmt_ratio"), 1);
        assert_eq!(distance("CMT-RATIO", "cmt_ratio"), 0);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("kitten", "sitting"), 3);
    }

    #[test]
    fn suggestions_are_the_closest_or_none() {
        let keys = ["cmt_ratio", "channels", "channel_mb_s", "gamma", "m", "h"];
        assert_eq!(closest("cmt_ration", keys), ["cmt_ratio"]);
        assert_eq!(closest("channel", keys), ["channels"]);
        assert_eq!(closest("gama", keys), ["gamma"]);
        // One letter: one edit away from both one-letter keys.
        assert_eq!(closest("x", keys), ["m", "h"]);
        assert!(closest("zzzzzzzz", keys).is_empty());
        assert!(closest("foo", keys).is_empty());
    }
}
