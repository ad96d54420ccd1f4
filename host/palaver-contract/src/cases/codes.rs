//! The one-time code store's contract: a code is consumed once, wrong tries wear it out, it expires, a send
//! counter limits an address per hour, and tenants never see each other's codes. Each case takes a fresh store.

use palaver_core::TenantId;
use palaver_core::ports::{CodeStore, Issued, Redeemed};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const T: TenantId = TenantId(1);
const OTHER: TenantId = TenantId(2);
const HOUR: u64 = 3_600_000;

/// A key no other case, nor another run on the same server, uses.
fn key(name: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    format!("{name}-{}-{nanos}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

pub async fn codes_are_consumed_once(store: Arc<dyn CodeStore>) {
    let (code, limit) = (key("code"), key("limit"));
    assert_eq!(store.issue(T, &code, &limit, "h1", 60_000, 5).await.unwrap(), Issued::Stored);
    assert_eq!(store.redeem(OTHER, &code, "h1", 3).await.unwrap(), Redeemed::Missing, "another tenant's key");
    assert_eq!(store.redeem(T, &code, "h1", 3).await.unwrap(), Redeemed::Accepted);
    assert_eq!(store.redeem(T, &code, "h1", 3).await.unwrap(), Redeemed::Missing, "consumed");
    assert_eq!(store.redeem(T, &key("never"), "h1", 3).await.unwrap(), Redeemed::Missing);
}

pub async fn wrong_tries_wear_a_code_out(store: Arc<dyn CodeStore>) {
    let (code, limit) = (key("code"), key("limit"));
    store.issue(T, &code, &limit, "right", 60_000, 5).await.unwrap();
    assert_eq!(store.redeem(T, &code, "wrong", 3).await.unwrap(), Redeemed::Wrong { attempts_left: 2 });
    assert_eq!(store.redeem(T, &code, "wrong", 3).await.unwrap(), Redeemed::Wrong { attempts_left: 1 });
    assert_eq!(store.redeem(T, &code, "wrong", 3).await.unwrap(), Redeemed::Wrong { attempts_left: 0 });
    assert_eq!(store.redeem(T, &code, "right", 3).await.unwrap(), Redeemed::Missing, "void after the last miss");
    // A new code starts its tries again.
    store.issue(T, &code, &limit, "next", 60_000, 5).await.unwrap();
    assert_eq!(store.redeem(T, &code, "wrong", 3).await.unwrap(), Redeemed::Wrong { attempts_left: 2 });
    assert_eq!(store.redeem(T, &code, "next", 3).await.unwrap(), Redeemed::Accepted);
}

pub async fn a_new_code_replaces_the_old(store: Arc<dyn CodeStore>) {
    let (code, limit) = (key("code"), key("limit"));
    store.issue(T, &code, &limit, "first", 60_000, 5).await.unwrap();
    store.issue(T, &code, &limit, "second", 60_000, 5).await.unwrap();
    assert_eq!(store.redeem(T, &code, "first", 3).await.unwrap(), Redeemed::Wrong { attempts_left: 2 });
    assert_eq!(store.redeem(T, &code, "second", 3).await.unwrap(), Redeemed::Accepted);
}

pub async fn codes_expire(store: Arc<dyn CodeStore>) {
    let (code, limit) = (key("code"), key("limit"));
    store.issue(T, &code, &limit, "h", 150, 5).await.unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(store.redeem(T, &code, "h", 3).await.unwrap(), Redeemed::Missing);
}

pub async fn sends_are_limited_per_hour(store: Arc<dyn CodeStore>) {
    let limit = key("limit");
    for i in 0..3 {
        let issued = store.issue(T, &key("code"), &limit, "h", 60_000, 3).await.unwrap();
        assert_eq!(issued, Issued::Stored, "send {i}");
    }
    let code = key("code");
    match store.issue(T, &code, &limit, "h", 60_000, 3).await.unwrap() {
        Issued::Limited { retry_after_ms } => assert!((HOUR - 60_000..=HOUR).contains(&retry_after_ms)),
        other => panic!("the fourth send is refused, not {other:?}"),
    }
    assert_eq!(store.redeem(T, &code, "h", 3).await.unwrap(), Redeemed::Missing, "a refused send stores nothing");
    // The counter is the tenant's own, and another key's counter is apart.
    assert_eq!(store.issue(OTHER, &key("code"), &limit, "h", 60_000, 3).await.unwrap(), Issued::Stored);
    assert_eq!(store.issue(T, &key("code"), &key("limit"), "h", 60_000, 3).await.unwrap(), Issued::Stored);
}

pub async fn one_of_two_concurrent_redeems_wins(store: Arc<dyn CodeStore>) {
    for _ in 0..20 {
        let (code, limit) = (key("code"), key("limit"));
        store.issue(T, &code, &limit, "h", 60_000, 100).await.unwrap();
        let (a, b) = tokio::join!(store.redeem(T, &code, "h", 3), store.redeem(T, &code, "h", 3));
        let accepted = [a.unwrap(), b.unwrap()].iter().filter(|r| **r == Redeemed::Accepted).count();
        assert_eq!(accepted, 1);
    }
}
