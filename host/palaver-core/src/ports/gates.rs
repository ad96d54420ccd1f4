//! Gates plugins keep on the request path: `on-login` admits a session's login after its credentials matched, and
//! `before-subscribe` admits a join on one's own (a `{sub}` to a group the user is not yet a member of, or the
//! `group.join.request` command joining an open group). A refused login leaves the session unauthenticated (a sign-up's account stays, not
//! logged in); a refused join stores nothing.

use crate::{TenantId, TopicKind, UserId};

/// One login about to succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginContext {
    pub tenant: TenantId,
    /// The user whose credentials matched.
    pub user: UserId,
    pub session: String,
    pub node: String,
    /// `basic`, `token`, …
    pub scheme: String,
    /// The client's address without its port; empty when unknown.
    pub remote_addr: String,
    /// The client's `{hi ua}`; empty when none.
    pub user_agent: String,
}

/// One join about to happen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinContext {
    pub tenant: TenantId,
    /// The stored topic name (`grp…`, `p2p…`).
    pub topic: String,
    pub kind: TopicKind,
    pub user: UserId,
    pub session: String,
    pub node: String,
    /// The mode the user asked for, in Tinode's letters; empty when none.
    pub want: String,
    /// The mode the host is about to grant, in Tinode's letters.
    pub given: String,
}

/// A gate's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateVerdict {
    /// Go on.
    Allow,
    /// Refuse with ctrl `code` and `reason`.
    Reject { code: u16, reason: String },
    /// Join with this mode (Tinode letters), a subset of the one the host chose. Only from a join gate.
    Restrict { mode: String },
}

/// The gates. Implementations apply their own failure policy, as [`crate::ports::PublishHook`] does.
#[async_trait::async_trait]
pub trait GateHook: Send + Sync {
    /// False when no login gate runs for `tenant`: the login path then skips building the input.
    fn gates_login(&self, tenant: TenantId) -> bool;

    /// False when no join gate runs for `tenant`.
    fn gates_join(&self, tenant: TenantId) -> bool;

    /// The verdict on one login: `Allow` or `Reject`.
    async fn on_login(&self, ctx: &LoginContext) -> GateVerdict;

    /// The verdict on one join.
    async fn before_subscribe(&self, ctx: &JoinContext) -> GateVerdict;
}

#[async_trait::async_trait]
impl GateHook for crate::ports::NoHooks {
    fn gates_login(&self, _: TenantId) -> bool {
        false
    }

    fn gates_join(&self, _: TenantId) -> bool {
        false
    }

    async fn on_login(&self, _: &LoginContext) -> GateVerdict {
        GateVerdict::Allow
    }

    async fn before_subscribe(&self, _: &JoinContext) -> GateVerdict {
        GateVerdict::Allow
    }
}
