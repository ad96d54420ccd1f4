//! The node-local hub: which sessions exist, which user each belongs to, and which sessions are attached to
//! which topic. Delivery never blocks: a full session queue drops the frame and counts it, and the client
//! recovers by seq.
//!
//! A session's queue is bounded twice: in frames (the channel's capacity) and in bytes (`QueueBytes`), so that
//! a client that stops reading holds at most `session_queue_bytes` of frames however large they are. Fanout
//! beyond the byte cap drops; a reply beyond it closes the session, since waiting would hold the client's reader
//! forever and dropping a reply would break the protocol.
//!
//! **Invariant:** the hub holds only this node's connection state. Cross-node state (presence, seq) lives
//! behind ports.

use crate::Metrics;
use crate::delivery::control_state::ControlState;
use palaver_core::{AccessMode, SessionId, TenantId, UserId};
use parking_lot::{Mutex, RwLock};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use tokio::sync::{Notify, mpsc};

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

/// The bytes queued for one session, shared by its handle (which adds on enqueue) and its [`SessionRx`] (which
/// subtracts when the writer takes a frame).
#[derive(Debug)]
struct QueueBytes {
    queued: AtomicUsize,
    cap: usize,
    /// Set once a reply did not fit: the receiver then reports the queue closed and the transport disconnects.
    overflowed: AtomicBool,
    wake: Notify,
}

impl QueueBytes {
    /// Counts `len` more bytes if they fit under the cap. One frame is always let into an empty queue, so that
    /// a frame larger than the cap is still delivered to a client that reads.
    fn reserve(&self, len: usize) -> bool {
        if self.overflowed.load(Ordering::Acquire) {
            return false;
        }
        let before = self.queued.fetch_add(len, Ordering::AcqRel);
        if before > 0 && before.saturating_add(len) > self.cap {
            self.queued.fetch_sub(len, Ordering::AcqRel);
            return false;
        }
        true
    }

    fn release(&self, len: usize) {
        self.queued.fetch_sub(len, Ordering::AcqRel);
    }
}

/// The sending end of a session's queue.
#[derive(Debug)]
pub(crate) struct OutboundTx {
    tx: mpsc::Sender<Outbound>,
    bytes: Arc<QueueBytes>,
}

/// A session queue of at most `frames` frames and `bytes` bytes (see the module's doc).
pub(crate) fn queue(frames: usize, bytes: usize) -> (OutboundTx, SessionRx) {
    let (tx, rx) = mpsc::channel(frames);
    let bytes = Arc::new(QueueBytes {
        queued: AtomicUsize::new(0),
        cap: bytes,
        overflowed: AtomicBool::new(false),
        wake: Notify::new(),
    });
    (OutboundTx { tx, bytes: bytes.clone() }, SessionRx { rx, bytes })
}

/// The receiving end of a session's queue, read by its transport's writer. Taking a frame releases its bytes;
/// once the session overflowed (a reply did not fit), it reports the queue closed and drops what is left.
#[derive(Debug)]
pub struct SessionRx {
    rx: mpsc::Receiver<Outbound>,
    bytes: Arc<QueueBytes>,
}

impl SessionRx {
    /// The next item, waiting for one; `None` once the queue is closed or the session overflowed.
    pub async fn recv(&mut self) -> Option<Outbound> {
        if self.bytes.overflowed.load(Ordering::Acquire) {
            return None;
        }
        let out = tokio::select! {
            biased;
            () = self.bytes.wake.notified() => return None,
            out = self.rx.recv() => out?,
        };
        Some(self.took(out))
    }

    /// The next item if one is queued.
    pub fn try_recv(&mut self) -> Result<Outbound, mpsc::error::TryRecvError> {
        if self.bytes.overflowed.load(Ordering::Acquire) {
            return Err(mpsc::error::TryRecvError::Disconnected);
        }
        self.rx.try_recv().map(|out| self.took(out))
    }

