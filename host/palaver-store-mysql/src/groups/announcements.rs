//! Announcements for the MariaDB group port: the `group_announcements` and `group_announcement_reads` tables of
//! migration 0002. An edit bumps `version`; a removal sets `deleted_at`, so the row and its read marks stay for
//! the record but the announcement is never listed, edited or marked read again.
//!
//! A read mark reads the announcement `LOCK IN SHARE MODE` (so a removal waits for the mark, or the mark sees
//! the removal) and inserts in the same transaction. Of two racing first reads, the second insert waits for the
//! first and then hits its primary key, so exactly one reports the first read and its time is the one kept.

use crate::codec::{datetime_to_millis, insert_id, limit_col, millis_to_datetime, user_col};
use crate::error::{db_error, is_unique_violation};
use palaver_core::ports::{Announcement, AnnouncementDraft, AnnouncementView};
use palaver_core::{StoreError, StoreResult, UnixMillis, UserId};
use palaver_store_sql::columns::{AnnouncementColumns, announcement_of};
use palaver_store_sql::rows::{AnnouncementViewRow, decode_all};
use sqlx::MySqlPool;

/// The select list of an [`AnnouncementColumns`] row, in its order, on the table aliased `a`, as a literal for
/// `concat!`.
macro_rules! announcement_columns {
    () => {
        concat!(
            "a.id, a.topic, a.author, a.title, a.content, a.pinned, a.version, ",
            datetime_to_millis!("a.created_at"),
            " AS created_ms, ",
            datetime_to_millis!("a.updated_at"),
            " AS updated_ms"
        )
    };
}

/// Stores a new announcement, version 1.
pub(super) async fn add(
    pool: &MySqlPool,
    topic: &str,
    author: UserId,
    draft: &AnnouncementDraft,
    now: UnixMillis,
) -> StoreResult<Announcement> {
    let done = sqlx::query(concat!(
        "INSERT INTO group_announcements (topic, author, title, content, pinned, version, created_at, updated_at) \
         VALUES (?, ?, ?, ?, ?, 1, ",
        millis_to_datetime!(),
        ", ",
        millis_to_datetime!(),
        ")"
    ))
    .bind(topic)
    .bind(user_col(author))
    .bind(draft.title.as_deref())
    .bind(draft.content.to_string())
    .bind(draft.pinned)
    .bind(now)
    .bind(now)
    .execute(pool)
    .await
    .map_err(db_error)?;
    Ok(Announcement::first(insert_id(&done)?, topic, author, draft, now))
}

/// Replaces a live announcement's text and flags, bumps its version, and reads it back in the same transaction.
pub(super) async fn update(
    pool: &MySqlPool,
    topic: &str,
    id: i64,
    draft: &AnnouncementDraft,
    now: UnixMillis,
) -> StoreResult<Announcement> {
    let mut tx = pool.begin().await.map_err(db_error)?;
    let done = sqlx::query(concat!(
        "UPDATE group_announcements SET title = ?, content = ?, pinned = ?, version = version + 1, updated_at = ",
        millis_to_datetime!(),
        " WHERE id = ? AND topic = ? AND deleted_at IS NULL"
    ))
    .bind(draft.title.as_deref())
    .bind(draft.content.to_string())
    .bind(draft.pinned)
    .bind(now)
    .bind(id)
    .bind(topic)
    .execute(&mut *tx)
    .await
    .map_err(db_error)?;
    if done.rows_affected() == 0 {
        return Err(StoreError::NotFound);
    }
    let sql = concat!("SELECT ", announcement_columns!(), " FROM group_announcements a WHERE a.id = ?");
    let row: AnnouncementColumns = sqlx::query_as(sql).bind(id).fetch_one(&mut *tx).await.map_err(db_error)?;
    tx.commit().await.map_err(db_error)?;
    Ok(announcement_of(row)?)
}

/// Removes a live announcement; false if the group had none with that id.
pub(super) async fn delete(pool: &MySqlPool, topic: &str, id: i64, now: UnixMillis) -> StoreResult<bool> {
    let done = sqlx::query(concat!(
        "UPDATE group_announcements SET deleted_at = ",
        millis_to_datetime!(),
        ", updated_at = ",
        millis_to_datetime!(),
        " WHERE id = ? AND topic = ? AND deleted_at IS NULL"
    ))
    .bind(now)
    .bind(now)
    .bind(id)
    .bind(topic)
    .execute(pool)
    .await
    .map_err(db_error)?;
    Ok(done.rows_affected() > 0)
}

/// The group's live announcements as `viewer` sees them, pinned first, then newest first.
pub(super) async fn list(
    pool: &MySqlPool,
    topic: &str,
    viewer: UserId,
    limit: usize,
) -> StoreResult<Vec<AnnouncementView>> {
    let sql = concat!(
        "SELECT ",
        announcement_columns!(),
        ", ",
        datetime_to_millis!("r.read_at"),
        " AS read_at, \
         (SELECT COUNT(*) FROM group_announcement_reads c WHERE c.announcement_id = a.id) AS read_count \
         FROM group_announcements a \
         LEFT JOIN group_announcement_reads r ON r.announcement_id = a.id AND r.user_id = ? \
         WHERE a.topic = ? AND a.deleted_at IS NULL ORDER BY a.pinned DESC, a.id DESC LIMIT ?"
    );
    let rows: Vec<AnnouncementViewRow> = sqlx::query_as(sql)
        .bind(user_col(viewer))
        .bind(topic)
        .bind(limit_col(limit))
        .fetch_all(pool)
        .await
        .map_err(db_error)?;
    Ok(decode_all(rows)?)
}

/// Marks a live announcement read by `user`; true on the first read, which is the time kept.
pub(super) async fn mark_read(
    pool: &MySqlPool,
    topic: &str,
    id: i64,
    user: UserId,
    now: UnixMillis,
) -> StoreResult<bool> {
    let mut tx = pool.begin().await.map_err(db_error)?;
    let live: Option<i64> = sqlx::query_scalar(
        "SELECT id FROM group_announcements WHERE id = ? AND topic = ? AND deleted_at IS NULL LOCK IN SHARE MODE",
    )
    .bind(id)
    .bind(topic)
    .fetch_optional(&mut *tx)
    .await
    .map_err(db_error)?;
    if live.is_none() {
        return Err(StoreError::NotFound);
    }
    // A plain INSERT rather than INSERT IGNORE, which would also hide a bad value; a duplicate key fails only this
    // statement and means the member read it before.
    let inserted = sqlx::query(concat!(
        "INSERT INTO group_announcement_reads (announcement_id, user_id, read_at) VALUES (?, ?, ",
        millis_to_datetime!(),
        ")"
    ))
    .bind(id)
    .bind(user_col(user))
    .bind(now)
    .execute(&mut *tx)
    .await;
    let first = match inserted {
        Ok(_) => true,
        Err(err) if is_unique_violation(&err) => false,
        Err(err) => return Err(db_error(err)),
    };
    tx.commit().await.map_err(db_error)?;
    Ok(first)
}
