//! Business commands (friends, group governance, system notifications): the host side of the `/v1/im/` API.
//!
//! Every command runs the same four steps, in this order, so that a refused or failed command leaves nothing
//! half-written: check what the host guarantees whatever the rules say (the users and the group exist, the actor
//! is a member), gather the facts the rules need and ask them ([`BusinessRules`], the plugins), apply the change
//! through the store's atomic primitive, then tell every affected device on every node (`{info}` events, stored
//! notifications, dropped caches).
//!
//! [`BusinessRules`]: palaver_core::ports::BusinessRules

mod friends;
mod gate;
mod groups;
mod joins;
mod members;
mod notices;

pub(crate) use gate::Gate;
pub use gate::{BLOCKED, GROUP_MUTED};
pub(crate) use members::RosterEntry;

use crate::realtime::{BusinessTarget, Event};
use crate::{Inner, Service};
use palaver_core::ports::RuleVerdict;
use palaver_core::{StoreError, TenantId, UnixMillis, UserId};
use serde_json::{Value, json};
use std::sync::Arc;
use tracing::Instrument;

/// Why a business command failed: an HTTP status (a Tinode ctrl code), a stable upper-case reason and a
/// sentence for people.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status} {reason}: {message}")]
pub struct BizError {
    pub status: u16,
    pub reason: String,
    pub message: String,
}

impl BizError {
    pub(crate) fn new(status: u16, reason: &str, message: impl Into<String>) -> BizError {
        BizError { status, reason: reason.to_owned(), message: message.into() }
    }

    fn bad(reason: &str, message: impl Into<String>) -> BizError {
        BizError::new(400, reason, message)
    }
}

impl From<StoreError> for BizError {
    fn from(e: StoreError) -> BizError {
        match e {
            StoreError::NotFound => BizError::new(404, "NOT_FOUND", "no such record"),
            StoreError::Conflict(why) => BizError::new(409, "CONFLICT", why),
            StoreError::Unavailable(_) => BizError::new(503, "UNAVAILABLE", "storage is unavailable; try again"),
            StoreError::Internal(why) => {
                tracing::error!(error = %why, "business command hit a storage fault");
                BizError::new(500, "INTERNAL", "internal error")
            }
        }
    }
}

impl From<crate::ServiceError> for BizError {
    fn from(e: crate::ServiceError) -> BizError {
        BizError::new(e.code().code(), "UNAVAILABLE", e.text())
    }
}

pub type BizResult<T> = Result<T, BizError>;

/// The most items a list command returns, and the default.
const MAX_PAGE: usize = 100;
const DEFAULT_PAGE: usize = 20;

impl Service {
    /// Runs one business command by `actor` with JSON arguments (path, query and body fields together) and
    /// answers its JSON result.
    pub async fn run_command(&self, tenant: TenantId, actor: UserId, command: &str, args: Value) -> BizResult<Value> {
        let cx = Cx { svc: &self.inner, tenant, actor, command, args, now: crate::now_millis() };
        let family = command.split('.').next().unwrap_or_default();
        // Notifications are the host's own; every other command is off unless some plugin holds its rules.
        if family != "notification" && !self.inner.ports.business.rules.available(tenant, command) {
            return Err(off(command));
        }
        let span = tracing::debug_span!("business", %command, tenant = tenant.0);
        let started = std::time::Instant::now();
        let result = async {
            match family {
                "friend" | "block" => friends::run(&cx).await,
                "group" => groups::run(&cx).await,
                "notification" => notices::run(&cx).await,
                _ => Err(unknown(command)),
            }
        }
        .instrument(span)
        .await;
        let outcome = match &result {
            Ok(_) => "ok",
            Err(e) if e.status < 500 => "refused",
            Err(_) => "failed",
        };
        self.inner.metrics.business_command(outcome, started.elapsed());
        result
    }

