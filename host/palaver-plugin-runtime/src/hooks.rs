//! [`PluginHooks`]: the plugins as palaver-core's `PublishHook` port, and the entry point for business commands.
//! Every plugin enabled for the tenant runs in priority order; the first reject or hold wins, rewrites chain (each
//! plugin sees the content as the one before it left it), and a faulted or skipped plugin answers with its
//! failure policy for the tenant: fail-closed (the default) rejects with a retryable 503, fail-open acts as allow.
//! The same type is the `PushHook` port, over the plugins' `before-push` (always fail-open), and the `ScanHook`
//! port, over the plugins' `scan-file` (always fail-closed), and, in `gates.rs` and `listeners.rs`, the `GateHook`
//! and `EventHook` ports.

use crate::bindings::head_text;
use crate::dispatch::Ran;
use crate::error::CommandError;
use crate::manifest::{FailurePolicy, Hook};
use crate::registry::{PluginRegistry, Slot};
use crate::version::PluginVersion;
use palaver_api::Reason;
use palaver_core::ports::{
    ClientCommandDoc, ClientCommandState, PublishContext, PublishHook, PublishVerdict, PushContext, PushDecision,
    PushHook, ScanContext, ScanHook, ScanVerdict,
};
use palaver_core::{TenantId, UserId};
use serde::Serialize;
use serde_json::{Map, Value};
use std::sync::Arc;

/// Who runs a business command, from where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandContext {
    pub tenant: TenantId,
    pub actor: UserId,
    /// The actor's session, empty for an HTTP call.
    pub session: String,
    /// The node, empty for the runtime's own.
    pub node: String,
}

impl CommandContext {
    /// A command by `actor` in `tenant`, from no particular session.
    pub fn new(tenant: TenantId, actor: UserId) -> CommandContext {
        CommandContext { tenant, actor, session: String::new(), node: String::new() }
    }
}

/// What a business command gave.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum CommandOutcome {
    /// Done, with a JSON result.
    Ok(Value),
    /// Refused: a Tinode ctrl code, a stable reason code (such as `FRIEND_REQUEST_LIMIT`, from `palaver_api::Reason`) and a message.
    Rejected { code: u16, reason_code: String, message: String },
}

/// The code a fail-closed hook answers with: retryable, like any other unavailable dependency.
pub const UNAVAILABLE: u16 = 503;

/// The plugin platform as the server sees it.
#[derive(Clone)]
pub struct PluginHooks {
    registry: Arc<PluginRegistry>,
}

impl PluginHooks {
    /// Hooks over the plugins of `registry`.
    pub fn new(registry: Arc<PluginRegistry>) -> PluginHooks {
        PluginHooks { registry }
    }

    /// The registry behind the hooks, for admin calls.
    pub fn registry(&self) -> &Arc<PluginRegistry> {
        &self.registry
    }

    /// True if a plugin enabled for `tenant` handles business command `name`: a lookup, no call.
    pub fn handles_command(&self, tenant: TenantId, name: &str) -> bool {
        self.registry.order.load_full().iter().any(|slot| {
            slot.version_for(tenant).is_some_and(|v| {
                v.manifest.handles_command(name)
                    && self.registry.tenants.enabled(tenant, &slot.name, v.manifest.enabled_by_default)
            })
        })
    }

    /// Runs business command `name` with JSON `args` on the first plugin (by priority) enabled for the tenant
    /// that handles it.
    pub async fn run_command(
        &self,
        ctx: &CommandContext,
        name: &str,
        args: &Value,
    ) -> Result<CommandOutcome, CommandError> {
        self.run_command_text(ctx, name, &args.to_string()).await
    }

    /// [`PluginHooks::run_command`] with the arguments already written as JSON text, as the plugin receives
    /// them: the host's business commands write their input once, and nothing serialises it again.
    pub async fn run_command_text(
        &self,
        ctx: &CommandContext,
        name: &str,
        args: &str,
    ) -> Result<CommandOutcome, CommandError> {
        let order = self.registry.order.load_full();
        for slot in order.iter() {
            let Some(v) = slot.version_for(ctx.tenant) else { continue };
            let m = &v.manifest;
            if !m.handles_command(name) || !self.registry.tenants.enabled(ctx.tenant, &slot.name, m.enabled_by_default)
            {
                continue;
            }
            return Ok(self.command_on(slot, &v, ctx, name, args, false).await);
        }
        Err(CommandError::UnknownCommand(name.to_owned()))
    }

    /// Runs `name` on one plugin version; a fault or a skip answers with the hook's failure policy, or always
    /// fails closed (`closed`): a client's own command has nothing to let through, so `null` would read as success.
    async fn command_on(
        &self,
        slot: &Slot,
        v: &Arc<PluginVersion>,
        ctx: &CommandContext,
        name: &str,
        args: &str,
        closed: bool,
    ) -> CommandOutcome {
        match self.registry.run_command_on(slot, v, ctx, name, args).await {
            Ran::Done(o) => o,
            Ran::Failed(_) | Ran::Skipped => match self.registry.policy_for(slot, v, Hook::OnCommand, ctx.tenant) {
                FailurePolicy::Open if !closed => CommandOutcome::Ok(Value::Null),
                FailurePolicy::Open | FailurePolicy::Closed => CommandOutcome::Rejected {
                    code: Reason::PluginUnavailable.status(),
                    reason_code: Reason::PluginUnavailable.name().to_owned(),
                    message: format!("plugin {} is unavailable; try again later", slot.name),
                },
            },
        }
    }

