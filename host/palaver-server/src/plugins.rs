//! The plugin platform as the node runs it: the registry over the node's ports, loaded from the plugins
//! directory at start and watched for changes, the effects of plugin calls delivered through the service, and
//! the admin API over the registry.

use crate::config::Config;
use crate::plugin_rollout::Rollouts;
use crate::plugins_admin::{load_report, word};
use anyhow::Context;
use palaver_api::bodies::admin as a;
use palaver_core::ports::{
    BusinessRules, ClientCommandDoc, ClientCommandState, PluginChoiceStore, PluginKv, PluginReleaseStore, RuleVerdict,
};
use palaver_core::ports::{PublishHook, PushHook, ScanHook, SubscriptionStore, TopicStore, UserStore};
use palaver_core::{TenantId, UserId};
use palaver_gateway::Admin;
use palaver_gateway::{AdminRefusal, PluginUpload};
use palaver_plugin_runtime::{
    DirWatcher, EffectError, Effects, EventTarget, FailurePolicy, Hook, HostServices, KvQuota, LoadOutcome, LoadReport,
    PluginEvent, PluginHooks, PluginNotification, PluginRegistry, PortsDirectory, RuntimeConfig, SystemClock,
    TenantChoice,
};
use palaver_service::Service;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Plugin effects delivered through the service, which is built after the ports (and so after the registry):
/// the service is bound once it exists.
#[derive(Default)]
pub(crate) struct ServiceEffects {
    service: OnceLock<Service>,
}

impl ServiceEffects {
    pub(crate) fn bind(&self, service: Service) {
        let _ = self.service.set(service);
    }

    fn service(&self) -> Result<&Service, EffectError> {
        self.service.get().ok_or_else(|| EffectError::Unavailable("the node is still starting".into()))
    }
}

#[async_trait::async_trait]
impl Effects for ServiceEffects {
    async fn emit(&self, tenant: TenantId, event: PluginEvent) -> Result<(), EffectError> {
        let target = match event.target {
            EventTarget::User(u) => palaver_service::EventTarget::User(u),
            EventTarget::Topic(t) => palaver_service::EventTarget::Topic(t),
        };
        self.service()?.emit_event(tenant, target, &event.name, event.payload);
        Ok(())
    }

    async fn notify(&self, tenant: TenantId, n: PluginNotification) -> Result<(), EffectError> {
        // Stored in im_system_notifications and announced to the user's devices on every node.
        let content = json!({ "title": n.title, "payload": n.payload, "plugin": n.plugin });
        self.service()?.notify_user(tenant, n.user, &n.kind, content, None).await.map(|_| ()).map_err(|e| {
            // The call that asked for it succeeded already; what remains is to say why the notice is missing.
            EffectError::Unavailable(format!("{}: {}", e.reason, e.message))
        })
    }
}

/// The node's plugin platform.
pub(crate) struct Plugins {
    pub(crate) registry: Arc<PluginRegistry>,
    pub(crate) effects: Arc<ServiceEffects>,
    dir: PathBuf,
    /// Where tenants' choices are stored for every node.
    choices: Arc<dyn PluginChoiceStore>,
    /// Uploaded releases and the cluster's rollouts.
    pub(crate) rollouts: Arc<Rollouts>,
    _watcher: Option<DirWatcher>,
    _reconcile: AbortOnDrop,
}

