//! The node on MariaDB + Redis, with the degradation rules below checked row by row by cutting the
//! network to each dependency through a proxy mid-test:
//!
//! | dependency down | expected |
//! | --- | --- |
//! | Redis, user/topic caches | reads fall back to MariaDB (token login, history) |
//! | Redis, group send | retryable ctrl 503 with a retry hint; never a seq from MariaDB |
//! | MariaDB, persistence | ctrl 503, nothing acknowledged; no fallback to Redis |
//!
//! Redis flushed mid-run: the seq re-baselines above what is stored, nothing is lost or repeated.
//! (Presence reading as unknown, security short state failing closed and configuration refresh keeping the old
//! value are tested where they live: the Redis adapter's degradation tests and the gateway's tenant cache.)

mod common;

use common::proxy::Proxy;
use common::{Client, config};
use palaver_server::wiring;
use serde_json::json;
use std::net::SocketAddr;

fn mysql_addr() -> SocketAddr {
    std::env::var("PALAVER_TEST_MYSQL_ADDR").unwrap_or_else(|_| "127.0.0.1:3306".into()).parse().unwrap()
}

fn redis_addr() -> SocketAddr {
    std::env::var("PALAVER_TEST_REDIS_ADDR").unwrap_or_else(|_| "127.0.0.1:6379".into()).parse().unwrap()
}

/// A unique name for this test's control database, tenant databases and Redis keys.
fn unique(name: &str) -> String {
    format!("pt_{name}_{:08x}", rand::random::<u32>())
}

async fn scaleout_node(dir: &std::path::Path, mysql: SocketAddr, redis: SocketAddr, tag: &str) -> wiring::Node {
    let url = format!("mysql://palaver:palaver@{mysql}/{tag}_ctl");
    let redis_cfg = format!(
        "{{ addr = \"{redis}\", key_prefix = \"{tag}\", read_timeout_ms = 300, write_timeout_ms = 300, dial_timeout_ms = 300 }}"
    );
    let prefix = format!("{tag}_t_");
    let cfg = config(
        dir,
        &[
            ("PALAVER_STORE__KIND", "mysql"),
            ("PALAVER_STORE__URL", &url),
            ("PALAVER_STORE__TENANT_DATABASE_PREFIX", &prefix),
            ("PALAVER_STORE__ACQUIRE_TIMEOUT_MS", "500"),
            ("PALAVER_STORE_CONFIG__REDIS", &redis_cfg),
            ("PALAVER_LIMITS__RATE_PER_SECOND", "0"),
        ],
    );
    wiring::start(cfg).await.expect("the scale-out node starts (are MariaDB and Redis running?)")
}

