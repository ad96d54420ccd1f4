//! Contract cases for the device store: every field round trips, a device is replaced by its id, a token moves
//! to its newest user, deletes report what they did, tenants are isolated; delayed pushes are claimed once when
//! due. [`crate::device_contract_tests!`] runs
//! them against any `DeviceStore`.

use crate::Fixture;
use palaver_core::UserId;
use palaver_core::ports::{DelayedPush, Device, DeviceStore, PushMessage, PushTask};

fn device(user: u64, id: &str, token: &str) -> Device {
    Device {
        user: UserId(user),
        device_id: id.to_owned(),
        platform: "android".into(),
        provider: "fcm".into(),
        token: token.to_owned(),
        app: "app/1.0; tinodejs/0.25".into(),
        language: "en-US".into(),
        last_seen: 1_764_000_000_123,
    }
}

/// Every field reads back as written, in device id order; an upsert of the same id replaces the row.
pub async fn device_upsert_round_trips<S: DeviceStore>(f: Fixture<S>) {
    let s = &f.store;
    let a = device(1, "b-dev", "tok-b");
    let b = Device {
        platform: "ios".into(),
        provider: "apns".into(),
        language: String::new(),
        ..device(1, "a-dev", "tok-a")
    };
    s.upsert_device(f.tenant, &a).await.unwrap();
    s.upsert_device(f.tenant, &b).await.unwrap();
    assert_eq!(s.list_devices(f.tenant, UserId(1)).await.unwrap(), [b.clone(), a.clone()]);
    let renewed = Device { last_seen: a.last_seen + 5, language: "de".into(), ..a.clone() };
    s.upsert_device(f.tenant, &renewed).await.unwrap();
    assert_eq!(s.list_devices(f.tenant, UserId(1)).await.unwrap(), [b, renewed]);
    assert_eq!(s.count_devices(f.tenant, UserId(1)).await.unwrap(), 2);
    assert!(s.list_devices(f.tenant, UserId(2)).await.unwrap().is_empty());
}

/// A device id registered by another user moves to that user: one token never reaches two accounts.
pub async fn device_moves_to_its_newest_user<S: DeviceStore>(f: Fixture<S>) {
    let s = &f.store;
    s.upsert_device(f.tenant, &device(1, "same", "tok")).await.unwrap();
    s.upsert_device(f.tenant, &device(2, "same", "tok")).await.unwrap();
    assert!(s.list_devices(f.tenant, UserId(1)).await.unwrap().is_empty());
    assert_eq!(s.list_devices(f.tenant, UserId(2)).await.unwrap(), [device(2, "same", "tok")]);
}

/// A delete removes only the user's own device and says whether it existed.
pub async fn device_delete_reports_and_removes<S: DeviceStore>(f: Fixture<S>) {
    let s = &f.store;
    s.upsert_device(f.tenant, &device(1, "d1", "t1")).await.unwrap();
    s.upsert_device(f.tenant, &device(1, "d2", "t2")).await.unwrap();
    assert!(!s.delete_device(f.tenant, UserId(2), "d1").await.unwrap(), "another user's device is not theirs");
    assert!(s.delete_device(f.tenant, UserId(1), "d1").await.unwrap());
    assert!(!s.delete_device(f.tenant, UserId(1), "d1").await.unwrap());
    assert_eq!(s.list_devices(f.tenant, UserId(1)).await.unwrap(), [device(1, "d2", "t2")]);
    assert_eq!(s.count_devices(f.tenant, UserId(1)).await.unwrap(), 1);
}

/// One tenant's devices are not another's.
pub async fn device_tenants_are_isolated<S: DeviceStore>(f: Fixture<S>) {
    let s = &f.store;
    s.upsert_device(f.tenant, &device(1, "d", "mine")).await.unwrap();
    s.upsert_device(f.other_tenant, &device(1, "d", "theirs")).await.unwrap();
    assert_eq!(s.list_devices(f.tenant, UserId(1)).await.unwrap()[0].token, "mine");
    assert_eq!(s.list_devices(f.other_tenant, UserId(1)).await.unwrap()[0].token, "theirs");
    assert!(s.delete_device(f.other_tenant, UserId(1), "d").await.unwrap());
    assert_eq!(s.count_devices(f.tenant, UserId(1)).await.unwrap(), 1);
}

/// A delayed push for `recipient` about message `seq`, as the worker stores it.
fn delayed(seq: i64, recipient: u64) -> DelayedPush {
    let task = PushTask {
        tenant: palaver_core::TenantId(1),
        topic: "grpDelayed".into(),
        seq,
        from: UserId(9),
        ts: 1_764_000_000_000 + seq,
        what: "msg".into(),
        mime: Some("text/plain".into()),
        webrtc: None,
        preview: Some(format!("message {seq}")),
        attached: vec![UserId(3)],
        sender_device: None,
        head: None,
        mentions: Vec::new(),
        to: None,
    };
    let mut data = std::collections::BTreeMap::new();
    data.insert("seq".to_owned(), seq.to_string());
    let message = PushMessage { data, silent: false, body: format!("rewritten {seq}") };
    DelayedPush { task, recipient: UserId(recipient), message }
}

const T0: i64 = 1_764_000_000_000;

/// Delayed pushes wait until due, come out oldest due first and whole, are held by one claim until its lease
/// ends (then handed out again), and are gone once removed; tenants are apart.
pub async fn device_delayed_pushes_are_claimed_once_when_due<S: DeviceStore>(f: Fixture<S>) {
    let (s, t) = (&f.store, f.tenant);
    assert_eq!(s.count_delayed(t).await.unwrap(), 0);
    for (seq, due) in [(1, T0 + 300), (2, T0 + 100), (3, T0 + 200), (4, T0 + 10_000)] {
        s.put_delayed(t, due, &delayed(seq, 7)).await.unwrap();
    }
    assert_eq!(s.count_delayed(t).await.unwrap(), 4);
    assert_eq!(s.count_delayed(f.other_tenant).await.unwrap(), 0, "another tenant");
    assert!(s.claim_delayed(t, "n1", T0 + 50, 1_000, 10).await.unwrap().is_empty(), "nothing due yet");
    let first = s.claim_delayed(t, "n1", T0 + 250, 1_000, 10).await.unwrap();
    let seqs: Vec<i64> = first.iter().map(|(_, p)| p.task.seq).collect();
    assert_eq!(seqs, [2, 3], "the due ones, oldest due first");
    assert_eq!(first[0].1, delayed(2, 7), "the push reads back whole");
    // Held by n1's claim: n2 gets only what fell due since, until the lease ends.
    let second = s.claim_delayed(t, "n2", T0 + 400, 1_000, 10).await.unwrap();
    assert_eq!(second.iter().map(|(_, p)| p.task.seq).collect::<Vec<_>>(), [1]);
    assert!(s.claim_delayed(f.other_tenant, "n2", T0 + 400, 1_000, 10).await.unwrap().is_empty());
    s.remove_delayed(t, &[first[0].0]).await.unwrap();
    // n1 died holding seq 3: after its lease another claim gets it (with the limit respected).
    let again = s.claim_delayed(t, "n2", T0 + 250 + 1_000, 1_000, 1).await.unwrap();
    assert_eq!(again.iter().map(|(_, p)| p.task.seq).collect::<Vec<_>>(), [3]);
    s.remove_delayed(t, &[again[0].0, second[0].0, 999_999]).await.unwrap();
    assert_eq!(s.count_delayed(t).await.unwrap(), 1, "only the one due later is left");
    assert!(s.claim_delayed(t, "n3", T0 + 5_000, 1_000, 10).await.unwrap().is_empty());
}
