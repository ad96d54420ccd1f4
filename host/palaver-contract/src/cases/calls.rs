//! Contract cases for the call store: one per rule of the state machine (accept only from started; missed and
//! declined only from started with no acceptance; an accepted call never becomes missed or declined; finished
//! only ends an accepted call; an ended call never changes), racing transitions leave one winner, the live call
//! of a user, a start that finds a party busy (and starts racing for one callee), the sweep's list of live rows,
//! tenant isolation. [`crate::call_contract_tests!`] runs them against any `CallStore` that can be
//! cloned into tasks.

use crate::Fixture;
use palaver_core::ports::{Call, CallEnd, CallState, CallStore};
use palaver_core::{TenantId, UserId};

const TOPIC: &str = "p2pAAAAAAAAAAAAAAAAAAAAAAA";
const T0: i64 = 1_764_000_000_000;

fn call(seq: i64) -> Call {
    Call::started(TOPIC.into(), seq, UserId(1), UserId(2), "node0/11".into(), true, T0)
}

/// Cut-offs under which no stored row counts as live: a start with them is never busy.
const NONE_LIVE: (i64, i64) = (i64::MAX, i64::MAX);

async fn fresh<S: CallStore>(s: &S, tenant: TenantId, seq: i64) -> Call {
    let c = call(seq);
    assert_eq!(s.create_call(tenant, &c, NONE_LIVE.0, NONE_LIVE.1).await.unwrap(), CallState::Started);
    c
}

fn call_between(seq: i64, caller: u64, callee: u64, at: i64) -> Call {
    Call::started(TOPIC.into(), seq, UserId(caller), UserId(callee), format!("node0/{seq}"), false, at)
}

/// A new call reads back as written; a second call with the same topic and seq conflicts.
pub async fn call_create_round_trips<S: CallStore>(f: Fixture<S>) {
    let s = &f.store;
    let c = fresh(s, f.tenant, 5).await;
    assert_eq!(s.get_call(f.tenant, TOPIC, 5).await.unwrap(), Some(c.clone()));
    crate::cases::assert_conflict(s.create_call(f.tenant, &c, NONE_LIVE.0, NONE_LIVE.1).await, "same topic and seq");
    assert_eq!(s.get_call(f.tenant, TOPIC, 6).await.unwrap(), None);
}

/// `accept` moves `started` to `accepted` once, recording the session and time; a second accept is refused.
pub async fn call_accept_only_from_started<S: CallStore>(f: Fixture<S>) {
    let s = &f.store;
    fresh(s, f.tenant, 1).await;
    let a = s.accept_call(f.tenant, TOPIC, 1, "node1/7", T0 + 1_000).await.unwrap().expect("accepted");
    assert_eq!((a.state, a.accepted_at, a.callee_session.as_str()), (CallState::Accepted, Some(T0 + 1_000), "node1/7"));
    assert_eq!(s.accept_call(f.tenant, TOPIC, 1, "node1/8", T0 + 2_000).await.unwrap(), None, "accepted twice");
    assert_eq!(s.get_call(f.tenant, TOPIC, 1).await.unwrap().unwrap().callee_session, "node1/7");
    fresh(s, f.tenant, 2).await;
    s.end_call(f.tenant, TOPIC, 2, CallEnd::Missed, "timeout", T0 + 500).await.unwrap().expect("missed");
    assert_eq!(s.accept_call(f.tenant, TOPIC, 2, "node1/7", T0 + 600).await.unwrap(), None, "accept after missed");
    assert_eq!(s.accept_call(f.tenant, TOPIC, 3, "node1/7", T0).await.unwrap(), None, "no such call");
}

/// `missed` ends a ringing call with no duration; never an accepted one.
pub async fn call_missed_only_unanswered<S: CallStore>(f: Fixture<S>) {
    let s = &f.store;
    fresh(s, f.tenant, 1).await;
    let m = s.end_call(f.tenant, TOPIC, 1, CallEnd::Missed, "timeout", T0 + 30_000).await.unwrap().unwrap();
    assert_eq!(
        (m.state, m.ended_at, m.duration_ms, m.end_reason.as_str()),
        (CallState::Missed, Some(T0 + 30_000), 0, "timeout")
    );
    fresh(s, f.tenant, 2).await;
    s.accept_call(f.tenant, TOPIC, 2, "node1/7", T0 + 1_000).await.unwrap().unwrap();
    assert_eq!(s.end_call(f.tenant, TOPIC, 2, CallEnd::Missed, "timeout", T0 + 30_000).await.unwrap(), None);
    assert_eq!(s.get_call(f.tenant, TOPIC, 2).await.unwrap().unwrap().state, CallState::Accepted);
}

