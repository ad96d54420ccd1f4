//! `HotMessages`: a `MessageStore` decorator that keeps 24-hour copies of hot topics' messages in Redis
//! (`topic:{topic}:hot_msg_seqs`, `topic:{topic}:hot_msg:{seq}`) and answers history windows from them when it
//! can prove the answer is the inner store's, and only for the topics and message sizes that are kept hot.
//!
//! The proof: the allocator's `last_seq` bounds every stored seq (a seq is allocated, and `RedisSeq` raises
//! the counter, before the message is handed to the store), so a window read walks down from
//! `min(before - 1, last_seq)` and must find a copy or a tombstone at every seq it passes. A gap (a failed
//! append, a failed copy, an eviction, an expiry) sends the read to the inner store, as does a soft deletion
//! of the reader's that may reach into the window or a held message the reader did not send.
//!
//! The decorator also keeps the cached topic and subscriptions coherent with message writes, so it belongs
//! in every stack that uses `CachedTopics` or `CachedSubs`, with `HotPolicy::Never` if no copies are wanted.

use crate::client::RedisClient;
use crate::coherence::Coherence;
use crate::copies::CopyWriter;
use crate::policy::HotPolicy;
use async_trait::async_trait;
use palaver_core::ports::{MessageStore, OwedFor, PendingAppend};
use palaver_core::{
    AppendOutcome, AuditStatus, DeleteMessages, Deletions, Message, MessageQuery, Seq, StoreResult, TenantId, UserId,
};
use std::sync::Arc;
use tracing::Instrument;

/// Message history with hot copies in Redis in front of an inner store.
#[derive(Clone)]
pub struct HotMessages {
    inner: Arc<dyn MessageStore>,
    redis: Coherence,
    policy: HotPolicy,
    /// Applies queued appends' Redis side in batches.
    copies: Arc<CopyWriter>,
}

impl std::fmt::Debug for HotMessages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HotMessages").field("policy", &self.policy).finish_non_exhaustive()
    }
}

impl HotMessages {
    /// Wraps `inner`; `policy` says which topics get hot copies.
    pub fn new(client: RedisClient, inner: Arc<dyn MessageStore>, policy: HotPolicy) -> Self {
        Self::with_coherence(Coherence::new(client), inner, policy)
    }

    pub(crate) fn with_coherence(redis: Coherence, inner: Arc<dyn MessageStore>, policy: HotPolicy) -> Self {
        let copies = Arc::new(CopyWriter::new(redis.clone(), policy.clone()));
        Self { inner, redis, policy, copies }
    }

    /// Logs and counts a Redis write that failed after the inner write succeeded; never fails the call.
    fn write_failed(&self, what: &str, topic: &str, e: &palaver_core::StoreError, hot_copy: bool) {
        tracing::warn!(error = %e, topic, "redis {what} after a stored write failed; copies may be stale until TTL");
        let metrics = self.redis.client.metrics();
        if hot_copy {
            metrics.hot_write_failed();
        } else {
            metrics.invalidation_failed();
        }
    }
}

#[async_trait]
impl MessageStore for HotMessages {
    async fn append(&self, tenant: TenantId, msg: &Message) -> StoreResult<AppendOutcome> {
        let span = tracing::debug_span!("hot.append", tenant = tenant.0, topic = %msg.topic, seq = msg.seq);
        async {
            let outcome = self.inner.append(tenant, msg).await?;
            if outcome == AppendOutcome::Stored {
                // The copy follows the durable write and its failure never fails the send.
                let hot = self.policy.is_hot(tenant, &msg.topic).await;
                if let Err(e) = self.redis.on_append(tenant, msg, hot).await {
                    self.write_failed("append", &msg.topic, &e, hot);
                }
            }
            Ok(outcome)
        }
        .instrument(span)
        .await
    }

