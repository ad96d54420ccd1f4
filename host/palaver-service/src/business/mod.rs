//! Business commands (friends, group governance, system notifications): the host side of the `/v1/im/` API.
//!
//! Every command runs the same four steps, in this order, so that a refused or failed command leaves nothing
//! half-written: check what the host guarantees whatever the rules say (the users and the group exist, the actor
//! is a member), gather the facts the rules need and ask them ([`BusinessRules`], the plugins), apply the change
//! through the store's atomic primitive, then tell every affected device on every node (`{info}` events, stored
//! notifications, dropped caches).
//!
//! [`BusinessRules`]: palaver_core::ports::BusinessRules

mod client;
mod friends;
pub(crate) mod gate;
mod group;
mod groups;
mod joins;
mod members;
mod notices;
mod reports;

pub(crate) use gate::Gate;
pub(crate) use members::RosterEntry;

use crate::delivery::event::BusinessTarget;
use crate::{Inner, Service};
use palaver_api::{CommandName, Facts, Family, Reason};
use palaver_core::ports::RuleVerdict;
use palaver_core::{StoreError, TenantId, UnixMillis, UserId};
use serde_json::{Value, json};
use std::sync::Arc;
use tracing::Instrument;

/// Why a business command failed: a stable reason from the reasons table (which fixes the HTTP status and
/// ctrl code) and a sentence for people.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} {reason}: {message}", reason.status())]
pub struct BizError {
    pub reason: Reason,
    pub message: String,
}

impl BizError {
    pub(crate) fn new(reason: Reason, message: impl Into<String>) -> BizError {
        BizError { reason, message: message.into() }
    }

    /// The HTTP status (the reason's ctrl code).
    pub fn status(&self) -> u16 {
        self.reason.status()
    }
}

impl From<StoreError> for BizError {
    fn from(e: StoreError) -> BizError {
        match e {
            StoreError::NotFound => BizError::new(Reason::NotFound, "no such record"),
            StoreError::Conflict(why) => BizError::new(Reason::Conflict, why),
            StoreError::Unavailable(_) => BizError::new(Reason::Unavailable, "storage is unavailable; try again"),
            StoreError::Internal(why) => {
                tracing::error!(error = %why, "business command hit a storage fault");
                BizError::new(Reason::Internal, "internal error")
            }
        }
    }
}

/// Each service error keeps its own reason (a missing user stays `USER_NOT_FOUND`, a throttle `RATE_LIMITED`).
impl From<crate::ServiceError> for BizError {
    fn from(e: crate::ServiceError) -> BizError {
        BizError::new(e.reason(), e.text())
    }
}

/// A refusal from the rules: a reason in the table keeps it (the table's status wins over the plugin's, so a
/// reason always means one status); any other reason is shown as `RULE_REFUSED` (or `PLUGIN_UNAVAILABLE` for
/// a 5xx) with the plugin's name for it in the message, so a client only ever sees reasons of the table.
fn refusal(command: impl std::fmt::Display, status: u16, reason: &str, message: String) -> BizError {
    match Reason::parse(reason) {
        Some(r) => {
            if r.status() != status {
                tracing::warn!(command = %command, %reason, status, "rule refused with a status its reason does not have");
            }
            BizError::new(r, message)
        }
        None => {
            tracing::warn!(command = %command, %reason, "rule refused with a reason outside the table");
            let r = if status >= 500 { Reason::PluginUnavailable } else { Reason::RuleRefused };
            BizError::new(r, format!("{reason}: {message}"))
        }
    }
}

pub type BizResult<T> = Result<T, BizError>;

/// The most items a list command returns, and the default.
const MAX_PAGE: usize = 100;
const DEFAULT_PAGE: usize = 20;

