//! The call table's shared parts: the columns both adapters select and insert, how a row becomes a [`Call`], and
//! each transition's conditional update, so SQLite and MariaDB enforce the same state machine word for word.

use crate::columns::{CorruptRow, user_of};
use palaver_core::UnixMillis;
use palaver_core::ports::{Call, CallEnd, CallState};

/// The select list of [`CallRow`], in order.
pub const CALL_COLUMNS: &str = "topic, seq, caller_id, callee_id, caller_session, callee_session, audio_only, state, \
                                started_at, accepted_at, ended_at, duration_ms, end_reason";

/// A call row as selected by [`CALL_COLUMNS`].
pub type CallRow = (String, i64, i64, i64, String, String, bool, String, i64, Option<i64>, Option<i64>, i64, String);

/// The call a row holds; an unknown state is a corrupt row.
pub fn call_of(row: CallRow) -> Result<Call, CorruptRow> {
    let (
        topic,
        seq,
        caller,
        callee,
        caller_session,
        callee_session,
        audio_only,
        state,
        started_at,
        accepted_at,
        ended_at,
        duration_ms,
        end_reason,
    ) = row;
    let state = CallState::parse(&state).ok_or(CorruptRow::Value { column: "state", value: state })?;
    Ok(Call {
        topic,
        seq,
        caller: user_of(caller),
        callee: user_of(callee),
        caller_session,
        callee_session,
        audio_only,
        state,
        started_at,
        accepted_at,
        ended_at,
        duration_ms,
        end_reason,
    })
}

/// The columns a new call is inserted with (after SQLite's `tenant_id`), as a literal so that `concat!` can
/// splice it into static SQL; [`bind_new_call!`](crate::bind_new_call) binds them in this order.
#[macro_export]
macro_rules! new_call_columns {
    () => {
        "topic, seq, caller_id, callee_id, caller_session, callee_session, audio_only, state, started_at, ended_at, \
         end_reason"
    };
}

/// Binds a new [`Call`]'s columns in the order of [`new_call_columns!`](crate::new_call_columns), stored as
/// [`created_as`] decided (`$created` is what it returned).
#[macro_export]
macro_rules! bind_new_call {
    ($query:expr, $call:expr, $created:expr) => {{
        let (call, (state, ended_at, reason)) = ($call, $created);
        $query
            .bind(&call.topic)
            .bind(call.seq)
            .bind($crate::columns::user_col(call.caller))
            .bind($crate::columns::user_col(call.callee))
            .bind(&call.caller_session)
            .bind(&call.callee_session)
            .bind(call.audio_only)
            .bind(state.as_str())
            .bind(call.started_at)
            .bind(ended_at)
            .bind(reason)
    }};
}

/// What a new call is stored as: `started`, or when a party is busy `busy` ended at once; the state, the end
/// time and the end reason to bind.
pub fn created_as(call: &Call, busy: bool) -> (CallState, Option<i64>, &'static str) {
    if busy { (CallState::Busy, Some(call.started_at), "busy") } else { (CallState::Started, None, "") }
}

/// A transition of a stored call, written by one conditional `UPDATE` that changes no row when the call's state
/// does not allow it (a late or racing event).
#[derive(Debug, Clone, Copy)]
pub enum Transition<'a> {
    /// The callee answered, from `callee_session`.
    Accept { callee_session: &'a str, at: UnixMillis },
    /// The call ended as `end`, for `reason`.
    End { end: CallEnd, reason: &'a str, at: UnixMillis },
}

impl Transition<'_> {
    /// The `UPDATE` of a call matched by `key` (its key columns, each `= ?`); binds the values of
    /// [`bind_transition!`](crate::bind_transition), then the key. The state words are constants, never user input.
    pub fn statement(&self, key: &str) -> String {
        match self {
            Transition::Accept { .. } => format!(
                "UPDATE im_calls SET state = 'accepted', accepted_at = ?, callee_session = ? \
                 WHERE {key} AND state = 'started'"
            ),
            Transition::End { end, .. } => format!(
                "UPDATE im_calls SET state = ?, ended_at = ?, \
                 duration_ms = CASE WHEN accepted_at IS NULL THEN 0 ELSE ? - accepted_at END, end_reason = ? \
                 WHERE {key} AND {}",
                end_condition(*end)
            ),
        }
    }
}

