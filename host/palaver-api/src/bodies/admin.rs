//! The bodies of the admin API (`/v1/admin/…`): what each endpoint answers and what it reads from a JSON body.
//! The server builds the answers from these types and the OpenAPI document derives its schemas from them; the
//! admin command's result record (`CommandResult`) is the service's own type, documented the same way.

use super::{Deserialize, Serialize, Value};
use std::collections::BTreeMap;

/// Whether a plugin is running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum PluginState {
    /// A version is live and no tenant's breaker is open.
    Active,
    /// A version is live but at least one tenant's breaker keeps it off for that tenant.
    BreakerOpen,
    /// No version is live: every load so far was refused.
    Failed,
}

body!(response
/// Counters of one hook of a plugin.
HookCounts {
    calls: u64,
    faults: u64,
    /// Calls skipped because the breaker was open.
    skipped: u64,
    /// Faults by kind (`trap`, `fuel`, `deadline`, `memory`, `output-size`, `invalid-output`, …); kinds that
    /// never happened are left out.
    faults_by_kind: BTreeMap<String, u64>,
});
body!(response
/// One plugin: its live version, state, manifest and counters.
PluginInfo {
    name: String,
    /// The live version, if any.
    version: Option<String>,
    /// The live component's SHA-256.
    hash: Option<String>,
    state: PluginState,
    /// `closed` when no tenant's breaker is open, else `open`.
    breaker: String,
    /// Tenants whose breaker is open or half-open.
    breakers_open: u64,
    /// Why the latest load was refused; cleared by the next successful one.
    last_error: Option<String>,
    /// The version a rollback would bring back.
    previous_version: Option<String>,
    /// The latest fault of a call (`"<version> <hook>: <fault>"`), with what the plugin logged at error level
    /// before it, such as a panic's message.
    last_fault: Option<String>,
    /// Whether a cluster rollout decides its versions (directory scans then leave it alone).
    managed: bool,
    /// A version some tenants run instead of the live one, and those tenants.
    canary_version: Option<String>,
    canary_tenants: Vec<u64>,
    /// `publish-filter`, `command-handler`, `full` or `push-filter`.
    world: Option<String>,
    /// `before-publish`, `on-command`, `before-push`.
    hooks: Vec<String>,
    /// The host imports the manifest grants (`kv`, `directory`, `events`, …).
    grants: Vec<String>,
    /// `ephemeral` or `warm`.
    instance_mode: Option<String>,
    priority: Option<i32>,
    enabled_by_default: Option<bool>,
    /// When the live version went live, in Unix milliseconds.
    loaded_at_ms: Option<u64>,
    /// The manifest file it came from.
    source: Option<String>,
    /// Calls and faults over every hook, across versions.
    calls: u64,
    faults: u64,
    before_publish: HookCounts,
    on_command: HookCounts,
    before_push: HookCounts,
    scan_file: HookCounts,
    loads: u64,
    load_refusals: u64,
    /// Instances created for the live version.
    instantiations: u64,
});
body!(response
/// `GET /v1/admin/plugins`: the plugins directory and every plugin on this node; the cluster's rollouts and what
/// every node said it runs.
PluginList {
    dir: String,
    plugins: Vec<PluginInfo>,
    rollouts: Vec<PluginRolloutInfo>,
    nodes: Vec<NodePluginStatus>,
});
body!(response
/// A version some tenants run before everyone does.
CanaryInfo {
    version: String,
    tenants: Vec<u64>,
});
body!(response
/// Which uploaded versions of a plugin run across the cluster.
PluginRolloutInfo {
    plugin: String,
    /// The version every tenant outside the canary runs; `null`: each node's plugins directory decides.
    live: Option<String>,
    canary: Option<CanaryInfo>,
    /// Rises with every change; a node that has applied it says so in its status.
    revision: i64,
    updated_at_ms: i64,
});
body!(response
/// What one node runs of one plugin, as it last said.
NodePluginStatus {
    node: String,
    plugin: String,
    live: Option<String>,
    canary: Option<String>,
    /// Why the node does not run what the rollout names, if it does not.
    error: Option<String>,
    /// The rollout revision the node has applied.
    revision: i64,
    at_ms: i64,
});
body!(response
/// `POST /v1/admin/plugins`: the stored release and the rollout it started.
PluginReleased {
    name: String,
    version: String,
    sha256: String,
    size: u64,
    /// The trusted key whose signature was checked, if the upload was signed.
    signed_by: Option<String>,
    /// `false`: this exact release was stored already.
    stored: bool,
    rollout: PluginRolloutInfo,
});
body!(request
/// `PUT /v1/admin/plugins/{name}/rollout`: the whole new rollout. `live` names an uploaded version every tenant
/// outside the canary runs (`null` hands the plugin back to each node's directory); `canary` an uploaded version
/// the listed tenants run first (`null`: none).
RolloutChange {
    live: Option<String>,
    canary: Option<CanaryChange>,
});
body!(request
/// A canary: an uploaded version and the tenants that run it.
CanaryChange {
    version: Option<String>,
    tenants: Option<Vec<u64>>,
});
body!(response
/// One manifest a load looked at: a new version went live (`changed`), or the same one already was.
PluginLoad {
    name: String,
    version: String,
    /// The live component's SHA-256 (a new version only).
    hash: Option<String>,
    /// The version the new one replaced.
    replaced: Option<String>,
    changed: bool,
});
body!(response
    /// A manifest a load refused, and why; any older version keeps running.
    LoadRefusal { manifest: String, reason: String });
