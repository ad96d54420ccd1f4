//! The group governance port over SQLite: mutes and settings here, roles, join requests and announcements in
//! the submodules, all on the tables of migration 0004.
//!
//! Every write that checks before it changes runs in one `BEGIN IMMEDIATE` transaction on the single writer
//! connection, so the check and the change see no other writer in between: an admin count and the grant it
//! allows, a transfer and the owner it reads, two first owners, or two decisions of one request are applied one
//! after the other. Partial unique indexes (one owner per group, one pending request per user and group) back
//! the checks up in the schema itself.

use crate::SqliteStore;
use crate::codec::{tenant, user_col};
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
impl GroupStore for SqliteStore {
    #[tracing::instrument(name = "palaver.store.group_roles", skip_all, fields(tenant = %tenant_id))]
    async fn roles(&self, tenant_id: TenantId, topic: &str) -> StoreResult<Vec<RoleGrant>> {
        roles::roles(self, (tenant(tenant_id), topic)).await
    }

    #[tracing::instrument(name = "palaver.store.ensure_owner", skip_all, fields(tenant = %tenant_id))]
    async fn ensure_owner(
        &self,
        tenant_id: TenantId,
        topic: &str,
        owner: UserId,
        now: UnixMillis,
    ) -> StoreResult<bool> {
        roles::ensure_owner(self, (tenant(tenant_id), topic), owner, now).await
    }

    #[tracing::instrument(name = "palaver.store.set_role", skip_all, fields(tenant = %tenant_id))]
    async fn set_role(
        &self,
        tenant_id: TenantId,
        topic: &str,
        user: UserId,
        role: GroupRole,
        by: UserId,
        max_admins: Option<u32>,
        now: UnixMillis,
    ) -> StoreResult<bool> {
        roles::set_role(self, (tenant(tenant_id), topic), (user, role), by, max_admins, now).await
    }

    #[tracing::instrument(name = "palaver.store.transfer_owner", skip_all, fields(tenant = %tenant_id))]
    async fn transfer_owner(
        &self,
        tenant_id: TenantId,
        topic: &str,
        from: UserId,
        to: UserId,
        now: UnixMillis,
    ) -> StoreResult<()> {
        roles::transfer_owner(self, (tenant(tenant_id), topic), from, to, now).await
    }

    #[tracing::instrument(name = "palaver.store.mute", skip_all, fields(tenant = %tenant_id))]
    async fn mute(
        &self,
        tenant_id: TenantId,
        topic: &str,
        user: Option<UserId>,
        by: UserId,
        reason: Option<&str>,
        until: Option<UnixMillis>,
        now: UnixMillis,
    ) -> StoreResult<()> {
        // One statement: a replaced mute keeps when it was first created.
        sqlx::query(
            "INSERT INTO group_mutes (tenant_id, topic, user_id, muted_by, reason, muted_until, created_at, \
             updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7) ON CONFLICT (tenant_id, topic, user_id) DO UPDATE \
             SET muted_by = excluded.muted_by, reason = excluded.reason, muted_until = excluded.muted_until, \
             updated_at = excluded.updated_at",
        )
        .bind(tenant(tenant_id))
        .bind(topic)
        .bind(mute_target_col(user))
        .bind(user_col(by))
        .bind(reason)
        .bind(until)
        .bind(now)
        .execute(&self.writer)
        .await
        .map_err(db_error)?;
        Ok(())
    }

    #[tracing::instrument(name = "palaver.store.unmute", skip_all, fields(tenant = %tenant_id))]
    async fn unmute(&self, tenant_id: TenantId, topic: &str, user: Option<UserId>) -> StoreResult<bool> {
        let done = sqlx::query("DELETE FROM group_mutes WHERE tenant_id = ? AND topic = ? AND user_id = ?")
            .bind(tenant(tenant_id))
            .bind(topic)
            .bind(mute_target_col(user))
            .execute(&self.writer)
            .await
            .map_err(db_error)?;
        Ok(done.rows_affected() > 0)
    }

    #[tracing::instrument(name = "palaver.store.mutes", skip_all, fields(tenant = %tenant_id))]
    async fn mutes(&self, tenant_id: TenantId, topic: &str, now: UnixMillis) -> StoreResult<Vec<Mute>> {
        let rows: Vec<MuteColumns> = sqlx::query_as(
            "SELECT user_id, muted_by, reason, muted_until, created_at, updated_at FROM group_mutes \
             WHERE tenant_id = ? AND topic = ? AND (muted_until IS NULL OR muted_until > ?) \
             ORDER BY user_id <> 0, user_id",
        )
        .bind(tenant(tenant_id))
        .bind(topic)
        .bind(now)
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        Ok(rows.into_iter().map(mute_of).collect())
    }

    #[tracing::instrument(name = "palaver.store.forget_member", skip_all, fields(tenant = %tenant_id))]
    async fn forget_member(&self, tenant_id: TenantId, topic: &str, user: UserId) -> StoreResult<()> {
        let (t, u) = (tenant(tenant_id), user_col(user));
        let mut tx = self.begin_write().await?;
        sqlx::query(
            "DELETE FROM group_member_roles WHERE tenant_id = ? AND topic = ? AND user_id = ? AND role <> 'owner'",
        )
        .bind(t)
        .bind(topic)
        .bind(u)
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        sqlx::query("DELETE FROM group_mutes WHERE tenant_id = ? AND topic = ? AND user_id = ?")
            .bind(t)
            .bind(topic)
            .bind(u)
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
        tx.commit().await.map_err(db_error)
    }

