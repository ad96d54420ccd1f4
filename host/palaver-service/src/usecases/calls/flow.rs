//! The call use cases: starting a call after its message is stored, the `{note what:"call"}` events, the
//! ring and length timers, and a dropped connection. Each transition is one conditional update of the
//! `CallStore`; only the one that takes rewrites the head and tells the parties, so a second firing (a timer on
//! one node racing an accept on another, a repeated hang-up) changes nothing and is only counted.

use crate::delivery::event::Event;
use crate::error::{ServiceError, ServiceResult};
use crate::{Inner, now_millis};
use palaver_core::ports::{Call, CallEnd, CallState, PublishContext};
use palaver_core::{AuditStatus, Message, MessageQuery, Seq, SessionId, TenantId, TopicKind, UserId};
use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::time::Duration;

/// The mime of a replacement whose original names none: what Tinode's mobile clients give call messages.
const CALL_MIME: &str = "application/x-tinode-webrtc";

/// A session as the calls table names it: `node/session`, so any node can route to it.
fn session_key(node: &str, sid: SessionId) -> String {
    format!("{node}/{sid}")
}

impl Inner {
    /// Before a message with `head.webrtc` is stored: calls are on, the head says `started` (the other states
    /// are the server's to write), the topic is P2P, and neither party is in a live call (486 otherwise).
    /// Returns the callee.
    pub(crate) async fn check_call_start(
        &self,
        tenant: TenantId,
        topic: &str,
        me: UserId,
        head: &Map<String, Value>,
    ) -> ServiceResult<UserId> {
        if !self.cfg.calls.enabled {
            return Err(ServiceError::NotImplemented);
        }
        if head.get("webrtc").and_then(Value::as_str) != Some(CallState::Started.as_str()) {
            return Err(ServiceError::Malformed("a call message may only say webrtc:\"started\"".into()));
        }
        let (a, b) = palaver_core::p2p_users(topic).ok_or(ServiceError::PermissionDenied)?;
        let peer = if a == me { b } else { a };
        let (started_since, accepted_since) = self.live_since();
        for user in [me, peer] {
            if self.ports.calls.live_call_of(tenant, user, started_since, accepted_since).await?.is_some() {
                return Err(ServiceError::Busy);
            }
        }
        Ok(peer)
    }

    /// The cut-offs before which a live row is a call whose node died (its timers with it): it no longer makes
    /// anyone busy, and the sweep ends it.
    fn live_since(&self) -> (i64, i64) {
        let now = now_millis();
        let c = &self.cfg.calls;
        (now - c.ring_timeout_ms as i64, now - c.max_duration_ms as i64)
    }

    /// Relays a call event as `{info what:"call"}` to the sessions of `to` (only the one named by `session`,
    /// when given; never `skip` here or the one `except` names anywhere), here and on the other nodes.
    #[allow(clippy::too_many_arguments)]
    async fn call_info(
        &self,
        tenant: TenantId,
        call: &Call,
        to: Vec<UserId>,
        (session, except): (Option<String>, Option<String>),
        from: UserId,
        event: &str,
        payload: Option<Value>,
        skip: Option<SessionId>,
    ) {
        let ev = Event::Call {
            topic: call.topic.clone(),
            to,
            session,
            except,
            from,
            seq: call.seq,
            event: event.to_owned(),
            payload,
        };
        self.dispatch(tenant, ev, skip, Some(from)).await;
    }

