//! The route table of the admin API (`/v1/admin/…`): one entry per endpoint, naming what it does. The router
//! (`admin.rs`) and the OpenAPI document both read this table, and a test drives every entry through the
//! router, so the two cannot drift apart.

use crate::route::{Operation, body, r, schema};
use palaver_api::bodies as b;
use palaver_api::bodies::admin as a;
use palaver_service::admin::CommandResult;
use schemars::{Schema, SchemaGenerator};

/// What an endpoint does; the router runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Plugins,
    Upload,
    Rollout,
    Rescan,
    Reload,
    Rollback,
    TenantPlugin,
    SetTenantPlugin,
    PushSettings,
    SetPushSettings,
    FileSettings,
    SetFileSettings,
    AccountSettings,
    SetAccountSettings,
    CreateUser,
    FindUser,
    GetUser,
    MintToken,
    RevokeTokens,
    Disable,
    Enable,
    Evict,
    Command,
    GetCommand,
    Reports,
    ReviewMessage,
}

/// `evict` answers the command's result record when one device's sessions go (a `user.device.revoke`
/// command), or what this node closed when every session of the user goes (a direct session control).
fn evicted(g: &mut SchemaGenerator) -> Schema {
    let (command, all) = (g.subschema_for::<CommandResult>(), g.subschema_for::<a::Evicted>());
    schemars::json_schema!({ "oneOf": [command, all] })
}

const USER: &str = "users";
const PLUGINS: &str = "plugins";
const PUSH: &str = "push";
const FILES: &str = "files";