impl Service {
    /// Runs one business command by `actor` with JSON arguments (path, query and body fields together) and
    /// answers its JSON result.
    pub async fn run_command(
        &self,
        tenant: TenantId,
        actor: UserId,
        command: CommandName,
        args: Value,
    ) -> BizResult<Value> {
        let cx = Cx { svc: &self.inner, tenant, actor, admin: false, command, args, now: crate::now_millis() };
        let family = command.family();
        // Notifications and reports are the host's own; every other command is off unless some plugin holds its
        // rules.
        if family.asks_rules() && !self.inner.rules_hold(tenant, command) {
            return Err(off(command));
        }
        let span = tracing::debug_span!("business", %command, tenant = tenant.0);
        let started = std::time::Instant::now();
        let result = async {
            match family {
                Family::Friends => friends::run(&cx).await,
                Family::Groups => groups::run(&cx).await,
                Family::Notifications => notices::run(&cx).await,
                Family::Reports => reports::run(&cx).await,
            }
        }
        .instrument(span)
        .await;
        self.inner.metrics.business_command(outcome(&result), started.elapsed());
        result
    }

    /// Runs a group governance command (`group.member.remove`, `group.role.set`, `group.mute.set`,
    /// `group.mute.clear`) for the Admin side: the same code as the `/v1/im/` command, as [`Cx::admin`] says.
    pub(crate) async fn run_as_admin(&self, tenant: TenantId, command: CommandName, args: Value) -> BizResult<Value> {
        let cx = Cx {
            svc: &self.inner,
            tenant,
            actor: crate::ADMIN_ACTOR,
            admin: true,
            command,
            args,
            now: crate::now_millis(),
        };
        match command.family() {
            Family::Groups => groups::run(&cx).await,
            _ => Err(unknown(command)),
        }
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

/// How a command ended, as `palaver_business_commands_total` counts it: `ok`, `refused` (4xx) or `failed`.
fn outcome(result: &BizResult<Value>) -> &'static str {
    match result {
        Ok(_) => "ok",
        Err(e) if e.status() < 500 => "refused",
        Err(_) => "failed",
    }
}

fn off(command: CommandName) -> BizError {
    BizError::new(
        Reason::CommandNotAvailable,
        format!("{command} is not enabled for this tenant (no plugin handles it)"),
    )
}

/// A command dispatched to a family that does not run it (a bug in the dispatch, answered, never a panic).
fn unknown(command: CommandName) -> BizError {
    BizError::new(Reason::UnknownCommand, format!("{command} is not run here"))
}

/// One command being run.
pub(crate) struct Cx<'a> {
    pub(crate) svc: &'a Arc<Inner>,
    pub(crate) tenant: TenantId,
    pub(crate) actor: UserId,
    /// Run by the Admin side (an admin command), not by a user: no membership is required, the rules are not
    /// asked (the operator overrides them; what the host guarantees still holds), and events carry no `from`.
    pub(crate) admin: bool,
    pub(crate) command: CommandName,
    pub(crate) args: Value,
    pub(crate) now: UnixMillis,
}

