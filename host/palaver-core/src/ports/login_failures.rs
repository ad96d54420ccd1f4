//! Failed-login counters shared by every node of a tenant (in Redis: `security:login_fail:*`), so that guesses
//! spread over many nodes meet one backoff. Without a shared store the service counts in process.

use crate::{StoreResult, TenantId, UnixMillis};

/// How failures turn into a backoff: from `limit` failures on, `first_ms` doubling with each further failure up
/// to `max_ms`; a count is forgotten `forget_ms` after its last failure (or its backoff's end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub limit: u32,
    pub first_ms: u64,
    pub max_ms: u64,
    pub forget_ms: u64,
}

impl Backoff {
    /// The backoff after `count` failures, in milliseconds; 0 below the limit.
    pub fn after(&self, count: u32) -> u64 {
        if count < self.limit.max(1) {
            return 0;
        }
        let doublings = (count - self.limit.max(1)).min(30);
        self.first_ms.saturating_mul(1 << doublings).min(self.max_ms)
    }
}

/// Failure counters by key (`login:<normalised login>`, `addr:<ip>`). Adapters store digests of the keys, never
/// a login or an address in clear.
#[async_trait::async_trait]
pub trait LoginFailureStore: Send + Sync {
    /// The time until which any of `keys` backs off, if one does at `now`.
    async fn blocked_until(&self, tenant: TenantId, keys: &[&str], now: UnixMillis) -> StoreResult<Option<UnixMillis>>;

    /// Counts one failure for each `(key, policy)` at `now`, starting its backoff at the policy's limit.
    async fn record_failure(&self, tenant: TenantId, keys: &[(&str, Backoff)], now: UnixMillis) -> StoreResult<()>;

    /// Forgets a key's failures (a successful login).
    async fn clear(&self, tenant: TenantId, key: &str) -> StoreResult<()>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_the_limit_up_to_the_maximum() {
        let b = Backoff { limit: 3, first_ms: 1000, max_ms: 5000, forget_ms: 60_000 };
        assert_eq!(
            [b.after(0), b.after(2), b.after(3), b.after(4), b.after(5), b.after(40)],
            [0, 0, 1000, 2000, 4000, 5000]
        );
    }
}