    async fn queue_append(&self, tenant: TenantId, msg: &Message) -> StoreResult<PendingAppend> {
        let pending = self.inner.queue_append(tenant, msg).await?;
        let (copies, msg) = (self.copies.clone(), msg.clone());
        Ok(PendingAppend::new(async move {
            let outcome = pending.await?;
            if outcome == AppendOutcome::Stored {
                // As in `append`, but the outcome does not wait for the copy, which the copy writer applies: a
                // queued append's caller is acknowledging a message, and the copy is an optimisation. The writer
                // applies copies in the order appends settle, which is not always seq order across topics' turns; the copy script only ever raises `last_seq`, a read that meets
                // a copy not there yet falls back to the inner store, and a copy landing after a deletion of
                // its seq is written as a tombstone.
                copies.stored(tenant, msg);
            }
            Ok(outcome)
        }))
    }

    async fn find_by_client_mid(
        &self,
        tenant: TenantId,
        topic: &str,
        from: UserId,
        client_mid: &str,
    ) -> StoreResult<Option<Seq>> {
        self.inner.find_by_client_mid(tenant, topic, from, client_mid).await
    }

    async fn max_seq(&self, tenant: TenantId, topic: &str) -> StoreResult<Seq> {
        // The rule: the stored maximum comes from the database, never from Redis, so that it can
        // re-baseline a counter Redis lost.
        self.inner.max_seq(tenant, topic).await
    }

    async fn list_messages(
        &self,
        tenant: TenantId,
        topic: &str,
        reader: UserId,
        query: &MessageQuery,
    ) -> StoreResult<Vec<Message>> {
        let span = tracing::debug_span!("hot.list_messages", tenant = tenant.0, topic, reader = reader.0);
        async {
            // A stored message of the topic whose copy is still on its way from this node: the copies cannot
            // answer for it yet.
            if self.redis.copies_waiting(tenant, topic).is_none() && self.policy.is_hot(tenant, topic).await {
                let metrics = self.redis.client.metrics();
                match self.redis.read_hot(tenant, topic, reader, query).await {
                    Ok(Some(messages)) => {
                        metrics.hot_hit();
                        return Ok(messages);
                    }
                    Ok(None) => metrics.hot_miss(),
                    Err(e) => {
                        tracing::warn!(error = %e, topic, "hot read failed; reading history from the store");
                        metrics.fallback();
                    }
                }
            }
            // No refill from here: this answer is filtered for one reader, and copying it would hide from the
            // hot path the soft deletions of other readers that predate the copies.
            self.inner.list_messages(tenant, topic, reader, query).await
        }
        .instrument(span)
        .await
    }

    async fn delete_messages(&self, tenant: TenantId, topic: &str, request: &DeleteMessages) -> StoreResult<i64> {
        let span = tracing::debug_span!("hot.delete_messages", tenant = tenant.0, topic, hard = request.hard);
        async {
            let del_id = self.inner.delete_messages(tenant, topic, request).await?;
            // Applied whatever the policy says now: a topic that was hot earlier may still hold copies.
            let hot = self.policy.is_hot(tenant, topic).await;
            if let Err(e) = self.redis.on_delete(tenant, topic, request, del_id, hot).await {
                self.write_failed("deletion", topic, &e, false);
            }
            Ok(del_id)
        }
        .instrument(span)
        .await
    }

    async fn set_audit(
        &self,
        tenant: TenantId,
        topic: &str,
        seq: Seq,
        audit: AuditStatus,
        owed: OwedFor<'_>,
    ) -> StoreResult<Message> {
        let span = tracing::debug_span!("hot.set_audit", tenant = tenant.0, topic, seq);
        async {
            let message = self.inner.set_audit(tenant, topic, seq, audit, owed).await?;
            if let Err(e) = self.redis.on_set_audit(tenant, &message).await {
                self.write_failed("moderation update", topic, &e, false);
            }
            Ok(message)
        }
        .instrument(span)
        .await
    }

    async fn list_deletions(&self, tenant: TenantId, topic: &str, reader: UserId) -> StoreResult<Deletions> {
        self.inner.list_deletions(tenant, topic, reader).await
    }
}