    /// Whether plugin `plugin` offers `command` to clients (its manifest's `client_commands`), and whether it
    /// runs for `tenant`: a lookup, no call.
    pub fn client_command(&self, tenant: TenantId, plugin: &str, command: &str) -> ClientCommandState {
        let order = self.registry.order.load_full();
        let Some((slot, v)) = order
            .iter()
            .find(|s| s.name == plugin)
            .and_then(|s| s.version_for(tenant).map(|v| (s, v)))
            .filter(|(_, v)| v.manifest.client_commands.contains_key(command))
        else {
            return ClientCommandState::Unknown;
        };
        if self.registry.tenants.enabled(tenant, &slot.name, v.manifest.enabled_by_default) {
            ClientCommandState::On
        } else {
            ClientCommandState::Off
        }
    }

    /// Runs a command plugin `plugin` offers to clients, with the client's arguments, on the plugin's live
    /// version. [`CommandError::UnknownCommand`] if the plugin does not offer it or is off for the tenant.
    pub async fn run_client_command(
        &self,
        ctx: &CommandContext,
        plugin: &str,
        command: &str,
        args: &Value,
    ) -> Result<CommandOutcome, CommandError> {
        let order = self.registry.order.load_full();
        let found = order.iter().find(|s| s.name == plugin).and_then(|s| s.version_for(ctx.tenant).map(|v| (s, v)));
        match found {
            Some((slot, v))
                if v.manifest.client_commands.contains_key(command)
                    && self.registry.tenants.enabled(ctx.tenant, &slot.name, v.manifest.enabled_by_default) =>
            {
                Ok(self.command_on(slot, &v, ctx, command, &args.to_string(), true).await)
            }
            _ => Err(CommandError::UnknownCommand(command.to_owned())),
        }
    }

