//! The scale-out seq allocator: one counter per topic at `{prefix}:{tenant}:topic:{topic}:last_seq`, advanced
//! by one Lua script so that initialising from the stored maximum and incrementing are a single atomic step.
//!
//! The seq rules: Redis is the only source of seqs; when the key is missing (a new
//! topic, or a Redis that lost its data) it is initialised from the caller's floor, the highest seq known
//! stored; a seq is never reused, and gaps from failed writes are allowed. When Redis cannot be reached the
//! allocator answers `Unavailable` and the service replies with a retryable error: it never falls back to
//! counting from the database, which is what would make two nodes hand out the same seq.

use crate::client::RedisClient;
use async_trait::async_trait;
use palaver_core::ports::SeqAllocator;
use palaver_core::{Seq, StoreError, StoreResult, TenantId};
use redis::Script;
use std::sync::Arc;
use tracing::Instrument;

/// Initialise-if-missing, increment by the run's length (ARGV[2], 1 when absent), and never answer at or below
/// the floor; answers the run's first seq.
///
/// `INCRBY` alone is not enough after a counter was lost and re-created by another path, or restored from an
/// old snapshot: the increment would land at or below what is already stored. Raising the counter to
/// `floor + count` in the same script keeps the whole run above every stored seq without a second round trip.
const NEXT_SEQ: &str = r"
local floor = tonumber(ARGV[1])
local count = tonumber(ARGV[2] or '1')
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('SET', KEYS[1], floor)
end
local last = redis.call('INCRBY', KEYS[1], count)
if last - count < floor then
  last = floor + count
  redis.call('SET', KEYS[1], last)
end
return last - count + 1
";

/// Raises the counter to at least the floor; never lowers it, so seqs handed out meanwhile stay unique.
const REBASELINE: &str = r"
local floor = tonumber(ARGV[1])
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if current < floor then
  redis.call('SET', KEYS[1], floor)
  return floor
end
return current
";

/// Seq counters in Redis. Cloning is cheap; clones share the pool and the loaded scripts.
#[derive(Clone)]
pub struct RedisSeq {
    client: RedisClient,
    scripts: Arc<Scripts>,
}

struct Scripts {
    next: Script,
    rebaseline: Script,
}

impl std::fmt::Debug for RedisSeq {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisSeq").finish_non_exhaustive()
    }
}

impl RedisSeq {
    /// An allocator over the client's Redis and key prefix.
    pub fn new(client: RedisClient) -> Self {
        let scripts = Scripts { next: Script::new(NEXT_SEQ), rebaseline: Script::new(REBASELINE) };
        Self { client, scripts: Arc::new(scripts) }
    }

    /// The SHA1 the allocation script is known by, for `EVALSHA` comparisons (the bench uses it).
    pub fn next_seq_script_sha(&self) -> &str {
        self.scripts.next.get_hash()
    }

    /// The source of the allocation script, so a benchmark can load exactly what the adapter runs.
    pub fn next_seq_script_source() -> &'static str {
        NEXT_SEQ
    }
}

/// Seqs are positive `i64`s; a negative floor is a caller bug, so it is clamped rather than trusted.
fn checked_floor(floor: Seq) -> Seq {
    floor.max(0)
}

#[async_trait]
impl SeqAllocator for RedisSeq {
    async fn next_seqs(&self, tenant: TenantId, topic: &str, floor: Seq, count: u32) -> StoreResult<Seq> {
        let span = tracing::debug_span!("redis.next_seqs", tenant = tenant.0, topic, count);
        async {
            let key = self.client.keys().topic_last_seq(tenant, topic);
            let mut call = self.scripts.next.key(&key);
            call.arg(checked_floor(floor)).arg(count.max(1));
            let seq: Seq = self.client.script(&call).await.inspect_err(|e| {
                tracing::warn!(error = %e, "seq allocation failed; the publish is refused as retryable");
            })?;
            if seq <= floor {
                // The script cannot answer this; if it ever does, handing it out could overwrite history.
                return Err(StoreError::Internal(format!("seq script answered {seq} at or below floor {floor}")));
            }
            Ok(seq)
        }
        .instrument(span)
        .await
    }

    async fn rebaseline(&self, tenant: TenantId, topic: &str, floor: Seq) -> StoreResult<()> {
        let span = tracing::debug_span!("redis.rebaseline", tenant = tenant.0, topic, floor);
        async {
            let key = self.client.keys().topic_last_seq(tenant, topic);
            let _: Seq = self.client.script(self.scripts.rebaseline.key(&key).arg(checked_floor(floor))).await?;
            Ok(())
        }
        .instrument(span)
        .await
    }

    async fn forget(&self, tenant: TenantId, topic: &str) -> StoreResult<()> {
        let span = tracing::debug_span!("redis.forget_seq", tenant = tenant.0, topic);
        async {
            let key = self.client.keys().topic_last_seq(tenant, topic);
            let _: i64 = self.client.query(redis::cmd("DEL").arg(&key)).await?;
            Ok(())
        }
        .instrument(span)
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_have_stable_hashes_and_floors_are_clamped() {
        let a = Script::new(NEXT_SEQ);
        let b = Script::new(RedisSeq::next_seq_script_source());
        assert_eq!(a.get_hash(), b.get_hash());
        assert_eq!(a.get_hash().len(), 40);
        assert_eq!(checked_floor(-5), 0);
        assert_eq!(checked_floor(9), 9);
    }
}
