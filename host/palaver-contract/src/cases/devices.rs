//! Contract cases for the device store: every field round trips, a device is replaced by its id, a token moves
//! to its newest user, deletes report what they did, tenants are isolated. [`crate::device_contract_tests!`] runs
//! them against any `DeviceStore`.

use crate::Fixture;
use palaver_core::UserId;
use palaver_core::ports::{Device, DeviceStore};

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
