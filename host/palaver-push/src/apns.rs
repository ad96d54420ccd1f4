//! APNs with token-based authentication: an ES256 JWT (`kid` the key id, `iss` the team id, `iat`) signed with
//! the `.p8` key, reused for 50 minutes (Apple refuses tokens older than an hour and renewals more often than
//! every 20 minutes), sent over HTTP/2 as `POST {endpoint}/3/device/{token}` with `apns-topic` (the app's bundle
//! id), `apns-push-type` (`alert`, or `background` for silent pushes), `apns-priority` (10, or 5 for silent ones)
//! and `apns-collapse-id` (`{topic}:{seq}`, so a repeat replaces rather than stacks). `410 Unregistered` means the
//! token is gone; `403 ExpiredProviderToken` drops the cached JWT and retries.

use crate::SetupError;
use crate::http::{answer_text, network, retry_after, status_error};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use palaver_core::TenantId;
use palaver_core::ports::{Device, PushError, PushMessage, PushProvider};
use parking_lot::Mutex;
use serde::Serialize;
use serde_json::{Value, json};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The default APNs endpoint (production).
pub const APNS_ENDPOINT: &str = "https://api.push.apple.com";
/// How long one provider token is used.
const TOKEN_LIFE: Duration = Duration::from_secs(50 * 60);
/// `apns-collapse-id` is at most this many bytes.
const MAX_COLLAPSE_ID: usize = 64;

/// `[push.apns]`: the `.p8` key's PEM text and its identifiers, the app's bundle id, the base URL.
#[derive(Debug, Clone)]
pub struct ApnsConfig {
    pub key_pem: String,
    pub key_id: String,
    pub team_id: String,
    pub topic: String,
    pub endpoint: String,
}

impl ApnsConfig {
    /// Reads the `.p8` key at `path`.
    pub fn from_file(path: &str, key_id: &str, team_id: &str, topic: &str, endpoint: &str) -> Result<Self, SetupError> {
        let key_pem = std::fs::read_to_string(path).map_err(|err| SetupError::Read { path: path.to_owned(), err })?;
        Ok(ApnsConfig {
            key_pem,
            key_id: key_id.to_owned(),
            team_id: team_id.to_owned(),
            topic: topic.to_owned(),
            endpoint: endpoint.to_owned(),
        })
    }
}

#[derive(Serialize)]
struct Claims<'a> {
    iss: &'a str,
    iat: u64,
}

/// Pushes through APNs.
pub struct ApnsProvider {
    cfg: ApnsConfig,
    key: EncodingKey,
    http: reqwest::Client,
    token: Mutex<Option<(String, Instant)>>,
}

impl ApnsProvider {
    pub fn new(cfg: ApnsConfig) -> Result<ApnsProvider, SetupError> {
        let http = reqwest::Client::builder().timeout(Duration::from_secs(10)).http2_prior_knowledge().build()?;
        ApnsProvider::with_client(cfg, http)
    }

    /// With a client of the caller's (tests trust their own CA this way).
    pub fn with_client(cfg: ApnsConfig, http: reqwest::Client) -> Result<ApnsProvider, SetupError> {
        if cfg.key_id.is_empty() || cfg.team_id.is_empty() || cfg.topic.is_empty() {
            return Err(SetupError::Credentials("APNs: key_id, team_id and topic are required".into()));
        }
        let key = EncodingKey::from_ec_pem(cfg.key_pem.as_bytes())
            .map_err(|e| SetupError::Credentials(format!("APNs key: {e}")))?;
        Ok(ApnsProvider { cfg, key, http, token: Mutex::new(None) })
    }

    fn provider_token(&self) -> Result<String, PushError> {
        let mut cached = self.token.lock();
        if let Some((t, made)) = cached.as_ref()
            && made.elapsed() < TOKEN_LIFE
        {
            return Ok(t.clone());
        }
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.cfg.key_id.clone());
        let iat = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let jwt = jsonwebtoken::encode(&header, &Claims { iss: &self.cfg.team_id, iat }, &self.key)
            .map_err(|e| PushError::Failed { reason: format!("signing the provider token: {e}") })?;
        *cached = Some((jwt.clone(), Instant::now()));
        Ok(jwt)
    }

    fn payload(msg: &PushMessage) -> Value {
        let aps = if msg.silent {
            json!({"content-available": 1})
        } else {
            json!({"alert": {"body": msg.body}, "sound": "default"})
        };
        let mut body = json!({"aps": aps});
        for (k, v) in &msg.data {
            body[k] = json!(v);
        }
        body
    }
}

#[async_trait::async_trait]
impl PushProvider for ApnsProvider {
    fn name(&self) -> &'static str {
        "apns"
    }

    async fn send(&self, _tenant: TenantId, device: &Device, msg: &PushMessage) -> Result<(), PushError> {
        let jwt = self.provider_token()?;
        let url = format!("{}/3/device/{}", self.cfg.endpoint.trim_end_matches('/'), device.token);
        let topic = msg.data.get("topic").map(String::as_str).unwrap_or_default();
        let seq = msg.data.get("seq").map(String::as_str).unwrap_or_default();
        let mut collapse = format!("{topic}:{seq}");
        collapse.truncate(MAX_COLLAPSE_ID);
        let resp = self
            .http
            .post(url)
            .header(reqwest::header::AUTHORIZATION, format!("bearer {jwt}"))
            .header("apns-topic", &self.cfg.topic)
            .header("apns-push-type", if msg.silent { "background" } else { "alert" })
            .header("apns-priority", if msg.silent { "5" } else { "10" })
            .header("apns-collapse-id", collapse)
            .json(&Self::payload(msg))
            .send()
            .await
            .map_err(network)?;
        let status = resp.status();
        if status.is_success() {
            return Ok(());
        }
        let after = retry_after(&resp);
        let text = answer_text(resp).await;
        let reason = serde_json::from_str::<Value>(&text).ok().and_then(|v| v["reason"].as_str().map(str::to_owned));
        match (status.as_u16(), reason.as_deref()) {
            (410, _) | (400, Some("BadDeviceToken")) => Err(PushError::Unregistered),
            (403, Some("ExpiredProviderToken")) => {
                *self.token.lock() = None;
                Err(PushError::Retry { reason: "APNs: provider token expired".into(), after_ms: None })
            }
            _ => Err(status_error(status, after, &text)),
        }
    }
}
