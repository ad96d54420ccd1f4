//! FCM HTTP v1. Credentials are a service account's JSON (`project_id`, `client_email`, `private_key`,
//! `token_uri`). An access token comes from the OAuth2 JWT-bearer grant: a JWT signed RS256 with the private key
//! (`iss` the client email, `scope` firebase.messaging, `aud` the `token_uri`, one hour), POSTed form-encoded to
//! `token_uri`; it is cached until a minute before it expires, and dropped on a 401.
//!
//! Each push is `POST {endpoint}/v1/projects/{project_id}/messages:send` with a data message (strings only),
//! `android.priority` (`high`, `normal` for silent ones) and an `apns` block for iOS apps on FCM (an alert, or
//! `content-available` for silent ones). `UNREGISTERED` (404) means the token is gone.

use crate::SetupError;
use crate::http::{answer_text, client, network, parse_url, retry_after, status_error};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use palaver_core::TenantId;
use palaver_core::ports::{Device, PushError, PushMessage, PushProvider};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The default FCM endpoint.
pub const FCM_ENDPOINT: &str = "https://fcm.googleapis.com";
/// The OAuth2 scope FCM sends need.
pub const FCM_SCOPE: &str = "https://www.googleapis.com/auth/firebase.messaging";
/// A token is renewed this long before it expires.
const RENEW_EARLY: Duration = Duration::from_secs(60);

/// The fields of a service account's JSON that FCM needs.
#[derive(Debug, Clone, Deserialize)]
pub struct ServiceAccount {
    pub project_id: String,
    pub client_email: String,
    pub private_key: String,
    pub token_uri: String,
}

/// `[push.fcm]`: the service account (read from `credentials_file`) and the base URL.
#[derive(Debug, Clone)]
pub struct FcmConfig {
    pub account: ServiceAccount,
    pub endpoint: String,
}

impl FcmConfig {
    /// Reads the service account JSON at `path`.
    pub fn from_file(path: &str, endpoint: &str) -> Result<FcmConfig, SetupError> {
        let text = std::fs::read_to_string(path).map_err(|err| SetupError::Read { path: path.to_owned(), err })?;
        let account: ServiceAccount =
            serde_json::from_str(&text).map_err(|e| SetupError::Credentials(format!("{path}: {e}")))?;
        Ok(FcmConfig { account, endpoint: endpoint.to_owned() })
    }
}

#[derive(Serialize)]
struct Claims<'a> {
    iss: &'a str,
    scope: &'a str,
    aud: &'a str,
    iat: u64,
    exp: u64,
}

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    expires_in: u64,
}

/// Pushes through FCM HTTP v1.
pub struct FcmProvider {
    cfg: FcmConfig,
    key: EncodingKey,
    /// `{endpoint}/v1/projects/{project_id}/messages:send`.
    url: reqwest::Url,
    http: reqwest::Client,
    token: Mutex<Option<(String, Instant)>>,
}

impl FcmProvider {
    pub fn new(cfg: FcmConfig) -> Result<FcmProvider, SetupError> {
        let key = EncodingKey::from_rsa_pem(cfg.account.private_key.as_bytes())
            .map_err(|e| SetupError::Credentials(format!("FCM private_key: {e}")))?;
        let url =
            format!("{}/v1/projects/{}/messages:send", cfg.endpoint.trim_end_matches('/'), cfg.account.project_id);
        let url = parse_url("push.fcm.endpoint", &url)?;
        Ok(FcmProvider { cfg, key, url, http: client()?, token: Mutex::new(None) })
    }

    /// A valid access token, from the cache or a new grant.
    async fn access_token(&self) -> Result<String, PushError> {
        if let Some((t, until)) = self.token.lock().as_ref()
            && Instant::now() < *until
        {
            return Ok(t.clone());
        }
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let a = &self.cfg.account;
        let claims = Claims { iss: &a.client_email, scope: FCM_SCOPE, aud: &a.token_uri, iat: now, exp: now + 3600 };
        let jwt = jsonwebtoken::encode(&Header::new(Algorithm::RS256), &claims, &self.key)
            .map_err(|e| PushError::Failed { reason: format!("signing the grant: {e}") })?;
        let resp = self
            .http
            .post(&a.token_uri)
            .header(reqwest::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(format!("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion={jwt}"))
            .send()
            .await
            .map_err(network)?;
        let status = resp.status();
        if !status.is_success() {
            let after = retry_after(&resp);
            let text = answer_text(resp).await;
            return Err(status_error(status, after, &format!("token grant: {text}")));
        }
        let answer: TokenAnswer = serde_json::from_str(&answer_text(resp).await)
            .map_err(|e| PushError::Failed { reason: format!("token grant answer: {e}") })?;
        let life = Duration::from_secs(answer.expires_in).saturating_sub(RENEW_EARLY);
        *self.token.lock() = Some((answer.access_token.clone(), Instant::now() + life));
        Ok(answer.access_token)
    }

    /// The `message` of a send request.
    fn message(device: &Device, msg: &PushMessage) -> Value {
        let aps = if msg.silent {
            json!({"content-available": 1})
        } else {
            json!({"alert": {"body": msg.body}, "sound": "default"})
        };
        let push_type = if msg.silent { "background" } else { "alert" };
        json!({
            "message": {
                "token": device.token,
                "data": msg.data,
                "android": {"priority": if msg.silent { "normal" } else { "high" }},
                "apns": {
                    "headers": {"apns-priority": if msg.silent { "5" } else { "10" }, "apns-push-type": push_type},
                    "payload": {"aps": aps},
                },
            }
        })
    }
}

/// Whether an FCM error body names `UNREGISTERED` (in `error.status` or a detail's `errorCode`).
fn unregistered(body: &Value) -> bool {
    let err = &body["error"];
    err["status"] == "UNREGISTERED"
        || err["details"].as_array().is_some_and(|d| d.iter().any(|x| x["errorCode"] == "UNREGISTERED"))
}

#[async_trait::async_trait]
impl PushProvider for FcmProvider {
    fn name(&self) -> &'static str {
        "fcm"
    }

    async fn send(&self, _tenant: TenantId, device: &Device, msg: &PushMessage) -> Result<(), PushError> {
        let token = self.access_token().await?;
        let resp = self
            .http
            .post(self.url.clone())
            .bearer_auth(token)
            .json(&Self::message(device, msg))
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
        if unregistered(&body) {
            return Err(PushError::Unregistered);
        }
        if status.as_u16() == 401 {
            // The token was revoked or expired early: the next attempt makes a new grant.
            *self.token.lock() = None;
            return Err(PushError::Retry { reason: "HTTP 401: access token refused".into(), after_ms: None });
        }
        Err(status_error(status, after, &text))
    }
}
