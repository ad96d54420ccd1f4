//! Each tenant's push in force: the node's `[push]` with the tenant's own settings (the `push` settings document,
//! set through the admin API) laid over it, and the providers those settings build.
//!
//! **Where it is read.** The publish path asks [`TenantPushes::peek`], which never waits: a tenant not loaded yet
//! follows the node's switches for that message while a background load fills the entry. The push worker and
//! device registration ask [`TenantPushes::get`], which loads when the entry is missing or older than
//! `push.tenant_refresh_ms`, so they act on what is stored. A change through the admin API replaces the entry on
//! the node that took it at once; every other node sees it within `push.tenant_refresh_ms`.
//!
//! **Bounds and faults.** At most `push.tenant_cache` tenants are kept, the least recently used going first.
//! A store that cannot be read keeps the entry it had (or the node's defaults); settings that no longer build
//! (a key the factory now refuses) fall back to the node's providers, logged, so a tenant is never left with a
//! half-built set.

use super::PushConfig;
use crate::{ServiceError, ServiceResult};
use lru::LruCache;
use palaver_api::bodies::admin::{PushProviderInUse, PushSettings, TenantPush as TenantPushBody};
use palaver_core::ports::{PushProvider, SettingsStore};
use palaver_core::{StoreError, StoreResult, TenantId};
use parking_lot::Mutex;
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The settings document that holds a tenant's push settings.
pub const PUSH_SETTING: &str = "push";

/// What the secrets of a tenant's settings read as in the admin API's answers.
const HIDDEN: &str = "***";

/// Builds the providers a tenant's own sections describe; implemented by the server over its provider crate.
pub trait ProviderFactory: Send + Sync {
    /// The providers of the sections `settings` sets (none for a section left out); an error names the section
    /// and what is wrong with it.
    fn build(&self, settings: &PushSettings) -> Result<Vec<Arc<dyn PushProvider>>, String>;
}

/// The push in force for one tenant.
pub struct TenantPush {
    pub enabled: bool,
    pub preview: bool,
    /// By name: the provider, and whether the tenant's own settings built it.
    providers: BTreeMap<String, (Arc<dyn PushProvider>, bool)>,
    /// The tenant's own settings as stored.
    own: PushSettings,
}

impl TenantPush {
    /// The provider a device registered with sends through.
    pub fn provider(&self, name: &str) -> Option<&Arc<dyn PushProvider>> {
        self.providers.get(name).map(|(p, _)| p)
    }

    /// The provider a new device of `platform` uses: APNs for `ios` when there is one, then FCM, JPush and the
    /// webhook, the first there is. `None` when there is none.
    pub fn provider_for(&self, platform: &str) -> Option<&str> {
        let has = |p: &str| self.providers.contains_key(p);
        if platform == "ios" && has("apns") {
            return Some("apns");
        }
        ["fcm", "jpush", "webhook"].into_iter().find(|p| has(p))
    }

    /// The admin API's view, secrets hidden.
    pub(crate) fn body(&self, tenant: TenantId) -> TenantPushBody {
        let order = ["apns", "fcm", "jpush", "webhook"];
        let providers = order
            .iter()
            .filter_map(|n| self.providers.get(*n).map(|(_, own)| (n, own)))
            .map(|(n, own)| PushProviderInUse {
                name: (*n).to_owned(),
                source: if *own { "tenant" } else { "node" }.to_owned(),
            })
            .collect();
        TenantPushBody {
            tenant: tenant.0,
            enabled: self.enabled,
            preview: self.preview,
            providers,
            settings: hidden(&self.own),
        }
    }
}

/// `settings` with every secret replaced by [`HIDDEN`].
fn hidden(settings: &PushSettings) -> PushSettings {
    let mut s = settings.clone();
    if let Some(f) = &mut s.fcm
        && let Some(key) = f.credentials.get_mut("private_key")
    {
        *key = HIDDEN.into();
    }
    if let Some(a) = &mut s.apns {
        a.key = HIDDEN.into();
    }
    if let Some(j) = &mut s.jpush {
        j.master_secret = HIDDEN.into();
    }
    if let Some(w) = &mut s.webhook {
        w.secret = HIDDEN.into();
    }
    s
}

/// One tenant's cached push: when it was read from the store, and what it is.
struct Entry {
    checked: Instant,
    push: Arc<TenantPush>,
}

/// The node's providers and the factory for tenants' own, set once the server has built them.
#[derive(Default)]
struct Node {
    providers: Vec<Arc<dyn PushProvider>>,
    factory: Option<Arc<dyn ProviderFactory>>,
}

