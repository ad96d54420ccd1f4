//! Codes by SMS: a JSON POST to the operator's SMS provider (or a small bridge in front of it), signed the way
//! the push webhook (`palaver-push`) signs its POSTs, so a receiver checks both with the same code: with a
//! secret, `X-Palaver-Timestamp` carries the Unix seconds and `X-Palaver-Signature` carries
//! `sha256=<hex HMAC-SHA256(secret, "{timestamp}.{body}")>`.
//!
//! Body: `{"tenant", "method": "tel", "to", "code", "purpose": "confirm"|"reset", "valid_minutes", "lang"
//! (only when the client gave one), "text"}`, `text` being the SMS in English ([`crate::code_text`]); a receiver
//! that speaks `lang` may word its own.

use crate::ConfigError;
use crate::text::code_text;
use hmac::{Hmac, Mac};
use palaver_core::ports::{CodeMessage, CodePurpose, CodeSender, SendError};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use std::fmt;
use std::time::Duration;

/// The header carrying `sha256=<hex HMAC-SHA256(secret, "{timestamp}.{body}")>`; the push webhook's.
pub const SIGNATURE_HEADER: &str = "x-palaver-signature";
/// The header carrying the Unix seconds the signature covers; the push webhook's.
pub const TIMESTAMP_HEADER: &str = "x-palaver-timestamp";

/// `[verify.sms_webhook]`: where codes by SMS go.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebhookConfig {
    /// An `http://` or `https://` URL. Required.
    pub url: String,
    /// The shared secret the body is signed with; without one the POST is not signed.
    pub secret: Option<String>,
    /// The most one POST may take, connection included, in ms. Default 10000.
    pub timeout_ms: u64,
}

impl Default for WebhookConfig {
    /// Everything but `url`.
    fn default() -> Self {
        WebhookConfig { url: String::new(), secret: None, timeout_ms: 10_000 }
    }
}

impl fmt::Debug for WebhookConfig {
    /// Everything but the secret, so configs can be logged.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebhookConfig")
            .field("url", &self.url)
            .field("secret", &self.secret.as_ref().map(|_| "***"))
            .field("timeout_ms", &self.timeout_ms)
            .finish()
    }
}

impl WebhookConfig {
    /// Checks the settings that would otherwise fail only at the first send.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let url = reqwest::Url::parse(&self.url)
            .map_err(|e| ConfigError::new(format!("sms_webhook.url is not a URL ({e}): {:?}", self.url)))?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
            return Err(ConfigError::new("sms_webhook.url must be an http:// or https:// URL with a host"));
        }
        if self.secret.as_deref() == Some("") {
            return Err(ConfigError::new("sms_webhook.secret must not be empty: leave it out to send unsigned"));
        }
        if self.timeout_ms == 0 {
            return Err(ConfigError::new("sms_webhook.timeout_ms must be positive"));
        }
        Ok(())
    }
}

/// The signature header's value for `body` sent at `timestamp`: the push webhook's formula.
pub fn signature(secret: &[u8], timestamp: u64, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    let bytes = mac.finalize().into_bytes();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256={hex}")
}

/// True for a phone number as credentials keep it: `+` and 6 to 15 digits (E.164 at most 15).
pub fn valid_phone(to: &str) -> bool {
    to.strip_prefix('+')
        .is_some_and(|digits| (6..=15).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit()))
}

#[derive(Serialize)]
struct Body<'a> {
    tenant: String,
    method: &'static str,
    to: &'a str,
    code: &'a str,
    purpose: &'static str,
    valid_minutes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    lang: Option<&'a str>,
    text: String,
}

/// Sends codes by POSTing them to an SMS provider's webhook.
pub struct WebhookSender {
    url: reqwest::Url,
    secret: Option<String>,
    http: reqwest::Client,
}

impl fmt::Debug for WebhookSender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebhookSender").field("url", &self.url.as_str()).finish_non_exhaustive()
    }
}

impl WebhookSender {
    /// A sender for `config`, validated. No I/O.
    pub fn new(config: WebhookConfig) -> Result<WebhookSender, ConfigError> {
        config.validate()?;
        let timeout = Duration::from_millis(config.timeout_ms);
        // As the push providers' client (rustls), bounded by the configured time; redirects are not followed: a
        // redirected POST would either lose its body or be resent somewhere the operator did not configure.
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| ConfigError::new(format!("building the HTTP client: {e}")))?;
        let url = reqwest::Url::parse(&config.url).expect("validated");
        Ok(WebhookSender { url, secret: config.secret, http })
    }
}

