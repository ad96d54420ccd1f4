//! The group governance port over a tenant database: mutes and settings here, roles (with the per-group lock row
//! that keeps them race-free), join requests and announcements in the submodules. The tables are the group tables
//! of migration 0002 plus `group_settings` and `group_join_requests` of migration 0004; times are UTC
//! `DATETIME(3)`, converted in SQL.
//!
//! Mutes and settings need no lock: each call is one statement on one primary key, and InnoDB serialises writes
//! to one row. A deadlock InnoDB still detects is `Unavailable` like everywhere in this adapter: nothing was
//! written and the call may be retried.

use crate::MysqlStore;
use crate::codec::{datetime_to_millis, millis_to_datetime, user_col};
use crate::error::db_error;
use palaver_core::ports::{
    Announcement, AnnouncementDraft, AnnouncementView, GroupRole, GroupSettings, GroupStore, JoinDecision, JoinOutcome,
    JoinRequest, Mute, RequestStatus, RoleGrant,
};
use palaver_core::{StoreResult, TenantId, UnixMillis, UserId};
use palaver_store_sql::columns::{MuteColumns, join_policy_of, mute_of, mute_target_col};

mod announcements;
mod requests;
mod roles;

#[async_trait::async_trait]
impl GroupStore for MysqlStore {
    #[tracing::instrument(name = "palaver.store.group_roles", skip_all, fields(tenant = %tenant))]
    async fn roles(&self, tenant: TenantId, topic: &str) -> StoreResult<Vec<RoleGrant>> {
        roles::roles(&self.db(tenant).await?.pool, topic).await
    }

    #[tracing::instrument(name = "palaver.store.ensure_owner", skip_all, fields(tenant = %tenant))]
    async fn ensure_owner(&self, tenant: TenantId, topic: &str, owner: UserId, now: UnixMillis) -> StoreResult<bool> {
        roles::ensure_owner(&self.db(tenant).await?.pool, topic, owner, now).await
    }

    #[tracing::instrument(name = "palaver.store.set_role", skip_all, fields(tenant = %tenant))]
    async fn set_role(
        &self,
        tenant: TenantId,
        topic: &str,
        user: UserId,
        role: GroupRole,
        by: UserId,
        max_admins: Option<u32>,
        now: UnixMillis,
    ) -> StoreResult<bool> {
        roles::set_role(&self.db(tenant).await?.pool, topic, (user, role), by, max_admins, now).await
    }

    #[tracing::instrument(name = "palaver.store.transfer_owner", skip_all, fields(tenant = %tenant))]
    async fn transfer_owner(
        &self,
        tenant: TenantId,
        topic: &str,
        from: UserId,
        to: UserId,
        now: UnixMillis,
    ) -> StoreResult<()> {
        roles::transfer_owner(&self.db(tenant).await?.pool, topic, from, to, now).await
    }

    #[tracing::instrument(name = "palaver.store.mute", skip_all, fields(tenant = %tenant))]
    async fn mute(
        &self,
        tenant: TenantId,
        topic: &str,
        user: Option<UserId>,
        by: UserId,
        reason: Option<&str>,
        until: Option<UnixMillis>,
        now: UnixMillis,
    ) -> StoreResult<()> {
        let db = self.db(tenant).await?;
        // One statement: a replaced mute keeps when it was first created. A NULL end stays NULL through the
        // conversion.
        let sql = concat!(
            "INSERT INTO group_mutes (topic, user_id, muted_by, reason, muted_until, created_at, updated_at) \
             VALUES (?, ?, ?, ?, ",
            millis_to_datetime!(),
            ", ",
            millis_to_datetime!(),
            ", ",
            millis_to_datetime!(),
            ") ON DUPLICATE KEY UPDATE muted_by = VALUES(muted_by), reason = VALUES(reason), \
             muted_until = VALUES(muted_until), updated_at = VALUES(updated_at)"
        );
        let upsert = sqlx::query(sql).bind(topic).bind(mute_target_col(user)).bind(user_col(by)).bind(reason);
        upsert.bind(until).bind(now).bind(now).execute(&db.pool).await.map_err(db_error)?;
        Ok(())
    }

