//! Credentials (Tinode's `cred`): the email addresses and phone numbers an account proves it owns with a
//! one-time code, the methods a tenant requires before an account logs in, and the password reset by code.
//!
//! Rules, each enforced below at the line that needs it:
//! - a method is enabled when the node has a sender for it; required methods must be enabled (checked at start);
//! - a confirmed address belongs to one account of the tenant (the store's unique key decides races);
//! - an account has at most one unconfirmed address per method: adding another replaces it;
//! - codes are short state with a lifetime and a number of attempts, consumed once; an address gets at most
//!   `sends_per_hour` codes an hour, whoever asks (the seed's 5 an hour);
//! - short state fails closed: without the code store no code is sent and none is accepted;
//! - neither a code nor an address is logged or kept in short state in clear: keys are digests, codes hashed.

use crate::error::{ServiceError, ServiceResult};
use crate::{Inner, now_millis};
use base64::Engine;
use palaver_core::ports::{Added, CodeMessage, CodePurpose, Credential, Issued, Redeemed, SendError};
use palaver_core::{StoreError, TenantId, UserId};
use sha2::{Digest, Sha256};
use std::fmt::Write;
use std::time::Duration;

/// `[accounts.credentials]` as the service reads it.
#[derive(Debug, Clone)]
pub struct CredentialsConfig {
    /// Methods every account must have confirmed before it logs in (Tinode's `acc_validation.<method>.required =
    /// ["auth"]`), each enabled.
    pub required: Vec<String>,
    /// Digits in a code.
    pub code_length: u32,
    /// How long a code stays valid.
    pub code_ttl: Duration,
    /// Wrong tries a code survives; the last one voids it.
    pub max_attempts: u32,
    /// Codes one address gets in an hour, for any purpose.
    pub sends_per_hour: u32,
    /// Credentials one account may hold.
    pub max_per_account: usize,
    /// A confirmed credential becomes the tag `method:value`, so that others find the account by it (`fnd`);
    /// clients may then not set tags of those methods' namespaces themselves.
    pub add_to_tags: bool,
}

impl Default for CredentialsConfig {
    fn default() -> Self {
        CredentialsConfig {
            required: Vec::new(),
            code_length: 6,
            code_ttl: Duration::from_secs(900),
            max_attempts: 5,
            sends_per_hour: 5,
            max_per_account: 8,
            add_to_tags: true,
        }
    }
}

/// What a reset grant starts with, so that it is never mistaken for a login token.
const GRANT_PREFIX: &str = "reset1.";

/// The methods Palaver knows how to check an address of.
pub const METHODS: &[&str] = &["email", "tel"];

/// The address as stored and compared: a trimmed, lower-cased email address with one `@` and a dotted domain;
/// a phone number as `+` and 6 to 15 digits (spaces, dashes, dots and brackets dropped).
pub(crate) fn normalise(method: &str, value: &str) -> ServiceResult<String> {
    let bad = || ServiceError::BadCredential { method: method.to_owned() };
    let value = value.trim();
    match method {
        "email" => {
            let v = value.to_lowercase();
            let (local, domain) = v.split_once('@').ok_or_else(bad)?;
            let plain = |s: &str| !s.is_empty() && !s.chars().any(|c| c.is_whitespace() || c.is_control() || c == '@');
            let labels_ok = domain.split('.').count() >= 2 && domain.split('.').all(|l| !l.is_empty());
            if v.len() > 128 || !plain(local) || !plain(domain) || !labels_ok {
                return Err(bad());
            }
            Ok(v)
        }
        "tel" => {
            let digits: String = value.chars().filter(|c| !matches!(c, ' ' | '-' | '.' | '(' | ')')).collect();
            let rest = digits.strip_prefix('+').ok_or_else(bad)?;
            if !(6..=15).contains(&rest.len()) || !rest.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            Ok(digits)
        }
        _ => Err(bad()),
    }
}

