//! The plugin key-value port: a store scoped by (tenant, plugin), read during a call and written only when the
//! call commits, with TTLs, compare-and-set and a quota of keys and bytes per scope.
//!
//! Every adapter decides a batch the same way, with [`plan`]: each compare-and-set against the state the batch's
//! earlier operations leave, the quota against the state the whole batch leaves, and nothing written unless all
//! of it holds. The adapters differ only in how they hold a scope still while they read and write it.

use crate::TenantId;
use std::collections::HashMap;

/// Whose keys a call sees: one plugin's, within one tenant. No call can name another scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KvScope<'a> {
    pub tenant: TenantId,
    pub plugin: &'a str,
}

/// One buffered write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KvOp {
    Set {
        key: String,
        value: Vec<u8>,
        ttl_ms: Option<u64>,
    },
    Delete {
        key: String,
    },
    /// Replace (`value: None` deletes) only if the current value is `expected` (`None`: absent).
    CompareAndSet {
        key: String,
        expected: Option<Vec<u8>>,
        value: Option<Vec<u8>>,
        ttl_ms: Option<u64>,
    },
}

impl KvOp {
    /// The key the operation writes.
    pub fn key(&self) -> &str {
        match self {
            KvOp::Set { key, .. } | KvOp::Delete { key } | KvOp::CompareAndSet { key, .. } => key,
        }
    }
}

/// Why a key-value operation failed.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum KvError {
    /// A compare-and-set condition no longer held at commit; nothing of the batch was written.
    #[error("conflict on key {0:?}")]
    Conflict(String),
    /// The batch would take the scope past its quota; nothing of it was written.
    #[error("quota exceeded: {0}")]
    Quota(String),
    /// The backing store is unreachable.
    #[error("unavailable: {0}")]
    Unavailable(String),
}

/// How much one plugin may keep in its key-value store for one tenant. Writes past it fail with the `kv`
/// import's `limit` error; a delete always succeeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KvQuota {
    /// The most live keys.
    pub max_keys: u64,
    /// The most bytes, keys and values added up.
    pub max_bytes: u64,
}

impl Default for KvQuota {
    fn default() -> Self {
        KvQuota { max_keys: 10_000, max_bytes: 4 << 20 }
    }
}

/// What one scope holds: live keys, and their keys' and values' bytes added up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KvUsage {
    pub keys: u64,
    pub bytes: u64,
}

impl KvUsage {
    /// Why `self` (after a write) breaks `quota` where `before` did not already, or `None`. A write that grows
    /// neither figure always passes, so that a scope above a lowered quota can still shrink.
    pub fn exceeds(self, before: KvUsage, quota: &KvQuota) -> Option<String> {
        if self.keys > quota.max_keys && self.keys > before.keys {
            return Some(format!("at most {} keys per plugin and tenant", quota.max_keys));
        }
        if self.bytes > quota.max_bytes && self.bytes > before.bytes {
            return Some(format!("at most {} bytes (keys and values) per plugin and tenant", quota.max_bytes));
        }
        None
    }
}

/// The bytes an entry under `key` with `value` counts for.
pub fn entry_bytes(key: &str, value: &[u8]) -> u64 {
    u64::try_from(key.len() + value.len()).unwrap_or(u64::MAX)
}