    #[tracing::instrument(name = "palaver.store.unmute", skip_all, fields(tenant = %tenant))]
    async fn unmute(&self, tenant: TenantId, topic: &str, user: Option<UserId>) -> StoreResult<bool> {
        let db = self.db(tenant).await?;
        let delete = sqlx::query("DELETE FROM group_mutes WHERE topic = ? AND user_id = ?");
        let done = delete.bind(topic).bind(mute_target_col(user)).execute(&db.pool).await.map_err(db_error)?;
        Ok(done.rows_affected() > 0)
    }

    #[tracing::instrument(name = "palaver.store.mutes", skip_all, fields(tenant = %tenant))]
    async fn mutes(&self, tenant: TenantId, topic: &str, now: UnixMillis) -> StoreResult<Vec<Mute>> {
        let db = self.db(tenant).await?;
        let query = sqlx::query_as(concat!(
            "SELECT user_id, muted_by, reason, ",
            datetime_to_millis!("muted_until"),
            ", ",
            datetime_to_millis!("created_at"),
            ", ",
            datetime_to_millis!("updated_at"),
            " FROM group_mutes WHERE topic = ? AND (muted_until IS NULL OR muted_until > ",
            millis_to_datetime!(),
            ") ORDER BY user_id <> 0, user_id"
        ));
        let rows: Vec<MuteColumns> = query.bind(topic).bind(now).fetch_all(&db.pool).await.map_err(db_error)?;
        Ok(rows.into_iter().map(mute_of).collect())
    }

    #[tracing::instrument(name = "palaver.store.forget_member", skip_all, fields(tenant = %tenant))]
    async fn forget_member(&self, tenant: TenantId, topic: &str, user: UserId) -> StoreResult<()> {
        let db = self.db(tenant).await?;
        // The role guard is evaluated on the latest committed row, so an owner made by a concurrent transfer
        // keeps the role.
        let mut tx = db.pool.begin().await.map_err(db_error)?;
        for sql in [
            "DELETE FROM group_member_roles WHERE topic = ? AND user_id = ? AND role <> 'owner'",
            "DELETE FROM group_mutes WHERE topic = ? AND user_id = ?",
        ] {
            sqlx::query(sql).bind(topic).bind(user_col(user)).execute(&mut *tx).await.map_err(db_error)?;
        }
        tx.commit().await.map_err(db_error)
    }

    #[tracing::instrument(name = "palaver.store.group_settings", skip_all, fields(tenant = %tenant))]
    async fn settings(&self, tenant: TenantId, topic: &str) -> StoreResult<GroupSettings> {
        let db = self.db(tenant).await?;
        let sql = concat!(
            "SELECT join_policy, members_invite, ",
            datetime_to_millis!("updated_at"),
            " FROM group_settings WHERE topic = ?"
        );
        let row: Option<(Option<String>, bool, Option<i64>)> =
            sqlx::query_as(sql).bind(topic).fetch_optional(&db.pool).await.map_err(db_error)?;
        // A row without a time exists only as the group's lock (see `roles`) and holds no settings.
        let Some((Some(policy), members_invite, Some(updated))) = row else { return Ok(GroupSettings::default()) };
        Ok(GroupSettings { join_policy: join_policy_of(policy)?, members_invite, updated })
    }

    #[tracing::instrument(name = "palaver.store.set_group_settings", skip_all, fields(tenant = %tenant))]
    async fn set_settings(
        &self,
        tenant: TenantId,
        topic: &str,
        settings: &GroupSettings,
        now: UnixMillis,
    ) -> StoreResult<()> {
        let db = self.db(tenant).await?;
        let sql = concat!(
            "INSERT INTO group_settings (topic, join_policy, members_invite, updated_at) VALUES (?, ?, ?, ",
            millis_to_datetime!(),
            ") ON DUPLICATE KEY UPDATE join_policy = VALUES(join_policy), members_invite = VALUES(members_invite), \
             updated_at = VALUES(updated_at)"
        );
        let upsert = sqlx::query(sql).bind(topic).bind(settings.join_policy.as_str()).bind(settings.members_invite);
        upsert.bind(now).execute(&db.pool).await.map_err(db_error)?;
        Ok(())
    }

