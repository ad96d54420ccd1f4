//! Every audited action of a running node ends up as an `audit_log` row, through the outbox, the relay, the task
//! queue and the audit consumer: on the embedded default (SQLite file, embedded queue) and on MariaDB + Redis +
//! a real Kafka broker. The actions: a login that fails and one that succeeds, a password change, session control
//! (evict, disable, enable), plugin operations (deploy by rescan, reload, rollback, tenant settings) and moderation
//! decisions (release, reject). On Kafka, the consumers' lag gauge and every Kafka metric `deploy/` reads are
//! exported.

mod common;

use base64::Engine;
use common::{Client, http_with, plugins_dir};
use palaver_core::TenantId;
use palaver_core::ports::{AuditEvent, AuditStore};
use palaver_server::wiring;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::time::Duration;

const ADMIN: &str = "admin-token-for-audit-tests";

async fn admin(addr: SocketAddr, method: &str, path: &str, body: &str) -> (u16, Value) {
    let auth = format!("Bearer {ADMIN}");
    let (status, text) = http_with(addr, method, path, &[("Authorization", &auth)], body).await;
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// Runs every audited action once against the node at `addr` and returns the actions expected in the log.
async fn exercise(addr: SocketAddr) -> Vec<&'static str> {
    let hold = r#"{"settings":{"hold_words":["review"]}}"#;
    assert_eq!(admin(addr, "PUT", "/v1/admin/tenants/1/plugins/moderation", hold).await.0, 200);
    let mut a = Client::connect(addr).await;
    let (user, _) = a.signup("audit-a").await;
    let mut bad = Client::connect(addr).await;
    bad.req("hi", json!({ "ver": "0.25.3" })).await;
    let wrong = base64::engine::general_purpose::STANDARD.encode("audit-a:wrong-password");
    assert_eq!(bad.req("login", json!({ "scheme": "basic", "secret": wrong })).await["code"], 401);
    let mut good = Client::connect(addr).await;
    good.req("hi", json!({ "ver": "0.25.3" })).await;
    let right = base64::engine::general_purpose::STANDARD.encode("audit-a:secret1");
    assert_eq!(good.req("login", json!({ "scheme": "basic", "secret": right })).await["code"], 200);
    let new = base64::engine::general_purpose::STANDARD.encode("audit-a:secret2");
    let change = json!({ "user": user, "scheme": "basic", "secret": new, "tmpscheme": "basic", "tmpsecret": right });
    assert_eq!(good.req("acc", change).await["code"], 200);
    // Moderation: one held message released, one rejected.
    let grp = good.req("sub", json!({ "topic": "new1" })).await["topic"].as_str().unwrap().to_owned();
    let mut seqs = Vec::new();
    for text in ["please review one", "please review two"] {
        let held = good.req("pub", json!({ "topic": grp, "content": text })).await;
        assert_eq!(held["code"], 202, "{held}");
        seqs.push(held["params"]["seq"].as_i64().unwrap());
    }
    let review = |seq: i64| format!("/v1/admin/tenants/1/topics/{grp}/messages/{seq}/audit");
    assert_eq!(admin(addr, "POST", &review(seqs[0]), r#"{"action":"release"}"#).await.0, 200);
    assert_eq!(admin(addr, "POST", &review(seqs[1]), r#"{"action":"reject"}"#).await.0, 200);
    // Session control and plugin operations through the admin API.
    let users = format!("/v1/admin/tenants/1/users/{user}");
    for action in ["evict", "disable", "enable"] {
        assert_eq!(admin(addr, "POST", &format!("{users}/{action}"), "{}").await.0, 200, "{action}");
    }
    assert_eq!(admin(addr, "POST", "/v1/admin/plugins/rescan", "").await.0, 200);
    admin(addr, "POST", "/v1/admin/plugins/moderation/reload", "").await;
    admin(addr, "POST", "/v1/admin/plugins/moderation/rollback", "").await;
    vec![
        "plugin.settings",
        "login.failure",
        "login.success",
        "user.password.change",
        "message.release",
        "message.reject",
        "session.evict",
        "user.disable",
        "user.enable",
        "plugin.deploy",
        "plugin.reload",
        "plugin.rollback",
    ]
}

/// Waits until the log holds every expected action, then checks each appears once.
async fn wait_for_rows(store: &dyn AuditStore, want: &[&str]) -> Vec<AuditEvent> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let rows = store.list_audit(TenantId::DEFAULT, 1000).await.expect("audit_log readable");
        let missing: Vec<&&str> = want.iter().filter(|a| !rows.iter().any(|r| r.action == **a)).collect();
        if missing.is_empty() {
            for a in want {
                assert_eq!(rows.iter().filter(|r| r.action == *a).count(), 1, "{a} stored once: {rows:#?}");
            }
            return rows;
        }
        assert!(tokio::time::Instant::now() < deadline, "audit rows missing: {missing:?}; have {rows:#?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_audited_action_has_its_row_on_the_embedded_default() {
    let plugins = plugins_dir(&["moderation-"]);
    let data = tempfile::tempdir().unwrap();
    let dir = plugins.path().to_string_lossy().into_owned();
    let node = common::start(data.path(), &[("PALAVER_PLUGINS__DIR", &dir), ("PALAVER_ADMIN__TOKEN", ADMIN)]).await;
    let want = exercise(node.addr()).await;
    let file = palaver_store_sqlite::SqliteStore::open(&data.path().join("palaver.db")).await.unwrap();
    let rows = wait_for_rows(&file, &want).await;
    let release = rows.iter().find(|r| r.action == "message.release").unwrap();
    assert!(release.topic.as_deref().is_some_and(|t| t.starts_with("grp")) && release.seq.is_some());
    let (status, text) = common::http(node.addr(), "GET", "/metrics", "").await;
    assert_eq!(status, 200);
    assert!(text.contains("palaver_audit_stored_total "), "{text}");
    assert!(text.contains("palaver_outbox_depth{tenant=\"1\"} "), "{text}");
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_audited_action_has_its_row_on_mariadb_and_kafka() {
    let plugins = plugins_dir(&["moderation-"]);
    let data = tempfile::tempdir().unwrap();
    let dir = plugins.path().to_string_lossy().into_owned();
    let tag = format!("pt_audit_{:08x}", rand::random::<u32>());
    let url = format!("mysql://palaver:palaver@127.0.0.1:3306/{tag}_ctl");
    let prefix = format!("{tag}_t_");
    let redis = format!("{{ addr = \"127.0.0.1:6379\", key_prefix = \"{tag}\" }}");
    let brokers = std::env::var("PALAVER_TEST_KAFKA_BROKERS").unwrap_or_else(|_| "127.0.0.1:9092".into());
    // Topics of this test only, so that records of earlier runs are not consumed.
    let topics = format!("{{ audit = \"{tag}.audit\", admin_event = \"{tag}.admin.event\" }}");
    let cfg = common::config(
        data.path(),
        &[
            ("PALAVER_STORE__KIND", "mysql"),
            ("PALAVER_STORE__URL", &url),
            ("PALAVER_STORE__TENANT_DATABASE_PREFIX", &prefix),
            ("PALAVER_STORE_CONFIG__REDIS", &redis),
            ("PALAVER_KAFKA__BROKERS", &brokers),
            ("PALAVER_KAFKA__GROUP_ID", &tag),
            ("PALAVER_KAFKA__TOPICS", &topics),
            ("PALAVER_PLUGINS__DIR", &dir),
            ("PALAVER_ADMIN__TOKEN", ADMIN),
            ("PALAVER_LIMITS__RATE_PER_SECOND", "0"),
        ],
    );
    let node = wiring::start(cfg).await.expect("the node starts (are MariaDB, Redis and Kafka running?)");
    let want = exercise(node.addr()).await;
    let reader = palaver_store_mysql::MysqlStore::connect(palaver_store_mysql::MysqlConfig {
        tenant_database_prefix: prefix.clone(),
        ..palaver_store_mysql::MysqlConfig::new(url.clone())
    })
    .await
    .unwrap();
    let rows = wait_for_rows(&reader, &want).await;
    assert!(rows.iter().all(|r| r.event_id.len() == 32), "every row carries its event id");
    // The summaries went to the Admin side's topic on the broker.
    let queue = node.queue();
    let mut events =
        queue.subscribe(palaver_core::ports::QueueTopic::AdminEvent, &format!("{tag}.check")).await.unwrap();
    let mut kinds = Vec::new();
    while kinds.len() < 3 {
        let d = tokio::time::timeout(Duration::from_secs(30), events.next()).await.expect("a summary").unwrap();
        let v: Value = serde_json::from_slice(&d.record.payload).unwrap();
        kinds.push(v["type"].as_str().unwrap().to_owned());
    }
    assert!(kinds.contains(&"group.created".to_owned()) && kinds.contains(&"user.state".to_owned()), "{kinds:?}");
    // The consumers' lag reaches /metrics from librdkafka's statistics (every 5 s), per topic and partition: the
    // audit topic's is there and, with every row stored, at zero. Every Kafka metric deploy/ reads is exported.
    let audit_lag = format!("topic=\"{tag}.audit\"");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let metrics = loop {
        let (_, text) = common::http(node.addr(), "GET", "/metrics", "").await;
        let lags: Vec<f64> = text
            .lines()
            .filter(|l| l.starts_with("palaver_kafka_consumer_lag{") && l.contains(&audit_lag))
            .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
            .collect();
        if !lags.is_empty() && lags.iter().all(|lag| *lag == 0.0) {
            break text;
        }
        assert!(std::time::Instant::now() < deadline, "no lag of 0 for {tag}.audit: {lags:?}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let exported = common::exported_names(&metrics);
    let kafka: Vec<String> =
        common::deploy_metric_names().into_iter().filter(|n| n.starts_with("palaver_kafka_")).collect();
    assert!(!kafka.is_empty(), "the dashboard and the alerts read the consumer lag");
    let missing: Vec<&String> = kafka.iter().filter(|n| !exported.contains(n.as_str())).collect();
    assert!(missing.is_empty(), "used by deploy/ but not exported by a Kafka node: {missing:?}");
    // Readiness names Kafka beside the database, Redis and the bus.
    let (status, body) = common::http(node.addr(), "GET", "/readyz", "").await;
    let ready: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (status, &ready["checks"]["queue"]),
        (200, &serde_json::json!({ "ok": true, "required": false })),
        "{ready}"
    );
    assert_eq!(ready["checks"]["database"]["ok"], true, "{ready}");
    node.shutdown().await;
    reader.close().await;
    common::drop_databases(&tag);
}
