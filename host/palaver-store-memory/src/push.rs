//! Push in process: the device table (with the delayed pushes) for tests and the embedded mode's dedup, a map
//! bounded in entries whose claims expire after their TTL.

use async_trait::async_trait;
use palaver_core::ports::{DelayedPush, Device, DeviceStore, PushDedup};
use palaver_core::{Seq, StoreResult, TenantId, UnixMillis, UserId};
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Devices in process, per tenant and device id. Clones share the rows.
#[derive(Clone, Default)]
pub struct MemoryDevices {
    rows: Arc<Mutex<HashMap<TenantId, BTreeMap<String, Device>>>>,
    delayed: Arc<Mutex<Delayed>>,
}

/// Delayed pushes by tenant and id, and the last id handed out.
#[derive(Default)]
struct Delayed {
    next_id: i64,
    rows: BTreeMap<(TenantId, i64), DelayedRow>,
}

/// One delayed push: when it is due, who holds it until when, and the push.
struct DelayedRow {
    due_at: UnixMillis,
    claim: Option<(String, UnixMillis)>,
    push: DelayedPush,
}

impl MemoryDevices {
    pub fn new() -> MemoryDevices {
        MemoryDevices::default()
    }
}

#[async_trait]
impl DeviceStore for MemoryDevices {
    async fn upsert_device(&self, tenant: TenantId, device: &Device) -> StoreResult<()> {
        // Keyed by device id alone: a token registered by a second user replaces the first user's row.
        self.rows.lock().entry(tenant).or_default().insert(device.device_id.clone(), device.clone());
        Ok(())
    }

    async fn delete_device(&self, tenant: TenantId, user: UserId, device_id: &str) -> StoreResult<bool> {
        let mut rows = self.rows.lock();
        let Some(rows) = rows.get_mut(&tenant) else { return Ok(false) };
        if rows.get(device_id).is_some_and(|d| d.user == user) {
            rows.remove(device_id);
            return Ok(true);
        }
        Ok(false)
    }

    async fn list_devices(&self, tenant: TenantId, user: UserId) -> StoreResult<Vec<Device>> {
        let rows = self.rows.lock();
        Ok(rows.get(&tenant).map(|r| r.values().filter(|d| d.user == user).cloned().collect()).unwrap_or_default())
    }

    async fn count_devices(&self, tenant: TenantId, user: UserId) -> StoreResult<u64> {
        Ok(self.list_devices(tenant, user).await?.len() as u64)
    }

    async fn put_delayed(&self, tenant: TenantId, due_at: UnixMillis, push: &DelayedPush) -> StoreResult<()> {
        let mut d = self.delayed.lock();
        d.next_id += 1;
        let id = d.next_id;
        d.rows.insert((tenant, id), DelayedRow { due_at, claim: None, push: push.clone() });
        Ok(())
    }

    async fn count_delayed(&self, tenant: TenantId) -> StoreResult<u64> {
        Ok(self.delayed.lock().rows.range((tenant, i64::MIN)..=(tenant, i64::MAX)).count() as u64)
    }

    async fn claim_delayed(
        &self,
        tenant: TenantId,
        owner: &str,
        now: UnixMillis,
        lease_ms: i64,
        limit: usize,
    ) -> StoreResult<Vec<(i64, DelayedPush)>> {
        let mut d = self.delayed.lock();
        let mut due: Vec<(UnixMillis, i64)> = d
            .rows
            .range_mut((tenant, i64::MIN)..=(tenant, i64::MAX))
            .filter(|(_, r)| r.due_at <= now && r.claim.as_ref().is_none_or(|(_, until)| *until <= now))
            .map(|((_, id), r)| (r.due_at, *id))
            .collect();
        due.sort_unstable();
        due.truncate(limit);
        let mut claimed = Vec::with_capacity(due.len());
        for (_, id) in due {
            if let Some(row) = d.rows.get_mut(&(tenant, id)) {
                row.claim = Some((owner.to_owned(), now + lease_ms));
                claimed.push((id, row.push.clone()));
            }
        }
        Ok(claimed)
    }

    async fn remove_delayed(&self, tenant: TenantId, ids: &[i64]) -> StoreResult<()> {
        let mut d = self.delayed.lock();
        for id in ids {
            d.rows.remove(&(tenant, *id));
        }
        Ok(())
    }
}

type DedupKey = (TenantId, String, Seq, UserId);

/// The embedded mode's push dedup: claims kept until their TTL, at most `capacity` of them (the oldest go first
/// when full, which at worst lets a very late redelivery push again).
pub struct MemoryPushDedup {
    capacity: usize,
    state: Mutex<DedupState>,
}

#[derive(Default)]
struct DedupState {
    until: HashMap<DedupKey, Instant>,
    order: VecDeque<(DedupKey, Instant)>,
}

impl MemoryPushDedup {
    pub fn new(capacity: usize) -> MemoryPushDedup {
        MemoryPushDedup { capacity: capacity.max(1), state: Mutex::default() }
    }

    /// Claims held now (expired ones included until they are swept).
    pub fn len(&self) -> usize {
        self.state.lock().until.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[async_trait]
impl PushDedup for MemoryPushDedup {
    async fn claim(&self, tenant: TenantId, topic: &str, seq: Seq, user: UserId, ttl_ms: u64) -> StoreResult<bool> {
        let now = Instant::now();
        let key = (tenant, topic.to_owned(), seq, user);
        let mut s = self.state.lock();
        // Sweep expired claims from the front, then make room.
        while let Some((k, at)) = s.order.front().cloned() {
            let expired = at <= now;
            let full = s.until.len() >= self.capacity;
            if !expired && !full {
                break;
            }
            s.order.pop_front();
            if s.until.get(&k) == Some(&at) {
                s.until.remove(&k);
            }
        }
        if s.until.get(&key).is_some_and(|at| *at > now) {
            return Ok(false);
        }
        let at = now + Duration::from_millis(ttl_ms);
        s.until.insert(key.clone(), at);
        s.order.push_back((key, at));
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn claims_once_expire_and_stay_bounded() {
        let d = MemoryPushDedup::new(2);
        let t = TenantId(1);
        assert!(d.claim(t, "grpA", 1, UserId(1), 60_000).await.unwrap());
        assert!(!d.claim(t, "grpA", 1, UserId(1), 60_000).await.unwrap());
        assert!(d.claim(TenantId(2), "grpA", 1, UserId(1), 60_000).await.unwrap(), "tenants are apart");
        assert!(d.claim(t, "grpA", 2, UserId(1), 60_000).await.unwrap());
        assert!(d.len() <= 2);
        assert!(d.claim(t, "grpB", 1, UserId(1), 0).await.unwrap());
        assert!(d.claim(t, "grpB", 1, UserId(1), 0).await.unwrap(), "an expired claim is free again");
    }
}
