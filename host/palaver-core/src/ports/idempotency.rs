//! Short-lived idempotency keys for `{pub}` retries. The message store's unique key is the backstop.

use crate::{Claim, Seq, StoreResult, TenantId, UserId};

/// Idempotency keys for `(topic, sender, client_mid)`, with pending/done/failed states and TTLs.
#[async_trait::async_trait]
pub trait IdempotencyStore: Send + Sync {
    /// Takes the key as pending if it is free or failed; otherwise says what holds it.
    async fn claim(&self, tenant: TenantId, topic: &str, from: UserId, client_mid: &str) -> StoreResult<Claim>;

    /// [`IdempotencyStore::claim`] for the keys of several senders' messages to one topic, answered in their
    /// order and each on its own, as if claimed one after another: of two equal keys the first may be acquired
    /// and the second then finds it pending, and one key's failure is that key's answer only. Publishing claims
    /// the keys of all the messages waiting on a topic this way; an adapter over a network store answers in one
    /// round trip where it can.
    async fn claim_many(&self, tenant: TenantId, topic: &str, keys: &[(UserId, &str)]) -> Vec<StoreResult<Claim>> {
        let mut claims = Vec::with_capacity(keys.len());
        for (from, client_mid) in keys {
            claims.push(self.claim(tenant, topic, *from, client_mid).await);
        }
        claims
    }

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
