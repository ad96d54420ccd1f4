//! Contract cases for the admin command ledger and abuse reports: a claim runs a command once (also under a race
//! and across nodes), a final command is `Done` with its result, a dead node's claim is taken over after the
//! lease, a released claim is taken at once, a result is made final once; reports are paged newest first and
//! resolved once. [`crate::command_contract_tests!`] runs them against any `CommandStore + ReportStore`.

use super::{assert_conflict, assert_not_found};
use crate::data::T0;
use crate::{CommandStorage, Fixture};
use palaver_core::UserId;
use palaver_core::ports::{
    Claim, CommandEnd, CommandStatus, NewReport, QueueRecord, QueueTopic, ReportTarget, Resolution,
};
use serde_json::json;

const LEASE: i64 = 60_000;

fn end<'a>(
    kind: &'a str,
    status: CommandStatus,
    result: &'a serde_json::Value,
    records: &'a [QueueRecord],
    now: i64,
) -> CommandEnd<'a> {
    CommandEnd { kind, status, result, records, now }
}

fn result_record(id: &str) -> QueueRecord {
    QueueRecord::new(QueueTopic::AdminResult, format!("1:{id}"), json!({ "command_id": id }).to_string().into_bytes())
}

/// A first claim runs, a second on another node is busy, the same node may run it again (a retry), and once
/// final every claim is `Done` with the stored result and status.
pub async fn command_claim_runs_once_then_done<S: CommandStorage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    assert_eq!(s.claim(t, "c1", "user.disable", "n1", T0, LEASE).await.unwrap(), Claim::Run { attempt: 1 });
    assert_eq!(s.claim(t, "c1", "user.disable", "n2", T0 + 1, LEASE).await.unwrap(), Claim::Busy { node: "n1".into() });
    assert_eq!(s.claim(t, "c1", "user.disable", "n1", T0 + 2, LEASE).await.unwrap(), Claim::Run { attempt: 2 });
    let result = json!({ "command_id": "c1", "status": "succeeded" });
    let records = [result_record("c1")];
    let first = end("user.disable", CommandStatus::Succeeded, &result, &records, T0 + 3);
    assert!(s.finish(t, "c1", &first).await.unwrap(), "the first finish makes it final");
    let again = s.finish(t, "c1", &end("user.disable", CommandStatus::Failed, &json!({}), &[], T0 + 4)).await.unwrap();
    assert!(!again, "a second finish writes nothing");
    for node in ["n1", "n2"] {
        match s.claim(t, "c1", "user.disable", node, T0 + 5, LEASE).await.unwrap() {
            Claim::Done(row) => {
                assert_eq!(row.status, CommandStatus::Succeeded);
                assert_eq!(row.result, Some(result.clone()), "the first result is kept");
                assert_eq!(row.kind, "user.disable");
                assert_eq!(row.attempts, 2);
            }
            other => panic!("a final command is Done, got {other:?}"),
        }
    }
    let row = s.get_command(t, "c1").await.unwrap().unwrap();
    assert_eq!((row.status, row.command_id.as_str()), (CommandStatus::Succeeded, "c1"));
    assert_eq!(s.get_command(t, "nope").await.unwrap(), None);
}

/// A claim older than the lease (its node died) is taken over; a released claim is taken at once by any node.
pub async fn command_lease_and_release_hand_over<S: CommandStorage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    assert_eq!(s.claim(t, "c2", "group.delete", "n1", T0, LEASE).await.unwrap(), Claim::Run { attempt: 1 });
    let later = T0 + LEASE + 1;
    assert_eq!(s.claim(t, "c2", "group.delete", "n2", later, LEASE).await.unwrap(), Claim::Run { attempt: 2 });
    // n1 comes back: its release must not take n2's claim away.
    s.release(t, "c2", "n1", later + 1).await.unwrap();
    assert_eq!(
        s.claim(t, "c2", "group.delete", "n3", later + 2, LEASE).await.unwrap(),
        Claim::Busy { node: "n2".into() }
    );
    s.release(t, "c2", "n2", later + 3).await.unwrap();
    assert_eq!(s.claim(t, "c2", "group.delete", "n3", later + 4, LEASE).await.unwrap(), Claim::Run { attempt: 3 });
}

/// A command rejected before any claim is stored final by `finish`, and is `Done` afterwards.
pub async fn command_finish_without_claim_is_final<S: CommandStorage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    let result = json!({ "status": "rejected", "reason": "UNKNOWN_TYPE" });
    assert!(s.finish(t, "c3", &end("nope.nope", CommandStatus::Rejected, &result, &[], T0)).await.unwrap());
    match s.claim(t, "c3", "nope.nope", "n1", T0 + 1, LEASE).await.unwrap() {
        Claim::Done(row) => assert_eq!((row.status, row.result), (CommandStatus::Rejected, Some(result))),
        other => panic!("expected Done, got {other:?}"),
    }
}

