//! The embedded idempotency store: `{pub}` retry keys with pending, done and failed states, each with its TTL.
//!
//! Expired keys are dropped lazily when they are looked at or reach the front of the insertion queue, and the
//! number of keys is capped: past the cap the oldest keys are evicted first. Losing a key early is safe, because
//! the message store's unique (topic, sender, client_mid) key remains the backstop.

use async_trait::async_trait;
use palaver_core::ports::IdempotencyStore;
use palaver_core::{Claim, Seq, StoreResult, TenantId, UserId};
use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Idempotency keys in process. Cloning is cheap and clones share the keys.
#[derive(Clone, Debug)]
pub struct MemoryIdempotency {
    ttls: Ttls,
    capacity: usize,
    state: Arc<Mutex<State>>,
}

/// How long each state of a key lives.
#[derive(Clone, Copy, Debug)]
struct Ttls {
    pending: Duration,
    done: Duration,
    failed: Duration,
}

type Key = (TenantId, String, UserId, String);

/// The keys, plus their insertion order for eviction. A queue entry whose generation no longer matches its key's
/// is stale (the key was removed and taken again) and is skipped.
#[derive(Default, Debug)]
struct State {
    keys: HashMap<Key, Entry>,
    order: VecDeque<(u64, Key)>,
    next_generation: u64,
}

#[derive(Debug)]
struct Entry {
    status: Status,
    expires: Instant,
    generation: u64,
}

#[derive(Debug, Clone, Copy)]
enum Status {
    Pending,
    Done(Seq),
    Failed,
}

impl Default for MemoryIdempotency {
    /// The idempotency TTLs: 120 s pending, 24 h done, 10 min failed.
    fn default() -> Self {
        Self::new(Duration::from_secs(120), Duration::from_secs(86_400), Duration::from_secs(600))
    }
}

impl MemoryIdempotency {
    /// The number of keys kept before the oldest are evicted, unless [`MemoryIdempotency::with_capacity`] says
    /// otherwise.
    pub const DEFAULT_CAPACITY: usize = 100_000;

    /// A store whose keys live `pending`, `done` or `failed` long in the respective state.
    pub fn new(pending: Duration, done: Duration, failed: Duration) -> Self {
        Self {
            ttls: Ttls { pending, done, failed },
            capacity: Self::DEFAULT_CAPACITY,
            state: Arc::new(Mutex::new(State::default())),
        }
    }

    /// The same store keeping at most `capacity` keys (at least one).
    pub fn with_capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity.max(1);
        self
    }

    /// How many keys are held, expired or not; for tests and metrics.
    pub fn len(&self) -> usize {
        self.state.lock().keys.len()
    }

    /// True if no key is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn key(tenant: TenantId, topic: &str, from: UserId, client_mid: &str) -> Key {
    (tenant, topic.to_owned(), from, client_mid.to_owned())
}

impl State {
    /// Stores `key` as a new entry at the back of the eviction queue, then enforces expiry and the cap.
    fn insert(&mut self, key: Key, status: Status, expires: Instant, capacity: usize, now: Instant) {
        let generation = self.next_generation;
        self.next_generation += 1;
        self.order.push_back((generation, key.clone()));
        self.keys.insert(key, Entry { status, expires, generation });
        self.prune(capacity, now);
    }

    /// Drops stale and expired entries from the front of the queue, and the oldest live ones while over the cap.
    fn prune(&mut self, capacity: usize, now: Instant) {
        while let Some((generation, key)) = self.order.front() {
            let live = self.keys.get(key).filter(|e| e.generation == *generation);
            let drop = match live {
                None => true,
                Some(entry) => entry.expires <= now || self.keys.len() > capacity,
            };
            if !drop {
                break;
            }
            if live.is_some() {
                self.keys.remove(key);
            }
            self.order.pop_front();
        }
        // Stale queue entries behind a live front can pile up when keys churn; compact once they dominate.
        if self.order.len() > 2 * capacity.max(self.keys.len()) {
            let keys = &self.keys;
            self.order.retain(|(g, k)| keys.get(k).is_some_and(|e| e.generation == *g));
        }
    }
}

#[async_trait]
impl IdempotencyStore for MemoryIdempotency {
    async fn claim(&self, tenant: TenantId, topic: &str, from: UserId, client_mid: &str) -> StoreResult<Claim> {
        let now = Instant::now();
        let key = key(tenant, topic, from, client_mid);
        let mut state = self.state.lock();
        match state.keys.get(&key) {
            Some(entry) if entry.expires > now => match entry.status {
                Status::Pending => return Ok(Claim::Pending),
                Status::Done(seq) => return Ok(Claim::Done { seq }),
                Status::Failed => {}
            },
            _ => {}
        }
        state.insert(key, Status::Pending, now + self.ttls.pending, self.capacity, now);
        Ok(Claim::Acquired)
    }

