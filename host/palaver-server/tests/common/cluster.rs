//! Nodes of a scale-out cluster for the tests that need one: MariaDB, Redis and a real Kafka broker, each test's
//! databases, Redis keys, Kafka topics and consumer group named after its own tag, and a clean-up of them.

use palaver_server::wiring;

pub fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.into())
}

/// A node of the test tagged `tag` (its databases, Redis prefix, Kafka topics and group named after it), with
/// `extra` settings on top.
pub async fn node(dir: &std::path::Path, tag: &str, id: &str, extra: &[(&str, &str)]) -> wiring::Node {
    let mysql = env_or("PALAVER_TEST_MYSQL_ADDR", "127.0.0.1:3306");
    let redis = env_or("PALAVER_TEST_REDIS_ADDR", "127.0.0.1:6379");
    let brokers = env_or("PALAVER_TEST_KAFKA_BROKERS", "127.0.0.1:9092");
    let url = format!("mysql://palaver:palaver@{mysql}/{tag}_ctl");
    let redis_cfg = format!("{{ addr = \"{redis}\", key_prefix = \"{tag}\" }}");
    let prefix = format!("{tag}_t_");
    let topics = format!(
        "{{ admin_command = \"{tag}.cmd\", admin_result = \"{tag}.res\", admin_event = \"{tag}.evt\", audit = \
         \"{tag}.audit\", push = \"{tag}.push\", file_security = \"{tag}.file\", plugin_event = \"{tag}.plugin\", dead_letter = \"{tag}.dlq\" }}"
    );
    let mut env = vec![
        ("PALAVER_STORE__KIND", "mysql"),
        ("PALAVER_STORE__URL", &url),
        ("PALAVER_STORE__TENANT_DATABASE_PREFIX", &prefix),
        ("PALAVER_STORE_CONFIG__REDIS", &redis_cfg),
        ("PALAVER_SERVER__NODE_ID", id),
        ("PALAVER_AUTH__TOKEN_KEY", "YWRtaW4tY2x1c3Rlci10ZXN0LWtleS0wMTIzNDU2Nzg5YWJjZGVm"),
        ("PALAVER_KAFKA__BROKERS", &brokers),
        ("PALAVER_KAFKA__GROUP_ID", tag),
        ("PALAVER_KAFKA__PARTITIONS", "2"),
        ("PALAVER_KAFKA__TOPICS", &topics),
        ("PALAVER_OUTBOX__RELAY_INTERVAL_MS", "50"),
    ];
    env.extend_from_slice(extra);
    let cfg = super::config(dir, &env);
    wiring::start(cfg).await.expect("the node starts (are MariaDB, Redis and Kafka running?)")
}

/// Drops the test's databases and Redis keys when it ends, however it ends (best effort; its Kafka topics stay,
/// named after the tag).
pub struct Cleanup(pub String);

impl Drop for Cleanup {
    fn drop(&mut self) {
        use std::process::Command;
        let m: std::net::SocketAddr = env_or("PALAVER_TEST_MYSQL_ADDR", "127.0.0.1:3306").parse().unwrap();
        let (host, port) = (m.ip().to_string(), m.port().to_string());
        let mysql = |args: &[&str], sql: String| {
            Command::new("mysql")
                .args(["-h", &host, "-P", &port, "-upalaver", "-ppalaver"])
                .args(args)
                .arg(sql)
                .output()
        };
        if let Ok(out) = mysql(&["-N", "-e"], format!("SHOW DATABASES LIKE '{}\\_%'", self.0)) {
            let sql: String = String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter(|l| l.starts_with(&self.0))
                .map(|db| format!("DROP DATABASE IF EXISTS `{db}`;"))
                .collect();
            if !sql.is_empty() {
                let _ = mysql(&["-e"], sql);
            }
        }
        let redis = format!("redis://{}", env_or("PALAVER_TEST_REDIS_ADDR", "127.0.0.1:6379"));
        if let Ok(mut conn) = redis::Client::open(redis).and_then(|c| c.get_connection())
            && let Ok(keys) = redis::cmd("KEYS").arg(format!("{}:*", self.0)).query::<Vec<String>>(&mut conn)
            && !keys.is_empty()
        {
            let _: redis::RedisResult<()> = redis::cmd("DEL").arg(&keys).query(&mut conn);
        }
    }
}
