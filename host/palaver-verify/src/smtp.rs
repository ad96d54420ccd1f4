//! Codes by email: one SMTP conversation per code (no pool: codes are rare and a pooled connection would only go
//! stale), spoken command by command so a refusal of the recipient (`RCPT TO`) is told apart from a refusal of
//! the sender or the message, which is the operator's problem and not the client's.

use crate::ConfigError;
use crate::text::{email_body, subject};
use lettre::message::header::ContentType;
use lettre::message::{Mailbox, Message};
use lettre::transport::smtp::authentication::{Credentials, Mechanism};
use lettre::transport::smtp::client::{AsyncSmtpConnection, TlsParameters};
use lettre::transport::smtp::commands::{Data, Mail, Rcpt};
use lettre::transport::smtp::extension::{ClientId, Extension, MailParameter};
use lettre::{Address, transport::smtp::Error as SmtpError};
use palaver_core::ports::{CodeMessage, CodeSender, SendError};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Duration;

/// The longest email address SMTP carries (RFC 5321's path limit, less the angle brackets).
const MAX_ADDRESS: usize = 254;

/// How long closing a connection (`QUIT`) may take once the outcome is known.
const CLOSE_WAIT: Duration = Duration::from_secs(1);

/// How the connection to the SMTP server is secured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SmtpTls {
    /// Plain text throughout (a relay on the same host or network). Credentials, if set, go in clear.
    None,
    /// Plain text upgraded with `STARTTLS` before anything else is sent; a server that does not offer it fails
    /// the send (no fallback to plain text). Usually port 587.
    #[default]
    Starttls,
    /// TLS from the first byte (implicit TLS, "SMTPS"). Usually port 465.
    Tls,
}

/// `[verify.smtp]`: where codes by email go. The server's certificate is checked against the system roots.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SmtpConfig {
    /// The SMTP server's host name (also the name its certificate must carry). Required.
    pub host: String,
    /// Default 587.
    pub port: u16,
    /// `none`, `starttls` (default) or `tls`.
    pub tls: SmtpTls,
    /// Log in with these (PLAIN or LOGIN, as the server offers); both or neither.
    pub username: Option<String>,
    pub password: Option<String>,
    /// The sender, as a mailbox: `Palaver <no-reply@example.com>` or `no-reply@example.com`. Required; its
    /// address must be ASCII.
    pub from: String,
    /// The most one send may take, connection to `QUIT`, in ms. Default 10000.
    pub timeout_ms: u64,
}

impl Default for SmtpConfig {
    /// Everything but `host` and `from`, which have no sensible default.
    fn default() -> Self {
        SmtpConfig {
            host: String::new(),
            port: 587,
            tls: SmtpTls::Starttls,
            username: None,
            password: None,
            from: String::new(),
            timeout_ms: 10_000,
        }
    }
}

impl fmt::Debug for SmtpConfig {
    /// Everything but the password, so configs can be logged.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SmtpConfig")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("tls", &self.tls)
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .field("from", &self.from)
            .field("timeout_ms", &self.timeout_ms)
            .finish()
    }
}

impl SmtpConfig {
    /// Checks the settings that would otherwise fail only at the first send.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.parsed_from().map(|_| ())?;
        let host = self.host.trim();
        if host.is_empty() || host != self.host || host.contains(|c: char| c.is_whitespace() || c == '/') {
            return Err(ConfigError::new("smtp.host is required: the SMTP server's host name or IP address"));
        }
        if self.port == 0 {
            return Err(ConfigError::new("smtp.port must be between 1 and 65535"));
        }
        match (&self.username, &self.password) {
            (Some(u), Some(_)) if u.is_empty() => {
                return Err(ConfigError::new("smtp.username must not be empty"));
            }
            (Some(_), Some(_)) | (None, None) => {}
            _ => return Err(ConfigError::new("smtp.username and smtp.password go together: set both or neither")),
        }
        if self.timeout_ms == 0 {
            return Err(ConfigError::new("smtp.timeout_ms must be positive"));
        }
        Ok(())
    }

    fn parsed_from(&self) -> Result<Mailbox, ConfigError> {
        if self.from.trim().is_empty() {
            return Err(ConfigError::new("smtp.from is required, e.g. \"Palaver <no-reply@example.com>\""));
        }
        let from: Mailbox = self
            .from
            .parse()
            .map_err(|e| ConfigError::new(format!("smtp.from is not a mailbox ({e}): {:?}", self.from)))?;
        if !(from.email.user().is_ascii() && from.email.domain().is_ascii()) {
            return Err(ConfigError::new("smtp.from's address must be ASCII"));
        }
        Ok(from)
    }
}

