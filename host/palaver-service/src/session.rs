//! One client session: the Tinode state machine (`{hi}` first, then login, then topics) and the dispatch of
//! each decoded message to its handler. Requests of one session are handled in order.

use crate::delivery::hub::{Frame, SessionHandle};
use crate::error::{ServiceError, ServiceResult};
use crate::{Inner, now_millis, render};
use palaver_core::{SessionId, TenantId, UserId};
use palaver_proto::{ClientMsg, Code, DecodeErrorKind, MsgPres, decode_client};
use serde_json::Value;
use std::collections::HashSet;
use std::sync::Arc;

/// How long closing a session waits for its publishes to settle.
const SETTLE_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// How the client is connected; it changes the `{hi}` reply code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    WebSocket,
    LongPoll,
}

/// What the client said in `{hi}`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Hello {
    pub(crate) ver: String,
    pub(crate) ua: Option<String>,
    pub(crate) dev: Option<String>,
    pub(crate) platf: Option<String>,
    pub(crate) lang: Option<String>,
}

/// A client session. Owned by the transport task that reads the connection.
pub struct Session {
    pub(crate) svc: Arc<Inner>,
    pub(crate) handle: Arc<SessionHandle>,
    pub(crate) transport: Transport,
    pub(crate) remote: Option<String>,
    pub(crate) hello: Option<Hello>,
    pub(crate) user: Option<UserId>,
    /// Logged in at Tinode's `anon` level (an anonymous account): topics give it their `anon` default access.
    pub(crate) anon: bool,
    /// Attached topics by stored name (`me` and `fnd` by their own names).
    pub(crate) attached: HashSet<String>,
    /// The current `fnd` query, as tags.
    pub(crate) fnd_query: Vec<String>,
    /// One permit per publish until it settles (`max_publishes_in_flight`); made by the first publish, so that
    /// an idle connection does not carry it.
    pub(crate) publishes: Option<Arc<tokio::sync::Semaphore>>,
    /// When presence was last refreshed, so that a busy session refreshes at most every few seconds.
    last_touch: i64,
    /// Counts the session in `palaver_sessions_by_transport` until it is dropped.
    _live: crate::LiveGauge,
}

impl Session {
    pub(crate) fn new(
        svc: Arc<Inner>,
        handle: Arc<SessionHandle>,
        transport: Transport,
        remote: Option<String>,
        live: crate::LiveGauge,
    ) -> Self {
        Session {
            svc,
            handle,
            transport,
            remote,
            hello: None,
            user: None,
            anon: false,
            attached: HashSet::new(),
            fnd_query: Vec::new(),
            publishes: None,
            last_touch: 0,
            _live: live,
        }
    }

    /// The session's id as the client sees it (`params.sid`, the long-poll `sid`): random, and known only to
    /// this client.
    pub fn sid(&self) -> String {
        self.handle.wire_sid.clone()
    }

    /// The node-internal id that presence, the bus and plugins know the session by; never sent to clients.
    pub(crate) fn internal_sid(&self) -> String {
        self.handle.sid.to_string()
    }

    /// The id of the device this session registered with `{hi dev}`, if any (it gets no push for its own acts).
    pub(crate) fn device_id(&self) -> Option<String> {
        self.hello.as_ref().and_then(|h| h.dev.as_deref()).map(crate::usecases::devices::device_id)
    }

    /// True once the server has closed the session (revoked, evicted, drained).
    pub fn is_closed(&self) -> bool {
        self.handle.is_closed()
    }

    /// Resolves once the server has closed the session; the transport then drops the connection.
    pub async fn closed(&self) {
        self.handle.closed().await
    }

    /// The tenant the session belongs to.
    pub fn tenant(&self) -> TenantId {
        self.handle.tenant
    }

    /// The logged-in user, if any.
    pub fn user(&self) -> Option<UserId> {
        self.user
    }