    async fn complete(
        &self,
        tenant: TenantId,
        topic: &str,
        from: UserId,
        client_mid: &str,
        seq: Seq,
    ) -> StoreResult<()> {
        let now = Instant::now();
        let key = key(tenant, topic, from, client_mid);
        let expires = now + self.ttls.done;
        let mut state = self.state.lock();
        match state.keys.get_mut(&key) {
            Some(entry) => {
                entry.status = Status::Done(seq);
                entry.expires = expires;
            }
            // The pending key may have expired or been evicted while the message was stored; recording the
            // outcome anyway lets a late retry learn the seq without reaching the message store.
            None => state.insert(key, Status::Done(seq), expires, self.capacity, now),
        }
        Ok(())
    }

    async fn fail(&self, tenant: TenantId, topic: &str, from: UserId, client_mid: &str) -> StoreResult<()> {
        let now = Instant::now();
        let key = key(tenant, topic, from, client_mid);
        let mut state = self.state.lock();
        // A done key keeps its seq: a retry must still learn where its message went.
        if let Some(entry) = state.keys.get_mut(&key).filter(|e| !matches!(e.status, Status::Done { .. })) {
            entry.status = Status::Failed;
            entry.expires = now + self.ttls.failed;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: TenantId = TenantId(1);
    const U: UserId = UserId(9);

    #[tokio::test]
    async fn walks_through_the_states() {
        let s = MemoryIdempotency::default();
        assert_eq!(s.claim(T, "grpA", U, "m1").await.unwrap(), Claim::Acquired);
        assert_eq!(s.claim(T, "grpA", U, "m1").await.unwrap(), Claim::Pending);
        assert_eq!(s.claim(TenantId(2), "grpA", U, "m1").await.unwrap(), Claim::Acquired, "tenants apart");
        s.fail(T, "grpA", U, "m1").await.unwrap();
        assert_eq!(s.claim(T, "grpA", U, "m1").await.unwrap(), Claim::Acquired, "failed keys are free");
        s.complete(T, "grpA", U, "m1", 42).await.unwrap();
        assert_eq!(s.claim(T, "grpA", U, "m1").await.unwrap(), Claim::Done { seq: 42 });
        assert_eq!(s.claim(T, "grpA", UserId(10), "m1").await.unwrap(), Claim::Acquired, "senders apart");
    }

    #[tokio::test]
    async fn keys_expire_after_their_ttl() {
        // Only expiry is timed here: asserting that a key is still live right after a write would depend on the
        // scheduler, so the live states are covered by the test above with long TTLs.
        let short = Duration::from_millis(50);
        let long = Duration::from_secs(3600);
        let pending_expires = MemoryIdempotency::new(short, long, long);
        assert_eq!(pending_expires.claim(T, "grpA", U, "m1").await.unwrap(), Claim::Acquired);
        tokio::time::sleep(short * 3).await;
        assert_eq!(pending_expires.claim(T, "grpA", U, "m1").await.unwrap(), Claim::Acquired, "expired pending");

        let done_expires = MemoryIdempotency::new(long, short, long);
        done_expires.complete(T, "grpA", U, "m1", 5).await.unwrap();
        tokio::time::sleep(short * 3).await;
        assert_eq!(done_expires.claim(T, "grpA", U, "m2").await.unwrap(), Claim::Acquired);
        assert_eq!(done_expires.len(), 1, "the expired key was pruned when a new one arrived");
        assert_eq!(done_expires.claim(T, "grpA", U, "m1").await.unwrap(), Claim::Acquired, "expired done");
    }

    #[tokio::test]
    async fn evicts_the_oldest_keys_past_the_cap() {
        let s = MemoryIdempotency::default().with_capacity(3);
        for mid in ["a", "b", "c", "d"] {
            assert_eq!(s.claim(T, "grpA", U, mid).await.unwrap(), Claim::Acquired);
        }
        assert_eq!(s.len(), 3);
        assert_eq!(s.claim(T, "grpA", U, "d").await.unwrap(), Claim::Pending);
        assert_eq!(s.claim(T, "grpA", U, "a").await.unwrap(), Claim::Acquired, "the oldest was evicted");
        assert_eq!(s.len(), 3);
        for round in 0..100 {
            s.fail(T, "grpA", U, "a").await.unwrap();
            assert_eq!(s.claim(T, "grpA", U, "a").await.unwrap(), Claim::Acquired, "round {round}");
        }
        assert!(s.len() <= 3);
    }
}
