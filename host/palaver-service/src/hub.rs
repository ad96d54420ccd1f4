//! The node-local hub: which sessions exist, which user each belongs to, and which sessions are attached to
//! which topic. Delivery never blocks: a full session queue drops the frame and counts it, and the client
//! recovers by seq.
//!
//! **Invariant:** the hub holds only this node's connection state. Cross-node state (presence, seq) lives
//! behind ports.

use crate::Metrics;
use crate::control::ControlState;
use palaver_core::{AccessMode, SessionId, TenantId, UserId};
use parking_lot::{Mutex, RwLock};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use tokio::sync::mpsc;

/// One serialised server message (UTF-8 JSON), shared by every session it goes to without copying.
pub type Frame = bytes::Bytes;

/// What a session's writer receives.
#[derive(Debug, Clone)]
pub enum Outbound {
    /// A frame to send.
    Frame(Frame),
    /// Close the connection after sending what came before.
    Close,
}

/// The hub's handle on one session: its outbound queue and identity.
#[derive(Debug)]
pub struct SessionHandle {
    pub sid: SessionId,
    pub tenant: TenantId,
    user: OnceLock<UserId>,
    tx: mpsc::Sender<Outbound>,
    me_attached: AtomicBool,
    dropped: AtomicU64,
    metrics: Arc<Metrics>,
    /// The control versions the session is judged by (see [`crate::control`]).
    pub(crate) control: Mutex<ControlState>,
}

impl SessionHandle {
    pub(crate) fn new(sid: SessionId, tenant: TenantId, tx: mpsc::Sender<Outbound>, metrics: Arc<Metrics>) -> Self {
        SessionHandle {
            sid,
            tenant,
            user: OnceLock::new(),
            tx,
            me_attached: AtomicBool::new(false),
            dropped: AtomicU64::new(0),
            metrics,
            control: Mutex::new(ControlState::default()),
        }
    }

    /// The logged-in user, if any.
    pub fn user(&self) -> Option<UserId> {
        self.user.get().copied()
    }