/// Of many racing claims of one id on different nodes exactly one runs it; the others are busy.
pub async fn command_concurrent_claims_one_runs<S: CommandStorage>(fx: Fixture<S>) {
    let t = fx.tenant;
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let s = fx.store.clone();
            tokio::spawn(async move { s.claim(t, "race", "user.enable", &format!("n{i}"), T0, LEASE).await.unwrap() })
        })
        .collect();
    let mut runs = 0;
    for task in tasks {
        match task.await.unwrap() {
            Claim::Run { attempt } => {
                assert_eq!(attempt, 1);
                runs += 1;
            }
            Claim::Busy { .. } => {}
            Claim::Done(row) => panic!("nothing finished it: {row:?}"),
        }
    }
    assert_eq!(runs, 1, "exactly one claim runs the command");
}

/// Command ids and reports of one tenant are invisible to another.
pub async fn command_tenants_are_isolated<S: CommandStorage>(fx: Fixture<S>) {
    let (s, t, o) = (&fx.store, fx.tenant, fx.other_tenant);
    assert_eq!(s.claim(t, "same", "user.disable", "n1", T0, LEASE).await.unwrap(), Claim::Run { attempt: 1 });
    assert_eq!(s.claim(o, "same", "user.disable", "n2", T0, LEASE).await.unwrap(), Claim::Run { attempt: 1 });
    let empty = json!({});
    assert!(s.finish(t, "same", &end("user.disable", CommandStatus::Succeeded, &empty, &[], T0)).await.unwrap());
    assert_eq!(s.get_command(o, "same").await.unwrap().unwrap().status, CommandStatus::Running);
    let r = s.add_report(t, &report(UserId(1), "spam"), &[], T0).await.unwrap();
    assert_eq!(s.get_report(o, r.id).await.unwrap(), None);
    assert!(s.list_reports(o, false, None, 10).await.unwrap().is_empty());
    assert_not_found(s.resolve_report(o, r.id, &resolution(T0), &[]).await, "another tenant's report");
}

fn report(reporter: UserId, reason: &str) -> NewReport {
    NewReport {
        reporter,
        target_type: ReportTarget::Message,
        target: "grpAbCdEfGhIjK:7".into(),
        reason: reason.into(),
        note: Some("see seq 7".into()),
    }
}

fn resolution(at: i64) -> Resolution {
    Resolution { resolution: "actioned".into(), note: Some("removed".into()), by: "admin:ops".into(), at }
}

/// Reports come back as filed, newest first, paged by id, filtered to the open ones, and counted per reporter.
pub async fn report_add_list_count<S: CommandStorage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    let a = s.add_report(t, &report(UserId(1), "spam"), &[], T0).await.unwrap();
    let b = s.add_report(t, &report(UserId(1), "abuse"), &[], T0 + 10).await.unwrap();
    let c = s.add_report(t, &report(UserId(2), "other"), &[], T0 + 20).await.unwrap();
    assert!(a.id < b.id && b.id < c.id, "ids rise");
    assert_eq!(s.get_report(t, b.id).await.unwrap(), Some(b.clone()), "stored as returned");
    assert_eq!(b.note.as_deref(), Some("see seq 7"));
    let all = s.list_reports(t, false, None, 10).await.unwrap();
    assert_eq!(all.iter().map(|r| r.id).collect::<Vec<_>>(), vec![c.id, b.id, a.id]);
    let page = s.list_reports(t, false, Some(c.id), 1).await.unwrap();
    assert_eq!(page, vec![b.clone()]);
    assert_eq!(s.count_reports_since(t, UserId(1), T0).await.unwrap(), 2);
    assert_eq!(s.count_reports_since(t, UserId(1), T0 + 5).await.unwrap(), 1);
    s.resolve_report(t, b.id, &resolution(T0 + 30), &[]).await.unwrap();
    let open = s.list_reports(t, true, None, 10).await.unwrap();
    assert_eq!(open.iter().map(|r| r.id).collect::<Vec<_>>(), vec![c.id, a.id]);
}

/// A report is resolved once: the resolution is stored, a second resolve is `Conflict`, also under a race.
pub async fn report_resolved_once<S: CommandStorage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    let r = s.add_report(t, &report(UserId(3), "spam"), &[], T0).await.unwrap();
    let tasks: Vec<_> = (0..6)
        .map(|i| {
            let s = fx.store.clone();
            tokio::spawn(async move { s.resolve_report(t, r.id, &resolution(T0 + i), &[]).await })
        })
        .collect();
    let mut wins = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(done) => {
                wins += 1;
                assert!(done.resolved.is_some());
            }
            other => assert_conflict(other, "a second resolution"),
        }
    }
    assert_eq!(wins, 1, "one resolution wins");
    let stored = s.get_report(t, r.id).await.unwrap().unwrap().resolved.unwrap();
    assert_eq!((stored.resolution.as_str(), stored.by.as_str()), ("actioned", "admin:ops"));
    assert_not_found(s.resolve_report(t, 999_999, &resolution(T0), &[]).await, "an unknown report");
}