/// Every endpoint of the admin API.
pub(crate) const ROUTES: &[Route] = &[
    r(
        "GET",
        "/plugins",
        Op::Plugins,
        PLUGINS,
        "Every plugin, its state and counters.",
        None,
        schema::<a::PluginList>,
        &[],
    ),
    r(
        "POST",
        "/plugins",
        Op::Upload,
        PLUGINS,
        "Upload a plugin release once for the whole cluster (multipart form: `manifest` TOML, `component` .wasm, \
         optional `signature` base64 ed25519, optional `tenants` for a canary); every node runs it within seconds.",
        None,
        schema::<a::PluginReleased>,
        &[],
    ),
    r(
        "PUT",
        "/plugins/{name}/rollout",
        Op::Rollout,
        PLUGINS,
        "Choose which uploaded versions run: `live` for everyone, `canary` for a few tenants first; an older `live` \
         is a rollback that survives restarts.",
        Some(body::<a::RolloutChange>()),
        schema::<a::PluginRolloutInfo>,
        &[],
    ),
    r(
        "POST",
        "/plugins/rescan",
        Op::Rescan,
        PLUGINS,
        "Load whatever changed in the plugins directory.",
        None,
        schema::<a::LoadReport>,
        &[],
    ),
    r(
        "POST",
        "/plugins/{name}/reload",
        Op::Reload,
        PLUGINS,
        "Reload one plugin from its manifest; a refused load keeps the old version.",
        None,
        schema::<a::LoadReport>,
        &[],
    ),
    r(
        "POST",
        "/plugins/{name}/rollback",
        Op::Rollback,
        PLUGINS,
        "Bring back the previous version of a plugin.",
        None,
        schema::<a::RolledBack>,
        &[],
    ),
    r(
        "GET",
        "/tenants/{tenant}/plugins/{name}",
        Op::TenantPlugin,
        PLUGINS,
        "A tenant's choices for a plugin, defaults merged in.",
        None,
        schema::<a::TenantPlugin>,
        &[],
    ),
    r(
        "PUT",
        "/tenants/{tenant}/plugins/{name}",
        Op::SetTenantPlugin,
        PLUGINS,
        "Change a tenant's choices (enabled, settings, failure policies, HTTP allow-list); null restores the default.",
        Some(body::<a::TenantPluginChange>()),
        schema::<a::TenantPlugin>,
        &[],
    ),
    r(
        "GET",
        "/tenants/{tenant}/push",
        Op::PushSettings,
        PUSH,
        "The push in force for a tenant (providers and where each comes from) and its own settings, secrets hidden.",
        None,
        schema::<a::TenantPush>,
        &[],
    ),
    r(
        "PUT",
        "/tenants/{tenant}/push",
        Op::SetPushSettings,
        PUSH,
        "Change a tenant's own push settings: a field given replaces the stored one, null restores the node's.",
        Some(body::<a::PushSettings>()),
        schema::<a::TenantPush>,
        &[],
    ),
    r(
        "GET",
        "/tenants/{tenant}/files",
        Op::FileSettings,
        FILES,
        "The file limits in force for a tenant (upload size, uploads per hour, MIME types) and its own settings.",
        None,
        schema::<a::TenantFiles>,
        &[],
    ),
    r(
        "PUT",
        "/tenants/{tenant}/files",
        Op::SetFileSettings,
        FILES,
        "Change a tenant's own file limits: a field given replaces the stored one, null restores the node's.",
        Some(body::<a::FileSettings>()),
        schema::<a::TenantFiles>,
        &[],
    ),
    r(
        "GET",
        "/tenants/{tenant}/accounts",
        Op::AccountSettings,
        USER,
        "The account rules in force for a tenant (anonymous accounts, required credentials) and its own settings.",
        None,
        schema::<a::TenantAccounts>,
        &[],
    ),
    r(
        "PUT",
        "/tenants/{tenant}/accounts",
        Op::SetAccountSettings,
        USER,
        "Change a tenant's own account rules: a field given replaces the stored one, null restores the default.",
        Some(body::<a::AccountSettings>()),
        schema::<a::TenantAccounts>,
        &[],
    ),
    r(
        "POST",
        "/tenants/{tenant}/users",
        Op::CreateUser,
        USER,
        "Create an account for an app backend: a login with a password, an external id, or both.",
        Some(body::<a::NewUser>()),
        schema::<a::UserInfo>,
        &[],
    ),
    r(
        "GET",
        "/tenants/{tenant}/users",
        Op::FindUser,
        USER,
        "Find an account by its login or by the external id its backend gave it (one of the two).",
        None,
        schema::<a::UserInfo>,
        &["login", "external_id"],
    ),
    r("GET", "/tenants/{tenant}/users/{user}", Op::GetUser, USER, "One account.", None, schema::<a::UserInfo>, &[]),
    r(
        "POST",
        "/tenants/{tenant}/users/{user}/tokens",
        Op::MintToken,
        USER,
        "Mint a login token for an active account (`{login scheme:\"token\"}`).",
        Some(body::<a::TokenRequest>()),
        schema::<a::MintedToken>,
        &[],
    ),
    r(
        "DELETE",
        "/tenants/{tenant}/users/{user}/tokens",
        Op::RevokeTokens,
        USER,
        "Void every token of an account and close its sessions on every node.",
        None,
        schema::<a::TokensRevoked>,
        &[],
    ),
    r(
        "POST",
        "/tenants/{tenant}/users/{user}/disable",
        Op::Disable,
        USER,
        "Disable an account (the `user.disable` command).",
        Some(body::<a::UserAction>()),
        schema::<CommandResult>,
        &[],
    ),
    r(
        "POST",
        "/tenants/{tenant}/users/{user}/enable",
        Op::Enable,
        USER,
        "Enable an account again (the `user.enable` command).",
        Some(body::<a::UserAction>()),
        schema::<CommandResult>,
        &[],
    ),
    r(
        "POST",
        "/tenants/{tenant}/users/{user}/evict",
        Op::Evict,
        USER,
        "Close a user's sessions: one device's (`user.device.revoke`), or all of them.",
        Some(body::<a::UserAction>()),
        evicted,
        &[],
    ),
    r(
        "POST",
        "/tenants/{tenant}/commands",
        Op::Command,
        "commands",
        "Run one admin command now; a repeated command id answers the stored result.",
        Some(body::<a::CommandRequest>()),
        schema::<CommandResult>,
        &[],
    ),
    r(
        "GET",
        "/tenants/{tenant}/commands/{id}",
        Op::GetCommand,
        "commands",
        "The stored result of a finished command.",
        None,
        schema::<CommandResult>,
        &[],
    ),
    r(
        "GET",
        "/tenants/{tenant}/reports",
        Op::Reports,
        "reports",
        "The tenant's abuse reports, newest first (`open=true` for the open ones).",
        None,
        schema::<b::ReportPage>,
        &["open", "cursor", "limit"],
    ),
    r(
        "POST",
        "/tenants/{tenant}/topics/{topic}/messages/{seq}/audit",
        Op::ReviewMessage,
        "messages",
        "Release or reject a message a publish hook held.",
        Some(body::<a::AuditAction>()),
        schema::<a::AuditDone>,
        &[],
    ),
];

