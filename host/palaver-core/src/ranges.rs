//! The rules of half-open seq ranges every message store applies: normalising what callers send, and merging
//! what a deletion log holds into the shortest equivalent list.

use crate::{Seq, SeqRange};

impl SeqRange {
    /// This range, or the single seq `low` if `hi` is not above it: the way Tinode reads a range without an
    /// upper bound.
    pub fn normalized(self) -> SeqRange {
        if self.hi <= self.low { SeqRange { low: self.low, hi: self.low + 1 } } else { self }
    }

    /// True if `seq` lies in the range.
    pub fn contains(self, seq: Seq) -> bool {
        self.low <= seq && seq < self.hi
    }

    /// Sorts ranges and merges the ones that overlap or touch, so readers get the shortest equivalent list.
    pub fn merge(mut ranges: Vec<SeqRange>) -> Vec<SeqRange> {
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(low: Seq, hi: Seq) -> SeqRange {
        SeqRange { low, hi }
    }

    #[test]
    fn merges_overlapping_and_adjacent_ranges() {
        assert_eq!(SeqRange::merge(vec![r(5, 7), r(1, 3), r(3, 4), r(6, 9)]), vec![r(1, 4), r(5, 9)]);
        assert_eq!(SeqRange::merge(vec![]), vec![]);
    }

    #[test]
    fn normalizes_open_ranges_to_one_seq() {
        assert_eq!(r(4, 0).normalized(), r(4, 5));
        assert_eq!(r(4, 4).normalized(), r(4, 5));
        assert_eq!(r(4, 9).normalized(), r(4, 9));
        assert!(r(4, 5).contains(4));
        assert!(!r(4, 5).contains(5));
    }
}
