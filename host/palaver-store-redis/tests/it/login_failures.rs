//! The failed-login counters against a real Redis: backoff from the limit, per tenant, and no login or address
//! in any key.

use crate as common;
use palaver_core::TenantId;
use palaver_store_redis::RedisLoginFailures;

const T: TenantId = TenantId(7);

#[tokio::test]
async fn login_failures_back_off_from_the_limit_and_hold_no_login_in_clear() {
    use palaver_core::ports::{Backoff, LoginFailureStore};
    let Some(client) = common::client("short-login-fail").await else { return };
    let s = RedisLoginFailures::new(client.clone());
    let b = Backoff { limit: 3, first_ms: 1000, max_ms: 4000, forget_ms: 60_000 };
    let now = 1_700_000_000_000_i64;
    let key = "login:alice@example.com";
    for _ in 0..2 {
        s.record_failure(T, &[(key, b)], now).await.unwrap();
    }
    assert_eq!(s.blocked_until(T, &[key], now).await.unwrap(), None, "below the limit");
    s.record_failure(T, &[(key, b), ("addr:192.0.2.1", b)], now).await.unwrap();
    assert_eq!(s.blocked_until(T, &[key], now).await.unwrap(), Some(now + 1000));
    assert_eq!(s.blocked_until(T, &["addr:192.0.2.1", "login:bob"], now).await.unwrap(), None, "the address is at 1");
    assert_eq!(s.blocked_until(T, &[key], now + 1000).await.unwrap(), None, "the backoff ends");
    s.record_failure(T, &[(key, b)], now).await.unwrap();
    assert_eq!(s.blocked_until(T, &["login:bob", key], now).await.unwrap(), Some(now + 2000), "doubling");
    for _ in 0..5 {
        s.record_failure(T, &[(key, b)], now).await.unwrap();
    }
    assert_eq!(s.blocked_until(T, &[key], now).await.unwrap(), Some(now + 4000), "capped");
    assert_eq!(s.blocked_until(TenantId(8), &[key], now).await.unwrap(), None, "tenants count apart");

    let keys: Vec<String> = common::raw(&client, redis::cmd("KEYS").arg(format!("{}:*", client.keys().prefix()))).await;
    assert_eq!(keys.len(), 2, "{keys:?}");
    assert!(keys.iter().all(|k| k.contains(":security:login_fail:") && !k.contains("alice") && !k.contains("192.0")));
    let ttl: i64 = common::raw(&client, redis::cmd("PTTL").arg(&keys[0])).await;
    assert!(ttl > 0 && ttl <= 64_000, "the counter expires: {ttl}");

    s.clear(T, key).await.unwrap();
    assert_eq!(s.blocked_until(T, &[key], now).await.unwrap(), None, "a success clears the login");
}
