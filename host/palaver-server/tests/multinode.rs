//! Several real `palaver serve` processes on loopback, sharing one MariaDB control database, one tenant
//! database prefix and one Redis key prefix per test, talked to over real WebSockets: the multi-node
//! scenarios of `palaver-service`'s in-process `multinode` tests, now across processes, the Redis Pub/Sub bus,
//! Redis presence and session-control counters, plus what only real processes show (SIGKILL, duplicate node
//! ids, a cut Pub/Sub connection).
//!
//! Every test owns its nodes (killed on drop), its databases and its Redis keys (removed on drop), so the tests
//! run in parallel. Nodes beat every 500 ms and presence lives 2 s, so "within one heartbeat" is observable.

mod common;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use common::proxy::Proxy;
use common::{Client, KEY, http_with};
use futures_util::{SinkExt, StreamExt};
use palaver_core::UserId;
use serde_json::{Value, json};
use std::collections::{BTreeSet, VecDeque};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::Message;

const HEARTBEAT_MS: u64 = 500;
const PRESENCE_TTL_S: u64 = 2;
const ADMIN_TOKEN: &str = "multinode-admin-token-0123456789";
/// The default tenant every node ensures (`TenantId::DEFAULT`), whose API key is the demo key.
const DEFAULT_TENANT: u64 = 1;
/// How long a test waits for something that should happen "soon" (a bus delivery, a close).
const SOON: Duration = Duration::from_secs(5);

fn mysql_addr() -> SocketAddr {
    std::env::var("PALAVER_TEST_MYSQL_ADDR").unwrap_or_else(|_| "127.0.0.1:3306".into()).parse().unwrap()
}

fn redis_addr() -> SocketAddr {
    std::env::var("PALAVER_TEST_REDIS_ADDR").unwrap_or_else(|_| "127.0.0.1:6379".into()).parse().unwrap()
}

/// A port nothing listens on right now (the node is told it; `127.0.0.1:0` would not be discoverable).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

// ---------------------------------------------------------------------------------------------------------
// Nodes as processes.

/// One test's shared state: the tag naming its control database, tenant databases and Redis keys, the token
/// key every node shares, and a temporary directory for configuration files, data and logs.
struct Cluster {
    tag: String,
    token_key: String,
    dir: tempfile::TempDir,
    /// Extra `PALAVER_*` settings for every node.
    env: Vec<(String, String)>,
}

impl Cluster {
    fn new(name: &str) -> Cluster {
        let key: Vec<u8> = (0..32).map(|_| rand::random::<u8>()).collect();
        Cluster {
            tag: format!("pt_mn_{name}_{:08x}", rand::random::<u32>()),
            token_key: STANDARD.encode(key),
            dir: tempfile::tempdir().unwrap(),
            env: Vec::new(),
        }
    }

    /// Writes the configuration of a node listening on `port` with Redis at `redis` (a proxy in fault tests).
    fn write_config(&self, id: &str, port: u16, redis: SocketAddr) -> PathBuf {
        let data = self.dir.path().join(format!("data-{id}-{port}"));
        let toml = format!(
            r#"[server]
listen = "127.0.0.1:{port}"
data_dir = "{data}"
drain_grace_ms = 300
heartbeat_ms = {HEARTBEAT_MS}

[store]
kind = "mysql"
url = "mysql://palaver:palaver@{mysql}/{tag}_ctl"
tenant_database_prefix = "{tag}_t_"
acquire_timeout_ms = 3000

[store_config.redis]
addr = "{redis}"
key_prefix = "{tag}"
presence_ttl_seconds = {PRESENCE_TTL_S}
dial_timeout_ms = 300
read_timeout_ms = 1000
write_timeout_ms = 1000

[auth]
token_key = "{key}"
argon2_memory_kib = 64
argon2_iterations = 1

[limits]
rate_per_second = 0

[admin]
token = "{ADMIN_TOKEN}"

[log]
level = "warn"
"#,
            data = data.display(),
            mysql = mysql_addr(),
            tag = self.tag,
            key = self.token_key,
        );
        let path = self.dir.path().join(format!("{id}-{port}.toml"));
        std::fs::write(&path, toml).unwrap();
        path
    }

    /// Starts `palaver serve` as node `id` without waiting for it.
    fn spawn(&self, id: &str, redis: SocketAddr) -> NodeProc {
        let port = free_port();
        let config = self.write_config(id, port, redis);
        let stderr = self.dir.path().join(format!("{id}-{port}.stderr"));
        let child = Command::new(env!("CARGO_BIN_EXE_palaver"))
            .arg("serve")
            .arg("--config")
            .arg(&config)
            .args(["--node-id", id])
            // The clients use Tinode's demo API key.
            .arg("--dev")
            .env("PALAVER_LOG", "warn")
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .expect("the palaver binary runs");
        NodeProc { child, addr: SocketAddr::from(([127, 0, 0, 1], port)), id: id.into(), stderr, config }
    }

    /// Starts node `id` and waits until it is ready.
    async fn start(&self, id: &str) -> NodeProc {
        self.start_with_redis(id, redis_addr()).await
    }

    async fn start_with_redis(&self, id: &str, redis: SocketAddr) -> NodeProc {
        let mut node = self.spawn(id, redis);
        node.ready().await;
        node
    }

    /// Starts the first node alone (it creates the control database and the default tenant), then the others
    /// at once.
    async fn start_all(&self, ids: &[&str]) -> Vec<NodeProc> {
        let mut nodes = vec![self.start(ids[0]).await];
        let mut rest: Vec<NodeProc> = ids[1..].iter().map(|id| self.spawn(id, redis_addr())).collect();
        for n in &mut rest {
            n.ready().await;
        }
        nodes.extend(rest);
        nodes
    }

    /// `palaver tenant create CODE` with a node's configuration; returns (tenant id, API key).
    fn create_tenant(&self, node: &NodeProc, code: &str) -> (u64, String) {
        let out = Command::new(env!("CARGO_BIN_EXE_palaver"))
            .arg("tenant")
            .arg("--config")
            .arg(&node.config)
            .args(["create", code])
            .output()
            .unwrap();
        assert!(out.status.success(), "tenant create: {}", String::from_utf8_lossy(&out.stderr));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        (v["id"].as_u64().unwrap(), v["api_key"].as_str().unwrap().to_owned())
    }

    fn redis_key(&self, tenant: u64, rest: &str) -> String {
        format!("{}:{tenant}:{rest}", self.tag)
    }
}

impl Drop for Cluster {
    /// Best effort: drops this test's databases and Redis keys so that runs do not pile them up.
    fn drop(&mut self) {
        let m = mysql_addr();
        let list = Command::new("mysql")
            .args(["-h", &m.ip().to_string(), "-P", &m.port().to_string(), "-upalaver", "-ppalaver", "-N", "-e"])
            .arg(format!("SHOW DATABASES LIKE '{}\\_%'", self.tag))
            .output();
        if let Ok(out) = list {
            let sql: String = String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter(|l| l.starts_with(&self.tag))
                .map(|db| format!("DROP DATABASE IF EXISTS `{db}`;"))
                .collect();
            if !sql.is_empty() {
                let _ = Command::new("mysql")
                    .args(["-h", &m.ip().to_string(), "-P", &m.port().to_string(), "-upalaver", "-ppalaver", "-e"])
                    .arg(sql)
                    .output();
            }
        }
        if let Ok(mut conn) = redis::Client::open(format!("redis://{}", redis_addr())).and_then(|c| c.get_connection())
            && let Ok(keys) = redis::cmd("KEYS").arg(format!("{}:*", self.tag)).query::<Vec<String>>(&mut conn)
            && !keys.is_empty()
        {
            let _: redis::RedisResult<()> = redis::cmd("DEL").arg(&keys).query(&mut conn);
        }
    }
}

