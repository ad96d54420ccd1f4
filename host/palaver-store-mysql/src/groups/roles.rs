//! The group lock and role rows for the MariaDB group port: taking a group's lock row, reading and storing roles
//! inside the transaction that holds it, and the role calls built on them.
//!
//! Why a lock row: the role rows a grant or a first owner cares about often do not exist yet, and a locking read
//! that finds no row takes only a gap lock, which two transactions may hold at once (migration 0004 says more).
//! Every role change of a group therefore first reads the group's `group_settings` row `FOR UPDATE`, creating
//! it outside the transaction if it is missing, so that the changes of one group take turns: the second of two
//! racing grants counts the first one's admin, the second of two transfers finds the owner moved, and the second
//! of two first owners finds the first. Role rows are then read with locking reads too, which see the latest
//! commit rather than a snapshot taken before the lock was granted.

use crate::codec::{datetime_to_millis, millis_to_datetime, user_col, user_of};
use crate::error::{db_error, is_unique_violation};
use palaver_core::ports::{GroupRole, NOT_OWNER, OWNER_ROLE, RoleChange, RoleGrant, check_admin_limit};
use palaver_core::{StoreError, StoreResult, UnixMillis, UserId};
use palaver_store_sql::columns::{GrantColumns, grant_of, role_of};
use sqlx::{MySql, MySqlPool, Transaction};

/// Starts a transaction that holds the group's lock row.
async fn lock_group(pool: &MySqlPool, topic: &str) -> StoreResult<Transaction<'static, MySql>> {
    // Two rounds at most: a missing row is created, and no call ever deletes one.
    for _ in 0..2 {
        let mut tx = pool.begin().await.map_err(db_error)?;
        let found: Option<String> = sqlx::query_scalar("SELECT topic FROM group_settings WHERE topic = ? FOR UPDATE")
            .bind(topic)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_error)?;
        if found.is_some() {
            return Ok(tx);
        }
        // The gap lock the miss took goes with the rollback, before the insert, so two callers creating the row
        // never wait on each other's gap. A plain INSERT (not IGNORE, which would truncate a too-long topic onto
        // another group's lock) whose duplicate means someone else created it first.
        tx.rollback().await.map_err(db_error)?;
        match sqlx::query("INSERT INTO group_settings (topic) VALUES (?)").bind(topic).execute(pool).await {
            Ok(_) => {}
            Err(err) if is_unique_violation(&err) => {}
            Err(err) => return Err(db_error(err)),
        }
    }
    Err(StoreError::Internal(format!("the lock row of group {topic:?} vanished")))
}

/// The stored role of `user`, `Member` when no row holds one, read with a lock.
async fn stored_role(tx: &mut Transaction<'static, MySql>, topic: &str, user: UserId) -> StoreResult<GroupRole> {
    let role: Option<String> =
        sqlx::query_scalar("SELECT role FROM group_member_roles WHERE topic = ? AND user_id = ? FOR UPDATE")
            .bind(topic)
            .bind(user_col(user))
            .fetch_optional(&mut **tx)
            .await
            .map_err(db_error)?;
    Ok(role.map_or(Ok(GroupRole::Member), |r| role_of(&r))?)
}

/// The group's owner, read with a lock.
async fn stored_owner(tx: &mut Transaction<'static, MySql>, topic: &str) -> StoreResult<Option<UserId>> {
    let owner: Option<i64> =
        sqlx::query_scalar("SELECT user_id FROM group_member_roles WHERE topic = ? AND role = 'owner' FOR UPDATE")
            .bind(topic)
            .fetch_optional(&mut **tx)
            .await
            .map_err(db_error)?;
    Ok(owner.map(user_of))
}