/// Sends codes by email through one SMTP server.
pub struct SmtpSender {
    host: String,
    port: u16,
    tls: SmtpTls,
    /// Built once: loading the system roots is not free.
    tls_params: Option<TlsParameters>,
    credentials: Option<Credentials>,
    from: Mailbox,
    timeout: Duration,
    hello: ClientId,
}

impl fmt::Debug for SmtpSender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SmtpSender")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("tls", &self.tls)
            .field("from", &self.from.to_string())
            .finish_non_exhaustive()
    }
}

impl SmtpSender {
    /// A sender for `config`, validated. No I/O: an unreachable server shows at the first send.
    pub fn new(config: SmtpConfig) -> Result<SmtpSender, ConfigError> {
        config.validate()?;
        let from = config.parsed_from()?;
        let tls_params = match config.tls {
            SmtpTls::None => None,
            SmtpTls::Starttls | SmtpTls::Tls => Some(
                TlsParameters::builder(config.host.clone())
                    .build_rustls()
                    .map_err(|e| ConfigError::new(format!("smtp TLS settings: {e}")))?,
            ),
        };
        let credentials = match (config.username, config.password) {
            (Some(user), Some(password)) => Some(Credentials::new(user, password)),
            _ => None,
        };
        Ok(SmtpSender {
            host: config.host,
            port: config.port,
            tls: config.tls,
            tls_params,
            credentials,
            from,
            timeout: Duration::from_millis(config.timeout_ms),
            hello: ClientId::default(),
        })
    }

    /// The conversation up to the server's answer to the message, the connection left in `slot` for the caller
    /// to close: once the message is accepted, a slow or failing `QUIT` must not turn it into a failure.
    async fn deliver(
        &self,
        to: &Address,
        bytes: &[u8],
        slot: &mut Option<AsyncSmtpConnection>,
    ) -> Result<(), SendError> {
        let wrapper = match self.tls {
            SmtpTls::Tls => self.tls_params.clone(),
            SmtpTls::None | SmtpTls::Starttls => None,
        };
        let conn = AsyncSmtpConnection::connect_tokio1(
            (self.host.as_str(), self.port),
            Some(self.timeout),
            &self.hello,
            wrapper,
            None,
        )
        .await
        .map_err(|e| unavailable("connecting", &e))?;
        self.converse(slot.insert(conn), to, bytes).await
    }

    async fn converse(&self, conn: &mut AsyncSmtpConnection, to: &Address, bytes: &[u8]) -> Result<(), SendError> {
        if self.tls == SmtpTls::Starttls {
            let params = self.tls_params.clone().expect("built for starttls");
            conn.starttls(params, &self.hello).await.map_err(|e| unavailable("STARTTLS", &e))?;
        }
        if let Some(credentials) = &self.credentials {
            conn.auth(&[Mechanism::Plain, Mechanism::Login], credentials)
                .await
                .map_err(|e| unavailable("logging in", &e))?;
        }
        let mut options = Vec::new();
        if !(to.user().is_ascii() && to.domain().is_ascii()) {
            if !conn.server_info().supports_feature(Extension::SmtpUtfEight) {
                return Err(SendError::Refused("the mail server takes no internationalised addresses".into()));
            }
            options.push(MailParameter::SmtpUtfEight);
        }
        conn.command(Mail::new(Some(self.from.email.clone()), options))
            .await
            .map_err(|e| unavailable("MAIL FROM", &e))?;
        conn.command(Rcpt::new(to.clone(), Vec::new())).await.map_err(|e| {
            if e.is_permanent() {
                SendError::Refused(format!("the mail server refused the recipient: {e}"))
            } else {
                unavailable("RCPT TO", &e)
            }
        })?;
        conn.command(Data).await.map_err(|e| unavailable("DATA", &e))?;
        conn.message(bytes).await.map_err(|e| unavailable("sending the message", &e))?;
        Ok(())
    }
}

/// A fresh `<random@sender's domain>`: unique, and naming the sender's domain rather than this node's host.
fn message_id(from: &Address) -> String {
    use rand::Rng;
    let id: String =
        rand::thread_rng().sample_iter(rand::distributions::Alphanumeric).take(32).map(char::from).collect();
    format!("<{id}@{}>", from.domain())
}

fn unavailable(step: &str, e: &SmtpError) -> SendError {
    SendError::Unavailable(format!("SMTP {step}: {e}"))
}

