//! The manifest beside each component (`<name>-<version>.toml`): identity, world, hooks, grants, failure
//! policies, limit overrides, instance policy, settings schema and golden fixtures. Parsed and validated once at
//! load; a manifest that breaks a rule refuses the load.

use crate::error::LoadError;
use crate::fixtures::Fixture;
use crate::http::{HttpPolicy, HttpSection};
use crate::settings::{SettingsSchema, validate_schema};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::Path;

/// A parsed, validated manifest.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Lower-case letters, digits and dashes, starting with a letter: the plugin's identity across versions.
    pub name: String,
    /// `MAJOR.MINOR.PATCH`, optionally with a `-pre` suffix.
    pub version: String,
    #[serde(default)]
    pub description: String,
    /// The world the component was built against; it fixes which hooks the component must export.
    pub world: World,
    /// The component's file name, beside the manifest. Default: the manifest's name with `.wasm`.
    #[serde(default)]
    pub component: Option<String>,
    /// The component's SHA-256 in hex; when present a component with another hash is refused.
    #[serde(default)]
    pub sha256: Option<String>,
    /// Plugins on the same hook run by ascending priority, then by name.
    #[serde(default = "default_priority")]
    pub priority: i32,
    /// Whether tenants without an explicit choice have the plugin enabled.
    #[serde(default)]
    pub enabled_by_default: bool,
    /// The host interfaces the component may import.
    #[serde(default)]
    pub grants: Vec<Grant>,
    /// Outbound HTTP (`[http]`): the hosts the plugin may reach and its caps. Required with the `http` grant, and
    /// refused without it.
    #[serde(default)]
    pub http: Option<HttpSection>,
    #[serde(default)]
    pub hooks: Hooks,
    #[serde(default)]
    pub limits: LimitsOverride,
    #[serde(default)]
    pub instance: InstancePolicy,
    /// The typed settings each tenant may set, with their defaults.
    #[serde(default)]
    pub settings: SettingsSchema,
    /// Golden inputs and the verdicts they must give; all must pass before a version goes live.
    #[serde(default)]
    pub fixtures: Vec<Fixture>,
    /// The commands clients may run themselves (`POST /v1/im/plugins/{plugin}/commands/{command}`), by name.
    /// Only these: a command the host runs with facts of its own (`friend.request.create`) is never one, so a
    /// client can never hand a plugin forged facts.
    #[serde(default)]
    pub client_commands: std::collections::BTreeMap<String, ClientCommand>,
}

/// A command offered to clients.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientCommand {
    /// One sentence for the OpenAPI document.
    pub summary: String,
    /// JSON Schema of the request body, shown in the OpenAPI document. The host checks only that the body is a
    /// JSON object; the plugin checks its fields.
    #[serde(default)]
    pub args: Option<serde_json::Value>,
    /// JSON Schema of the result, shown in the OpenAPI document.
    #[serde(default)]
    pub result: Option<serde_json::Value>,
}

fn default_priority() -> i32 {
    100
}

/// The worlds of `palaver:plugin@0.1.3` (`push-filter` since 0.1.1, `file-scanner` since 0.1.2, `listener` and
/// `gate` since 0.1.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum World {
    PublishFilter,
    CommandHandler,
    Full,
    PushFilter,
    FileScanner,
    Listener,
    Gate,
}

impl World {
    /// The name a manifest gives it.
    pub fn as_str(self) -> &'static str {
        match self {
            World::PublishFilter => "publish-filter",
            World::CommandHandler => "command-handler",
            World::Full => "full",
            World::PushFilter => "push-filter",
            World::FileScanner => "file-scanner",
            World::Listener => "listener",
            World::Gate => "gate",
        }
    }

    /// Whether a hook of this world runs only when the manifest names it (`[hooks.<name>]`): so for `gate` and
    /// `listener`, whose plugins usually want one of the two hooks. A component exports both all the same (the SDK
    /// answers for the one a plugin does not implement), but a hook left unnamed is never called: a login-only gate
    /// is not called on every join, a message-only listener has no event queued per account change.
    pub fn hooks_named(self) -> bool {
        matches!(self, World::Listener | World::Gate)
    }

    /// The hooks a component of this world exports.
    pub fn hooks(self) -> &'static [Hook] {
        match self {
            World::PublishFilter => &[Hook::BeforePublish],
            World::CommandHandler => &[Hook::OnCommand],
            World::Full => &[Hook::BeforePublish, Hook::OnCommand],
            World::PushFilter => &[Hook::BeforePush],
            World::FileScanner => &[Hook::ScanFile],
            World::Listener => &[Hook::AfterPublish, Hook::OnAccount],
            World::Gate => &[Hook::OnLogin, Hook::BeforeSubscribe],
        }
    }
}