async fn group_with_owner(addr: SocketAddr, login: &str) -> (Client, String, String) {
    let mut c = Client::connect(addr).await;
    let (_, token) = c.signup(login).await;
    let ctrl = c.req("sub", json!({ "topic": "new1" })).await;
    (c, ctrl["topic"].as_str().unwrap().to_owned(), token)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_down_degrades_as_documented() {
    let dir = tempfile::tempdir().unwrap();
    let redis = Proxy::start(redis_addr()).await;
    let tag = unique("redisdown");
    let node = scaleout_node(dir.path(), mysql_addr(), redis.addr, &tag).await;
    let (mut owner, grp, token) = group_with_owner(node.addr(), "rd_owner").await;
    for i in 1..=3 {
        assert_eq!(owner.req("pub", json!({ "topic": grp, "content": i })).await["params"]["seq"], i);
    }
    redis.cut();
    let ctrl = owner.req("pub", json!({ "topic": grp, "content": "during" })).await;
    assert_eq!(ctrl["code"], 503, "a group send without Redis is refused as retryable: {ctrl}");
    assert!(ctrl["params"]["retry_after_ms"].as_u64().is_some(), "{ctrl}");
    // Cached reads fall back to MariaDB: a token login reads the user; history comes from the database.
    let mut other = Client::connect(node.addr()).await;
    other.req("hi", json!({ "ver": "0.25.3" })).await;
    assert_eq!(other.req("login", json!({ "scheme": "token", "secret": token })).await["code"], 200);
    other.n += 1;
    other.send_raw(json!({ "get": { "id": "h", "topic": grp, "what": "data" } }).to_string()).await;
    let mut seqs = Vec::new();
    while let Some(f) = other.next().await {
        if let Some(s) = f["data"]["seq"].as_i64() {
            seqs.push(s);
        }
        if f["ctrl"]["id"] == "h" {
            break;
        }
    }
    assert_eq!(seqs, vec![3, 2, 1], "nothing was stored for the refused send");
    redis.restore();
    // A client retries after the hinted delay; the pool replaces the connections the outage broke.
    let mut ctrl = json!(null);
    for _ in 0..20 {
        ctrl = owner.req("pub", json!({ "topic": grp, "content": "after" })).await;
        if ctrl["code"] == 202 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert_eq!(ctrl["code"], 202, "{ctrl}");
    // No repeat: the seq goes on past 3. A retry whose INCR reached Redis through a connection the outage broke
    // (the reply lost) may have consumed one, which leaves a gap but never gives a seq to a second message.
    let seq = ctrl["params"]["seq"].as_i64().unwrap();
    assert!(seq > 3, "the seq continues without a repeat: {seq}");
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_down_refuses_and_acknowledges_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mysql = Proxy::start(mysql_addr()).await;
    let tag = unique("dbdown");
    let node = scaleout_node(dir.path(), mysql.addr, redis_addr(), &tag).await;
    let (mut owner, grp, _) = group_with_owner(node.addr(), "db_owner").await;
    assert_eq!(owner.req("pub", json!({ "topic": grp, "content": 1 })).await["params"]["seq"], 1);
    mysql.cut();
    let ctrl = owner.req("pub", json!({ "topic": grp, "content": "lost?" })).await;
    assert_eq!(ctrl["code"], 503, "persistence failed, so nothing is acknowledged: {ctrl}");
    mysql.restore();
    // The pool reconnects; the refused message took a seq (a gap is allowed) but was never stored.
    let mut stored = None;
    for _ in 0..20 {
        let ctrl = owner.req("pub", json!({ "topic": grp, "content": "back" })).await;
        if ctrl["code"] == 202 {
            stored = ctrl["params"]["seq"].as_i64();
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let seq = stored.expect("the node recovers once MariaDB is back");
    assert!(seq >= 2, "seqs never go backwards: {seq}");
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_flush_rebaselines_the_seq() {
    let dir = tempfile::tempdir().unwrap();
    let tag = unique("flush");
    let node = scaleout_node(dir.path(), mysql_addr(), redis_addr(), &tag).await;
    let (mut owner, grp, _) = group_with_owner(node.addr(), "fl_owner").await;
    for i in 1..=5 {
        assert_eq!(owner.req("pub", json!({ "topic": grp, "content": i })).await["params"]["seq"], i);
    }
    // Lose every key of this test's prefix, as a failover to an empty replica would.
    let client = redis::Client::open(format!("redis://{}", redis_addr())).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let keys: Vec<String> = redis::cmd("KEYS").arg(format!("{tag}:*")).query_async(&mut conn).await.unwrap();
    assert!(!keys.is_empty(), "the node keeps its state under its own prefix");
    let _: () = redis::cmd("DEL").arg(&keys).query_async(&mut conn).await.unwrap();
    for i in 6..=8 {
        let ctrl = owner.req("pub", json!({ "topic": grp, "content": i })).await;
        assert_eq!(ctrl["params"]["seq"], i, "re-baselined above the stored maximum: {ctrl}");
    }
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_retries_and_concurrent_publishers_on_mariadb_and_redis() {
    let dir = tempfile::tempdir().unwrap();
    let tag = unique("race");
    let node = scaleout_node(dir.path(), mysql_addr(), redis_addr(), &tag).await;
    let addr = node.addr();
    let (mut owner, grp, token) = group_with_owner(addr, "race_owner").await;
    // The same client_mid from two connections of one user at once: one row, one seq, both told that seq
    // (or the loser told to retry while the winner is still storing it).
    let mut second = Client::connect(addr).await;
    second.req("hi", json!({ "ver": "0.25.3" })).await;
    second.req("login", json!({ "scheme": "token", "secret": token })).await;
    second.req("sub", json!({ "topic": grp })).await;
    for round in 0..10 {
        let mid = format!("race-{round}");
        let a = owner.req("pub", json!({ "topic": grp, "content": round, "client_mid": mid }));
        let b = second.req("pub", json!({ "topic": grp, "content": round, "client_mid": mid }));
        let (a, b) = tokio::join!(a, b);
        let seqs: Vec<i64> = [&a, &b].iter().filter_map(|c| c["params"]["seq"].as_i64()).collect();
        assert!(!seqs.is_empty(), "{a} {b}");
        assert!(seqs.windows(2).all(|w| w[0] == w[1]), "one seq per client_mid: {a} {b}");
        for c in [&a, &b] {
            assert!(c["code"] == 202 || c["code"] == 503, "{c}");
        }
    }
    // Eight publishers at once on MariaDB + Redis: every seq from 11 to 210 exactly once.
    let mut tasks = Vec::new();
    for p in 0..8 {
        let grp = grp.clone();
        tasks.push(tokio::spawn(async move {
            let mut c = Client::connect(addr).await;
            c.signup(&format!("race_pub{p}")).await;
            assert_eq!(c.req("sub", json!({ "topic": grp })).await["code"], 200);
            let mut seqs = Vec::new();
            for i in 0..25 {
                let ctrl = c.req("pub", json!({ "topic": grp, "content": { "p": p, "i": i } })).await;
                assert_eq!(ctrl["code"], 202, "{ctrl}");
                seqs.push(ctrl["params"]["seq"].as_i64().unwrap());
            }
            seqs
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    all.sort_unstable();
    assert_eq!(all, (11..=210).collect::<Vec<i64>>(), "contiguous, no duplicate");
    node.shutdown().await;
}
