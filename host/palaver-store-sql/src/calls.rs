//! The call table's shared parts: the columns both adapters select, how a row becomes a [`Call`], and the
//! `WHERE` clause each transition's conditional update carries, so SQLite and MariaDB enforce the same state
//! machine word for word.

use crate::columns::{CorruptRow, user_of};
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

/// The condition (after `WHERE <key> AND`) under which `end` may be written: the allowed prior states, and for
/// `missed`/`declined` no acceptance. The state words are constants, never user input.
pub fn end_condition(end: CallEnd) -> String {
    let states: Vec<String> = end.from_states().iter().map(|s| format!("'{}'", s.as_str())).collect();
    let mut cond = format!("state IN ({})", states.join(", "));
    if end.needs_unanswered() {
        cond.push_str(" AND accepted_at IS NULL");
    }
    cond
}

/// The `SET` list of an ending update; binds, in order: the new state, the end time, the end time again (for
/// the duration), the reason.
pub const END_SET: &str = "state = ?, ended_at = ?, \
                           duration_ms = CASE WHEN accepted_at IS NULL THEN 0 ELSE ? - accepted_at END, end_reason = ?";

/// The condition of [`palaver_core::ports::CallStore::live_call_of`] after the party test; binds, in order:
/// `started_since`, `accepted_since`.
pub const LIVE_CONDITION: &str =
    "((state = 'started' AND started_at >= ?) OR (state = 'accepted' AND accepted_at >= ?))";

/// "Either party of the new call is a party of this row"; binds, in order: the caller and the callee, twice.
pub const PARTIES_CONDITION: &str = "(caller_id IN (?, ?) OR callee_id IN (?, ?))";

/// The condition of [`palaver_core::ports::CallStore::live_calls`]; binds: `since`, `before`.
pub const SWEEP_CONDITION: &str = "state IN ('started', 'accepted') AND started_at >= ? AND started_at < ?";

/// The order of [`palaver_core::ports::CallStore::live_calls`]: oldest first, ties by key.
pub const SWEEP_ORDER: &str = "ORDER BY started_at, topic, seq";

/// What a new call is stored as: `started`, or when a party is busy `busy` ended at once; the state, the end
/// time and the end reason to bind.
pub fn created_as(call: &Call, busy: bool) -> (CallState, Option<i64>, &'static str) {
    if busy { (CallState::Busy, Some(call.started_at), "busy") } else { (CallState::Started, None, "") }
}

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
}