/// `declined` ends a ringing call only; an accepted call is never overwritten by it.
pub async fn call_declined_never_overwrites_accepted<S: CallStore>(f: Fixture<S>) {
    let s = &f.store;
    fresh(s, f.tenant, 1).await;
    s.accept_call(f.tenant, TOPIC, 1, "node1/7", T0 + 1_000).await.unwrap().unwrap();
    assert_eq!(s.end_call(f.tenant, TOPIC, 1, CallEnd::Declined, "hang-up", T0 + 2_000).await.unwrap(), None);
    fresh(s, f.tenant, 2).await;
    let d = s.end_call(f.tenant, TOPIC, 2, CallEnd::Declined, "hang-up", T0 + 2_000).await.unwrap().unwrap();
    assert_eq!((d.state, d.duration_ms), (CallState::Declined, 0));
}

/// `finished` ends an accepted call with its duration from acceptance; it does not end a ringing or ended call.
pub async fn call_finished_only_ends_an_accepted_call<S: CallStore>(f: Fixture<S>) {
    let s = &f.store;
    fresh(s, f.tenant, 1).await;
    assert_eq!(s.end_call(f.tenant, TOPIC, 1, CallEnd::Finished, "hang-up", T0 + 500).await.unwrap(), None, "ringing");
    s.accept_call(f.tenant, TOPIC, 1, "node1/7", T0 + 1_000).await.unwrap().unwrap();
    let fin = s.end_call(f.tenant, TOPIC, 1, CallEnd::Finished, "hang-up", T0 + 61_000).await.unwrap().unwrap();
    assert_eq!((fin.state, fin.duration_ms, fin.ended_at), (CallState::Finished, 60_000, Some(T0 + 61_000)));
    assert_eq!(s.end_call(f.tenant, TOPIC, 1, CallEnd::Finished, "hang-up", T0 + 70_000).await.unwrap(), None);
    let stored = s.get_call(f.tenant, TOPIC, 1).await.unwrap().unwrap();
    assert_eq!((stored.duration_ms, stored.ended_at), (60_000, Some(T0 + 61_000)), "the first end stays");
}

/// `disconnected` ends a ringing or an accepted call (with its duration), never an ended one.
pub async fn call_disconnected_ends_live_calls_only<S: CallStore>(f: Fixture<S>) {
    let s = &f.store;
    fresh(s, f.tenant, 1).await;
    let d = s.end_call(f.tenant, TOPIC, 1, CallEnd::Disconnected, "disconnect", T0 + 10).await.unwrap().unwrap();
    assert_eq!((d.state, d.duration_ms), (CallState::Disconnected, 0));
    fresh(s, f.tenant, 2).await;
    s.accept_call(f.tenant, TOPIC, 2, "node1/7", T0 + 1_000).await.unwrap().unwrap();
    let d = s.end_call(f.tenant, TOPIC, 2, CallEnd::Disconnected, "disconnect", T0 + 4_000).await.unwrap().unwrap();
    assert_eq!((d.state, d.duration_ms), (CallState::Disconnected, 3_000));
    for end in [CallEnd::Finished, CallEnd::Missed, CallEnd::Declined, CallEnd::Disconnected] {
        assert_eq!(s.end_call(f.tenant, TOPIC, 2, end, "late", T0 + 9_000).await.unwrap(), None, "{end:?} after end");
    }
    assert_eq!(s.get_call(f.tenant, TOPIC, 2).await.unwrap().unwrap().state, CallState::Disconnected);
}