    /// Stores the replacement of the call's message: same content, `head.replace` naming it, the new
    /// `head.webrtc` and, once ended, `webrtc-duration`. Delivered like any message, so both histories end with
    /// the final state, and pushed like one (Tinode routes call progress in data pushes too): a party's devices
    /// with no session on the topic stop ringing (`accepted`, ended: silent) or show a missed call.
    async fn replace_call_message(&self, tenant: TenantId, call: &Call) {
        let query = MessageQuery { since: Some(call.seq), before: Some(call.seq + 1), limit: 1 };
        // The original's content and head (its `mime` above all: the SDK folds the state into a Drafty call
        // entity only while the mime says Drafty), as Tinode does.
        let (content, mut head) =
            match self.ports.messages.list_messages(tenant, &call.topic, call.caller, &query).await {
                Ok(mut found) if !found.is_empty() => {
                    let original = found.swap_remove(0);
                    (original.content, original.head.unwrap_or_default())
                }
                _ => (Value::String(String::new()), Map::new()),
            };
        head.entry("mime").or_insert_with(|| json!(CALL_MIME));
        head.remove("webrtc-duration");
        head.insert("replace".into(), json!(format!(":{}", call.seq)));
        head.insert("webrtc".into(), json!(call.state.as_str()));
        if call.duration_ms > 0 {
            head.insert("webrtc-duration".into(), json!(call.duration_ms));
        }
        if call.audio_only {
            head.insert("aonly".into(), json!(true));
        }
        let msg = Message {
            topic: call.topic.clone(),
            seq: 0,
            created: now_millis(),
            from: call.caller,
            head: Some(head),
            content,
            client_mid: None,
            audit: AuditStatus::Pass,
            risk_flags: Vec::new(),
        };
        let ctx = PublishContext {
            tenant,
            topic: call.topic.clone(),
            kind: TopicKind::P2p,
            from: call.caller,
            session: call.caller_session.clone(),
            node: self.cfg.node_id.clone(),
        };
        match self.messages(tenant).publish(&ctx, msg, None, || false, |_, _| {}).await {
            Ok(p) if p.fresh && !p.held => {
                self.notify_unattached(tenant, &p.msg).await;
                self.enqueue_push(tenant, &p.msg, None);
                self.enqueue_published(tenant, &p.msg);
            }
            Ok(_) => {}
            // The state is stored either way; only the history line is missing.
            Err(e) => tracing::warn!(error = %e, topic = %call.topic, seq = call.seq, "call message not replaced"),
        }
    }

    /// Ends the call as `end` says if the state machine allows it. The parties' other sessions (all but `skip`)
    /// get `hang-up`; both histories get the final head. False if the update was refused.
    async fn end_call(
        &self,
        tenant: TenantId,
        topic: &str,
        seq: Seq,
        end: CallEnd,
        reason: &str,
        skip: Option<SessionId>,
    ) -> ServiceResult<bool> {
        let Some(call) = self.ports.calls.end_call(tenant, topic, seq, end, reason, now_millis()).await? else {
            self.calls.refused(reason);
            return Ok(false);
        };
        self.calls.moved(call.state);
        self.forget_parties(tenant, &call);
        self.replace_call_message(tenant, &call).await;
        let parties = vec![call.caller, call.callee];
        self.call_info(tenant, &call, parties, (None, None), call.caller, "hang-up", None, skip).await;
        Ok(true)
    }

    /// Drops the call from the local sessions that were its parties.
    fn forget_parties(&self, tenant: TenantId, call: &Call) {
        for key in [&call.caller_session, &call.callee_session] {
            if let Some((node, sid)) = key.rsplit_once('/')
                && node == self.cfg.node_id
                && let Ok(sid) = u64::from_str_radix(sid, 16)
            {
                self.calls.leave(SessionId(sid), tenant, &call.topic, call.seq);
            }
        }
    }
}

