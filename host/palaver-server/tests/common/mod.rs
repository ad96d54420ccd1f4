//! Shared helpers of the server's integration tests: starting nodes in process, a small Tinode client over a
//! real WebSocket, and raw HTTP requests.

#![allow(dead_code, unreachable_pub)]

use base64::Engine;
use futures_util::{SinkExt, StreamExt};
use palaver_server::config::{CliOverrides, Config};
use palaver_server::wiring::{self, Node};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::Message;

pub mod cluster;
pub mod files;
pub mod proxy;
pub mod webhook;

pub const KEY: &str = "AQEAAAABAAD_rAp4DJh05a1HAwFT3A6K";

/// Warnings and errors of the nodes a test starts go to the test's captured output, which libtest prints when the
/// test fails: a 503 in an assertion then comes with its reason. `RUST_LOG` widens it.
pub fn capture_logs() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let filter = tracing_subscriber::EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
        let _ = tracing_subscriber::fmt().with_env_filter(filter).with_test_writer().try_init();
    });
}

pub fn config(dir: &Path, env: &[(&str, &str)]) -> Config {
    capture_logs();
    let mut vars: Vec<(String, String)> = vec![
        ("PALAVER_AUTH__ARGON2_MEMORY_KIB".into(), "64".into()),
        ("PALAVER_AUTH__ARGON2_ITERATIONS".into(), "1".into()),
        ("PALAVER_SERVER__DRAIN_GRACE_MS".into(), "300".into()),
        ("PALAVER_LOG__LEVEL".into(), "warn".into()),
    ];
    vars.extend(env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let cli = CliOverrides { listen: Some("127.0.0.1:0".into()), data_dir: Some(dir.to_owned()), node_id: None };
    Config::load(None, vars, &cli).unwrap()
}

pub async fn start(dir: &Path, env: &[(&str, &str)]) -> Node {
    wiring::start(config(dir, env)).await.unwrap()
}

/// A plugins directory holding the plugins built into `target/plugins` (by `cargo xtask plugins`) whose file
/// names start with one of `prefixes`, such as `"friends-0.1.0."`; each prefix must match exactly one component
/// and its manifest.
pub fn plugins_dir(prefixes: &[&str]) -> tempfile::TempDir {
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/plugins");
    let dir = tempfile::tempdir().unwrap();
    let mut copied = 0;
    for entry in std::fs::read_dir(&built).expect("target/plugins exists: run `cargo xtask plugins` first") {
        let path: PathBuf = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if prefixes.iter().any(|p| name.starts_with(p)) {
            std::fs::copy(&path, dir.path().join(&name)).unwrap();
            copied += 1;
        }
    }
    assert_eq!(
        copied,
        2 * prefixes.len(),
        "the components {prefixes:?} and their manifests are built: run `cargo xtask plugins`"
    );
    dir
}

pub type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

pub struct Client {
    pub ws: Ws,
    pub n: u32,
}

impl Client {
    pub async fn connect(addr: SocketAddr) -> Client {
        let (ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/v0/channels?apikey={KEY}")).await.unwrap();
        Client { ws, n: 0 }
    }

    pub async fn send_raw(&mut self, text: String) {
        self.ws.send(Message::text(text)).await.unwrap();
    }

    /// The next JSON frame, or `None` if the connection closed or nothing came within two seconds.
    pub async fn next(&mut self) -> Option<Value> {
        self.next_within(Duration::from_secs(2)).await
    }

    /// The next JSON frame, or `None` if the connection closed or nothing came within `wait`.
    pub async fn next_within(&mut self, wait: Duration) -> Option<Value> {
        loop {
            match tokio::time::timeout(wait, self.ws.next()).await {
                Ok(Some(Ok(Message::Text(t)))) => {
                    if let Ok(v) = serde_json::from_str(t.as_str()) {
                        return Some(v);
                    }
                    return Some(Value::String(t.as_str().to_owned()));
                }
                Ok(Some(Ok(Message::Ping(_) | Message::Pong(_)))) => continue,
                _ => return None,
            }
        }
    }

    /// Sends `{kind: body}` with a fresh id and returns the ctrl or meta answering it.
    pub async fn req(&mut self, kind: &str, mut body: Value) -> Value {
        self.n += 1;
        let id = format!("r{}", self.n);
        body["id"] = json!(id);
        self.send_raw(json!({ kind: body }).to_string()).await;
        // An answer may take a while on a loaded machine (a first write on MariaDB creates tables); only a
        // closed socket or a long silence means it will not come.
        while let Some(f) = self.next_within(Duration::from_secs(15)).await {
            if f["ctrl"]["id"] == json!(id) {
                return f["ctrl"].clone();
            }
        }
        panic!("no answer to {kind} {id}");
    }

    pub async fn signup(&mut self, login: &str) -> (String, String) {
        self.req("hi", json!({ "ver": "0.25.3" })).await;
        let secret = base64::engine::general_purpose::STANDARD.encode(format!("{login}:secret1"));
        let ctrl = self.req("acc", json!({ "user": "new", "secret": secret, "login": true })).await;
        assert_eq!(ctrl["code"], 200, "{ctrl}");
        (ctrl["params"]["user"].as_str().unwrap().into(), ctrl["params"]["token"].as_str().unwrap().into())
    }
}

/// The names an exposition exports, as PromQL sees them: every sample's name, and the series names of every
/// declared family (`x_total` of a counter, `x_bucket`/`_sum`/`_count` of a histogram), which a labelled
/// family has before its first sample.
pub fn exported_names(metrics: &str) -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    for line in metrics.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut words = rest.split_whitespace();
            let (Some(name), Some(kind)) = (words.next(), words.next()) else { continue };
            let suffixes: &[&str] = match kind {
                "counter" => &["_total"],
                "histogram" => &["_bucket", "_sum", "_count"],
                _ => &[""],
            };
            names.extend(suffixes.iter().map(|s| format!("{name}{s}")));
        } else if !line.starts_with('#') {
            names.extend(line.split(['{', ' ']).next().filter(|n| !n.is_empty()).map(str::to_owned));
        }
    }
    names
}

