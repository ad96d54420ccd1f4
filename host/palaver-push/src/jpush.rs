//! JPush REST v3: `POST {endpoint}/v3/push` with HTTP Basic auth `app_key:master_secret`, the audience by
//! `registration_id` (the device's token). An alert push carries `notification` (Android and iOS, with the
//! locating fields as `extras`); a silent one a custom `message` only. JPush's error 1011 ("cannot find user by
//! this audience") means the registration id is gone.

use crate::SetupError;
use crate::http::{answer_text, client, network, parse_url, retry_after, status_error};
use base64::Engine;
use palaver_core::TenantId;
use palaver_core::ports::{Device, PushError, PushMessage, PushProvider};
use serde_json::{Value, json};

/// The default JPush endpoint.
pub const JPUSH_ENDPOINT: &str = "https://api.jpush.cn";

/// `[push.jpush]`.
#[derive(Debug, Clone)]
pub struct JpushConfig {
    pub app_key: String,
    pub master_secret: String,
    pub endpoint: String,
}

/// Pushes through JPush.
pub struct JpushProvider {
    auth: String,
    /// `{endpoint}/v3/push`.
    url: reqwest::Url,
    http: reqwest::Client,
}

impl JpushProvider {
    pub fn new(cfg: JpushConfig) -> Result<JpushProvider, SetupError> {
        if cfg.app_key.is_empty() || cfg.master_secret.is_empty() {
            return Err(SetupError::Credentials("push.jpush.app_key and master_secret are required".into()));
        }
        let basic = base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", cfg.app_key, cfg.master_secret));
        let url = parse_url("push.jpush.endpoint", &format!("{}/v3/push", cfg.endpoint.trim_end_matches('/')))?;
        Ok(JpushProvider { auth: format!("Basic {basic}"), url, http: client()? })
    }

    fn body(device: &Device, msg: &PushMessage) -> Value {
        let mut body = json!({
            "platform": "all",
            "audience": {"registration_id": [device.token]},
            "options": {"apns_production": true},
        });
        if msg.silent {
            body["message"] =
                json!({"msg_content": msg.data.get("topic").cloned().unwrap_or_default(), "extras": msg.data});
        } else {
            body["notification"] = json!({
                "alert": msg.body,
                "android": {"alert": msg.body, "extras": msg.data},
                "ios": {"alert": msg.body, "extras": msg.data},
            });
        }
        body
    }
}

#[async_trait::async_trait]
impl PushProvider for JpushProvider {
    fn name(&self) -> &'static str {
        "jpush"
    }

    async fn send(&self, _tenant: TenantId, device: &Device, msg: &PushMessage) -> Result<(), PushError> {
        let resp = self
            .http
            .post(self.url.clone())
            .header(reqwest::header::AUTHORIZATION, &self.auth)
            .json(&Self::body(device, msg))
            .send()
            .await
            .map_err(network)?;
        let status = resp.status();
        if status.is_success() {
            return Ok(());
        }
        let after = retry_after(&resp);
        let text = answer_text(resp).await;
        let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        if body["error"]["code"] == 1011 {
            return Err(PushError::Unregistered);
        }
        Err(status_error(status, after, &text))
    }
}