    /// Handles one client frame; every reply goes to the session's outbound queue.
    pub async fn handle_frame(&mut self, frame: &[u8]) {
        if self.is_closed() {
            // A revoked or evicted session was told so and is being disconnected; a client that ignores the
            // close must not keep acting under the old credentials.
            self.svc.metrics.refused_after_close();
            return;
        }
        let msg = match decode_client(frame) {
            Ok(msg) => msg,
            Err(e) => {
                self.svc.metrics.malformed();
                let why = match e.kind {
                    DecodeErrorKind::NotJson => "not a JSON object".to_owned(),
                    DecodeErrorKind::WrongShape(s) => s,
                    DecodeErrorKind::UnknownKind => "unknown message kind".to_owned(),
                    DecodeErrorKind::Ambiguous => "more than one message kind".to_owned(),
                };
                self.reply_error(e.id.as_deref(), e.topic.as_deref(), &ServiceError::Malformed(why)).await;
                return;
            }
        };
        self.touch_presence().await;
        if self.is_closed() {
            // The presence refresh found a control the bus lost and closed the session just now.
            self.svc.metrics.refused_after_close();
            return;
        }
        let kind = msg.kind();
        self.svc.metrics.request(kind);
        let id = msg.id().map(str::to_owned);
        let topic = msg.topic().map(str::to_owned);
        let started = std::time::Instant::now();
        // Every log line of the request carries who and what it is about (flattened into JSON logs).
        let span = tracing::info_span!(
            "request",
            tenant = self.handle.tenant.0,
            user = self.user.map(|u| u.to_string()),
            session = %self.handle.sid,
            topic = topic.as_deref(),
            request_id = id.as_deref(),
            kind,
        );
        let outcome = tracing::Instrument::instrument(self.dispatch(msg), span).await;
        // A publish is timed by its own handler, up to its ack or error, which may come after this returns.
        if !matches!(kind, "pub") {
            self.svc.metrics.request_done(kind, started.elapsed());
        }
        if let Err(e) = outcome {
            report_error(&self.svc, &self.handle, id.as_deref(), topic.as_deref(), &e).await;
        }
    }

    /// Refuses a frame without handling it (rate limit, size limit), echoing its id if one can be found.
    pub async fn refuse_frame(&mut self, frame: &[u8], err: ServiceError) {
        let (id, topic) = match decode_client(frame) {
            Ok(m) => (m.id().map(str::to_owned), m.topic().map(str::to_owned)),
            Err(e) => (e.id, e.topic),
        };
        self.reply_error(id.as_deref(), topic.as_deref(), &err).await;
    }

    async fn dispatch(&mut self, msg: ClientMsg) -> ServiceResult<()> {
        if self.hello.is_none() && !matches!(msg, ClientMsg::Hi(_)) {
            return Err(ServiceError::OutOfSequence);
        }
        if self.user.is_none() && !matches!(msg, ClientMsg::Hi(_) | ClientMsg::Acc(_) | ClientMsg::Login(_)) {
            return Err(ServiceError::AuthRequired);
        }
        match msg {
            ClientMsg::Hi(m) => self.on_hi(m).await,
            ClientMsg::Acc(m) => self.on_acc(m).await,
            ClientMsg::Login(m) => self.on_login(m).await,
            ClientMsg::Sub(m) => self.on_sub(m).await,
            ClientMsg::Leave(m) => self.on_leave(m).await,
            ClientMsg::Pub(m) => self.on_pub(m).await,
            ClientMsg::Get(m) => self.on_get(m).await,
            ClientMsg::Set(m) => self.on_set(m).await,
            ClientMsg::Del(m) => self.on_del(m).await,
            ClientMsg::Note(m) => {
                // Notes have no id and no reply; an invalid one is dropped, as Tinode does.
                if let Err(e) = self.on_note(m).await {
                    tracing::debug!(error = %e, "note dropped");
                }
                Ok(())
            }
        }
    }

    /// The logged-in user, or 401.
    pub(crate) fn me(&self) -> ServiceResult<UserId> {
        self.user.ok_or(ServiceError::AuthRequired)
    }

    /// Queues a transport-level frame that is not a protocol message (the keep-alive answer `0`).
    pub async fn send_raw(&self, frame: Frame) {
        self.handle.send(frame).await;
    }

