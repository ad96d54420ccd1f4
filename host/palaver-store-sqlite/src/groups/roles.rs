//! Role rows for the SQLite group port: listing a group's roles, the first owner, grants under an admin limit,
//! and ownership transfers. Each call names its group as `(tenant column, topic)`.
//!
//! Every change runs in one `BEGIN IMMEDIATE` transaction on the single writer, so what it reads (the owner, the
//! admin count, the user's current role) is still true when it writes; the partial unique index on owners makes
//! a second owner impossible in the schema as well.

use crate::SqliteStore;
use crate::codec::user_col;
use crate::error::db_error;
use palaver_core::ports::{GroupRole, NOT_OWNER, OWNER_ROLE, RoleChange, RoleGrant, check_admin_limit};
use palaver_core::{StoreError, StoreResult, UnixMillis, UserId};
use palaver_store_sql::columns::{GrantColumns, grant_of, role_of};
use sqlx::{Sqlite, Transaction};

/// Upserts `user`'s role inside the caller's transaction, replacing whatever grant was stored.
async fn store_role(
    tx: &mut Transaction<'static, Sqlite>,
    (t, topic): (i64, &str),
    user: UserId,
    role: GroupRole,
    by: Option<UserId>,
    now: UnixMillis,
) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO group_member_roles (tenant_id, topic, user_id, role, granted_by, created_at, updated_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6) ON CONFLICT (tenant_id, topic, user_id) DO UPDATE \
         SET role = excluded.role, granted_by = excluded.granted_by, updated_at = excluded.updated_at",
    )
    .bind(t)
    .bind(topic)
    .bind(user_col(user))
    .bind(role.as_str())
    .bind(by.map(user_col))
    .bind(now)
    .execute(&mut **tx)
    .await
    .map_err(db_error)?;
    Ok(())
}

/// The stored role of `user`, `Member` when no row holds one, inside the caller's transaction.
async fn stored_role(
    tx: &mut Transaction<'static, Sqlite>,
    (t, topic): (i64, &str),
    user: UserId,
) -> StoreResult<GroupRole> {
    let role: Option<String> =
        sqlx::query_scalar("SELECT role FROM group_member_roles WHERE tenant_id = ? AND topic = ? AND user_id = ?")
            .bind(t)
            .bind(topic)
            .bind(user_col(user))
            .fetch_optional(&mut **tx)
            .await
            .map_err(db_error)?;
    Ok(role.map_or(Ok(GroupRole::Member), |r| role_of(&r))?)
}

/// The group's stored roles, owner first, then admins by user id.
pub(super) async fn roles(store: &SqliteStore, (t, topic): (i64, &str)) -> StoreResult<Vec<RoleGrant>> {
    let rows: Vec<GrantColumns> = sqlx::query_as(
        "SELECT user_id, role, granted_by, updated_at FROM group_member_roles WHERE tenant_id = ? AND topic = ? \
         ORDER BY role <> 'owner', user_id",
    )
    .bind(t)
    .bind(topic)
    .fetch_all(&store.pool)
    .await
    .map_err(db_error)?;
    Ok(rows.into_iter().map(grant_of).collect::<Result<_, _>>()?)
}

/// Stores `owner` as the owner unless the group has one; true if it wrote.
pub(super) async fn ensure_owner(
    store: &SqliteStore,
    (t, topic): (i64, &str),
    owner: UserId,
    now: UnixMillis,
) -> StoreResult<bool> {
    let mut tx = store.begin_write().await?;
    let has_owner: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM group_member_roles WHERE tenant_id = ? AND topic = ? AND role = 'owner')",
    )
    .bind(t)
    .bind(topic)
    .fetch_one(&mut *tx)
    .await
    .map_err(db_error)?;
    if has_owner {
        return Ok(false);
    }
    store_role(&mut tx, (t, topic), owner, GroupRole::Owner, None, now).await?;
    tx.commit().await.map_err(db_error)?;
    Ok(true)
}

/// Makes `user` an admin (counting the admins in the same transaction) or a plain member; true if the role
/// changed.
pub(super) async fn set_role(
    store: &SqliteStore,
    (t, topic): (i64, &str),
    (user, role): (UserId, GroupRole),
    by: UserId,
    max_admins: Option<u32>,
    now: UnixMillis,
) -> StoreResult<bool> {
    // Refused before the transaction begins; the stored role is checked inside it.
    if role == GroupRole::Owner {
        return Err(StoreError::Conflict(OWNER_ROLE.to_owned()));
    }
    let mut tx = store.begin_write().await?;
    match stored_role(&mut tx, (t, topic), user).await?.change_to(role)? {
        RoleChange::Keep => return Ok(false),
        RoleChange::Revoke => {
            sqlx::query("DELETE FROM group_member_roles WHERE tenant_id = ? AND topic = ? AND user_id = ?")
                .bind(t)
                .bind(topic)
                .bind(user_col(user))
                .execute(&mut *tx)
                .await
                .map_err(db_error)?;
        }
        RoleChange::GrantAdmin => {
            let admins: i64 = sqlx::query_scalar(
                "SELECT COUNT(*) FROM group_member_roles WHERE tenant_id = ? AND topic = ? AND role = 'admin'",
            )
            .bind(t)
            .bind(topic)
            .fetch_one(&mut *tx)
            .await
            .map_err(db_error)?;
            check_admin_limit(admins.unsigned_abs(), max_admins)?;
            store_role(&mut tx, (t, topic), user, GroupRole::Admin, Some(by), now).await?;
        }
    }
    tx.commit().await.map_err(db_error)?;
    Ok(true)
}

/// Moves ownership from `from` to `to`, making `from` an admin.
pub(super) async fn transfer_owner(
    store: &SqliteStore,
    (t, topic): (i64, &str),
    from: UserId,
    to: UserId,
    now: UnixMillis,
) -> StoreResult<()> {
    let mut tx = store.begin_write().await?;
    if stored_role(&mut tx, (t, topic), from).await? != GroupRole::Owner {
        return Err(StoreError::Conflict(NOT_OWNER.to_owned()));
    }
    if from == to {
        return Ok(());
    }
    // The old owner steps down first, so that the unique owner index never sees two owners.
    store_role(&mut tx, (t, topic), from, GroupRole::Admin, Some(from), now).await?;
    store_role(&mut tx, (t, topic), to, GroupRole::Owner, Some(from), now).await?;
    tx.commit().await.map_err(db_error)
}