#[async_trait::async_trait]
impl CodeSender for WebhookSender {
    async fn send(&self, msg: &CodeMessage<'_>) -> Result<(), SendError> {
        if !valid_phone(msg.to) {
            return Err(SendError::Refused("not a phone number: expected + and 6 to 15 digits".into()));
        }
        let body = Body {
            tenant: msg.tenant.0.to_string(),
            method: "tel",
            to: msg.to,
            code: msg.code,
            purpose: match msg.purpose {
                CodePurpose::Confirm => "confirm",
                CodePurpose::Reset => "reset",
            },
            valid_minutes: msg.valid_minutes,
            lang: msg.lang,
            text: code_text(msg.purpose, msg.code, msg.valid_minutes),
        };
        let body = serde_json::to_vec(&body).map_err(|e| SendError::Unavailable(format!("encoding: {e}")))?;
        let mut req = self.http.post(self.url.clone()).header(reqwest::header::CONTENT_TYPE, "application/json");
        if let Some(secret) = &self.secret {
            let ts = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
            req = req
                .header(TIMESTAMP_HEADER, ts.to_string())
                .header(SIGNATURE_HEADER, signature(secret.as_bytes(), ts, &body));
        }
        let resp = req.body(body).send().await.map_err(|e| {
            let what = if e.is_timeout() { "no answer in time" } else { "network" };
            SendError::Unavailable(format!("SMS webhook {what}: {e}"))
        })?;
        let status = resp.status();
        if status.is_success() {
            return Ok(());
        }
        let text = answer_start(resp).await;
        let reason =
            format!("SMS webhook answered HTTP {}: {}", status.as_u16(), text.chars().take(200).collect::<String>());
        // 408 and 429 say "not now", not "not this number".
        if status.is_client_error() && !matches!(status.as_u16(), 408 | 429) {
            Err(SendError::Refused(reason))
        } else {
            Err(SendError::Unavailable(reason))
        }
    }
}

/// Bytes of an error answer read at most: the reason quotes its first 200 characters, and the endpoint is the
/// tenant's own, so an answer that never ends must not hold the sender (and its memory) until the timeout.
const MAX_ANSWER: usize = 4096;

/// The start of an error answer, as text.
async fn answer_start(mut resp: reqwest::Response) -> String {
    let mut body = Vec::new();
    while body.len() < MAX_ANSWER
        && let Ok(Some(chunk)) = resp.chunk().await
    {
        let room = MAX_ANSWER - body.len();
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
    }
    String::from_utf8_lossy(&body).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phone_numbers_are_plus_and_six_to_fifteen_digits() {
        for ok in ["+123456", "+491701234567", "+123456789012345"] {
            assert!(valid_phone(ok), "{ok}");
        }
        for bad in [
            "",
            "+",
            "123456789",
            "+12345",
            "+1234567890123456",
            "+49 170 1234567",
            "+49-1701234",
            "++123456",
            "+١٢٣٤٥٦",
        ] {
            assert!(!valid_phone(bad), "{bad}");
        }
    }

    #[test]
    fn config_needs_an_http_url() {
        let ok = WebhookConfig { url: "https://sms.example.com/hook".into(), ..Default::default() };
        assert_eq!(ok.validate(), Ok(()));
        assert_eq!(WebhookConfig::default().timeout_ms, 10_000);
        assert!(WebhookConfig::default().validate().is_err());
        assert!(WebhookConfig { url: "ftp://x/y".into(), ..ok.clone() }.validate().is_err());
        assert!(WebhookConfig { url: "not a url".into(), ..ok.clone() }.validate().is_err());
        assert!(WebhookConfig { secret: Some(String::new()), ..ok.clone() }.validate().is_err());
        assert!(WebhookConfig { timeout_ms: 0, ..ok.clone() }.validate().is_err());
        let c = WebhookConfig { secret: Some("s3cret".into()), ..ok };
        assert!(!format!("{c:?}").contains("s3cret"));
    }
}