/// Binds the values a [`Transition::statement`] sets: accepting, the time and the callee's session; ending, the
/// new state, the end time, the end time again (for the duration) and the reason.
#[macro_export]
macro_rules! bind_transition {
    ($query:expr, $transition:expr) => {
        match $transition {
            $crate::calls::Transition::Accept { callee_session, at } => $query.bind(at).bind(callee_session),
            $crate::calls::Transition::End { end, reason, at } => {
                $query.bind(end.state().as_str()).bind(at).bind(at).bind(reason)
            }
        }
    };
}

/// The condition (after `WHERE <key> AND`) under which `end` may be written: the allowed prior states, and for
/// `missed`/`declined` no acceptance.
fn end_condition(end: CallEnd) -> String {
    let states: Vec<String> = end.from_states().iter().map(|s| format!("'{}'", s.as_str())).collect();
    let mut cond = format!("state IN ({})", states.join(", "));
    if end.needs_unanswered() {
        cond.push_str(" AND accepted_at IS NULL");
    }
    cond
}

/// The condition of [`palaver_core::ports::CallStore::live_call_of`] after the party test; binds, in order:
/// `started_since`, `accepted_since`.
pub const LIVE_CONDITION: &str =
    "((state = 'started' AND started_at >= ?) OR (state = 'accepted' AND accepted_at >= ?))";

/// "Either party of the new call is a party of this row"; binds, in order: the caller and the callee, twice.
pub const PARTIES_CONDITION: &str = "(caller_id IN (?, ?) OR callee_id IN (?, ?))";

/// Binds the values of a new call's busy check, `{PARTIES_CONDITION} AND {LIVE_CONDITION}`: the call's parties
/// twice, then `started_since` and `accepted_since`.
#[macro_export]
macro_rules! bind_busy_check {
    ($query:expr, $call:expr, $started_since:expr, $accepted_since:expr) => {{
        let call = $call;
        let (caller, callee) = ($crate::columns::user_col(call.caller), $crate::columns::user_col(call.callee));
        $query.bind(caller).bind(callee).bind(caller).bind(callee).bind($started_since).bind($accepted_since)
    }};
}

/// The condition of [`palaver_core::ports::CallStore::live_calls`]; binds: `since`, `before`.
pub const SWEEP_CONDITION: &str = "state IN ('started', 'accepted') AND started_at >= ? AND started_at < ?";

/// The order of [`palaver_core::ports::CallStore::live_calls`]: oldest first, ties by key.
pub const SWEEP_ORDER: &str = "ORDER BY started_at, topic, seq";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn end_conditions_follow_the_state_machine() {
        assert_eq!(end_condition(CallEnd::Finished), "state IN ('accepted')");
        assert_eq!(end_condition(CallEnd::Missed), "state IN ('started') AND accepted_at IS NULL");
        assert_eq!(end_condition(CallEnd::Declined), "state IN ('started') AND accepted_at IS NULL");
        assert_eq!(end_condition(CallEnd::Disconnected), "state IN ('started', 'accepted')");
    }

    #[test]
    fn transitions_update_only_from_their_states() {
        let accept = Transition::Accept { callee_session: "s", at: 1 }.statement("topic = ? AND seq = ?");
        assert!(accept.ends_with("WHERE topic = ? AND seq = ? AND state = 'started'"), "{accept}");
        let end = Transition::End { end: CallEnd::Finished, reason: "", at: 1 }.statement("seq = ?");
        assert!(end.ends_with("WHERE seq = ? AND state IN ('accepted')"), "{end}");
    }
}
