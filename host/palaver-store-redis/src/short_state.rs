//! Short-lived security state (§5.1 "短期状态", §9.1): verification codes with a per-hour send limit, one-time
//! action tokens, and short locks.
//!
//! Everything here fails closed (§10): when Redis cannot answer, the call returns an error and never "allowed",
//! "valid" or "locked". Phone numbers, codes and tokens are never stored: keys and values hold SHA-256
//! digests of them, so a Redis dump or `MONITOR` reveals no number and no usable secret.

use crate::client::RedisClient;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use palaver_core::{StoreError, TenantId};
use rand::RngCore;
use redis::Script;
use sha2::{Digest, Sha256};
use std::fmt::Write;
use std::sync::Arc;
use std::time::Duration;

/// Sends of a verification code allowed per tenant, scene and phone number within an hour (the seed's limit).
pub const MAX_SENDS_PER_HOUR: u32 = 5;

/// Wrong guesses after which a code is discarded, so a six-digit code cannot be searched within its TTL.
pub const MAX_VERIFY_ATTEMPTS: u32 = 5;

/// Why a short-state call refused.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum ShortStateError {
    /// Redis could not be asked; the caller must refuse the operation (fail closed).
    #[error("short-lived state is unavailable: {0}")]
    Unavailable(String),
    /// The send limit was reached; the window ends in `retry_after_secs`.
    #[error("too many codes sent; retry in {retry_after_secs} s")]
    RateLimited { retry_after_secs: u64 },
    /// A scene or name the keys cannot carry.
    #[error("invalid {0}")]
    Invalid(&'static str),
    /// An unexpected reply.
    #[error("short-lived state: {0}")]
    Internal(String),
}

impl From<StoreError> for ShortStateError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Unavailable(m) => ShortStateError::Unavailable(m),
            other => ShortStateError::Internal(other.to_string()),
        }
    }
}

/// KEYS: code hash. ARGV: digest of the offered code, attempt limit. A match consumes the code.
const VERIFY: &str = r"
local stored = redis.call('HGET', KEYS[1], 'code')
if not stored then return 0 end
if stored == ARGV[1] then redis.call('DEL', KEYS[1]) return 1 end
if redis.call('HINCRBY', KEYS[1], 'attempts', 1) >= tonumber(ARGV[2]) then redis.call('DEL', KEYS[1]) end
return 0
";

/// KEYS: lock. ARGV: the holder's token. Deletes only the caller's own lock, never one taken after it expired.
const UNLOCK: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
";

/// Lowercase hex SHA-256 of the parts joined by `\n`.
fn digest(parts: &[&str]) -> String {
    let hash = Sha256::digest(parts.join("\n").as_bytes());
    let mut hex = String::with_capacity(64);
    for byte in hash {
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

/// The key form of a phone number: SHA-256 of its digits and `+`, so `+1 555-0100` and `+15550100` meet.
pub fn phone_hash(phone: &str) -> String {
    let normal: String = phone.chars().filter(|c| c.is_ascii_digit() || *c == '+').collect();
    digest(&["phone", &normal])
}

/// A scene (`login`, `register`, …) becomes a key segment, so it is kept to a safe alphabet.
fn check_scene(scene: &str) -> Result<(), ShortStateError> {
    let ok = !scene.is_empty()
        && scene.len() <= 32
        && scene.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok { Ok(()) } else { Err(ShortStateError::Invalid("scene")) }
}

/// A held short lock; give it back with [`ShortState::unlock`] (it also expires by itself).
#[derive(Debug)]
pub struct ShortLock {
    key: String,
    token: String,
}

/// Verification codes, action tokens and locks in Redis. Cloning is cheap.
#[derive(Clone)]
pub struct ShortState {
    client: RedisClient,
    scripts: Arc<(Script, Script)>,
}

impl std::fmt::Debug for ShortState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShortState").finish_non_exhaustive()
    }
}

impl ShortState {
    pub fn new(client: RedisClient) -> Self {
        Self { client, scripts: Arc::new((Script::new(VERIFY), Script::new(UNLOCK))) }
    }

    fn ttl(&self) -> u64 {
        self.client.config().short_state_ttl_seconds
    }

    /// Counts one send for (tenant, scene, phone) and, within the limit, stores `code` as the active one for
    /// `short_state_ttl_seconds`, replacing an earlier code. Returns the sends counted this hour.
    pub async fn issue_code(
        &self,
        tenant: TenantId,
        scene: &str,
        phone: &str,
        code: &str,
    ) -> Result<u32, ShortStateError> {
        check_scene(scene)?;
        let phone = phone_hash(phone);
        let keys = self.client.keys();
        let rate = keys.verify_rate(tenant, scene, &phone);
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("INCR")
            .arg(&rate)
            .cmd("EXPIRE")
            .arg(&rate)
            .arg(3600)
            .arg("NX")
            .ignore()
            .cmd("TTL")
            .arg(&rate);
        let (sent, ttl): (u32, i64) = self.client.pipeline(&pipe).await?;
        if sent > MAX_SENDS_PER_HOUR {
            return Err(ShortStateError::RateLimited { retry_after_secs: u64::try_from(ttl).unwrap_or(1).max(1) });
        }
        let key = keys.verify_code(tenant, scene, &phone);
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("DEL")
            .arg(&key)
            .ignore()
            .cmd("HSET")
            .arg(&key)
            .arg("code")
            .arg(digest(&["code", &phone, code]))
            .arg("attempts")
            .arg(0)
            .ignore()
            .cmd("EXPIRE")
            .arg(&key)
            .arg(self.ttl())
            .ignore();
        let () = self.client.pipeline(&pipe).await?;
        Ok(sent)
    }

