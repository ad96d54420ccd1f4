//! `[push]`: offline push settings, and the providers a node builds from them (FCM, APNs, JPush, the webhook), which
//! the push worker sends through.

use palaver_api::bodies::admin::PushSettings;
use palaver_core::ports::PushProvider;
use palaver_push::{
    ApnsConfig, ApnsProvider, FcmConfig, FcmProvider, JpushConfig, JpushProvider, ServiceAccount, WebhookConfig,
    WebhookProvider,
};
use palaver_service::backbone::push::ProviderFactory;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Offline push: the worker on `im.push.task`, its dedup and retries, and the providers.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct PushConfig {
    /// Stored messages make push tasks, and `{hi dev}` registers devices.
    pub enabled: bool,
    /// This node runs the push worker (consumes `im.push.task` and sends). Off: it only makes tasks, for a
    /// cluster whose pushes are sent by other nodes (on Kafka), so that the chat nodes' CPU goes to chat.
    pub worker: bool,
    /// Pushes carry up to 128 characters of the message's text (never of a held message).
    pub preview: bool,
    /// How long `push:dedup:{topic}:{seq}:{uid}` keeps a user from being pushed the same message again (5–30
    /// minutes).
    pub dedup_ttl_seconds: u64,
    /// Push tasks waiting between the publish path and the outbox; beyond it new tasks are dropped and counted.
    pub buffer: usize,
    /// Devices one user may register (`{hi dev}`); a registration beyond it is refused.
    pub max_devices_per_user: u64,
    /// Claims the embedded mode's in-process dedup keeps at most.
    pub dedup_capacity: usize,
    /// Attempts per device on retryable failures (429, 5xx, network) before the push is dead-lettered.
    pub max_attempts: u32,
    /// The first retry's delay in milliseconds, doubled up to `retry_backoff_max_ms` (a provider's
    /// `Retry-After` replaces it, capped the same).
    pub retry_backoff_ms: u64,
    pub retry_backoff_max_ms: u64,
    /// The longest a push filter (a plugin's `before-push`) may delay a push; a longer delay is cut to it.
    pub max_delay_ms: u64,
    /// Delayed pushes one tenant keeps waiting; beyond it a delayed push is sent at once.
    pub max_delayed: usize,
    /// Tenants whose own push settings (set through the admin API) a node keeps loaded at most.
    pub tenant_cache: usize,
    /// How long a node trusts a tenant's loaded push settings before reading them again: how long a change made
    /// through another node's admin API takes to apply here.
    pub tenant_refresh_ms: u64,
    /// Users whose devices the push worker keeps in memory on a node without a shared bus (the embedded default),
    /// where every device change goes through this process; emptied when full.
    pub device_cache: usize,
    pub fcm: Option<FcmSection>,
    pub apns: Option<ApnsSection>,
    pub jpush: Option<JpushSection>,
    pub webhook: Option<WebhookSection>,
}

impl Default for PushConfig {
    fn default() -> Self {
        PushConfig {
            enabled: false,
            worker: true,
            preview: false,
            dedup_ttl_seconds: 600,
            buffer: 10_000,
            max_devices_per_user: 16,
            dedup_capacity: 100_000,
            max_attempts: 5,
            retry_backoff_ms: 200,
            retry_backoff_max_ms: 30_000,
            max_delay_ms: 3_600_000,
            max_delayed: 10_000,
            tenant_cache: 10_000,
            tenant_refresh_ms: 5_000,
            device_cache: 100_000,
            fcm: None,
            apns: None,
            jpush: None,
            webhook: None,
        }
    }
}

/// `[push.fcm]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct FcmSection {
    /// The service account JSON (`project_id`, `client_email`, `private_key`, `token_uri`).
    pub credentials_file: String,
    /// Base URL; sends go to `{endpoint}/v1/projects/{project_id}/messages:send`.
    pub endpoint: String,
}