    /// Every command the plugin versions that run (live and canary) offer to clients, by plugin and name; a
    /// command both offer is listed once, as the live version describes it.
    pub fn client_commands(&self) -> Vec<ClientCommandDoc> {
        let order = self.registry.order.load_full();
        let mut docs: Vec<ClientCommandDoc> = order
            .iter()
            .flat_map(|s| s.versions())
            .flat_map(|v| {
                v.manifest
                    .client_commands
                    .iter()
                    .map(|(name, c)| ClientCommandDoc {
                        plugin: v.manifest.name.clone(),
                        command: name.clone(),
                        summary: c.summary.clone(),
                        args: c.args.clone(),
                        result: c.result.clone(),
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        // A stable sort keeps the live version's entry first of two equal ones.
        docs.sort_by(|a, b| (&a.plugin, &a.command).cmp(&(&b.plugin, &b.command)));
        docs.dedup_by(|b, a| a.plugin == b.plugin && a.command == b.command);
        docs
    }

    /// The verdict of every enabled plugin on one message, combined. palaver-core's `Hold` carries no content, so
    /// a hold after an earlier plugin's rewrite holds the message as it was sent.
    pub async fn judge(
        &self,
        ctx: &PublishContext,
        content: &Value,
        head: Option<&Map<String, Value>>,
    ) -> PublishVerdict {
        let order = self.registry.order.load_full();
        // Serialised once, and again only after a rewrite, however many plugins run.
        let mut text: Option<(String, Option<String>)> = None;
        let mut rewritten: Option<(Value, Option<Map<String, Value>>)> = None;
        for slot in order.iter() {
            let Some(v) = slot.version_for(ctx.tenant) else { continue };
            if !v.manifest.has_hook(Hook::BeforePublish)
                || !self.registry.tenants.enabled(ctx.tenant, &slot.name, v.manifest.enabled_by_default)
            {
                continue;
            }
            let (c, h) = text.get_or_insert_with(|| match &rewritten {
                Some((c, h)) => (c.to_string(), head_text(h.as_ref())),
                None => (content.to_string(), head_text(head)),
            });
            match self.registry.run_publish(slot, &v, ctx, c, h.as_deref()).await {
                Ran::Done(PublishVerdict::Allow) => {}
                Ran::Done(PublishVerdict::Rewrite { content, head }) => {
                    rewritten = Some((content, head));
                    text = None;
                }
                Ran::Done(verdict) => return verdict,
                Ran::Failed(_) | Ran::Skipped => {
                    match self.registry.policy_for(slot, &v, Hook::BeforePublish, ctx.tenant) {
                        FailurePolicy::Open => {}
                        FailurePolicy::Closed => {
                            return PublishVerdict::Reject {
                                code: UNAVAILABLE,
                                reason: format!("message check {} is unavailable; try again later", slot.name),
                            };
                        }
                    }
                }
            }
        }
        match rewritten {
            Some((content, head)) => PublishVerdict::Rewrite { content, head },
            None => PublishVerdict::Allow,
        }
    }
}

/// The push filters: every plugin with `before-push` enabled for the tenant runs in priority order on the push as
/// the one before it left it. The first drop wins; rewrites chain; the longest delay asked is the one taken. A
/// faulted or skipped filter keeps the push as it was (`before-push` always fails open).
#[async_trait::async_trait]
impl PushHook for PluginHooks {
    async fn before_push(&self, ctx: &PushContext<'_>) -> PushDecision {
        let order = self.registry.order.load_full();
        let tenant = ctx.task.tenant;
        let mut rewritten: Option<palaver_core::ports::PushMessage> = None;
        let mut delay: Option<u64> = None;
        for slot in order.iter() {
            let Some(v) = slot.version_for(tenant) else { continue };
            if !v.manifest.has_hook(Hook::BeforePush)
                || !self.registry.tenants.enabled(tenant, &slot.name, v.manifest.enabled_by_default)
            {
                continue;
            }
            let msg = rewritten.as_ref().unwrap_or(ctx.message);
            match self.registry.run_push(slot, &v, ctx, msg).await {
                Ran::Done(PushDecision::Keep) | Ran::Failed(_) | Ran::Skipped => {}
                Ran::Done(PushDecision::Drop { reason }) => {
                    return PushDecision::Drop { reason: format!("{}: {reason}", slot.name) };
                }
                Ran::Done(PushDecision::Rewrite(m)) => rewritten = Some(m),
                Ran::Done(PushDecision::Delay { ms, .. }) => delay = Some(delay.map_or(ms, |d| d.max(ms))),
            }
        }
        match (delay, rewritten) {
            (Some(ms), rewrite) => PushDecision::Delay { ms, rewrite },
            (None, Some(m)) => PushDecision::Rewrite(m),
            (None, None) => PushDecision::Keep,
        }
    }

    fn filters(&self, tenant: TenantId) -> bool {
        self.registry.order.load_full().iter().any(|slot| {
            slot.version_for(tenant).is_some_and(|v| {
                v.manifest.has_hook(Hook::BeforePush)
                    && self.registry.tenants.enabled(tenant, &slot.name, v.manifest.enabled_by_default)
            })
        })
    }
}

/// The file judges: every plugin with `scan-file` enabled for the tenant runs in priority order, and the strictest
/// verdict wins (blocked over review over clean; of equally strict ones the first reason stays). A `blocked` ends the
/// scan: nothing can be stricter. `scan-file` **always fails closed**: a faulted or skipped plugin is a `review`, so
/// a file no judge could look at waits for an operator rather than being served. Reasons carry the plugin's name.
#[async_trait::async_trait]
impl ScanHook for PluginHooks {
    fn scans(&self, tenant: TenantId) -> bool {
        self.registry.order.load_full().iter().any(|slot| {
            slot.version_for(tenant).is_some_and(|v| {
                v.manifest.has_hook(Hook::ScanFile)
                    && self.registry.tenants.enabled(tenant, &slot.name, v.manifest.enabled_by_default)
            })
        })
    }

    async fn scan_file(&self, ctx: &ScanContext<'_>) -> ScanVerdict {
        let order = self.registry.order.load_full();
        let mut verdict = ScanVerdict::Clean;
        for slot in order.iter() {
            let Some(v) = slot.version_for(ctx.tenant) else { continue };
            if !v.manifest.has_hook(Hook::ScanFile)
                || !self.registry.tenants.enabled(ctx.tenant, &slot.name, v.manifest.enabled_by_default)
            {
                continue;
            }
            let name = &slot.name;
            let this = match self.registry.run_scan(slot, &v, ctx).await {
                Ran::Done(ScanVerdict::Clean) => ScanVerdict::Clean,
                Ran::Done(ScanVerdict::Blocked { reason }) => {
                    ScanVerdict::Blocked { reason: format!("{name}: {reason}") }
                }
                Ran::Done(ScanVerdict::Review { reason }) => {
                    ScanVerdict::Review { reason: format!("{name}: {reason}") }
                }
                Ran::Failed(kind) => ScanVerdict::Review { reason: format!("plugin {name} failed: {}", kind.as_str()) },
                Ran::Skipped => {
                    ScanVerdict::Review { reason: format!("plugin {name} failed: its circuit breaker is open") }
                }
            };
            verdict = verdict.and(this);
            if matches!(verdict, ScanVerdict::Blocked { .. }) {
                break;
            }
        }
        verdict
    }
}

#[async_trait::async_trait]
impl PublishHook for PluginHooks {
    async fn before_publish(
        &self,
        ctx: &PublishContext,
        content: &Value,
        head: Option<&Map<String, Value>>,
    ) -> PublishVerdict {
        self.judge(ctx, content, head).await
    }
}