/// The store behind the plugins' `kv` import.
#[async_trait::async_trait]
pub trait PluginKv: Send + Sync {
    /// The live value under `key`, or `None` (also when it expired).
    async fn get(&self, scope: KvScope<'_>, key: &str) -> Result<Option<Vec<u8>>, KvError>;

    /// What the scope holds now.
    async fn usage(&self, scope: KvScope<'_>) -> Result<KvUsage, KvError>;

    /// Applies `ops` in order, all or nothing: if any compare-and-set condition fails, nothing is written and the
    /// result is `Conflict`; if the scope would end up past `quota` (see [`KvUsage::exceeds`]), nothing is written
    /// and the result is `Quota`.
    async fn commit(&self, scope: KvScope<'_>, ops: &[KvOp], quota: &KvQuota) -> Result<(), KvError>;
}

/// One write a decided batch makes, the last one per key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KvWrite {
    /// Store `value` under `key`, live until `expires_at` (Unix ms; `None`: for good).
    Put { key: String, value: Vec<u8>, expires_at: Option<u64> },
    /// Remove `key`.
    Remove { key: String },
}

/// The keys `ops` writes, once each, in first-seen order: what an adapter reads (and locks) before [`plan`].
pub fn touched(ops: &[KvOp]) -> Vec<&str> {
    let mut keys: Vec<&str> = Vec::new();
    for op in ops {
        if !keys.contains(&op.key()) {
            keys.push(op.key());
        }
    }
    keys
}

/// A touched key and what it holds as the batch goes: its value and expiry, or nothing.
type Slot<'a> = (&'a str, Option<(&'a [u8], Option<u64>)>);

/// Decides a batch at `now`. `stored` holds the live value of each of the [`touched`] keys that has one, and
/// `before` the scope's usage. Every compare-and-set is checked against the state the batch's earlier
/// operations leave; the quota against the state the whole batch leaves. Returns one write per touched key, or
/// why nothing may be written.
pub fn plan(
    ops: &[KvOp],
    stored: &HashMap<String, Vec<u8>>,
    before: KvUsage,
    quota: &KvQuota,
    now: u64,
) -> Result<Vec<KvWrite>, KvError> {
    // The value each touched key holds as the batch goes, with its expiry.
    let mut overlay: Vec<Slot<'_>> = Vec::new();
    let expiry = |ttl: &Option<u64>| ttl.map(|t| now.saturating_add(t));
    for op in ops {
        let key = op.key();
        let next = match op {
            KvOp::Set { value, ttl_ms, .. } => Some((value.as_slice(), expiry(ttl_ms))),
            KvOp::Delete { .. } => None,
            KvOp::CompareAndSet { expected, value, ttl_ms, .. } => {
                let current = match overlay.iter().find(|(k, _)| *k == key) {
                    Some((_, v)) => v.map(|(v, _)| v),
                    None => stored.get(key).map(Vec::as_slice),
                };
                if current != expected.as_deref() {
                    return Err(KvError::Conflict(key.to_owned()));
                }
                value.as_deref().map(|v| (v, expiry(ttl_ms)))
            }
        };
        match overlay.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = next,
            None => overlay.push((key, next)),
        }
    }
    let mut after = before;
    for (key, value) in &overlay {
        if let Some(old) = stored.get(*key) {
            after.keys = after.keys.saturating_sub(1);
            after.bytes = after.bytes.saturating_sub(entry_bytes(key, old));
        }
        if let Some((new, _)) = value {
            after.keys = after.keys.saturating_add(1);
            after.bytes = after.bytes.saturating_add(entry_bytes(key, new));
        }
    }
    if let Some(why) = after.exceeds(before, quota) {
        return Err(KvError::Quota(why));
    }
    Ok(overlay
        .into_iter()
        .map(|(key, value)| match value {
            Some((value, expires_at)) => KvWrite::Put { key: key.to_owned(), value: value.to_vec(), expires_at },
            None => KvWrite::Remove { key: key.to_owned() },
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const Q: KvQuota = KvQuota { max_keys: 2, max_bytes: 100 };

    fn cas(key: &str, expected: Option<&[u8]>, value: Option<&[u8]>) -> KvOp {
        KvOp::CompareAndSet {
            key: key.into(),
            expected: expected.map(<[u8]>::to_vec),
            value: value.map(<[u8]>::to_vec),
            ttl_ms: None,
        }
    }

    #[test]
    fn a_compare_and_set_sees_the_batch_before_it() {
        let stored = HashMap::from([("a".to_owned(), b"1".to_vec())]);
        let used = KvUsage { keys: 1, bytes: 2 };
        let ops = [cas("a", Some(b"1"), Some(b"2")), cas("a", Some(b"2"), Some(b"3"))];
        let writes = plan(&ops, &stored, used, &Q, 0).unwrap();
        assert_eq!(writes, vec![KvWrite::Put { key: "a".into(), value: b"3".to_vec(), expires_at: None }]);
        let stale = [cas("a", Some(b"0"), Some(b"2"))];
        assert_eq!(plan(&stale, &stored, used, &Q, 0), Err(KvError::Conflict("a".into())));
    }

    #[test]
    fn the_quota_holds_for_what_the_whole_batch_leaves() {
        let set = |k: &str| KvOp::Set { key: k.into(), value: b"v".to_vec(), ttl_ms: Some(10) };
        let ops = [set("a"), set("b"), set("c"), KvOp::Delete { key: "c".into() }];
        let writes = plan(&ops, &HashMap::new(), KvUsage::default(), &Q, 5).unwrap();
        assert_eq!(writes.len(), 3);
        assert_eq!(writes[0], KvWrite::Put { key: "a".into(), value: b"v".to_vec(), expires_at: Some(15) });
        assert_eq!(writes[2], KvWrite::Remove { key: "c".into() });
        assert!(matches!(
            plan(&[set("a"), set("b"), set("c")], &HashMap::new(), KvUsage::default(), &Q, 0),
            Err(KvError::Quota(_))
        ));
    }
}