/// The recipient as an SMTP address, or why it is none.
fn recipient(to: &str) -> Result<Address, SendError> {
    if to.len() > MAX_ADDRESS {
        return Err(SendError::Refused("not an email address: too long".into()));
    }
    to.parse::<Address>().map_err(|e| SendError::Refused(format!("not an email address: {e}")))
}

#[async_trait::async_trait]
impl CodeSender for SmtpSender {
    /// One message, `text/plain`. In English whatever `msg.lang` says: no translations are kept yet.
    async fn send(&self, msg: &CodeMessage<'_>) -> Result<(), SendError> {
        let to = recipient(msg.to)?;
        let email = Message::builder()
            .from(self.from.clone())
            .to(Mailbox::new(None, to.clone()))
            .subject(subject(msg.purpose))
            .date_now()
            .message_id(Some(message_id(&self.from.email)))
            .header(ContentType::TEXT_PLAIN)
            .body(email_body(msg.purpose, msg.code, msg.valid_minutes))
            .map_err(|e| SendError::Refused(format!("cannot address a message to it: {e}")))?;
        let bytes = email.formatted();
        let mut conn = None;
        let result = tokio::time::timeout(self.timeout, self.deliver(&to, &bytes, &mut conn))
            .await
            .unwrap_or_else(|_| Err(SendError::Unavailable(format!("SMTP: no answer within {:?}", self.timeout))));
        if let Some(mut conn) = conn {
            // Polite, bounded, and without effect on the result.
            let close = async {
                match result {
                    Ok(()) => drop(conn.quit().await),
                    Err(_) => conn.abort().await,
                }
            };
            let _ = tokio::time::timeout(CLOSE_WAIT, close).await;
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> SmtpConfig {
        SmtpConfig {
            host: "smtp.example.com".into(),
            from: "Palaver <no-reply@example.com>".into(),
            ..Default::default()
        }
    }

    #[test]
    fn defaults_need_a_host_and_a_sender() {
        let d = SmtpConfig::default();
        assert_eq!((d.port, d.tls, d.timeout_ms), (587, SmtpTls::Starttls, 10_000));
        assert!(d.validate().is_err());
        assert_eq!(config().validate(), Ok(()));
        assert!(SmtpConfig { host: String::new(), ..config() }.validate().is_err());
        assert!(SmtpConfig { from: "not a mailbox".into(), ..config() }.validate().is_err());
        assert!(SmtpConfig { username: Some("u".into()), ..config() }.validate().is_err());
        assert!(SmtpConfig { password: Some("p".into()), ..config() }.validate().is_err());
        let both = SmtpConfig { username: Some("u".into()), password: Some("p".into()), ..config() };
        assert_eq!(both.validate(), Ok(()));
        assert!(SmtpConfig { timeout_ms: 0, ..config() }.validate().is_err());
        assert!(SmtpConfig { port: 0, ..config() }.validate().is_err());
        assert_eq!(SmtpConfig { from: "no-reply@example.com".into(), ..config() }.validate(), Ok(()));
    }

    #[test]
    fn reads_from_toml_like_settings() {
        let c: SmtpConfig = serde_json::from_str(
            r#"{"host": "mail", "port": 465, "tls": "tls", "username": "u", "password": "p", "from": "a@b.c"}"#,
        )
        .unwrap();
        assert_eq!((c.port, c.tls, c.timeout_ms), (465, SmtpTls::Tls, 10_000));
        assert!(serde_json::from_str::<SmtpConfig>(r#"{"tls": "ssl"}"#).is_err());
        assert!(serde_json::from_str::<SmtpConfig>(r#"{"hots": "x"}"#).is_err());
    }

    #[test]
    fn debug_hides_the_password() {
        let c = SmtpConfig { username: Some("mailer".into()), password: Some("hunter2".into()), ..config() };
        let shown = format!("{c:?}");
        assert!(!shown.contains("hunter2") && shown.contains("***") && shown.contains("mailer"), "{shown}");
    }

    #[test]
    fn only_email_addresses_are_recipients() {
        assert!(recipient("alice@example.com").is_ok());
        for bad in ["", "alice", "alice@", "@example.com", "a b@example.com", "a@b@c", "<a@b.c>", "a@b.c\r\nBcc: x@y.z"]
        {
            assert!(matches!(recipient(bad), Err(SendError::Refused(_))), "{bad:?}");
        }
        let long = format!("{}@example.com", "a".repeat(250));
        assert!(matches!(recipient(&long), Err(SendError::Refused(_))));
    }
}