/// After the started message is stored as `seq`: the call record, the `invite` to the callee's sessions, and
/// the ring timer, held by this node (the one that created the record); an accept elsewhere makes its firing
/// a refused update. False if the call does not ring (stored `busy`, or not stored): its message must not
/// alert anyone.
impl Inner {
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn start_call(
        self: &Arc<Self>,
        tenant: TenantId,
        topic: &str,
        seq: Seq,
        caller: UserId,
        callee: UserId,
        sid: SessionId,
        audio_only: bool,
    ) -> bool {
        let inner = self;
        let key = session_key(&inner.cfg.node_id, sid);
        let mut call = Call::started(topic.to_owned(), seq, caller, callee, key, audio_only, now_millis());
        let (started_since, accepted_since) = inner.live_since();
        match inner.ports.calls.create_call(tenant, &call, started_since, accepted_since).await {
            Ok(CallState::Started) => {}
            Ok(state) => {
                // A party got into another call between the check before the message was stored and now (two
                // calls dialled to one user at once): this one is stored `busy` and never rings; the caller sees
                // it in the message's replacement.
                inner.calls.moved(state);
                call.state = state;
                call.ended_at = Some(call.started_at);
                inner.replace_call_message(tenant, &call).await;
                // The dialling session's call panel learns it is over, where it listens.
                let dialling = (Some(call.caller_session.clone()), None);
                inner.call_info(tenant, &call, vec![caller], dialling, callee, "hang-up", None, None).await;
                return false;
            }
            Err(e) => {
                tracing::warn!(error = %e, topic, seq, "call record not stored; the call does not ring");
                return false;
            }
        }
        inner.calls.moved(CallState::Started);
        inner.calls.join(sid, (tenant, topic.to_owned(), seq));
        inner.call_info(tenant, &call, vec![callee], (None, None), caller, "invite", None, None).await;
        let after = Duration::from_millis(inner.cfg.calls.ring_timeout_ms);
        spawn_timer(inner, tenant, topic, seq, after, CallEnd::Missed, "timeout");
        true
    }

    /// A session closed: the calls it dialled or accepted end as `disconnected`.
    pub(crate) async fn session_left_calls(self: &Arc<Self>, sid: SessionId) {
        let inner = self;
        let key = session_key(&inner.cfg.node_id, sid);
        for (tenant, topic, seq) in inner.calls.take(sid) {
            let call = match inner.ports.calls.get_call(tenant, &topic, seq).await {
                Ok(Some(c)) if c.state.is_live() => c,
                Ok(_) => continue,
                Err(e) => {
                    tracing::warn!(error = %e, topic, seq, "call of a closed session not read");
                    continue;
                }
            };
            if call.caller_session == key || call.callee_session == key {
                let ended = inner.end_call(tenant, &topic, seq, CallEnd::Disconnected, "disconnect", Some(sid)).await;
                if let Err(e) = ended {
                    tracing::warn!(error = %e, topic, seq, "call of a closed session not ended");
                }
            }
        }
    }
}

/// How long a call note waits for the record of a call whose message it has already seen.
const RECORD_WAIT: Duration = Duration::from_millis(1_000);

impl Inner {
    /// The record of call `seq` when its message is stored but its record not yet: the message is delivered
    /// before the record is written, and a client notes `ringing` the moment it sees the message. Waits up to
    /// [`RECORD_WAIT`] only when `me` can read a recent `webrtc:"started"` message at `seq`; `None` otherwise.
    async fn call_being_started(
        &self,
        tenant: TenantId,
        topic: &str,
        seq: Seq,
        me: UserId,
    ) -> ServiceResult<Option<Call>> {
        let query = MessageQuery { since: Some(seq), before: Some(seq + 1), limit: 1 };
        let found = self.ports.messages.list_messages(tenant, topic, me, &query).await?;
        let recent = now_millis() - self.cfg.calls.ring_timeout_ms as i64;
        let starts_a_call = found.iter().any(|m| {
            m.seq == seq
                && m.created >= recent
                && m.head.as_ref().and_then(|h| h.get("webrtc")).and_then(Value::as_str)
                    == Some(CallState::Started.as_str())
        });
        if !starts_a_call {
            return Ok(None);
        }
        let deadline = tokio::time::Instant::now() + RECORD_WAIT;
        while tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
            if let Some(call) = self.ports.calls.get_call(tenant, topic, seq).await? {
                return Ok(Some(call));
            }
        }
        Ok(None)
    }
}

/// How long the sweep leaves a call alone after the moment a local session joined it (the record is written
/// just before the session joins), and after its timers were due (they fire on time on a live node).
const SWEEP_GRACE_MS: i64 = 5_000;

