//! Session control across nodes: evicting a user's sessions, one device's, or
//! an older session of the same platform, and closing every session when credentials are revoked.
//!
//! Each control bumps a version counter in the shared store, then travels as an [`Event::Control`]. A session
//! remembers the versions it logged in under, so the rule "close if the control is newer than the session" is
//! the same whether the control arrives on the bus or is found by the periodic check that covers a lost
//! bus message; and a control older than the session (a stale one) never closes it.

use crate::backbone::{audit_event, audit_record};
use crate::delivery::dispatch::Event;
use crate::delivery::hub::SessionHandle;
use crate::error::ServiceResult;
use crate::{Inner, Service, render};
use palaver_core::ports::{AccountChange, ControlScope};
use palaver_core::{RecordState, SessionId, TenantId, UserId};
use palaver_proto::Code;
use serde_json::json;
use std::sync::Arc;

/// The session's own `node|sid`, as a control's `except` names it.
pub(crate) fn session_ref(node: &str, sid: SessionId) -> String {
    format!("{node}|{sid}")
}

impl Inner {
    /// Closes `session` for a control: `{ctrl 205 "evicted" params.reason}`, then the connection.
    pub(crate) fn close_controlled(&self, session: &SessionHandle, reason: &str, via: &'static str) {
        let frame =
            render::ctrl_frame(None, None, Code::Evicted, None, crate::now_millis(), Some(json!({ "reason": reason })));
        session.push(frame);
        session.close();
        self.metrics.session_controlled(via);
    }

    /// Applies a control to this node's sessions of `user`. Returns how many it closed.
    pub(crate) fn apply_control(
        &self,
        tenant: TenantId,
        user: UserId,
        scope: &ControlScope,
        version: u64,
        reason: &str,
        except: Option<&str>,
    ) -> usize {
        let mut sessions = Vec::new();
        self.hub.for_each_user_session(tenant, user, |s| sessions.push(s.clone()));
        let mut closed = 0;
        for s in sessions {
            let me = session_ref(&self.cfg.node_id, s.sid);
            if except == Some(me.as_str()) {
                s.control.lock().adopt(scope, version);
                continue;
            }
            let close = s.control.lock().closes(scope, version);
            if close {
                self.close_controlled(&s, reason, "event");
                closed += 1;
            }
        }
        closed
    }

    /// Bumps the control version of `scope` and closes every matching session older than it, on every node,
    /// except `except` (a session of this node that made the change). Returns the sessions closed here.
    pub(crate) async fn control(
        &self,
        tenant: TenantId,
        user: UserId,
        scope: ControlScope,
        reason: &str,
        except: Option<SessionId>,
    ) -> ServiceResult<usize> {
        let version = self.ports.control.bump(tenant, user, &scope).await?;
        let except = except.map(|sid| session_ref(&self.cfg.node_id, sid));
        let event =
            Event::Control { user, scope: scope.clone(), version, reason: reason.to_owned(), except: except.clone() };
        self.publish_event(tenant, &event, None, None);
        Ok(self.apply_control(tenant, user, &scope, version, reason, except.as_deref()))
    }

    /// Sets the slots (device, platform) a new login is judged by and reads their current versions, so that
    /// only controls newer than the login close it.
    pub(crate) async fn start_control(&self, session: &SessionHandle, user: UserId, slots: Vec<String>) {
        session.control.lock().set_slots(slots.clone());
        match self.ports.control.versions(session.tenant, user, &slots).await {
            Ok(v) => session.control.lock().set_versions(v),
            Err(e) => tracing::debug!(error = %e, "control versions unavailable at login"),
        }
    }

    /// Reads the current versions for `session` and closes it if a control it missed is newer.
    pub(crate) async fn check_control(&self, session: &Arc<SessionHandle>, user: UserId) {
        let slots = session.control.lock().slots();
        match self.ports.control.versions(session.tenant, user, &slots).await {
            Ok(current) => {
                let stale = session.control.lock().check(current);
                if stale {
                    self.close_controlled(session, "session revoked", "check");
                }
            }
            Err(e) => tracing::debug!(error = %e, "control versions unavailable"),
        }
    }
}

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
