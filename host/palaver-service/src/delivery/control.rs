//! Session control across nodes: evicting a user's sessions, one device's, or
//! an older session of the same platform, and closing every session when credentials are revoked.
//!
//! Each control bumps a version counter in the shared store, then travels as an `Event::Control` (the
//! dispatcher's `control` publishes it; `usecases/eviction.rs` holds the admin's evictions). A session
//! remembers the versions it logged in under, so the rule "close if the control is newer than the session" is
//! the same whether the control arrives on the bus or is found by the periodic check that covers a lost
//! bus message; and a control older than the session (a stale one) never closes it.

use crate::delivery::hub::SessionHandle;
use crate::{Inner, render};
use palaver_core::ports::ControlScope;
use palaver_core::{SessionId, TenantId, UserId};
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