    /// Queues a frame without waiting. Returns false (and counts a drop) if the queue is full or closed.
    pub fn push(&self, frame: Frame) -> bool {
        let ok = self.tx.try_send(Outbound::Frame(frame)).is_ok();
        if !ok {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
        self.metrics.fanout(ok);
        ok
    }

    /// Queues a frame, waiting for room. Used for replies to the session's own requests, which must not be
    /// dropped: waiting here slows down the reader of the same connection, which is the backpressure we want.
    pub async fn send(&self, frame: Frame) {
        let _ = self.tx.send(Outbound::Frame(frame)).await;
    }

    /// Asks the writer to close the connection after what is already queued.
    pub fn close(&self) {
        if self.tx.try_send(Outbound::Close).is_err() {
            // The queue is full: the writer will see the channel closed once every sender is dropped, but
            // a session stuck behind a full queue must not linger, so count it as a drop.
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Frames dropped because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// True while the session is attached to its user's `me` topic.
    pub fn on_me(&self) -> bool {
        self.me_attached.load(Ordering::Relaxed)
    }

    pub(crate) fn set_on_me(&self, on: bool) {
        self.me_attached.store(on, Ordering::Relaxed);
    }
}

/// A session attached to a topic, with the user's effective mode there.
#[derive(Debug, Clone)]
pub struct Attached {
    pub session: Arc<SessionHandle>,
    pub user: UserId,
    pub mode: AccessMode,
}

type TopicKey = (TenantId, String);
type UserKey = (TenantId, UserId);

/// The registry of this node's sessions.
#[derive(Debug, Default)]
pub struct Hub {
    sessions: RwLock<HashMap<SessionId, Arc<SessionHandle>>>,
    users: RwLock<HashMap<UserKey, Vec<Arc<SessionHandle>>>>,
    topics: RwLock<HashMap<TopicKey, HashMap<SessionId, Attached>>>,
    /// The topics each user with sessions here is listed under as an online member in the shared presence, so
    /// that the node can refresh those lists and take the user off them when the last session leaves.
    joined: Mutex<HashMap<UserKey, HashSet<String>>>,
}

impl Hub {
    pub(crate) fn register(&self, session: Arc<SessionHandle>) {
        self.sessions.write().insert(session.sid, session);
    }

    /// Removes a session from every map. `topics` are the stored names it was attached to.
    pub(crate) fn unregister(&self, session: &SessionHandle, topics: &[String]) {
        self.sessions.write().remove(&session.sid);
        if let Some(user) = session.user() {
            let mut users = self.users.write();
            let key = (session.tenant, user);
            if let Some(list) = users.get_mut(&key) {
                list.retain(|s| s.sid != session.sid);
                if list.is_empty() {
                    users.remove(&key);
                }
            }
        }
        let mut map = self.topics.write();
        for name in topics {
            let key = (session.tenant, name.clone());
            if let Some(attached) = map.get_mut(&key) {
                attached.remove(&session.sid);
                if attached.is_empty() {
                    map.remove(&key);
                }
            }
        }
    }

    /// Binds a session to its user after login. Returns how many sessions the user now has on this node.
    pub(crate) fn bind_user(&self, session: &Arc<SessionHandle>, user: UserId) -> usize {
        let _ = session.user.set(user);
        let mut users = self.users.write();
        let list = users.entry((session.tenant, user)).or_default();
        list.push(session.clone());
        list.len()
    }

    /// Attaches a session to a stored topic.
    pub(crate) fn attach(&self, tenant: TenantId, topic: &str, attached: Attached) {
        self.topics.write().entry((tenant, topic.to_owned())).or_default().insert(attached.session.sid, attached);
    }

    /// Detaches a session from a stored topic.
    pub(crate) fn detach(&self, tenant: TenantId, topic: &str, sid: SessionId) {
        let mut map = self.topics.write();
        let key = (tenant, topic.to_owned());
        if let Some(attached) = map.get_mut(&key) {
            attached.remove(&sid);
            if attached.is_empty() {
                map.remove(&key);
            }
        }
    }

    /// Detaches every session of `user` from a topic, returning the ones that were attached.
    pub(crate) fn detach_user(&self, tenant: TenantId, topic: &str, user: UserId) -> Vec<Arc<SessionHandle>> {
        let mut map = self.topics.write();
        let key = (tenant, topic.to_owned());
        let Some(attached) = map.get_mut(&key) else { return Vec::new() };
        let gone: Vec<_> = attached.values().filter(|a| a.user == user).map(|a| a.session.clone()).collect();
        attached.retain(|_, a| a.user != user);
        if attached.is_empty() {
            map.remove(&key);
        }
        gone
    }

    /// Detaches everyone from a topic (it was deleted), returning who was attached.
    pub(crate) fn detach_all(&self, tenant: TenantId, topic: &str) -> Vec<Attached> {
        self.topics.write().remove(&(tenant, topic.to_owned())).map(|m| m.into_values().collect()).unwrap_or_default()
    }

    /// Updates the effective mode of every attachment of `user` to a topic.
    pub(crate) fn set_mode(&self, tenant: TenantId, topic: &str, user: UserId, mode: AccessMode) {
        if let Some(attached) = self.topics.write().get_mut(&(tenant, topic.to_owned())) {
            for a in attached.values_mut().filter(|a| a.user == user) {
                a.mode = mode;
            }
        }
    }

    /// The effective mode of an attached session, or `None` if it is not attached.
    pub(crate) fn attached_mode(&self, tenant: TenantId, topic: &str, sid: SessionId) -> Option<AccessMode> {
        self.topics.read().get(&(tenant, topic.to_owned()))?.get(&sid).map(|a| a.mode)
    }

    /// Users with at least one session attached to the topic.
    pub(crate) fn attached_users(&self, tenant: TenantId, topic: &str) -> Vec<UserId> {
        let map = self.topics.read();
        let mut users: Vec<UserId> =
            map.get(&(tenant, topic.to_owned())).map(|m| m.values().map(|a| a.user).collect()).unwrap_or_default();
        users.sort_unstable();
        users.dedup();
        users
    }

    /// Calls `f` for every session attached to the topic, under a read lock; `f` must not block.
    pub(crate) fn for_each_attached(&self, tenant: TenantId, topic: &str, mut f: impl FnMut(&Attached)) {
        if let Some(attached) = self.topics.read().get(&(tenant, topic.to_owned())) {
            attached.values().for_each(&mut f);
        }
    }

    /// Calls `f` for every session of a user on this node; `f` must not block.
    pub(crate) fn for_each_user_session(&self, tenant: TenantId, user: UserId, mut f: impl FnMut(&Arc<SessionHandle>)) {
        if let Some(list) = self.users.read().get(&(tenant, user)) {
            list.iter().for_each(&mut f);
        }
    }

    /// Records `topics` as joined for the user; returns the ones that were not already.
    pub(crate) fn mark_joined(&self, tenant: TenantId, user: UserId, topics: Vec<String>) -> Vec<String> {
        let mut joined = self.joined.lock();
        let set = joined.entry((tenant, user)).or_default();
        topics.into_iter().filter(|t| set.insert(t.clone())).collect()
    }

    /// Forgets one joined topic of the user; true if it was joined.
    pub(crate) fn unmark_joined(&self, tenant: TenantId, user: UserId, topic: &str) -> bool {
        self.joined.lock().get_mut(&(tenant, user)).is_some_and(|set| set.remove(topic))
    }

    /// Forgets and returns every joined topic of the user.
    pub(crate) fn take_joined(&self, tenant: TenantId, user: UserId) -> Vec<String> {
        self.joined.lock().remove(&(tenant, user)).map(|s| s.into_iter().collect()).unwrap_or_default()
    }

    /// Every (tenant, topic) some user of this node is joined to, for the heartbeat.
    pub(crate) fn joined_topics(&self) -> Vec<(TenantId, String)> {
        let joined = self.joined.lock();
        let mut all: HashSet<(TenantId, &String)> = HashSet::new();
        for ((tenant, _), topics) in joined.iter() {
            all.extend(topics.iter().map(|t| (*tenant, t)));
        }
        all.into_iter().map(|(t, n)| (t, n.clone())).collect()
    }

    /// Number of this user's sessions on the node.
    pub fn user_session_count(&self, tenant: TenantId, user: UserId) -> usize {
        self.users.read().get(&(tenant, user)).map_or(0, Vec::len)
    }

    /// Every session, for shutdown.
    pub fn all_sessions(&self) -> Vec<Arc<SessionHandle>> {
        self.sessions.read().values().cloned().collect()
    }

    /// Number of live sessions.
    pub fn session_count(&self) -> usize {
        self.sessions.read().len()
    }
}
