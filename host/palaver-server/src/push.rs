//! `[push]`: offline push settings, and the providers a node builds from them (FCM, APNs, JPush, the webhook), which
//! the push worker sends through.

use palaver_core::ports::PushProvider;
use palaver_push::{
    ApnsConfig, ApnsProvider, FcmConfig, FcmProvider, JpushConfig, JpushProvider, WebhookConfig, WebhookProvider,
};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Offline push: the worker on `im.push.task`, its dedup and retries, and the providers.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct PushConfig {
    /// Stored messages make push tasks, and `{hi dev}` registers devices.
    pub enabled: bool,
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
    pub fcm: Option<FcmSection>,
    pub apns: Option<ApnsSection>,
    pub jpush: Option<JpushSection>,
    pub webhook: Option<WebhookSection>,
}

impl Default for PushConfig {
    fn default() -> Self {
        PushConfig {
            enabled: false,
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
        let none = self.fcm.is_none() && self.apns.is_none() && self.jpush.is_none() && self.webhook.is_none();
        if self.enabled && none {
            return Err("push.enabled needs a provider: [push.fcm], [push.apns], [push.jpush] or [push.webhook]".into());
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

    /// The service's view: whether tasks are made, previews, the dedup TTL, bounds and the provider names.
    pub fn service(&self, providers: &[Arc<dyn PushProvider>]) -> palaver_service::backbone::push::PushConfig {
        palaver_service::backbone::push::PushConfig {
            enabled: self.enabled,
            preview: self.preview,
            dedup_ttl_ms: self.dedup_ttl_seconds * 1000,
            buffer: self.buffer,
            max_devices_per_user: self.max_devices_per_user,
            providers: providers.iter().map(|p| p.name().to_owned()).collect(),
            max_delay_ms: self.max_delay_ms,
            max_delayed: self.max_delayed,
        }
    }
}
