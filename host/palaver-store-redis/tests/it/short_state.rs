//! Short-lived security state against a real Redis: the per-hour send limit, one-time codes and tokens, short
//! locks, and no phone number or secret in any key or value.

use crate as common;
use palaver_core::TenantId;
use palaver_store_redis::{MAX_SENDS_PER_HOUR, MAX_VERIFY_ATTEMPTS, ShortState, ShortStateError, phone_hash};
use std::time::Duration;

const T: TenantId = TenantId(7);
const PHONE: &str = "+86 138-0013-8000";

#[tokio::test]
async fn codes_are_limited_per_hour_and_consumed_once() {
    let Some(client) = common::client("short-codes").await else { return };
    let s = ShortState::new(client.clone());
    assert!(!s.has_active_code(T, "login", PHONE).await.unwrap());
    for n in 1..=MAX_SENDS_PER_HOUR {
        assert_eq!(s.issue_code(T, "login", PHONE, "123456").await.unwrap(), n);
    }
    match s.issue_code(T, "login", PHONE, "123456").await {
        Err(ShortStateError::RateLimited { retry_after_secs }) => assert!((1..=3600).contains(&retry_after_secs)),
        other => panic!("the sixth send must be refused, got {other:?}"),
    }
    assert_eq!(s.issue_code(T, "register", PHONE, "1").await.unwrap(), 1, "scenes count apart");
    assert_eq!(s.issue_code(TenantId(8), "login", PHONE, "1").await.unwrap(), 1, "tenants count apart");
    assert_eq!(s.issue_code(T, "login", "+86 138-0013-8001", "1").await.unwrap(), 1, "numbers count apart");

    assert!(s.has_active_code(T, "login", PHONE).await.unwrap());
    assert!(!s.verify_code(T, "login", PHONE, "000000").await.unwrap());
    assert!(s.verify_code(T, "login", "+8613800138000", "123456").await.unwrap(), "formatting does not matter");
    assert!(!s.verify_code(T, "login", PHONE, "123456").await.unwrap(), "a code is used once");
    assert!(!s.has_active_code(T, "login", PHONE).await.unwrap());

    let rate = client.keys().verify_rate(T, "login", &phone_hash(PHONE));
    let ttl: i64 = common::raw(&client, redis::cmd("TTL").arg(&rate)).await;
    assert!((1..=3600).contains(&ttl), "the window is one hour, got {ttl}");
    assert!(matches!(s.issue_code(T, "bad:scene", PHONE, "1").await, Err(ShortStateError::Invalid(_))));
}

#[tokio::test]
async fn wrong_guesses_discard_the_code() {
    let Some(client) = common::client("short-guesses").await else { return };
    let s = ShortState::new(client.clone());
    s.issue_code(T, "login", PHONE, "654321").await.unwrap();
    for _ in 0..MAX_VERIFY_ATTEMPTS {
        assert!(!s.verify_code(T, "login", PHONE, "111111").await.unwrap());
    }
    assert!(!s.verify_code(T, "login", PHONE, "654321").await.unwrap(), "discarded after the attempt limit");

    // Neither the number nor the code is stored in the clear.
    let pattern = format!("{}:*", client.keys().prefix());
    let keys: Vec<String> = common::raw(&client, redis::cmd("KEYS").arg(&pattern)).await;
    s.issue_code(T, "login", PHONE, "654321").await.unwrap();
    let code_key = client.keys().verify_code(T, "login", &phone_hash(PHONE));
    let stored: Vec<String> = common::raw(&client, redis::cmd("HGETALL").arg(&code_key)).await;
    for text in keys.iter().chain(stored.iter()) {
        assert!(!text.contains("13800138000") && !text.contains("654321"), "{text}");
    }
}

#[tokio::test]
async fn action_tokens_are_consumed_once_and_expire() {
    let Some(client) = common::client("short-tokens").await else { return };
    let s = ShortState::new(client);
    let token = s.create_action_token(T, "reset", r#"{"user":10}"#, None).await.unwrap();
    assert!(token.len() >= 43);
    assert_eq!(s.consume_action_token(T, "invite", &token).await.unwrap(), None, "other purpose");
    assert_eq!(s.consume_action_token(TenantId(8), "reset", &token).await.unwrap(), None, "other tenant");
    assert_eq!(s.consume_action_token(T, "reset", &token).await.unwrap().as_deref(), Some(r#"{"user":10}"#));
    assert_eq!(s.consume_action_token(T, "reset", &token).await.unwrap(), None, "once only");
    let short = s.create_action_token(T, "reset", "x", Some(Duration::from_millis(150))).await.unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(s.consume_action_token(T, "reset", &short).await.unwrap(), None, "expired");
}

#[tokio::test]
async fn short_locks_exclude_and_unlock_only_their_own() {
    let Some(client) = common::client("short-locks").await else { return };
    let s = ShortState::new(client);
    let held = s.try_lock(T, "group:grpA:settings", Duration::from_secs(5)).await.unwrap().unwrap();
    assert!(s.try_lock(T, "group:grpA:settings", Duration::from_secs(5)).await.unwrap().is_none());
    assert!(s.try_lock(TenantId(8), "group:grpA:settings", Duration::from_secs(5)).await.unwrap().is_some());
    assert!(s.unlock(held).await.unwrap());
    let stale = s.try_lock(T, "group:grpA:settings", Duration::from_millis(100)).await.unwrap().unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let fresh = s.try_lock(T, "group:grpA:settings", Duration::from_secs(5)).await.unwrap().unwrap();
    assert!(!s.unlock(stale).await.unwrap(), "an expired holder cannot release the new holder's lock");
    assert!(s.try_lock(T, "group:grpA:settings", Duration::from_secs(5)).await.unwrap().is_none());
    assert!(s.unlock(fresh).await.unwrap());
}

#[tokio::test]
async fn codes_and_tokens_live_the_short_state_ttl() {
    let Some(client) = common::client("short-ttl").await else { return };
    let s = ShortState::new(client.clone());
    s.issue_code(T, "login", PHONE, "1").await.unwrap();
    let token = s.create_action_token(T, "reset", "x", None).await.unwrap();
    let code_key = client.keys().verify_code(T, "login", &phone_hash(PHONE));
    let ttl: i64 = common::raw(&client, redis::cmd("TTL").arg(&code_key)).await;
    assert!((590..=600).contains(&ttl), "short_state_ttl_seconds, got {ttl}");
    let pattern = format!("{}:{}:token:action:*", client.keys().prefix(), T.0);
    let tokens: Vec<String> = common::raw(&client, redis::cmd("KEYS").arg(&pattern)).await;
    assert_eq!(tokens.len(), 1);
    assert!(!tokens[0].contains(&token), "the key holds the token's digest, not the token");
    let ttl: i64 = common::raw(&client, redis::cmd("PTTL").arg(&tokens[0])).await;
    assert!((590_000..=600_000).contains(&ttl), "got {ttl} ms");
}