/// Lowercase hex SHA-256 of the parts joined by `\n`.
fn digest(parts: &[&str]) -> String {
    let hash = Sha256::digest(parts.join("\n").as_bytes());
    let mut hex = String::with_capacity(64);
    for byte in hash {
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

/// The credential use cases of one tenant.
pub(crate) struct Credentials<'a> {
    pub(super) svc: &'a Inner,
    pub(super) tenant: TenantId,
}

impl<'a> Credentials<'a> {
    fn cfg(&self) -> &CredentialsConfig {
        &self.svc.cfg.credentials
    }

    /// True if the node can send codes for `method`.
    pub(crate) fn enabled(&self, method: &str) -> bool {
        self.svc.ports.code_senders.contains_key(method)
    }

    /// The `reqCred` of `{hi}`: the methods each auth level requires, or `None` when nothing is required.
    pub(crate) fn required(&self) -> &'a [String] {
        &self.svc.cfg.credentials.required
    }

    /// The method and normalised address of a client's credential, refused when the method is not enabled.
    pub(crate) fn parse(&self, method: &str, value: &str) -> ServiceResult<(String, String)> {
        if !self.enabled(method) {
            return Err(ServiceError::BadCredential { method: method.to_owned() });
        }
        Ok((method.to_owned(), normalise(method, value)?))
    }

    /// The user's credentials.
    pub(crate) async fn list(&self, user: UserId) -> ServiceResult<Vec<Credential>> {
        Ok(self.svc.ports.credentials.credentials_of(self.tenant, user).await?)
    }

    /// The required methods the user has no confirmed credential of, in the configured order.
    pub(crate) async fn missing(&self, user: UserId) -> ServiceResult<Vec<String>> {
        if self.required().is_empty() {
            return Ok(Vec::new());
        }
        let creds = self.list(user).await?;
        let done = |m: &str| creds.iter().any(|c| c.done && c.method == m);
        Ok(self.required().iter().filter(|m| !done(m)).cloned().collect())
    }

    /// Fails with `DuplicateCredential` if another account confirmed the address.
    pub(crate) async fn ensure_free(&self, method: &str, value: &str, owner: Option<UserId>) -> ServiceResult<()> {
        match self.svc.ports.credentials.find_by_credential(self.tenant, method, value).await? {
            Some(u) if Some(u) != owner => Err(ServiceError::DuplicateCredential),
            _ => Ok(()),
        }
    }

    /// Adds an unconfirmed credential to the user and sends it a code; the user's other unconfirmed credential
    /// of the method, if any, goes. Already confirmed by the user or anyone else: `DuplicateCredential`, as
    /// Tinode answers. Returns the credential's state.
    pub(crate) async fn add(&self, user: UserId, method: &str, value: &str, lang: Option<&str>) -> ServiceResult<()> {
        let store = &self.svc.ports.credentials;
        let max = self.cfg().max_per_account;
        let added = match store.add_credential(self.tenant, user, method, value, now_millis(), max).await {
            Ok(added) => added,
            Err(StoreError::Conflict(_)) => {
                // Another account confirmed it, or this one is full: tell which.
                if store.find_by_credential(self.tenant, method, value).await?.is_some() {
                    return Err(ServiceError::DuplicateCredential);
                }
                return Err(ServiceError::Policy(format!("an account holds at most {max} credentials")));
            }
            Err(e) => return Err(e.into()),
        };
        if let Added::Known { done: true } = added {
            return Err(ServiceError::DuplicateCredential);
        }
        for other in store.credentials_of(self.tenant, user).await? {
            if other.method == method && !other.done && other.value != value {
                store.delete_credential(self.tenant, user, method, &other.value).await?;
            }
        }
        self.send_code(user, method, value, CodePurpose::Confirm, lang).await
    }

    /// Confirms the user's pending credential of `method` with `resp`. A wrong code is `InvalidResponse`; a code
    /// that expired or was used up is `CodeExpired`, and a new one goes out; no pending credential is `NotFound`.
    /// Returns the confirmed address.
    pub(crate) async fn confirm(
        &self,
        user: UserId,
        method: &str,
        resp: &str,
        lang: Option<&str>,
    ) -> ServiceResult<String> {
        let store = &self.svc.ports.credentials;
        let pending =
            store.credentials_of(self.tenant, user).await?.into_iter().find(|c| c.method == method && !c.done);
        let Some(pending) = pending else { return Err(ServiceError::NotFound) };
        if !self.looks_like_code(resp) {
            // Not a code at all (the web app logs in at every keystroke of a retyped code): no try is used.
            return Err(ServiceError::InvalidResponse);
        }
        let key = self.code_key(CodePurpose::Confirm, Some(user), method, &pending.value);
        let hash = digest(&[&key, resp.trim()]);
        let max_attempts = self.cfg().max_attempts;
        match self.svc.ports.codes.redeem(self.tenant, &key, &hash, max_attempts).await? {
            Redeemed::Accepted => {}
            Redeemed::Wrong { .. } => return Err(ServiceError::InvalidResponse),
            Redeemed::Missing => {
                self.send_code(user, method, &pending.value, CodePurpose::Confirm, lang).await?;
                return Err(ServiceError::CodeExpired);
            }
        }
        match store.confirm_credential(self.tenant, user, method, &pending.value, now_millis()).await {
            Ok(()) => {}
            // Someone else confirmed the same address in the meantime: the first confirmation stands.
            Err(StoreError::Conflict(_)) => return Err(ServiceError::DuplicateCredential),
            Err(StoreError::NotFound) => return Err(ServiceError::NotFound),
            Err(e) => return Err(e.into()),
        }
        self.svc.metrics.credential_confirmed(method);
        Ok(pending.value)
    }

    /// Removes one of the user's credentials. The only confirmed credential of a required method stays
    /// (`LastCredential`). Returns whether it existed and was confirmed.
    pub(crate) async fn delete(&self, user: UserId, method: &str, value: &str) -> ServiceResult<Option<bool>> {
        let creds = self.list(user).await?;
        let Some(cred) = creds.iter().find(|c| c.method == method && c.value == value) else { return Ok(None) };
        let others_done = creds.iter().filter(|c| c.method == method && c.done && c.value != value).count();
        if cred.done && others_done == 0 && self.required().iter().any(|m| m == method) {
            return Err(ServiceError::LastCredential);
        }
        self.svc.ports.credentials.delete_credential(self.tenant, user, method, value).await?;
        Ok(Some(cred.done))
    }

    /// Sends a reset code to a confirmed address. Counted against the address whether or not an account
    /// confirmed it, and answered the same either way, so that the reply tells no one which addresses exist.
    pub(crate) async fn request_reset(&self, method: &str, value: &str, lang: Option<&str>) -> ServiceResult<()> {
        let owner = self.svc.ports.credentials.find_by_credential(self.tenant, method, value).await?;
        let Some(owner) = owner else {
            // Count the ask all the same, so that probing unknown addresses meets the same limit.
            let limit = self.limit_key(method, value);
            let key = self.code_key(CodePurpose::Reset, None, method, value);
            let (ttl, per_hour) = (self.ttl_ms(), self.cfg().sends_per_hour);
            return match self.svc.ports.codes.issue(self.tenant, &key, &limit, "-", ttl, per_hour).await? {
                Issued::Stored => Ok(()),
                Issued::Limited { retry_after_ms } => Err(limited(retry_after_ms)),
            };
        };
        self.send_code(owner, method, value, CodePurpose::Reset, lang).await
    }

    /// The account a reset code for a confirmed address belongs to, consuming the code. Anything but a live,
    /// matching code is `AuthFailed`.
    pub(crate) async fn redeem_reset(&self, method: &str, value: &str, code: &str) -> ServiceResult<UserId> {
        if !self.looks_like_code(code) {
            return Err(ServiceError::AuthFailed);
        }
        let owner = self.svc.ports.credentials.find_by_credential(self.tenant, method, value).await?;
        let key = self.code_key(CodePurpose::Reset, None, method, value);
        let hash = digest(&[&key, code.trim()]);
        let redeemed = self.svc.ports.codes.redeem(self.tenant, &key, &hash, self.cfg().max_attempts).await?;
        match (redeemed, owner) {
            (Redeemed::Accepted, Some(owner)) => Ok(owner),
            _ => Err(ServiceError::AuthFailed),
        }
    }

    /// Exchanges a redeemed reset for a one-time grant (Tinode's `{login scheme:"code"}`): an opaque token that
    /// lets one `{acc tmpscheme:"token"}` set the account's password within the code's lifetime. It logs nobody
    /// in. Returns the grant and when it expires.
    pub(crate) async fn grant_reset(&self, user: UserId) -> ServiceResult<(String, i64)> {
        let secret = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(rand::random::<[u8; 24]>());
        let key = digest(&["grant", &user.0.to_string(), &secret]);
        let hash = digest(&[&key, &secret]);
        // Grants follow a redeemed code, which the address's hourly sends bound already.
        let limit = digest(&["grant", &user.0.to_string()]);
        match self.svc.ports.codes.issue(self.tenant, &key, &limit, &hash, self.ttl_ms(), u32::MAX).await? {
            Issued::Stored => {}
            Issued::Limited { retry_after_ms } => return Err(limited(retry_after_ms)),
        }
        let expires = now_millis() + i64::try_from(self.ttl_ms()).unwrap_or(i64::MAX / 2);
        Ok((format!("{GRANT_PREFIX}{}.{secret}", user.0), expires))
    }

    /// The account a reset grant names, consuming the grant. Anything but a live grant is `AuthFailed`.
    pub(crate) async fn redeem_grant(&self, grant: &str) -> ServiceResult<UserId> {
        let parsed = grant.strip_prefix(GRANT_PREFIX).and_then(|g| g.split_once('.'));
        let Some((user, secret)) = parsed else { return Err(ServiceError::AuthFailed) };
        let user = user.parse::<u64>().map(UserId).map_err(|_| ServiceError::AuthFailed)?;
        let key = digest(&["grant", &user.0.to_string(), secret]);
        let hash = digest(&[&key, secret]);
        match self.svc.ports.codes.redeem(self.tenant, &key, &hash, 1).await? {
            Redeemed::Accepted => Ok(user),
            _ => Err(ServiceError::AuthFailed),
        }
    }

    /// Issues a code for the address (counted against its hourly sends) and sends it. The code is stored
    /// before it is sent, so a code that reaches the address always works.
    async fn send_code(
        &self,
        user: UserId,
        method: &str,
        value: &str,
        purpose: CodePurpose,
        lang: Option<&str>,
    ) -> ServiceResult<()> {
        let Some(sender) = self.svc.ports.code_senders.get(method).cloned() else {
            return Err(ServiceError::BadCredential { method: method.to_owned() });
        };
        let code = new_code(self.cfg().code_length);
        let owner = (purpose == CodePurpose::Confirm).then_some(user);
        let key = self.code_key(purpose, owner, method, value);
        let limit = self.limit_key(method, value);
        let hash = digest(&[&key, &code]);
        let per_hour = self.cfg().sends_per_hour;
        match self.svc.ports.codes.issue(self.tenant, &key, &limit, &hash, self.ttl_ms(), per_hour).await? {
            Issued::Stored => {}
            Issued::Limited { retry_after_ms } => {
                self.svc.metrics.code_sent(method, purpose, "limited");
                return Err(limited(retry_after_ms));
            }
        }
        let msg = CodeMessage {
            tenant: self.tenant,
            method,
            to: value,
            code: &code,
            purpose,
            valid_minutes: self.cfg().code_ttl.as_secs().div_ceil(60),
            lang,
        };
        match sender.send(&msg).await {
            Ok(()) => {
                self.svc.metrics.code_sent(method, purpose, "sent");
                Ok(())
            }
            Err(SendError::Refused(why)) => {
                tracing::info!(tenant = self.tenant.0, method, reason = %why, "a code's address was refused");
                self.svc.metrics.code_sent(method, purpose, "refused");
                Err(ServiceError::BadCredential { method: method.to_owned() })
            }
            Err(SendError::Unavailable(why)) => {
                self.svc.metrics.code_sent(method, purpose, "failed");
                Err(ServiceError::Unavailable { reason: format!("the {method} sender: {why}"), retry_after_ms: 5000 })
            }
        }
    }

    /// A tag that confirmed credentials own (`email:…`, `tel:…`) when they become tags: clients cannot set one.
    pub(crate) fn restricted_tag(&self, tag: &str) -> bool {
        self.cfg().add_to_tags && METHODS.iter().any(|m| tag.strip_prefix(m).is_some_and(|r| r.starts_with(':')))
    }

    /// The tags a client asks `user` (`None`: a new account) to have: its own, minus any in a credential
    /// namespace, plus the credential tags the account has. So a client replacing its tags never drops a
    /// confirmed address, nor adds one it did not confirm.
    pub(crate) async fn client_tags(&self, user: Option<UserId>, tags: Vec<String>) -> ServiceResult<Vec<String>> {
        let mut out: Vec<String> = tags.into_iter().filter(|t| !self.restricted_tag(t)).collect();
        if let Some(user) = user.filter(|_| self.cfg().add_to_tags) {
            let stored = self.svc.ports.users.get_user(self.tenant, user).await?.map(|u| u.tags).unwrap_or_default();
            out.extend(stored.into_iter().filter(|t| self.restricted_tag(t)));
        }
        out.sort();
        out.dedup();
        Ok(out)
    }

    /// Gives the user the tag `method:value` or takes it away, when credentials become tags. True if the tags
    /// changed.
    pub(crate) async fn retag(&self, user: UserId, method: &str, value: &str, present: bool) -> ServiceResult<bool> {
        if !self.cfg().add_to_tags {
            return Ok(false);
        }
        let Some(account) = self.svc.ports.users.get_user(self.tenant, user).await? else { return Ok(false) };
        let tag = format!("{method}:{value}");
        let mut tags = account.tags;
        let had = tags.contains(&tag);
        if had == present {
            return Ok(false);
        }
        if present {
            tags.push(tag);
            tags.sort();
        } else {
            tags.retain(|t| *t != tag);
        }
        let update = palaver_core::UserUpdate {
            updated: now_millis(),
            public: None,
            trusted: None,
            tags: Some(tags),
            defacs: None,
        };
        self.svc.ports.users.update_user(self.tenant, user, &update).await?;
        self.svc.account_changed(self.tenant, user, Some(user), palaver_core::ports::AccountChange::Updated).await;
        Ok(true)
    }

    /// True if `resp` has the shape of a code: exactly `code_length` digits. Anything else cannot match, so it
    /// is refused without using one of the code's tries.
    fn looks_like_code(&self, resp: &str) -> bool {
        let resp = resp.trim();
        resp.len() == self.cfg().code_length as usize && resp.bytes().all(|b| b.is_ascii_digit())
    }

    fn ttl_ms(&self) -> u64 {
        self.cfg().code_ttl.as_millis() as u64
    }

    /// The code's key: a confirmation code is the account's own, a reset code the address's.
    fn code_key(&self, purpose: CodePurpose, user: Option<UserId>, method: &str, value: &str) -> String {
        let user = user.map(|u| u.0.to_string()).unwrap_or_default();
        digest(&[purpose_name(purpose), &user, method, value])
    }

    /// The address's hourly send counter, shared by every purpose and account.
    fn limit_key(&self, method: &str, value: &str) -> String {
        digest(&["send", method, value])
    }
}

