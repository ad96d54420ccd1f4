//! Tenant pools: opened on first use, closed (connections and all) when idle, and capped in number.

mod common;

use common::Scratch;
use palaver_core::ports::{TenantStore, UserStore};
use palaver_core::{StoreError, UserId};
use palaver_store_mysql::{MysqlConfig, MysqlStore};
use std::time::{Duration, Instant};

/// Polls `check` until it holds, failing after five seconds.
async fn eventually(what: &str, mut check: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// How many server connections have `database` as their current database.
async fn connections_to(store: &MysqlStore, database: &str) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = ?")
        .bind(database)
        .fetch_one(store.control_pool())
        .await
        .unwrap()
}

fn short_idle(scratch: &Scratch) -> MysqlConfig {
    MysqlConfig { idle_pool_timeout: Duration::from_millis(300), ..scratch.config() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pools_open_lazily_and_close_when_idle() {
    if common::skip() {
        return;
    }
    let scratch = Scratch::new();
    let store = scratch.store_with(short_idle(&scratch)).await;
    let a = store.create_tenant("a", "A").await.unwrap();
    let b = store.create_tenant("b", "B").await.unwrap();
    assert_eq!(store.open_tenant_pools(), 0, "creating a tenant opens no pool");
    assert_eq!(connections_to(&store, &a.database).await, 0);

    assert_eq!(store.get_user(a.id, UserId(1)).await.unwrap(), None);
    assert_eq!(store.open_tenant_pools(), 1, "the first call opens the tenant's pool");
    assert!(connections_to(&store, &a.database).await >= 1);
    store.get_user(b.id, UserId(1)).await.unwrap();
    store.get_user(a.id, UserId(1)).await.unwrap();
    assert_eq!(store.open_tenant_pools(), 2, "one pool per tenant, reused");

    eventually("idle pools to close", async || store.open_tenant_pools() == 0).await;
    eventually("their connections to end", async || connections_to(&store, &a.database).await == 0).await;
    assert_eq!(connections_to(&store, &b.database).await, 0);

    assert_eq!(store.get_user(a.id, UserId(1)).await.unwrap(), None, "a closed pool reopens on demand");
    assert_eq!(store.open_tenant_pools(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_pools_stay_open() {
    if common::skip() {
        return;
    }
    let scratch = Scratch::new();
    let store = scratch.store_with(short_idle(&scratch)).await;
    let a = store.create_tenant("a", "A").await.unwrap();
    let started = Instant::now();
    while started.elapsed() < Duration::from_millis(900) {
        store.get_user(a.id, UserId(1)).await.unwrap();
        assert_eq!(store.open_tenant_pools(), 1, "a pool used more often than its idle timeout stays open");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_number_of_open_pools_is_capped() {
    if common::skip() {
        return;
    }
    let scratch = Scratch::new();
    let store = scratch.store_with(MysqlConfig { max_tenant_pools: 2, ..scratch.config() }).await;
    let mut ids = Vec::new();
    for code in ["a", "b", "c", "d"] {
        ids.push(store.create_tenant(code, code).await.unwrap().id);
    }
    for round in 0..3 {
        for id in &ids {
            assert_eq!(store.get_user(*id, UserId(1)).await, Ok(None), "round {round}");
            assert!(store.open_tenant_pools() <= 2);
        }
    }
    eventually("evicted pools to close their connections", async || {
        let mut open = 0;
        for code in ["a", "b", "c", "d"] {
            open += i64::from(connections_to(&store, &format!("{}t_{code}", scratch.prefix)).await > 0);
        }
        open <= 2
    })
    .await;
    assert_eq!(store.get_user(palaver_core::TenantId(999), UserId(1)).await, Err(StoreError::NotFound));
}
