//! Short-lived idempotency keys for `{pub}` retries. The message store's unique key is the backstop.

use crate::{Claim, Seq, StoreResult, TenantId, UserId};

/// Idempotency keys for `(topic, sender, client_mid)`, with pending/done/failed states and TTLs.
#[async_trait::async_trait]
pub trait IdempotencyStore: Send + Sync {
    /// Takes the key as pending if it is free or failed; otherwise says what holds it.
    async fn claim(&self, tenant: TenantId, topic: &str, from: UserId, client_mid: &str) -> StoreResult<Claim>;

    /// Marks the key done with the seq the message was stored under.
    async fn complete(
        &self,
        tenant: TenantId,
        topic: &str,
        from: UserId,
        client_mid: &str,
        seq: Seq,
    ) -> StoreResult<()>;

    /// Marks the key failed, so that a retry may take it again.
    async fn fail(&self, tenant: TenantId, topic: &str, from: UserId, client_mid: &str) -> StoreResult<()>;
}
