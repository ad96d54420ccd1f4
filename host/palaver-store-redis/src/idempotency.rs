//! Idempotency keys for `{pub}` retries at `{prefix}:{tenant}:topic:{topic}:uniq:msg:{from_uid}:{client_msg_id}`
//! with the value `{"status","seq","message_id","created_at"}` (one key per sender and client message id).
//!
//! A claim is `SET NX EX pending_ttl`; only when that finds the key taken does a script look at it, taking a
//! `failed` key over atomically and reporting `pending` or `done` otherwise. A batch of claims is one pipeline
//! of `SET NX`; the `done` writes of a busy node share pipelines through one writer. The message store's unique
//! (topic, sender, client_mid) key stays the backstop for keys that expired or were lost.

use crate::client::RedisClient;
use crate::codec::{now_millis, rfc3339_millis};
use async_trait::async_trait;
use palaver_core::ports::IdempotencyStore;
use palaver_core::{Claim, Seq, StoreError, StoreResult, TenantId, UserId};
use redis::Script;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, OnceLock};
use tokio::sync::{mpsc, oneshot};
use tracing::Instrument;

/// Runs when `SET NX` found the key: a `failed` (or, in the meantime, expired) key is taken as pending;
/// otherwise the current value is returned for the caller to read. `{1, nil}` means acquired, `{0, value}` not.
const TAKEOVER: &str = r"
local current = redis.call('GET', KEYS[1])
if current then
  local ok, value = pcall(cjson.decode, current)
  if not (ok and type(value) == 'table' and value['status'] == 'failed') then
    return {0, current}
  end
end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
return {1, false}
";

/// Marks the key failed unless it is gone or already done: a done key holds the seq a retry must get back.
const FAIL: &str = r"
local current = redis.call('GET', KEYS[1])
if not current then return 0 end
local ok, value = pcall(cjson.decode, current)
if ok and type(value) == 'table' and value['status'] == 'done' then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
return 1
";

/// The stored value, with the documented field names. `message_id` stays null: the ports identify messages by seq.
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
struct KeyValue {
    status: Status,
    seq: Option<Seq>,
    message_id: Option<i64>,
    created_at: String,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Status {
    Pending,
    Done,
    Failed,
}

impl KeyValue {
    fn encode(status: Status, seq: Option<Seq>) -> String {
        let v = KeyValue { status, seq, message_id: None, created_at: rfc3339_millis(now_millis()) };
        crate::codec::to_json(&v)
    }
}

/// Idempotency keys in Redis. Cloning is cheap.
#[derive(Clone)]
pub struct RedisIdempotency {
    client: RedisClient,
    scripts: Arc<(Script, Script)>,
    /// The queue of `done` writes, and once the first arrives the task that sends them in pipelines.
    completions: Arc<OnceLock<mpsc::Sender<Completion>>>,
}

/// A `done` value to write, and who waits for it.
struct Completion {
    key: String,
    value: String,
    reply: oneshot::Sender<StoreResult<()>>,
}

/// `done` writes waiting before a completing publish waits for room.
const COMPLETIONS_QUEUE: usize = 8192;

/// The most `done` writes one pipeline carries.
const COMPLETIONS_BATCH: usize = 128;

/// Sends the queued `done` writes, each batch as one pipeline of `SET … EX`, and answers each writer with
/// the pipeline's outcome.
async fn write_completions(client: RedisClient, mut rx: mpsc::Receiver<Completion>) {
    let ttl = client.config().done_ttl_seconds;
    let mut batch = Vec::with_capacity(COMPLETIONS_BATCH);
    while rx.recv_many(&mut batch, COMPLETIONS_BATCH).await > 0 {
        let mut pipe = redis::pipe();
        for c in &batch {
            pipe.cmd("SET").arg(&c.key).arg(&c.value).arg("EX").arg(ttl).ignore();
        }
        let outcome: StoreResult<()> = client.pipeline(&pipe).await;
        for c in batch.drain(..) {
            let _ = c.reply.send(outcome.clone());
        }
    }
}

impl std::fmt::Debug for RedisIdempotency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisIdempotency").finish_non_exhaustive()
    }
}

impl RedisIdempotency {
    /// Keys with the client's TTLs: `pending_ttl_seconds`, `done_ttl_seconds`, `failed_ttl_seconds`.
    pub fn new(client: RedisClient) -> Self {
        Self {
            client,
            scripts: Arc::new((Script::new(TAKEOVER), Script::new(FAIL))),
            completions: Arc::new(OnceLock::new()),
        }
    }

    fn key(&self, tenant: TenantId, topic: &str, from: UserId, client_mid: &str) -> String {
        self.client.keys().topic_uniq_msg(tenant, topic, from, client_mid)
    }

    /// Runs when `SET NX` found `key` taken: takes a failed key over as `pending`, or reads the holder's claim.
    async fn take_over(&self, key: &str, pending: &str, ttl: u64) -> StoreResult<Claim> {
        let (acquired, current): (i64, Option<String>) =
            self.client.script(self.scripts.0.key(key).arg(pending).arg(ttl)).await?;
        match (acquired, current) {
            (1, _) => Ok(Claim::Acquired),
            (_, Some(raw)) => Self::claim_of(&raw),
            (_, None) => Err(StoreError::Internal("idempotency script answered nothing".into())),
        }
    }