/// A running `palaver serve`, killed (SIGKILL) when dropped.
struct NodeProc {
    child: Child,
    addr: SocketAddr,
    id: String,
    stderr: PathBuf,
    config: PathBuf,
}

impl NodeProc {
    fn stderr_text(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Waits for `/readyz` to answer 200; panics with the node's log if it exits or takes too long.
    async fn ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(40);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("node {} exited ({status}) before it was ready:\n{}", self.id, self.stderr_text());
            }
            if get_status(self.addr, "/readyz").await == Some(200) {
                return;
            }
            assert!(Instant::now() < deadline, "node {} not ready in time:\n{}", self.id, self.stderr_text());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits up to `timeout` for the process to exit by itself.
    async fn exited_within(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// SIGKILL, as a crash: nothing is cleaned up.
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, and waits for the drain to finish.
    async fn terminate(&mut self) -> ExitStatus {
        let ok = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status().unwrap();
        assert!(ok.success());
        self.exited_within(Duration::from_secs(10)).await.expect("the node stops on SIGTERM")
    }

    async fn admin(&self, uid: &str, action: &str, body: Value) -> (u16, Value) {
        let auth = format!("Bearer {ADMIN_TOKEN}");
        let path = format!("/v1/admin/tenants/{DEFAULT_TENANT}/users/{uid}/{action}");
        let (status, body) = http_with(
            self.addr,
            "POST",
            &path,
            &[("Authorization", &auth), ("Content-Type", "application/json")],
            &body.to_string(),
        )
        .await;
        (status, serde_json::from_str(&body).unwrap_or(Value::String(body)))
    }
}

impl Drop for NodeProc {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A GET's status, or `None` if nothing answers.
async fn get_status(addr: SocketAddr, path: &str) -> Option<u16> {
    let mut s = tokio::time::timeout(Duration::from_secs(1), tokio::net::TcpStream::connect(addr)).await.ok()?.ok()?;
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.ok()?;
    let mut buf = Vec::new();
    tokio::time::timeout(Duration::from_secs(2), s.read_to_end(&mut buf)).await.ok()?.ok()?;
    String::from_utf8_lossy(&buf).split_whitespace().nth(1)?.parse().ok()
}

// ---------------------------------------------------------------------------------------------------------
// A client device: `common::Client` plus a backlog, so that frames arriving while a request waits for its
// answer are kept (and counted) rather than dropped.

struct Dev {
    c: Client,
    backlog: VecDeque<Value>,
    closed: bool,
    user: String,
    token: String,
}

fn secret(login: &str, pass: &str) -> String {
    STANDARD.encode(format!("{login}:{pass}"))
}

impl Dev {
    async fn connect(addr: SocketAddr, key: &str) -> Dev {
        let (ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/v0/channels?apikey={key}")).await.unwrap();
        Dev {
            c: Client { ws, n: 0 },
            backlog: VecDeque::new(),
            closed: false,
            user: String::new(),
            token: String::new(),
        }
    }

    /// `{hi}` naming the device and platform, then `{acc}` creating `login` (password `secret1`) logged in.
    async fn signup(addr: SocketAddr, key: &str, login: &str, dev: &str, platf: &str) -> Dev {
        let mut d = Dev::connect(addr, key).await;
        d.hi(dev, platf).await;
        let ctrl = d.ctrl("acc", json!({ "user": "new", "secret": secret(login, "secret1"), "login": true })).await;
        assert_eq!(ctrl["code"], 200, "signup {login}: {ctrl}");
        d.logged_in(&ctrl);
        d
    }

    /// `{hi}` then a basic login with password `secret1`.
    async fn login(addr: SocketAddr, key: &str, login: &str, dev: &str, platf: &str) -> Dev {
        let mut d = Dev::connect(addr, key).await;
        d.hi(dev, platf).await;
        let ctrl = d.ctrl("login", json!({ "scheme": "basic", "secret": secret(login, "secret1") })).await;
        assert_eq!(ctrl["code"], 200, "login {login}: {ctrl}");
        d.logged_in(&ctrl);
        d
    }

    /// `{hi}` then a token login; returns the login's ctrl whatever its code.
    async fn token_login(addr: SocketAddr, key: &str, token: &str, dev: &str) -> (Dev, Value) {
        let mut d = Dev::connect(addr, key).await;
        d.hi(dev, "web").await;
        let ctrl = d.ctrl("login", json!({ "scheme": "token", "secret": token })).await;
        if ctrl["code"] == 200 {
            d.logged_in(&ctrl);
        }
        (d, ctrl)
    }

    fn logged_in(&mut self, ctrl: &Value) {
        self.user = ctrl["params"]["user"].as_str().unwrap().to_owned();
        self.token = ctrl["params"]["token"].as_str().unwrap().to_owned();
    }

    async fn hi(&mut self, dev: &str, platf: &str) {
        let ctrl = self.ctrl("hi", json!({ "ver": "0.25.3", "ua": "multinode/1.0", "dev": dev, "platf": platf })).await;
        assert!(ctrl["code"] == 201 || ctrl["code"] == 200, "{ctrl}");
    }

    /// The next frame before `deadline`; `None` on timeout or when the connection closed.
    async fn frame(&mut self, deadline: tokio::time::Instant) -> Option<Value> {
        if self.closed {
            return None;
        }
        loop {
            match tokio::time::timeout_at(deadline, self.c.ws.next()).await {
                Err(_) => return None,
                Ok(Some(Ok(Message::Text(t)))) => {
                    return Some(serde_json::from_str(t.as_str()).unwrap_or_else(|_| Value::String(t.to_string())));
                }
                Ok(Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Binary(_) | Message::Frame(_)))) => {}
                Ok(Some(Ok(Message::Close(_)))) => {
                    // Finish the close handshake as a real client does: polling on sends tungstenite's reply.
                    let rest = async { while self.c.ws.next().await.is_some() {} };
                    let _ = tokio::time::timeout(Duration::from_secs(1), rest).await;
                    self.closed = true;
                    return None;
                }
                Ok(Some(Err(_)) | None) => {
                    self.closed = true;
                    return None;
                }
            }
        }
    }

    async fn send(&mut self, kind: &str, mut body: Value) -> String {
        self.c.n += 1;
        let id = format!("r{}", self.c.n);
        body["id"] = json!(id);
        self.c.ws.send(Message::text(json!({ kind: body }).to_string())).await.unwrap();
        id
    }

    /// Sends `{kind: body}` and returns the frame answering it (a ctrl or meta with its id); everything else
    /// that arrives meanwhile goes to the backlog.
    async fn req(&mut self, kind: &str, body: Value) -> Value {
        let id = self.send(kind, body).await;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while let Some(f) = self.frame(deadline).await {
            if f["ctrl"]["id"] == json!(id) || f["meta"]["id"] == json!(id) {
                return f;
            }
            self.backlog.push_back(f);
        }
        panic!("no answer to {kind} {id} (closed: {}); backlog {:?}", self.closed, self.backlog);
    }

    async fn ctrl(&mut self, kind: &str, body: Value) -> Value {
        let f = self.req(kind, body).await;
        assert!(f.get("ctrl").is_some(), "expected a ctrl to {kind}: {f}");
        f["ctrl"].clone()
    }

    async fn sub(&mut self, topic: &str) {
        let ctrl = self.ctrl("sub", json!({ "topic": topic })).await;
        assert_eq!(ctrl["code"], 200, "sub {topic}: {ctrl}");
    }

    async fn publish(&mut self, topic: &str, content: Value) -> i64 {
        let ctrl = self.ctrl("pub", json!({ "topic": topic, "content": content })).await;
        assert_eq!(ctrl["code"], 202, "pub {topic}: {ctrl}");
        ctrl["params"]["seq"].as_i64().unwrap()
    }