/// Upserts `user`'s role inside the caller's transaction, replacing whatever grant was stored.
async fn store_role(
    tx: &mut Transaction<'static, MySql>,
    topic: &str,
    user: UserId,
    role: GroupRole,
    by: Option<UserId>,
    now: UnixMillis,
) -> StoreResult<()> {
    sqlx::query(concat!(
        "INSERT INTO group_member_roles (topic, user_id, role, granted_by, created_at, updated_at) \
         VALUES (?, ?, ?, ?, ",
        millis_to_datetime!(),
        ", ",
        millis_to_datetime!(),
        ") ON DUPLICATE KEY UPDATE role = VALUES(role), granted_by = VALUES(granted_by), \
         updated_at = VALUES(updated_at)"
    ))
    .bind(topic)
    .bind(user_col(user))
    .bind(role.as_str())
    .bind(by.map(user_col))
    .bind(now)
    .bind(now)
    .execute(&mut **tx)
    .await
    .map_err(db_error)?;
    Ok(())
}

/// The group's stored roles, owner first, then admins by user id.
pub(super) async fn roles(pool: &MySqlPool, topic: &str) -> StoreResult<Vec<RoleGrant>> {
    let rows: Vec<GrantColumns> = sqlx::query_as(concat!(
        "SELECT user_id, role, granted_by, ",
        datetime_to_millis!("updated_at"),
        " FROM group_member_roles WHERE topic = ? ORDER BY role <> 'owner', user_id"
    ))
    .bind(topic)
    .fetch_all(pool)
    .await
    .map_err(db_error)?;
    Ok(rows.into_iter().map(grant_of).collect::<Result<_, _>>()?)
}

/// Stores `owner` as the owner unless the group has one; true if it wrote.
pub(super) async fn ensure_owner(pool: &MySqlPool, topic: &str, owner: UserId, now: UnixMillis) -> StoreResult<bool> {
    let mut tx = lock_group(pool, topic).await?;
    if stored_owner(&mut tx, topic).await?.is_some() {
        return Ok(false);
    }
    store_role(&mut tx, topic, owner, GroupRole::Owner, None, now).await?;
    tx.commit().await.map_err(db_error)?;
    Ok(true)
}

/// Makes `user` an admin (counting the admins under the group lock) or a plain member; true if the role changed.
pub(super) async fn set_role(
    pool: &MySqlPool,
    topic: &str,
    (user, role): (UserId, GroupRole),
    by: UserId,
    max_admins: Option<u32>,
    now: UnixMillis,
) -> StoreResult<bool> {
    // Refused before the group is locked (which may create its lock row); the stored role is checked under it.
    if role == GroupRole::Owner {
        return Err(StoreError::Conflict(OWNER_ROLE.to_owned()));
    }
    let mut tx = lock_group(pool, topic).await?;
    match stored_role(&mut tx, topic, user).await?.change_to(role)? {
        RoleChange::Keep => return Ok(false),
        RoleChange::Revoke => {
            sqlx::query("DELETE FROM group_member_roles WHERE topic = ? AND user_id = ?")
                .bind(topic)
                .bind(user_col(user))
                .execute(&mut *tx)
                .await
                .map_err(db_error)?;
        }
        RoleChange::GrantAdmin => {
            let admins: i64 = sqlx::query_scalar(
                "SELECT COUNT(*) FROM group_member_roles WHERE topic = ? AND role = 'admin' LOCK IN SHARE MODE",
            )
            .bind(topic)
            .fetch_one(&mut *tx)
            .await
            .map_err(db_error)?;
            check_admin_limit(admins.unsigned_abs(), max_admins)?;
            store_role(&mut tx, topic, user, GroupRole::Admin, Some(by), now).await?;
        }
    }
    tx.commit().await.map_err(db_error)?;
    Ok(true)
}

/// Moves ownership from `from` to `to`, making `from` an admin.
pub(super) async fn transfer_owner(
    pool: &MySqlPool,
    topic: &str,
    from: UserId,
    to: UserId,
    now: UnixMillis,
) -> StoreResult<()> {
    let mut tx = lock_group(pool, topic).await?;
    if stored_owner(&mut tx, topic).await? != Some(from) {
        return Err(StoreError::Conflict(NOT_OWNER.to_owned()));
    }
    if from == to {
        return Ok(());
    }
    store_role(&mut tx, topic, from, GroupRole::Admin, Some(from), now).await?;
    store_role(&mut tx, topic, to, GroupRole::Owner, Some(from), now).await?;
    tx.commit().await.map_err(db_error)
}