/// Stops the choices' refresh with the platform.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Plugins {
    /// Starts the registry and loads the plugins directory, when one is configured.
    pub(crate) async fn start(
        cfg: &Config,
        kv: Arc<dyn PluginKv>,
        choices: Arc<dyn PluginChoiceStore>,
        releases: Arc<dyn PluginReleaseStore>,
        users: Arc<dyn UserStore>,
        topics: Arc<dyn TopicStore>,
        subs: Arc<dyn SubscriptionStore>,
    ) -> anyhow::Result<Option<Plugins>> {
        let p = &cfg.plugins;
        if p.dir.as_os_str().is_empty() {
            return Ok(None);
        }
        let clock = Arc::new(SystemClock);
        let effects = Arc::new(ServiceEffects::default());
        let services =
            HostServices::new(kv, Arc::new(PortsDirectory::new(users, topics, subs)), effects.clone(), clock);
        let cache = if p.cache_dir.as_os_str().is_empty() {
            cfg.server.data_dir.join("plugin-cache")
        } else {
            p.cache_dir.clone()
        };
        let runtime = RuntimeConfig {
            // The largest message a client can send gets a full budget (the per-KiB allowances count up to it).
            max_input_bytes: cfg.limits.max_message_size,
            kv_quota: KvQuota { max_keys: p.kv_max_keys, max_bytes: p.kv_max_bytes },
            ..RuntimeConfig::default().with_cache_dir(cache).with_node(cfg.server.node_id.clone())
        };
        let registry = Arc::new(PluginRegistry::new(runtime, services).context("starting the plugin runtime")?);
        let dir = p.dir.clone();
        // Loading compiles components: keep it off the async workers.
        let report = tokio::task::spawn_blocking({
            let (registry, dir) = (registry.clone(), dir.clone());
            move || registry.load_dir(&dir)
        })
        .await?;
        log_report(&report);
        let watcher = if p.watch {
            Some(registry.watch(dir.clone(), Duration::from_millis(p.watch_interval_ms)).context("watching plugins")?)
        } else {
            None
        };
        // The cluster's rollouts and the tenants' stored choices, before the node serves (rollouts first: a choice
        // is checked against the version it will meet); then whatever other nodes store, every second.
        let rollouts = Arc::new(Rollouts::new(
            registry.clone(),
            releases,
            &cfg.server.node_id,
            &p.trusted_keys,
            p.max_upload_bytes,
        ));
        rollouts.catch_up().await.map_err(anyhow::Error::msg).context("loading plugin rollouts")?;
        let applied = Arc::new(AtomicI64::new(0));
        catch_up(&registry, choices.as_ref(), &applied)
            .await
            .map_err(anyhow::Error::msg)
            .context("loading plugin choices")?;
        rollouts.report().await;
        let reconcile = tokio::spawn({
            let (registry, choices, applied) = (Arc::downgrade(&registry), choices.clone(), applied.clone());
            let rollouts = Arc::downgrade(&rollouts);
            async move {
                let mut tick = tokio::time::interval(RECONCILE_EVERY);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    tick.tick().await;
                    let (Some(registry), Some(rollouts)) = (registry.upgrade(), rollouts.upgrade()) else { return };
                    if let Err(e) = rollouts.catch_up().await {
                        tracing::warn!(error = %e, "plugin rollouts not refreshed; retrying");
                    }
                    if let Err(e) = catch_up(&registry, choices.as_ref(), &applied).await {
                        tracing::warn!(error = %e, "plugin choices not refreshed; retrying");
                    }
                    rollouts.report().await;
                }
            }
        });
        Ok(Some(Plugins {
            registry,
            effects,
            dir,
            choices,
            rollouts,
            _watcher: watcher,
            _reconcile: AbortOnDrop(reconcile),
        }))
    }

    /// The publish hook that runs the plugins.
    pub(crate) fn hook(&self) -> Arc<dyn PublishHook> {
        Arc::new(PluginHooks::new(self.registry.clone()))
    }

    /// The push hook that runs the plugins' `before-push`.
    pub(crate) fn push_hook(&self) -> Arc<dyn PushHook> {
        Arc::new(PluginHooks::new(self.registry.clone()))
    }

    /// The scan hook that runs the plugins' `scan-file`.
    pub(crate) fn scan_hook(&self) -> Arc<dyn ScanHook> {
        Arc::new(PluginHooks::new(self.registry.clone()))
    }

    /// The gates that run the plugins' `on-login` and `before-subscribe`.
    pub(crate) fn gate_hook(&self) -> Arc<dyn palaver_core::ports::GateHook> {
        Arc::new(PluginHooks::new(self.registry.clone()))
    }

    /// The listeners that run the plugins' `after-publish` and `on-account`, for the event worker.
    pub(crate) fn event_hook(&self) -> Arc<dyn palaver_core::ports::EventHook> {
        Arc::new(PluginHooks::new(self.registry.clone()))
    }

    /// Loads whatever changed in the plugins directory (SIGHUP).
    pub(crate) async fn rescan(&self) -> LoadReport {
        let registry = self.registry.clone();
        let report = tokio::task::spawn_blocking(move || registry.rescan()).await.unwrap_or_default();
        log_report(&report);
        if let Ok(service) = self.effects.service() {
            service.metrics().config_refreshed(report.refused.is_empty());
        }
        report
    }
}

