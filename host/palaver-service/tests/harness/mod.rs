//! A test harness that drives sessions in process: frames in, frames out, no network and no sleeps. Over the
//! in-memory store, which appends in place, a request's reply and fanout are queued before `handle_frame`
//! returns, so a test reads them at once; a publish that waits for another session's earlier one of its
//! topic settles a moment later, and [`Client::req`] waits for its answer.

#![allow(dead_code, unreachable_pub)]

pub mod codes;
pub use codes::senders;

use base64::Engine;
use palaver_core::TenantId;
use palaver_core::ports::{BusinessPorts, FileScanner, NoHooks, Ports, PublishHook, PushHook, ScanHook};
use palaver_service::auth::{HashCost, TokenSigner};
use palaver_service::{Outbound, Service, ServiceConfig, Session, SessionRx, Transport};
use palaver_store_memory::{
    MemoryBus, MemoryControl, MemoryIdempotency, MemoryOutbox, MemoryPresence, MemorySeq, MemoryStore,
};
use serde_json::{Value, json};
use std::sync::Arc;

/// A service over fresh in-memory adapters with cheap password hashing.
pub fn service() -> Service {
    service_with(ServiceConfig::default())
}

pub fn service_with(cfg: ServiceConfig) -> Service {
    service_with_hooks(cfg, Arc::new(NoHooks))
}

pub fn service_with_hooks(cfg: ServiceConfig, hooks: Arc<dyn PublishHook>) -> Service {
    service_on(cfg, hooks, MemoryOutbox::new())
}

/// A service writing its outbox records to `outbox`, which a test can read.
pub fn service_on(cfg: ServiceConfig, hooks: Arc<dyn PublishHook>, outbox: MemoryOutbox) -> Service {
    service_with_push_hook(cfg, hooks, Arc::new(NoHooks), outbox)
}

/// [`service_on`] with a push hook for the push worker.
pub fn service_with_push_hook(
    cfg: ServiceConfig,
    hooks: Arc<dyn PublishHook>,
    push_hook: Arc<dyn PushHook>,
    outbox: MemoryOutbox,
) -> Service {
    build(cfg, hooks, push_hook, (Arc::new(NoHooks), None), outbox, |s| s, |_| {})
}

/// A service whose logins and joins pass `gates` and whose stored messages and account changes reach `listeners`,
/// writing its outbox records (the account events among them) to `outbox`.
pub fn service_with_plugins(
    cfg: ServiceConfig,
    gates: Arc<dyn palaver_core::ports::GateHook>,
    listeners: Arc<dyn palaver_core::ports::EventHook>,
    outbox: MemoryOutbox,
) -> Service {
    let extra = |p: &mut Ports| {
        p.gates = gates;
        p.listeners = listeners;
    };
    build(cfg, Arc::new(NoHooks), Arc::new(NoHooks), (Arc::new(NoHooks), None), outbox, |s| s, extra)
}

/// A service whose message history is `wrap` over the in-memory store (a store that commits later, or fails).
pub fn service_over_messages(
    cfg: ServiceConfig,
    wrap: impl FnOnce(Arc<MemoryStore>) -> Arc<dyn palaver_core::ports::MessageStore>,
) -> Service {
    build(cfg, Arc::new(NoHooks), Arc::new(NoHooks), (Arc::new(NoHooks), None), MemoryOutbox::new(), wrap, |_| {})
}

/// A service whose uploads are scanned by `scan_hook` (plugins' `scan-file`) and `scanner` (a whole-file
/// scanner), writing its outbox records (the scan tasks among them) to `outbox`.
pub fn service_with_scanners(
    cfg: ServiceConfig,
    scan_hook: Arc<dyn ScanHook>,
    scanner: Option<Arc<dyn FileScanner>>,
    outbox: MemoryOutbox,
) -> Service {
    build(cfg, Arc::new(NoHooks), Arc::new(NoHooks), (scan_hook, scanner), outbox, |s| s, |_| {})
}