/// An accept racing a timeout: exactly one of them takes, and the stored state is the winner's.
pub async fn call_accept_racing_missed_one_wins<S: CallStore + Clone + 'static>(f: Fixture<S>) {
    for seq in 1..=20 {
        fresh(&f.store, f.tenant, seq).await;
        let (a, m) = (f.store.clone(), f.store.clone());
        let t = f.tenant;
        let accept = tokio::spawn(async move { a.accept_call(t, TOPIC, seq, "node1/7", T0 + 5).await.unwrap() });
        let missed =
            tokio::spawn(async move { m.end_call(t, TOPIC, seq, CallEnd::Missed, "timeout", T0 + 5).await.unwrap() });
        let (accepted, missed) = (accept.await.unwrap(), missed.await.unwrap());
        assert!(accepted.is_some() != missed.is_some(), "seq {seq}: exactly one transition takes");
        let stored = f.store.get_call(f.tenant, TOPIC, seq).await.unwrap().unwrap().state;
        let want = if accepted.is_some() { CallState::Accepted } else { CallState::Missed };
        assert_eq!(stored, want, "seq {seq}");
    }
}

/// The live call of either party; ended calls and stale live rows do not count.
pub async fn call_live_call_of_a_party<S: CallStore>(f: Fixture<S>) {
    let s = &f.store;
    assert_eq!(s.live_call_of(f.tenant, UserId(2), T0, T0).await.unwrap(), None);
    fresh(s, f.tenant, 1).await;
    assert_eq!(s.live_call_of(f.tenant, UserId(1), T0, T0).await.unwrap().unwrap().seq, 1, "the caller");
    assert_eq!(s.live_call_of(f.tenant, UserId(2), T0, T0).await.unwrap().unwrap().seq, 1, "the callee");
    assert_eq!(s.live_call_of(f.tenant, UserId(3), T0, T0).await.unwrap(), None, "not a party");
    assert_eq!(s.live_call_of(f.tenant, UserId(2), T0 + 1, T0).await.unwrap(), None, "rang too long ago");
    s.accept_call(f.tenant, TOPIC, 1, "node1/7", T0 + 1_000).await.unwrap().unwrap();
    assert!(s.live_call_of(f.tenant, UserId(2), T0 + 5_000, T0 + 1_000).await.unwrap().is_some(), "accepted");
    assert_eq!(s.live_call_of(f.tenant, UserId(2), T0, T0 + 1_001).await.unwrap(), None, "accepted too long ago");
    s.end_call(f.tenant, TOPIC, 1, CallEnd::Finished, "hang-up", T0 + 2_000).await.unwrap().unwrap();
    assert_eq!(s.live_call_of(f.tenant, UserId(2), T0, T0).await.unwrap(), None, "ended");
}

/// A start while either party is in a live call is stored `busy`, ended at once; a stale live row (older than
/// the cut-offs) and an ended call do not make anyone busy.
pub async fn call_create_is_busy_when_a_party_is_live<S: CallStore>(f: Fixture<S>) {
    let (s, t) = (&f.store, f.tenant);
    assert_eq!(s.create_call(t, &call_between(1, 1, 2, T0), T0, T0).await.unwrap(), CallState::Started);
    // User 2 is ringing: a call from 3 to 2, and one from 2 to 4, find 2 busy.
    for (seq, caller, callee) in [(2, 3, 2), (3, 2, 4)] {
        let state = s.create_call(t, &call_between(seq, caller, callee, T0 + 10), T0, T0).await.unwrap();
        assert_eq!(state, CallState::Busy, "seq {seq}");
        let stored = s.get_call(t, TOPIC, seq).await.unwrap().unwrap();
        assert_eq!(
            (stored.state, stored.ended_at, stored.duration_ms, stored.end_reason.as_str()),
            (CallState::Busy, Some(T0 + 10), 0, "busy"),
            "seq {seq}"
        );
        assert!(!stored.state.is_live());
    }
    assert_eq!(s.live_call_of(t, UserId(3), T0, T0).await.unwrap(), None, "a busy call ties nobody up");
    // Third parties are free; a ringing row older than the cut-off no longer counts.
    assert_eq!(s.create_call(t, &call_between(4, 3, 4, T0 + 20), T0, T0).await.unwrap(), CallState::Started);
    assert_eq!(s.create_call(t, &call_between(5, 5, 2, T0 + 30), T0 + 1, T0).await.unwrap(), CallState::Started);
    // Accepted calls count from their acceptance.
    s.accept_call(t, TOPIC, 5, "node1/5", T0 + 40).await.unwrap().unwrap();
    assert_eq!(s.create_call(t, &call_between(6, 6, 5, T0 + 50), T0 + 1, T0 + 40).await.unwrap(), CallState::Busy);
    assert_eq!(s.create_call(t, &call_between(7, 6, 5, T0 + 50), T0 + 1, T0 + 41).await.unwrap(), CallState::Started);
    s.end_call(t, TOPIC, 7, CallEnd::Missed, "timeout", T0 + 60).await.unwrap().unwrap();
    s.end_call(t, TOPIC, 5, CallEnd::Finished, "hang-up", T0 + 60).await.unwrap().unwrap();
    assert_eq!(s.create_call(t, &call_between(8, 6, 5, T0 + 70), T0, T0).await.unwrap(), CallState::Started, "ended");
}