/// An exported hook interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Hook {
    BeforePublish,
    OnCommand,
    BeforePush,
    ScanFile,
    AfterPublish,
    OnAccount,
    OnLogin,
    BeforeSubscribe,
}

impl Hook {
    /// Every hook.
    pub const ALL: [Hook; 8] = [
        Hook::BeforePublish,
        Hook::OnCommand,
        Hook::BeforePush,
        Hook::ScanFile,
        Hook::AfterPublish,
        Hook::OnAccount,
        Hook::OnLogin,
        Hook::BeforeSubscribe,
    ];

    /// The WIT interface name.
    pub fn as_str(self) -> &'static str {
        match self {
            Hook::BeforePublish => "before-publish",
            Hook::OnCommand => "on-command",
            Hook::BeforePush => "before-push",
            Hook::ScanFile => "scan-file",
            Hook::AfterPublish => "after-publish",
            Hook::OnAccount => "on-account",
            Hook::OnLogin => "on-login",
            Hook::BeforeSubscribe => "before-subscribe",
        }
    }

    /// The policy when nothing says otherwise: closed for both. A filter that failed open could be switched off
    /// by whoever makes it fail (a message built to exhaust its budget, or enough faults to open its breaker);
    /// a broken command must not pretend to have succeeded. A filter that is no safeguard (an enricher, a
    /// translator) says `failure = "open"` in its manifest. `before-push` always fails open: a push is a
    /// convenience, and a broken filter must not silence a tenant's notifications. `scan-file` always fails
    /// closed: a fault sends the file to review, so a file no judge could look at is never served. The gates
    /// (`on-login`, `before-subscribe`) are safeguards like `before-publish`: closed, a fault refuses with a
    /// retryable 503. The listeners (`after-publish`, `on-account`) always fail closed: a fault is a failed
    /// delivery the caller retries; failing open would drop the event as if it had been taken.
    pub fn default_policy(self) -> FailurePolicy {
        match self {
            Hook::BeforePush => FailurePolicy::Open,
            Hook::BeforePublish
            | Hook::OnCommand
            | Hook::ScanFile
            | Hook::AfterPublish
            | Hook::OnAccount
            | Hook::OnLogin
            | Hook::BeforeSubscribe => FailurePolicy::Closed,
        }
    }

    /// The policy this hook always has, whatever a manifest, an operator or a tenant says: `before-push` always
    /// fails open; `scan-file`, `after-publish` and `on-account` always fail closed (for a listener: a fault is
    /// reported to the caller as a failed delivery, which it retries). `None`: the policy may be chosen.
    pub fn fixed_policy(self) -> Option<FailurePolicy> {
        match self {
            Hook::BeforePush => Some(FailurePolicy::Open),
            Hook::ScanFile | Hook::AfterPublish | Hook::OnAccount => Some(FailurePolicy::Closed),
            Hook::BeforePublish | Hook::OnCommand | Hook::OnLogin | Hook::BeforeSubscribe => None,
        }
    }
}

impl fmt::Display for Hook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A host interface a plugin may import. The shared `types` interface is always allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Grant {
    Kv,
    Directory,
    Events,
    Notifications,
    Log,
    Clock,
    Settings,
    /// Outbound HTTP to the hosts of the manifest's `[http] allow` (since 0.1.3).
    Http,
}