fn log_report(report: &LoadReport) {
    for outcome in &report.loaded {
        if let LoadOutcome::Loaded { name, version, hash, replaced } = outcome {
            tracing::info!(plugin = %name, %version, hash = %&hash[..hash.len().min(12)], replaced = ?replaced, "plugin loaded");
        }
    }
    for (path, why) in &report.refused {
        tracing::warn!(manifest = %path.display(), reason = %why, "plugin refused; any older version keeps running");
    }
}

#[async_trait::async_trait]
impl Admin for Plugins {
    async fn plugins(&self) -> a::PluginList {
        let plugins = self.registry.list().into_iter().map(crate::plugins_admin::plugin).collect();
        let (rollouts, nodes) = self.rollouts.cluster().await;
        a::PluginList { dir: self.dir.display().to_string(), plugins, rollouts, nodes }
    }

    fn upload_limit(&self) -> usize {
        self.rollouts.max_upload()
    }

    async fn upload(&self, upload: PluginUpload) -> Result<a::PluginReleased, AdminRefusal> {
        self.rollouts.upload(upload).await
    }

    async fn set_rollout(&self, name: &str, change: &a::RolloutChange) -> Result<a::PluginRolloutInfo, AdminRefusal> {
        self.rollouts.set_rollout(name, change).await
    }

    async fn rescan(&self) -> a::LoadReport {
        load_report(&Plugins::rescan(self).await)
    }

    async fn reload(&self, name: &str) -> Result<a::LoadReport, String> {
        let registry = self.registry.clone();
        let name = name.to_owned();
        let outcome = tokio::task::spawn_blocking(move || registry.reload(&name)).await.map_err(|e| e.to_string())?;
        match outcome {
            Ok(o) => Ok(load_report(&LoadReport { loaded: vec![o], refused: Vec::new() })),
            Err(e) => Err(e.to_string()),
        }
    }

    /// A plugin a rollout manages rolls back for the whole cluster (and stays rolled back); a directory's plugin
    /// on this node alone.
    async fn rollback(&self, name: &str) -> Result<a::RolledBack, String> {
        if let Some(cluster) = self.rollouts.rollback(name).await {
            return cluster;
        }
        let r = self.registry.rollback(name).map_err(|e| e.to_string())?;
        Ok(a::RolledBack { name: r.name, from: r.from, to: r.to })
    }

    fn tenant_plugin(&self, tenant: u64, name: &str) -> Result<a::TenantPlugin, String> {
        let tenant = TenantId(tenant);
        let settings = self.registry.settings(tenant, name).map_err(|e| e.to_string())?;
        let choice = self.registry.tenant_choices(tenant).into_iter().find(|c| c.plugin == name);
        let enabled = choice.as_ref().and_then(|c| c.enabled);
        // What a fault means for this tenant, hook by hook, all choices applied; and which of them it chose.
        let failure = self
            .registry
            .failure_policies(tenant, name)
            .map_err(|e| e.to_string())?
            .into_iter()
            .map(|(h, p)| (h.as_str().to_owned(), word(&p)))
            .collect();
        let http_allow = choice.as_ref().and_then(|c| c.http_allow.clone());
        let http_allow_manifest = self.registry.http_allow(tenant, name).map_err(|e| e.to_string())?;
        let chosen = choice.map(|c| c.failure).unwrap_or_default();
        let failure_chosen = chosen.into_iter().map(|(h, p)| (h.as_str().to_owned(), word(&p))).collect();
        Ok(a::TenantPlugin {
            plugin: name.to_owned(),
            tenant: tenant.0,
            enabled,
            settings,
            failure,
            failure_chosen,
            http_allow,
            http_allow_manifest,
        })
    }

