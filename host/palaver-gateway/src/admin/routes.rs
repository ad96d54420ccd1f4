//! The route table of the admin API (`/v1/admin/…`): one entry per endpoint, naming what it does. The router
//! (`admin.rs`) and the OpenAPI document both read this table, and a test drives every entry through the
//! router, so the two cannot drift apart.

use crate::im::routes::{Endpoint, RequestBody, SchemaFn, body, schema};
use palaver_api::bodies as b;
use palaver_api::bodies::admin as a;
use palaver_service::admin::CommandResult;
use schemars::{Schema, SchemaGenerator};

/// What an endpoint does; the router runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Plugins,
    Rescan,
    Reload,
    Rollback,
    TenantPlugin,
    SetTenantPlugin,
    Disable,
    Enable,
    Evict,
    Command,
    GetCommand,
    Reports,
    ReviewMessage,
}

/// One endpoint.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Route {
    pub(crate) method: &'static str,
    /// Path below `/v1/admin`, with `{name}` segments for parameters.
    pub(crate) path: &'static str,
    pub(crate) op: Op,
    /// The OpenAPI operation id.
    pub(crate) id: &'static str,
    pub(crate) tag: &'static str,
    pub(crate) summary: &'static str,
    pub(crate) request: Option<RequestBody>,
    pub(crate) response: SchemaFn,
    pub(crate) query: &'static [&'static str],
}

#[expect(clippy::too_many_arguments, reason = "one positional row per endpoint keeps the table one line per route")]
const fn r(
    method: &'static str,
    path: &'static str,
    op: Op,
    id: &'static str,
    tag: &'static str,
    summary: &'static str,
    request: Option<RequestBody>,
    response: SchemaFn,
    query: &'static [&'static str],
) -> Route {
    Route { method, path, op, id, tag, summary, request, response, query }
}

/// `evict` answers the command's result record when one device's sessions go (a `user.device.revoke`
/// command), or what this node closed when every session of the user goes (a direct session control).
fn evicted(g: &mut SchemaGenerator) -> Schema {
    let (command, all) = (g.subschema_for::<CommandResult>(), g.subschema_for::<a::Evicted>());
    schemars::json_schema!({ "oneOf": [command, all] })
}

const USER: &str = "users";
const PLUGINS: &str = "plugins";

/// Every endpoint of the admin API.
pub(crate) const ROUTES: &[Route] = &[
    r(
        "GET",
        "/plugins",
        Op::Plugins,
        "admin.plugins.list",
        PLUGINS,
        "Every plugin, its state and counters.",
        None,
        schema::<a::PluginList>,
        &[],
    ),
    r(
        "POST",
        "/plugins/rescan",
        Op::Rescan,
        "admin.plugins.rescan",
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
        "admin.plugin.reload",
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
        "admin.plugin.rollback",
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
        "admin.tenant.plugin.get",
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
        "admin.tenant.plugin.set",
        PLUGINS,
        "Change a tenant's choices (enabled, settings, failure policies); null restores the default.",
        Some(body::<a::TenantPluginChange>()),
        schema::<a::TenantPlugin>,
        &[],
    ),
    r(
        "POST",
        "/tenants/{tenant}/users/{user}/disable",
        Op::Disable,
        "admin.user.disable",
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
        "admin.user.enable",
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
        "admin.user.evict",
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
        "admin.command.run",
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
        "admin.command.get",
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
        "admin.reports.list",
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
        "admin.message.review",
        "messages",
        "Release or reject a message a publish hook held.",
        Some(body::<a::AuditAction>()),
        schema::<a::AuditDone>,
        &[],
    ),
];

impl Endpoint for Route {
    fn method(&self) -> &'static str {
        self.method
    }
    fn path(&self) -> String {
        format!("/v1/admin{}", self.path)
    }
    fn local_path(&self) -> &'static str {
        self.path
    }
    fn operation_id(&self) -> &'static str {
        self.id
    }
    fn tag(&self) -> &'static str {
        self.tag
    }
    fn summary(&self) -> &'static str {
        self.summary
    }
    fn request(&self) -> Option<RequestBody> {
        self.request
    }
    fn response(&self) -> SchemaFn {
        self.response
    }
    fn query(&self) -> &'static [&'static str] {
        self.query
    }
    fn security(&self) -> serde_json::Value {
        serde_json::json!([{ "adminToken": [] }])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::im::routes::find_in;

    #[test]
    fn every_route_is_unique_and_found_with_its_parameters() {
        for (i, a) in ROUTES.iter().enumerate() {
            for b in &ROUTES[i + 1..] {
                assert!(!(a.method == b.method && a.path == b.path), "{} {} twice", a.method, a.path);
                assert_ne!(a.op, b.op, "{:?} twice", a.op);
                assert_ne!(a.id, b.id, "{} twice", a.id);
            }
        }
        let (r, p) = find_in(ROUTES, "POST", "/plugins/rescan").unwrap();
        assert_eq!((r.op, p.len()), (Op::Rescan, 0), "the literal beats `{{name}}`");
        let (r, p) = find_in(ROUTES, "POST", "/tenants/7/topics/grpX/messages/3/audit").unwrap();
        assert_eq!(r.op, Op::ReviewMessage);
        assert_eq!(p, [("tenant", "7".to_owned()), ("topic", "grpX".to_owned()), ("seq", "3".to_owned())]);
        assert!(find_in(ROUTES, "POST", "/tenants/1/users/usrX/explode").is_none());
    }
}