body!(response
    /// What a rescan or a reload did.
    LoadReport { loaded: Vec<PluginLoad>, refused: Vec<LoadRefusal> });
body!(response
    /// A rollback that happened: the plugin went from one version back to another.
    RolledBack { name: String, from: String, to: String });
body!(response
/// A tenant's choices for one plugin, with the plugin's defaults merged in.
TenantPlugin {
    plugin: String,
    tenant: u64,
    /// `null`: the manifest's `enabled_by_default` applies.
    enabled: Option<bool>,
    /// The settings the plugin sees for this tenant.
    settings: Value,
    /// What a fault means for this tenant, hook by hook (`open` or `closed`), all choices applied.
    failure: BTreeMap<String, String>,
    /// The failure policies the tenant chose itself, by hook.
    failure_chosen: BTreeMap<String, String>,
    /// The hosts the plugin may reach over HTTP for this tenant, as the tenant narrowed them; `null`: the
    /// manifest's list (`http_allow_manifest`).
    http_allow: Option<Vec<String>>,
    /// The operator's list (`[http] allow` of the version the tenant runs); `null`: the plugin makes no HTTP
    /// requests.
    http_allow_manifest: Option<Vec<String>>,
});
body!(request
/// `PUT /v1/admin/tenants/{tenant}/plugins/{name}`: what to change; a field left out stays, `null` restores the
/// plugin's default.
TenantPluginChange {
    enabled: Option<bool>,
    settings: Option<Value>,
    /// By hook (`before-publish`, `on-command`): `open`, `closed`, or `null` for the plugin's own.
    failure: Option<BTreeMap<String, Option<String>>>,
    /// The hosts the plugin may reach over HTTP for this tenant: entries of the manifest's `[http] allow` (or
    /// narrower ones: a host under one of its wildcards, a scheme added); `null` for the manifest's whole list.
    http_allow: Option<Vec<String>>,
});
body!(request
/// `POST /v1/admin/tenants/{tenant}/commands`: one admin command, run now.
CommandRequest {
    /// The command type (`user.disable`, `abuse.report.resolve`, …).
    r#type: Option<String>,
    /// The command's arguments.
    payload: Option<BTreeMap<String, Value>>,
    /// The idempotency key, if no `Idempotency-Key` header carries it.
    command_id: Option<String>,
});
body!(request
/// `POST /v1/admin/tenants/{tenant}/users/{user}/{action}` (`disable`, `enable`, `evict`).
UserAction {
    /// One device of the user: `evict` then acts on that device's sessions only.
    device: Option<String>,
    /// Why, for the audit log (at most 200 characters are kept).
    reason: Option<String>,
    /// `evict`: revoke the user's login tokens as well.
    revoke_tokens: Option<bool>,
    /// The idempotency key, if no `Idempotency-Key` header carries it.
    command_id: Option<String>,
});
body!(response
/// `evict` of every session of a user: how many this node closed (other nodes close theirs).
Evicted { code: u16, closed_here: u64 });
body!(request
/// `POST /v1/admin/tenants/{tenant}/topics/{topic}/messages/{seq}/audit`.
AuditAction {
    /// `release` (deliver the held message) or `reject` (it stays visible to its sender only).
    action: Option<String>,
});
body!(response
/// A held message's review, done: `audit` is its new status (`pass` or `reject`).
AuditDone { code: u16, audit: String });