    /// Builds the whole new choice from the current one and `change`, checks it, stores it (every node applies it
    /// from the store within a second, and a restart replays it), then applies it here. A choice that cannot be
    /// stored changes nothing.
    async fn set_tenant_plugin(&self, tenant: u64, name: &str, change: &Value) -> Result<a::TenantPlugin, String> {
        let t = TenantId(tenant);
        let mut choice =
            self.registry.tenant_choices(t).into_iter().find(|c| c.plugin == name).unwrap_or_else(|| TenantChoice {
                plugin: name.to_owned(),
                enabled: None,
                settings: None,
                failure: Default::default(),
                http_allow: None,
            });
        if let Some(enabled) = change.get("enabled") {
            choice.enabled = match enabled {
                Value::Null => None,
                Value::Bool(b) => Some(*b),
                _ => return Err("enabled must be true, false or null".into()),
            };
        }
        if let Some(settings) = change.get("settings") {
            choice.settings = (!settings.is_null()).then(|| settings.clone());
        }
        if let Some(list) = change.get("http_allow") {
            choice.http_allow = http_allow_of(list)?;
        }
        for (hook, policy) in change.get("failure").map(failure_change).transpose()?.unwrap_or_default() {
            match policy {
                Some(p) => choice.failure.insert(hook, p),
                None => choice.failure.remove(&hook),
            };
        }
        self.registry.check_choice(&choice).map_err(|e| e.to_string())?;
        self.choices
            .put_plugin_choice(t, name, &choice_doc(&choice))
            .await
            .map_err(|e| format!("the choice could not be stored, nothing changed: {e}"))?;
        self.registry.apply_choice(t, &choice).map_err(|e| e.to_string())?;
        self.tenant_plugin(tenant, name)
    }
}

/// A choice as it is stored: the admin API's shape, every field present.
fn choice_doc(c: &TenantChoice) -> Value {
    let failure: serde_json::Map<String, Value> =
        c.failure.iter().map(|(h, p)| (h.as_str().to_owned(), Value::from(word(p)))).collect();
    json!({ "enabled": c.enabled, "settings": c.settings, "failure": failure, "http_allow": c.http_allow })
}

/// `http_allow` as given: `null` (the manifest's list) or a list of strings (checked against the manifest's by
/// the registry).
fn http_allow_of(v: &Value) -> Result<Option<Vec<String>>, String> {
    match v {
        Value::Null => Ok(None),
        Value::Array(items) => items
            .iter()
            .map(|i| i.as_str().map(str::to_owned).ok_or_else(|| "http_allow must be a list of hosts or null".into()))
            .collect::<Result<Vec<_>, String>>()
            .map(Some),
        _ => Err("http_allow must be a list of hosts or null".into()),
    }
}

/// A stored choice read back.
fn choice_of(plugin: &str, doc: &Value) -> Result<TenantChoice, String> {
    let enabled = match doc.get("enabled") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(other) => return Err(format!("enabled is {other}")),
    };
    let settings = doc.get("settings").filter(|s| !s.is_null()).cloned();
    let failure = match doc.get("failure") {
        None | Some(Value::Null) => Vec::new(),
        Some(f) => failure_change(f)?,
    };
    let failure = failure.into_iter().filter_map(|(h, p)| p.map(|p| (h, p))).collect();
    let http_allow = doc.get("http_allow").map(http_allow_of).transpose()?.flatten();
    Ok(TenantChoice { plugin: plugin.to_owned(), enabled, settings, failure, http_allow })
}

/// How often a node asks the store for choices other nodes made.
const RECONCILE_EVERY: Duration = Duration::from_secs(1);

/// Applies every stored choice newer than `applied`, page by page, and moves `applied` on. A choice that no
/// longer fits its plugin (settings a new version's schema refuses) is logged and skipped: the plugin keeps the
/// tenant's earlier choice.
async fn catch_up(registry: &PluginRegistry, store: &dyn PluginChoiceStore, applied: &AtomicI64) -> Result<(), String> {
    const PAGE: usize = 500;
    loop {
        let page = store.plugin_choices_since(applied.load(Ordering::SeqCst), PAGE).await.map_err(|e| e.to_string())?;
        for stored in &page {
            let applied_ok = choice_of(&stored.plugin, &stored.choice)
                .and_then(|c| registry.apply_choice(stored.tenant, &c).map_err(|e| e.to_string()));
            if let Err(e) = applied_ok {
                tracing::warn!(tenant = stored.tenant.0, plugin = %stored.plugin, error = %e, "a stored plugin choice was not applied");
            }
            applied.fetch_max(stored.version, Ordering::SeqCst);
        }
        if page.len() < PAGE {
            return Ok(());
        }
    }
}

