//! API keys resolved through the tenant registry, with the in-process TTL cache prescribed for tenant
//! configuration: an answer is reused for a minute, refreshed after that, and a failed refresh keeps the old
//! answer (and logs it) rather than locking a tenant's clients out while the control database is away.

use super::{TenantResolver, key_is_valid};
use palaver_core::ports::TenantStore;
use palaver_core::{TenantId, TenantState};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How many distinct keys the cache remembers; beyond it the oldest answers are dropped.
const MAX_CACHED_KEYS: usize = 10_000;

/// Resolves keys signed with the salt to the tenant the registry assigns them.
pub struct RegistryKeys {
    salt: Vec<u8>,
    registry: Arc<dyn TenantStore>,
    ttl: Duration,
    cache: Mutex<HashMap<String, (Option<TenantId>, Instant)>>,
}

impl RegistryKeys {
    /// Keys must check out against `salt` and be registered to an active tenant in `registry`; answers are
    /// cached for `ttl`.
    pub fn new(salt: Vec<u8>, registry: Arc<dyn TenantStore>, ttl: Duration) -> Self {
        RegistryKeys { salt, registry, ttl, cache: Mutex::new(HashMap::new()) }
    }

    fn remember(&self, key: &str, answer: Option<TenantId>) {
        let mut cache = self.cache.lock();
        if cache.len() >= MAX_CACHED_KEYS && !cache.contains_key(key) {
            let oldest = cache.iter().min_by_key(|(_, (_, at))| *at).map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                cache.remove(&k);
            }
        }
        cache.insert(key.to_owned(), (answer, Instant::now()));
    }
}

#[async_trait::async_trait]
impl TenantResolver for RegistryKeys {
    async fn resolve(&self, api_key: &str) -> Option<TenantId> {
        // Whitespace around a key is trimmed here as `key_is_valid` (and so the salted resolver) trims it, so one
        // key is accepted or refused alike in every mode; the registry stores keys without it.
        let api_key = api_key.trim();
        // A key that does not check out never reaches the registry, so guessing costs no database work.
        if !key_is_valid(api_key, &self.salt) {
            return None;
        }
        let cached = self.cache.lock().get(api_key).copied();
        if let Some((answer, at)) = cached
            && at.elapsed() < self.ttl
        {
            return answer;
        }
        match self.registry.find_tenant_by_api_key(api_key).await {
            Ok(found) => {
                let answer = found.filter(|t| t.state == TenantState::Active).map(|t| t.id);
                self.remember(api_key, answer);
                answer
            }
            Err(e) => {
                tracing::warn!(error = %e, "tenant registry unavailable; keeping the last known answer");
                cached.and_then(|(answer, _)| answer)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apikey::make_key;
    use palaver_store_memory::MemoryTenants;

    #[tokio::test]
    async fn keys_resolve_to_active_tenants_only() {
        let salt = b"registry salt".to_vec();
        let registry = Arc::new(MemoryTenants::new());
        let acme = registry.create_tenant("acme", "Acme").await.unwrap();
        let key = make_key(1, &salt);
        registry.add_api_key(acme.id, &key).await.unwrap();
        let keys = RegistryKeys::new(salt.clone(), registry.clone(), Duration::ZERO);
        assert_eq!(keys.resolve(&key).await, Some(acme.id));
        assert_eq!(keys.resolve(&make_key(2, &salt)).await, None, "signed but not registered");
        assert_eq!(keys.resolve(&make_key(1, b"other salt")).await, None, "registered salt only");
        registry.set_tenant_state(acme.id, TenantState::Disabled).await.unwrap();
        assert_eq!(keys.resolve(&key).await, None, "a disabled tenant's keys are refused");
    }

    /// A pasted key with a trailing newline worked against SQLite (the salted resolver trims) but not against
    /// MariaDB (the registry looked the untrimmed key up): both trim now.
    #[tokio::test]
    async fn surrounding_whitespace_is_trimmed_by_every_resolver() {
        let salt = b"registry salt".to_vec();
        let registry = Arc::new(MemoryTenants::new());
        let acme = registry.create_tenant("acme", "Acme").await.unwrap();
        let key = make_key(1, &salt);
        registry.add_api_key(acme.id, &key).await.unwrap();
        let padded = format!("  {key}\n");
        let keys = RegistryKeys::new(salt.clone(), registry, Duration::ZERO);
        assert_eq!(keys.resolve(&padded).await, Some(acme.id), "the registry resolver");
        let salted = crate::apikey::SaltedKeys::new(salt, TenantId(1));
        assert_eq!(salted.resolve(&padded).await, Some(TenantId(1)), "the salted resolver");
        assert_eq!(keys.resolve(&format!("{key}x")).await, None, "inner changes still fail");
    }

    #[tokio::test]
    async fn answers_are_cached_for_the_ttl() {
        let salt = b"registry salt".to_vec();
        let registry = Arc::new(MemoryTenants::new());
        let t = registry.create_tenant("cached", "Cached").await.unwrap();
        let key = make_key(1, &salt);
        registry.add_api_key(t.id, &key).await.unwrap();
        let keys = RegistryKeys::new(salt, registry.clone(), Duration::from_secs(60));
        assert_eq!(keys.resolve(&key).await, Some(t.id));
        registry.set_tenant_state(t.id, TenantState::Disabled).await.unwrap();
        assert_eq!(keys.resolve(&key).await, Some(t.id), "within the TTL the cached answer stands");
    }
}