// A tenant's own push settings.

/// A tenant's own push settings, as stored and as `PUT /v1/admin/tenants/{tenant}/push` reads them. A field
/// left out follows the node's `[push]`; a provider section the tenant sets replaces the node's provider of that
/// name for the tenant's devices. The node's `push.enabled` is the master switch: a tenant can turn its push off
/// but not on where the node runs no push worker.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct PushSettings {
    /// `false` turns push off for the tenant: no tasks, no device registrations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Whether pushes carry up to 128 characters of the message's text (never of a held message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fcm: Option<FcmSettings>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apns: Option<ApnsSettings>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jpush: Option<JpushSettings>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<WebhookSettings>,
}

/// The tenant's FCM HTTP v1 project.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct FcmSettings {
    /// The service account JSON as Google issues it (`project_id`, `client_email`, `private_key`, `token_uri`).
    pub credentials: Value,
    /// Base URL; sends go to `{endpoint}/v1/projects/{project_id}/messages:send`. Default: Google's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
}

/// The tenant's APNs token-based authentication.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ApnsSettings {
    /// The `.p8` signing key (PEM text).
    pub key: String,
    pub key_id: String,
    pub team_id: String,
    /// The app's bundle id (`apns-topic`).
    pub topic: String,
    /// Base URL; pushes go to `{endpoint}/3/device/{token}`. Default: Apple's production gateway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
}

/// The tenant's JPush application.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct JpushSettings {
    pub app_key: String,
    pub master_secret: String,
    /// Base URL; pushes go to `{endpoint}/v3/push`. Default: JPush's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
}

/// The tenant's own push service, reached by an HMAC-signed POST.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct WebhookSettings {
    pub url: String,
    /// The HMAC-SHA256 key of the `X-Palaver-Signature` header.
    pub secret: String,
}

body!(response
/// One provider a tenant's devices register with.
PushProviderInUse {
    /// `apns`, `fcm`, `jpush` or `webhook`.
    name: String,
    /// `tenant` (its own settings) or `node` (the node's `[push]`).
    source: String,
});
body!(response
/// `GET /v1/admin/tenants/{tenant}/push`: the push in force for a tenant, and what it set itself.
TenantPush {
    tenant: u64,
    /// Push is on for the tenant: the node's `push.enabled` and the tenant's own choice.
    enabled: bool,
    /// Pushes carry a preview of the text.
    preview: bool,
    /// The providers in force, in the order a device picks one (APNs first for `ios`, then FCM, JPush, webhook).
    providers: Vec<PushProviderInUse>,
    /// The tenant's own settings, its secrets (`private_key`, `key`, `master_secret`, `secret`) shown as `"***"`.
    settings: PushSettings,
});

// A tenant's own file limits.

/// A tenant's own file limits, as stored and as `PUT /v1/admin/tenants/{tenant}/files` reads them. A field left
/// out follows the node's `[files]`; `max_upload_size` cannot exceed the node's, which protects the node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct FileSettings {
    /// The largest upload in bytes (at most the node's `files.max_upload_size`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_upload_size: Option<u64>,
    /// Uploads one user may make in an hour; 0: no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_uploads_per_hour: Option<u64>,
    /// MIME types accepted (`image/*` takes a family), lower case; empty: any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_mime: Option<Vec<String>>,
    /// Who may download an upload that is still being scanned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_readers: Option<PendingReaders>,
}

