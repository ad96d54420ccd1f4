//! The webhook provider: for apps with their own push service, each push is a JSON POST to the tenant's URL,
//! signed with HMAC-SHA256 over `{timestamp}.{body}` with the shared secret, so the receiver can check both the
//! sender and the freshness (`X-Palaver-Timestamp`, Unix seconds) before trusting it.
//!
//! Body: `{"tenant_id", "user", "device": {"id", "platform", "token"}, "silent", "body", "data": {…}}`. A 410
//! answer means the receiver no longer knows the token (the device is removed); 429 and 5xx are retried.

use crate::SetupError;
use crate::http::{answer_text, client, network, parse_url, retry_after, status_error};
use hmac::{Hmac, Mac};
use palaver_core::TenantId;
use palaver_core::ports::{Device, PushError, PushMessage, PushProvider};
use serde_json::json;
use sha2::Sha256;

/// The header carrying `sha256=<hex HMAC-SHA256(secret, "{timestamp}.{body}")>`.
pub const SIGNATURE_HEADER: &str = "x-palaver-signature";
/// The header carrying the Unix seconds the signature covers.
pub const TIMESTAMP_HEADER: &str = "x-palaver-timestamp";

/// `[push.webhook]`.
#[derive(Debug, Clone)]
pub struct WebhookConfig {
    pub url: String,
    pub secret: String,
}

/// The signature header's value for `body` sent at `timestamp`.
pub fn signature(secret: &[u8], timestamp: u64, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256=");
    for b in mac.finalize().into_bytes() {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0xf)]));
    }
    out
}

/// Pushes by POSTing to a webhook.
pub struct WebhookProvider {
    cfg: WebhookConfig,
    url: reqwest::Url,
    http: reqwest::Client,
}

impl WebhookProvider {
    pub fn new(cfg: WebhookConfig) -> Result<WebhookProvider, SetupError> {
        if cfg.secret.is_empty() {
            return Err(SetupError::Credentials("push.webhook.secret is required".into()));
        }
        let url = parse_url("push.webhook.url", &cfg.url)?;
        Ok(WebhookProvider { cfg, url, http: client()? })
    }
}

#[async_trait::async_trait]
impl PushProvider for WebhookProvider {
    fn name(&self) -> &'static str {
        "webhook"
    }

    async fn send(&self, tenant: TenantId, device: &Device, msg: &PushMessage) -> Result<(), PushError> {
        let body = json!({
            "tenant_id": tenant.0.to_string(),
            "user": device.user.to_string(),
            "device": {"id": device.device_id, "platform": device.platform, "token": device.token},
            "silent": msg.silent,
            "body": msg.body,
            "data": msg.data,
        });
        let body = serde_json::to_vec(&body).map_err(|e| PushError::Failed { reason: e.to_string() })?;
        let ts = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let resp = self
            .http
            .post(self.url.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(TIMESTAMP_HEADER, ts.to_string())
            .header(SIGNATURE_HEADER, signature(self.cfg.secret.as_bytes(), ts, &body))
            .body(body)
            .send()
            .await
            .map_err(network)?;
        let status = resp.status();
        if status.is_success() {
            return Ok(());
        }
        if status.as_u16() == 410 {
            return Err(PushError::Unregistered);
        }
        let after = retry_after(&resp);
        let text = answer_text(resp).await;
        Err(status_error(status, after, &text))
    }
}
