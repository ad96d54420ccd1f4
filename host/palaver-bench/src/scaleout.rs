//! A fresh scale-out cluster for one run: MariaDB databases, a Redis key prefix and, when asked, Kafka topics and a
//! consumer group, all named after the run's tag, handed to the spawned nodes as environment variables and
//! removed afterwards with the `mariadb` and `redis-cli` clients and Kafka's admin API.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use clap::Args;
use rdkafka::ClientConfig;
use rdkafka::admin::{AdminClient, AdminOptions};
use rdkafka::client::DefaultClientContext;

/// Where the scale-out services are.
#[derive(Args, Debug, Clone)]
pub(crate) struct ScaleoutArgs {
    /// The scale-out configuration file given to the spawned nodes.
    #[arg(long, default_value = "deploy/scaleout.toml")]
    pub(crate) scaleout_config: PathBuf,
    /// MariaDB for the scale-out run, without a database name; every run creates fresh databases there.
    #[arg(long, default_value = "mysql://palaver:palaver@127.0.0.1:3306")]
    pub(crate) mysql: String,
    /// Redis for the scale-out run, as host:port; every run uses a fresh key prefix.
    #[arg(long, default_value = "127.0.0.1:6379")]
    pub(crate) redis: String,
    /// Kafka's bootstrap brokers for the runs that use it; every run uses fresh topics and a fresh group.
    #[arg(long, default_value = "127.0.0.1:9092")]
    pub(crate) brokers: String,
    /// Keep the scale-out run's databases, Redis keys and Kafka topics instead of removing them afterwards.
    #[arg(long)]
    pub(crate) keep_data: bool,
}

/// The queue roles' default topic names (`[kafka.topics]`), each of which a run prefixes with its own tag.
pub(crate) const TOPIC_ROLES: [(&str, &str); 8] = [
    ("admin_command", "im.admin.command"),
    ("admin_result", "im.admin.command.result"),
    ("admin_event", "im.admin.event"),
    ("audit", "im.audit"),
    ("push", "im.push.task"),
    ("file_security", "im.file.security"),
    ("plugin_event", "im.plugin.event"),
    ("dead_letter", "im.dlq"),
];

/// The names one run's nodes share.
#[derive(Debug, Clone)]
pub(crate) struct Fresh {
    pub(crate) control: String,
    pub(crate) tenant_prefix: String,
    pub(crate) key_prefix: String,
    /// The topic prefix and consumer group when the run uses Kafka.
    pub(crate) kafka: Option<String>,
}

impl Fresh {
    /// Fresh names under `tag`; `kafka` adds topics and a group.
    pub(crate) fn new(tag: &str, kafka: bool) -> Fresh {
        Fresh {
            control: format!("palaver_bench_{tag}"),
            tenant_prefix: format!("pb_{tag}_t_"),
            key_prefix: format!("im_bench_{tag}"),
            kafka: kafka.then(|| format!("pbk_{tag}")),
        }
    }

    /// The broker topic of a queue role in this run (`admin_command` → `pbk_<tag>.im.admin.command`).
    pub(crate) fn topic(&self, role: &str) -> Option<String> {
        let prefix = self.kafka.as_ref()?;
        TOPIC_ROLES.iter().find(|(r, _)| *r == role).map(|(_, name)| format!("{prefix}.{name}"))
    }

