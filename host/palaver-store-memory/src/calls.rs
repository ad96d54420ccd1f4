//! Calls in process, for tests: the same state machine as the SQL adapters, each transition checked and
//! written under one lock, which is what the SQL adapters' conditional update gives them.

use async_trait::async_trait;
use palaver_core::ports::{Call, CallEnd, CallState, CallStore};
use palaver_core::{Seq, StoreError, StoreResult, TenantId, UnixMillis, UserId};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// A call's key: tenant, stored topic, seq of its message.
type CallKey = (TenantId, String, Seq);

/// Calls per tenant, topic and seq. Clones share the rows.
#[derive(Clone, Default)]
pub struct MemoryCalls {
    rows: Arc<Mutex<HashMap<CallKey, Call>>>,
}

impl MemoryCalls {
    pub fn new() -> MemoryCalls {
        MemoryCalls::default()
    }

    /// Applies `change` to the call if `allowed` says so, returning the call after it.
    fn transition(
        &self,
        tenant: TenantId,
        topic: &str,
        seq: Seq,
        allowed: impl FnOnce(&Call) -> bool,
        change: impl FnOnce(&mut Call),
    ) -> Option<Call> {
        let mut rows = self.rows.lock();
        let call = rows.get_mut(&(tenant, topic.to_owned(), seq))?;
        if !allowed(call) {
            return None;
        }
        change(call);
        Some(call.clone())
    }
}

/// [`CallStore::live_call_of`]'s rule for one row.
fn is_live_since(c: &Call, started_since: UnixMillis, accepted_since: UnixMillis) -> bool {
    match c.state {
        CallState::Started => c.started_at >= started_since,
        CallState::Accepted => c.accepted_at.is_some_and(|a| a >= accepted_since),
        _ => false,
    }
}

#[async_trait]
impl CallStore for MemoryCalls {
    async fn create_call(
        &self,
        tenant: TenantId,
        call: &Call,
        started_since: UnixMillis,
        accepted_since: UnixMillis,
    ) -> StoreResult<CallState> {
        // The busy check and the insert under one lock.
        let mut rows = self.rows.lock();
        let key = (tenant, call.topic.clone(), call.seq);
        if rows.contains_key(&key) {
            return Err(StoreError::Conflict(format!("call {}:{} exists", call.topic, call.seq)));
        }
        let parties = [call.caller, call.callee];
        let busy = rows.iter().any(|((t, _, _), c)| {
            *t == tenant
                && (parties.contains(&c.caller) || parties.contains(&c.callee))
                && is_live_since(c, started_since, accepted_since)
        });
        let mut stored = call.clone();
        if busy {
            stored.state = CallState::Busy;
            stored.ended_at = Some(call.started_at);
            stored.end_reason = "busy".to_owned();
        }
        let state = stored.state;
        rows.insert(key, stored);
        Ok(state)
    }

    async fn get_call(&self, tenant: TenantId, topic: &str, seq: Seq) -> StoreResult<Option<Call>> {
        Ok(self.rows.lock().get(&(tenant, topic.to_owned(), seq)).cloned())
    }

    async fn accept_call(
        &self,
        tenant: TenantId,
        topic: &str,
        seq: Seq,
        callee_session: &str,
        at: UnixMillis,
    ) -> StoreResult<Option<Call>> {
        Ok(self.transition(
            tenant,
            topic,
            seq,
            |c| c.state == CallState::Started,
            |c| {
                c.state = CallState::Accepted;
                c.accepted_at = Some(at);
                c.callee_session = callee_session.to_owned();
            },
        ))
    }

    async fn end_call(
        &self,
        tenant: TenantId,
        topic: &str,
        seq: Seq,
        end: CallEnd,
        reason: &str,
        at: UnixMillis,
    ) -> StoreResult<Option<Call>> {
        Ok(self.transition(
            tenant,
            topic,
            seq,
            |c| end.from_states().contains(&c.state) && !(end.needs_unanswered() && c.accepted_at.is_some()),
            |c| {
                c.state = end.state();
                c.ended_at = Some(at);
                c.duration_ms = c.accepted_at.map_or(0, |a| at - a);
                c.end_reason = reason.to_owned();
            },
        ))
    }

    async fn live_call_of(
        &self,
        tenant: TenantId,
        user: UserId,
        started_since: UnixMillis,
        accepted_since: UnixMillis,
    ) -> StoreResult<Option<Call>> {
        let rows = self.rows.lock();
        let live = rows
            .iter()
            .filter(|((t, _, _), c)| *t == tenant && (c.caller == user || c.callee == user))
            .map(|(_, c)| c)
            .filter(|c| is_live_since(c, started_since, accepted_since))
            .max_by_key(|c| c.started_at);
        Ok(live.cloned())
    }

    async fn live_calls(
        &self,
        tenant: TenantId,
        since: UnixMillis,
        before: UnixMillis,
        limit: usize,
    ) -> StoreResult<Vec<Call>> {
        let rows = self.rows.lock();
        let mut live: Vec<Call> = rows
            .iter()
            .filter(|((t, _, _), c)| *t == tenant && c.state.is_live() && (since..before).contains(&c.started_at))
            .map(|(_, c)| c.clone())
            .collect();
        live.sort_by(|a, b| (a.started_at, &a.topic, a.seq).cmp(&(b.started_at, &b.topic, b.seq)));
        live.truncate(limit);
        Ok(live)
    }
}