    /// Stores a system notification for `user` and tells all of the user's devices on every node
    /// (`system_notification.created`). Plugins' notifications arrive here.
    pub async fn notify_user(
        &self,
        tenant: TenantId,
        user: UserId,
        kind: &str,
        content: Value,
        source_topic: Option<String>,
    ) -> BizResult<i64> {
        notices::store(&self.inner, tenant, user, kind, content, source_topic, None).await
    }
}

fn off(command: &str) -> BizError {
    BizError::new(
        404,
        "COMMAND_NOT_AVAILABLE",
        format!("{command} is not enabled for this tenant (no plugin handles it)"),
    )
}

fn unknown(command: &str) -> BizError {
    BizError::new(404, "COMMAND_NOT_AVAILABLE", format!("no command {command}"))
}

/// One command being run.
pub(crate) struct Cx<'a> {
    pub(crate) svc: &'a Arc<Inner>,
    pub(crate) tenant: TenantId,
    pub(crate) actor: UserId,
    pub(crate) command: &'a str,
    pub(crate) args: Value,
    pub(crate) now: UnixMillis,
}

impl Cx<'_> {
    /// An optional string argument; an empty or all-blank string counts as absent.
    pub(crate) fn str_arg(&self, key: &str) -> Option<&str> {
        self.args.get(key).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty())
    }

    /// A required string argument.
    pub(crate) fn need_str(&self, key: &str) -> BizResult<&str> {
        self.str_arg(key).ok_or_else(|| BizError::bad("ARGUMENT_REQUIRED", format!("`{key}` is required")))
    }

    /// A required user id argument (`usr…`).
    pub(crate) fn need_user(&self, key: &str) -> BizResult<UserId> {
        let raw = self.need_str(key)?;
        UserId::parse(raw).map_err(|_| BizError::bad("BAD_USER_ID", format!("`{key}` is not a user id: {raw}")))
    }

    /// A required numeric id argument (path parameters arrive as strings).
    pub(crate) fn need_id(&self, key: &str) -> BizResult<i64> {
        let v = self.args.get(key);
        v.and_then(Value::as_i64)
            .or_else(|| v.and_then(Value::as_str).and_then(|s| s.parse().ok()))
            .filter(|id| *id > 0)
            .ok_or_else(|| BizError::bad("BAD_ID", format!("`{key}` must be a positive integer")))
    }

    /// An optional boolean argument; query strings say `true`/`false`/`1`/`0`.
    pub(crate) fn bool_arg(&self, key: &str) -> BizResult<Option<bool>> {
        match self.args.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::Number(n)) if n.as_i64() == Some(0) || n.as_i64() == Some(1) => Ok(Some(n.as_i64() == Some(1))),
            Some(Value::String(s)) if s == "true" || s == "false" => Ok(Some(s == "true")),
            Some(_) => Err(BizError::bad("BAD_ARGUMENT", format!("`{key}` must be true or false"))),
        }
    }

    /// The page size asked for (`limit`), defaulted and capped.
    pub(crate) fn limit(&self) -> BizResult<usize> {
        match self.args.get("limit") {
            None | Some(Value::Null) => Ok(DEFAULT_PAGE),
            Some(v) => match v.as_u64() {
                Some(n) if n >= 1 => Ok((n as usize).min(MAX_PAGE)),
                _ => Err(BizError::bad("BAD_LIMIT", format!("`limit` must be 1–{MAX_PAGE}"))),
            },
        }
    }

    /// A numeric paging cursor (`cursor`), if given.
    pub(crate) fn id_cursor(&self) -> BizResult<Option<i64>> {
        match self.args.get("cursor") {
            None | Some(Value::Null) => Ok(None),
            Some(_) => self.need_id("cursor").map(Some),
        }
    }

    /// A user id paging cursor (`cursor`), if given.
    pub(crate) fn user_cursor(&self) -> BizResult<Option<UserId>> {
        match self.str_arg("cursor") {
            None => Ok(None),
            Some(_) => self.need_user("cursor").map(Some),
        }
    }

    /// Asks the tenant's rules whether the command may go ahead, with the facts the host gathered. The
    /// parameters the rules fix come back in the allow.
    pub(crate) async fn ask(&self, facts: Value) -> BizResult<Value> {
        let input = json!({ "args": self.args, "facts": facts });
        match self.svc.decide(self.tenant, self.actor, self.command, &input).await {
            RuleVerdict::Allow(v) => Ok(v),
            RuleVerdict::Refuse { status, reason, message } => {
                let status = if (400..600).contains(&status) { status } else { 500 };
                Err(BizError { status, reason, message })
            }
            RuleVerdict::NoRules => Err(off(self.command)),
        }
    }

    /// 404 `USER_NOT_FOUND` unless the user exists and is active.
    pub(crate) async fn user_exists(&self, user: UserId) -> BizResult<()> {
        match self.svc.ports.users.get_user(self.tenant, user).await? {
            Some(u) if u.state == palaver_core::RecordState::Active => Ok(()),
            _ => Err(BizError::new(404, "USER_NOT_FOUND", format!("no user {user}"))),
        }
    }

    /// Emits a business event from the actor to every device of `user`, on every node.
    pub(crate) fn to_user(&self, user: UserId, event: &str, payload: &Value) {
        self.svc.emit_business(self.tenant, BusinessTarget::User(user), event, payload, Some(self.actor));
    }

    /// Emits a business event from the actor to the sessions attached to a group, on every node.
    pub(crate) fn to_topic(&self, topic: &str, event: &str, payload: &Value) {
        self.svc.emit_business(self.tenant, BusinessTarget::Topic(topic.to_owned()), event, payload, Some(self.actor));
    }

    /// Drops the topic's cached members and gate state on every node, after a membership, role, mute or block
    /// change; it returns once this node's cache is dropped, so the caller's next publish sees the change.
    pub(crate) async fn invalidate(&self, topic: &str) {
        self.svc.members_changed(self.tenant, topic, Some(self.actor)).await;
    }

    /// Stores a notification for `user` (a failure is logged, never fails the command that already happened).
    pub(crate) async fn notify(&self, user: UserId, kind: &str, content: Value, topic: Option<&str>) {
        let from = Some(self.actor);
        if let Err(e) = notices::store(self.svc, self.tenant, user, kind, content, topic.map(str::to_owned), from).await
        {
            tracing::warn!(error = %e, %kind, "notification not stored");
        }
    }
}