impl Grant {
    /// Every grant.
    pub const ALL: [Grant; 8] = [
        Grant::Kv,
        Grant::Directory,
        Grant::Events,
        Grant::Notifications,
        Grant::Log,
        Grant::Clock,
        Grant::Settings,
        Grant::Http,
    ];

    /// The WIT interface name.
    pub fn as_str(self) -> &'static str {
        match self {
            Grant::Kv => "kv",
            Grant::Directory => "directory",
            Grant::Events => "events",
            Grant::Notifications => "notifications",
            Grant::Log => "log",
            Grant::Clock => "clock",
            Grant::Settings => "settings",
            Grant::Http => "http",
        }
    }

    /// The grant for a WIT interface name.
    pub fn from_interface(name: &str) -> Option<Grant> {
        Grant::ALL.into_iter().find(|g| g.as_str() == name)
    }
}

/// What a fault means for the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailurePolicy {
    /// Act as if the plugin had allowed the message (or returned `null` for a command).
    Open,
    /// Refuse the message or command with a retryable 503: the default.
    Closed,
}

/// Per-hook configuration. A hook of the world that is not listed runs with its defaults, except in worlds `gate`
/// and `listener`, where only the hooks listed run (an empty table, `[hooks.after-publish]`, is enough).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hooks {
    #[serde(default, rename = "before-publish")]
    pub before_publish: Option<HookConfig>,
    #[serde(default, rename = "on-command")]
    pub on_command: Option<HookConfig>,
    #[serde(default, rename = "before-push")]
    pub before_push: Option<HookConfig>,
    #[serde(default, rename = "scan-file")]
    pub scan_file: Option<HookConfig>,
    #[serde(default, rename = "after-publish")]
    pub after_publish: Option<HookConfig>,
    #[serde(default, rename = "on-account")]
    pub on_account: Option<HookConfig>,
    #[serde(default, rename = "on-login")]
    pub on_login: Option<HookConfig>,
    #[serde(default, rename = "before-subscribe")]
    pub before_subscribe: Option<HookConfig>,
}

/// One hook's configuration.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookConfig {
    #[serde(default)]
    pub failure: Option<FailurePolicy>,
    /// For `on-command`: the command names the plugin handles. Empty: every command named `<plugin>.…`.
    #[serde(default)]
    pub commands: Vec<String>,
}

/// Limits that replace the runtime's defaults for this plugin.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsOverride {
    pub fuel: Option<u64>,
    pub deadline_ms: Option<u64>,
    pub memory_mib: Option<u64>,
    pub max_output_bytes: Option<usize>,
    pub max_host_calls: Option<u32>,
    /// Extra fuel per KiB of input.
    pub fuel_per_kib: Option<u64>,
    /// Extra deadline per KiB of input, in microseconds.
    pub deadline_us_per_kib: Option<u64>,
}

/// Whether instances are created per call or kept warm between calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum InstanceMode {
    /// A fresh instance per call (~30 µs): no state survives a call.
    #[default]
    Ephemeral,
    /// Instances are reused (~1 µs per call) until `max_invocations`, a fault or a version swap retires them.
    /// Guest memory is a cache only: it may vanish at any call.
    Warm,
}

/// How instances of this plugin live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstancePolicy {
    #[serde(default)]
    pub mode: InstanceMode,
    /// Calls after which a warm instance is retired, so that guest-side leaks stay bounded.
    #[serde(default = "default_max_invocations")]
    pub max_invocations: u32,
    /// Warm instances kept idle per version.
    #[serde(default = "default_max_idle")]
    pub max_idle: u32,
}

fn default_max_invocations() -> u32 {
    10_000
}

fn default_max_idle() -> u32 {
    4
}

impl Default for InstancePolicy {
    fn default() -> Self {
        InstancePolicy { mode: InstanceMode::Ephemeral, max_invocations: 10_000, max_idle: 4 }
    }
}

impl Manifest {
    /// Parses and validates a manifest.
    pub fn parse(text: &str) -> Result<Manifest, LoadError> {
        let manifest: Manifest = toml::from_str(text).map_err(|e| LoadError::Manifest(e.message().to_owned()))?;
        manifest.validate()?;
        Ok(manifest)
    }