/// `{"before-publish": "open"|"closed"|null, "on-command": …, "on-login": …, "before-subscribe": …}`, checked
/// whole before anything is applied: the tenant's failure policy per hook, null going back to the plugin's. Only
/// the hooks whose policy may be chosen are named here (`before-push`, `scan-file` and the listeners have theirs
/// fixed).
fn failure_change(v: &Value) -> Result<Vec<(Hook, Option<FailurePolicy>)>, String> {
    let choosable: Vec<Hook> = Hook::ALL.into_iter().filter(|h| h.fixed_policy().is_none()).collect();
    let names = choosable.iter().map(|h| h.as_str()).collect::<Vec<_>>().join(", ");
    let Some(map) = v.as_object() else {
        return Err(format!("failure must be an object of hook names ({names}) to policies"));
    };
    map.iter()
        .map(|(k, p)| {
            let Some(hook) = choosable.iter().copied().find(|h| h.as_str() == k) else {
                return Err(format!("failure: no hook {k:?} whose policy a tenant may choose ({names})"));
            };
            let policy = match p.as_str() {
                _ if p.is_null() => None,
                Some("open") => Some(FailurePolicy::Open),
                Some("closed") => Some(FailurePolicy::Closed),
                _ => return Err(format!("failure.{k} must be \"open\", \"closed\" or null")),
            };
            Ok((hook, policy))
        })
        .collect()
}

/// The business rules of the `/v1/im/` commands, decided by the plugins that handle them (`on-command`).
pub(crate) struct PluginRules {
    registry: Arc<PluginRegistry>,
}

#[async_trait::async_trait]
impl BusinessRules for PluginRules {
    fn available(&self, tenant: TenantId, command: &str) -> bool {
        PluginHooks::new(self.registry.clone()).handles_command(tenant, command)
    }

    async fn decide(&self, tenant: TenantId, actor: UserId, command: &str, input: &str) -> RuleVerdict {
        let ctx = palaver_plugin_runtime::CommandContext::new(tenant, actor);
        verdict(PluginHooks::new(self.registry.clone()).run_command_text(&ctx, command, input).await)
    }

    fn client_command(&self, tenant: TenantId, plugin: &str, command: &str) -> ClientCommandState {
        PluginHooks::new(self.registry.clone()).client_command(tenant, plugin, command)
    }

    async fn run_client_command(
        &self,
        tenant: TenantId,
        actor: UserId,
        plugin: &str,
        command: &str,
        args: &Value,
    ) -> RuleVerdict {
        let ctx = palaver_plugin_runtime::CommandContext::new(tenant, actor);
        verdict(PluginHooks::new(self.registry.clone()).run_client_command(&ctx, plugin, command, args).await)
    }

    fn client_commands(&self) -> Vec<ClientCommandDoc> {
        PluginHooks::new(self.registry.clone()).client_commands()
    }
}

/// A plugin command's outcome as the rules port says it; no plugin for it means no rules.
fn verdict(
    outcome: Result<palaver_plugin_runtime::CommandOutcome, palaver_plugin_runtime::CommandError>,
) -> RuleVerdict {
    use palaver_plugin_runtime::{CommandError, CommandOutcome};
    match outcome {
        Ok(CommandOutcome::Ok(v)) => RuleVerdict::Allow(v),
        Ok(CommandOutcome::Rejected { code, reason_code, message }) => {
            RuleVerdict::Refuse { status: code, reason: reason_code, message }
        }
        Err(CommandError::UnknownCommand(_)) => RuleVerdict::NoRules,
    }
}

impl Plugins {
    /// The rules the plugins hold for business commands.
    pub(crate) fn rules(&self) -> Arc<dyn BusinessRules> {
        Arc::new(PluginRules { registry: self.registry.clone() })
    }
}
