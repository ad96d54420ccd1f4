//! Tinode API keys: base64url of 24 bytes (version 1, app id, sequence, root flag, then the HMAC-MD5 of those
//! first 8 bytes under a salt). A key is valid when its HMAC checks out; the key then resolves the tenant.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE, URL_SAFE_NO_PAD};
use hmac::{Hmac, Mac};
use md5::Md5;
use palaver_core::TenantId;

mod registry;
pub use registry::RegistryKeys;

/// The demo key that ships with Tinode's clients; it checks out against [`DEMO_SALT`].
pub const DEMO_KEY: &str = "AQEAAAABAAD_rAp4DJh05a1HAwFT3A6K";

/// Tinode's default API key salt (base64).
pub const DEMO_SALT: &str = "T713/rYYgW7g4m3vG6zGRh7+FM1t0T8j13koXScOAj4=";

/// A salt that is not base64.
#[derive(Debug, thiserror::Error)]
#[error("the API key salt must be standard base64")]
pub struct BadSalt;

/// Decodes a base64 salt.
pub fn decode_salt(salt: &str) -> Result<Vec<u8>, BadSalt> {
    STANDARD.decode(salt.trim()).map_err(|_| BadSalt)
}

/// True if `key` is a well-formed version-1 key signed with `salt`.
pub fn key_is_valid(key: &str, salt: &[u8]) -> bool {
    let key = key.trim();
    let Ok(raw) = URL_SAFE.decode(key).or_else(|_| URL_SAFE_NO_PAD.decode(key)) else { return false };
    if raw.len() != 24 || raw[0] != 1 {
        return false;
    }
    let Ok(mut mac) = Hmac::<Md5>::new_from_slice(salt) else { return false };
    mac.update(&raw[..8]);
    mac.verify_slice(&raw[8..]).is_ok()
}

/// Makes a key for `app_id` signed with `salt` (for `palaver keygen` and tests).
pub fn make_key(app_id: u32, salt: &[u8]) -> String {
    let mut raw = vec![1u8];
    raw.extend_from_slice(&app_id.to_le_bytes());
    raw.extend_from_slice(&[0, 0, 0]);
    // HMAC takes keys of any length, so construction cannot fail.
    let mut mac = Hmac::<Md5>::new_from_slice(salt).expect("HMAC takes any key length");
    mac.update(&raw);
    raw.extend_from_slice(&mac.finalize().into_bytes());
    URL_SAFE.encode(raw)
}

/// Maps an API key to the tenant it belongs to.
#[async_trait::async_trait]
pub trait TenantResolver: Send + Sync {
    /// The tenant of a valid key of an active tenant, or `None` (answered with HTTP 403).
    async fn resolve(&self, api_key: &str) -> Option<TenantId>;
}

/// The single-tenant resolver of the embedded mode: every key signed with the salt belongs to one tenant.
#[derive(Debug, Clone)]
pub struct SaltedKeys {
    salt: Vec<u8>,
    tenant: TenantId,
}

impl SaltedKeys {
    /// Keys signed with `salt` resolve to `tenant`.
    pub fn new(salt: Vec<u8>, tenant: TenantId) -> Self {
        SaltedKeys { salt, tenant }
    }
}

#[async_trait::async_trait]
impl TenantResolver for SaltedKeys {
    async fn resolve(&self, api_key: &str) -> Option<TenantId> {
        key_is_valid(api_key, &self.salt).then_some(self.tenant)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demo_key_checks_out_against_the_demo_salt() {
        let salt = decode_salt(DEMO_SALT).unwrap();
        assert!(key_is_valid(DEMO_KEY, &salt));
        assert!(!key_is_valid("AQEAAAABAAD_rAp4DJh05a1HAwFT3A6L", &salt));
        assert!(!key_is_valid("bogus", &salt));
        assert!(!key_is_valid(DEMO_KEY, b"another salt"));
    }

    #[test]
    fn made_keys_are_valid_only_under_their_salt() {
        let key = make_key(7, b"salt one");
        assert!(key_is_valid(&key, b"salt one"));
        assert!(!key_is_valid(&key, b"salt two"));
    }
}