    /// Reads, parses and validates a manifest file.
    pub fn from_file(path: &Path) -> Result<Manifest, LoadError> {
        let text = std::fs::read_to_string(path).map_err(|e| LoadError::io(path, e))?;
        Manifest::parse(&text)
    }

    /// The failure policy of `hook`.
    pub fn policy(&self, hook: Hook) -> FailurePolicy {
        self.hook_config(hook).and_then(|c| c.failure).unwrap_or_else(|| hook.default_policy())
    }

    /// Whether the component exports `hook`: a hook of its world.
    pub fn exports(&self, hook: Hook) -> bool {
        self.world.hooks().contains(&hook)
    }

    /// Whether `hook` runs: a hook of the world, and in worlds `gate` and `listener` one the manifest names in
    /// `[hooks.<name>]` ([`World::hooks_named`]). The calls, the lookups (who listens, who gates) and the fixtures
    /// consult this.
    pub fn has_hook(&self, hook: Hook) -> bool {
        self.exports(hook) && (!self.world.hooks_named() || self.hook_config(hook).is_some())
    }

    /// The hooks that run, in the world's order.
    pub fn running_hooks(&self) -> Vec<Hook> {
        self.world.hooks().iter().copied().filter(|&h| self.has_hook(h)).collect()
    }

    /// Whether this plugin handles command `name`.
    pub fn handles_command(&self, name: &str) -> bool {
        if !self.has_hook(Hook::OnCommand) {
            return false;
        }
        match self.hook_config(Hook::OnCommand) {
            Some(c) if !c.commands.is_empty() => c.commands.iter().any(|c| c == name),
            _ => name.strip_prefix(self.name.as_str()).is_some_and(|rest| rest.starts_with('.')),
        }
    }

    /// The checked `[http]` section: `None` without the `http` grant. The grant needs a section with a non-empty
    /// `allow`, and a section needs the grant (a configuration that does nothing is a mistake).
    pub(crate) fn http_policy(&self) -> Result<Option<HttpPolicy>, LoadError> {
        let granted = self.grants.contains(&Grant::Http);
        match &self.http {
            None if granted => Err(LoadError::Manifest(
                "grant \"http\" needs an [http] section whose allow lists the hosts the plugin may reach".to_owned(),
            )),
            None => Ok(None),
            Some(_) if !granted => {
                Err(LoadError::Manifest("[http] is configured but \"http\" is not in grants".to_owned()))
            }
            Some(section) => section.policy().map(Some).map_err(LoadError::Manifest),
        }
    }

    fn hook_config(&self, hook: Hook) -> Option<&HookConfig> {
        match hook {
            Hook::BeforePublish => self.hooks.before_publish.as_ref(),
            Hook::OnCommand => self.hooks.on_command.as_ref(),
            Hook::BeforePush => self.hooks.before_push.as_ref(),
            Hook::ScanFile => self.hooks.scan_file.as_ref(),
            Hook::AfterPublish => self.hooks.after_publish.as_ref(),
            Hook::OnAccount => self.hooks.on_account.as_ref(),
            Hook::OnLogin => self.hooks.on_login.as_ref(),
            Hook::BeforeSubscribe => self.hooks.before_subscribe.as_ref(),
        }
    }

