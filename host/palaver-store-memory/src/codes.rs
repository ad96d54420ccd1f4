//! The embedded one-time codes: confirmation and reset codes with their attempts, and the hourly send counters,
//! in process. The embedded mode runs one node, so process memory is every node's view.
//!
//! Both maps are capped together. Expired entries are dropped when the cap is reached; if the cap is still
//! reached, `issue` refuses (`Unavailable`) rather than forget a counter, which would lift a rate limit early.

use async_trait::async_trait;
use palaver_core::ports::{CodeStore, Issued, Redeemed};
use palaver_core::{StoreError, StoreResult, TenantId};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The window a send counter counts in: a fixed hour from the first send.
const LIMIT_WINDOW: Duration = Duration::from_secs(3600);

/// One-time codes in process. Cloning is cheap and clones share the codes.
#[derive(Clone, Debug)]
pub struct MemoryCodes {
    capacity: usize,
    state: Arc<Mutex<State>>,
}

#[derive(Debug)]
struct Code {
    hash: String,
    attempts: u32,
    expires: Instant,
}

#[derive(Debug)]
struct Counter {
    sends: u32,
    window_end: Instant,
}

#[derive(Default, Debug)]
struct State {
    codes: HashMap<(TenantId, String), Code>,
    limits: HashMap<(TenantId, String), Counter>,
}

impl State {
    fn purge(&mut self, now: Instant) {
        self.codes.retain(|_, c| c.expires > now);
        self.limits.retain(|_, c| c.window_end > now);
    }
}

impl MemoryCodes {
    /// Codes and counters, at most `capacity` of them together.
    pub fn new(capacity: usize) -> Self {
        Self { capacity: capacity.max(2), state: Arc::default() }
    }
}

#[async_trait]
impl CodeStore for MemoryCodes {
    async fn issue(
        &self,
        tenant: TenantId,
        code_key: &str,
        limit_key: &str,
        code_hash: &str,
        ttl_ms: u64,
        per_hour: u32,
    ) -> StoreResult<Issued> {
        let now = Instant::now();
        let mut state = self.state.lock();
        if state.codes.len() + state.limits.len() + 2 > self.capacity {
            state.purge(now);
            if state.codes.len() + state.limits.len() + 2 > self.capacity {
                return Err(StoreError::Unavailable(format!("{} codes outstanding", self.capacity)));
            }
        }
        let counter = state
            .limits
            .entry((tenant, limit_key.to_owned()))
            .and_modify(|c| {
                if c.window_end <= now {
                    *c = Counter { sends: 0, window_end: now + LIMIT_WINDOW };
                }
            })
            .or_insert(Counter { sends: 0, window_end: now + LIMIT_WINDOW });
        counter.sends = counter.sends.saturating_add(1);
        if counter.sends > per_hour {
            let retry_after_ms = counter.window_end.saturating_duration_since(now).as_millis() as u64;
            return Ok(Issued::Limited { retry_after_ms });
        }
        let code =
            Code { hash: code_hash.to_owned(), attempts: 0, expires: now + Duration::from_millis(ttl_ms.max(1)) };
        state.codes.insert((tenant, code_key.to_owned()), code);
        Ok(Issued::Stored)
    }

    async fn redeem(
        &self,
        tenant: TenantId,
        code_key: &str,
        code_hash: &str,
        max_attempts: u32,
    ) -> StoreResult<Redeemed> {
        let now = Instant::now();
        let mut state = self.state.lock();
        let key = (tenant, code_key.to_owned());
        let Some(code) = state.codes.get_mut(&key).filter(|c| c.expires > now) else {
            state.codes.remove(&key);
            return Ok(Redeemed::Missing);
        };
        if code.hash == code_hash {
            state.codes.remove(&key);
            return Ok(Redeemed::Accepted);
        }
        code.attempts += 1;
        let left = max_attempts.max(1).saturating_sub(code.attempts);
        if left == 0 {
            state.codes.remove(&key);
        }
        Ok(Redeemed::Wrong { attempts_left: left })
    }
}