    #[tracing::instrument(name = "palaver.store.create_join_request", skip_all, fields(tenant = %tenant))]
    async fn create_join_request(
        &self,
        tenant: TenantId,
        topic: &str,
        user: UserId,
        inviter: Option<UserId>,
        message: Option<&str>,
        now: UnixMillis,
    ) -> StoreResult<JoinOutcome> {
        requests::create(&self.db(tenant).await?.pool, topic, user, inviter, message, now).await
    }

    #[tracing::instrument(name = "palaver.store.pending_join_request", skip_all, fields(tenant = %tenant))]
    async fn pending_join_request(
        &self,
        tenant: TenantId,
        topic: &str,
        user: UserId,
    ) -> StoreResult<Option<JoinRequest>> {
        requests::pending(&self.db(tenant).await?.pool, topic, user).await
    }

    #[tracing::instrument(name = "palaver.store.decide_join_request", skip_all, fields(tenant = %tenant))]
    async fn decide_join_request(
        &self,
        tenant: TenantId,
        topic: &str,
        id: i64,
        by: UserId,
        decision: JoinDecision,
        now: UnixMillis,
    ) -> StoreResult<JoinRequest> {
        requests::decide(&self.db(tenant).await?.pool, topic, id, by, decision, now).await
    }

    #[tracing::instrument(name = "palaver.store.list_join_requests", skip_all, fields(tenant = %tenant))]
    async fn list_join_requests(
        &self,
        tenant: TenantId,
        topic: &str,
        status: Option<RequestStatus>,
        cursor: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<JoinRequest>> {
        requests::list(&self.db(tenant).await?.pool, topic, status, cursor, limit).await
    }

    #[tracing::instrument(name = "palaver.store.add_announcement", skip_all, fields(tenant = %tenant))]
    async fn add_announcement(
        &self,
        tenant: TenantId,
        topic: &str,
        author: UserId,
        draft: &AnnouncementDraft,
        now: UnixMillis,
    ) -> StoreResult<Announcement> {
        announcements::add(&self.db(tenant).await?.pool, topic, author, draft, now).await
    }

    #[tracing::instrument(name = "palaver.store.update_announcement", skip_all, fields(tenant = %tenant))]
    async fn update_announcement(
        &self,
        tenant: TenantId,
        topic: &str,
        id: i64,
        draft: &AnnouncementDraft,
        now: UnixMillis,
    ) -> StoreResult<Announcement> {
        announcements::update(&self.db(tenant).await?.pool, topic, id, draft, now).await
    }

    #[tracing::instrument(name = "palaver.store.delete_announcement", skip_all, fields(tenant = %tenant))]
    async fn delete_announcement(&self, tenant: TenantId, topic: &str, id: i64, now: UnixMillis) -> StoreResult<bool> {
        announcements::delete(&self.db(tenant).await?.pool, topic, id, now).await
    }

    #[tracing::instrument(name = "palaver.store.list_announcements", skip_all, fields(tenant = %tenant))]
    async fn list_announcements(
        &self,
        tenant: TenantId,
        topic: &str,
        viewer: UserId,
        limit: usize,
    ) -> StoreResult<Vec<AnnouncementView>> {
        announcements::list(&self.db(tenant).await?.pool, topic, viewer, limit).await
    }

    #[tracing::instrument(name = "palaver.store.mark_announcement_read", skip_all, fields(tenant = %tenant))]
    async fn mark_announcement_read(
        &self,
        tenant: TenantId,
        topic: &str,
        id: i64,
        user: UserId,
        now: UnixMillis,
    ) -> StoreResult<bool> {
        announcements::mark_read(&self.db(tenant).await?.pool, topic, id, user, now).await
    }
}
