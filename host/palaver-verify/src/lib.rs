//! Senders of one-time codes for the `CodeSender` port: an email through an SMTP server, an SMS through the
//! operator's SMS provider behind a webhook.
//!
//! | type | port | delivers to | on a fault |
//! | --- | --- | --- | --- |
//! | [`SmtpSender`] | `CodeSender` (`email`) | an SMTP submission server (lettre over tokio, rustls) | a recipient refused with 5xx, or not an email address: `Refused`; no connection, timeout, 4xx, any other refusal: `Unavailable` |
//! | [`WebhookSender`] | `CodeSender` (`tel`) | a JSON POST to the provider's URL, signed like the push webhook | a 4xx answer, or not `+` and 6–15 digits: `Refused`; 408, 429, 5xx, timeout, no connection: `Unavailable` |
//!
//! An address the sender can tell is malformed is refused before anything is sent. Neither sender retries nor
//! logs: the caller decides what `Unavailable` means for the client, and the address and the code stay out of
//! logs. Each send is bounded by the configuration's `timeout_ms` as a whole.
//!
//! The texts are English whatever the client's language; both senders word them the same way ([`code_text`]).
//!
//! ## Wiring
//!
//! ```ignore
//! let email = SmtpSender::new(config.smtp.clone())?;      // validates; no I/O until the first send
//! let tel = WebhookSender::new(config.sms_webhook.clone())?;
//! ```

mod smtp;
mod text;
mod webhook;

pub use smtp::{SmtpConfig, SmtpSender, SmtpTls};
pub use text::{code_text, subject};
pub use webhook::{SIGNATURE_HEADER, TIMESTAMP_HEADER, WebhookConfig, WebhookSender, signature, valid_phone};

/// A configuration that cannot work; the message names the setting.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

impl ConfigError {
    pub(crate) fn new(msg: impl Into<String>) -> ConfigError {
        ConfigError(msg.into())
    }
}