/// Starts racing for one callee: exactly one rings, every other is stored `busy`.
pub async fn call_starts_racing_for_one_callee_ring_once<S: CallStore + Clone + 'static>(f: Fixture<S>) {
    for round in 0..5_i64 {
        let callee = 1_000 + round as u64;
        let starts: Vec<_> = (0..6_i64)
            .map(|i| {
                let (s, t) = (f.store.clone(), f.tenant);
                let c = call_between(round * 100 + i, 2_000 + i as u64, callee, T0 + round);
                tokio::spawn(async move { s.create_call(t, &c, T0, T0).await.unwrap() })
            })
            .collect();
        let mut states = Vec::new();
        for start in starts {
            states.push(start.await.unwrap());
        }
        let ringing = states.iter().filter(|s| **s == CallState::Started).count();
        assert_eq!(ringing, 1, "round {round}: {states:?}");
        assert_eq!(states.len() - ringing, states.iter().filter(|s| **s == CallState::Busy).count());
    }
}

/// The sweep's list: live rows that started before the bound, oldest first, at most the limit; ended rows and
/// younger ones are left out.
pub async fn call_live_calls_list_the_oldest_live_rows<S: CallStore>(f: Fixture<S>) {
    let (s, t) = (&f.store, f.tenant);
    for (seq, at) in [(1, T0 + 300), (2, T0 + 100), (3, T0 + 200), (4, T0 + 400), (5, T0 + 50)] {
        s.create_call(t, &call_between(seq, 10 + seq as u64, 20 + seq as u64, at), NONE_LIVE.0, NONE_LIVE.1)
            .await
            .unwrap();
    }
    s.accept_call(t, TOPIC, 3, "node1/3", T0 + 250).await.unwrap().unwrap();
    s.end_call(t, TOPIC, 5, CallEnd::Missed, "timeout", T0 + 60).await.unwrap().unwrap();
    let seqs = |calls: Vec<Call>| calls.into_iter().map(|c| c.seq).collect::<Vec<_>>();
    assert_eq!(
        seqs(s.live_calls(t, i64::MIN, T0 + 400, 10).await.unwrap()),
        [2, 3, 1],
        "oldest first, T0+400 excluded"
    );
    assert_eq!(seqs(s.live_calls(t, i64::MIN, T0 + 1_000, 2).await.unwrap()), [2, 3], "the limit");
    assert_eq!(s.live_calls(t, i64::MIN, T0 + 100, 10).await.unwrap(), Vec::new());
    assert_eq!(seqs(s.live_calls(t, T0 + 200, T0 + 1_000, 10).await.unwrap()), [3, 1, 4], "a page from `since` on");
    assert_eq!(s.live_calls(f.other_tenant, i64::MIN, T0 + 1_000, 10).await.unwrap(), Vec::new(), "another tenant");
}

/// One tenant's calls are not another's.
pub async fn call_tenants_are_isolated<S: CallStore>(f: Fixture<S>) {
    let s = &f.store;
    fresh(s, f.tenant, 1).await;
    assert_eq!(s.get_call(f.other_tenant, TOPIC, 1).await.unwrap(), None);
    assert_eq!(s.accept_call(f.other_tenant, TOPIC, 1, "node1/7", T0).await.unwrap(), None);
    assert_eq!(s.end_call(f.other_tenant, TOPIC, 1, CallEnd::Missed, "timeout", T0).await.unwrap(), None);
    assert_eq!(s.live_call_of(f.other_tenant, UserId(1), T0, T0).await.unwrap(), None);
    fresh(s, f.other_tenant, 1).await;
    assert_eq!(s.get_call(f.tenant, TOPIC, 1).await.unwrap().unwrap().state, CallState::Started);
}
