//! Which topics keep hot message copies. The rule is to keep them for large or busy groups
//! only: an ordinary group or a P2P topic is read rarely enough that the database serves it well.

use palaver_core::ports::SubscriptionStore;
use palaver_core::{TenantId, TopicKind, topic_kind};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A caller-supplied rule: `true` if the topic of the tenant keeps hot copies.
pub type HotPredicate = Arc<dyn Fn(TenantId, &str) -> bool + Send + Sync>;

/// Decides per (tenant, topic) whether stored messages get a hot copy and history reads try Redis first.
#[derive(Clone)]
pub enum HotPolicy {
    /// No hot copies; the message decorator then only keeps cached topics and subscriptions coherent.
    Never,
    /// Every topic, P2P included (tests, and deployments where Redis memory is plentiful).
    Always,
    /// Every group topic.
    Groups,
    /// Whatever the closure says; it must be cheap, as it runs on every append and history read.
    When(HotPredicate),
    /// Groups with at least a given number of active members, counted through a subscription port.
    MinMembers(Arc<MemberThreshold>),
}

impl std::fmt::Debug for HotPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HotPolicy::Never => f.write_str("Never"),
            HotPolicy::Always => f.write_str("Always"),
            HotPolicy::Groups => f.write_str("Groups"),
            HotPolicy::When(_) => f.write_str("When(..)"),
            HotPolicy::MinMembers(t) => write!(f, "MinMembers({})", t.min),
        }
    }
}

/// The member-count rule, with its counts remembered for a while: counting members is a query, and the answer
/// only needs to follow slow changes in group size.
pub struct MemberThreshold {
    subs: Arc<dyn SubscriptionStore>,
    min: usize,
    recheck: Duration,
    memo: Mutex<HashMap<(TenantId, String), (bool, Instant)>>,
}

/// How many topics' answers are remembered before the memo is cleared; it bounds the node's memory.
const MEMO_CAPACITY: usize = 10_000;

impl HotPolicy {
    /// A closure policy.
    pub fn when(f: impl Fn(TenantId, &str) -> bool + Send + Sync + 'static) -> Self {
        HotPolicy::When(Arc::new(f))
    }

    /// Groups with at least `min` members (the config's `hot_group_min_members`), recounted after `recheck`.
    /// `subs` should be the uncached port: the count must not depend on the cache it decides about.
    pub fn min_members(subs: Arc<dyn SubscriptionStore>, min: usize, recheck: Duration) -> Self {
        HotPolicy::MinMembers(Arc::new(MemberThreshold { subs, min, recheck, memo: Mutex::new(HashMap::new()) }))
    }

    /// Whether `topic` keeps hot copies now.
    pub(crate) async fn is_hot(&self, tenant: TenantId, topic: &str) -> bool {
        match self {
            HotPolicy::Never => false,
            HotPolicy::Always => true,
            HotPolicy::Groups => topic_kind(topic) == Some(TopicKind::Group),
            HotPolicy::When(f) => f(tenant, topic),
            HotPolicy::MinMembers(threshold) => threshold.is_hot(tenant, topic).await,
        }
    }
}

impl MemberThreshold {
    async fn is_hot(&self, tenant: TenantId, topic: &str) -> bool {
        if topic_kind(topic) != Some(TopicKind::Group) {
            return false;
        }
        let key = (tenant, topic.to_owned());
        if let Some((hot, at)) = self.memo.lock().get(&key).copied()
            && at.elapsed() < self.recheck
        {
            return hot;
        }
        // A failed count answers "not hot": the caller then uses the inner store, which is always correct.
        let hot = match self.subs.list_topic_subs(tenant, topic).await {
            Ok(subs) => subs.len() >= self.min,
            Err(e) => {
                tracing::debug!(error = %e, topic, "member count failed; treating the topic as not hot");
                return false;
            }
        };
        let mut memo = self.memo.lock();
        if memo.len() >= MEMO_CAPACITY {
            memo.clear();
        }
        memo.insert(key, (hot, Instant::now()));
        hot
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn simple_policies() {
        let t = TenantId(1);
        assert!(!HotPolicy::Never.is_hot(t, "grpA").await);
        assert!(HotPolicy::Always.is_hot(t, "p2pAAAAAAAAAAAAAAAAAAAAAA").await);
        assert!(HotPolicy::Groups.is_hot(t, "grpA").await);
        assert!(!HotPolicy::Groups.is_hot(t, "p2pAAAAAAAAAAAAAAAAAAAAAA").await);
        let only_b = HotPolicy::when(|_, topic| topic == "grpB");
        assert!(only_b.is_hot(t, "grpB").await && !only_b.is_hot(t, "grpA").await);
        assert_eq!(format!("{only_b:?}"), "When(..)");
    }
}