/// The most live calls of a tenant one sweep looks at.
const SWEEP_BATCH: usize = 500;

impl Inner {
    /// Ends the tenant's live calls whose node died with their timers: ringing longer than
    /// `calls.ring_timeout_ms` (`missed`), accepted longer than `calls.max_duration_ms` (`disconnected`), or
    /// with a party session on a node that is gone (`disconnected`, reason `node-lost`): a node not in
    /// `live_nodes` (when the cluster knows), or this node when the session is not one of its live ones (it
    /// restarted). Each end is the usual conditional update, so every node may sweep: one wins, the others are
    /// refused. Returns how many calls it ended.
    pub(crate) async fn sweep_calls(&self, tenant: TenantId, live_nodes: Option<&[String]>) -> ServiceResult<usize> {
        let now = now_millis();
        let c = &self.cfg.calls;
        let grace = SWEEP_GRACE_MS;
        let (ring_cut, length_cut) = (now - c.ring_timeout_ms as i64 - grace, now - c.max_duration_ms as i64 - grace);
        let mut ended = 0;
        // Page by start time (a page may repeat the last one's final instant: `seen` skips what was judged).
        let (mut since, mut seen) = (i64::MIN, std::collections::HashSet::new());
        loop {
            // `now + 1`: a call that started this very millisecond is live too (the bound is exclusive).
            let page = self.ports.calls.live_calls(tenant, since, now + 1, SWEEP_BATCH).await?;
            let (full, mut fresh) = (page.len() == SWEEP_BATCH, false);
            for call in page {
                since = since.max(call.started_at);
                if !seen.insert((call.topic.clone(), call.seq)) {
                    continue;
                }
                fresh = true;
                let key = (tenant, call.topic.clone(), call.seq);
                // A party session is lost when its node is not live, or when it is this node's but not one of its
                // live sessions (the node restarted) a while after it joined (`since`: the start for the caller,
                // the accept for the callee).
                let lost = |session: &str, since: Option<i64>| match session.rsplit_once('/') {
                    None => false,
                    Some((node, _)) if node != self.cfg.node_id => {
                        live_nodes.is_some_and(|live| !live.iter().any(|n| n == node))
                    }
                    Some((_, sid)) => {
                        since.is_some_and(|at| at < now - SWEEP_GRACE_MS)
                            && u64::from_str_radix(sid, 16).is_ok_and(|sid| !self.calls.holds(SessionId(sid), &key))
                    }
                };
                let party_lost =
                    lost(&call.caller_session, Some(call.started_at)) || lost(&call.callee_session, call.accepted_at);
                let (end, reason) = match call.state {
                    CallState::Started if call.started_at < ring_cut => (CallEnd::Missed, "timeout"),
                    CallState::Accepted if call.accepted_at.is_some_and(|a| a < length_cut) => {
                        (CallEnd::Disconnected, "max-duration")
                    }
                    _ if party_lost => (CallEnd::Disconnected, "node-lost"),
                    _ => continue,
                };
                if self.end_call(tenant, &call.topic, call.seq, end, reason, None).await? {
                    ended += 1;
                }
            }
            if !full || !fresh {
                return Ok(ended);
            }
        }
    }
}

/// Fires `end` for the call after `after`, unless the service is gone by then.
fn spawn_timer(
    inner: &Arc<Inner>,
    tenant: TenantId,
    topic: &str,
    seq: Seq,
    after: Duration,
    end: CallEnd,
    reason: &'static str,
) {
    let weak = Arc::downgrade(inner);
    let topic = topic.to_owned();
    tokio::spawn(async move {
        tokio::time::sleep(after).await;
        let Some(inner) = weak.upgrade() else { return };
        if let Err(e) = inner.end_call(tenant, &topic, seq, end, reason, None).await {
            tracing::warn!(error = %e, topic, seq, reason, "call timer could not end the call");
        }
    });
}

