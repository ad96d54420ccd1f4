//! Kafka down while chat goes on: a node whose broker (a private one, started by `scripts/lib/services.sh` on its
//! own port) is stopped keeps serving publishes, its outbox grows (metric), and once the broker is back the backlog
//! drains in order into the audit log. The broker is a real Apache Kafka; nothing is mocked.

mod common;

use base64::Engine;
use common::Client;
use palaver_core::TenantId;
use palaver_core::ports::AuditStore;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The port of this test's own broker (its controller takes the next one).
const PORT: &str = "19092";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs one function of `scripts/lib/services.sh` for the private broker in `dir`.
fn services(dir: &Path, function: &str, keep_data: bool) {
    let status = Command::new("bash")
        .arg("-c")
        .arg(format!(". scripts/lib/setup.sh && . scripts/lib/services.sh && {function}"))
        .current_dir(root())
        .env("PALAVER_KAFKA_PORT", PORT)
        .env("PALAVER_KAFKA_DIR", dir)
        .env("PALAVER_KAFKA_KEEP_DATA", if keep_data { "1" } else { "0" })
        .status()
        .expect("bash runs");
    assert!(status.success(), "{function} failed (Java 17 and Maven are needed; see scripts/lib/services.sh)");
}

/// Stops the private broker however the test ends.
struct Broker(PathBuf);

impl Drop for Broker {
    fn drop(&mut self) {
        services(&self.0, "stop_kafka", false);
    }
}

fn metric(text: &str, name: &str) -> u64 {
    text.lines().find_map(|l| l.strip_prefix(&format!("{name} "))).and_then(|v| v.parse().ok()).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_goes_on_while_kafka_is_down_and_the_outbox_drains_in_order_after() {
    let kafka_dir = tempfile::tempdir().unwrap();
    services(kafka_dir.path(), "start_kafka", false);
    let _broker = Broker(kafka_dir.path().to_owned());
    let data = tempfile::tempdir().unwrap();
    let brokers = format!("127.0.0.1:{PORT}");
    let node = common::start(
        data.path(),
        &[
            ("PALAVER_KAFKA__BROKERS", &brokers),
            ("PALAVER_KAFKA__DELIVERY_TIMEOUT_MS", "2000"),
            ("PALAVER_OUTBOX__LEASE_MS", "10000"),
            ("PALAVER_OUTBOX__RELAY_BACKOFF_MAX_MS", "1000"),
            ("PALAVER_AUTH__PASSWORD_CHANGE_REQUIRES_CURRENT", "false"),
        ],
    )
    .await;
    let addr = node.addr();
    let log = palaver_store_sqlite::SqliteStore::open(&data.path().join("palaver.db")).await.unwrap();
    let mut c = Client::connect(addr).await;
    let (user, _) = c.signup("outage").await;
    let grp = c.req("sub", json!({ "topic": "new1" })).await["topic"].as_str().unwrap().to_owned();
    let change = |n: usize| {
        let secret = base64::engine::general_purpose::STANDARD.encode(format!("outage:secret-{n}"));
        json!({ "user": user, "scheme": "basic", "secret": secret })
    };
    // The pipeline works: a password change reaches the audit log through Kafka.
    assert_eq!(c.req("acc", change(0)).await["code"], 200);
    let deadline = Instant::now() + Duration::from_secs(60);
    while log.list_audit(TenantId::DEFAULT, 100).await.unwrap().iter().all(|r| r.action != "user.password.change") {
        assert!(Instant::now() < deadline, "the first audit row never arrived");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    services(kafka_dir.path(), "stop_kafka", false);
    let down = Instant::now();
    for n in 1..=10 {
        let started = Instant::now();
        assert_eq!(c.req("acc", change(n)).await["code"], 200);
        let ctrl = c.req("pub", json!({ "topic": grp, "content": format!("while down {n}") })).await;
        assert_eq!(
            (ctrl["code"].as_i64(), ctrl["params"]["seq"].as_i64()),
            (Some(202), Some(n as i64)),
            "chat keeps working: {ctrl}"
        );
        assert!(started.elapsed() < Duration::from_secs(2), "no request waits on Kafka");
    }
    // The relay has tried and failed meanwhile; the outbox holds the backlog.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, text) = common::http(addr, "GET", "/metrics", "").await;
        let depth = metric(&text, "palaver_outbox_depth{tenant=\"1\"}");
        if depth >= 10 && metric(&text, "palaver_outbox_produce_failures_total") > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "the outbox did not grow: {text}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The scenario: the broker stays away for 30 s.
    while down.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    services(kafka_dir.path(), "start_kafka", true);
    let deadline = Instant::now() + Duration::from_secs(90);
    let changes = loop {
        let rows = log.list_audit(TenantId::DEFAULT, 1000).await.unwrap();
        // In the order the consumer stored them: the log lists newest first.
        let changes: Vec<(i64, String)> = rows
            .iter()
            .rev()
            .filter(|r| r.action == "user.password.change")
            .map(|r| (r.at, r.event_id.clone()))
            .collect();
        if changes.len() == 11 {
            break changes;
        }
        assert!(Instant::now() < deadline, "the backlog did not drain: {changes:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    // Each change hashes a password, so their times differ: stored in the order they happened, each once.
    assert!(changes.windows(2).all(|w| w[0].0 < w[1].0), "drained in order: {changes:?}");
    let ids: std::collections::HashSet<_> = changes.iter().map(|c| &c.1).collect();
    assert_eq!(ids.len(), 11, "each event once: {changes:?}");
    let (_, text) = common::http(addr, "GET", "/metrics", "").await;
    assert_eq!(metric(&text, "palaver_outbox_depth{tenant=\"1\"}"), 0, "{text}");
    node.shutdown().await;
}
