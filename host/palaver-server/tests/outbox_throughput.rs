//! Measures, and prints (run with `--nocapture`), what the outbox costs: one `put` of an audit-sized record on
//! SQLite and on MariaDB (the cost an audited action adds to its request), and how fast the relay drains a backlog
//! into the embedded queue and into Kafka. Nothing here is a timed assertion; the drains are checked for order and
//! completeness.

use palaver_core::TenantId;
use palaver_core::ports::{OutboxStore, QueueRecord, QueueTopic, TaskQueue, TenantStore};
use palaver_queue_kafka::{KafkaConfig, KafkaQueue, KafkaTopics};
use palaver_service::Backbone;
use palaver_service::backbone::relay::{Relay, RelayConfig};
use palaver_store_mysql::{MysqlConfig, MysqlStore};
use palaver_store_sqlite::{SqliteQueue, SqliteStore};
use std::sync::Arc;
use std::time::Instant;

fn record(n: usize) -> QueueRecord {
    let payload = format!(
        r#"{{"event_id":"{n:032x}","tenant":1,"actor_kind":"user","actor_id":7,"action":"login.success","target_kind":"user","target_id":"usrAAAAAAAAAAA","topic":null,"seq":null,"detail":{{"scheme":"basic"}},"client_ip":"203.0.113.9","at":{n}}}"#
    );
    QueueRecord::new(QueueTopic::Audit, "1:user:usrAAAAAAAAAAA", payload.into_bytes())
}

async fn put_cost(name: &str, outbox: &dyn OutboxStore, tenant: TenantId, n: usize) {
    let started = Instant::now();
    for i in 0..n {
        outbox.put(tenant, &[record(i)]).await.unwrap();
    }
    let per = started.elapsed() / n as u32;
    println!("outbox put on {name}: {n} single-record puts, {per:?} each");
}

/// Drains `n` entries through a relay into `queue` and checks that the queue then holds them, in order.
async fn drain(name: &str, outbox: Arc<dyn OutboxStore>, queue: Arc<dyn TaskQueue>, tenant: TenantId, n: usize) {
    let records: Vec<QueueRecord> = (0..n).map(record).collect();
    for chunk in records.chunks(500) {
        outbox.put(tenant, chunk).await.unwrap();
    }
    let relay = Relay::new(outbox.clone(), queue.clone(), None, Arc::new(Backbone::new(0)), RelayConfig::default());
    let started = Instant::now();
    let mut produced = 0;
    while produced < n as u64 {
        let pass = relay.pass().await;
        assert!(!pass.failed, "the relay failed draining {name}");
        produced += pass.produced;
    }
    let took = started.elapsed();
    println!("relay {name}: {n} entries in {took:?}, {:.0} entries/s", n as f64 / took.as_secs_f64());
    assert_eq!(outbox.depth(tenant).await.unwrap(), 0);
    let mut c = queue.subscribe(QueueTopic::Audit, &format!("measure-{:x}", rand::random::<u32>())).await.unwrap();
    for i in 0..n {
        let d = c.next().await.unwrap();
        assert_eq!(d.record.payload, record(i).payload, "entry {i} in order");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outbox_costs_and_relay_throughput() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = SqliteStore::open(&dir.path().join("palaver.db")).await.unwrap();
    put_cost("SQLite", &sqlite, TenantId::DEFAULT, 2000).await;
    let pending: Vec<i64> = sqlite.pending(TenantId::DEFAULT, 10_000).await.unwrap().iter().map(|e| e.id).collect();
    sqlite.remove(TenantId::DEFAULT, &pending).await.unwrap();
    // In a file of its own, as a node keeps it.
    let own = SqliteStore::open(&dir.path().join("queue.db")).await.unwrap();
    let embedded: Arc<dyn TaskQueue> = Arc::new(SqliteQueue::new(own));
    drain("SQLite outbox → embedded queue", Arc::new(sqlite.clone()), embedded, TenantId::DEFAULT, 10_000).await;

    let brokers = std::env::var("PALAVER_TEST_KAFKA_BROKERS").unwrap_or_else(|_| "127.0.0.1:9092".into());
    let prefix = format!("pvm{:08x}.", rand::random::<u32>());
    let kafka_cfg = KafkaConfig { brokers, topics: KafkaTopics::prefixed(&prefix), ..KafkaConfig::default() };
    let kafka: Arc<dyn TaskQueue> = Arc::new(KafkaQueue::connect(kafka_cfg).await.expect("Kafka is running"));
    drain("SQLite outbox → Kafka", Arc::new(sqlite.clone()), kafka.clone(), TenantId::DEFAULT, 10_000).await;

    let tag = format!("pt_measure_{:08x}", rand::random::<u32>());
    let url = format!("mysql://palaver:palaver@127.0.0.1:3306/{tag}_ctl");
    let mysql =
        MysqlStore::connect(MysqlConfig { tenant_database_prefix: format!("{tag}_t_"), ..MysqlConfig::new(url) })
            .await
            .expect("MariaDB is running");
    let tenant = mysql.create_tenant("m", "Measure").await.unwrap().id;
    put_cost("MariaDB", &mysql, tenant, 300).await;
    let pending: Vec<i64> = mysql.pending(tenant, 10_000).await.unwrap().iter().map(|e| e.id).collect();
    mysql.remove(tenant, &pending).await.unwrap();
    let outbox: Arc<dyn OutboxStore> = Arc::new(mysql.clone());
    drain_tenant("MariaDB outbox → Kafka", outbox, kafka, Arc::new(mysql.clone()), tenant, 5_000).await;
    mysql.close().await;
    let _ = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "mysql -h127.0.0.1 -upalaver -ppalaver -N -e \"SHOW DATABASES LIKE '{tag}%'\" | \
             while read db; do mysql -h127.0.0.1 -upalaver -ppalaver -e \"DROP DATABASE \\`$db\\`\"; done"
        ))
        .status();
}

/// [`drain`] for a tenant of a registry.
async fn drain_tenant(
    name: &str,
    outbox: Arc<dyn OutboxStore>,
    queue: Arc<dyn TaskQueue>,
    registry: Arc<dyn TenantStore>,
    tenant: TenantId,
    n: usize,
) {
    let records: Vec<QueueRecord> = (0..n).map(record).collect();
    for chunk in records.chunks(500) {
        outbox.put(tenant, chunk).await.unwrap();
    }
    let relay =
        Relay::new(outbox.clone(), queue.clone(), Some(registry), Arc::new(Backbone::new(0)), RelayConfig::default());
    let started = Instant::now();
    while outbox.depth(tenant).await.unwrap() > 0 {
        assert!(!relay.pass().await.failed, "the relay failed draining {name}");
    }
    let took = started.elapsed();
    println!("relay {name}: {n} entries in {took:?}, {:.0} entries/s", n as f64 / took.as_secs_f64());
}
