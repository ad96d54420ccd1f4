//! The `dellog` table both SQL adapters keep: the rows a deletion writes and whom they apply to, the subscription
//! a soft delete moves, and how the rows a reader sees become their [`Deletions`].

use crate::columns::{EVERYONE, user_col};
use palaver_core::{DeleteMessages, Deletions, SeqRange};

/// The `deleted_for` column of a deletion: [`EVERYONE`] for a hard delete, else the requester.
pub fn deleted_for_col(request: &DeleteMessages) -> i64 {
    if request.hard { EVERYONE } else { user_col(request.for_user) }
}

/// The ranges a deletion records, one `dellog` row each (and, for a hard delete, the stubs of their messages):
/// the request's ranges, normalized.
pub fn dellog_ranges(request: &DeleteMessages) -> impl Iterator<Item = SeqRange> + '_ {
    request.ranges.iter().copied().map(SeqRange::normalized)
}

/// The `user_id` of the subscription a deletion moves to its new `del_id`: the requester's for a soft delete,
/// none for a hard delete (whose stubs every reader sees).
pub fn soft_deleter_col(request: &DeleteMessages) -> Option<i64> {
    (!request.hard).then(|| user_col(request.for_user))
}

/// A `dellog` row: `del_id, low, hi`.
pub type DellogColumns = (i64, i64, i64);

/// The deletions the rows a reader sees add up to: their ranges merged, under the highest of their ids.
pub fn deletions_of(rows: Vec<DellogColumns>) -> Deletions {
    Deletions {
        clear: rows.iter().map(|(id, _, _)| *id).max().unwrap_or(0),
        ranges: SeqRange::merge(rows.into_iter().map(|(_, low, hi)| SeqRange { low, hi }).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use palaver_core::UserId;

    #[test]
    fn rows_add_up_to_merged_ranges_under_the_highest_id() {
        let seen = deletions_of(vec![(2, 5, 7), (4, 1, 3), (3, 3, 4)]);
        assert_eq!(seen.clear, 4);
        assert_eq!(seen.ranges, vec![SeqRange { low: 1, hi: 4 }, SeqRange { low: 5, hi: 7 }]);
        assert_eq!(deletions_of(vec![]), Deletions::default());
    }

    #[test]
    fn hard_deletes_apply_to_everyone() {
        let mut request =
            DeleteMessages { ranges: vec![], hard: true, for_user: UserId(9), when: 1, recalled_by: None };
        assert_eq!(deleted_for_col(&request), EVERYONE);
        assert_eq!(soft_deleter_col(&request), None);
        request.hard = false;
        assert_eq!(deleted_for_col(&request), 9);
        assert_eq!(soft_deleter_col(&request), Some(9));
    }

    #[test]
    fn recorded_ranges_are_normalized() {
        let ranges = vec![SeqRange { low: 4, hi: 0 }, SeqRange { low: 2, hi: 6 }];
        let request = DeleteMessages { ranges, hard: false, for_user: UserId(1), when: 1, recalled_by: None };
        let recorded: Vec<SeqRange> = dellog_ranges(&request).collect();
        assert_eq!(recorded, vec![SeqRange { low: 4, hi: 5 }, SeqRange { low: 2, hi: 6 }]);
    }
}