    /// The first frame (from the backlog first) matching `pred` within `timeout`, removed from the backlog.
    async fn next_until(&mut self, pred: impl Fn(&Value) -> bool, timeout: Duration) -> Option<Value> {
        if let Some(i) = self.backlog.iter().position(&pred) {
            return self.backlog.remove(i);
        }
        let deadline = tokio::time::Instant::now() + timeout;
        while let Some(f) = self.frame(deadline).await {
            if pred(&f) {
                return Some(f);
            }
            self.backlog.push_back(f);
        }
        None
    }

    /// Every frame in the backlog and whatever arrives within `ms`; the backlog is emptied.
    async fn collect(&mut self, ms: u64) -> Vec<Value> {
        let deadline = tokio::time::Instant::now() + Duration::from_millis(ms);
        while let Some(f) = self.frame(deadline).await {
            self.backlog.push_back(f);
        }
        self.backlog.drain(..).collect()
    }

    /// Reads until the connection closes or `timeout` passes; true if it closed. Frames go to the backlog.
    async fn closes_within(&mut self, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        while let Some(f) = self.frame(deadline).await {
            self.backlog.push_back(f);
        }
        self.closed
    }

    /// `{data}` of `topic` received live so far and within `ms`: their seqs, in arrival order.
    async fn live_seqs(&mut self, topic: &str, ms: u64) -> Vec<i64> {
        data_seqs(&self.collect(ms).await, topic)
    }

    /// Waits until `n` `{data}` frames of `topic` arrived (or `SOON` passed), then `extra_ms` more for any
    /// duplicate; returns their seqs in arrival order. Other frames stay in the backlog.
    async fn await_data(&mut self, topic: &str, n: usize, extra_ms: u64) -> Vec<i64> {
        let mut seqs = Vec::new();
        let deadline = Instant::now() + SOON;
        while seqs.len() < n && Instant::now() < deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next_until(|f| f["data"]["topic"] == topic, left).await {
                Some(f) => seqs.push(f["data"]["seq"].as_i64().unwrap()),
                None => break,
            }
        }
        let rest = self.collect(extra_ms).await;
        seqs.extend(data_seqs(&rest, topic));
        self.backlog.extend(rest.into_iter().filter(|f| f.get("data").is_none()));
        seqs
    }

    /// `{get what:"data"}` on an attached topic (optionally `since`): the seqs of the stored messages, sorted.
    /// The backlog is emptied first, so that live frames received before are not taken for history.
    async fn history(&mut self, topic: &str, since: Option<i64>) -> Vec<i64> {
        self.collect(0).await;
        let mut q = json!({ "topic": topic, "what": "data" });
        if let Some(s) = since {
            q["data"] = json!({ "since": s });
        }
        let id = self.send("get", q).await;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        let mut seqs = Vec::new();
        while let Some(f) = self.frame(deadline).await {
            if f["ctrl"]["id"] == json!(id) {
                seqs.sort_unstable();
                return seqs;
            }
            if f["data"]["topic"] == topic {
                seqs.push(f["data"]["seq"].as_i64().unwrap());
            }
        }
        panic!("no end to get data on {topic}");
    }
}

fn data_seqs(frames: &[Value], topic: &str) -> Vec<i64> {
    frames.iter().filter(|f| f["data"]["topic"] == topic).filter_map(|f| f["data"]["seq"].as_i64()).collect()
}

fn ctrl_205(frames: &VecDeque<Value>) -> Option<&Value> {
    frames.iter().find(|f| f["ctrl"]["code"] == 205)
}

fn uid_num(uid: &str) -> u64 {
    UserId::parse(uid).unwrap().0
}

async fn new_group(owner: &mut Dev) -> String {
    let ctrl = owner.ctrl("sub", json!({ "topic": "new1" })).await;
    assert_eq!(ctrl["code"], 200, "{ctrl}");
    ctrl["topic"].as_str().unwrap().to_owned()
}

// ---------------------------------------------------------------------------------------------------------
// 1

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p2p_reaches_every_device_once_and_is_stored_once() {
    let cl = Cluster::new("p2p");
    let nodes = cl.start_all(&["n1", "n2"]).await;
    let (n1, n2) = (nodes[0].addr, nodes[1].addr);
    let mut a1 = Dev::signup(n1, KEY, "alice", "a1", "web").await;
    let mut b1 = Dev::signup(n1, KEY, "bob", "b1", "web").await;
    let mut a2 = Dev::login(n2, KEY, "alice", "a2", "ios").await;
    let mut b2 = Dev::login(n2, KEY, "bob", "b2", "android").await;
    let (alice, bob) = (a1.user.clone(), b1.user.clone());
    for (d, peer) in [(&mut a1, &bob), (&mut a2, &bob), (&mut b1, &alice), (&mut b2, &alice)] {
        d.sub(peer).await;
    }
    assert_eq!(b1.publish(&alice, json!("hello")).await, 1);
    // Each side sees the P2P topic under the peer's id.
    assert_eq!(a1.await_data(&bob, 1, 0).await, [1], "alice's device on node1");
    assert_eq!(a2.await_data(&bob, 1, 0).await, [1], "alice's device on node2");
    assert_eq!(b2.await_data(&alice, 1, 0).await, [1], "bob's other device on node2");
    assert_eq!(b1.await_data(&alice, 1, 0).await, [1], "the sender's own echo");
    // Exactly once: nothing more arrives anywhere.
    for (d, topic) in [(&mut a1, &bob), (&mut a2, &bob), (&mut b1, &alice), (&mut b2, &alice)] {
        assert!(d.live_seqs(topic, 600).await.is_empty(), "a duplicate delivery");
    }
    // Stored once: a third connection (alice, token, node2) reads one message.
    let (mut a3, ctrl) = Dev::token_login(n2, KEY, &a1.token, "a3").await;
    assert_eq!(ctrl["code"], 200, "{ctrl}");
    a3.sub(&bob).await;
    assert_eq!(a3.history(&bob, None).await, [1]);
}

// 2

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_members_on_three_nodes_receive_every_message_in_order_once() {
    let cl = Cluster::new("grp");
    let nodes = cl.start_all(&["n1", "n2", "n3"]).await;
    let addrs: Vec<SocketAddr> = nodes.iter().map(|n| n.addr).collect();
    let mut owner = Dev::signup(addrs[0], KEY, "owner", "o", "web").await;
    let grp = new_group(&mut owner).await;
    let mut members = Vec::new();
    for (i, addr) in addrs.iter().enumerate() {
        let mut m = Dev::signup(*addr, KEY, &format!("member{i}"), "m", "web").await;
        m.sub(&grp).await;
        members.push(m);
    }
    // Sequential publishers on every node: each message is acknowledged before the next, so every member
    // must see them in seq order.
    let mut expected = Vec::new();
    for i in 0..9 {
        let p = if i % 3 == 0 { &mut owner } else { &mut members[i % 3] };
        expected.push(p.publish(&grp, json!({ "i": i })).await);
    }
    assert_eq!(expected, (1..=9).collect::<Vec<i64>>());
    for (i, m) in members.iter_mut().enumerate() {
        assert_eq!(m.await_data(&grp, 9, 0).await, expected, "member on node{}", i + 1);
    }
    assert_eq!(owner.await_data(&grp, 9, 0).await, expected, "the owner");
    // Three publishers on three nodes at once: every member gets all 30, once each, and each publisher's
    // messages in its order (across nodes, only seq gaps for the concurrent case are not ordered).
    let [m0, m1, m2] = &mut members[..] else { unreachable!() };
    let (s0, s1, s2) = tokio::join!(burst(m0, &grp, 0), burst(m1, &grp, 1), burst(m2, &grp, 2));
    let all: BTreeSet<i64> = s0.iter().chain(&s1).chain(&s2).copied().collect();
    assert_eq!(all, (10..=39).collect(), "contiguous seqs, none reused");
    for (i, m) in members.iter_mut().chain(std::iter::once(&mut owner)).enumerate() {
        let got = m.await_data(&grp, 30, 300).await;
        assert_eq!(got.len(), 30, "member {i}: every message once: {got:?}");
        assert_eq!(got.iter().copied().collect::<BTreeSet<_>>(), all, "member {i}");
        for own in [&s0, &s1, &s2] {
            let order: Vec<i64> = got.iter().copied().filter(|s| own.contains(s)).collect();
            assert_eq!(&order, own, "member {i}: one publisher's messages in its order");
        }
    }
}

