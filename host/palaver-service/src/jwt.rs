//! Tokens an app backend signs itself: `{login scheme:"jwt" secret:"<JWT>"}` carries a JSON Web Token signed
//! with one of the tenant's keys (HS256, RS256 or EdDSA), whose `sub` is the backend's own id for the user (the
//! account's external id). The model is Centrifugo's: the backend that authenticates its users mints short-lived
//! tokens, and the server only checks them. `exp` is required and may lie at most `max_lifetime` ahead, so a
//! token leaked from a backend stops working soon; revoking such a user is done at the backend (it stops
//! signing) or by disabling the account here. After the login the client holds Palaver's own token, which
//! revocation voids at once.

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use palaver_core::TenantId;
use serde::Deserialize;
use std::collections::HashMap;

/// The longest external id (the `sub` claim) in bytes, as stored.
pub const MAX_EXTERNAL_ID: usize = 255;

/// One key a tenant's backend signs with.
#[derive(Clone)]
pub struct JwtKey {
    /// Matched against the token header's `kid` when both have one.
    pub kid: Option<String>,
    pub algorithm: Algorithm,
    pub key: DecodingKey,
    /// Required `iss`, if set.
    pub issuer: Option<String>,
    /// Required `aud`, if set.
    pub audience: Option<String>,
    /// A valid token whose `sub` names no account creates one (public `fn` from the `name` claim).
    pub auto_provision: bool,
}

/// The keys of every tenant that accepts backend tokens, and the rules all tokens follow.
#[derive(Clone, Default)]
pub struct JwtKeys {
    by_tenant: HashMap<TenantId, Vec<JwtKey>>,
    /// The furthest `exp` may lie in the future, in seconds.
    max_lifetime_secs: u64,
    /// Clock skew allowed on `exp` and `nbf`, in seconds.
    leeway_secs: u64,
}

impl std::fmt::Debug for JwtKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tenants: Vec<_> = self.by_tenant.iter().map(|(t, k)| (t.0, k.len())).collect();
        f.debug_struct("JwtKeys").field("keys_by_tenant", &tenants).finish_non_exhaustive()
    }
}

/// Who a valid backend token names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwtIdentity {
    /// The `sub` claim: the account's external id.
    pub subject: String,
    /// The `name` claim, for a provisioned account's `public.fn`.
    pub name: Option<String>,
    /// The key that checked it allows creating the account.
    pub auto_provision: bool,
}

/// Why a backend token was refused. Every reason answers the client the same (401); the audit log keeps which.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JwtError {
    #[error("the tenant accepts no backend tokens")]
    NotConfigured,
    #[error("the token is malformed")]
    Malformed,
    #[error("no key of the tenant matches the token's algorithm and key id")]
    UnknownKey,
    #[error("the token's signature is invalid")]
    BadSignature,
    #[error("the token has expired")]
    Expired,
    #[error("the token expires more than {0} s ahead")]
    TooLong(u64),
    #[error("the token's claims are refused: {0}")]
    BadClaims(String),
}

/// The claims read here; optional so that a missing one is the library's `MissingRequiredClaim`, not a parse error.
#[derive(Deserialize)]
struct Claims {
    #[serde(default)]
    sub: Option<String>,
    #[serde(default)]
    exp: Option<u64>,
    #[serde(default)]
    name: Option<String>,
}

impl JwtKeys {
    /// Keys by tenant; `max_lifetime_secs` bounds how far ahead `exp` may lie, `leeway_secs` the clock skew.
    pub fn new(keys: Vec<(TenantId, JwtKey)>, max_lifetime_secs: u64, leeway_secs: u64) -> Self {
        let mut by_tenant: HashMap<TenantId, Vec<JwtKey>> = HashMap::new();
        for (tenant, key) in keys {
            by_tenant.entry(tenant).or_default().push(key);
        }
        JwtKeys { by_tenant, max_lifetime_secs, leeway_secs }
    }

    /// The tenant accepts backend tokens.
    pub fn accepts(&self, tenant: TenantId) -> bool {
        self.by_tenant.contains_key(&tenant)
    }