/// The value of the sample `series` (name and labels exactly as exported), if present.
pub fn sample(metrics: &str, series: &str) -> Option<f64> {
    metrics.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.split(' ').next()?.parse().ok())
}

/// A minimal HTTP/1.1 request; returns the status and the body.
pub async fn http(addr: SocketAddr, method: &str, path: &str, body: &str) -> (u16, String) {
    http_with(addr, method, path, &[], body).await
}

/// A minimal HTTP/1.1 request with extra headers; returns the status and the body.
pub async fn http_with(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let extra: String = headers.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), s.read_to_end(&mut buf)).await.unwrap().unwrap();
    let text = String::from_utf8_lossy(&buf).into_owned();
    let status = text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    (status, body)
}

/// Deletes every Redis key under a test's prefix `tag` (on `redis`, host:port) and says how many there were.
pub async fn drop_redis_keys(redis: &str, tag: &str) -> usize {
    let client = redis::Client::open(format!("redis://{redis}")).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let keys: Vec<String> = redis::cmd("KEYS").arg(format!("{tag}:*")).query_async(&mut conn).await.unwrap();
    if !keys.is_empty() {
        let _: () = redis::cmd("DEL").arg(&keys).query_async(&mut conn).await.unwrap();
    }
    keys.len()
}

/// Every `palaver_…` metric name the Grafana dashboard (`deploy/grafana/palaver.json`) and the Prometheus
/// alert rules (`deploy/prometheus/alerts.yaml`) read.
pub fn deploy_metric_names() -> std::collections::BTreeSet<String> {
    let read = |path: &str| {
        let full = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(path);
        std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
    };
    let dashboard: Value = serde_json::from_str(&read("deploy/grafana/palaver.json")).unwrap();
    let panels = dashboard["panels"].as_array().expect("panels");
    assert!(!panels.is_empty());
    let targets = panels.iter().flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default());
    let mut exprs: Vec<String> =
        targets.map(|t| t["expr"].as_str().expect("every target has an expr").to_owned()).collect();
    let alerts = read("deploy/prometheus/alerts.yaml");
    let rules: Vec<String> = alerts.lines().filter_map(|l| l.trim().strip_prefix("expr:")).map(str::to_owned).collect();
    assert!(rules.len() >= 5, "the alert rules: {rules:?}");
    exprs.extend(rules);
    let mut names = std::collections::BTreeSet::new();
    for expr in &exprs {
        let mut rest = expr.as_str();
        while let Some(at) = rest.find("palaver_") {
            let name: String =
                rest[at..].chars().take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_').collect();
            rest = &rest[at + name.len()..];
            names.insert(name);
        }
    }
    assert!(names.len() >= 10, "{names:?}");
    names
}

/// Drops the databases whose names start with `tag`, a test's control and tenant databases (best effort, with
/// the mysql client).
pub fn drop_databases(tag: &str) {
    use std::process::Command;
    let login = ["-h", "127.0.0.1", "-P", "3306", "-upalaver", "-ppalaver"];
    let Ok(out) =
        Command::new("mysql").args(login).args(["-N", "-e"]).arg(format!("SHOW DATABASES LIKE '{tag}%'")).output()
    else {
        return;
    };
    let sql: String = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with(tag))
        .map(|db| format!("DROP DATABASE IF EXISTS `{db}`;"))
        .collect();
    if !sql.is_empty() {
        let _ = Command::new("mysql").args(login).arg("-e").arg(sql).output();
    }
}