    /// Whether an unexpired code is active for (tenant, scene, phone): the seed's resend-window check.
    pub async fn has_active_code(&self, tenant: TenantId, scene: &str, phone: &str) -> Result<bool, ShortStateError> {
        check_scene(scene)?;
        let key = self.client.keys().verify_code(tenant, scene, &phone_hash(phone));
        let exists: i64 = self.client.query(redis::cmd("EXISTS").arg(&key)).await?;
        Ok(exists == 1)
    }

    /// Checks `code`; a match consumes it. Wrong guesses count, and the code is discarded at the limit.
    pub async fn verify_code(
        &self,
        tenant: TenantId,
        scene: &str,
        phone: &str,
        code: &str,
    ) -> Result<bool, ShortStateError> {
        check_scene(scene)?;
        let phone = phone_hash(phone);
        let key = self.client.keys().verify_code(tenant, scene, &phone);
        let mut call = self.scripts.0.key(&key);
        call.arg(digest(&["code", &phone, code])).arg(MAX_VERIFY_ATTEMPTS);
        let matched: i64 = self.client.script(&call).await?;
        Ok(matched == 1)
    }

    fn token_key(&self, tenant: TenantId, purpose: &str, token: &str) -> String {
        self.client.keys().action_token(tenant, &digest(&["token", purpose, token]))
    }

    /// Creates a one-time token for `purpose` carrying `payload`, living `ttl` (default `short_state_ttl_seconds`).
    /// Only the token's digest is stored, so Redis cannot hand out a usable token.
    pub async fn create_action_token(
        &self,
        tenant: TenantId,
        purpose: &str,
        payload: &str,
        ttl: Option<Duration>,
    ) -> Result<String, ShortStateError> {
        let mut bytes = [0u8; 32];
        rand::thread_rng().fill_bytes(&mut bytes);
        let token = URL_SAFE_NO_PAD.encode(bytes);
        let millis = ttl.map_or(self.ttl() * 1000, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1));
        let key = self.token_key(tenant, purpose, &token);
        let _: () = self.client.query(redis::cmd("SET").arg(&key).arg(payload).arg("PX").arg(millis)).await?;
        Ok(token)
    }

    /// Consumes a token: its payload the first time, `None` after that, after expiry, or for another purpose.
    pub async fn consume_action_token(
        &self,
        tenant: TenantId,
        purpose: &str,
        token: &str,
    ) -> Result<Option<String>, ShortStateError> {
        let key = self.token_key(tenant, purpose, token);
        Ok(self.client.query(redis::cmd("GETDEL").arg(&key)).await?)
    }

    /// Takes the short lock `name` for `ttl`, or `None` if someone holds it.
    pub async fn try_lock(
        &self,
        tenant: TenantId,
        name: &str,
        ttl: Duration,
    ) -> Result<Option<ShortLock>, ShortStateError> {
        if name.is_empty() {
            return Err(ShortStateError::Invalid("lock name"));
        }
        let mut bytes = [0u8; 16];
        rand::thread_rng().fill_bytes(&mut bytes);
        let lock = ShortLock { key: self.client.keys().lock(tenant, name), token: URL_SAFE_NO_PAD.encode(bytes) };
        let millis = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        let mut cmd = redis::cmd("SET");
        cmd.arg(&lock.key).arg(&lock.token).arg("NX").arg("PX").arg(millis);
        let taken: Option<String> = self.client.query(&cmd).await?;
        Ok(taken.map(|_| lock))
    }

    /// Gives a lock back; `false` if it had expired (and perhaps been taken by someone else, who keeps it).
    pub async fn unlock(&self, lock: ShortLock) -> Result<bool, ShortStateError> {
        let deleted: i64 = self.client.script(self.scripts.1.key(&lock.key).arg(&lock.token)).await?;
        Ok(deleted == 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phone_hashes_hide_the_number_and_ignore_formatting() {
        let h = phone_hash("+1 555-0100");
        assert_eq!(h, phone_hash("+15550100"));
        assert_eq!(h.len(), 64);
        assert!(!h.contains("5550100"));
        assert_ne!(h, phone_hash("+15550101"));
        assert!(check_scene("login").is_ok() && check_scene("a:b").is_err() && check_scene("").is_err());
    }
}
