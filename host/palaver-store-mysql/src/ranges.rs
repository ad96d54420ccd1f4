//! Helpers for half-open seq ranges: normalising what callers send and merging what the deletion log holds.

use palaver_core::SeqRange;

/// Turns a range whose `hi` is not above `low` into the single seq `low`, the way Tinode reads a range without
/// an upper bound; every other range is returned unchanged.
pub(crate) fn normalize(range: SeqRange) -> SeqRange {
    if range.hi <= range.low { SeqRange { low: range.low, hi: range.low + 1 } } else { range }
}

/// Sorts ranges and merges the ones that overlap or touch, so readers get the shortest equivalent list.
pub(crate) fn merge(mut ranges: Vec<SeqRange>) -> Vec<SeqRange> {
    ranges.sort();
    let mut merged: Vec<SeqRange> = Vec::with_capacity(ranges.len());
    for range in ranges {
        match merged.last_mut() {
            Some(last) if range.low <= last.hi => last.hi = last.hi.max(range.hi),
            _ => merged.push(range),
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(low: i64, hi: i64) -> SeqRange {
        SeqRange { low, hi }
    }

    #[test]
    fn merges_overlapping_and_adjacent_ranges() {
        assert_eq!(merge(vec![r(5, 7), r(1, 3), r(3, 4), r(6, 9)]), vec![r(1, 4), r(5, 9)]);
        assert_eq!(merge(vec![]), vec![]);
    }

    #[test]
    fn normalizes_open_ranges_to_one_seq() {
        assert_eq!(normalize(r(4, 0)), r(4, 5));
        assert_eq!(normalize(r(4, 4)), r(4, 5));
        assert_eq!(normalize(r(4, 9)), r(4, 9));
    }
}
