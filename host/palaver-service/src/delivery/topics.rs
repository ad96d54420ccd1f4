//! Loaded topics: each topic's ordering lock and caches, with one owner.
//!
//! Each topic this node is using has one [`LoadedTopic`], the single owner of its node-local state: the
//! admissions (messages waiting for their seq, in arrival order), the ordering lock that the topic's drain takes
//! once per batch of them, around "allocate the run of seqs, queue the rows, take the turns", and the chain of
//! turns in which the queued messages are acknowledged and fanned out, so that every session sees a topic's
//! messages in seq order (see the publish pipeline); and the caches beside it (readers, the subscribers, the
//! publish gate, the `/v1/im/` roster). The caches sit behind a short synchronous lock that is never held
//! across an await, so that loading one (a store read, a plugin call) never happens under the ordering lock and
//! never holds up a publish. A load that raced an invalidation does not store its stale result: every
//! invalidation bumps the topic's generation, and a load stores only under the generation it started from.
//!
//! Lock order: the registry's map lock, then (released first) a topic's ordering lock, then its admissions
//! lock or its cache lock; nothing waits while holding the map, admissions or cache lock.
//!
//! The registry is bounded: beyond `max` entries the least recently used ones that nobody holds are unloaded,
//! and a sweep unloads those idle for longer than the idle time. Unloading only drops caches and the seq floor,
//! which the next use reloads from the store.

use crate::error::ServiceError;
use palaver_core::ports::PendingAppend;
use palaver_core::{AccessMode, Message, Seq, TenantId, UserId};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

/// What publishing keeps under the ordering lock.
#[derive(Debug, Default)]
pub(crate) struct WriteState {
    /// The highest seq known stored, once loaded: the floor handed to the seq allocator, so that the store is
    /// not asked for its maximum per message.
    pub(crate) floor: Option<Seq>,
    /// The turn of the last message queued: it resolves once that message settled, and the next one queued
    /// waits for it before it is acknowledged or fanned out.
    pub(crate) tail: Option<tokio::sync::oneshot::Receiver<()>>,
}

/// A place in a topic's chain: `before` resolves once the previous message settled; dropping the turn (and with
/// it `_done`, which is never sent on) lets the next one go, whether this one was stored or failed, and also if
/// its publisher went away.
pub(crate) struct Turn {
    pub(crate) before: Option<tokio::sync::oneshot::Receiver<()>>,
    pub(crate) _done: tokio::sync::oneshot::Sender<()>,
}

impl Turn {
    /// Takes the topic's next turn, after the last one queued.
    pub(crate) fn next(state: &mut WriteState) -> Turn {
        let (done, next) = tokio::sync::oneshot::channel();
        Turn { before: state.tail.replace(next), _done: done }
    }

    pub(crate) async fn wait(&mut self) {
        if let Some(before) = self.before.take() {
            // An error means the previous holder dropped its turn: it has settled as far as this one cares.
            let _ = before.await;
        }
    }
}

/// A message admitted to a topic and waiting for its seq, with where to send what became of it.
pub(crate) struct Admission {
    pub(crate) msg: Message,
    pub(crate) reply: tokio::sync::oneshot::Sender<Result<Placed, Refused>>,
}

/// What an admitted message became.
pub(crate) enum Placed {
    /// Queued on the store under its seq, with its turn.
    Queued { msg: Message, pending: PendingAppend, turn: Turn },
    /// A retry of a `client_mid` whose message is stored already, under `seq`: nothing was queued.
    Stored { seq: Seq },
}

/// Why an admitted message was not queued, and whether it holds its idempotency key, which is then released.
pub(crate) struct Refused {
    pub(crate) error: ServiceError,
    pub(crate) claimed: bool,
}

/// The messages admitted to a topic and not yet given a seq, in arrival order, and whether a drain is taking
/// them (at most one per topic; see the publish pipeline).
#[derive(Default)]
pub(crate) struct Admissions {
    pub(crate) waiting: Vec<Admission>,
    pub(crate) draining: bool,
}

impl std::fmt::Debug for Admissions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admissions").field("waiting", &self.waiting.len()).field("draining", &self.draining).finish()
    }
}