    /// Checks `token` against the tenant's keys (`exp` and `nbf` against the system clock, the lifetime bound
    /// against `now_secs`, Unix seconds): a key of the header's algorithm
    /// (and `kid`, when both name one) must verify the signature, `exp` must be in the future but not beyond
    /// the lifetime bound, `nbf` (if any) past, `iss` and `aud` as the key requires, and `sub` a usable id.
    pub fn verify(&self, tenant: TenantId, token: &str, now_secs: u64) -> Result<JwtIdentity, JwtError> {
        let keys = self.by_tenant.get(&tenant).ok_or(JwtError::NotConfigured)?;
        let header = jsonwebtoken::decode_header(token.trim()).map_err(|_| JwtError::Malformed)?;
        let candidates = keys
            .iter()
            .filter(|k| k.algorithm == header.alg && (k.kid.is_none() || header.kid.is_none() || k.kid == header.kid));
        let mut last = JwtError::UnknownKey;
        for key in candidates {
            match self.check(key, token.trim(), now_secs) {
                Ok(identity) => return Ok(identity),
                // Another key of the same algorithm may be the one (key rotation without `kid`).
                Err(JwtError::BadSignature) => last = JwtError::BadSignature,
                Err(e) => return Err(e),
            }
        }
        Err(last)
    }

    fn check(&self, key: &JwtKey, token: &str, now_secs: u64) -> Result<JwtIdentity, JwtError> {
        let mut rules = Validation::new(key.algorithm);
        rules.leeway = self.leeway_secs;
        rules.validate_nbf = true;
        // The library checks `iss` and `aud` only when the token has them, so a configured one is also required;
        // and a token naming an audience is refused by a key that names none (it was meant for someone else).
        let mut required = vec!["exp", "sub"];
        if let Some(aud) = &key.audience {
            rules.set_audience(&[aud]);
            required.push("aud");
        }
        if let Some(iss) = &key.issuer {
            rules.set_issuer(&[iss]);
            required.push("iss");
        }
        rules.set_required_spec_claims(&required);
        let data = jsonwebtoken::decode::<Claims>(token, &key.key, &rules).map_err(|e| match e.kind() {
            ErrorKind::InvalidSignature => JwtError::BadSignature,
            ErrorKind::ExpiredSignature => JwtError::Expired,
            ErrorKind::InvalidToken | ErrorKind::Base64(_) | ErrorKind::Json(_) | ErrorKind::Utf8(_) => {
                JwtError::Malformed
            }
            ErrorKind::InvalidAlgorithm | ErrorKind::InvalidKeyFormat => JwtError::UnknownKey,
            other => JwtError::BadClaims(format!("{other:?}")),
        })?;
        let claims = data.claims;
        if claims.exp.unwrap_or(u64::MAX) > now_secs + self.max_lifetime_secs + self.leeway_secs {
            return Err(JwtError::TooLong(self.max_lifetime_secs));
        }
        let sub = claims.sub.as_deref().unwrap_or_default().trim();
        if sub.is_empty() || sub.len() > MAX_EXTERNAL_ID || sub.chars().any(char::is_control) {
            return Err(JwtError::BadClaims(format!("sub must be 1–{MAX_EXTERNAL_ID} bytes without controls")));
        }
        let name = claims.name.filter(|n| !n.trim().is_empty()).map(|n| n.chars().take(128).collect());
        Ok(JwtIdentity { subject: sub.to_owned(), name, auto_provision: key.auto_provision })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{EncodingKey, Header};
    use serde_json::json;

    /// The real clock: the library checks `exp` and `nbf` against it.
    fn now() -> u64 {
        jsonwebtoken::get_current_timestamp()
    }

    fn hs_key(secret: &[u8], auto: bool) -> JwtKey {
        JwtKey {
            kid: None,
            algorithm: Algorithm::HS256,
            key: DecodingKey::from_secret(secret),
            issuer: None,
            audience: None,
            auto_provision: auto,
        }
    }

    fn sign(secret: &[u8], claims: serde_json::Value) -> String {
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &EncodingKey::from_secret(secret)).unwrap()
    }

