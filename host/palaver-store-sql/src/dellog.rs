//! The `dellog` table both SQL adapters keep: whom a row of deleted ranges applies to, and how the rows a reader
//! sees become their [`Deletions`].

use crate::columns::{EVERYONE, user_col};
use palaver_core::{DeleteMessages, Deletions, SeqRange};

/// The `deleted_for` column of a deletion: [`EVERYONE`] for a hard delete, else the requester.
pub fn deleted_for_col(request: &DeleteMessages) -> i64 {
    if request.hard { EVERYONE } else { user_col(request.for_user) }
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
        request.hard = false;
        assert_eq!(deleted_for_col(&request), 9);
    }
}
