//! One-time codes every node shares (`verify:code:*`, `verify:limit:*`, short-lived state): a credential's
//! confirmation code and a password reset code.
//!
//! They fail closed: when Redis cannot answer, the call returns an error, so no code is issued unlimited and no
//! code is accepted unchecked. Keys are digests the service builds and codes are stored hashed, so a Redis dump
//! or `MONITOR` shows neither an address nor a code. Each call is one script, so a send is counted and its
//! code stored together, and a code is consumed by exactly one of two concurrent redeems.

use crate::client::RedisClient;
use palaver_core::ports::{CodeStore, Issued, Redeemed};
use palaver_core::{StoreResult, TenantId};
use redis::Script;
use std::sync::Arc;

/// The window `verify:limit:*` counts sends in: a fixed hour from the first send.
const LIMIT_WINDOW_MS: u64 = 3_600_000;

/// KEYS: limit counter, code. ARGV: sends per hour, code hash, code ttl ms, window ms. Returns -1 when the code
/// was stored, else the ms until the window ends.
const ISSUE: &str = r"
local n = redis.call('INCR', KEYS[1])
local window = redis.call('PTTL', KEYS[1])
if window < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
  window = tonumber(ARGV[4])
end
if n > tonumber(ARGV[1]) then
  return window
end
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[2], 'h', ARGV[2], 'a', 0)
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return -1
";

/// KEYS: code. ARGV: code hash, max attempts. Returns -1 accepted, -2 missing, else the attempts left.
const REDEEM: &str = r"
local h = redis.call('HGET', KEYS[1], 'h')
if not h then
  return -2
end
if h == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return -1
end
local used = redis.call('HINCRBY', KEYS[1], 'a', 1)
local left = tonumber(ARGV[2]) - used
if left <= 0 then
  redis.call('DEL', KEYS[1])
  return 0
end
return left
";

/// One-time codes in Redis, shared by the nodes. Cloning is cheap.
#[derive(Clone)]
pub struct RedisCodes {
    client: RedisClient,
    issue: Arc<Script>,
    redeem: Arc<Script>,
}

impl std::fmt::Debug for RedisCodes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisCodes").finish_non_exhaustive()
    }
}

impl RedisCodes {
    pub fn new(client: RedisClient) -> Self {
        Self { client, issue: Arc::new(Script::new(ISSUE)), redeem: Arc::new(Script::new(REDEEM)) }
    }
}

#[async_trait::async_trait]
impl CodeStore for RedisCodes {
    async fn issue(
        &self,
        tenant: TenantId,
        code_key: &str,
        limit_key: &str,
        code_hash: &str,
        ttl_ms: u64,
        per_hour: u32,
    ) -> StoreResult<Issued> {
        let keys = self.client.keys();
        let mut call = self.issue.key(keys.verify_limit(tenant, limit_key));
        call.key(keys.verify_code(tenant, code_key));
        call.arg(per_hour).arg(code_hash).arg(ttl_ms.max(1)).arg(LIMIT_WINDOW_MS);
        let out: i64 = self.client.script(&call).await?;
        Ok(if out < 0 { Issued::Stored } else { Issued::Limited { retry_after_ms: out as u64 } })
    }

    async fn redeem(
        &self,
        tenant: TenantId,
        code_key: &str,
        code_hash: &str,
        max_attempts: u32,
    ) -> StoreResult<Redeemed> {
        let mut call = self.redeem.key(self.client.keys().verify_code(tenant, code_key));
        call.arg(code_hash).arg(max_attempts.max(1));
        let out: i64 = self.client.script(&call).await?;
        Ok(match out {
            -1 => Redeemed::Accepted,
            -2 => Redeemed::Missing,
            left => Redeemed::Wrong { attempts_left: left.max(0) as u32 },
        })
    }
}
