//! The call aggregate: one row per one-to-one call, keyed by the P2P topic and the seq of the message that
//! started it (`{pub head:{webrtc:"started"}}`). The state only moves forward, and every move is one
//! conditional update, so two nodes (or a timer and a user) racing on a call leave exactly one outcome:
//!
//! `started → accepted → finished`, `started → missed`, `started → declined`, `started|accepted →
//! disconnected`. `accept` only from `started`; `missed` and `declined` only from `started` with no
//! `accepted_at`, so an accepted call is never overwritten by them; `finished` only ends an accepted call.
//! A call dialled to (or by) a user already in a live call is stored `busy`, ended from the start: the busy
//! check and the insert are one step.

use crate::{Seq, StoreResult, TenantId, UnixMillis, UserId};

/// Where a call stands. The spelling is `head.webrtc` of its message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CallState {
    Started,
    Accepted,
    Finished,
    Missed,
    Declined,
    Disconnected,
    /// A party was already in a live call when it was dialled; it never rang.
    Busy,
}

impl CallState {
    /// Every state, in the order of the table's documentation.
    pub const ALL: [CallState; 7] = [
        CallState::Started,
        CallState::Accepted,
        CallState::Finished,
        CallState::Missed,
        CallState::Declined,
        CallState::Disconnected,
        CallState::Busy,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            CallState::Started => "started",
            CallState::Accepted => "accepted",
            CallState::Finished => "finished",
            CallState::Missed => "missed",
            CallState::Declined => "declined",
            CallState::Disconnected => "disconnected",
            CallState::Busy => "busy",
        }
    }

    pub fn parse(s: &str) -> Option<CallState> {
        CallState::ALL.into_iter().find(|c| c.as_str() == s)
    }

    /// True for `started` and `accepted`: the call still ties up both parties.
    pub fn is_live(self) -> bool {
        matches!(self, CallState::Started | CallState::Accepted)
    }
}

/// How a call ends. Each end names the states it may leave ([`CallEnd::from_states`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallEnd {
    /// Hung up after it was accepted.
    Finished,
    /// Nobody answered in time, or the caller gave up while it rang.
    Missed,
    /// The callee hung up while it rang.
    Declined,
    /// A party's connection dropped.
    Disconnected,
}

impl CallEnd {
    pub fn state(self) -> CallState {
        match self {
            CallEnd::Finished => CallState::Finished,
            CallEnd::Missed => CallState::Missed,
            CallEnd::Declined => CallState::Declined,
            CallEnd::Disconnected => CallState::Disconnected,
        }
    }

    /// The states this end may be reached from; `missed` and `declined` also need `accepted_at` unset.
    pub fn from_states(self) -> &'static [CallState] {
        match self {
            CallEnd::Finished => &[CallState::Accepted],
            CallEnd::Missed | CallEnd::Declined => &[CallState::Started],
            CallEnd::Disconnected => &[CallState::Started, CallState::Accepted],
        }
    }

    /// True if the end is refused once the call has an `accepted_at`.
    pub fn needs_unanswered(self) -> bool {
        matches!(self, CallEnd::Missed | CallEnd::Declined)
    }
}

/// A call as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// The stored P2P topic name.
    pub topic: String,
    /// The seq of the message that started the call.
    pub seq: Seq,
    pub caller: UserId,
    pub callee: UserId,
    /// The caller's session, `node/session`, so signalling reaches the one device that dialled.
    pub caller_session: String,
    /// The callee's session that accepted, `node/session`; empty until accepted.
    pub callee_session: String,
    /// `head.aonly`: an audio-only call.
    pub audio_only: bool,
    pub state: CallState,
    pub started_at: UnixMillis,
    pub accepted_at: Option<UnixMillis>,
    pub ended_at: Option<UnixMillis>,
    /// From acceptance to the end, in ms; 0 for a call never accepted.
    pub duration_ms: i64,
    /// Why it ended (`hang-up`, `timeout`, `disconnect`, `max-duration`…); empty while live.
    pub end_reason: String,
}

impl Call {
    /// A new call in `started`.
    pub fn started(
        topic: String,
        seq: Seq,
        caller: UserId,
        callee: UserId,
        caller_session: String,
        audio_only: bool,
        at: UnixMillis,
    ) -> Call {
        Call {
            topic,
            seq,
            caller,
            callee,
            caller_session,
            callee_session: String::new(),
            audio_only,
            state: CallState::Started,
            started_at: at,
            accepted_at: None,
            ended_at: None,
            duration_ms: 0,
            end_reason: String::new(),
        }
    }
}

/// Each tenant's calls. Every transition is one conditional update; `None` means the rule refused it (a late
/// or out-of-order event), never an error.
#[async_trait::async_trait]
pub trait CallStore: Send + Sync {
    /// Stores a new call (given as `started`): `started` unless a party of it already has a live call by
    /// [`CallStore::live_call_of`]'s rule with the same cut-offs, else `busy`, ended at `started_at` with
    /// reason `busy`. The check and the insert are one step, so two calls dialled to one user at the same
    /// instant never both ring. Returns the state stored. `Conflict` if the topic and seq already have one.
    async fn create_call(
        &self,
        tenant: TenantId,
        call: &Call,
        started_since: UnixMillis,
        accepted_since: UnixMillis,
    ) -> StoreResult<CallState>;

    /// The call started by message `seq` of `topic`.
    async fn get_call(&self, tenant: TenantId, topic: &str, seq: Seq) -> StoreResult<Option<Call>>;

    /// `started → accepted`, recording the accepting session and the time. The call as it reads right after,
    /// or `None` if it was not `started`.
    async fn accept_call(
        &self,
        tenant: TenantId,
        topic: &str,
        seq: Seq,
        callee_session: &str,
        at: UnixMillis,
    ) -> StoreResult<Option<Call>>;

    /// Ends the call as `end` says, if [`CallEnd::from_states`] allows it from the stored state; the duration
    /// is `at - accepted_at` (0 if never accepted). The ended call, or `None` if the rule refused.
    async fn end_call(
        &self,
        tenant: TenantId,
        topic: &str,
        seq: Seq,
        end: CallEnd,
        reason: &str,
        at: UnixMillis,
    ) -> StoreResult<Option<Call>>;

    /// A live call the user is a party of: `started` at or after `started_since`, or `accepted` at or after
    /// `accepted_since` (older live rows are calls whose node died; they no longer make anyone busy).
    async fn live_call_of(
        &self,
        tenant: TenantId,
        user: UserId,
        started_since: UnixMillis,
        accepted_since: UnixMillis,
    ) -> StoreResult<Option<Call>>;

    /// Up to `limit` live calls (`started` or `accepted`) that started at or after `since` and before `before`,
    /// oldest first (ties by topic and seq): what a sweep checks, a page at a time, for calls whose node died
    /// with their timers.
    async fn live_calls(
        &self,
        tenant: TenantId,
        since: UnixMillis,
        before: UnixMillis,
        limit: usize,
    ) -> StoreResult<Vec<Call>>;
}