/// An admin endpoint runs one of these; `admin.…` names its OpenAPI operation.
pub(crate) type Route = crate::route::Route<Op>;

impl Operation for Op {
    const PREFIX: &'static str = "/v1/admin";

    fn operation_id(self) -> &'static str {
        match self {
            Op::Plugins => "admin.plugins.list",
            Op::Upload => "admin.plugin.upload",
            Op::Rollout => "admin.plugin.rollout",
            Op::Rescan => "admin.plugins.rescan",
            Op::Reload => "admin.plugin.reload",
            Op::Rollback => "admin.plugin.rollback",
            Op::TenantPlugin => "admin.tenant.plugin.get",
            Op::SetTenantPlugin => "admin.tenant.plugin.set",
            Op::PushSettings => "admin.tenant.push.get",
            Op::SetPushSettings => "admin.tenant.push.set",
            Op::FileSettings => "admin.tenant.files.get",
            Op::SetFileSettings => "admin.tenant.files.set",
            Op::AccountSettings => "admin.tenant.accounts.get",
            Op::SetAccountSettings => "admin.tenant.accounts.set",
            Op::CreateUser => "admin.user.create",
            Op::FindUser => "admin.user.find",
            Op::GetUser => "admin.user.get",
            Op::MintToken => "admin.user.token.mint",
            Op::RevokeTokens => "admin.user.tokens.revoke",
            Op::Disable => "admin.user.disable",
            Op::Enable => "admin.user.enable",
            Op::Evict => "admin.user.evict",
            Op::Command => "admin.command.run",
            Op::GetCommand => "admin.command.get",
            Op::Reports => "admin.reports.list",
            Op::ReviewMessage => "admin.message.review",
        }
    }

    fn security() -> serde_json::Value {
        serde_json::json!([{ "adminToken": [] }])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route::find_in;

    #[test]
    fn every_route_is_unique_and_found_with_its_parameters() {
        for (i, a) in ROUTES.iter().enumerate() {
            for b in &ROUTES[i + 1..] {
                assert!(!(a.method == b.method && a.path == b.path), "{} {} twice", a.method, a.path);
                assert_ne!(a.op, b.op, "{:?} twice", a.op);
                assert_ne!(a.op.operation_id(), b.op.operation_id(), "{} twice", a.op.operation_id());
            }
        }
        let (r, p) = find_in(ROUTES, "POST", "/plugins/rescan").unwrap();
        assert_eq!((r.op, p.len()), (Op::Rescan, 0), "the literal beats `{{name}}`");
        let (r, p) = find_in(ROUTES, "POST", "/tenants/7/topics/grpX/messages/3/audit").unwrap();
        assert_eq!(r.op, Op::ReviewMessage);
        assert_eq!(p, [("tenant", "7".to_owned()), ("topic", "grpX".to_owned()), ("seq", "3".to_owned())]);
        assert!(find_in(ROUTES, "POST", "/tenants/1/users/usrX/explode").is_none());
        let (r, p) = find_in(ROUTES, "DELETE", "/tenants/1/users/usrX/tokens").unwrap();
        assert_eq!((r.op, p[1].1.as_str()), (Op::RevokeTokens, "usrX"));
        assert_eq!(find_in(ROUTES, "GET", "/tenants/1/users").unwrap().0.op, Op::FindUser);
    }
}