    /// The environment that points a node at these names.
    pub(crate) fn env(&self, args: &ScaleoutArgs) -> Vec<(String, String)> {
        let mut env = vec![
            ("PALAVER_STORE__URL".to_owned(), format!("{}/{}", args.mysql.trim_end_matches('/'), self.control)),
            // A tenant database is named prefix + tenant code; a fresh prefix keeps `default` from reusing an old one.
            ("PALAVER_STORE__TENANT_DATABASE_PREFIX".to_owned(), self.tenant_prefix.clone()),
            (
                "PALAVER_STORE_CONFIG__REDIS".to_owned(),
                format!(r#"{{ addr = "{}", key_prefix = "{}" }}"#, args.redis, self.key_prefix),
            ),
        ];
        if let Some(prefix) = &self.kafka {
            let topics: Vec<String> =
                TOPIC_ROLES.iter().map(|(role, name)| format!(r#"{role} = "{prefix}.{name}""#)).collect();
            env.push(("PALAVER_KAFKA__BROKERS".to_owned(), args.brokers.clone()));
            env.push(("PALAVER_KAFKA__GROUP_ID".to_owned(), prefix.clone()));
            env.push(("PALAVER_KAFKA__TOPICS".to_owned(), format!("{{ {} }}", topics.join(", "))));
        }
        env
    }

    /// Prints what the run uses.
    pub(crate) fn describe(&self) -> String {
        let kafka = self.kafka.as_ref().map_or(String::from("no Kafka"), |p| format!("Kafka topics and group {p}*"));
        format!(
            "control database {}, tenant databases {}*, Redis keys {}*, {kafka}",
            self.control, self.tenant_prefix, self.key_prefix
        )
    }

    /// Removes everything the run made (or says what it kept).
    pub(crate) async fn clean_up(&self, args: &ScaleoutArgs) {
        if args.keep_data {
            println!("kept the scale-out data (--keep-data): {}", self.describe());
            return;
        }
        match drop_databases(&args.mysql, &self.control, &self.tenant_prefix) {
            Ok(dropped) => println!("cleanup: dropped databases {}", dropped.join(", ")),
            Err(err) => {
                println!(
                    "cleanup: could not drop {} and {}* ({err:#}); drop them by hand",
                    self.control, self.tenant_prefix
                )
            }
        }
        match delete_keys(&args.redis, &self.key_prefix) {
            Ok(n) => println!("cleanup: deleted {n} Redis keys under {}", self.key_prefix),
            Err(err) => println!("cleanup: could not delete Redis keys {}* ({err:#})", self.key_prefix),
        }
        if self.kafka.is_some() {
            let topics: Vec<String> = TOPIC_ROLES.iter().filter_map(|(role, _)| self.topic(role)).collect();
            match delete_topics(&args.brokers, &topics).await {
                Ok(()) => println!("cleanup: deleted Kafka topics {}*", self.kafka.as_deref().unwrap_or_default()),
                Err(err) => println!("cleanup: could not delete the Kafka topics ({err:#})"),
            }
        }
    }
}

/// Checks that the configuration file exists, so a run from the wrong directory fails before any server starts.
pub(crate) fn check_config(path: &Path) -> Result<()> {
    ensure!(
        path.is_file(),
        "--scaleout-config {} is not a file (run from the repository root or pass the path)",
        path.display()
    );
    Ok(())
}

/// The server arguments of a scale-out node: `--dev` (the load speaks with Tinode's demo API key, which a
/// scale-out node refuses without it) and the configuration file.
pub(crate) fn server_args(config: &Path) -> Vec<String> {
    vec!["--dev".to_owned(), "--config".to_owned(), config.display().to_string()]
}

/// A Kafka client configuration for `brokers`.
pub(crate) fn kafka_client(brokers: &str) -> ClientConfig {
    let mut cfg = ClientConfig::new();
    cfg.set("bootstrap.servers", brokers).set("client.id", "palaver-bench");
    cfg
}

async fn delete_topics(brokers: &str, topics: &[String]) -> Result<()> {
    let admin: AdminClient<DefaultClientContext> = kafka_client(brokers).create().context("a Kafka admin client")?;
    let names: Vec<&str> = topics.iter().map(String::as_str).collect();
    let opts = AdminOptions::new().operation_timeout(Some(Duration::from_secs(10)));
    for result in admin.delete_topics(&names, &opts).await.context("deleting topics")? {
        if let Err((topic, code)) = result {
            // A topic the nodes never created (the broker was slow) is not a failure of the cleanup.
            if code != rdkafka::types::RDKafkaErrorCode::UnknownTopicOrPartition {
                bail!("{topic}: {code}");
            }
        }
    }
    Ok(())
}

/// Runs `mariadb` against the server of `url` (`mysql://user:pass@host:port`) and returns its output.
fn mariadb(url: &str, sql: &str) -> Result<String> {
    let rest = url.trim_start_matches("mysql://").trim_end_matches('/');
    let (auth, hostport) = rest.rsplit_once('@').context("the MariaDB URL has no user@")?;
    let (user, password) = auth.split_once(':').unwrap_or((auth, ""));
    let (host, port) = hostport.split_once(':').unwrap_or((hostport, "3306"));
    let output = Command::new("mariadb")
        .args(["--protocol=tcp", "-h", host, "-P", port, "-u", user, "-N", "-B", "-e", sql])
        .env("MYSQL_PWD", password)
        .output()
        .context("running mariadb")?;
    if !output.status.success() {
        bail!("mariadb failed: {}", String::from_utf8_lossy(&output.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Drops the control database and every tenant database of the run; returns their names.
fn drop_databases(url: &str, control: &str, tenant_prefix: &str) -> Result<Vec<String>> {
    // The names are made of [a-z0-9_] by this tool, so they are safe to splice into SQL; `_` is escaped
    // because it is a wildcard in LIKE.
    let like = tenant_prefix.replace('_', "\\_");
    let listed = mariadb(url, &format!("SHOW DATABASES LIKE '{like}%'"))?;
    let mut names: Vec<String> = listed.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_owned).collect();
    names.push(control.to_owned());
    let sql: String = names.iter().map(|name| format!("DROP DATABASE IF EXISTS `{name}`;")).collect();
    mariadb(url, &sql)?;
    Ok(names)
}

/// Deletes every key under `prefix` in one server-side script; returns how many went.
fn delete_keys(addr: &str, prefix: &str) -> Result<u64> {
    let (host, port) = addr.split_once(':').unwrap_or((addr, "6379"));
    // KEYS is fine on a bench Redis and keeps this to one round trip.
    let script = "local n = 0 for _, k in ipairs(redis.call('KEYS', ARGV[1])) do redis.call('DEL', k) n = n + 1 end \
                  return n";
    let output = Command::new("redis-cli")
        .args(["-h", host, "-p", port, "EVAL", script, "0", &format!("{prefix}*")])
        .output()
        .context("running redis-cli")?;
    let text = String::from_utf8_lossy(&output.stdout);
    let text = text.trim().trim_start_matches("(integer) ");
    text.parse().with_context(|| format!("unexpected redis-cli answer {text:?}"))
}

/// The same configuration without its `[kafka]` tables, so that a node runs the embedded queue instead.
pub(crate) fn without_kafka(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut skipping = false;
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with('[') {
            skipping = t.starts_with("[kafka]") || t.starts_with("[kafka.");
        }
        if !skipping {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The value of an unlabelled counter or gauge on a node's `/metrics` (0 when it is absent).
pub(crate) async fn metric(addr: std::net::SocketAddr, name: &str) -> Result<f64> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.context("connecting for /metrics")?;
    let request = format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut body = String::new();
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_string(&mut body)).await.context("/metrics")??;
    let value = body
        .lines()
        .find_map(|l| l.strip_prefix(name).and_then(|rest| rest.strip_prefix(' ')))
        .map_or(Ok(0.0), |v| v.trim().parse::<f64>())
        .with_context(|| format!("parsing {name}"))?;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_only_the_kafka_tables() {
        let text =
            "[server]\nlisten = \"x\"\n\n[kafka]\nbrokers = \"b\"\n\n[kafka.topics]\naudit = \"a\"\n[outbox]\nx = 1\n";
        let out = without_kafka(text);
        assert_eq!(out, "[server]\nlisten = \"x\"\n\n[outbox]\nx = 1\n");
    }

    #[test]
    fn fresh_names_carry_the_tag_everywhere() {
        let f = Fresh::new("abc", true);
        assert_eq!(f.topic("admin_command").as_deref(), Some("pbk_abc.im.admin.command"));
        let args = ScaleoutArgs {
            scaleout_config: "x".into(),
            mysql: "mysql://u:p@h:1/".into(),
            redis: "r:2".into(),
            brokers: "k:3".into(),
            keep_data: false,
        };
        let env = f.env(&args);
        assert!(env.contains(&("PALAVER_STORE__URL".into(), "mysql://u:p@h:1/palaver_bench_abc".into())));
        assert!(
            env.iter().any(|(k, v)| k == "PALAVER_KAFKA__TOPICS" && v.contains(r#"dead_letter = "pbk_abc.im.dlq""#))
        );
        assert!(Fresh::new("abc", false).env(&args).iter().all(|(k, _)| !k.starts_with("PALAVER_KAFKA")));
    }
}