    fn keys() -> JwtKeys {
        JwtKeys::new(
            vec![(TenantId(1), hs_key(b"old-secret", false)), (TenantId(1), hs_key(b"new-secret", true))],
            3600,
            0,
        )
    }

    #[test]
    fn a_token_of_any_tenant_key_names_its_subject() {
        let t = sign(b"new-secret", json!({ "sub": "crm-7", "exp": now() + 60, "name": "Alice" }));
        let id = keys().verify(TenantId(1), &t, now()).unwrap();
        assert_eq!(id, JwtIdentity { subject: "crm-7".into(), name: Some("Alice".into()), auto_provision: true });
        let t = sign(b"old-secret", json!({ "sub": "crm-7", "exp": now() + 60 }));
        assert!(!keys().verify(TenantId(1), &t, now()).unwrap().auto_provision, "the rotated-out key still works");
    }

    #[test]
    fn refusals_say_why() {
        let k = keys();
        let forged = sign(b"guess", json!({ "sub": "crm-7", "exp": now() + 60 }));
        assert_eq!(k.verify(TenantId(1), &forged, now()), Err(JwtError::BadSignature));
        let t = sign(b"new-secret", json!({ "sub": "crm-7", "exp": now() + 60 }));
        assert_eq!(k.verify(TenantId(2), &t, now()), Err(JwtError::NotConfigured), "keys are per tenant");
        let expired = sign(b"new-secret", json!({ "sub": "crm-7", "exp": now() - 1 }));
        assert_eq!(k.verify(TenantId(1), &expired, now()), Err(JwtError::Expired));
        let long = sign(b"new-secret", json!({ "sub": "crm-7", "exp": now() + 7200 }));
        assert_eq!(k.verify(TenantId(1), &long, now()), Err(JwtError::TooLong(3600)));
        let no_exp = sign(b"new-secret", json!({ "sub": "crm-7" }));
        assert!(matches!(k.verify(TenantId(1), &no_exp, now()), Err(JwtError::BadClaims(_))), "exp is required");
        let empty = sign(b"new-secret", json!({ "sub": " ", "exp": now() + 60 }));
        assert!(matches!(k.verify(TenantId(1), &empty, now()), Err(JwtError::BadClaims(_))));
        assert_eq!(k.verify(TenantId(1), "not.a.jwt", now()), Err(JwtError::Malformed));
        let rs = jsonwebtoken::encode(
            &Header::new(Algorithm::HS384),
            &json!({ "sub": "x", "exp": now() + 60 }),
            &EncodingKey::from_secret(b"new-secret"),
        )
        .unwrap();
        assert_eq!(k.verify(TenantId(1), &rs, now()), Err(JwtError::UnknownKey), "no key of that algorithm");
    }

    #[test]
    fn issuer_and_audience_bind_when_configured() {
        let key = JwtKey { issuer: Some("crm".into()), audience: Some("palaver".into()), ..hs_key(b"s", false) };
        let k = JwtKeys::new(vec![(TenantId(1), key)], 3600, 0);
        let good = sign(b"s", json!({ "sub": "u", "exp": now() + 60, "iss": "crm", "aud": "palaver" }));
        assert!(k.verify(TenantId(1), &good, now()).is_ok());
        let other = sign(b"s", json!({ "sub": "u", "exp": now() + 60, "iss": "evil", "aud": "palaver" }));
        assert!(matches!(k.verify(TenantId(1), &other, now()), Err(JwtError::BadClaims(_))));
        for missing in
            [json!({ "sub": "u", "exp": now() + 60 }), json!({ "sub": "u", "exp": now() + 60, "iss": "crm" })]
        {
            let missing = sign(b"s", missing);
            assert!(matches!(k.verify(TenantId(1), &missing, now()), Err(JwtError::BadClaims(_))), "required when set");
        }
        let plain = JwtKeys::new(vec![(TenantId(1), hs_key(b"s", false))], 3600, 0);
        let elsewhere = sign(b"s", json!({ "sub": "u", "exp": now() + 60, "aud": "another-service" }));
        assert!(matches!(plain.verify(TenantId(1), &elsewhere, now()), Err(JwtError::BadClaims(_))), "not for us");
    }
}