fn build(
    mut cfg: ServiceConfig,
    hooks: Arc<dyn PublishHook>,
    push_hook: Arc<dyn PushHook>,
    (scan_hook, scanner): (Arc<dyn ScanHook>, Option<Arc<dyn FileScanner>>),
    outbox: MemoryOutbox,
    messages: impl FnOnce(Arc<MemoryStore>) -> Arc<dyn palaver_core::ports::MessageStore>,
    extra: impl FnOnce(&mut Ports),
) -> Service {
    cfg.hash_cost = HashCost { memory_kib: 64, iterations: 1 };
    // The store appends what a state change owes to the same outbox the service's own writes go to.
    let store = Arc::new(MemoryStore::with_outbox(outbox.clone()));
    let mut ports = Ports {
        users: store.clone(),
        topics: store.clone(),
        subs: store.clone(),
        messages: messages(store.clone()),
        seq: Arc::new(MemorySeq::new()),
        idempotency: Arc::new(MemoryIdempotency::default()),
        presence: Arc::new(MemoryPresence::new()),
        bus: Arc::new(MemoryBus::new()),
        control: Arc::new(MemoryControl::default()),
        hooks,
        push_hook,
        scan_hook,
        gates: Arc::new(NoHooks),
        listeners: Arc::new(NoHooks),
        scanner,
        business: BusinessPorts::of(store.clone(), Arc::new(AllowAll)),
        outbox: Arc::new(outbox),
        devices: Arc::new(palaver_store_memory::MemoryDevices::new()),
        calls: Arc::new(palaver_store_memory::MemoryCalls::new()),
        settings: Arc::new(palaver_store_memory::MemorySettings::new()),
        files: Arc::new(palaver_store_memory::MemoryFiles::new()),
        blobs: Arc::new(palaver_blobs::ObjectBlobs::in_memory()),
        login_failures: None,
        credentials: store.clone(),
        codes: Arc::new(palaver_store_memory::MemoryCodes::new(10_000)),
        code_senders: senders(),
    };
    extra(&mut ports);
    Service::new(ports, cfg, TokenSigner::new(b"test key test key test key test key".to_vec()))
}

/// `n` nodes in one process sharing one store, presence and control counters, linked by an in-process bus:
/// what several `palaver serve` processes sharing MariaDB and Redis look like to the service.
pub fn cluster(n: usize, tweak: impl Fn(&mut ServiceConfig)) -> Vec<Service> {
    cluster_parts(n, tweak).0
}

/// [`cluster`], with the shared control counters, to play a control whose bus message was lost.
pub fn cluster_parts(n: usize, tweak: impl Fn(&mut ServiceConfig)) -> (Vec<Service>, Arc<MemoryControl>) {
    cluster_of(n, None, tweak)
}

/// `n` nodes as [`cluster`] builds them, sharing `failures` as their failed-login counters.
pub fn cluster_with_login_failures(
    n: usize,
    failures: Arc<dyn palaver_core::ports::LoginFailureStore>,
    tweak: impl Fn(&mut ServiceConfig),
) -> Vec<Service> {
    cluster_of(n, Some(failures), tweak).0
}

/// [`cluster`], with the store they share (its outbox holds what the command ledger wrote).
pub fn cluster_with_store(n: usize) -> (Vec<Service>, Arc<MemoryStore>) {
    let store = Arc::new(MemoryStore::new());
    (cluster_on(store.clone(), n, None, |_| {}).0, store)
}

fn cluster_of(
    n: usize,
    login_failures: Option<Arc<dyn palaver_core::ports::LoginFailureStore>>,
    tweak: impl Fn(&mut ServiceConfig),
) -> (Vec<Service>, Arc<MemoryControl>) {
    cluster_on(Arc::new(MemoryStore::new()), n, login_failures, tweak)
}

fn cluster_on(
    store: Arc<MemoryStore>,
    n: usize,
    login_failures: Option<Arc<dyn palaver_core::ports::LoginFailureStore>>,
    tweak: impl Fn(&mut ServiceConfig),
) -> (Vec<Service>, Arc<MemoryControl>) {
    let (seq, idem, presence, control) = (
        Arc::new(MemorySeq::new()),
        Arc::new(MemoryIdempotency::default()),
        Arc::new(MemoryPresence::new()),
        Arc::new(MemoryControl::default()),
    );
    let hub = MemoryBus::hub();
    // The store's own outbox, which its command ledger and report writes append to in the same "transaction".
    let outbox = Arc::new(store.outbox().clone());
    let devices = Arc::new(palaver_store_memory::MemoryDevices::new());
    let calls = Arc::new(palaver_store_memory::MemoryCalls::new());
    let settings = Arc::new(palaver_store_memory::MemorySettings::new());
    // One file table and one blob store for every node, as a cluster shares its database and bucket.
    let files = Arc::new(palaver_store_memory::MemoryFiles::new());
    let blobs = Arc::new(palaver_blobs::ObjectBlobs::in_memory());
    let codes = Arc::new(palaver_store_memory::MemoryCodes::new(10_000));
    let nodes = (0..n)
        .map(|i| {
            let mut cfg = ServiceConfig { node_id: format!("node{i}"), ..ServiceConfig::default() };
            cfg.hash_cost = HashCost { memory_kib: 64, iterations: 1 };
            tweak(&mut cfg);
            let ports = Ports {
                users: store.clone(),
                topics: store.clone(),
                subs: store.clone(),
                messages: store.clone(),
                seq: seq.clone(),
                idempotency: idem.clone(),
                presence: presence.clone(),
                bus: Arc::new(hub.connect(cfg.node_id.clone())),
                control: control.clone(),
                hooks: Arc::new(NoHooks),
                push_hook: Arc::new(NoHooks),
                scan_hook: Arc::new(NoHooks),
                gates: Arc::new(NoHooks),
                listeners: Arc::new(NoHooks),
                scanner: None,
                business: BusinessPorts::of(store.clone(), Arc::new(AllowAll)),
                outbox: outbox.clone(),
                devices: devices.clone(),
                calls: calls.clone(),
                settings: settings.clone(),
                files: files.clone(),
                blobs: blobs.clone(),
                login_failures: login_failures.clone(),
                credentials: store.clone(),
                codes: codes.clone(),
                code_senders: senders(),
            };
            Service::new(ports, cfg, TokenSigner::new(b"test key test key test key test key".to_vec()))
        })
        .collect();
    (nodes, control)
}

