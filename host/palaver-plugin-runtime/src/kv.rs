//! The in-process [`PluginKv`]: one map per (tenant, plugin), for tests (the nodes use their database's).
//! The port and its types live in `palaver_core::ports` (the durable adapters are the stores'); this crate
//! re-exports them.

use crate::services::Clock;
use palaver_core::TenantId;
pub(crate) use palaver_core::ports::entry_bytes;
pub use palaver_core::ports::{KvError, KvOp, KvScope, KvUsage, PluginKv};
use palaver_core::ports::{KvQuota, KvWrite, plan, touched};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Debug, Clone)]
struct Entry {
    value: Vec<u8>,
    expires_at: Option<u64>,
}

type PluginMap = HashMap<String, Entry>;

/// An in-memory [`PluginKv`]: one map per (tenant, plugin) behind one short lock that is never held across an
/// await. Expired entries are dropped lazily when touched.
pub struct MemoryKv {
    clock: Arc<dyn Clock>,
    maps: Mutex<HashMap<TenantId, HashMap<String, PluginMap>>>,
}

impl MemoryKv {
    /// An empty store whose TTLs follow `clock`.
    pub fn new(clock: Arc<dyn Clock>) -> MemoryKv {
        MemoryKv { clock, maps: Mutex::new(HashMap::new()) }
    }

    /// The live entries of one scope, sorted by key: for tests and admin tools.
    pub fn snapshot(&self, scope: KvScope<'_>) -> Vec<(String, Vec<u8>)> {
        let now = self.clock.now_ms();
        let maps = self.maps.lock();
        let mut out: Vec<(String, Vec<u8>)> = maps
            .get(&scope.tenant)
            .and_then(|t| t.get(scope.plugin))
            .map(|m| m.iter().filter(|(_, e)| live(e, now)).map(|(k, e)| (k.clone(), e.value.clone())).collect())
            .unwrap_or_default();
        out.sort();
        out
    }
}

fn usage_of(map: Option<&PluginMap>, now: u64) -> KvUsage {
    let mut u = KvUsage::default();
    for (k, e) in map.into_iter().flatten().filter(|(_, e)| live(e, now)) {
        u.keys += 1;
        u.bytes = u.bytes.saturating_add(entry_bytes(k, &e.value));
    }
    u
}

fn live(e: &Entry, now: u64) -> bool {
    e.expires_at.is_none_or(|t| t > now)
}

fn current<'m>(map: Option<&'m PluginMap>, key: &str, now: u64) -> Option<&'m [u8]> {
    map.and_then(|m| m.get(key)).filter(|e| live(e, now)).map(|e| e.value.as_slice())
}

#[async_trait::async_trait]
impl PluginKv for MemoryKv {
    async fn get(&self, scope: KvScope<'_>, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        let now = self.clock.now_ms();
        let maps = self.maps.lock();
        Ok(current(maps.get(&scope.tenant).and_then(|t| t.get(scope.plugin)), key, now).map(<[u8]>::to_vec))
    }

    async fn usage(&self, scope: KvScope<'_>) -> Result<KvUsage, KvError> {
        let now = self.clock.now_ms();
        let maps = self.maps.lock();
        Ok(usage_of(maps.get(&scope.tenant).and_then(|t| t.get(scope.plugin)), now))
    }

    async fn commit(&self, scope: KvScope<'_>, ops: &[KvOp], quota: &KvQuota) -> Result<(), KvError> {
        if ops.is_empty() {
            return Ok(());
        }
        let now = self.clock.now_ms();
        let mut maps = self.maps.lock();
        let writes = {
            let map = maps.get(&scope.tenant).and_then(|t| t.get(scope.plugin));
            let stored: HashMap<String, Vec<u8>> = touched(ops)
                .into_iter()
                .filter_map(|k| current(map, k, now).map(|v| (k.to_owned(), v.to_vec())))
                .collect();
            plan(ops, &stored, usage_of(map, now), quota, now)?
        };
        let map = maps.entry(scope.tenant).or_default().entry(scope.plugin.to_owned()).or_default();
        for write in writes {
            match write {
                KvWrite::Put { key, value, expires_at } => {
                    map.insert(key, Entry { value, expires_at });
                }
                KvWrite::Remove { key } => {
                    map.remove(&key);
                }
            }
        }
        map.retain(|_, e| live(e, now));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::block_on;
    use crate::services::ManualClock;

    const Q: KvQuota = KvQuota { max_keys: 1000, max_bytes: 1 << 20 };

    fn scope(tenant: u64) -> KvScope<'static> {
        KvScope { tenant: TenantId(tenant), plugin: "p" }
    }