impl Cx<'_> {
    /// The user events and notifications name as their sender: the actor, or nobody for an admin command.
    pub(crate) fn from(&self) -> Option<UserId> {
        (!self.admin).then_some(self.actor)
    }

    /// An optional string argument; an empty or all-blank string counts as absent.
    pub(crate) fn str_arg(&self, key: &str) -> Option<&str> {
        self.args.get(key).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty())
    }

    /// A required string argument.
    pub(crate) fn need_str(&self, key: &str) -> BizResult<&str> {
        self.str_arg(key).ok_or_else(|| BizError::new(Reason::ArgumentRequired, format!("`{key}` is required")))
    }

    /// A required user id argument (`usr…`).
    pub(crate) fn need_user(&self, key: &str) -> BizResult<UserId> {
        let raw = self.need_str(key)?;
        UserId::parse(raw).map_err(|_| BizError::new(Reason::BadUserId, format!("`{key}` is not a user id: {raw}")))
    }

    /// A required numeric id argument (path parameters arrive as strings).
    pub(crate) fn need_id(&self, key: &str) -> BizResult<i64> {
        let v = self.args.get(key);
        v.and_then(Value::as_i64)
            .or_else(|| v.and_then(Value::as_str).and_then(|s| s.parse().ok()))
            .filter(|id| *id > 0)
            .ok_or_else(|| BizError::new(Reason::BadId, format!("`{key}` must be a positive integer")))
    }

    /// An optional boolean argument; query strings say `true`/`false`/`1`/`0`.
    pub(crate) fn bool_arg(&self, key: &str) -> BizResult<Option<bool>> {
        match self.args.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::Number(n)) if n.as_i64() == Some(0) || n.as_i64() == Some(1) => Ok(Some(n.as_i64() == Some(1))),
            Some(Value::String(s)) if s == "true" || s == "false" => Ok(Some(s == "true")),
            Some(_) => Err(BizError::new(Reason::BadArgument, format!("`{key}` must be true or false"))),
        }
    }

    /// The page size asked for (`limit`), defaulted and capped.
    pub(crate) fn limit(&self) -> BizResult<usize> {
        match self.args.get("limit") {
            None | Some(Value::Null) => Ok(DEFAULT_PAGE),
            Some(v) => match v.as_u64() {
                Some(n) if n >= 1 => Ok((n as usize).min(MAX_PAGE)),
                _ => Err(BizError::new(Reason::BadLimit, format!("`limit` must be 1–{MAX_PAGE}"))),
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
    pub(crate) async fn ask(&self, facts: Facts) -> BizResult<Value> {
        // The facts' type is the command's (the commands table); another is a host bug, refused, not sent.
        if facts.command() != self.command {
            tracing::error!(command = %self.command, facts = %facts.command(), "facts of another command");
            return Err(BizError::new(Reason::Internal, "internal error"));
        }
        if self.admin {
            return Ok(json!({}));
        }
        let input = facts.rule_input(&self.args);
        match self.svc.decide(self.tenant, self.actor, self.command.name(), &input).await {
            RuleVerdict::Allow(v) => Ok(v),
            RuleVerdict::Refuse { status, reason, message } => Err(refusal(self.command, status, &reason, message)),
            RuleVerdict::NoRules => Err(off(self.command)),
        }
    }

    /// 404 `USER_NOT_FOUND` unless the user exists and is active.
    pub(crate) async fn user_exists(&self, user: UserId) -> BizResult<()> {
        match self.svc.accounts(self.tenant).user(user).await? {
            Some(u) if u.state == palaver_core::RecordState::Active => Ok(()),
            _ => Err(BizError::new(Reason::UserNotFound, format!("no user {user}"))),
        }
    }

    /// Emits a business event from the actor to every device of `user`, on every node.
    pub(crate) fn to_user(&self, user: UserId, event: &str, payload: &Value) {
        self.svc.emit_business(self.tenant, BusinessTarget::User(user), event, payload, self.from());
    }

    /// Emits a business event from the actor to the sessions attached to a group, on every node.
    pub(crate) fn to_topic(&self, topic: &str, event: &str, payload: &Value) {
        self.svc.emit_business(self.tenant, BusinessTarget::Topic(topic.to_owned()), event, payload, self.from());
    }

    /// Drops the topic's cached members and gate state on every node, after a membership, role, mute or block
    /// change; it returns once this node's cache is dropped, so the caller's next publish sees the change.
    pub(crate) async fn invalidate(&self, topic: &str) {
        self.svc.members_changed(self.tenant, topic, self.from()).await;
    }

    /// Stores a notification for `user` (a failure is logged, never fails the command that already happened).
    pub(crate) async fn notify(&self, user: UserId, kind: &str, content: Value, topic: Option<&str>) {
        let from = self.from();
        if let Err(e) = notices::store(self.svc, self.tenant, user, kind, content, topic.map(str::to_owned), from).await
        {
            tracing::warn!(error = %e, %kind, "notification not stored");
        }
    }
}

/// The cursor of the next page: the last item's, unless this page is the last (shorter than asked for).
pub(crate) fn next_cursor<T>(len: usize, limit: usize, last: Option<T>) -> Option<T> {
    if len >= limit { last } else { None }
}

/// A response body as JSON (`palaver_api::bodies`, whose types the OpenAPI document's schemas come from).
pub(crate) fn body<T: serde::Serialize>(b: &T) -> Value {
    // The bodies are plain structs of strings, numbers and JSON values: serializing cannot fail.
    serde_json::to_value(b).unwrap_or(Value::Null)
}

/// A time as the API shows it: RFC 3339 in UTC, as Tinode does.
pub(crate) fn time(ms: UnixMillis) -> palaver_proto::Timestamp {
    palaver_proto::Timestamp(ms)
}

/// A time as JSON, for event payloads.
pub(crate) fn ts(ms: UnixMillis) -> Value {
    serde_json::to_value(palaver_proto::Timestamp(ms)).unwrap_or(Value::Null)
}