impl Default for FcmSection {
    fn default() -> Self {
        FcmSection { credentials_file: String::new(), endpoint: palaver_push::FCM_ENDPOINT.to_owned() }
    }
}

/// `[push.apns]`: token-based authentication with a `.p8` key.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ApnsSection {
    /// The `.p8` signing key (PEM).
    pub key_file: String,
    pub key_id: String,
    pub team_id: String,
    /// The app's bundle id (`apns-topic`).
    pub topic: String,
    /// Base URL; pushes go to `{endpoint}/3/device/{token}`.
    pub endpoint: String,
}

impl Default for ApnsSection {
    fn default() -> Self {
        ApnsSection {
            key_file: String::new(),
            key_id: String::new(),
            team_id: String::new(),
            topic: String::new(),
            endpoint: palaver_push::APNS_ENDPOINT.to_owned(),
        }
    }
}

/// `[push.jpush]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct JpushSection {
    pub app_key: String,
    pub master_secret: String,
    /// Base URL; pushes go to `{endpoint}/v3/push`.
    pub endpoint: String,
}

impl Default for JpushSection {
    fn default() -> Self {
        JpushSection {
            app_key: String::new(),
            master_secret: String::new(),
            endpoint: palaver_push::JPUSH_ENDPOINT.to_owned(),
        }
    }
}

/// `[push.webhook]`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct WebhookSection {
    pub url: String,
    /// The HMAC-SHA256 key of the `X-Palaver-Signature` header.
    pub secret: String,
}

impl PushConfig {
    /// Checks the values; the providers' credentials are read at start.
    pub fn validate(&self) -> Result<(), String> {
        if !(300..=1800).contains(&self.dedup_ttl_seconds) {
            return Err("push.dedup_ttl_seconds must be 300–1800 (5 to 30 minutes)".into());
        }
        if self.buffer == 0 || self.dedup_capacity == 0 || self.max_attempts == 0 || self.retry_backoff_ms == 0 {
            return Err("push.buffer, dedup_capacity, max_attempts and retry_backoff_ms must be ≥ 1".into());
        }
        if self.max_delay_ms > 86_400_000 {
            return Err("push.max_delay_ms must be at most 86400000 (a day)".into());
        }
        if self.retry_backoff_max_ms < self.retry_backoff_ms {
            return Err("push.retry_backoff_max_ms must be ≥ retry_backoff_ms".into());
        }
        if self.tenant_cache == 0 || !(100..=600_000).contains(&self.tenant_refresh_ms) {
            return Err("push.tenant_cache must be ≥ 1 and push.tenant_refresh_ms 100–600000".into());
        }
        if self.device_cache == 0 {
            return Err("push.device_cache must be ≥ 1".into());
        }
        Ok(())
    }

    /// The providers configured, built (reading FCM's credentials file).
    pub fn providers(&self) -> anyhow::Result<Vec<Arc<dyn PushProvider>>> {
        let mut out: Vec<Arc<dyn PushProvider>> = Vec::new();
        if let Some(f) = &self.fcm {
            out.push(Arc::new(FcmProvider::new(FcmConfig::from_file(&f.credentials_file, &f.endpoint)?)?));
        }
        if let Some(a) = &self.apns {
            let cfg = ApnsConfig::from_file(&a.key_file, &a.key_id, &a.team_id, &a.topic, &a.endpoint)?;
            out.push(Arc::new(ApnsProvider::new(cfg)?));
        }
        if let Some(j) = &self.jpush {
            let cfg = JpushConfig {
                app_key: j.app_key.clone(),
                master_secret: j.master_secret.clone(),
                endpoint: j.endpoint.clone(),
            };
            out.push(Arc::new(JpushProvider::new(cfg)?));
        }
        if let Some(w) = &self.webhook {
            out.push(Arc::new(WebhookProvider::new(WebhookConfig { url: w.url.clone(), secret: w.secret.clone() })?));
        }
        Ok(out)
    }