/// Who may download a file while it is `pending` (a scanner has not settled it yet).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum PendingReaders {
    /// Its uploader only; everyone else who may read it gets 503 `FILE_PENDING` until the scan ends.
    #[default]
    Uploader,
    /// Everyone who may read it, as if it were clean (the scan may still block it later).
    Readers,
}

impl PendingReaders {
    /// The word in configuration and settings documents.
    pub fn as_str(self) -> &'static str {
        match self {
            PendingReaders::Uploader => "uploader",
            PendingReaders::Readers => "readers",
        }
    }
}

body!(response
/// `GET /v1/admin/tenants/{tenant}/files`: the file limits in force for a tenant, and what it set itself.
TenantFiles {
    tenant: u64,
    /// The largest upload in bytes.
    max_upload_size: u64,
    /// Uploads one user may make in an hour; 0: no limit.
    max_uploads_per_hour: u64,
    /// MIME types accepted; empty: any.
    allowed_mime: Vec<String>,
    /// Who may download a file that is still being scanned.
    pending_readers: PendingReaders,
    /// Uploads are scanned before anyone but their uploader reads them: a whole-file scanner (ClamAV) is
    /// configured on the node, or a `scan-file` plugin is enabled for the tenant.
    scanned: bool,
    /// The tenant's own settings.
    settings: FileSettings,
});

// A tenant's own account rules.

/// A tenant's own account rules, as stored and as `PUT /v1/admin/tenants/{tenant}/accounts` reads them. A field
/// left out keeps its default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct AccountSettings {
    /// Tinode's `anonymous` scheme: `{acc scheme:"anonymous"}` creates an account with no login, which logs in
    /// again only with its token and joins topics with their `anon` default access. Off when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anonymous: Option<bool>,
}

body!(response
/// `GET /v1/admin/tenants/{tenant}/accounts`: the account rules in force for a tenant, and what it set itself.
TenantAccounts {
    tenant: u64,
    /// Anonymous accounts may be created.
    anonymous: bool,
    /// The credential methods an account signing up with a password must confirm (the node's
    /// `accounts.credentials.required`).
    required_credentials: Vec<String>,
    /// The credential methods the node can send codes for.
    credential_methods: Vec<String>,
    /// The tenant's own settings.
    settings: AccountSettings,
});

body!(request
/// `POST /v1/admin/tenants/{tenant}/users`: an account an app backend creates. It needs a login with a password
/// (the basic scheme), an external id (the backend's own id for the user, for its tokens and look-ups), or both.
NewUser {
    /// The basic-scheme login (stored lower case); needs `password`.
    login: Option<String>,
    password: Option<String>,
    /// The backend's own id for the user: unique in the tenant, at most 255 bytes; the `sub` of its JWTs.
    external_id: Option<String>,
    /// Tinode's `public` (`{"fn": "Alice"}`).
    public: Option<Value>,
    /// Discovery tags, checked like a client's.
    tags: Option<Vec<String>>,
});
body!(response
/// An account as an app backend sees it.
UserInfo {
    /// `usr…`.
    user: String,
    /// `active`, `suspended` or `deleted`.
    state: String,
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    created: super::Time,
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    updated: super::Time,
    login: Option<String>,
    external_id: Option<String>,
    public: Option<Value>,
    tags: Vec<String>,
});
body!(request
/// `POST /v1/admin/tenants/{tenant}/users/{user}/tokens`: a login token for the user.
TokenRequest {
    /// How long it stays valid, in seconds: 60 up to the node's `auth.token_ttl_seconds` (the default).
    ttl_seconds: Option<u64>,
});
body!(response
/// A login token minted for a user: the SDK logs in with `{login scheme:"token" secret:token}`.
MintedToken {
    user: String,
    token: String,
    /// When it expires.
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    expires: super::Time,
});
body!(response
/// `DELETE /v1/admin/tenants/{tenant}/users/{user}/tokens`: every token of the user is void and its sessions are
/// closed on every node.
TokensRevoked {
    user: String,
    /// The account's new token generation; tokens of an older one are refused.
    auth_version: i64,
});
