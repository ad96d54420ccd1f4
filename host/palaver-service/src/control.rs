//! Session control across nodes (seed 002 §6.5, seed 003 §9.3): evicting a user's sessions, one device's, or
//! an older session of the same platform, and closing every session when credentials are revoked.
//!
//! Each control bumps a version counter in the shared store, then travels as an [`Event::Control`]. A session
//! remembers the versions it logged in under, so the rule "close if the control is newer than the session" is
//! the same whether the control arrives on the bus or is found by the periodic check that covers a lost
//! bus message; and a control older than the session (a stale one) never closes it.

use crate::error::ServiceResult;
use crate::hub::SessionHandle;
use crate::realtime::Event;
use crate::{Inner, Service, render};
use palaver_core::ports::{ControlScope, ControlVersions};
use palaver_core::{RecordState, SessionId, TenantId, UserId};
use palaver_proto::Code;
use serde_json::json;
use std::sync::Arc;

/// What a session is judged by: its device slots (`dev` from `{hi}`, then `platform:<platf>`) and the versions
/// read when it logged in. `None` until they could be read: the first successful read becomes the baseline.
#[derive(Debug, Default)]
pub(crate) struct ControlState {
    slots: Vec<String>,
    versions: Option<ControlVersions>,
}

impl ControlState {
    /// Sets the device slots at login.
    pub(crate) fn set_slots(&mut self, slots: Vec<String>) {
        self.slots = slots;
    }

    pub(crate) fn slots(&self) -> Vec<String> {
        self.slots.clone()
    }

    /// Records the versions read at login (or at the first successful check).
    pub(crate) fn set_versions(&mut self, v: ControlVersions) {
        self.versions = Some(v);
    }

    /// True if the session is addressed by `scope` (every session is addressed by `User`).
    fn addressed(&self, scope: &ControlScope) -> bool {
        match scope {
            ControlScope::User => true,
            ControlScope::Device(d) => self.slots.contains(d),
        }
    }

    /// The session's version for `scope`, if known.
    fn version(&self, scope: &ControlScope) -> Option<u64> {
        let v = self.versions.as_ref()?;
        match scope {
            ControlScope::User => Some(v.user),
            ControlScope::Device(d) => self.slots.iter().position(|s| s == d).and_then(|i| v.devices.get(i).copied()),
        }
    }

    /// True if a control of `version` for `scope` must close this session.
    pub(crate) fn closes(&self, scope: &ControlScope, version: u64) -> bool {
        // A session whose versions were never read cannot prove it is newer than the control: close it.
        self.addressed(scope) && self.version(scope).is_none_or(|mine| mine < version)
    }

    /// Raises the session's version for `scope` to `version`: the session that made the change survives it.
    pub(crate) fn adopt(&mut self, scope: &ControlScope, version: u64) {
        let slots = self.slots.clone();
        let Some(v) = self.versions.as_mut() else { return };
        match scope {
            ControlScope::User => v.user = v.user.max(version),
            ControlScope::Device(d) => {
                if let Some(i) = slots.iter().position(|s| s == d)
                    && let Some(slot) = v.devices.get_mut(i)
                {
                    *slot = (*slot).max(version);
                }
            }
        }
    }

    /// Compares freshly read versions with the session's; true if any is newer (a control the bus lost).
    /// Unknown versions adopt `current` as the baseline instead.
    pub(crate) fn check(&mut self, current: ControlVersions) -> bool {
        match &self.versions {
            None => {
                self.versions = Some(current);
                false
            }
            Some(mine) => {
                current.user > mine.user || current.devices.iter().zip(&mine.devices).any(|(now, was)| now > was)
            }
        }
    }
}

/// The session's own `node|sid`, as a control's `except` names it.
pub(crate) fn session_ref(node: &str, sid: SessionId) -> String {
    format!("{node}|{sid}")
}

impl Inner {
    /// Closes `session` for a control: `{ctrl 205 "evicted" params.reason}`, then the connection.
    pub(crate) fn close_controlled(&self, session: &SessionHandle, reason: &str, via: &'static str) {
        let frame =
            render::ctrl_frame(None, None, Code::Evicted, crate::now_millis(), Some(json!({ "reason": reason })));
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
        if ev.revoke_tokens {
            inner.ports.users.revoke_tokens(tenant, user, None).await?;
        }
        let scope = ev.device.map_or(ControlScope::User, ControlScope::Device);
        let reason = if ev.reason.is_empty() { "evicted" } else { ev.reason.as_str() };
        inner.control(tenant, user, scope, reason, None).await
    }

    /// Suspends (or reactivates) an account. Suspending revokes its tokens and closes its sessions everywhere.
    pub async fn set_account_state(&self, tenant: TenantId, user: UserId, active: bool) -> ServiceResult<usize> {
        let inner = &self.inner;
        let state = if active { RecordState::Active } else { RecordState::Suspended };
        inner.ports.users.revoke_tokens(tenant, user, Some(state)).await?;
        if active {
            return Ok(0);
        }
        inner.control(tenant, user, ControlScope::User, "account disabled", None).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(slots: &[&str], user: u64, devices: &[u64]) -> ControlState {
        ControlState {
            slots: slots.iter().map(|s| s.to_string()).collect(),
            versions: Some(ControlVersions { user, devices: devices.to_vec() }),
        }
    }

    #[test]
    fn only_newer_controls_close_and_only_addressed_sessions() {
        let s = state(&["phone1", "platform:ios"], 2, &[1, 4]);
        assert!(!s.closes(&ControlScope::User, 2), "a stale control never closes a newer session");
        assert!(s.closes(&ControlScope::User, 3));
        assert!(s.closes(&ControlScope::Device("phone1".into()), 2));
        assert!(!s.closes(&ControlScope::Device("platform:ios".into()), 4));
        assert!(!s.closes(&ControlScope::Device("tablet".into()), 99), "another device's control");
        assert!(ControlState::default().closes(&ControlScope::User, 1), "unknown versions cannot prove newer");
    }

    #[test]
    fn adopting_exempts_the_changer_and_check_finds_missed_controls() {
        let mut s = state(&["phone1"], 2, &[1]);
        s.adopt(&ControlScope::User, 5);
        assert!(!s.closes(&ControlScope::User, 5));
        assert!(!s.check(ControlVersions { user: 5, devices: vec![1] }));
        assert!(s.check(ControlVersions { user: 5, devices: vec![2] }), "a device control the bus lost");
        let mut fresh = ControlState::default();
        assert!(!fresh.check(ControlVersions { user: 9, devices: vec![] }), "the first read is the baseline");
        assert!(!fresh.closes(&ControlScope::User, 9));
    }
}
