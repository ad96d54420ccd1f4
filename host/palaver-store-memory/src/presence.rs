//! The embedded presence store: which sessions of which users are online on this node.

use async_trait::async_trait;
use palaver_core::ports::{PresenceStore, SessionBeat};
use palaver_core::{Presence, PresenceMeta, StoreResult, TenantId, UnixMillis, UserId};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// Online sessions per user, in process. Cloning is cheap and clones share the state.
#[derive(Clone, Default, Debug)]
pub struct MemoryPresence {
    users: Arc<Mutex<HashMap<(TenantId, UserId), UserPresence>>>,
    /// Who is attached to each topic, per node.
    attached: Arc<Mutex<HashMap<(TenantId, String), NodeAttachments>>>,
}

/// One topic's attached users, by node id.
type NodeAttachments = HashMap<String, Vec<UserId>>;

/// One user's sessions and when the last of them left.
#[derive(Default, Debug)]
struct UserPresence {
    sessions: HashMap<String, SessionState>,
    last_seen: Option<UnixMillis>,
}

/// One online session.
#[derive(Debug)]
struct SessionState {
    meta: PresenceMeta,
    last_active: UnixMillis,
}

impl MemoryPresence {
    /// A presence store in which every user is offline and never seen.
    pub fn new() -> Self {
        Self::default()
    }
}

/// Clamps a session count to the port's `u32`; no user comes near it, but a cast must not wrap.
fn count(sessions: &HashMap<String, SessionState>) -> u32 {
    u32::try_from(sessions.len()).unwrap_or(u32::MAX)
}

#[async_trait]
impl PresenceStore for MemoryPresence {
    async fn mark_online(
        &self,
        tenant: TenantId,
        user: UserId,
        session: &str,
        meta: &PresenceMeta,
    ) -> StoreResult<u32> {
        let mut users = self.users.lock();
        let entry = users.entry((tenant, user)).or_default();
        entry.sessions.insert(session.to_owned(), SessionState { meta: meta.clone(), last_active: meta.now });
        Ok(count(&entry.sessions))
    }

    async fn refresh(&self, tenant: TenantId, user: UserId, session: &str, now: UnixMillis) -> StoreResult<()> {
        // Nothing here expires, so refreshing only records activity; an unknown session is left alone rather
        // than resurrected without its metadata.
        let mut users = self.users.lock();
        if let Some(state) = users.get_mut(&(tenant, user)).and_then(|u| u.sessions.get_mut(session)) {
            state.last_active = state.last_active.max(now);
        }
        Ok(())
    }

    async fn mark_offline(&self, tenant: TenantId, user: UserId, session: &str, now: UnixMillis) -> StoreResult<u32> {
        let mut users = self.users.lock();
        let Some(entry) = users.get_mut(&(tenant, user)) else {
            return Ok(0);
        };
        if entry.sessions.remove(session).is_some() && entry.sessions.is_empty() {
            entry.last_seen = Some(now);
        }
        Ok(count(&entry.sessions))
    }

    async fn get_presence(&self, tenant: TenantId, user: UserId) -> Presence {
        let users = self.users.lock();
        let Some(entry) = users.get(&(tenant, user)) else {
            return Presence::Offline { last_seen: None };
        };
        match entry.sessions.values().max_by_key(|s| s.last_active) {
            Some(latest) => Presence::Online {
                sessions: count(&entry.sessions),
                node_id: latest.meta.node_id.clone(),
                last_active: latest.last_active,
            },
            None => Presence::Offline { last_seen: entry.last_seen },
        }
    }

    // The in-process bus hands every envelope to every node, so there are no per-node routing sets to keep.
    async fn join_topics(&self, _tenant: TenantId, _user: UserId, _topics: &[String]) -> StoreResult<()> {
        Ok(())
    }

    async fn leave_topics(&self, _tenant: TenantId, _user: UserId, _topics: &[String]) -> StoreResult<()> {
        Ok(())
    }

    // Nothing here expires, so a heartbeat has nothing to refresh.
    async fn heartbeat(&self, _sessions: &[SessionBeat], _topics: &[(TenantId, String)]) -> StoreResult<()> {
        Ok(())
    }

    async fn set_attached(&self, tenant: TenantId, topic: &str, node_id: &str, users: &[UserId]) -> StoreResult<()> {
        let mut attached = self.attached.lock();
        let key = (tenant, topic.to_owned());
        let nodes = attached.entry(key.clone()).or_default();
        if users.is_empty() {
            nodes.remove(node_id);
        } else {
            nodes.insert(node_id.to_owned(), users.to_vec());
        }
        if nodes.is_empty() {
            attached.remove(&key);
        }
        Ok(())
    }

    async fn attached_users(&self, tenant: TenantId, topic: &str) -> StoreResult<Vec<UserId>> {
        let attached = self.attached.lock();
        let mut users: Vec<UserId> = attached
            .get(&(tenant, topic.to_owned()))
            .map(|n| n.values().flatten().copied().collect())
            .unwrap_or_default();
        users.sort_unstable();
        users.dedup();
        Ok(users)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: TenantId = TenantId(1);

    fn meta(now: UnixMillis) -> PresenceMeta {
        PresenceMeta { node_id: "n1".into(), device: None, user_agent: Some("test".into()), now }
    }

    #[tokio::test]
    async fn counts_sessions_and_records_last_seen() {
        let p = MemoryPresence::new();
        let u = UserId(7);
        assert_eq!(p.get_presence(T, u).await, Presence::Offline { last_seen: None });
        assert_eq!(p.mark_online(T, u, "s1", &meta(100)).await.unwrap(), 1);
        assert_eq!(p.mark_online(T, u, "s2", &meta(110)).await.unwrap(), 2);
        assert_eq!(p.mark_online(T, u, "s2", &meta(115)).await.unwrap(), 2, "same session counts once");
        p.refresh(T, u, "s1", 150).await.unwrap();
        assert_eq!(
            p.get_presence(T, u).await,
            Presence::Online { sessions: 2, node_id: "n1".into(), last_active: 150 }
        );
        assert_eq!(p.get_presence(TenantId(2), u).await, Presence::Offline { last_seen: None });
        assert_eq!(p.mark_offline(T, u, "s1", 200).await.unwrap(), 1);
        assert!(matches!(p.get_presence(T, u).await, Presence::Online { sessions: 1, .. }));
        assert_eq!(p.mark_offline(T, u, "s2", 300).await.unwrap(), 0);
        assert_eq!(p.get_presence(T, u).await, Presence::Offline { last_seen: Some(300) });
        assert_eq!(p.mark_offline(T, u, "s2", 400).await.unwrap(), 0, "leaving twice is harmless");
        assert_eq!(p.get_presence(T, u).await, Presence::Offline { last_seen: Some(300) });
    }
}