/// Every loaded tenant's push, bounded and refreshed; see the module doc.
pub struct TenantPushes {
    store: Arc<dyn SettingsStore>,
    enabled: bool,
    preview: bool,
    refresh: Duration,
    node: arc_swap::ArcSwap<Node>,
    cache: Mutex<LruCache<TenantId, Entry>>,
    /// Tenants a background load is under way for, so the publish path starts one at a time.
    loading: Mutex<HashSet<TenantId>>,
}

impl TenantPushes {
    pub(crate) fn new(cfg: &PushConfig, store: Arc<dyn SettingsStore>) -> TenantPushes {
        let cap = NonZeroUsize::new(cfg.tenant_cache.max(1)).unwrap_or(NonZeroUsize::MIN);
        TenantPushes {
            store,
            enabled: cfg.enabled,
            preview: cfg.preview,
            refresh: Duration::from_millis(cfg.tenant_refresh_ms),
            node: arc_swap::ArcSwap::from_pointee(Node::default()),
            cache: Mutex::new(LruCache::new(cap)),
            loading: Mutex::new(HashSet::new()),
        }
    }

    /// Sets the node's providers and the factory of tenants' own (none: tenants' provider sections are refused),
    /// dropping whatever was cached.
    pub(crate) fn set_node(&self, providers: Vec<Arc<dyn PushProvider>>, factory: Option<Arc<dyn ProviderFactory>>) {
        self.node.store(Arc::new(Node { providers, factory }));
        self.cache.lock().clear();
    }

    /// The tenant's push as cached, without waiting: `None` when it is not loaded yet, and then a load starts in
    /// the background. A stale entry is answered and refreshed in the background too.
    pub(crate) fn peek(self: &Arc<Self>, tenant: TenantId) -> Option<Arc<TenantPush>> {
        let (push, fresh) = match self.cache.lock().get(&tenant) {
            Some(e) => (Some(e.push.clone()), e.checked.elapsed() < self.refresh),
            None => (None, false),
        };
        // The runtime is checked first: a tenant marked as loading with no task to load it would stay so.
        if !fresh && tokio::runtime::Handle::try_current().is_ok() && self.loading.lock().insert(tenant) {
            let this = self.clone();
            tokio::spawn(async move {
                this.get(tenant).await;
                this.loading.lock().remove(&tenant);
            });
        }
        push
    }

    /// The tenant's push as stored, read again when the entry is older than the refresh interval. A store that
    /// cannot be read, or settings that do not, keep the entry as it was (the node's defaults without one).
    pub(crate) async fn get(&self, tenant: TenantId) -> Arc<TenantPush> {
        if let Some(e) = self.cache.lock().get(&tenant)
            && e.checked.elapsed() < self.refresh
        {
            return e.push.clone();
        }
        match self.read(tenant).await {
            Ok(push) => push,
            Err(e) => {
                tracing::warn!(%tenant, error = %e, "the tenant's push settings are not readable; kept as they were");
                let cached = self.cache.lock().get(&tenant).map(|e| e.push.clone());
                cached.unwrap_or_else(|| Arc::new(self.build(tenant, PushSettings::default())))
            }
        }
    }

    /// Reads the tenant's settings from the store now and caches what they make; the providers already built
    /// are kept when the settings did not change (and with them their cached OAuth and JWT tokens).
    pub(crate) async fn read(&self, tenant: TenantId) -> StoreResult<Arc<TenantPush>> {
        let own: PushSettings = match self.store.get_setting(tenant, PUSH_SETTING).await? {
            None => PushSettings::default(),
            Some(v) => serde_json::from_value(v)
                .map_err(|e| StoreError::Internal(format!("the stored push settings do not read: {e}")))?,
        };
        let cached = self.cache.lock().get(&tenant).map(|e| e.push.clone());
        let push = match cached {
            Some(c) if c.own == own => c,
            _ => Arc::new(self.build(tenant, own)),
        };
        self.cache.lock().put(tenant, Entry { checked: Instant::now(), push: push.clone() });
        Ok(push)
    }

    /// The push `own` makes over the node's, or why its providers do not build.
    pub(crate) fn built(&self, own: PushSettings) -> Result<TenantPush, String> {
        let node = self.node.load();
        let mut providers = node_providers(&node);
        match &node.factory {
            Some(f) => providers.extend(f.build(&own)?.into_iter().map(|p| (p.name().to_owned(), (p, true)))),
            None if own.fcm.is_none() && own.apns.is_none() && own.jpush.is_none() && own.webhook.is_none() => {}
            None => return Err("this node builds no push providers of its own for tenants".into()),
        }
        Ok(self.assemble(own, providers))
    }