    /// True if nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.rx.is_empty()
    }

    /// Bytes queued and not yet taken.
    pub fn queued_bytes(&self) -> usize {
        self.bytes.queued.load(Ordering::Acquire)
    }

    /// True once the session was closed because a reply did not fit: its client is not reading, so a polite
    /// close handshake would only wait.
    pub fn overflowed(&self) -> bool {
        self.bytes.overflowed.load(Ordering::Acquire)
    }

    fn took(&self, out: Outbound) -> Outbound {
        if let Outbound::Frame(f) = &out {
            self.bytes.release(f.len());
        }
        out
    }
}

/// The hub's handle on one session: its outbound queue and identity.
#[derive(Debug)]
pub struct SessionHandle {
    /// The node-internal id: hub maps, presence entries and the bus's `node|sid` references. Never on the wire.
    pub sid: SessionId,
    /// The id the client is told (`{hi}` `params.sid`, the long-poll `sid`): 128 random bits, unrelated to `sid`,
    /// because holding a long-poll sid is all it takes to act as that session.
    pub wire_sid: String,
    pub tenant: TenantId,
    user: OnceLock<UserId>,
    tx: OutboundTx,
    me_attached: AtomicBool,
    dropped: AtomicU64,
    metrics: Arc<Metrics>,
    /// The control versions the session is judged by (see [`crate::delivery::control`]).
    pub(crate) control: Mutex<ControlState>,
    /// Set once the server has closed the session (revoked, evicted, drained): from then on no frame of the
    /// client is handled, whether or not the client heeds the close.
    closed: AtomicBool,
    /// Wakes the transport's reader when `closed` is set, so that it can drop the connection.
    closed_notify: tokio::sync::Notify,
    /// How long [`SessionHandle::send`] waits for room before giving up on the client.
    send_deadline: std::time::Duration,
}

impl SessionHandle {
    pub(crate) fn new(
        sid: SessionId,
        tenant: TenantId,
        tx: OutboundTx,
        metrics: Arc<Metrics>,
        send_deadline: std::time::Duration,
    ) -> Self {
        SessionHandle {
            sid,
            wire_sid: random_sid(),
            tenant,
            user: OnceLock::new(),
            tx,
            me_attached: AtomicBool::new(false),
            dropped: AtomicU64::new(0),
            metrics,
            control: Mutex::new(ControlState::default()),
            closed: AtomicBool::new(false),
            closed_notify: tokio::sync::Notify::new(),
            send_deadline,
        }
    }

    /// The logged-in user, if any.
    pub fn user(&self) -> Option<UserId> {
        self.user.get().copied()
    }