    /// Queues a frame for this session, waiting for room.
    pub(crate) async fn send(&self, frame: Frame) {
        self.handle.send(frame).await;
    }

    /// Replies with a ctrl of `code`.
    pub(crate) async fn reply(&self, id: Option<&str>, topic: Option<&str>, code: Code, params: Option<Value>) {
        self.send(render::ctrl_frame(id, topic, code, None, now_millis(), params)).await;
    }

    /// Replies with the ctrl for an error.
    pub(crate) async fn reply_error(&self, id: Option<&str>, topic: Option<&str>, err: &ServiceError) {
        self.send(error_frame(id, topic, err)).await;
    }

    async fn touch_presence(&mut self) {
        const EVERY_MS: i64 = 5_000;
        let now = now_millis();
        if let Some(user) = self.user.filter(|_| now - self.last_touch >= EVERY_MS) {
            self.last_touch = now;
            self.svc.presence(self.tenant()).refresh(&self.handle, user, &self.internal_sid(), now).await;
        }
    }

    /// Ends the session: detaches from every topic, marks presence offline, tells contacts if the user is gone.
    pub async fn close(mut self) {
        // Publishes still settling finish first (their acks and fanout are queued), within a bound.
        if let Some(publishes) = &self.publishes {
            let all = self.svc.cfg.max_publishes_in_flight.max(1) as u32;
            let _ = tokio::time::timeout(SETTLE_GRACE, publishes.acquire_many(all)).await;
        }
        let stored: Vec<String> = self.attached.iter().cloned().collect();
        // Counted before leaving the hub, so that a shutdown waiting for sessions also waits for this clean-up.
        self.svc.closing.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let _done = ClosingGuard(self.svc.clone());
        self.svc.hub.unregister(&self.handle, &stored);
        self.svc.session_left_calls(self.handle.sid).await;
        if let Some(user) = self.user {
            let sid = self.internal_sid();
            let now = now_millis();
            let was_on_me = self.attached.contains("me");
            self.attached.clear();
            let ua = self.hello.as_ref().and_then(|h| h.ua.clone());
            let remaining = self.svc.presence(self.tenant()).session_closed(user, &sid, ua.as_deref(), now).await;
            if was_on_me && remaining == 0 {
                self.announce_presence(user, false).await;
            }
        }
    }
}

/// The ctrl for an error.
fn error_frame(id: Option<&str>, topic: Option<&str>, err: &ServiceError) -> Frame {
    render::ctrl_frame(id, topic, err.code(), Some(&err.text()), now_millis(), err.params())
}

/// Counts and logs a request's failure as `handle_frame` does, and replies with its ctrl: for the part of a
/// request that finishes after `handle_frame` returned (a publish settling).
pub(crate) async fn report_error(
    svc: &Inner,
    handle: &SessionHandle,
    id: Option<&str>,
    topic: Option<&str>,
    err: &ServiceError,
) {
    svc.metrics.error(err.code().code());
    match err.code() {
        Code::InternalError => tracing::error!(error = %err, sid = %handle.sid, "request failed"),
        Code::ServiceUnavailable => tracing::warn!(error = %err, sid = %handle.sid, "request refused"),
        _ => {}
    }
    handle.send(error_frame(id, topic, err)).await;
}

/// Counts a session's clean-up as finished when dropped, however `close` returns.
struct ClosingGuard(Arc<Inner>);

impl Drop for ClosingGuard {
    fn drop(&mut self) {
        self.0.closing.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Session {
    /// The same `{pres}` on `me` to several users, as one event.
    pub(crate) async fn push_me_pres_many(&self, users: Vec<UserId>, pres: MsgPres, skip: Option<SessionId>) {
        self.svc.pres_to_many(self.tenant(), users, pres, skip, self.user).await;
    }

    /// Tells the user's P2P contacts that the user came online or went offline.
    pub(crate) async fn announce_presence(&self, user: UserId, online: bool) {
        let ua = self.hello.as_ref().and_then(|h| h.ua.clone());
        self.svc.presence(self.tenant()).announce(user, online, ua, self.user).await;
    }
}
