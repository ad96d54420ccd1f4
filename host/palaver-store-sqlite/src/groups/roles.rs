//! Role rows for the SQLite group port: listing a group's roles, the first owner, grants under an admin limit,
//! and ownership transfers. Each call names its group as `(tenant column, topic)`.
//!
//! Every change runs in one `BEGIN IMMEDIATE` transaction on the single writer, so what it reads (the owner, the
//! admin count, the user's current role) is still true when it writes; the partial unique index on owners makes
//! a second owner impossible in the schema as well.

use crate::SqliteStore;
use crate::codec::{user_col, user_of};
use crate::error::{CorruptRow, db_error};
use palaver_core::ports::{ADMIN_LIMIT, GroupRole, NOT_OWNER, OWNER_ROLE, RoleGrant};
use palaver_core::{StoreError, StoreResult, UnixMillis, UserId};
use sqlx::{Sqlite, Transaction};

/// The role a `role` column holds.
fn role_of(v: &str) -> Result<GroupRole, CorruptRow> {
    GroupRole::parse(v).ok_or_else(|| CorruptRow::Value { column: "role", value: v.to_owned() })
}

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
    let rows: Vec<(i64, String, Option<i64>, i64)> = sqlx::query_as(
        "SELECT user_id, role, granted_by, updated_at FROM group_member_roles WHERE tenant_id = ? AND topic = ? \
         ORDER BY role <> 'owner', user_id",
    )
    .bind(t)
    .bind(topic)
    .fetch_all(&store.pool)
    .await
    .map_err(db_error)?;
    let grant = |(user, role, by, updated): (i64, String, Option<i64>, i64)| {
        Ok(RoleGrant { user: user_of(user), role: role_of(&role)?, granted_by: by.map(user_of), updated })
    };
    rows.into_iter().map(grant).collect::<Result<_, CorruptRow>>().map_err(StoreError::from)
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
    if role == GroupRole::Owner {
        return Err(StoreError::Conflict(OWNER_ROLE.to_owned()));
    }
    let mut tx = store.begin_write().await?;
    let current = stored_role(&mut tx, (t, topic), user).await?;
    if current == GroupRole::Owner {
        return Err(StoreError::Conflict(OWNER_ROLE.to_owned()));
    }
    if current == role {
        return Ok(false);
    }
    if role == GroupRole::Member {
        sqlx::query("DELETE FROM group_member_roles WHERE tenant_id = ? AND topic = ? AND user_id = ?")
            .bind(t)
            .bind(topic)
            .bind(user_col(user))
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
    } else {
        let admins: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM group_member_roles WHERE tenant_id = ? AND topic = ? AND role = 'admin'",
        )
        .bind(t)
        .bind(topic)
        .fetch_one(&mut *tx)
        .await
        .map_err(db_error)?;
        if max_admins.is_some_and(|max| admins >= i64::from(max)) {
            return Err(StoreError::Conflict(ADMIN_LIMIT.to_owned()));
        }
        store_role(&mut tx, (t, topic), user, GroupRole::Admin, Some(by), now).await?;
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