    fn set(key: &str, value: &[u8], ttl_ms: Option<u64>) -> KvOp {
        KvOp::Set { key: key.to_owned(), value: value.to_vec(), ttl_ms }
    }

    #[test]
    fn values_expire_after_their_ttl() {
        let clock = Arc::new(ManualClock::new(1_000));
        let kv = MemoryKv::new(clock.clone());
        block_on(kv.commit(scope(1), &[set("a", b"1", Some(50)), set("b", b"2", None)], &Q)).unwrap();
        assert_eq!(block_on(kv.get(scope(1), "a")).unwrap(), Some(b"1".to_vec()));
        clock.advance(50);
        assert_eq!(block_on(kv.get(scope(1), "a")).unwrap(), None);
        assert_eq!(block_on(kv.get(scope(1), "b")).unwrap(), Some(b"2".to_vec()));
    }

    #[test]
    fn tenants_never_see_each_others_keys() {
        let kv = MemoryKv::new(Arc::new(ManualClock::new(0)));
        block_on(kv.commit(scope(1), &[set("k", b"one", None)], &Q)).unwrap();
        assert_eq!(block_on(kv.get(scope(2), "k")).unwrap(), None);
        assert_eq!(kv.snapshot(scope(1)), vec![("k".to_owned(), b"one".to_vec())]);
    }

    #[test]
    fn a_failed_condition_writes_nothing_of_the_batch() {
        let kv = MemoryKv::new(Arc::new(ManualClock::new(0)));
        block_on(kv.commit(scope(1), &[set("n", b"1", None)], &Q)).unwrap();
        let stale = KvOp::CompareAndSet {
            key: "n".to_owned(),
            expected: Some(b"0".to_vec()),
            value: Some(b"2".to_vec()),
            ttl_ms: None,
        };
        let err = block_on(kv.commit(scope(1), &[set("other", b"x", None), stale], &Q)).unwrap_err();
        assert_eq!(err, KvError::Conflict("n".to_owned()));
        assert_eq!(kv.snapshot(scope(1)), vec![("n".to_owned(), b"1".to_vec())]);
        let fresh =
            KvOp::CompareAndSet { key: "n".to_owned(), expected: Some(b"1".to_vec()), value: None, ttl_ms: None };
        block_on(kv.commit(scope(1), &[fresh], &Q)).unwrap();
        assert!(kv.snapshot(scope(1)).is_empty());
    }

    #[test]
    fn the_quota_refuses_a_batch_that_grows_past_it_and_lets_one_that_shrinks() {
        let kv = MemoryKv::new(Arc::new(ManualClock::new(0)));
        let q = KvQuota { max_keys: 2, max_bytes: 10 };
        block_on(kv.commit(scope(1), &[set("a", b"1", None), set("b", b"2", None)], &q)).unwrap();
        assert_eq!(block_on(kv.usage(scope(1))).unwrap(), KvUsage { keys: 2, bytes: 4 });
        let err = block_on(kv.commit(scope(1), &[set("c", b"3", None)], &q)).unwrap_err();
        assert!(matches!(err, KvError::Quota(ref m) if m.contains("2 keys")), "{err:?}");
        // Replacing a key keeps the count; the bytes cap still holds.
        block_on(kv.commit(scope(1), &[set("a", b"12345", None)], &q)).unwrap();
        let err = block_on(kv.commit(scope(1), &[set("b", b"123456", None)], &q)).unwrap_err();
        assert!(matches!(err, KvError::Quota(ref m) if m.contains("10 bytes")), "{err:?}");
        assert_eq!(block_on(kv.usage(scope(1))).unwrap(), KvUsage { keys: 2, bytes: 8 }, "nothing was written");
        // Under a lowered quota the scope can still shrink, and another tenant has its own.
        let tight = KvQuota { max_keys: 1, max_bytes: 1 };
        block_on(kv.commit(scope(1), &[KvOp::Delete { key: "b".to_owned() }], &tight)).unwrap();
        block_on(kv.commit(scope(2), &[set("c", b"", None)], &tight)).unwrap();
    }
}