/// One cached value and when it was loaded (Unix ms).
#[derive(Debug)]
pub(crate) struct Slot<T> {
    value: Option<(T, i64)>,
}

impl<T> Default for Slot<T> {
    fn default() -> Self {
        Slot { value: None }
    }
}

/// The caches of a loaded topic; each is dropped whenever its membership or rules change.
#[derive(Debug, Default)]
pub(crate) struct TopicCache {
    generation: u64,
    /// Every subscriber with their effective mode (what the push worker picks recipients from).
    pub(crate) subscribers: Slot<Arc<Vec<(UserId, AccessMode)>>>,
    /// Subscribers with read access.
    pub(crate) members: Slot<Vec<UserId>>,
    /// What the publish gate needs (mutes and roles of a group, blocks between a P2P topic's two users).
    pub(crate) gate: Slot<Arc<crate::business::Gate>>,
    /// The member list the `/v1/im/` API pages through, sorted by user id.
    pub(crate) roster: Slot<Arc<Vec<crate::business::RosterEntry>>>,
}

/// A topic's node-local state, shared by every user of it on this node.
#[derive(Debug, Default)]
pub(crate) struct LoadedTopic {
    /// The ordering lock; see the module doc.
    pub(crate) write: tokio::sync::Mutex<WriteState>,
    /// Messages waiting for their seq; a short synchronous lock, never held across an await.
    pub(crate) admissions: Mutex<Admissions>,
    cache: Mutex<TopicCache>,
    /// When the topic was last handed out (Unix ms), for eviction.
    last_used: AtomicI64,
}

impl LoadedTopic {
    /// The value of a cache slot if one is stored and `fresh` accepts its age; otherwise the generation under
    /// which a load may store its result.
    pub(crate) fn cached<T: Clone>(
        &self,
        slot: impl FnOnce(&mut TopicCache) -> &mut Slot<T>,
        fresh: impl FnOnce(i64) -> bool,
    ) -> Result<T, u64> {
        let mut cache = self.cache.lock();
        let generation = cache.generation;
        match &slot(&mut cache).value {
            Some((v, at)) if fresh(*at) => Ok(v.clone()),
            _ => Err(generation),
        }
    }

    /// Stores a loaded value, unless the cache was invalidated since the load began (at `generation`).
    pub(crate) fn store<T>(
        &self,
        slot: impl FnOnce(&mut TopicCache) -> &mut Slot<T>,
        generation: u64,
        value: T,
        now: i64,
    ) {
        let mut cache = self.cache.lock();
        if cache.generation == generation {
            slot(&mut cache).value = Some((value, now));
        }
    }

    /// Drops every cache, and makes loads already under way drop their results.
    pub(crate) fn invalidate(&self) {
        let mut cache = self.cache.lock();
        let generation = cache.generation.wrapping_add(1);
        *cache = TopicCache { generation, ..TopicCache::default() };
    }
}

type TopicKey = (TenantId, String);

/// The loaded topics of this node, bounded in number.
#[derive(Debug)]
pub(crate) struct LoadedTopics {
    map: Mutex<HashMap<TopicKey, Arc<LoadedTopic>>>,
    max: usize,
    idle_ms: i64,
}

impl LoadedTopics {
    /// At most `max` topics loaded (more only while more are in use at once), each unloaded after `idle_ms`.
    pub(crate) fn new(max: usize, idle_ms: i64) -> Self {
        LoadedTopics { map: Mutex::new(HashMap::new()), max: max.max(1), idle_ms }
    }

    /// The topic's state, loading an empty one if needed.
    pub(crate) fn get(&self, tenant: TenantId, topic: &str) -> Arc<LoadedTopic> {
        let now = crate::now_millis();
        let mut map = self.map.lock();
        let entry = match map.get(&(tenant, topic.to_owned())) {
            Some(t) => t.clone(),
            None => {
                let t = Arc::new(LoadedTopic::default());
                map.insert((tenant, topic.to_owned()), t.clone());
                if map.len() > self.max {
                    // Down to nine tenths at once, so that the scan is paid once per max/10 new topics.
                    unload_unused(&mut map, self.max - self.max / 10, i64::MAX);
                }
                t
            }
        };
        entry.last_used.store(now, Ordering::Relaxed);
        entry
    }

