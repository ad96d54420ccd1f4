//! The message aggregate: stored history per topic, its deletion log, and the idempotency backstop.

use crate::ports::QueueRecord;
use crate::{
    AppendOutcome, AuditStatus, DeleteMessages, Deletions, Message, MessageQuery, Seq, StoreResult, TenantId, UserId,
};

/// What a message change owes the outbox, built from the message as the change left it: it runs inside the
/// store's transaction, so it only builds records (no I/O).
pub type OwedFor<'a> = &'a (dyn Fn(&Message) -> Vec<QueueRecord> + Send + Sync);

/// An [`OwedFor`] for a change that owes nothing.
pub fn nothing_owed(_: &Message) -> Vec<QueueRecord> {
    Vec::new()
}

/// An append the store has taken in and will answer later: what [`MessageStore::queue_append`] hands back.
/// Awaiting it gives the outcome [`MessageStore::append`] would have given; dropping it does not withdraw the
/// message.
pub struct PendingAppend(std::pin::Pin<Box<dyn std::future::Future<Output = StoreResult<AppendOutcome>> + Send>>);

impl PendingAppend {
    /// An outcome still to come.
    pub fn new(outcome: impl std::future::Future<Output = StoreResult<AppendOutcome>> + Send + 'static) -> Self {
        PendingAppend(Box::pin(outcome))
    }

    /// An outcome already known (a store that appends in place).
    pub fn ready(outcome: StoreResult<AppendOutcome>) -> Self {
        PendingAppend(Box::pin(std::future::ready(outcome)))
    }
}

impl std::future::Future for PendingAppend {
    type Output = StoreResult<AppendOutcome>;

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Self::Output> {
        self.0.as_mut().poll(cx)
    }
}

impl std::fmt::Debug for PendingAppend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PendingAppend")
    }
}

/// Message history per topic.
#[async_trait::async_trait]
pub trait MessageStore: Send + Sync {
    /// Stores a message and raises the topic's `seq` and `touched` in the same write.
    ///
    /// If `client_mid` is set and a message with the same (topic, sender, client_mid) exists, nothing is written
    /// and `Duplicate` names its seq. `Conflict` if a message with the same (topic, seq) exists: the caller's seq
    /// source has fallen behind and must be re-baselined.
    async fn append(&self, tenant: TenantId, msg: &Message) -> StoreResult<AppendOutcome>;

    /// Takes an append in and returns before it is durable, so that a caller holding an ordering lock can
    /// release it while the write commits (and shares a commit with the appends queued after it). Returns once
    /// the message is queued: appends queued one after another by one caller are written in that order. The
    /// outcome, awaited later, is [`MessageStore::append`]'s. A store without a write queue appends in place.
    async fn queue_append(&self, tenant: TenantId, msg: &Message) -> StoreResult<PendingAppend> {
        Ok(PendingAppend::ready(self.append(tenant, msg).await))
    }

    /// The seq of the message stored with this idempotency key, if any.
    async fn find_by_client_mid(
        &self,
        tenant: TenantId,
        topic: &str,
        from: UserId,
        client_mid: &str,
    ) -> StoreResult<Option<Seq>>;

    /// The highest stored seq of the topic, 0 if none. For seq baselines at topic load, never per message.
    async fn max_seq(&self, tenant: TenantId, topic: &str) -> StoreResult<Seq>;

    /// Messages visible to `reader`, newest first: hard-deleted ones, the reader's soft-deleted ones, and
    /// messages not passed by moderation (unless `reader` sent them) are left out.
    async fn list_messages(
        &self,
        tenant: TenantId,
        topic: &str,
        reader: UserId,
        query: &MessageQuery,
    ) -> StoreResult<Vec<Message>>;

    /// Deletes ranges (hard: for everyone, content dropped; soft: hidden from `for_user` only). Allocates and
    /// returns the topic's next deletion id.
    async fn delete_messages(&self, tenant: TenantId, topic: &str, request: &DeleteMessages) -> StoreResult<i64>;

    /// Changes a message's moderation state and returns the message, appending what `owed` builds from the
    /// changed message (the decision's audit event, which names the author) to the tenant's outbox in the same
    /// transaction. `NotFound` (nothing owed written) if there is no such message.
    async fn set_audit(
        &self,
        tenant: TenantId,
        topic: &str,
        seq: Seq,
        audit: AuditStatus,
        owed: OwedFor<'_>,
    ) -> StoreResult<Message>;

    /// The deletions `reader` sees in the topic: ranges deleted for everyone plus the reader's own.
    async fn list_deletions(&self, tenant: TenantId, topic: &str, reader: UserId) -> StoreResult<Deletions>;
}
