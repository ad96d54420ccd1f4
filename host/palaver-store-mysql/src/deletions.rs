//! Message deletion over a tenant database: the `dellog` table, hard-delete stubs, the per-reader view of the log,
//! and the helpers for the half-open seq ranges it records.

use crate::codec::user_col;
use crate::error::db_error;
use crate::table::Table;
use palaver_core::{DeleteMessages, Deletions, SeqRange, StoreError, StoreResult, UserId};
use sqlx::MySqlPool;

/// `deleted_for` of a dellog row that applies to every reader. User id 0 is never a valid user.
const EVERYONE: i64 = 0;

/// Allocates the topic's next deletion id and records the ranges under it, in one transaction. A hard delete
/// also drops the messages' content; a soft delete also moves the requester's subscription to the new id.
pub(crate) async fn delete(pool: &MySqlPool, topic: &str, request: &DeleteMessages) -> StoreResult<i64> {
    let mut tx = pool.begin().await.map_err(db_error)?;
    // Raising del_id locks the topic row first, the lock order every writer of history keeps (see `append`).
    let done = sqlx::query("UPDATE topics SET del_id = del_id + 1 WHERE name = ?")
        .bind(topic)
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
    if done.rows_affected() == 0 {
        return Err(StoreError::NotFound);
    }
    let del_id: i64 = sqlx::query_scalar("SELECT del_id FROM topics WHERE name = ?")
        .bind(topic)
        .fetch_one(&mut *tx)
        .await
        .map_err(db_error)?;
    let deleted_for = if request.hard { EVERYONE } else { user_col(request.for_user) };
    for range in request.ranges.iter().copied().map(normalize) {
        sqlx::query("INSERT INTO dellog (topic, del_id, deleted_for, low, hi, created_at) VALUES (?, ?, ?, ?, ?, ?)")
            .bind(topic)
            .bind(del_id)
            .bind(deleted_for)
            .bind(range.low)
            .bind(range.hi)
            .bind(request.when)
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
        if request.hard {
            sqlx::query(Table::of(topic).hard_delete_sql())
                .bind(request.when)
                .bind(request.when)
                .bind(topic)
                .bind(range.low)
                .bind(range.hi)
                .execute(&mut *tx)
                .await
                .map_err(db_error)?;
        }
    }
    if !request.hard {
        sqlx::query("UPDATE subscriptions SET del_id = ? WHERE topic = ? AND user_id = ?")
            .bind(del_id)
            .bind(topic)
            .bind(user_col(request.for_user))
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
    }
    tx.commit().await.map_err(db_error)?;
    Ok(del_id)
}

/// The ranges deleted for everyone plus those `reader` deleted, merged, under the highest of their ids.
pub(crate) async fn list(pool: &MySqlPool, topic: &str, reader: UserId) -> StoreResult<Deletions> {
    let rows: Vec<(i64, i64, i64)> =
        sqlx::query_as("SELECT del_id, low, hi FROM dellog WHERE topic = ? AND deleted_for IN (?, ?)")
            .bind(topic)
            .bind(EVERYONE)
            .bind(user_col(reader))
            .fetch_all(pool)
            .await
            .map_err(db_error)?;
    Ok(Deletions {
        clear: rows.iter().map(|(id, _, _)| *id).max().unwrap_or(0),
        ranges: merge(rows.into_iter().map(|(_, low, hi)| SeqRange { low, hi }).collect()),
    })
}

/// Turns a range whose `hi` is not above `low` into the single seq `low`, the way Tinode reads a range without
/// an upper bound; every other range is returned unchanged.
fn normalize(range: SeqRange) -> SeqRange {
    if range.hi <= range.low { SeqRange { low: range.low, hi: range.low + 1 } } else { range }
}

/// Sorts ranges and merges the ones that overlap or touch, so readers get the shortest equivalent list.
fn merge(mut ranges: Vec<SeqRange>) -> Vec<SeqRange> {
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