pub struct Client {
    pub session: Option<Session>,
    pub rx: SessionRx,
    next_id: u32,
    pub user: String,
    pub token: String,
}

pub fn basic(login: &str, pass: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(format!("{login}:{pass}"))
}

impl Client {
    pub fn connect(svc: &Service) -> Client {
        let (session, rx) = svc.open_session(TenantId::DEFAULT, Transport::WebSocket, None);
        Client { session: Some(session), rx, next_id: 100, user: String::new(), token: String::new() }
    }

    /// A client whose connection comes from `remote` (`ip:port`), as the transports report it.
    pub fn connect_from(svc: &Service, remote: &str) -> Client {
        let (session, rx) = svc.open_session(TenantId::DEFAULT, Transport::WebSocket, Some(remote.to_owned()));
        Client { session: Some(session), rx, next_id: 100, user: String::new(), token: String::new() }
    }

    pub fn connect_tenant(svc: &Service, tenant: TenantId) -> Client {
        let (session, rx) = svc.open_session(tenant, Transport::WebSocket, None);
        Client { session: Some(session), rx, next_id: 100, user: String::new(), token: String::new() }
    }

    pub fn id(&mut self) -> String {
        self.next_id += 1;
        self.next_id.to_string()
    }

    /// Sends raw bytes and returns every frame queued for this client.
    pub async fn raw(&mut self, bytes: &[u8]) -> Vec<Value> {
        self.session.as_mut().expect("open").handle_frame(bytes).await;
        self.drain()
    }

    /// Sends a message and returns every frame queued for this client.
    pub async fn send(&mut self, msg: Value) -> Vec<Value> {
        self.raw(msg.to_string().as_bytes()).await
    }

