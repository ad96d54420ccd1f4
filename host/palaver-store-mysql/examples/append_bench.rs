//! Measures append throughput against a real MariaDB: one transaction per message versus the batch writer.
//!
//! `cargo run --release -p palaver-store-mysql --example append_bench [-- SECONDS [APPENDERS]]`
//!
//! Each appender owns one group topic and appends to it in a loop, as the service does under its per-topic write
//! lock. The server comes from `PALAVER_TEST_MYSQL_URL` (default `mysql://palaver:palaver@127.0.0.1:3306`); the
//! databases the run creates are dropped at the end. Prints figures only; asserts nothing.

use palaver_core::ports::{MessageStore, TenantStore, TopicStore};
use palaver_core::{AuditStatus, DefaultAccess, Message, RecordState, Topic, TopicKind, UserId};
use palaver_store_mysql::{MysqlConfig, MysqlStore};
use sqlx::{AssertSqlSafe, Connection, MySqlConnection};
use std::time::{Duration, Instant};

fn topic(name: &str) -> Topic {
    Topic {
        name: name.to_owned(),
        kind: TopicKind::Group,
        created: 0,
        updated: 0,
        touched: 0,
        state: RecordState::Active,
        owner: None,
        defacs: DefaultAccess::GROUP,
        public: None,
        trusted: None,
        tags: Vec::new(),
        seq: 0,
        del_id: 0,
    }
}

fn message(topic: &str, seq: i64, from: u64) -> Message {
    Message {
        topic: topic.to_owned(),
        seq,
        created: 1_700_000_000_000 + seq,
        from: UserId(from),
        head: None,
        // About 200 bytes of content, the size perf-reliability.md measured with.
        content: serde_json::json!({ "txt": "x".repeat(180), "n": seq }),
        client_mid: Some(format!("{from}-{seq}")),
        audit: AuditStatus::Pass,
        risk_flags: Vec::new(),
    }
}

/// Runs `appenders` loops for `duration` on a fresh tenant and returns rows stored per second.
async fn run(store: &MysqlStore, code: &str, appenders: u64, duration: Duration) -> Result<f64, String> {
    let tenant = store.create_tenant(code, code).await.map_err(|e| e.to_string())?.id;
    for i in 0..appenders {
        store.create_topic(tenant, &topic(&format!("grpBench{i}"))).await.map_err(|e| e.to_string())?;
    }
    let started = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..appenders {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let name = format!("grpBench{i}");
            let mut seq = 0;
            while started.elapsed() < duration {
                seq += 1;
                store.append(tenant, &message(&name, seq, i + 1)).await.map_err(|e| e.to_string())?;
            }
            Ok::<i64, String>(seq)
        }));
    }
    let mut rows = 0;
    for task in tasks {
        rows += task.await.map_err(|e| e.to_string())??;
    }
    Ok(rows as f64 / started.elapsed().as_secs_f64())
}

/// Drops every database whose name starts with `prefix`.
async fn cleanup(server: &str, prefix: &str) -> Result<(), sqlx::Error> {
    let mut conn = MySqlConnection::connect(server).await?;
    let names: Vec<String> =
        sqlx::query_scalar("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE ?")
            .bind(format!("{}%", prefix.replace('_', "\\_")))
            .fetch_all(&mut conn)
            .await?;
    for name in names.into_iter().filter(|n| n.starts_with(prefix) && !n.contains('`')) {
        sqlx::query(AssertSqlSafe(format!("DROP DATABASE `{name}`"))).execute(&mut conn).await?;
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let seconds: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(5);
    let appenders: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(64);
    let server = std::env::var("PALAVER_TEST_MYSQL_URL")
        .unwrap_or_else(|_| "mysql://palaver:palaver@127.0.0.1:3306".into())
        .trim_end_matches('/')
        .to_owned();
    let prefix = format!("pvbench{:06x}_", rand::random::<u32>() & 0xff_ffff);
    let base = MysqlConfig {
        tenant_database_prefix: format!("{prefix}t_"),
        ..MysqlConfig::new(format!("{server}/{prefix}control"))
    };
    let modes = [
        ("single (1 row per transaction)", 1, Duration::ZERO, 1),
        ("single (1 row per transaction)", 1, Duration::ZERO, appenders),
        ("batched (200 rows, 2 ms)", 200, Duration::from_millis(2), 1),
        ("batched (200 rows, 2 ms)", 200, Duration::from_millis(2), appenders),
        ("batched (200 rows, no wait)", 200, Duration::ZERO, 1),
        ("batched (200 rows, no wait)", 200, Duration::ZERO, appenders),
    ];
    println!("append_bench: {seconds} s per mode, server {server}");
    let mut outcome = Ok(());
    for (i, (label, rows, delay, appenders)) in modes.into_iter().enumerate() {
        let config = MysqlConfig { batch_max_rows: rows, batch_max_delay: delay, ..base.clone() };
        let result = match MysqlStore::connect(config).await {
            Ok(store) => run(&store, &format!("m{i}"), appenders, Duration::from_secs(seconds)).await,
            Err(err) => Err(err.to_string()),
        };
        match result {
            Ok(rate) => println!("{label:32} {appenders:>4} appenders: {rate:>10.0} rows/s"),
            Err(err) => {
                outcome = Err(format!("{label}: {err}"));
                break;
            }
        }
    }
    cleanup(&server, &prefix).await.map_err(|e| e.to_string())?;
    outcome
}