    /// The topic's state if it is loaded.
    pub(crate) fn peek(&self, tenant: TenantId, topic: &str) -> Option<Arc<LoadedTopic>> {
        self.map.lock().get(&(tenant, topic.to_owned())).cloned()
    }

    /// Drops the caches of a loaded topic (a membership or rule change); an unloaded topic has none.
    pub(crate) fn invalidate(&self, tenant: TenantId, topic: &str) {
        if let Some(t) = self.peek(tenant, topic) {
            t.invalidate();
        }
    }

    /// Unloads a topic (it was deleted).
    pub(crate) fn forget(&self, tenant: TenantId, topic: &str) {
        self.map.lock().remove(&(tenant, topic.to_owned()));
    }

    /// Unloads the topics nobody holds that have been idle for longer than the idle time.
    pub(crate) fn sweep(&self) {
        let cutoff = crate::now_millis().saturating_sub(self.idle_ms);
        unload_unused(&mut self.map.lock(), 0, cutoff);
    }

    /// How long topics may stay idle before the sweep unloads them.
    pub(crate) fn idle_ms(&self) -> i64 {
        self.idle_ms
    }

    /// How many topics are loaded.
    pub(crate) fn len(&self) -> usize {
        self.map.lock().len()
    }
}

/// Unloads topics that nobody holds and that were last used before `cutoff`, least recently used first, until
/// at most `target` remain. A topic's only other holders got it through the map, whose lock the caller holds,
/// so a count of one means nobody can be using it or start to.
fn unload_unused(map: &mut HashMap<TopicKey, Arc<LoadedTopic>>, target: usize, cutoff: i64) {
    let mut idle: Vec<(i64, TopicKey)> = map
        .iter()
        .filter(|(_, t)| Arc::strong_count(t) == 1)
        .map(|(k, t)| (t.last_used.load(Ordering::Relaxed), k.clone()))
        .filter(|(used, _)| *used < cutoff)
        .collect();
    idle.sort_unstable_by_key(|(used, _)| *used);
    for (_, key) in idle {
        if map.len() <= target {
            break;
        }
        map.remove(&key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: TenantId = TenantId(1);

    #[test]
    fn the_registry_stays_bounded_and_never_unloads_a_topic_in_use() {
        let topics = LoadedTopics::new(100, 60_000);
        let held = topics.get(T, "grpHeld");
        for i in 0..1_000 {
            topics.get(T, &format!("grp{i}"));
            assert!(topics.len() <= 101, "{} loaded after {i}", topics.len());
        }
        assert!(Arc::ptr_eq(&held, &topics.get(T, "grpHeld")), "a topic in use keeps its state");
    }

    #[test]
    fn the_sweep_unloads_idle_topics_only() {
        let topics = LoadedTopics::new(100, 0);
        let held = topics.get(T, "grpHeld");
        topics.get(T, "grpIdle");
        std::thread::sleep(std::time::Duration::from_millis(2));
        topics.sweep();
        assert_eq!(topics.len(), 1);
        assert!(topics.peek(T, "grpIdle").is_none());
        drop(held);
        topics.sweep();
        assert_eq!(topics.len(), 0);
    }

    #[test]
    fn a_load_that_raced_an_invalidation_does_not_store_its_result() {
        let topic = LoadedTopic::default();
        let Err(generation) = topic.cached(|c| &mut c.members, |_| true) else { panic!("empty cache") };
        topic.invalidate();
        topic.store(|c| &mut c.members, generation, vec![UserId(1)], 0);
        assert!(topic.cached(|c| &mut c.members, |_| true).is_err(), "the stale load was dropped");
        let Err(generation) = topic.cached(|c| &mut c.members, |_| true) else { panic!("empty cache") };
        topic.store(|c| &mut c.members, generation, vec![UserId(2)], 0);
        assert_eq!(topic.cached(|c| &mut c.members, |_| true), Ok(vec![UserId(2)]));
        assert!(topic.cached(|c| &mut c.members, |_| false).is_err(), "too old for the caller");
    }
}