    #[tracing::instrument(name = "palaver.store.group_settings", skip_all, fields(tenant = %tenant_id))]
    async fn settings(&self, tenant_id: TenantId, topic: &str) -> StoreResult<GroupSettings> {
        let row: Option<(String, bool, i64)> = sqlx::query_as(
            "SELECT join_policy, members_invite, updated_at FROM group_settings WHERE tenant_id = ? AND topic = ?",
        )
        .bind(tenant(tenant_id))
        .bind(topic)
        .fetch_optional(&self.pool)
        .await
        .map_err(db_error)?;
        let Some((policy, members_invite, updated)) = row else { return Ok(GroupSettings::default()) };
        Ok(GroupSettings { join_policy: join_policy_of(policy)?, members_invite, updated })
    }

    #[tracing::instrument(name = "palaver.store.set_group_settings", skip_all, fields(tenant = %tenant_id))]
    async fn set_settings(
        &self,
        tenant_id: TenantId,
        topic: &str,
        settings: &GroupSettings,
        now: UnixMillis,
    ) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO group_settings (tenant_id, topic, join_policy, members_invite, updated_at) \
             VALUES (?, ?, ?, ?, ?) ON CONFLICT (tenant_id, topic) DO UPDATE SET join_policy = excluded.join_policy, \
             members_invite = excluded.members_invite, updated_at = excluded.updated_at",
        )
        .bind(tenant(tenant_id))
        .bind(topic)
        .bind(settings.join_policy.as_str())
        .bind(settings.members_invite)
        .bind(now)
        .execute(&self.writer)
        .await
        .map_err(db_error)?;
        Ok(())
    }

    #[tracing::instrument(name = "palaver.store.create_join_request", skip_all, fields(tenant = %tenant_id))]
    async fn create_join_request(
        &self,
        tenant_id: TenantId,
        topic: &str,
        user: UserId,
        inviter: Option<UserId>,
        message: Option<&str>,
        now: UnixMillis,
    ) -> StoreResult<JoinOutcome> {
        requests::create(self, (tenant(tenant_id), topic), user, inviter, message, now).await
    }

    #[tracing::instrument(name = "palaver.store.pending_join_request", skip_all, fields(tenant = %tenant_id))]
    async fn pending_join_request(
        &self,
        tenant_id: TenantId,
        topic: &str,
        user: UserId,
    ) -> StoreResult<Option<JoinRequest>> {
        requests::pending(self, (tenant(tenant_id), topic), user).await
    }

    #[tracing::instrument(name = "palaver.store.decide_join_request", skip_all, fields(tenant = %tenant_id))]
    async fn decide_join_request(
        &self,
        tenant_id: TenantId,
        topic: &str,
        id: i64,
        by: UserId,
        decision: JoinDecision,
        now: UnixMillis,
    ) -> StoreResult<JoinRequest> {
        requests::decide(self, (tenant(tenant_id), topic), id, by, decision, now).await
    }

    #[tracing::instrument(name = "palaver.store.list_join_requests", skip_all, fields(tenant = %tenant_id))]
    async fn list_join_requests(
        &self,
        tenant_id: TenantId,
        topic: &str,
        status: Option<RequestStatus>,
        cursor: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<JoinRequest>> {
        requests::list(self, (tenant(tenant_id), topic), status, cursor, limit).await
    }

    #[tracing::instrument(name = "palaver.store.add_announcement", skip_all, fields(tenant = %tenant_id))]
    async fn add_announcement(
        &self,
        tenant_id: TenantId,
        topic: &str,
        author: UserId,
        draft: &AnnouncementDraft,
        now: UnixMillis,
    ) -> StoreResult<Announcement> {
        announcements::add(self, (tenant(tenant_id), topic), author, draft, now).await
    }

    #[tracing::instrument(name = "palaver.store.update_announcement", skip_all, fields(tenant = %tenant_id))]
    async fn update_announcement(
        &self,
        tenant_id: TenantId,
        topic: &str,
        id: i64,
        draft: &AnnouncementDraft,
        now: UnixMillis,
    ) -> StoreResult<Announcement> {
        announcements::update(self, (tenant(tenant_id), topic), id, draft, now).await
    }

    #[tracing::instrument(name = "palaver.store.delete_announcement", skip_all, fields(tenant = %tenant_id))]
    async fn delete_announcement(
        &self,
        tenant_id: TenantId,
        topic: &str,
        id: i64,
        now: UnixMillis,
    ) -> StoreResult<bool> {
        announcements::delete(self, (tenant(tenant_id), topic), id, now).await
    }

    #[tracing::instrument(name = "palaver.store.list_announcements", skip_all, fields(tenant = %tenant_id))]
    async fn list_announcements(
        &self,
        tenant_id: TenantId,
        topic: &str,
        viewer: UserId,
        limit: usize,
    ) -> StoreResult<Vec<AnnouncementView>> {
        announcements::list(self, (tenant(tenant_id), topic), viewer, limit).await
    }

    #[tracing::instrument(name = "palaver.store.mark_announcement_read", skip_all, fields(tenant = %tenant_id))]
    async fn mark_announcement_read(
        &self,
        tenant_id: TenantId,
        topic: &str,
        id: i64,
        user: UserId,
        now: UnixMillis,
    ) -> StoreResult<bool> {
        announcements::mark_read(self, (tenant(tenant_id), topic), id, user, now).await
    }
}
