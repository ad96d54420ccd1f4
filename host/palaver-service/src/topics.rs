//! Per-topic write serialisation and topic-name resolution.
//!
//! Publishing takes the topic's write lock around "allocate seq, store, mark done", so that seqs of one topic
//! are stored in order with no gaps on this node. The lock also remembers the highest seq known stored, which
//! is the floor handed to the seq allocator, so the store is never asked for its maximum per message.

use palaver_core::{Seq, TenantId, TopicKind, UserId, p2p_name, topic_kind};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// The write-side state of one topic on this node.
#[derive(Debug, Default)]
pub(crate) struct TopicWrite {
    /// The highest seq known stored, once loaded.
    pub(crate) floor: Option<Seq>,
    /// Subscribers with read access, once loaded; dropped whenever a subscription changes.
    pub(crate) members: Option<Vec<UserId>>,
    /// When `members` was loaded (Unix ms).
    pub(crate) members_at: i64,
    /// What the publish gate needs (mutes and roles of a group, blocks between a P2P topic's two users), once
    /// loaded; dropped with `members`, so every change that invalidates members invalidates this too.
    pub(crate) gate: Option<std::sync::Arc<crate::business::Gate>>,
    /// When `gate` was loaded (Unix ms).
    pub(crate) gate_at: i64,
    /// The member list the `/v1/im/` API pages through, sorted by user id, once built; dropped with `members`.
    pub(crate) roster: Option<std::sync::Arc<Vec<crate::business::RosterEntry>>>,
    /// When `roster` was built (Unix ms).
    pub(crate) roster_at: i64,
}

/// A topic's write lock, shared by every publisher of it on this node.
pub(crate) type TopicLock = Arc<tokio::sync::Mutex<TopicWrite>>;

/// Write locks, one per topic that has been written to on this node.
#[derive(Debug, Default)]
pub(crate) struct TopicLocks {
    map: Mutex<HashMap<(TenantId, String), TopicLock>>,
}

impl TopicLocks {
    pub(crate) fn get(&self, tenant: TenantId, topic: &str) -> TopicLock {
        self.map.lock().entry((tenant, topic.to_owned())).or_default().clone()
    }

    pub(crate) fn forget(&self, tenant: TenantId, topic: &str) {
        self.map.lock().remove(&(tenant, topic.to_owned()));
    }
}

/// A topic as a session addresses it, resolved to what is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Resolved {
    Me,
    Fnd,
    /// A group: wire name and stored name are the same.
    Group(String),
    /// A P2P topic: the client calls it by the peer's `usr…`; `stored` is the `p2p…` name.
    P2p {
        peer: UserId,
        stored: String,
    },
    /// `new…` or `nch…`: a group to create.
    NewGroup {
        tmp: String,
        channel: bool,
    },
}

/// Resolves a wire topic name for `me`. `None` if the name is not one we serve.
pub(crate) fn resolve(name: &str, me: UserId) -> Option<Resolved> {
    if name.starts_with("new") {
        return Some(Resolved::NewGroup { tmp: name.to_owned(), channel: false });
    }
    if name.starts_with("nch") {
        return Some(Resolved::NewGroup { tmp: name.to_owned(), channel: true });
    }
    match topic_kind(name)? {
        TopicKind::Me => Some(Resolved::Me),
        TopicKind::Fnd => Some(Resolved::Fnd),
        TopicKind::Sys => None,
        TopicKind::Group => Some(Resolved::Group(name.to_owned())),
        TopicKind::P2p => {
            if let Some(stored) = name.strip_prefix("p2p").map(|_| name) {
                let peer = palaver_core::p2p_peer(stored, me)?;
                return Some(Resolved::P2p { peer, stored: stored.to_owned() });
            }
            let peer = UserId::parse(name).ok()?;
            if peer == me {
                return None;
            }
            Some(Resolved::P2p { peer, stored: p2p_name(me, peer) })
        }
    }
}

/// The name a user sees for a stored topic: the peer's `usr…` for P2P, the stored name otherwise.
pub(crate) fn wire_name(stored: &str, viewer: UserId) -> String {
    if stored.starts_with("p2p")
        && let Some(peer) = palaver_core::p2p_peer(stored, viewer)
    {
        return peer.to_string();
    }
    stored.to_owned()
}