    /// The tenant's switches over the node's, with `providers`.
    fn assemble(&self, own: PushSettings, providers: BTreeMap<String, (Arc<dyn PushProvider>, bool)>) -> TenantPush {
        TenantPush {
            enabled: self.enabled && own.enabled.unwrap_or(true),
            preview: own.preview.unwrap_or(self.preview),
            providers,
            own,
        }
    }

    /// Makes `push` (of settings just stored) the tenant's entry.
    pub(crate) fn install(&self, tenant: TenantId, push: TenantPush) -> Arc<TenantPush> {
        let push = Arc::new(push);
        self.cache.lock().put(tenant, Entry { checked: Instant::now(), push: push.clone() });
        push
    }

    /// The push of a tenant with `own` settings over the node's; settings whose providers no longer build leave
    /// the node's providers alone in force.
    fn build(&self, tenant: TenantId, own: PushSettings) -> TenantPush {
        self.built(own.clone()).unwrap_or_else(|e| {
            tracing::warn!(%tenant, error = %e, "the tenant's push providers do not build; the node's apply");
            self.assemble(own, node_providers(&self.node.load()))
        })
    }

    /// The node's switches, for a message of a tenant not loaded yet.
    pub(crate) fn node_switches(&self) -> (bool, bool) {
        (self.enabled, self.preview)
    }
}

/// The node's providers by name, none of them the tenant's own.
fn node_providers(node: &Node) -> BTreeMap<String, (Arc<dyn PushProvider>, bool)> {
    node.providers.iter().map(|p| (p.name().to_owned(), (p.clone(), false))).collect()
}

impl crate::Service {
    /// Sets the node's push providers and the factory that builds tenants' own (none: a tenant's provider
    /// sections are refused). Called once by the server before traffic; a later call drops the loaded tenants.
    pub fn use_push_providers(&self, node: Vec<Arc<dyn PushProvider>>, factory: Option<Arc<dyn ProviderFactory>>) {
        self.inner.push_tenants.set_node(node, factory);
    }

    /// The push in force for `tenant` and its own settings (secrets hidden), as stored now.
    pub async fn push_settings(&self, tenant: TenantId) -> ServiceResult<TenantPushBody> {
        Ok(self.inner.push_tenants.read(tenant).await?.body(tenant))
    }

    /// Changes the tenant's own push settings: each top-level field of `change` replaces the stored one, and
    /// `null` removes it (the node's applies again). The result must read as [`PushSettings`] and its provider
    /// sections must build (a key that does not parse, a credentials file missing a field), or nothing changes.
    /// Every node applies it within `push.tenant_refresh_ms`; this one at once.
    pub async fn set_push_settings(&self, tenant: TenantId, change: &Value) -> ServiceResult<TenantPushBody> {
        let store = &self.inner.ports.settings;
        let (own, doc): (PushSettings, _) =
            crate::usecases::settings::merged(store.as_ref(), tenant, PUSH_SETTING, "push settings", change).await?;
        let push =
            self.inner.push_tenants.built(own).map_err(|e| ServiceError::Malformed(format!("push settings: {e}")))?;
        store.put_setting(tenant, PUSH_SETTING, doc.as_ref()).await?;
        Ok(self.inner.push_tenants.install(tenant, push).body(tenant))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use palaver_api::bodies::admin::{ApnsSettings, FcmSettings, WebhookSettings};
    use serde_json::json;

    #[test]
    fn every_secret_is_hidden_and_nothing_else() {
        let own = PushSettings {
            fcm: Some(FcmSettings {
                credentials: json!({ "project_id": "p", "private_key": "PEM", "client_email": "e" }),
                endpoint: None,
            }),
            apns: Some(ApnsSettings { key: "PEM".into(), key_id: "K".into(), ..Default::default() }),
            webhook: Some(WebhookSettings { url: "https://h".into(), secret: "s".into() }),
            ..Default::default()
        };
        let h = hidden(&own);
        assert_eq!(
            h.fcm.unwrap().credentials,
            json!({ "project_id": "p", "private_key": HIDDEN, "client_email": "e" })
        );
        let apns = h.apns.unwrap();
        assert_eq!((apns.key.as_str(), apns.key_id.as_str()), (HIDDEN, "K"));
        let hook = h.webhook.unwrap();
        assert_eq!((hook.url.as_str(), hook.secret.as_str()), ("https://h", HIDDEN));
    }
}