    fn validate(&self) -> Result<(), LoadError> {
        let bad = |m: String| Err(LoadError::Manifest(m));
        let name_ok = self.name.len() <= 64
            && self.name.starts_with(|c: char| c.is_ascii_lowercase())
            && self.name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !name_ok {
            return bad(format!("name {:?} must be lower-case letters, digits and dashes", self.name));
        }
        let core = self.version.split_once('-').map_or(self.version.as_str(), |(core, _)| core);
        let parts: Vec<&str> = core.split('.').collect();
        if parts.len() != 3 || parts.iter().any(|p| p.is_empty() || !p.chars().all(|c| c.is_ascii_digit())) {
            return bad(format!("version {:?} is not MAJOR.MINOR.PATCH", self.version));
        }
        // Stored with every release: bounded, and free of characters a path or a header would need escaped.
        let suffix_ok = self.version.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+'));
        if self.version.len() > 64 || !suffix_ok {
            return bad(format!("version {:?} must be at most 64 letters, digits, '.', '-' or '+'", self.version));
        }
        for hook in Hook::ALL {
            if self.hook_config(hook).is_some() && !self.exports(hook) {
                return bad(format!("hook {hook} is configured but world {:?} does not export it", self.world));
            }
        }
        if self.world.hooks_named() && self.running_hooks().is_empty() {
            let tables: Vec<String> = self.world.hooks().iter().map(|h| format!("[hooks.{h}]")).collect();
            return bad(format!(
                "world {:?} runs only the hooks the manifest names, and it names none: add {} (an empty table is \
                 enough)",
                self.world.as_str(),
                tables.join(" and/or ")
            ));
        }
        if self.hook_config(Hook::BeforePush).and_then(|c| c.failure) == Some(FailurePolicy::Closed) {
            return bad("before-push always fails open (a fault sends the push unchanged)".to_owned());
        }
        if self.hook_config(Hook::ScanFile).and_then(|c| c.failure) == Some(FailurePolicy::Open) {
            return bad("scan-file always fails closed (a fault sends the file to review)".to_owned());
        }
        for hook in [Hook::AfterPublish, Hook::OnAccount] {
            if self.hook_config(hook).and_then(|c| c.failure) == Some(FailurePolicy::Open) {
                return bad(format!("{hook} always fails closed (a fault is a failed delivery, retried)"));
            }
        }
        if let Some(sha) = &self.sha256
            && (sha.len() != 64 || !sha.chars().all(|c| c.is_ascii_hexdigit()))
        {
            return bad(format!("sha256 {sha:?} is not 64 hex digits"));
        }
        if self.instance.max_invocations == 0 {
            return bad("instance.max_invocations must be at least 1".to_owned());
        }
        validate_schema(&self.settings).map_err(LoadError::Manifest)?;
        self.http_policy()?;
        for (name, c) in &self.client_commands {
            // The name is a path segment of the route: keep it to characters that need no escaping.
            let shaped = !name.is_empty()
                && name.len() <= 64
                && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '-' | '_'));
            if !shaped {
                return bad(format!("client command {name:?} must be 1-64 lower-case letters, digits, '.', '-', '_'"));
            }
            if !self.handles_command(name) {
                return bad(format!("client command {name:?} is not a command this plugin handles (on-command)"));
            }
            // The host's commands and their namespaces (`friend.…`, `group.…`) are the host's: the host runs
            // them with facts it gathered, and a future host command must not collide with a plugin's.
            let space = name.split('.').next().unwrap_or_default();
            if palaver_api::CommandName::ALL.iter().any(|c| c.name().split('.').next() == Some(space)) {
                return bad(format!(
                    "client command {name:?} is in the host's namespace {space:?}: clients reach host commands \
                     through their own /v1/im routes"
                ));
            }
            if c.summary.trim().is_empty() {
                return bad(format!("client command {name:?} needs a summary"));
            }
            for (what, schema) in [("args", &c.args), ("result", &c.result)] {
                if schema.as_ref().is_some_and(|s| !s.is_object()) {
                    return bad(format!("client command {name:?}: {what} must be a JSON Schema table"));
                }
            }
        }
        for f in &self.fixtures {
            if !self.exports(f.hook) {
                return bad(format!("fixture {:?} calls hook {} that the world does not export", f.name, f.hook));
            }
            if !self.has_hook(f.hook) {
                return bad(format!(
                    "fixture {:?} calls hook {} that never runs: the manifest does not name it ([hooks.{}])",
                    f.name, f.hook, f.hook
                ));
            }
            if matches!(f.hook, Hook::BeforePush | Hook::ScanFile) {
                return bad(format!("fixture {:?}: {} has no golden fixtures", f.name, f.hook));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "name = \"m\"\nversion = \"1.2.3\"\nworld = \"full\"\n";

    #[test]
    fn client_commands_are_the_plugins_own_and_described() {
        let with = |extra: &str| Manifest::parse(&format!("{BASE}{extra}"));
        let m = with("[client_commands.\"m.hi\"]\nsummary = \"Say hi.\"\nargs = { type = \"object\" }\n").unwrap();
        assert_eq!(m.client_commands["m.hi"].args, Some(serde_json::json!({ "type": "object" })));
        let refused = |extra: &str, why: &str| {
            let e = with(extra).unwrap_err().to_string();
            assert!(e.contains(why), "{extra}: {e}");
        };
        refused("[client_commands.\"other.hi\"]\nsummary = \"x\"\n", "not a command this plugin handles");
        refused("[client_commands.\"m.hi\"]\nsummary = \" \"\n", "needs a summary");
        refused("[client_commands.\"m/hi\"]\nsummary = \"x\"\n", "lower-case");
        refused("[client_commands.\"m.hi\"]\nsummary = \"x\"\nargs = \"object\"\n", "JSON Schema table");
        refused("[client_commands.\"m.hi\"]\nsummary = \"x\"\nmethod = \"GET\"\n", "unknown field");
        // A host command (run with facts the host gathers) or its namespace is never a client command.
        let friends = "name = \"friends\"\nversion = \"1.0.0\"\nworld = \"command-handler\"\n\
                       [hooks.on-command]\ncommands = [\"friend.request.create\", \"friend.extra\"]\n";
        for name in ["friend.request.create", "friend.extra"] {
            let e = Manifest::parse(&format!("{friends}[client_commands.\"{name}\"]\nsummary = \"x\"\n"))
                .unwrap_err()
                .to_string();
            assert!(e.contains("host's namespace"), "{name}: {e}");
        }
        let publish_only = "name = \"m\"\nversion = \"1.0.0\"\nworld = \"publish-filter\"\n";
        assert!(Manifest::parse(&format!("{publish_only}[client_commands.\"m.hi\"]\nsummary = \"x\"\n")).is_err());
    }

    #[test]
    fn defaults_follow_the_hook() {
        let m = Manifest::parse(BASE).unwrap();
        assert_eq!(m.policy(Hook::BeforePublish), FailurePolicy::Closed);
        assert_eq!(m.policy(Hook::OnCommand), FailurePolicy::Closed);
        assert_eq!(m.priority, 100);
        assert_eq!(m.instance.mode, InstanceMode::Ephemeral);
        assert!(m.handles_command("m.anything"));
        assert!(!m.handles_command("mx.anything"));
        assert!(!m.handles_command("other.thing"));
    }

    #[test]
    fn listed_commands_replace_the_name_prefix() {
        let m =
            Manifest::parse(&format!("{BASE}[hooks.on-command]\ncommands = [\"a.b\"]\nfailure = \"open\"\n")).unwrap();
        assert!(m.handles_command("a.b"));
        assert!(!m.handles_command("m.x"));
        assert_eq!(m.policy(Hook::OnCommand), FailurePolicy::Open);
    }

    #[test]
    fn broken_rules_are_refused() {
        let bad = [
            "name = \"Bad Name\"\nversion = \"1.0.0\"\nworld = \"full\"\n",
            "name = \"m\"\nversion = \"1.0\"\nworld = \"full\"\n",
            "name = \"m\"\nversion = \"1.0.0\"\nworld = \"nope\"\n",
            "name = \"m\"\nversion = \"1.0.0\"\nworld = \"publish-filter\"\n[hooks.on-command]\n",
            "name = \"m\"\nversion = \"1.0.0\"\nworld = \"full\"\ngrants = [\"wasi\"]\n",
            "name = \"m\"\nversion = \"1.0.0\"\nworld = \"full\"\nsha256 = \"abc\"\n",
            "name = \"m\"\nversion = \"1.0.0\"\nworld = \"full\"\nsurprise = 1\n",
            "name = \"m\"\nversion = \"1.0.0\"\nworld = \"command-handler\"\n[[fixtures]]\nname = \"f\"\nexpect = { verdict = \"allow\" }\n",
        ];
        for text in bad {
            assert!(Manifest::parse(text).is_err(), "accepted: {text}");
        }
        assert!(Manifest::parse("name = \"m\"\nversion = \"1.0.0-rc.1\"\nworld = \"full\"\n").is_ok());
    }

    #[test]
    fn scan_file_is_the_hook_of_file_scanner_and_fails_closed() {
        let m = Manifest::parse("name = \"s\"\nversion = \"1.0.0\"\nworld = \"file-scanner\"\n").unwrap();
        assert_eq!(m.world.hooks(), &[Hook::ScanFile]);
        assert_eq!(m.policy(Hook::ScanFile), FailurePolicy::Closed);
        assert_eq!(Hook::ScanFile.to_string(), "scan-file");
        let closed =
            "name = \"s\"\nversion = \"1.0.0\"\nworld = \"file-scanner\"\n[hooks.scan-file]\nfailure = \"closed\"\n";
        assert!(Manifest::parse(closed).is_ok());
        assert!(Manifest::parse(&closed.replace("closed", "open")).is_err(), "scan-file cannot fail open");
        let fixture = "name = \"s\"\nversion = \"1.0.0\"\nworld = \"file-scanner\"\n[[fixtures]]\nname = \"f\"\nhook = \"scan-file\"\nexpect = { verdict = \"allow\" }\n";
        assert!(Manifest::parse(fixture).is_err(), "scan-file has no golden fixtures");
    }

    #[test]
    fn http_needs_its_grant_and_a_list() {
        let granted = format!("{BASE}grants = [\"http\"]\n");
        let e = Manifest::parse(&granted).unwrap_err().to_string();
        assert!(e.contains("needs an [http] section"), "{e}");
        let e = Manifest::parse(&format!("{granted}[http]\n")).unwrap_err().to_string();
        assert!(e.contains("at least one host"), "{e}");
        let e = Manifest::parse(&format!("{BASE}[http]\nallow = [\"a.example\"]\n")).unwrap_err().to_string();
        assert!(e.contains("not in grants"), "{e}");
        let e = Manifest::parse(&format!("{granted}[http]\nallow = [\"a.example/x\"]\n")).unwrap_err().to_string();
        assert!(e.contains("without a path"), "{e}");
        let e = Manifest::parse(&format!("{granted}[http]\nallow = [\"a.example\"]\nretries = 3\n")).unwrap_err();
        assert!(e.to_string().contains("unknown field"), "{e}");
        let m = Manifest::parse(&format!(
            "{granted}[http]\nallow = [\"127.0.0.1:8080\", \"*.example.org\"]\nmax_requests = 2\nmethods = [\"POST\"]\n"
        ))
        .unwrap();
        let p = m.http_policy().unwrap().unwrap();
        assert_eq!((p.max_requests, p.methods.as_slice()), (2, ["POST".to_owned()].as_slice()));
        assert_eq!(p.timeout, std::time::Duration::from_secs(2));
        assert_eq!(p.max_response_bytes, 256 << 10);
    }

    #[test]
    fn listener_and_gate_worlds_export_two_hooks_with_their_policies() {
        let both =
            "name = \"l\"\nversion = \"1.0.0\"\nworld = \"listener\"\n[hooks.after-publish]\n[hooks.on-account]\n";
        let listener = Manifest::parse(both).unwrap();
        assert_eq!(listener.world.hooks(), &[Hook::AfterPublish, Hook::OnAccount]);
        assert_eq!(listener.policy(Hook::AfterPublish), FailurePolicy::Closed);
        assert_eq!(Hook::OnAccount.fixed_policy(), Some(FailurePolicy::Closed));
        let open = "name = \"l\"\nversion = \"1.0.0\"\nworld = \"listener\"\n[hooks.on-account]\nfailure = \"open\"\n";
        let e = Manifest::parse(open).unwrap_err().to_string();
        assert!(e.contains("on-account always fails closed"), "{e}");
        let gate = "name = \"g\"\nversion = \"1.0.0\"\nworld = \"gate\"\n[hooks.on-login]\nfailure = \"open\"\n\
                    [hooks.before-subscribe]\n";
        let gate = Manifest::parse(gate).unwrap();
        assert_eq!(gate.world.hooks(), &[Hook::OnLogin, Hook::BeforeSubscribe]);
        assert_eq!(gate.policy(Hook::OnLogin), FailurePolicy::Open, "a gate's policy may be chosen");
        assert_eq!(gate.policy(Hook::BeforeSubscribe), FailurePolicy::Closed, "closed by default");
        assert_eq!(Hook::BeforeSubscribe.fixed_policy(), None);
        let wrong = "name = \"g\"\nversion = \"1.0.0\"\nworld = \"gate\"\n[hooks.after-publish]\n";
        assert!(Manifest::parse(wrong).is_err(), "a hook of another world");
        for h in Hook::ALL {
            let text = serde_json::to_value(h).unwrap();
            assert_eq!(text, h.as_str(), "serde and WIT names agree");
        }
        for w in [
            World::PublishFilter,
            World::CommandHandler,
            World::Full,
            World::PushFilter,
            World::FileScanner,
            World::Listener,
            World::Gate,
        ] {
            assert_eq!(serde_json::to_value(w).unwrap(), w.as_str(), "serde and manifest names agree");
        }
    }

    #[test]
    fn gates_and_listeners_run_only_the_hooks_they_name() {
        let with = |world: &str, extra: &str| {
            Manifest::parse(&format!("name = \"p\"\nversion = \"1.0.0\"\nworld = \"{world}\"\n{extra}"))
        };
        // A login-only gate: before-subscribe is exported (the SDK allows) but never runs.
        let login = with("gate", "[hooks.on-login]\n").unwrap();
        assert!(login.exports(Hook::BeforeSubscribe));
        assert!(login.has_hook(Hook::OnLogin) && !login.has_hook(Hook::BeforeSubscribe));
        assert_eq!(login.running_hooks(), vec![Hook::OnLogin]);
        // A message-only listener: no account event is ever queued for it.
        let messages = with("listener", "[hooks.after-publish]\n").unwrap();
        assert!(messages.has_hook(Hook::AfterPublish) && !messages.has_hook(Hook::OnAccount));
        // Both named, with or without keys in the tables.
        let both = with("listener", "[hooks.after-publish]\n[hooks.on-account]\nfailure = \"closed\"\n").unwrap();
        assert_eq!(both.running_hooks(), vec![Hook::AfterPublish, Hook::OnAccount]);
        // Neither named: refused, saying what to add.
        for (world, tables) in
            [("gate", "[hooks.on-login] and/or [hooks.before-subscribe]"), ("listener", "[hooks.after-publish]")]
        {
            let e = with(world, "").unwrap_err().to_string();
            assert!(e.contains("names none") && e.contains(tables), "{world}: {e}");
        }
        // A fixture of a hook the manifest does not name would test a hook that never runs.
        let fixture = "[hooks.on-login]\n[[fixtures]]\nname = \"f\"\nhook = \"before-subscribe\"\nexpect = { verdict = \"allow\" }\n";
        let e = with("gate", fixture).unwrap_err().to_string();
        assert!(e.contains("never runs") && e.contains("[hooks.before-subscribe]"), "{e}");
        // The other worlds run every hook of theirs, named or not.
        let full = with("full", "").unwrap();
        assert!(full.has_hook(Hook::BeforePublish) && full.has_hook(Hook::OnCommand));
        assert!(with("file-scanner", "").unwrap().has_hook(Hook::ScanFile));
        assert!(with("push-filter", "").unwrap().has_hook(Hook::BeforePush));
    }

    #[test]
    fn grants_name_their_interfaces() {
        for g in Grant::ALL {
            assert_eq!(Grant::from_interface(g.as_str()), Some(g));
        }
        assert_eq!(Grant::from_interface("types"), None);
    }
}