    /// Queues a frame without waiting. Returns false (and counts a drop) if the queue is full (in frames or
    /// bytes) or closed.
    pub fn push(&self, frame: Frame) -> bool {
        if self.is_closed() {
            // A closed session receives nothing more, even if its queue has room (its 205 was queued first).
            return false;
        }
        let len = frame.len();
        let ok = self.tx.bytes.reserve(len) && {
            let sent = self.tx.tx.try_send(Outbound::Frame(frame)).is_ok();
            if !sent {
                self.tx.bytes.release(len);
            }
            sent
        };
        if !ok {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
        self.metrics.fanout(ok);
        ok
    }

    /// Queues a frame, waiting for room in frames. Used for replies to the session's own requests, which must
    /// not be dropped: waiting here slows down the reader of the same connection, which is the backpressure we
    /// want. A reply that would take the queue past its byte cap closes the session instead: its client is not
    /// reading, and waiting would hold its reader (and the bytes) forever; so does a wait past the send
    /// deadline, which would otherwise hold the request (and any lock it took) for as long as the client likes.
    pub async fn send(&self, frame: Frame) {
        if self.is_closed() {
            return;
        }
        let len = frame.len();
        if !self.tx.bytes.reserve(len) {
            self.overflow();
            return;
        }
        match tokio::time::timeout(self.send_deadline, self.tx.tx.send(Outbound::Frame(frame))).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) => self.tx.bytes.release(len),
            Err(_) => {
                self.tx.bytes.release(len);
                self.dropped.fetch_add(1, Ordering::Relaxed);
                self.metrics.refused("send_deadline");
                self.close();
            }
        }
    }

    /// Closes the session because its queue is over the byte cap: the receiver reports the queue closed, so
    /// the transport disconnects.
    fn overflow(&self) {
        self.mark_closed();
        if !self.tx.bytes.overflowed.swap(true, Ordering::AcqRel) {
            self.metrics.queue_overflow();
            tracing::debug!(sid = %self.sid, "session closed: its queue is over the byte cap");
            self.tx.bytes.wake.notify_one();
        }
    }

    /// Bytes queued for the session and not yet taken by its writer.
    pub fn queued_bytes(&self) -> usize {
        self.tx.bytes.queued.load(Ordering::Acquire)
    }

    /// Asks the writer to close the connection after what is already queued, and marks the session closed:
    /// nothing the client sends after this point is handled.
    pub fn close(&self) {
        self.mark_closed();
        if self.tx.tx.try_send(Outbound::Close).is_err() {
            // The queue is full: the writer will see the channel closed once every sender is dropped, but
            // a session stuck behind a full queue must not linger, so count it as a drop.
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Marks the session closed and wakes whoever waits for that (the transport's reader).
    fn mark_closed(&self) {
        self.closed.store(true, Ordering::Release);
        self.closed_notify.notify_waiters();
    }

    /// True once the server has closed the session.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Resolves once the server has closed the session.
    pub async fn closed(&self) {
        loop {
            let notified = self.closed_notify.notified();
            tokio::pin!(notified);
            // Registered before the flag is read, so a close between the read and the await is not missed.
            notified.as_mut().enable();
            if self.is_closed() {
                return;
            }
            notified.await;
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

/// A fresh wire session id: 128 bits from the thread's CSPRNG, base64url (22 characters).
fn random_sid() -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(rand::random::<[u8; 16]>())
}

/// A session attached to a topic, with the user's effective mode there.
#[derive(Debug, Clone)]
pub struct Attached {
    pub session: Arc<SessionHandle>,
    pub user: UserId,
    pub mode: AccessMode,
}

pub(crate) type TopicKey = (TenantId, String);
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
    /// Topics whose attached sessions changed since the shared presence last heard of them
    /// (`delivery/attached.rs` takes them), and the signal that there are some.
    attach_changes: Mutex<HashSet<TopicKey>>,
    attach_changed: Arc<tokio::sync::Notify>,
    /// Set once something takes the changes (a node on a shared bus); until then none is kept, so an embedded
    /// node does not collect every topic it ever saw attached.
    attach_tracked: std::sync::atomic::AtomicBool,
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
                self.attach_change(key);
            }
        }
    }

    /// Notes that a topic's attached sessions changed.
    fn attach_change(&self, key: TopicKey) {
        if !self.attach_tracked.load(std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        self.attach_changes.lock().insert(key);
        self.attach_changed.notify_one();
    }

    /// Starts keeping attachment changes for [`Hub::take_attach_changes`].
    pub(crate) fn track_attach_changes(&self) {
        self.attach_tracked.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Notes a topic again, without waking anyone: its write failed and waits for the next round.
    pub(crate) fn note_attach_change(&self, key: TopicKey) {
        self.attach_changes.lock().insert(key);
    }

    /// Signalled (with a stored permit, so no change is missed) when some topic's attached sessions change.
    pub(crate) fn attach_signal(&self) -> Arc<tokio::sync::Notify> {
        self.attach_changed.clone()
    }

    /// Takes the topics whose attached sessions changed since the last call.
    pub(crate) fn take_attach_changes(&self) -> Vec<TopicKey> {
        self.attach_changes.lock().drain().collect()
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
        self.attach_change((tenant, topic.to_owned()));
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
            self.attach_change(key);
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
        self.attach_change(key);
        gone
    }

    /// Detaches everyone from a topic (it was deleted), returning who was attached.
    pub(crate) fn detach_all(&self, tenant: TenantId, topic: &str) -> Vec<Attached> {
        let gone = self.topics.write().remove(&(tenant, topic.to_owned()));
        self.attach_change((tenant, topic.to_owned()));
        gone.map(|m| m.into_values().collect()).unwrap_or_default()
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