    /// The service's view: whether tasks are made, previews, the dedup TTL and the bounds.
    pub fn service(&self) -> palaver_service::backbone::push::PushConfig {
        palaver_service::backbone::push::PushConfig {
            enabled: self.enabled,
            preview: self.preview,
            dedup_ttl_ms: self.dedup_ttl_seconds * 1000,
            buffer: self.buffer,
            max_devices_per_user: self.max_devices_per_user,
            max_delay_ms: self.max_delay_ms,
            max_delayed: self.max_delayed,
            tenant_cache: self.tenant_cache,
            tenant_refresh_ms: self.tenant_refresh_ms,
            device_cache: self.device_cache,
        }
    }
}

/// Builds the providers of a tenant's own settings (the admin API's `PUT …/push`), with the same adapters and the
/// providers' real endpoints as defaults.
pub struct TenantProviders;

impl ProviderFactory for TenantProviders {
    fn build(&self, s: &PushSettings) -> Result<Vec<Arc<dyn PushProvider>>, String> {
        let urls = [
            ("fcm.endpoint", s.fcm.as_ref().and_then(|f| f.endpoint.as_ref())),
            ("apns.endpoint", s.apns.as_ref().and_then(|a| a.endpoint.as_ref())),
            ("jpush.endpoint", s.jpush.as_ref().and_then(|j| j.endpoint.as_ref())),
            ("webhook.url", s.webhook.as_ref().map(|w| &w.url)),
        ];
        for (field, url) in urls {
            if let Some(url) = url {
                check_url(url).map_err(|e| format!("{field}: {e}"))?;
            }
        }
        let mut out: Vec<Arc<dyn PushProvider>> = Vec::new();
        let endpoint = |e: &Option<String>, default: &str| e.clone().unwrap_or_else(|| default.to_owned());
        if let Some(f) = &s.fcm {
            let account: ServiceAccount =
                serde_json::from_value(f.credentials.clone()).map_err(|e| format!("fcm.credentials: {e}"))?;
            let cfg = FcmConfig { account, endpoint: endpoint(&f.endpoint, palaver_push::FCM_ENDPOINT) };
            out.push(Arc::new(FcmProvider::new(cfg).map_err(|e| format!("fcm: {e}"))?));
        }
        if let Some(a) = &s.apns {
            let cfg = ApnsConfig {
                key_pem: a.key.clone(),
                key_id: a.key_id.clone(),
                team_id: a.team_id.clone(),
                topic: a.topic.clone(),
                endpoint: endpoint(&a.endpoint, palaver_push::APNS_ENDPOINT),
            };
            out.push(Arc::new(ApnsProvider::new(cfg).map_err(|e| format!("apns: {e}"))?));
        }
        if let Some(j) = &s.jpush {
            if j.app_key.is_empty() || j.master_secret.is_empty() {
                return Err("jpush: app_key and master_secret are required".into());
            }
            let cfg = JpushConfig {
                app_key: j.app_key.clone(),
                master_secret: j.master_secret.clone(),
                endpoint: endpoint(&j.endpoint, palaver_push::JPUSH_ENDPOINT),
            };
            out.push(Arc::new(JpushProvider::new(cfg).map_err(|e| format!("jpush: {e}"))?));
        }
        if let Some(w) = &s.webhook {
            if w.secret.is_empty() {
                return Err("webhook: a secret is required (it signs every request)".into());
            }
            let cfg = WebhookConfig { url: w.url.clone(), secret: w.secret.clone() };
            out.push(Arc::new(WebhookProvider::new(cfg).map_err(|e| format!("webhook: {e}"))?));
        }
        Ok(out)
    }
}

/// An `http` or `https` URL with a host.
fn check_url(url: &str) -> Result<(), String> {
    let rest = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://"));
    match rest {
        Some(r) if !r.is_empty() && !r.starts_with('/') => Ok(()),
        _ => Err(format!("{url:?} is not an http(s) URL")),
    }
}
