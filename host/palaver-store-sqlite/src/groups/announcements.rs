//! Announcements for the SQLite group port: adding, editing (which bumps the version), removing (which sets
//! `deleted_at`, so the row and its read marks stay for the record), listing with the viewer's read mark, and
//! marking one read. Each call names its group as `(tenant column, topic)`.
//!
//! Edits and removals are one guarded statement each, so a removed announcement is never changed. A read mark
//! checks the announcement is live and inserts in one `BEGIN IMMEDIATE` transaction, and keeps the first time
//! by never replacing an existing mark.

use crate::SqliteStore;
use crate::codec::{limit_col, user_col};
use crate::error::db_error;
use palaver_core::ports::{Announcement, AnnouncementDraft, AnnouncementView};
use palaver_core::{StoreError, StoreResult, UnixMillis, UserId};
use palaver_store_sql::columns::{AnnouncementColumns, announcement_of};
use palaver_store_sql::rows::{AnnouncementViewRow, decode_all};

/// The columns of an [`AnnouncementColumns`] row, in its order, as a literal so that `concat!` can splice it into static SQL.
macro_rules! announcement_columns {
    () => {
        "id, topic, author, title, content, pinned, version, created_at, updated_at"
    };
}

/// Stores a new announcement, version 1.
pub(super) async fn add(
    store: &SqliteStore,
    (t, topic): (i64, &str),
    author: UserId,
    draft: &AnnouncementDraft,
    now: UnixMillis,
) -> StoreResult<Announcement> {
    let done = sqlx::query(
        "INSERT INTO group_announcements (tenant_id, topic, author, title, content, pinned, version, created_at, \
         updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, 1, ?7, ?7)",
    )
    .bind(t)
    .bind(topic)
    .bind(user_col(author))
    .bind(draft.title.as_deref())
    .bind(draft.content.to_string())
    .bind(draft.pinned)
    .bind(now)
    .execute(&store.writer)
    .await
    .map_err(db_error)?;
    Ok(Announcement::first(done.last_insert_rowid(), topic, author, draft, now))
}

/// Replaces a live announcement's text and flags and bumps its version, in one statement that returns the row.
pub(super) async fn update(
    store: &SqliteStore,
    (t, topic): (i64, &str),
    id: i64,
    draft: &AnnouncementDraft,
    now: UnixMillis,
) -> StoreResult<Announcement> {
    let sql = concat!(
        "UPDATE group_announcements SET title = ?1, content = ?2, pinned = ?3, version = version + 1, \
         updated_at = ?4 WHERE tenant_id = ?5 AND topic = ?6 AND id = ?7 AND deleted_at IS NULL RETURNING ",
        announcement_columns!()
    );
    let row: Option<AnnouncementColumns> = sqlx::query_as(sql)
        .bind(draft.title.as_deref())
        .bind(draft.content.to_string())
        .bind(draft.pinned)
        .bind(now)
        .bind(t)
        .bind(topic)
        .bind(id)
        .fetch_optional(&store.writer)
        .await
        .map_err(db_error)?;
    Ok(announcement_of(row.ok_or(StoreError::NotFound)?)?)
}

/// Removes a live announcement; false if the group had none with that id.
pub(super) async fn delete(
    store: &SqliteStore,
    (t, topic): (i64, &str),
    id: i64,
    now: UnixMillis,
) -> StoreResult<bool> {
    let done = sqlx::query(
        "UPDATE group_announcements SET deleted_at = ?1, updated_at = ?1 \
         WHERE tenant_id = ?2 AND topic = ?3 AND id = ?4 AND deleted_at IS NULL",
    )
    .bind(now)
    .bind(t)
    .bind(topic)
    .bind(id)
    .execute(&store.writer)
    .await
    .map_err(db_error)?;
    Ok(done.rows_affected() > 0)
}

/// The group's live announcements as `viewer` sees them, pinned first, then newest first.
pub(super) async fn list(
    store: &SqliteStore,
    (t, topic): (i64, &str),
    viewer: UserId,
    limit: usize,
) -> StoreResult<Vec<AnnouncementView>> {
    let rows: Vec<AnnouncementViewRow> = sqlx::query_as(
        "SELECT a.id, a.topic, a.author, a.title, a.content, a.pinned, a.version, a.created_at, a.updated_at, \
         r.read_at, (SELECT COUNT(*) FROM group_announcement_reads c \
         WHERE c.tenant_id = a.tenant_id AND c.announcement_id = a.id) AS read_count \
         FROM group_announcements a LEFT JOIN group_announcement_reads r \
         ON r.tenant_id = a.tenant_id AND r.announcement_id = a.id AND r.user_id = ?3 \
         WHERE a.tenant_id = ?1 AND a.topic = ?2 AND a.deleted_at IS NULL ORDER BY a.pinned DESC, a.id DESC LIMIT ?4",
    )
    .bind(t)
    .bind(topic)
    .bind(user_col(viewer))
    .bind(limit_col(limit))
    .fetch_all(&store.pool)
    .await
    .map_err(db_error)?;
    Ok(decode_all(rows)?)
}

/// Marks a live announcement read by `user`; true on the first read, which is the time kept.
pub(super) async fn mark_read(
    store: &SqliteStore,
    (t, topic): (i64, &str),
    id: i64,
    user: UserId,
    now: UnixMillis,
) -> StoreResult<bool> {
    let mut tx = store.begin_write().await?;
    let live: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM group_announcements \
         WHERE tenant_id = ? AND topic = ? AND id = ? AND deleted_at IS NULL)",
    )
    .bind(t)
    .bind(topic)
    .bind(id)
    .fetch_one(&mut *tx)
    .await
    .map_err(db_error)?;
    if !live {
        return Err(StoreError::NotFound);
    }
    let done = sqlx::query(
        "INSERT INTO group_announcement_reads (tenant_id, announcement_id, user_id, read_at) VALUES (?, ?, ?, ?) \
         ON CONFLICT DO NOTHING",
    )
    .bind(t)
    .bind(id)
    .bind(user_col(user))
    .bind(now)
    .execute(&mut *tx)
    .await
    .map_err(db_error)?;
    tx.commit().await.map_err(db_error)?;
    Ok(done.rows_affected() == 1)
}
