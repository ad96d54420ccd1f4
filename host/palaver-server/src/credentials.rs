//! `[accounts.credentials]`: the email addresses and phone numbers accounts confirm by code, which methods are
//! enabled (a sender is configured for them) and required, and the wiring of the senders and the code store.

use palaver_core::ports::{CodeSender, CodeStore};
use palaver_verify::{SmtpConfig, SmtpSender, WebhookConfig, WebhookSender};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// `[accounts.credentials]`. A method is enabled by its sender's table (`email` for SMTP, `tel` for an SMS
/// provider's webhook); `required` lists the enabled methods every account signing up with a password must
/// confirm before it logs in.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct CredentialsSection {
    /// Methods a password account must confirm before it logs in: `email`, `tel` (Tinode's
    /// `acc_validation.<method>.required = ["auth"]`). Empty (the default): none.
    pub required: Vec<String>,
    /// Digits in a code, 4–10.
    pub code_length: u32,
    /// How long a code stays valid, in seconds (60–86400).
    pub code_ttl_seconds: u64,
    /// Wrong tries a code survives (1–20); the last one voids it and a new one is sent on the next try.
    pub max_attempts: u32,
    /// Codes one address gets in an hour, whoever asks and for whatever purpose (1–100).
    pub sends_per_hour: u32,
    /// Credentials one account may hold (1–64).
    pub max_per_account: usize,
    /// A confirmed credential becomes the account's tag `email:…` or `tel:…`, so that others find it by
    /// address; clients cannot set tags in those namespaces.
    pub add_to_tags: bool,
    /// Codes and send counters kept at once when they live in process (no Redis); beyond it, new codes are
    /// refused with 503 until old ones expire.
    pub max_pending_codes: usize,
    /// Codes by email, through this SMTP server.
    pub email: Option<SmtpConfig>,
    /// Codes by SMS, through this provider webhook.
    pub tel: Option<WebhookConfig>,
}

impl Default for CredentialsSection {
    fn default() -> Self {
        let svc = palaver_service::CredentialsConfig::default();
        CredentialsSection {
            required: Vec::new(),
            code_length: svc.code_length,
            code_ttl_seconds: svc.code_ttl.as_secs(),
            max_attempts: svc.max_attempts,
            sends_per_hour: svc.sends_per_hour,
            max_per_account: svc.max_per_account,
            add_to_tags: svc.add_to_tags,
            max_pending_codes: 100_000,
            email: None,
            tel: None,
        }
    }
}

impl CredentialsSection {
    /// Checks ranges, the senders' settings, and that each required method has a sender.
    pub fn validate(&self) -> Result<(), String> {
        let range = |name: &str, v: u64, lo: u64, hi: u64| {
            if (lo..=hi).contains(&v) {
                Ok(())
            } else {
                Err(format!("accounts.credentials.{name} must be {lo}–{hi}"))
            }
        };
        range("code_length", self.code_length.into(), 4, 10)?;
        range("code_ttl_seconds", self.code_ttl_seconds, 60, 86_400)?;
        range("max_attempts", self.max_attempts.into(), 1, 20)?;
        range("sends_per_hour", self.sends_per_hour.into(), 1, 100)?;
        range("max_per_account", self.max_per_account as u64, 1, 64)?;
        range("max_pending_codes", self.max_pending_codes as u64, 100, 10_000_000)?;
        if let Some(smtp) = &self.email {
            smtp.validate().map_err(|e| format!("accounts.credentials.email: {e}"))?;
        }
        if let Some(hook) = &self.tel {
            hook.validate().map_err(|e| format!("accounts.credentials.tel: {e}"))?;
        }
        for (i, method) in self.required.iter().enumerate() {
            let enabled = match method.as_str() {
                "email" => self.email.is_some(),
                "tel" => self.tel.is_some(),
                other => return Err(format!("accounts.credentials.required: unknown method {other:?} (email, tel)")),
            };
            if !enabled {
                return Err(format!(
                    "accounts.credentials.required names {method}, but [accounts.credentials.{method}] is not set: \
                     codes could not be sent"
                ));
            }
            if self.required[..i].contains(method) {
                return Err(format!("accounts.credentials.required names {method} twice"));
            }
        }
        Ok(())
    }

    /// The service's settings.
    pub fn service(&self) -> palaver_service::CredentialsConfig {
        palaver_service::CredentialsConfig {
            required: self.required.clone(),
            code_length: self.code_length,
            code_ttl: Duration::from_secs(self.code_ttl_seconds),
            max_attempts: self.max_attempts,
            sends_per_hour: self.sends_per_hour,
            max_per_account: self.max_per_account,
            add_to_tags: self.add_to_tags,
        }
    }

    /// The senders of the enabled methods.
    pub fn senders(&self) -> anyhow::Result<BTreeMap<String, Arc<dyn CodeSender>>> {
        let mut out: BTreeMap<String, Arc<dyn CodeSender>> = BTreeMap::new();
        if let Some(smtp) = &self.email {
            out.insert("email".into(), Arc::new(SmtpSender::new(smtp.clone())?));
        }
        if let Some(hook) = &self.tel {
            out.insert("tel".into(), Arc::new(WebhookSender::new(hook.clone())?));
        }
        Ok(out)
    }

    /// The in-process code store of a node without Redis.
    pub fn memory_codes(&self) -> Arc<dyn CodeStore> {
        Arc::new(palaver_store_memory::MemoryCodes::new(self.max_pending_codes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_required_method_needs_its_sender() {
        let mut c = CredentialsSection { required: vec!["email".into()], ..CredentialsSection::default() };
        assert!(c.validate().unwrap_err().contains("[accounts.credentials.email] is not set"));
        c.email = Some(SmtpConfig {
            host: "127.0.0.1".into(),
            from: "Palaver <no-reply@example.com>".into(),
            ..SmtpConfig::default()
        });
        c.validate().unwrap();
        c.required.push("fax".into());
        assert!(c.validate().unwrap_err().contains("unknown method"));
        let c = CredentialsSection { code_length: 3, ..CredentialsSection::default() };
        assert!(c.validate().unwrap_err().contains("code_length"));
    }
}