    /// Waits (up to two seconds) for a frame matching `pred`, returning it and everything received before it.
    /// Frames from other nodes arrive through the bus's receiving task, not before the request returns.
    pub async fn wait_for(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> (Value, Vec<Value>) {
        let mut seen = Vec::new();
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(2);
        loop {
            match tokio::time::timeout_at(deadline, self.rx.recv()).await {
                Ok(Some(Outbound::Frame(f))) => {
                    let v: Value = serde_json::from_slice(&f).expect("server frames are JSON");
                    if pred(&v) {
                        return (v, seen);
                    }
                    seen.push(v);
                }
                Ok(Some(Outbound::Close)) => seen.push(json!({ "closed": true })),
                Ok(None) | Err(_) => panic!("no {what} within 2 s; received {seen:?}"),
            }
        }
    }

    /// Everything that arrives within `ms` milliseconds, including a close as `{"closed":true}`.
    pub async fn collect(&mut self, ms: u64) -> Vec<Value> {
        let mut seen = Vec::new();
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_millis(ms);
        while let Ok(Some(o)) = tokio::time::timeout_at(deadline, self.rx.recv()).await {
            seen.push(match o {
                Outbound::Frame(f) => serde_json::from_slice(&f).expect("server frames are JSON"),
                Outbound::Close => json!({ "closed": true }),
            });
        }
        seen
    }

    /// Every frame queued so far.
    pub fn drain(&mut self) -> Vec<Value> {
        let mut out = Vec::new();
        while let Ok(o) = self.rx.try_recv() {
            if let Outbound::Frame(f) = o {
                out.push(serde_json::from_slice(&f).expect("server frames are JSON"));
            }
        }
        out
    }

    /// Sends a request with a fresh id and returns the ctrl answering it, plus everything else received.
    pub async fn req(&mut self, kind: &str, mut body: Value) -> (Value, Vec<Value>) {
        let id = self.id();
        body["id"] = json!(id);
        let mut frames = self.send(json!({ kind: body })).await;
        // A ctrl answers most requests; a `{get}` of desc or sub is answered by meta alone.
        let answer = frames
            .iter()
            .find_map(|f| (f["ctrl"]["id"] == json!(id)).then(|| f["ctrl"].clone()))
            .or_else(|| frames.iter().find_map(|f| (f["meta"]["id"] == json!(id)).then(|| f["meta"].clone())));
        if let Some(answer) = answer {
            return (answer, frames);
        }
        // A publish that waits for an earlier one of its topic (another session's) settles after the request
        // returned, as it does whenever the store commits in batches.
        let (ctrl, seen) = self.wait_for(&format!("the answer to {kind} {id}"), |f| f["ctrl"]["id"] == json!(id)).await;
        frames.extend(seen);
        frames.push(ctrl.clone());
        (ctrl["ctrl"].clone(), frames)
    }

    pub async fn hi(&mut self) -> Value {
        self.req("hi", json!({ "ver": "0.25.3", "ua": "test/1.0" })).await.0
    }

    /// Signs up (and logs in) a new user.
    pub async fn signup(&mut self, login: &str, pass: &str) -> Value {
        self.hi().await;
        let (ctrl, _) = self
            .req(
                "acc",
                json!({ "user": "new", "scheme": "basic", "secret": basic(login, pass), "login": true,
                                "desc": { "public": { "fn": login } }, "tags": [format!("tag-{login}")] }),
            )
            .await;
        assert_eq!(ctrl["code"], 200, "signup {login}: {ctrl}");
        self.user = ctrl["params"]["user"].as_str().unwrap().to_owned();
        self.token = ctrl["params"]["token"].as_str().unwrap().to_owned();
        ctrl
    }

    pub async fn login(&mut self, login: &str, pass: &str) -> Value {
        self.hi().await;
        let (ctrl, _) = self.req("login", json!({ "scheme": "basic", "secret": basic(login, pass) })).await;
        if ctrl["code"] == 200 {
            self.user = ctrl["params"]["user"].as_str().unwrap().to_owned();
            self.token = ctrl["params"]["token"].as_str().unwrap().to_owned();
        }
        ctrl
    }

    pub async fn sub(&mut self, topic: &str) -> Value {
        self.req("sub", json!({ "topic": topic })).await.0
    }

    /// Creates a group and returns its name.
    pub async fn new_group(&mut self, title: &str) -> String {
        let (ctrl, _) = self
            .req(
                "sub",
                json!({ "topic": "new1", "set": { "desc": { "public": { "fn": title } }, "tags": ["grouptag"] } }),
            )
            .await;
        assert_eq!(ctrl["code"], 200, "{ctrl}");
        ctrl["topic"].as_str().unwrap().to_owned()
    }

    pub async fn publish(&mut self, topic: &str, content: Value) -> Value {
        self.req("pub", json!({ "topic": topic, "content": content })).await.0
    }

    pub async fn close(&mut self) {
        if let Some(s) = self.session.take() {
            s.close().await;
        }
    }
}

/// The `{data}` frames among `frames`.
pub fn data(frames: &[Value]) -> Vec<Value> {
    frames.iter().filter_map(|f| f.get("data").cloned()).collect()
}

/// The frames of one kind (`pres`, `info`, `meta`, `ctrl`).
pub fn of(frames: &[Value], kind: &str) -> Vec<Value> {
    frames.iter().filter_map(|f| f.get(kind).cloned()).collect()
}

/// Rules that allow every business command, with the parameters the default plugins would fix.
pub struct AllowAll;

#[async_trait::async_trait]
impl palaver_core::ports::BusinessRules for AllowAll {
    fn available(&self, _: palaver_core::TenantId, _: &str) -> bool {
        true
    }

    async fn decide(
        &self,
        _: palaver_core::TenantId,
        _: palaver_core::UserId,
        command: &str,
        input: &str,
    ) -> palaver_core::ports::RuleVerdict {
        // The facts must read as the plugins read them: of the command's type, complete, nothing else.
        let name = palaver_api::CommandName::parse(command).expect("a command of the table");
        let input: serde_json::Value = serde_json::from_str(input).expect("the rules' input is JSON");
        if let Err(e) = palaver_api::Facts::parse(name, input.get("facts").unwrap_or(&serde_json::Value::Null)) {
            panic!("the host sent facts the plugins cannot read: {e}");
        }
        let params = match command {
            "group.role.set" => serde_json::json!({ "max_admins": 2 }),
            _ => serde_json::Value::Null,
        };
        palaver_core::ports::RuleVerdict::Allow(params)
    }
}