/// The purpose as metrics and keys name it.
pub(crate) fn purpose_name(purpose: CodePurpose) -> &'static str {
    match purpose {
        CodePurpose::Confirm => "confirm",
        CodePurpose::Reset => "reset",
    }
}

fn limited(retry_after_ms: u64) -> ServiceError {
    ServiceError::RateLimited { why: "too many codes sent to this address".into(), retry_after_ms }
}

/// `length` decimal digits, uniformly random.
fn new_code(length: u32) -> String {
    let length = length.clamp(4, 10);
    let n = rand::Rng::gen_range(&mut rand::thread_rng(), 0..10u64.pow(length));
    format!("{n:0width$}", width = length as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_normalised_or_refused() {
        assert_eq!(normalise("email", " Alice@Example.COM ").unwrap(), "alice@example.com");
        assert_eq!(normalise("tel", "+1 (555) 010-2030").unwrap(), "+15550102030");
        for (m, v) in [
            ("email", "alice"),
            ("email", "alice@localhost"),
            ("email", "a b@example.com"),
            ("email", "@example.com"),
            ("email", "a@@example.com"),
            ("tel", "5550102030"),
            ("tel", "+12"),
            ("tel", "+1555abc0102"),
            ("fax", "+15550102030"),
        ] {
            assert_eq!(normalise(m, v), Err(ServiceError::BadCredential { method: m.into() }), "{m} {v}");
        }
    }

    #[test]
    fn codes_have_their_length_and_vary() {
        let a = new_code(6);
        assert_eq!(a.len(), 6);
        assert!(a.bytes().all(|b| b.is_ascii_digit()));
        assert!((0..20).map(|_| new_code(8)).collect::<std::collections::HashSet<_>>().len() > 1);
    }

    #[test]
    fn keys_hide_the_address() {
        let d = digest(&["confirm", "7", "email", "alice@example.com"]);
        assert_eq!(d.len(), 64);
        assert!(!d.contains("alice"));
        assert_ne!(d, digest(&["confirm", "8", "email", "alice@example.com"]));
    }
}