async fn burst(d: &mut Dev, grp: &str, who: usize) -> Vec<i64> {
    let mut seqs = Vec::new();
    for i in 0..10 {
        seqs.push(d.publish(grp, json!({ "who": who, "i": i })).await);
    }
    seqs
}

// 3

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_with_the_same_client_mid_on_another_node_gets_the_same_seq_and_no_second_delivery() {
    let cl = Cluster::new("mid");
    let nodes = cl.start_all(&["n1", "n2"]).await;
    let (n1, n2) = (nodes[0].addr, nodes[1].addr);
    let mut u1 = Dev::signup(n1, KEY, "sender", "s1", "web").await;
    let grp = new_group(&mut u1).await;
    let mut u2 = Dev::login(n2, KEY, "sender", "s2", "ios").await;
    u2.sub(&grp).await;
    let mut r1 = Dev::signup(n1, KEY, "reader1", "r", "web").await;
    r1.sub(&grp).await;
    let mut r2 = Dev::signup(n2, KEY, "reader2", "r", "web").await;
    r2.sub(&grp).await;
    let first = u1.ctrl("pub", json!({ "topic": grp, "content": "once", "client_mid": "cm-1" })).await;
    assert_eq!(first["code"], 202, "{first}");
    let retry = u2.ctrl("pub", json!({ "topic": grp, "content": "once", "client_mid": "cm-1" })).await;
    assert_eq!(retry["code"], 202, "{retry}");
    assert_eq!(retry["params"]["seq"], first["params"]["seq"], "the retry is told the original seq");
    for (d, who) in [(&mut r1, "reader on node1"), (&mut r2, "reader on node2"), (&mut u2, "sender's other device")] {
        assert_eq!(d.await_data(&grp, 1, 700).await, [1], "{who}: one delivery");
    }
    // Racing retries of one user on two nodes: one seq per client_mid (or a retryable 503 for the loser).
    for round in 0..5 {
        let mid = format!("race-{round}");
        let a = u1.ctrl("pub", json!({ "topic": grp, "content": round, "client_mid": mid }));
        let b = u2.ctrl("pub", json!({ "topic": grp, "content": round, "client_mid": mid }));
        let (a, b) = tokio::join!(a, b);
        for c in [&a, &b] {
            assert!(c["code"] == 202 || c["code"] == 503, "{c}");
        }
        let seqs: BTreeSet<i64> = [&a, &b].iter().filter_map(|c| c["params"]["seq"].as_i64()).collect();
        assert_eq!(seqs.len(), 1, "one seq per client_mid: {a} {b}");
    }
    let live = r2.await_data(&grp, 5, 700).await;
    assert_eq!(live, (2..=6).collect::<Vec<i64>>(), "each race delivered once, in order");
    assert_eq!(r1.history(&grp, None).await, (1..=6).collect::<Vec<i64>>(), "stored once each");
}

// 4

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_on_one_device_reaches_the_other_device_and_the_peer_on_another_node() {
    let cl = Cluster::new("read");
    let nodes = cl.start_all(&["n1", "n2"]).await;
    let (n1, n2) = (nodes[0].addr, nodes[1].addr);
    let mut a1 = Dev::signup(n1, KEY, "alice", "a1", "web").await;
    let mut b = Dev::signup(n2, KEY, "bob", "b", "web").await;
    let mut a2 = Dev::login(n2, KEY, "alice", "a2", "ios").await;
    let (alice, bob) = (a1.user.clone(), b.user.clone());
    a1.sub(&bob).await;
    b.sub(&alice).await;
    a2.sub("me").await;
    assert_eq!(b.publish(&alice, json!("one")).await, 1);
    assert_eq!(a1.await_data(&bob, 1, 0).await, [1]);
    a1.send("note", json!({ "topic": bob, "what": "read", "seq": 1 })).await;
    let p = a2.next_until(|f| f["pres"]["what"] == "read", SOON).await;
    let p = p.unwrap_or_else(|| panic!("no pres read on me on node2; got {:?}", a2.backlog));
    assert_eq!(p["pres"]["topic"], "me", "{p}");
    assert_eq!(p["pres"]["src"], bob.as_str(), "{p}");
    assert_eq!(p["pres"]["seq"], 1, "{p}");
    let i = b.next_until(|f| f["info"]["what"] == "read", SOON).await;
    let i = i.unwrap_or_else(|| panic!("no info read for the peer on node2; got {:?}", b.backlog));
    assert_eq!(i["info"]["from"], alice.as_str(), "{i}");
    assert_eq!(i["info"]["topic"], alice.as_str(), "{i}");
    assert_eq!(i["info"]["seq"], 1, "{i}");
    // The reading device itself is not told its own read as info.
    let own = a1.collect(300).await;
    assert!(!own.iter().any(|f| f["info"]["what"] == "read"), "{own:?}");
}

// 5

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kicking_a_device_closes_only_that_device_on_whichever_node_it_is() {
    let cl = Cluster::new("kick");
    let nodes = cl.start_all(&["n1", "n2"]).await;
    let (n1, n2) = (nodes[0].addr, nodes[1].addr);
    let mut laptop = Dev::signup(n1, KEY, "carol", "laptop1", "web").await;
    let mut phone = Dev::login(n2, KEY, "carol", "phone1", "ios").await;
    let mut tablet = Dev::login(n2, KEY, "carol", "tablet1", "android").await;
    let mut peer = Dev::signup(n1, KEY, "dan", "d", "web").await;
    let (carol, dan) = (laptop.user.clone(), peer.user.clone());
    for d in [&mut laptop, &mut phone, &mut tablet] {
        d.sub(&dan).await;
    }
    peer.sub(&carol).await;
    // The phone is on node2; the kick goes to node1's admin API.
    let (status, body) = nodes[0].admin(&carol, "evict", json!({ "device": "phone1", "reason": "kicked" })).await;
    assert_eq!(status, 200, "{body}");
    // A device kick is the admin command `user.device.revoke`: the body is its result record.
    assert_eq!((body["type"].clone(), body["status"].clone()), (json!("user.device.revoke"), json!("succeeded")));
    assert_eq!(body["detail"]["closed_here"], 0, "nothing of the phone on node1: {body}");
    assert!(phone.closes_within(SOON).await, "the phone on node2 is closed");
    let ctrl = ctrl_205(&phone.backlog).unwrap_or_else(|| panic!("no ctrl 205 before the close: {:?}", phone.backlog));
    assert_eq!(ctrl["ctrl"]["params"]["reason"], "kicked");
    // Longer than two heartbeats: the periodic check must not close the others either.
    assert!(!tablet.closes_within(Duration::from_millis(3 * HEARTBEAT_MS)).await, "the tablet (same node) stays");
    assert!(!laptop.closes_within(Duration::from_millis(100)).await, "the laptop (other node) stays");
    let s = peer.publish(&carol, json!("still there?")).await;
    assert_eq!(laptop.await_data(&dan, 1, 0).await, [s]);
    assert_eq!(tablet.await_data(&dan, 1, 0).await, [s]);
    // Now the laptop on node1, kicked through node2.
    let (status, body) = nodes[1].admin(&carol, "evict", json!({ "device": "laptop1", "reason": "kicked" })).await;
    assert_eq!(status, 200, "{body}");
    assert!(laptop.closes_within(SOON).await, "the laptop on node1 is closed");
    assert!(ctrl_205(&laptop.backlog).is_some(), "{:?}", laptop.backlog);
    assert!(!tablet.closes_within(Duration::from_millis(3 * HEARTBEAT_MS)).await, "the tablet stays");
    let s = peer.publish(&carol, json!("and now?")).await;
    assert_eq!(tablet.await_data(&dan, 1, 0).await, [s]);
    // The kick revoked no token: the phone logs back in and is not closed by the older control.
    let (mut again, ctrl) = Dev::token_login(n2, KEY, &phone.token, "phone1").await;
    assert_eq!(ctrl["code"], 200, "{ctrl}");
    assert!(!again.closes_within(Duration::from_millis(3 * HEARTBEAT_MS)).await, "a newer session survives");
}

