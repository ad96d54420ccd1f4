//! `[auth.jwt]`: the keys app backends sign `{login scheme:"jwt"}` tokens with, per tenant, read and checked at
//! start (a key that cannot be used stops the node instead of refusing every login later).

use anyhow::{Context, bail};
use base64::Engine;
use jsonwebtoken::{Algorithm, DecodingKey};
use palaver_core::TenantId;
use palaver_service::jwt::{JwtKey, JwtKeys};
use serde::{Deserialize, Serialize};

/// Backend-signed login tokens. No keys: the scheme is off (`{ctrl 401}` "unknown authentication scheme").
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct JwtConfig {
    /// The furthest ahead a token's `exp` may lie, in seconds: a leaked token works at most this long.
    pub max_lifetime_seconds: u64,
    /// Clock skew allowed on `exp` and `nbf`, in seconds.
    pub leeway_seconds: u64,
    /// One entry per key; a tenant may have several (rotation; `kid` picks one when both sides name it).
    pub keys: Vec<JwtKeyConfig>,
}

impl Default for JwtConfig {
    fn default() -> Self {
        JwtConfig { max_lifetime_seconds: 3600, leeway_seconds: 30, keys: Vec::new() }
    }
}

/// One key of one tenant.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct JwtKeyConfig {
    /// The tenant whose logins the key signs (its numeric id; the embedded default tenant is 1).
    pub tenant: u64,
    /// `HS256` (with `secret`), `RS256` or `EdDSA` (with `public_key_file`).
    pub algorithm: String,
    /// HS256: the shared secret, standard base64 of at least 32 bytes.
    pub secret: String,
    /// RS256 / EdDSA: a PEM file with the backend's public key (`BEGIN PUBLIC KEY`, or `BEGIN RSA PUBLIC KEY`).
    pub public_key_file: String,
    /// Matched against the token header's `kid` when both name one.
    pub kid: String,
    /// Tokens must carry this `iss`, if set.
    pub issuer: String,
    /// Tokens must carry this `aud`, if set.
    pub audience: String,
    /// A valid token whose `sub` names no account creates one (its `name` claim becomes `public.fn`).
    pub auto_provision: bool,
}

impl JwtConfig {
    /// Checks every key and reads its files: the keys the service verifies with.
    pub fn load(&self) -> anyhow::Result<JwtKeys> {
        if self.max_lifetime_seconds < 60 {
            bail!("auth.jwt.max_lifetime_seconds must be at least 60");
        }
        if self.leeway_seconds > 300 {
            bail!("auth.jwt.leeway_seconds must be at most 300");
        }
        // One shared secret for two tenants would log a user into both.
        for (i, a) in self.keys.iter().enumerate() {
            if let Some(b) = self.keys[i + 1..].iter().find(|b| {
                a.algorithm == "HS256"
                    && b.algorithm == "HS256"
                    && a.tenant != b.tenant
                    && a.secret.trim() == b.secret.trim()
            }) {
                bail!(
                    "auth.jwt.keys: tenants {} and {} share an HS256 secret; give each tenant its own",
                    a.tenant,
                    b.tenant
                );
            }
        }
        let mut keys = Vec::with_capacity(self.keys.len());
        for (i, k) in self.keys.iter().enumerate() {
            let key = k.load().with_context(|| format!("auth.jwt.keys[{i}] (tenant {})", k.tenant))?;
            keys.push((TenantId(k.tenant), key));
        }
        Ok(JwtKeys::new(keys, self.max_lifetime_seconds, self.leeway_seconds))
    }

    /// The same configuration with the shared secrets hidden, for `config print`.
    pub fn redacted(&self) -> Self {
        let mut shown = self.clone();
        for k in shown.keys.iter_mut().filter(|k| !k.secret.is_empty()) {
            k.secret = "<redacted>".into();
        }
        shown
    }
}

impl JwtKeyConfig {
    fn load(&self) -> anyhow::Result<JwtKey> {
        if self.tenant == 0 {
            bail!("tenant is required");
        }
        let (algorithm, key) = match self.algorithm.as_str() {
            "HS256" => {
                let secret = base64::engine::general_purpose::STANDARD
                    .decode(self.secret.trim())
                    .context("secret must be standard base64")?;
                if secret.len() < 32 {
                    bail!("an HS256 secret must be at least 32 bytes");
                }
                (Algorithm::HS256, DecodingKey::from_secret(&secret))
            }
            "RS256" | "EdDSA" => {
                if self.public_key_file.is_empty() {
                    bail!("{} needs public_key_file", self.algorithm);
                }
                let pem = std::fs::read(&self.public_key_file)
                    .with_context(|| format!("reading {}", self.public_key_file))?;
                if self.algorithm == "RS256" {
                    (Algorithm::RS256, DecodingKey::from_rsa_pem(&pem).context("not an RSA public key in PEM")?)
                } else {
                    (Algorithm::EdDSA, DecodingKey::from_ed_pem(&pem).context("not an Ed25519 public key in PEM")?)
                }
            }
            other => bail!("algorithm {other:?} is not one of HS256, RS256, EdDSA"),
        };
        let some = |s: &str| (!s.trim().is_empty()).then(|| s.trim().to_owned());
        Ok(JwtKey {
            kid: some(&self.kid),
            algorithm,
            key,
            issuer: some(&self.issuer),
            audience: some(&self.audience),
            auto_provision: self.auto_provision,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hs(secret: &str) -> JwtKeyConfig {
        JwtKeyConfig { tenant: 1, algorithm: "HS256".into(), secret: secret.into(), ..JwtKeyConfig::default() }
    }

    #[test]
    fn unusable_keys_stop_the_start_with_the_reason() {
        let long = base64::engine::general_purpose::STANDARD.encode([7u8; 32]);
        let ok = JwtConfig { keys: vec![hs(&long)], ..JwtConfig::default() };
        assert!(ok.load().unwrap().accepts(TenantId(1)));
        let cases = [
            (hs("c2hvcnQ="), "at least 32 bytes"),
            (JwtKeyConfig { tenant: 0, ..hs(&long) }, "tenant is required"),
            (JwtKeyConfig { algorithm: "none".into(), ..hs(&long) }, "not one of"),
            (JwtKeyConfig { algorithm: "RS256".into(), ..hs(&long) }, "needs public_key_file"),
            (
                JwtKeyConfig { algorithm: "EdDSA".into(), public_key_file: "/nonexistent.pem".into(), ..hs(&long) },
                "reading /nonexistent.pem",
            ),
        ];
        for (key, why) in cases {
            let err = JwtConfig { keys: vec![key], ..JwtConfig::default() }.load().unwrap_err();
            assert!(format!("{err:#}").contains(why), "{err:#} should say {why}");
        }
        let shared =
            JwtConfig { keys: vec![hs(&long), JwtKeyConfig { tenant: 2, ..hs(&long) }], ..JwtConfig::default() };
        assert!(format!("{:#}", shared.load().unwrap_err()).contains("share an HS256 secret"));
        let shown = ok.redacted();
        assert_eq!(shown.keys[0].secret, "<redacted>");
    }
}
