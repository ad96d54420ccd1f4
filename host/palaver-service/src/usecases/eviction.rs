//! The admin's controls over a user's sessions: evicting them (all, or one device's), and suspending or
//! reactivating an account, which revokes its tokens and closes its sessions on every node. Each commits its
//! audit event with its state change, then closes sessions through the dispatcher's `control`.

use crate::Service;
use crate::backbone::{audit_event, audit_record};
use crate::error::ServiceResult;
use palaver_core::ports::{AccountChange, ControlScope};
use palaver_core::{RecordState, TenantId, UserId};

/// What an eviction asked for, as the admin API takes it.
#[derive(Debug, Clone, Default)]
pub struct Eviction {
    /// Only the sessions of this device id (`dev` in `{hi}`), or of a platform slot `platform:<name>`.
    pub device: Option<String>,
    /// Also revoke every token of the user (`auth_version`), so that no device logs back in with one.
    pub revoke_tokens: bool,
    /// Why, as the closed sessions are told (`params.reason`).
    pub reason: String,
}

impl Service {
    /// Evicts a user's sessions (all, or one device's) on every node. Returns how many closed on this node.
    pub async fn evict(&self, tenant: TenantId, user: UserId, ev: Eviction) -> ServiceResult<usize> {
        let inner = &self.inner;
        let reason = if ev.reason.is_empty() { "evicted" } else { ev.reason.as_str() };
        let detail = serde_json::json!({ "device": ev.device, "revoke_tokens": ev.revoke_tokens, "reason": reason });
        let audit =
            audit_event(tenant, "session.evict", ("admin", None), ("user", user.to_string())).with_detail(detail);
        let owed = [audit_record(&audit)];
        if ev.revoke_tokens {
            // The revocation is the eviction's durable state change, and its audit event commits with it.
            inner.ports.users.revoke_tokens(tenant, user, None, inner.owed(tenant, &owed)).await?;
            inner.owed_written();
        }
        let scope = ev.device.clone().map_or(ControlScope::User, ControlScope::Device);
        let closed = inner.control(tenant, user, scope, reason, None).await?;
        if !ev.revoke_tokens {
            // Closing sessions changes no stored state (the control versions are short state), so the event
            // follows the effect.
            inner.owe(tenant, &owed).await;
        }
        Ok(closed)
    }

    /// Suspends (or reactivates) an account. Suspending revokes its tokens and closes its sessions everywhere.
    pub async fn set_account_state(&self, tenant: TenantId, user: UserId, active: bool) -> ServiceResult<usize> {
        let inner = &self.inner;
        let state = if active { RecordState::Active } else { RecordState::Suspended };
        let (action, word) = if active { ("user.enable", "active") } else { ("user.disable", "suspended") };
        // The audit event and the Admin side's summary commit with the state change, in its transaction.
        let audit = audit_event(tenant, action, ("admin", None), ("user", user.to_string()))
            .with_detail(serde_json::json!({ "state": word }));
        let summary = crate::Summary::new("user.state", "user", user.to_string(), serde_json::json!({ "state": word }));
        let mut owed = vec![audit_record(&audit), summary.record(tenant)];
        let change = if active { AccountChange::Reactivated } else { AccountChange::Suspended };
        owed.extend(inner.account_event(tenant, user, None, change).await);
        // A deleted account stays deleted: the store refuses the state as `NotFound`, in the same write.
        inner.ports.users.revoke_tokens(tenant, user, Some(state), inner.owed(tenant, &owed)).await?;
        inner.owed_written();
        let closed =
            if active { 0 } else { inner.control(tenant, user, ControlScope::User, "account disabled", None).await? };
        Ok(closed)
    }
}