// 6

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_password_change_closes_every_other_session_on_every_node_and_revokes_old_tokens() {
    let cl = Cluster::new("pwd");
    let nodes = cl.start_all(&["n1", "n2"]).await;
    let (n1, n2) = (nodes[0].addr, nodes[1].addr);
    let mut main = Dev::signup(n1, KEY, "erin", "main", "web").await;
    let old_token = main.token.clone();
    let mut others = [
        Dev::login(n1, KEY, "erin", "same-node", "ios").await,
        Dev::login(n2, KEY, "erin", "other-node-1", "android").await,
        Dev::login(n2, KEY, "erin", "other-node-2", "web").await,
    ];
    let mut bystander = Dev::signup(n2, KEY, "frank", "f", "web").await;
    let ctrl = main
        .ctrl(
            "acc",
            json!({ "user": main.user, "scheme": "basic", "secret": secret("erin", "newsecret1"),
            "tmpscheme": "basic", "tmpsecret": secret("erin", "secret1") }),
        )
        .await;
    assert_eq!(ctrl["code"], 200, "{ctrl}");
    let new_token = ctrl["params"]["token"].as_str().map(str::to_owned);
    for (i, o) in others.iter_mut().enumerate() {
        assert!(o.closes_within(SOON).await, "session {i} is closed");
        let c = ctrl_205(&o.backlog).unwrap_or_else(|| panic!("session {i}: no ctrl 205: {:?}", o.backlog));
        assert_eq!(c["ctrl"]["params"]["reason"], "password changed", "{c}");
    }
    assert!(!main.closes_within(Duration::from_millis(3 * HEARTBEAT_MS)).await, "the changing session stays");
    assert!(!bystander.closes_within(Duration::from_millis(100)).await, "another user is untouched");
    let me = main.req("get", json!({ "topic": "me", "what": "desc" })).await;
    assert!(me.get("meta").is_some() || me["ctrl"]["code"] == 200, "the changing session still works: {me}");
    let (_, ctrl) = Dev::token_login(n2, KEY, &old_token, "late").await;
    assert_eq!(ctrl["code"], 401, "the old token fails on node2: {ctrl}");
    if let Some(t) = new_token {
        let (_, ctrl) = Dev::token_login(n2, KEY, &t, "late").await;
        assert_eq!(ctrl["code"], 200, "the new token works on node2: {ctrl}");
    }
    let mut d = Dev::connect(n2, KEY).await;
    d.hi("pw", "web").await;
    let ctrl = d.ctrl("login", json!({ "scheme": "basic", "secret": secret("erin", "secret1") })).await;
    assert_eq!(ctrl["code"], 401, "the old password fails: {ctrl}");
    let ctrl = d.ctrl("login", json!({ "scheme": "basic", "secret": secret("erin", "newsecret1") })).await;
    assert_eq!(ctrl["code"], 200, "the new password works: {ctrl}");
}

// 7

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_pubsub_connection_loses_nothing_acknowledged_and_the_client_catches_up_by_seq() {
    let cl = Cluster::new("cut");
    let proxy = Proxy::start(redis_addr()).await;
    let n1 = cl.start("n1").await;
    let n2 = cl.start_with_redis("n2", proxy.addr).await;
    let mut owner = Dev::signup(n1.addr, KEY, "owner", "o", "web").await;
    let grp = new_group(&mut owner).await;
    let mut member = Dev::signup(n2.addr, KEY, "member", "m", "web").await;
    member.sub(&grp).await;
    assert_eq!(owner.publish(&grp, json!("before")).await, 1);
    assert_eq!(member.await_data(&grp, 1, 0).await, [1], "the bus works before the cut");
    proxy.cut();
    let mut acked = vec![1];
    for i in 0..5 {
        // node1's Redis is fine: its sends are acknowledged while node2 hears nothing.
        acked.push(owner.publish(&grp, json!({ "during": i })).await);
    }
    let mut live = member.live_seqs(&grp, 500).await;
    assert!(live.is_empty(), "node2 cannot have heard these: {live:?}");
    assert!(!member.closed, "the client's connection to node2 survives its Redis outage");
    proxy.restore();
    // Wait until node2's subscriber is back: a fresh message reaches the client on node2.
    let t = Instant::now();
    let mut back = false;
    while t.elapsed() < Duration::from_secs(15) {
        let seq = owner.publish(&grp, json!("probe")).await;
        acked.push(seq);
        let got = member.live_seqs(&grp, 300).await;
        live.extend(&got);
        if got.contains(&seq) {
            back = true;
            break;
        }
    }
    assert!(back, "node2's bus never resubscribed; node2 log:\n{}", n2.stderr_text());
    eprintln!("node2's bus was back {:?} after the restore", t.elapsed());
    // Catch-up by seq: everything acknowledged is stored and read back from node2.
    let stored = member.history(&grp, Some(2)).await;
    let missed: Vec<i64> = acked.iter().copied().filter(|s| *s >= 2).collect();
    assert_eq!(stored, missed, "every acknowledged message since seq 2, nothing else");
}