impl Inner {
    /// Asks the tenant's rules about `command`, timing the call for `palaver_business_rule_*`.
    pub(crate) async fn decide(&self, tenant: TenantId, actor: UserId, command: &str, input: &Value) -> RuleVerdict {
        let started = std::time::Instant::now();
        let verdict = self.ports.business.rules.decide(tenant, actor, command, input).await;
        self.metrics.rule_call(started.elapsed());
        verdict
    }

    /// Delivers a business event here and publishes it for the other nodes.
    pub(crate) fn emit_business(
        &self,
        tenant: TenantId,
        to: BusinessTarget,
        event: &str,
        payload: &Value,
        from: Option<UserId>,
    ) -> usize {
        let ev = Event::Business { to: to.clone(), event: event.to_owned(), payload: payload.clone(), from };
        self.publish_event(tenant, &ev, None, from);
        self.deliver_business(tenant, &to, event, payload, from)
    }
}

/// A JSON list page: the items and the cursor of the next page (`null` on the last).
pub(crate) fn page<T>(key: &str, items: Vec<Value>, limit: usize, last: Option<T>) -> Value
where
    T: Into<Value>,
{
    let next = if items.len() >= limit { last.map(Into::into) } else { None };
    json!({ key: items, "next_cursor": next })
}

/// A time as the API shows it: RFC 3339 in UTC, as Tinode does.
pub(crate) fn ts(ms: UnixMillis) -> Value {
    serde_json::to_value(palaver_proto::Timestamp(ms)).unwrap_or(Value::Null)
}
