//! The failed-login counters every node shares (`security:login_fail:*`, short-lived state).
//!
//! They fail closed: when Redis cannot answer, the call returns an error and never "not blocked". Logins
//! and addresses are never stored: keys hold SHA-256 digests of them, so a Redis dump or `MONITOR` reveals no
//! login.

use crate::client::RedisClient;
use palaver_core::ports::{Backoff, LoginFailureStore};
use palaver_core::{StoreResult, TenantId, UnixMillis};
use redis::Script;
use sha2::{Digest, Sha256};
use std::fmt::Write;
use std::sync::Arc;

/// KEYS: counter. ARGV: limit, first backoff ms, max backoff ms, forget ms, now ms. Counts a failure and, from
/// the limit on, sets the time the backoff ends; the counter lives until `forget` after that.
const LOGIN_FAIL: &str = r"
local n = redis.call('HINCRBY', KEYS[1], 'n', 1)
local limit = math.max(tonumber(ARGV[1]), 1)
local ttl = tonumber(ARGV[4])
if n >= limit then
  local wait = math.min(tonumber(ARGV[2]) * 2 ^ math.min(n - limit, 30), tonumber(ARGV[3]))
  redis.call('HSET', KEYS[1], 'until', string.format('%.0f', tonumber(ARGV[5]) + wait))
  ttl = ttl + wait
end
redis.call('PEXPIRE', KEYS[1], string.format('%.0f', ttl))
return n
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

/// Failed-login counters in Redis, shared by the nodes. Cloning is cheap.
#[derive(Clone)]
pub struct RedisLoginFailures {
    client: RedisClient,
    script: Arc<Script>,
}

impl std::fmt::Debug for RedisLoginFailures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisLoginFailures").finish_non_exhaustive()
    }
}

impl RedisLoginFailures {
    pub fn new(client: RedisClient) -> Self {
        Self { client, script: Arc::new(Script::new(LOGIN_FAIL)) }
    }

    fn login_fail_key(&self, tenant: TenantId, key: &str) -> String {
        self.client.keys().login_fail(tenant, &digest(&["login_fail", key]))
    }
}

#[async_trait::async_trait]
impl LoginFailureStore for RedisLoginFailures {
    async fn blocked_until(&self, tenant: TenantId, keys: &[&str], now: UnixMillis) -> StoreResult<Option<UnixMillis>> {
        let mut pipe = redis::pipe();
        for key in keys {
            pipe.cmd("HGET").arg(self.login_fail_key(tenant, key)).arg("until");
        }
        let untils: Vec<Option<i64>> = self.client.pipeline(&pipe).await?;
        Ok(untils.into_iter().flatten().filter(|u| *u > now).max())
    }

    async fn record_failure(&self, tenant: TenantId, keys: &[(&str, Backoff)], now: UnixMillis) -> StoreResult<()> {
        for (key, b) in keys {
            let name = self.login_fail_key(tenant, key);
            let mut call = self.script.key(&name);
            call.arg(b.limit).arg(b.first_ms).arg(b.max_ms).arg(b.forget_ms.max(1)).arg(now);
            let _: i64 = self.client.script(&call).await?;
        }
        Ok(())
    }

    async fn clear(&self, tenant: TenantId, key: &str) -> StoreResult<()> {
        let _: i64 = self.client.query(redis::cmd("DEL").arg(self.login_fail_key(tenant, key))).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_hide_what_they_key() {
        let h = digest(&["login_fail", "login:alice"]);
        assert_eq!(h.len(), 64);
        assert!(!h.contains("alice"));
        assert_ne!(h, digest(&["login_fail", "login:alicf"]));
    }
}