// 8

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_node_users_go_offline_after_the_presence_ttl_and_catch_up_on_another_node() {
    let cl = Cluster::new("kill");
    let mut nodes = cl.start_all(&["n1", "n2"]).await;
    let (n1, n2) = (nodes[0].addr, nodes[1].addr);
    let mut b = Dev::signup(n1, KEY, "bob", "b", "web").await;
    let mut a = Dev::signup(n2, KEY, "alice", "a", "web").await;
    let (alice, bob) = (a.user.clone(), b.user.clone());
    a.sub(&bob).await;
    b.sub(&alice).await;
    let online = |f: &Value| f["meta"]["desc"]["online"].clone();
    let desc = b.req("get", json!({ "topic": alice, "what": "desc" })).await;
    assert_eq!(online(&desc), true, "alice on node2 is online as seen from node1: {desc}");
    assert_eq!(b.publish(&alice, json!("one")).await, 1);
    assert_eq!(a.await_data(&bob, 1, 0).await, [1]);
    nodes[1].kill();
    let killed = Instant::now();
    let mut last = desc;
    while killed.elapsed() < Duration::from_secs(4 * PRESENCE_TTL_S + 2) {
        last = b.req("get", json!({ "topic": alice, "what": "desc" })).await;
        if online(&last) == false {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let gone = killed.elapsed();
    assert_eq!(online(&last), false, "alice still online {gone:?} after node2 died: {last}");
    eprintln!("alice went offline {gone:?} after node2 was killed (presence TTL {PRESENCE_TTL_S} s)");
    // The `me` list of bob says so too.
    let subs = b.req("get", json!({ "topic": "me", "what": "sub" })).await;
    let item = subs["meta"]["sub"].as_array().and_then(|s| s.iter().find(|i| i["topic"] == alice.as_str()).cloned());
    assert_eq!(item.map(|i| i["online"].clone()), Some(json!(false)), "{subs}");
    // Messages while alice is away, then alice reconnects to node1 with her token and catches up by seq.
    for i in 0..3 {
        b.publish(&alice, json!({ "away": i })).await;
    }
    let (mut back, ctrl) = Dev::token_login(n1, KEY, &a.token, "a").await;
    assert_eq!(ctrl["code"], 200, "alice's token works on node1: {ctrl}");
    back.sub(&bob).await;
    assert_eq!(back.history(&bob, Some(2)).await, [2, 3, 4]);
    let desc = b.req("get", json!({ "topic": alice, "what": "desc" })).await;
    assert_eq!(online(&desc), true, "online again on node1: {desc}");
}

// 9

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_tenants_across_nodes_never_see_each_others_events() {
    let cl = Cluster::new("ten");
    let nodes = cl.start_all(&["n1", "n2"]).await;
    let (n1, n2) = (nodes[0].addr, nodes[1].addr);
    let (tid, key2) = cl.create_tenant(&nodes[0], &format!("t{:08x}", rand::random::<u32>()));
    assert_ne!(tid, DEFAULT_TENANT);
    // The same logins in both tenants, each tenant spread over both nodes the other way round.
    let mut a_alice = Dev::signup(n1, KEY, "alice", "d", "web").await;
    let mut a_bob = Dev::signup(n2, KEY, "bob", "d", "web").await;
    let mut b_alice = Dev::signup(n2, &key2, "alice", "d", "web").await;
    let mut b_bob = Dev::signup(n1, &key2, "bob", "d", "web").await;
    a_alice.sub(&a_bob.user).await;
    a_bob.sub(&a_alice.user).await;
    b_alice.sub(&b_bob.user).await;
    b_bob.sub(&b_alice.user).await;
    let a_grp = new_group(&mut a_alice).await;
    a_bob.sub(&a_grp).await;
    let b_grp = new_group(&mut b_alice).await;
    b_bob.sub(&b_grp).await;
    // A user of one tenant cannot reach the other's users or topics.
    let ctrl = b_alice.ctrl("sub", json!({ "topic": a_bob.user })).await;
    assert_ne!(ctrl["code"], 200, "a P2P topic with another tenant's user: {ctrl}");
    let ctrl = b_alice.ctrl("sub", json!({ "topic": a_grp })).await;
    assert_ne!(ctrl["code"], 200, "another tenant's group: {ctrl}");
    // A token of one tenant is refused under the other's API key, on either node.
    for addr in [n1, n2] {
        let (_, ctrl) = Dev::token_login(addr, &key2, &a_alice.token, "x").await;
        assert_eq!(ctrl["code"], 401, "{ctrl}");
    }
    for i in 0..3 {
        a_alice.publish(&a_bob.user, json!({ "a": i })).await;
        a_bob.publish(&a_grp, json!({ "a": i })).await;
        b_alice.publish(&b_bob.user, json!({ "b": i })).await;
        b_bob.publish(&b_grp, json!({ "b": i })).await;
        a_alice.send("note", json!({ "topic": a_bob.user, "what": "kp" })).await;
    }
    assert_eq!(a_bob.await_data(&a_alice.user, 3, 0).await.len(), 3);
    assert_eq!(b_bob.await_data(&b_alice.user, 3, 0).await.len(), 3);
    let a_ids = [a_alice.user.clone(), a_bob.user.clone(), a_grp.clone()];
    let b_ids = [b_alice.user.clone(), b_bob.user.clone(), b_grp.clone()];
    for (d, foreign, own) in [
        (&mut a_alice, &b_ids, &a_ids),
        (&mut a_bob, &b_ids, &a_ids),
        (&mut b_alice, &a_ids, &b_ids),
        (&mut b_bob, &a_ids, &b_ids),
    ] {
        for f in d.collect(800).await {
            let text = f.to_string();
            assert!(!foreign.iter().any(|id| text.contains(id.as_str())), "a foreign tenant's event: {f}");
            if let Some(content) = f["data"]["content"].as_object() {
                let mine = if own[0] == a_ids[0] { "a" } else { "b" };
                assert!(content.contains_key(mine), "a message of the other tenant: {f}");
            }
        }
    }
    // Each tenant's history holds only its own messages.
    assert_eq!(b_bob.history(&b_grp, None).await, [1, 2, 3]);
    assert_eq!(a_alice.history(&a_grp, None).await, [1, 2, 3]);
}

// 10

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_live_node_id_is_refused_and_free_again_after_a_clean_stop() {
    let cl = Cluster::new("dup");
    let mut first = cl.start("n1").await;
    let mut second = cl.spawn("n1", redis_addr());
    let status = second.exited_within(Duration::from_secs(15)).await;
    let log = second.stderr_text();
    let status = status.unwrap_or_else(|| panic!("a second live n1 kept running:\n{log}"));
    assert!(!status.success(), "{status}: {log}");
    assert!(log.contains("n1"), "the refusal names the node id: {log}");
    assert!(log.contains("refusing to start"), "{log}");
    assert_eq!(get_status(first.addr, "/readyz").await, Some(200), "the first node is unharmed");
    let status = first.terminate().await;
    assert!(status.success(), "a clean stop on SIGTERM: {status}\n{}", first.stderr_text());
    // The clean stop released the claim: the id is taken at once, well before its TTL.
    let t = Instant::now();
    let mut third = cl.start("n1").await;
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    let mut d = Dev::signup(third.addr, KEY, "late", "d", "web").await;
    d.sub("me").await;
    third.kill();
}

// 11

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_control_lost_on_the_bus_takes_effect_within_a_heartbeat() {
    let cl = Cluster::new("lost");
    let nodes = cl.start_all(&["n1", "n2"]).await;
    let n2 = nodes[1].addr;
    let mut victim = Dev::signup(n2, KEY, "gina", "g1", "web").await;
    let mut phone = Dev::login(n2, KEY, "gina", "phone1", "ios").await;
    let mut other = Dev::signup(n2, KEY, "hank", "h", "web").await;
    // Let at least one check run with the versions unchanged: nothing closes.
    assert!(!victim.closes_within(Duration::from_millis(2 * HEARTBEAT_MS + 200)).await);
    let client = redis::Client::open(format!("redis://{}", redis_addr())).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let uid = uid_num(&victim.user);
    // A device control the bus never carried: only that device closes.
    let key = cl.redis_key(DEFAULT_TENANT, &format!("session_control:device:{uid}:phone1:version"));
    let _: i64 = redis::cmd("INCR").arg(&key).query_async(&mut conn).await.unwrap();
    let t = Instant::now();
    assert!(phone.closes_within(Duration::from_millis(4 * HEARTBEAT_MS)).await, "the device control was not applied");
    eprintln!("device control applied {:?} after the bump", t.elapsed());
    assert!(ctrl_205(&phone.backlog).is_some(), "{:?}", phone.backlog);
    assert!(
        !victim.closes_within(Duration::from_millis(2 * HEARTBEAT_MS + 200)).await,
        "the user's other device is not addressed: {:?}",
        victim.backlog
    );
    // A user control: every session of the user closes; another user's does not.
    let key = cl.redis_key(DEFAULT_TENANT, &format!("session_control:user:{uid}:version"));
    let _: i64 = redis::cmd("INCR").arg(&key).query_async(&mut conn).await.unwrap();
    let t = Instant::now();
    assert!(victim.closes_within(Duration::from_millis(4 * HEARTBEAT_MS)).await, "the user control was not applied");
    let took = t.elapsed();
    eprintln!("user control applied {took:?} after the bump (heartbeat {HEARTBEAT_MS} ms)");
    assert!(took <= Duration::from_millis(2 * HEARTBEAT_MS + 300), "{took:?}");
    let c = ctrl_205(&victim.backlog).unwrap_or_else(|| panic!("{:?}", victim.backlog));
    assert!(c["ctrl"]["params"]["reason"].is_string(), "{c}");
    assert!(!other.closes_within(Duration::from_millis(HEARTBEAT_MS)).await, "another user's session stays");
}

// Beyond the list: what an operator does to a running cluster.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_started_at_once_on_an_empty_control_database_all_come_up() {
    let cl = Cluster::new("race");
    // No node first: all three migrate the control database and ensure the default tenant concurrently.
    let mut nodes: Vec<NodeProc> = ["n1", "n2", "n3"].iter().map(|id| cl.spawn(id, redis_addr())).collect();
    for n in &mut nodes {
        n.ready().await;
    }
    let mut a = Dev::signup(nodes[0].addr, KEY, "alice", "a", "web").await;
    let mut b = Dev::signup(nodes[2].addr, KEY, "bob", "b", "web").await;
    a.sub(&b.user).await;
    b.sub(&a.user).await;
    let s = a.publish(&b.user, json!("hi")).await;
    assert_eq!(b.await_data(&a.user, 1, 0).await, [s]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disabling_an_account_closes_it_everywhere_and_refuses_logins_until_enabled() {
    let cl = Cluster::new("dis");
    let nodes = cl.start_all(&["n1", "n2"]).await;
    let (n1, n2) = (nodes[0].addr, nodes[1].addr);
    let mut one = Dev::signup(n1, KEY, "ivan", "d1", "web").await;
    let mut two = Dev::login(n2, KEY, "ivan", "d2", "ios").await;
    let token = one.token.clone();
    let (status, body) = nodes[0].admin(&one.user, "disable", json!({})).await;
    assert_eq!(status, 200, "{body}");
    for (d, node) in [(&mut one, "node1"), (&mut two, "node2")] {
        assert!(d.closes_within(SOON).await, "the session on {node} is closed");
        let c = ctrl_205(&d.backlog).unwrap_or_else(|| panic!("{node}: {:?}", d.backlog));
        assert_eq!(c["ctrl"]["params"]["reason"], "account disabled", "{c}");
    }
    for addr in [n1, n2] {
        let (_, ctrl) = Dev::token_login(addr, KEY, &token, "x").await;
        assert_eq!(ctrl["code"], 401, "the old token: {ctrl}");
        let mut d = Dev::connect(addr, KEY).await;
        d.hi("x", "web").await;
        let ctrl = d.ctrl("login", json!({ "scheme": "basic", "secret": secret("ivan", "secret1") })).await;
        assert_ne!(ctrl["code"], 200, "a disabled account logs in: {ctrl}");
    }
    let (status, body) = nodes[1].admin(&one.user, "enable", json!({})).await;
    assert_eq!(status, 200, "{body}");
    let mut back = Dev::login(n1, KEY, "ivan", "d1", "web").await;
    assert!(!back.closes_within(Duration::from_millis(3 * HEARTBEAT_MS)).await, "re-enabled sessions stay");
    // Evicting with revoke_tokens from node2: the session on node1 closes and its token is dead everywhere.
    let (status, body) = nodes[1].admin(&back.user, "evict", json!({ "revoke_tokens": true })).await;
    assert_eq!(status, 200, "{body}");
    assert!(back.closes_within(SOON).await, "evicted on node1");
    for addr in [n1, n2] {
        let (_, ctrl) = Dev::token_login(addr, KEY, &back.token, "x").await;
        assert_eq!(ctrl["code"], 401, "a revoked token: {ctrl}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cleanly_stopped_node_tells_its_sessions_and_takes_their_presence_with_it() {
    let cl = Cluster::new("term");
    let mut nodes = cl.start_all(&["n1", "n2"]).await;
    let (n1, n2) = (nodes[0].addr, nodes[1].addr);
    let mut b = Dev::signup(n1, KEY, "bob", "b", "web").await;
    let mut a = Dev::signup(n2, KEY, "alice", "a", "web").await;
    a.sub(&b.user).await;
    b.sub(&a.user).await;
    let desc = b.req("get", json!({ "topic": a.user, "what": "desc" })).await;
    assert_eq!(desc["meta"]["desc"]["online"], true, "{desc}");
    let stopping = Instant::now();
    // The client keeps reading while the node drains, as a real one does (and so answers the close).
    let (status, closed) = tokio::join!(nodes[1].terminate(), a.closes_within(Duration::from_secs(3)));
    assert!(status.success(), "{status}: {}", nodes[1].stderr_text());
    assert!(closed, "the session on the stopped node is closed");
    assert!(ctrl_205(&a.backlog).is_some(), "told before the close: {:?}", a.backlog);
    // Offline at once (the drain marks its sessions offline), not only after the presence TTL.
    let desc = b.req("get", json!({ "topic": a.user, "what": "desc" })).await;
    let took = stopping.elapsed();
    assert_eq!(desc["meta"]["desc"]["online"], false, "still online {took:?} after a clean stop: {desc}");
    assert!(took < Duration::from_secs(PRESENCE_TTL_S), "{took:?}");
    let (mut again, ctrl) = Dev::token_login(n1, KEY, &a.token, "a").await;
    assert_eq!(ctrl["code"], 200, "{ctrl}");
    again.sub(&b.user).await;
    let _ = n2;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_contact_coming_online_and_leaving_on_another_node_is_announced_on_me() {
    let cl = Cluster::new("pres");
    let nodes = cl.start_all(&["n1", "n2"]).await;
    let (n1, n2) = (nodes[0].addr, nodes[1].addr);
    let mut b = Dev::signup(n1, KEY, "bob", "b", "web").await;
    let mut a = Dev::signup(n2, KEY, "alice", "a", "web").await;
    let (alice, bob) = (a.user.clone(), b.user.clone());
    a.sub(&bob).await;
    b.sub(&alice).await;
    let token = a.token.clone();
    drop(a);
    b.sub("me").await;
    // Alice's last session is gone: wait for her to read as offline, then bring her back on node2.
    let t = Instant::now();
    while t.elapsed() < SOON {
        let d = b.req("get", json!({ "topic": alice, "what": "desc" })).await;
        if d["meta"]["desc"]["online"] == false {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    b.collect(0).await;
    let (mut a, ctrl) = Dev::token_login(n2, KEY, &token, "a").await;
    assert_eq!(ctrl["code"], 200, "{ctrl}");
    a.sub("me").await;
    let on = b.next_until(|f| f["pres"]["what"] == "on" && f["pres"]["src"] == alice.as_str(), SOON).await;
    assert!(on.is_some(), "no pres on for alice on node2: {:?}", b.backlog);
    a.c.ws.close(None).await.unwrap();
    let off = b.next_until(|f| f["pres"]["what"] == "off" && f["pres"]["src"] == alice.as_str(), SOON).await;
    assert!(off.is_some(), "no pres off for alice leaving node2: {:?}", b.backlog);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_on_the_same_platform_on_another_node_evicts_the_older_session_when_configured() {
    let mut cl = Cluster::new("plat");
    cl.env.push(("PALAVER_AUTH__EVICT_SAME_PLATFORM".into(), "true".into()));
    let nodes = cl.start_all(&["n1", "n2"]).await;
    let (n1, n2) = (nodes[0].addr, nodes[1].addr);
    let mut old_ios = Dev::signup(n1, KEY, "fay", "p1", "ios").await;
    let mut web = Dev::login(n1, KEY, "fay", "w1", "web").await;
    let mut new_ios = Dev::login(n2, KEY, "fay", "p2", "ios").await;
    assert!(old_ios.closes_within(SOON).await, "the older ios session on node1 is closed");
    let c = ctrl_205(&old_ios.backlog).unwrap_or_else(|| panic!("{:?}", old_ios.backlog));
    assert_eq!(c["ctrl"]["params"]["reason"], "signed in elsewhere", "{c}");
    assert!(!web.closes_within(Duration::from_millis(3 * HEARTBEAT_MS)).await, "another platform stays");
    assert!(!new_ios.closes_within(Duration::from_millis(100)).await, "the new session stays");
}

/// A session whose client does not answer the close within the drain grace (a half-dead mobile connection) never
/// runs its own clean-up before the process exits; the node releases its presence at the end of the drain, so it
/// does not read online until the presence TTL (120 s by default).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_stop_takes_the_presence_of_unresponsive_clients_too() {
    let cl = Cluster::new("mute");
    let mut nodes = cl.start_all(&["n1", "n2"]).await;
    let mut b = Dev::signup(nodes[0].addr, KEY, "bob", "b", "web").await;
    let mut a = Dev::signup(nodes[1].addr, KEY, "alice", "a", "web").await;
    a.sub(&b.user).await;
    b.sub(&a.user).await;
    // Alice's client reads nothing while node2 drains, so it never answers the close.
    let status = nodes[1].terminate().await;
    assert!(status.success(), "{status}");
    let desc = b.req("get", json!({ "topic": a.user, "what": "desc" })).await;
    assert_eq!(desc["meta"]["desc"]["online"], false, "online after a clean stop: {desc}");
}

/// Password guesses spread over two nodes meet one backoff: the counters live in Redis
/// (`security:login_fail:*`), not in each node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_logins_on_one_node_back_off_the_login_on_every_node() {
    let cl = Cluster::new("lfail");
    let nodes = cl.start_all(&["n1", "n2"]).await;
    let (n1, n2) = (nodes[0].addr, nodes[1].addr);
    Dev::signup(n1, KEY, "judy", "d1", "web").await;
    let attempt = async |addr: SocketAddr, pass: &str| {
        let mut d = Dev::connect(addr, KEY).await;
        d.hi("x", "web").await;
        d.ctrl("login", json!({ "scheme": "basic", "secret": secret("judy", pass) })).await
    };
    // The default limit is five failures per login; three on one node and two on the other reach it.
    for (i, addr) in [n1, n1, n1, n2, n2].into_iter().enumerate() {
        assert_eq!(attempt(addr, &format!("guess{i}")).await["code"], 401);
    }
    for addr in [n1, n2] {
        let ctrl = attempt(addr, "secret1").await;
        assert_eq!(ctrl["code"], 429, "{ctrl}");
        assert!(ctrl["params"]["retry_after_ms"].as_u64().is_some_and(|ms| ms > 0), "{ctrl}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_between_nodes_rings_every_callee_device_and_signals_only_the_accepting_one() {
    let cl = Cluster::new("call");
    let nodes = cl.start_all(&["n1", "n2"]).await;
    let (n1, n2) = (nodes[0].addr, nodes[1].addr);
    let mut a = Dev::signup(n1, KEY, "alice", "a", "web").await;
    let mut b1 = Dev::signup(n2, KEY, "bob", "b1", "web").await;
    let mut b2 = Dev::login(n1, KEY, "bob", "b2", "ios").await;
    let (alice, bob) = (a.user.clone(), b1.user.clone());
    a.sub(&bob).await;
    b1.sub(&alice).await;
    let call = |event: &'static str| move |f: &Value| f["info"]["what"] == "call" && f["info"]["event"] == event;
    let ack = a.ctrl("pub", json!({ "topic": bob, "head": { "webrtc": "started" }, "content": "" })).await;
    assert_eq!(ack["code"], 202, "{ack}");
    let seq = ack["params"]["seq"].as_i64().unwrap();
    for d in [&mut b1, &mut b2] {
        let invite = d.next_until(call("invite"), SOON).await.unwrap_or_else(|| panic!("no invite: {:?}", d.backlog));
        assert_eq!((invite["info"]["src"].as_str(), invite["info"]["seq"].as_i64()), (Some(alice.as_str()), Some(seq)));
    }
    let note = |event: &str, payload: Value| json!({ "what": "call", "seq": seq, "event": event, "payload": payload });
    let mut accept = note("accept", json!({}));
    accept["topic"] = json!(alice);
    b1.send("note", accept).await;
    assert!(a.next_until(call("accept"), SOON).await.is_some(), "the caller on node1: {:?}", a.backlog);
    assert!(b2.next_until(call("accept"), SOON).await.is_some(), "bob's other device stops ringing");
    let mut offer = note("offer", json!({ "sdp": "o" }));
    offer["topic"] = json!(bob);
    a.send("note", offer).await;
    let got = b1.next_until(call("offer"), SOON).await.unwrap_or_else(|| panic!("no offer: {:?}", b1.backlog));
    assert_eq!(got["info"]["payload"]["sdp"], "o");
    assert!(!b2.collect(300).await.iter().any(call("offer")), "the offer reaches the accepting device only");
    // A duration of 0 ms would leave `webrtc-duration` out.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let mut hang = note("hang-up", json!({}));
    hang["topic"] = json!(alice);
    b1.send("note", hang).await;
    assert!(a.next_until(call("hang-up"), SOON).await.is_some(), "hang-up across nodes: {:?}", a.backlog);
    let fin = a.next_until(|f| f["data"]["head"]["webrtc"] == "finished", SOON).await.expect("the finished head");
    assert_eq!(fin["data"]["head"]["replace"], format!(":{seq}"));
    assert!(fin["data"]["head"]["webrtc-duration"].as_i64().is_some(), "{fin}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_attached_on_another_node_is_not_pushed_until_they_leave() {
    use common::webhook::{Hook, SECRET};
    let hook = Hook::default();
    let url = hook.start().await;
    let mut cl = Cluster::new("pushatt");
    for (k, v) in [
        ("PALAVER_PUSH__ENABLED", "true"),
        ("PALAVER_PUSH__RETRY_BACKOFF_MS", "10"),
        ("PALAVER_PUSH__WEBHOOK__URL", url.as_str()),
        ("PALAVER_PUSH__WEBHOOK__SECRET", SECRET),
        ("PALAVER_OUTBOX__RELAY_INTERVAL_MS", "50"),
    ] {
        cl.env.push((k.into(), v.into()));
    }
    let nodes = cl.start_all(&["n1", "n2"]).await;
    let mut a = Dev::signup(nodes[0].addr, KEY, "alice", "a-web", "web").await;
    let mut b = Dev::signup(nodes[1].addr, KEY, "bob", "b-phone", "android").await;
    a.sub(&b.user).await;
    b.sub(&a.user).await;
    // Bob reads the conversation on node 2; Alice writes on node 1, whose hub does not see him attached: the
    // shared presence does, so whichever node's worker takes the task pushes him nothing.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let seen = a.publish(&b.user, json!("seen live")).await;
    assert_eq!(b.await_data(&a.user, 1, 0).await, [seen]);
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert!(hook.msgs("b-phone").is_empty(), "attached on node 2: {:?}", hook.msgs("b-phone"));
    // Bob leaves the conversation (still online on node 2): the next message pushes his phone.
    let left = b.ctrl("leave", json!({ "topic": a.user })).await;
    assert_eq!(left["code"], 200, "{left}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    a.publish(&b.user, json!("after leaving")).await;
    let pushes = hook.expect_msgs("b-phone", 1).await;
    assert_eq!(pushes[0]["user"], b.user.as_str());
}