    /// Reads a taken key's value into the claim it means.
    fn claim_of(raw: &str) -> StoreResult<Claim> {
        let value: KeyValue = serde_json::from_str(raw)
            .map_err(|e| StoreError::Internal(format!("undecodable idempotency value {raw:?}: {e}")))?;
        match (value.status, value.seq) {
            (Status::Done, Some(seq)) => Ok(Claim::Done { seq }),
            (Status::Done, None) => Err(StoreError::Internal("done idempotency key without a seq".into())),
            // The script takes failed keys over, so seeing one here means it raced a writer: treat it as busy.
            (Status::Pending | Status::Failed, _) => Ok(Claim::Pending),
        }
    }
}

#[async_trait]
impl IdempotencyStore for RedisIdempotency {
    async fn claim(&self, tenant: TenantId, topic: &str, from: UserId, client_mid: &str) -> StoreResult<Claim> {
        let span = tracing::debug_span!("redis.idempotency_claim", tenant = tenant.0, topic);
        async {
            let key = self.key(tenant, topic, from, client_mid);
            let pending = KeyValue::encode(Status::Pending, None);
            let ttl = self.client.config().pending_ttl_seconds;
            let set = redis::cmd("SET").arg(&key).arg(&pending).arg("NX").arg("EX").arg(ttl).clone();
            let taken: Option<String> = self.client.query(&set).await?;
            if taken.is_some() {
                return Ok(Claim::Acquired);
            }
            self.take_over(&key, &pending, ttl).await
        }
        .instrument(span)
        .await
    }

    async fn claim_many(&self, tenant: TenantId, topic: &str, keys: &[(UserId, &str)]) -> Vec<StoreResult<Claim>> {
        if keys.is_empty() {
            return Vec::new();
        }
        let span = tracing::debug_span!("redis.idempotency_claim_many", tenant = tenant.0, topic, keys = keys.len());
        async {
            let pending = KeyValue::encode(Status::Pending, None);
            let ttl = self.client.config().pending_ttl_seconds;
            let names: Vec<String> = keys.iter().map(|(from, mid)| self.key(tenant, topic, *from, mid)).collect();
            // One pipeline of `SET NX`, run by Redis in order: a key repeated in the batch is set by its first
            // occurrence and found taken by the later ones, as one-by-one claims would find it.
            let mut pipe = redis::pipe();
            for name in &names {
                pipe.cmd("SET").arg(name).arg(&pending).arg("NX").arg("EX").arg(ttl);
            }
            let set: Vec<Option<String>> = match self.client.pipeline::<Vec<Option<String>>>(&pipe).await {
                Ok(set) if set.len() == names.len() => set,
                Ok(set) => {
                    let e = StoreError::Internal(format!("{} answers to {} claims", set.len(), names.len()));
                    return names.iter().map(|_| Err(e.clone())).collect();
                }
                Err(e) => return names.iter().map(|_| Err(e.clone())).collect(),
            };
            let mut claims = Vec::with_capacity(keys.len());
            for (name, set) in names.iter().zip(set) {
                if set.is_some() {
                    claims.push(Ok(Claim::Acquired));
                    continue;
                }
                // Taken: rare (a retry), so the look at the holder is a call of its own, as in `claim`; its
                // failure answers for this key alone.
                claims.push(self.take_over(name, &pending, ttl).await);
            }
            claims
        }
        .instrument(span)
        .await
    }

    async fn complete(
        &self,
        tenant: TenantId,
        topic: &str,
        from: UserId,
        client_mid: &str,
        seq: Seq,
    ) -> StoreResult<()> {
        let span = tracing::debug_span!("redis.idempotency_complete", tenant = tenant.0, topic, seq);
        async {
            // Written whether or not the pending key survived: a late retry then learns the seq from Redis
            // instead of reaching the message store's backstop.
            let key = self.key(tenant, topic, from, client_mid);
            let value = KeyValue::encode(Status::Done, Some(seq));
            // Through one writer per store, so that the completions of a busy node share pipelines instead of
            // costing a call each; the caller still waits for its own write.
            let writer = self.completions.get_or_init(|| {
                let (tx, rx) = mpsc::channel(COMPLETIONS_QUEUE);
                tokio::spawn(write_completions(self.client.clone(), rx));
                tx
            });
            let (reply, written) = oneshot::channel();
            if writer.send(Completion { key, value, reply }).await.is_err() {
                return Err(StoreError::Internal("the idempotency writer stopped".into()));
            }
            written.await.map_err(|_| StoreError::Internal("the idempotency writer stopped".into()))?
        }
        .instrument(span)
        .await
    }

    async fn fail(&self, tenant: TenantId, topic: &str, from: UserId, client_mid: &str) -> StoreResult<()> {
        let span = tracing::debug_span!("redis.idempotency_fail", tenant = tenant.0, topic);
        async {
            let key = self.key(tenant, topic, from, client_mid);
            let failed = KeyValue::encode(Status::Failed, None);
            let ttl = self.client.config().failed_ttl_seconds;
            let _: i64 = self.client.script(self.scripts.1.key(&key).arg(failed).arg(ttl)).await?;
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
    fn values_use_the_documented_shape() {
        let raw = KeyValue::encode(Status::Done, Some(12345));
        let v: serde_json::Value = serde_json::from_str(&raw).unwrap();
        assert_eq!(v["status"], "done");
        assert_eq!(v["seq"], 12345);
        assert!(v["message_id"].is_null());
        assert!(v["created_at"].as_str().unwrap().ends_with('Z'));
        assert_eq!(RedisIdempotency::claim_of(&raw).unwrap(), Claim::Done { seq: 12345 });
        let pending = KeyValue::encode(Status::Pending, None);
        assert_eq!(RedisIdempotency::claim_of(&pending).unwrap(), Claim::Pending);
        assert!(RedisIdempotency::claim_of("garbage").is_err());
    }
}