impl Inner {
    /// A `{note what:"call" seq event payload}` of user `me` on session `sid` on the P2P topic `stored`: the
    /// event of one party of the call `seq`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn call_event(
        self: &Arc<Self>,
        tenant: TenantId,
        stored: String,
        seq: Seq,
        me: UserId,
        sid: SessionId,
        event: &str,
        payload: Option<Value>,
    ) -> ServiceResult<()> {
        let svc = self;
        if !svc.cfg.calls.enabled {
            return Err(ServiceError::NotImplemented);
        }
        let call = match svc.ports.calls.get_call(tenant, &stored, seq).await? {
            Some(call) => call,
            None => svc.call_being_started(tenant, &stored, seq, me).await?.ok_or(ServiceError::NotFound)?,
        };
        if me != call.caller && me != call.callee {
            return Err(ServiceError::PermissionDenied);
        }
        let mine = session_key(&svc.cfg.node_id, sid);
        match event {
            "ringing" => {
                if me != call.callee {
                    return Err(ServiceError::PermissionDenied);
                }
                if call.state == CallState::Started {
                    let to = Some(call.caller_session.clone());
                    svc.call_info(tenant, &call, vec![call.caller], (to, None), me, "ringing", None, None).await;
                }
            }
            "accept" => {
                if me != call.callee {
                    return Err(ServiceError::PermissionDenied);
                }
                let Some(call) = svc.ports.calls.accept_call(tenant, &stored, seq, &mine, now_millis()).await? else {
                    svc.calls.refused("accept");
                    return Ok(());
                };
                svc.calls.moved(CallState::Accepted);
                svc.calls.join(sid, (tenant, stored.clone(), seq));
                svc.replace_call_message(tenant, &call).await;
                // The dialling session learns it is answered, on the topic; the callee's other devices stop
                // ringing and the caller's other devices see it taken, on `me`.
                let dialling = Some(call.caller_session.clone());
                let (caller, parties) = (vec![call.caller], vec![call.caller, call.callee]);
                svc.call_info(tenant, &call, caller, (dialling.clone(), None), me, "accept", payload.clone(), None)
                    .await;
                svc.call_info(tenant, &call, parties, (None, dialling), me, "accept", payload, Some(sid)).await;
                let after = Duration::from_millis(svc.cfg.calls.max_duration_ms);
                spawn_timer(svc, tenant, &stored, seq, after, CallEnd::Disconnected, "max-duration");
            }
            "offer" | "answer" | "ice-candidate" => {
                let (to, session) = if mine == call.caller_session {
                    (call.callee, call.callee_session.clone())
                } else if mine == call.callee_session {
                    (call.caller, call.caller_session.clone())
                } else {
                    return Err(ServiceError::PermissionDenied);
                };
                if call.state == CallState::Accepted && !session.is_empty() {
                    svc.call_info(tenant, &call, vec![to], (Some(session), None), me, event, payload, None).await;
                }
            }
            "hang-up" => self.hang_up(tenant, call, me, sid).await?,
            _ => return Err(ServiceError::Malformed(format!("unknown call event {event:?}"))),
        }
        Ok(())
    }

    /// A party hangs up: an accepted call is `finished`; a ringing one is `missed` when the caller gives up
    /// and `declined` when the callee refuses. A state that moved meanwhile is read again once.
    async fn hang_up(&self, tenant: TenantId, mut call: Call, me: UserId, sid: SessionId) -> ServiceResult<()> {
        let svc = self;
        for _ in 0..2 {
            let end = match call.state {
                CallState::Accepted => CallEnd::Finished,
                CallState::Started if me == call.caller => CallEnd::Missed,
                CallState::Started => CallEnd::Declined,
                _ => {
                    svc.calls.refused("hang-up");
                    return Ok(());
                }
            };
            if svc.end_call(tenant, &call.topic, call.seq, end, "hang-up", Some(sid)).await? {
                return Ok(());
            }
            match svc.ports.calls.get_call(tenant, &call.topic, call.seq).await? {
                Some(c) => call = c,
                None => return Ok(()),
            }
        }
        Ok(())
    }
}
