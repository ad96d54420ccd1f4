//! Deleting an account, as Tinode does (`{del what:"user"}`, or the admin command `user.delete`).
//!
//! The order is what makes the deletion bite at once and survive a crash half way: first the account is marked
//! deleted and its tokens revoked in one write (with its audit event and the Admin side's summary), so nothing
//! logs in as it from then on; then its sessions close on every node; then its login, external id and push
//! devices are forgotten; then it leaves every topic: groups it owns are deleted (their members are told the
//! topic is gone), other groups see it leave, and each P2P peer is told the conversation is gone. Each step
//! skips what is already done, so running it again (an admin command claimed again after a crash) finishes it.
//!
//! What is kept: the account's row (id, times, state `deleted`) so that the messages it sent still name a
//! sender, and those messages in the histories of others. Erasing (`hard`, or `accounts.delete_mode = "erase"`)
//! also clears its public profile, trusted data and tags; retaining keeps them for audit. Its last-seen time and
//! user agent stay either way, and an avatar it made public stays public.

use crate::error::{ServiceError, ServiceResult};
use crate::names::wire_name;
use crate::{Inner, Service, Summary, now_millis};
use palaver_core::ports::ControlScope;
use palaver_core::{RecordState, SessionId, TenantId, UserId, UserUpdate};
use palaver_proto::MsgPres;
use serde_json::{Value, json};

/// A session id no node hands out (ids count up from a random 40-bit base), for the leave helpers' `skip`
/// when no session asked.
const NO_SESSION: SessionId = SessionId(u64::MAX);

/// What happens to a deleted account's profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DeleteMode {
    /// The request decides: Tinode's `hard` erases, a soft deletion retains.
    #[default]
    Client,
    /// Always keep the profile (public, trusted, tags) for audit.
    Retain,
    /// Always erase it.
    Erase,
}

impl DeleteMode {
    fn erases(self, hard: bool) -> bool {
        match self {
            DeleteMode::Client => hard,
            DeleteMode::Retain => false,
            DeleteMode::Erase => true,
        }
    }
}

/// What a deletion did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccountDeleted {
    /// The profile was erased.
    pub erased: bool,
    /// Groups it owned, deleted.
    pub groups_deleted: usize,
    /// Groups it left and P2P conversations whose peer was told.
    pub topics_left: usize,
    /// Sessions closed on this node.
    pub closed_here: usize,
}

impl AccountDeleted {
    /// The detail of its audit event and of the admin command's result.
    pub fn detail(&self, user: UserId) -> Value {
        json!({
            "user": user.to_string(),
            "state": "deleted",
            "erased": self.erased,
            "groups_deleted": self.groups_deleted,
            "topics_left": self.topics_left,
            "closed_here": self.closed_here,
        })
    }
}

impl Inner {
    /// Deletes `user`'s account (see the module doc). `actor` is who asked, for the audit log (`("user", id)`
    /// for the owner, `("admin", None)`); `keep` is a session left open (the one that asked, which replies and
    /// then closes itself). `UserNotFound` for no such account; an account already deleted is finished again.
    pub(crate) async fn delete_account(
        &self,
        tenant: TenantId,
        user: UserId,
        hard: bool,
        actor: (&str, Option<i64>),
        keep: Option<SessionId>,
    ) -> ServiceResult<AccountDeleted> {
        self.ports.users.get_user(tenant, user).await?.ok_or(ServiceError::UserNotFound)?;
        let erased = self.cfg.delete_mode.erases(hard);
        let mut done = AccountDeleted { erased, ..AccountDeleted::default() };
        // 1. Nothing logs in as it from here: state and token generation change in one write, with the events.
        let detail = json!({ "erase": erased, "by": actor.0 });
        let audit =
            crate::backbone::audit_event(tenant, "user.delete", actor, ("user", user.to_string())).with_detail(detail);
        let summary = Summary::new("user.state", "user", user.to_string(), json!({ "state": "deleted" }));
        let mut owed = vec![crate::backbone::audit_record(&audit), summary.record(tenant)];
        // The listening plugins learn of it with the deletion's own write, so no later step's failure loses it.
        let by = actor.1.map(|id| UserId(id as u64));
        owed.extend(self.account_event(tenant, user, by, palaver_core::ports::AccountChange::Deleted).await);
        self.ports.users.revoke_tokens(tenant, user, Some(RecordState::Deleted), self.owed(tenant, &owed)).await?;
        self.owed_written();
        // 2. Its sessions close on every node. If that cannot be asked, the deletion fails here (an admin
        // command is retried, and every step above repeats harmlessly): open sessions would not notice alone.
        done.closed_here = self.control(tenant, user, ControlScope::User, "account deleted", keep).await?;
        // 3. Its names, addresses and devices are forgotten.
        self.ports.users.forget_identities(tenant, user).await?;
        self.ports.credentials.forget_credentials(tenant, user).await?;
        for device in self.ports.devices.list_devices(tenant, user).await? {
            self.ports.devices.delete_device(tenant, user, &device.device_id).await?;
        }
        if erased {
            let wipe = UserUpdate {
                updated: now_millis(),
                public: Some(Value::Null),
                trusted: Some(Value::Null),
                tags: Some(Vec::new()),
                defacs: None,
            };
            self.ports.users.update_user(tenant, user, &wipe).await?;
        }
        // 4. It leaves every topic.
        let skip = keep.unwrap_or(NO_SESSION);
        for sub in self.ports.subs.list_user_subs(tenant, user).await? {
            let stored = sub.topic.as_str();
            let wire = wire_name(stored, user);
            if stored.starts_with("p2p") {
                self.subscriptions(tenant).leave_p2p(user, stored, &wire, skip).await?;
                if let Some(peer) = palaver_core::p2p_peer(stored, user) {
                    let gone = MsgPres {
                        topic: "me".into(),
                        src: Some(user.to_string()),
                        what: "gone".into(),
                        ..MsgPres::default()
                    };
                    self.pres_to_many(tenant, vec![peer], gone, None, Some(user)).await;
                }
                done.topics_left += 1;
                continue;
            }
            let Some(topic) = self.stored_topics(tenant).find(stored).await? else { continue };
            if topic.owner == Some(user) {
                let members = self.stored_topics(tenant).delete_group(user, &topic, skip).await?;
                let gone = MsgPres { topic: "me".into(), src: Some(wire), what: "gone".into(), ..MsgPres::default() };
                let others = members.into_iter().filter(|m| *m != user).collect();
                self.pres_to_many(tenant, others, gone, None, Some(user)).await;
                done.groups_deleted += 1;
            } else {
                match self.subscriptions(tenant).unsubscribe(user, stored, &wire, skip).await {
                    Ok(()) | Err(ServiceError::NotFound) => done.topics_left += 1,
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(done)
    }
}

impl Service {
    /// Deletes an account on an admin's behalf (the `user.delete` command); see [`Inner::delete_account`].
    pub async fn delete_account(&self, tenant: TenantId, user: UserId, hard: bool) -> ServiceResult<AccountDeleted> {
        self.inner.delete_account(tenant, user, hard, ("admin", None), None).await
    }
}
