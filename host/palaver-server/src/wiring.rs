//! The composition root: the only place that names every adapter. It opens the store, builds the service and
//! the gateway, and runs the node until SIGTERM or SIGINT, then drains.

use crate::backbone::{Backbone, open_queue};
use crate::cluster::{Cluster, Heartbeat, claim_node_id};
use crate::config::Config;
use crate::config::StoreKind;
use crate::plugins::Plugins;
use anyhow::Context;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use palaver_core::TenantId;
use palaver_core::ports::{
    AuditStore, BlobStore, BusinessPorts, CallStore, CommandStore, CredentialStore, DeviceStore, FileStore, GroupStore,
    HealthCheck, MessageStore, NoHooks, NoRules, NotificationStore, OutboxStore, PluginChoiceStore, PluginKv,
    PluginReleaseStore, Ports, PushDedup, RelationStore, ReportStore, SettingsStore, SubscriptionStore, TaskQueue,
    TenantStore, TopicStore, UserStore,
};
use palaver_gateway::apikey::{DEMO_KEY, RegistryKeys, SaltedKeys, TenantResolver, decode_salt};
use palaver_gateway::{Gateway, GatewayConfig};
use palaver_service::auth::{HashCost, TokenSigner};
use palaver_service::{LoginLimits, Service, ServiceConfig};
use palaver_store_memory::{MemoryBus, MemoryControl, MemoryIdempotency, MemoryPresence, MemoryPushDedup, MemorySeq};
use palaver_store_mysql::{MysqlConfig, MysqlStore};
use palaver_store_redis::{CachedStorage, HotPolicy, RedisClient, RedisPorts};
use palaver_store_sqlite::SqliteStore;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The storage backend a node runs on, kept so that shutdown can close it.
enum Backend {
    Sqlite(Arc<SqliteStore>),
    Mysql(MysqlStore),
}

impl Backend {
    async fn close(&self) {
        match self {
            Backend::Sqlite(s) => s.close().await,
            Backend::Mysql(s) => s.close().await,
        }
    }
}

/// A running node: its address, and what it takes to stop it.
pub struct Node {
    addr: SocketAddr,
    metrics_addr: Option<SocketAddr>,
    gateway: Gateway,
    service: Service,
    backend: Backend,
    serving: tokio::task::JoinHandle<std::io::Result<()>>,
    metrics_serving: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    grace: Duration,
    plugins: Option<Arc<Plugins>>,
    heartbeat: Option<Heartbeat>,
    backbone: Backbone,
    call_sweep: tokio::task::JoinHandle<()>,
    /// Removes uploads no message referenced within `files.gc_grace_seconds`.
    file_collector: tokio::task::JoinHandle<()>,
}

impl Node {
    /// The address the node listens on (useful with port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The address of the separate `/metrics` listener, when `server.metrics_listen` is set.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    /// The task queue this node runs on (Kafka with `[kafka]`, the embedded SQLite queue otherwise).
    pub fn queue(&self) -> Arc<dyn TaskQueue> {
        self.backbone.queue.clone()
    }

    /// The prefix of every consumer group this node joins (`kafka.group_id`; `palaver` when embedded).
    pub fn group_id(&self) -> &str {
        &self.backbone.group_id
    }

    /// The service the node runs.
    pub fn service(&self) -> &Service {
        &self.service
    }

    /// Drains and stops: readiness goes 503, listening stops, every session gets ctrl 205 and is closed.
    pub async fn shutdown(self) {
        tracing::info!("draining");
        self.gateway.set_ready(false);
        self.gateway.stop();
        self.service.drain();
        // Give writers a moment to flush the shutdown notice before the store closes.
        let deadline = tokio::time::Instant::now() + self.grace;
        while self.service.sessions_pending() > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Clients that did not answer the close within the grace still count as online elsewhere: release them.
        self.service.release_presence().await;
        self.serving.abort();
        self.call_sweep.abort();
        self.file_collector.abort();
        if let Some(m) = &self.metrics_serving {
            m.abort();
        }
        if let Some(h) = self.heartbeat {
            h.stop().await;
        }
        self.backbone.stop().await;
        self.backend.close().await;
        tracing::info!("stopped");
    }
}

/// Runs the server until SIGTERM or SIGINT, then drains. SIGHUP reloads changed plugins.
pub async fn serve(cfg: Config) -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let node = start(cfg).await?;
    let mut hup = signal(SignalKind::hangup())?;
    let stop = wait_for_signal();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            r = &mut stop => { r?; break; }
            _ = hup.recv() => {
                if let Some(p) = &node.plugins {
                    tracing::info!("SIGHUP: rescanning plugins");
                    p.rescan().await;
                }
            }
        }
    }
    node.shutdown().await;
    Ok(())
}

/// Starts a node and returns once it is listening.
pub async fn start(mut cfg: Config) -> anyhow::Result<Node> {
    if cfg.server.node_id.is_empty() {
        cfg.server.node_id = crate::config::default_node_id(|k| std::env::var(k).ok());
    }
    std::fs::create_dir_all(&cfg.server.data_dir)
        .with_context(|| format!("creating the data directory {}", cfg.server.data_dir.display()))?;
    let salt = decode_salt(&cfg.api.key_salt)?;
    let (storage, tenants, backend) = open_storage(&cfg, salt).await?;
    let (outbox, audit) = (storage.outbox.clone(), storage.audit.clone());
    let (plugin_kv, plugin_choices) = (storage.plugin_kv.clone(), storage.plugin_choices.clone());
    let plugin_releases = storage.plugin_releases.clone();
    let blobs = cfg.files.open(&cfg.server.data_dir).context("opening the file store")?;
    tracing::info!(store = blobs.kind(), "file store open");
    if cfg.store.kind == StoreKind::Mysql && cfg.files.store == crate::files::FileStoreKind::Fs {
        tracing::warn!(
            dir = %cfg.files.dir.display(),
            "files are kept in this node's own directory: in a cluster, a file uploaded through one node cannot be \
             read through another unless files.dir is storage every node mounts; set files.store = \"s3\""
        );
    }
    let (mut ports, cluster, dedup) = with_shared_state(&cfg, storage, blobs)?;
    ports.scanner = cfg.files.scan.scanner().context("configuring the file scanner")?;
    let claim = match &cluster {
        Some(c) => Some(claim_node_id(&cfg, c.nodes.as_ref()).await?),
        None => None,
    };
    let plugins = Plugins::start(
        &cfg,
        plugin_kv,
        plugin_choices,
        plugin_releases,
        ports.users.clone(),
        ports.topics.clone(),
        ports.subs.clone(),
    )
    .await?;
    if let Some(p) = &plugins {
        ports.hooks = p.hook();
        ports.push_hook = p.push_hook();
        ports.scan_hook = p.scan_hook();
        ports.gates = p.gate_hook();
        ports.listeners = p.event_hook();
        ports.business.rules = p.rules();
    }
    if cluster.is_some() && cfg.auth.token_key.is_empty() {
        tracing::warn!(
            "auth.token_key is not set: this node signs tokens with a key of its own, which other nodes reject; \
             give every node of the cluster the same auth.token_key"
        );
    }
    let signer = TokenSigner::new(token_key(&cfg)?);
    let providers = cfg.push.providers().context("configuring the push providers")?;
    let mut service_cfg = service_config(&cfg);
    service_cfg.push = cfg.push.service();
    service_cfg.events = cfg.plugins.events.service();
    service_cfg.jwt = Arc::new(cfg.auth.jwt.load().context("loading the [auth.jwt] keys")?);
    let service = Service::new(ports, service_cfg, signer);
    if cfg.push.enabled && providers.is_empty() {
        tracing::info!("push is on with no node-wide provider: only tenants with their own providers push");
    }
    service.use_push_providers(providers, Some(Arc::new(crate::push::TenantProviders)));
    let plugins = plugins.map(Arc::new);
    if let Some(p) = &plugins {
        p.effects.bind(service.clone());
        service.add_metrics_source(p.registry.as_ref());
    }
    if let Some(c) = &cluster {
        service.add_metrics_source(c.metrics.as_ref());
    }
    // The admin API exists whenever a token is configured; without plugins its plugin endpoints say so.
    let admin = match (&plugins, cfg.admin.token.is_empty()) {
        (_, true) => None,
        (Some(p), false) => Some((p.clone() as Arc<dyn palaver_gateway::Admin>, cfg.admin.token.clone())),
        (None, false) => {
            Some((Arc::new(palaver_gateway::NoPlugins) as Arc<dyn palaver_gateway::Admin>, cfg.admin.token.clone()))
        }
    };
    // The API is always there: notifications need no plugin, and commands without rules say they are off.
    let commands: Option<Arc<dyn palaver_gateway::ImCommands>> =
        Some(Arc::new(crate::business::BusinessApi { service: service.clone() }));
    let sqlite = match &backend {
        Backend::Sqlite(s) => Some(s.as_ref()),
        Backend::Mysql(_) => None,
    };
    if let Backend::Mysql(m) = &backend {
        service.add_metrics_source(m);
    }
    let mut backbone = open_queue(&cfg, sqlite).await?;
    if let Some(m) = &backbone.metrics {
        service.add_metrics_source(m.as_ref());
    }
    let registry: Option<Arc<dyn TenantStore>> = match &backend {
        Backend::Sqlite(_) => None,
        Backend::Mysql(m) => Some(Arc::new(m.clone())),
    };
    let live_nodes = cluster.as_ref().map(|c| c.nodes.clone());
    let every = Duration::from_millis(cfg.calls.sweep_interval_ms);
    // Without calls there is nothing to sweep; the task then only waits.
    let call_sweep = match cfg.calls.enabled {
        true => crate::call_sweep::spawn(service.clone(), registry.clone(), live_nodes, every),
        false => tokio::spawn(std::future::pending()),
    };
    let file_collector = crate::files::spawn_collector(
        service.clone(),
        registry.clone(),
        Duration::from_secs(cfg.files.gc_interval_seconds),
        cfg.files.gc_batch,
    );
    backbone.start(&cfg, &service, outbox, audit, registry.clone());
    backbone.start_file_scan(&cfg, &service);
    backbone.start_events(&service);
    match (cfg.push.enabled, cfg.push.worker) {
        (true, true) => backbone.start_push(&cfg, &service, dedup, registry),
        (true, false) if cfg.kafka.is_none() => tracing::warn!(
            "push.worker is off on the embedded queue: push tasks wait in queue.db until this node runs with it on"
        ),
        (true, false) => tracing::info!("push.worker is off: other nodes send this node's pushes"),
        (false, _) => {}
    }
    let gateway = Gateway::new(
        service.clone(),
        gateway_config(&cfg),
        tenants,
        admin,
        commands,
        health(&backend, &cluster, &backbone),
    );
    let listener = tokio::net::TcpListener::bind(&cfg.server.listen)
        .await
        .with_context(|| format!("binding {}", cfg.server.listen))?;
    let addr = listener.local_addr()?;
    tracing::info!(listen = %addr, node = %cfg.server.node_id, store = ?cfg.store.kind,
        redis = cfg.store_config.redis.is_some(), "palaver is serving");
    // Both listeners are bound before either serves, so that a bad metrics address fails the start cleanly.
    let metrics_listener = match cfg.server.metrics_listen.as_str() {
        "" => None,
        addr => Some(
            tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("binding server.metrics_listen {addr}"))?,
        ),
    };
    let metrics_addr = metrics_listener.as_ref().map(|l| l.local_addr()).transpose()?;
    let serving = tokio::spawn({
        let gateway = gateway.clone();
        async move { gateway.serve(listener).await }
    });
    let metrics_serving = metrics_listener.map(|listener| {
        tracing::info!(metrics_listen = ?metrics_addr, "serving /metrics on its own listener");
        let gateway = gateway.clone();
        tokio::spawn(async move { gateway.serve_metrics(listener).await })
    });
    let grace = Duration::from_millis(cfg.server.drain_grace_ms);
    let heartbeat = match (cluster, claim) {
        (Some(c), Some(claim)) => Some(Heartbeat::start(c, claim, service.clone(), &cfg)),
        _ => None,
    };
    Ok(Node {
        addr,
        metrics_addr,
        gateway,
        service,
        backend,
        serving,
        metrics_serving,
        grace,
        plugins,
        heartbeat,
        backbone,
        call_sweep,
        file_collector,
    })
}

/// What `/readyz` checks: the database (required); with Redis the server and the bus subscriber; with Kafka the
/// queue.
fn health(backend: &Backend, cluster: &Option<Cluster>, backbone: &Backbone) -> Vec<Arc<dyn HealthCheck>> {
    let mut checks: Vec<Arc<dyn HealthCheck>> = vec![match backend {
        Backend::Sqlite(store) => store.clone(),
        Backend::Mysql(store) => Arc::new(store.clone()),
    }];
    if let Some(c) = cluster {
        checks.push(Arc::new(c.redis.clone()));
        checks.push(Arc::new(c.bus.clone()));
    }
    checks.extend(backbone.health.clone());
    checks
}

/// The four storage ports, seen as one value before Redis decorates them.
struct Storage {
    users: Arc<dyn UserStore>,
    topics: Arc<dyn TopicStore>,
    subs: Arc<dyn SubscriptionStore>,
    messages: Arc<dyn MessageStore>,
    /// The business tables; their rules are added once the plugins are up.
    business: BusinessPorts,
    /// The outbox and the audit log, in the same database (the tenant's own on MariaDB).
    outbox: Arc<dyn OutboxStore>,
    audit: Arc<dyn AuditStore>,
    devices: Arc<dyn DeviceStore>,
    calls: Arc<dyn CallStore>,
    settings: Arc<dyn SettingsStore>,
    files: Arc<dyn FileStore>,
    credentials: Arc<dyn CredentialStore>,
    /// The plugins' key-value store, in the same database: durable, and shared by the nodes on MariaDB.
    plugin_kv: Arc<dyn PluginKv>,
    /// Tenants' plugin choices, in the control database (or the SQLite file).
    plugin_choices: Arc<dyn PluginChoiceStore>,
    /// Uploaded plugin releases and the cluster's rollouts, in the same place.
    plugin_releases: Arc<dyn PluginReleaseStore>,
}

impl Storage {
    fn of<S>(store: Arc<S>) -> Self
    where
        S: UserStore + TopicStore + SubscriptionStore + MessageStore + RelationStore + GroupStore + NotificationStore,
        S: OutboxStore + AuditStore + CommandStore + ReportStore + DeviceStore + CallStore + SettingsStore + FileStore,
        S: CredentialStore + PluginKv + PluginChoiceStore + PluginReleaseStore + 'static,
    {
        Storage {
            credentials: store.clone(),
            plugin_kv: store.clone(),
            plugin_choices: store.clone(),
            plugin_releases: store.clone(),
            users: store.clone(),
            topics: store.clone(),
            subs: store.clone(),
            messages: store.clone(),
            outbox: store.clone(),
            audit: store.clone(),
            devices: store.clone(),
            calls: store.clone(),
            settings: store.clone(),
            files: store.clone(),
            business: BusinessPorts::of(store, Arc::new(NoRules)),
        }
    }
}

/// Opens the configured store, and the resolver that maps API keys to its tenants.
async fn open_storage(cfg: &Config, salt: Vec<u8>) -> anyhow::Result<(Storage, Arc<dyn TenantResolver>, Backend)> {
    match cfg.store.kind {
        StoreKind::Sqlite => {
            let db = cfg.server.data_dir.join("palaver.db");
            let store = Arc::new(SqliteStore::open(&db).await.with_context(|| format!("opening {}", db.display()))?);
            let tenants: Arc<dyn TenantResolver> = Arc::new(SaltedKeys::new(salt, TenantId::DEFAULT));
            Ok((Storage::of(store.clone()), tenants, Backend::Sqlite(store)))
        }
        StoreKind::Mysql => {
            let store = MysqlStore::connect(mysql_config(cfg)).await.context("connecting to the control database")?;
            let report = store.migrate_all().await.context("migrating tenant databases")?;
            tracing::info!(?report, "tenant databases are up to date");
            store.ensure_default_tenant(DEMO_KEY).await.context("ensuring the default tenant")?;
            let registry: Arc<dyn TenantStore> = Arc::new(store.clone());
            let tenants: Arc<dyn TenantResolver> =
                Arc::new(RegistryKeys::new(salt, registry, Duration::from_secs(TENANT_CACHE_SECONDS)));
            Ok((Storage::of(Arc::new(store.clone())), tenants, Backend::Mysql(store)))
        }
    }
}

/// How long a resolved API key is trusted before the registry is asked again (tenant configuration: 60 s).
const TENANT_CACHE_SECONDS: u64 = 60;

/// Adds seq, idempotency, presence, the bus and the push dedup: Redis-backed (with the storage decorated by its
/// caches) when `[store_config.redis]` is set, in-process otherwise, which keeps the node's single-node behaviour.
fn with_shared_state(
    cfg: &Config,
    storage: Storage,
    blobs: Arc<dyn BlobStore>,
) -> anyhow::Result<(Ports, Option<Cluster>, Arc<dyn PushDedup>)> {
    let Some(redis) = &cfg.store_config.redis else {
        let ports = Ports {
            users: storage.users,
            topics: storage.topics,
            subs: storage.subs,
            messages: storage.messages,
            seq: Arc::new(MemorySeq::new()),
            idempotency: Arc::new(MemoryIdempotency::default()),
            presence: Arc::new(MemoryPresence::new()),
            bus: Arc::new(MemoryBus::new()),
            control: Arc::new(MemoryControl::default()),
            hooks: Arc::new(NoHooks),
            push_hook: Arc::new(NoHooks),
            scan_hook: Arc::new(NoHooks),
            gates: Arc::new(NoHooks),
            listeners: Arc::new(NoHooks),
            scanner: None,
            business: storage.business,
            outbox: storage.outbox,
            devices: storage.devices,
            calls: storage.calls,
            settings: storage.settings,
            files: storage.files,
            blobs,
            login_failures: None,
            credentials: storage.credentials,
            codes: cfg.accounts.credentials.memory_codes(),
            code_senders: cfg.accounts.credentials.senders()?,
        };
        return Ok((ports, None, Arc::new(MemoryPushDedup::new(cfg.push.dedup_capacity))));
    };
    let client = RedisClient::connect(redis.clone()).context("configuring Redis")?;
    let metrics = client.metrics_source();
    let shared = RedisPorts::new(&client, cfg.server.node_id.clone());
    let policy = HotPolicy::min_members(
        storage.subs.clone(),
        redis.hot_group_min_members,
        Duration::from_secs(HOT_RECHECK_SECONDS),
    );
    let business = storage.business;
    let redis_client = client.clone();
    let outbox = storage.outbox;
    let devices = storage.devices;
    let calls = storage.calls;
    let settings = storage.settings;
    let files = storage.files;
    let credentials = storage.credentials;
    let cached = CachedStorage::new(client, storage.users, storage.topics, storage.subs, storage.messages, policy);
    let cluster = Cluster { nodes: Arc::new(shared.nodes), bus: shared.bus.clone(), metrics, redis: redis_client };
    let ports = Ports {
        users: Arc::new(cached.users),
        topics: Arc::new(cached.topics),
        subs: Arc::new(cached.subs),
        messages: Arc::new(cached.messages),
        seq: Arc::new(shared.seq),
        idempotency: Arc::new(shared.idempotency),
        presence: Arc::new(shared.presence),
        bus: Arc::new(shared.bus),
        control: Arc::new(shared.control),
        hooks: Arc::new(NoHooks),
        push_hook: Arc::new(NoHooks),
        scan_hook: Arc::new(NoHooks),
        gates: Arc::new(NoHooks),
        listeners: Arc::new(NoHooks),
        scanner: None,
        business,
        outbox,
        devices,
        calls,
        settings,
        files,
        blobs,
        // Guesses spread over the nodes meet one backoff (`security:login_fail:*`).
        login_failures: Some(Arc::new(shared.login_failures)),
        // Codes and their send counters are short state every node must see (`verify:*`).
        credentials,
        codes: Arc::new(shared.codes),
        code_senders: cfg.accounts.credentials.senders()?,
    };
    let dedup: Arc<dyn PushDedup> = Arc::new(shared.push_dedup);
    Ok((ports, Some(cluster), dedup))
}

/// How often a group's member count is re-read to decide whether its messages stay hot in Redis.
const HOT_RECHECK_SECONDS: u64 = 60;

/// The MySQL adapter's settings from the `[store]` section.
pub fn mysql_config(cfg: &Config) -> MysqlConfig {
    let s = &cfg.store;
    MysqlConfig {
        max_connections_per_tenant: s.max_connections_per_tenant,
        control_max_connections: s.control_max_connections,
        max_tenant_pools: s.max_open_tenant_pools,
        idle_pool_timeout: Duration::from_secs(s.idle_pool_timeout_seconds),
        acquire_timeout: Duration::from_millis(s.acquire_timeout_ms),
        batch_max_rows: s.batch_max_rows,
        batch_max_delay: Duration::from_millis(s.batch_max_delay_ms),
        tenant_database_prefix: s.tenant_database_prefix.clone(),
        ..MysqlConfig::new(s.url.clone())
    }
}

async fn wait_for_signal() -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    Ok(())
}

/// The configured token key, or one generated once and kept in the data directory.
fn token_key(cfg: &Config) -> anyhow::Result<Vec<u8>> {
    if let Some(key) = cfg.token_key_bytes().filter(|_| !cfg.auth.token_key.is_empty()) {
        return Ok(key);
    }
    let path = cfg.server.data_dir.join("token.key");
    load_or_create_key(&path)
}

fn load_or_create_key(path: &Path) -> anyhow::Result<Vec<u8>> {
    if let Ok(text) = std::fs::read_to_string(path) {
        let key = STANDARD.decode(text.trim()).with_context(|| format!("{} is not base64", path.display()))?;
        anyhow::ensure!(key.len() >= 32, "{} holds fewer than 32 bytes", path.display());
        return Ok(key);
    }
    let key: Vec<u8> = (0..32).map(|_| rand::random::<u8>()).collect();
    write_private(path, STANDARD.encode(&key).as_bytes())?;
    tracing::info!(path = %path.display(), "generated a token key");
    Ok(key)
}

fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    f.write_all(bytes)?;
    Ok(())
}

fn service_config(cfg: &Config) -> ServiceConfig {
    ServiceConfig {
        node_id: cfg.server.node_id.clone(),
        token_ttl: Duration::from_secs(cfg.auth.token_ttl_seconds),
        hash_cost: HashCost { memory_kib: cfg.auth.argon2_memory_kib, iterations: cfg.auth.argon2_iterations },
        max_message_size: cfg.limits.max_message_size,
        max_subscriber_count: cfg.limits.max_subscriber_count,
        session_queue: cfg.limits.session_queue,
        send_deadline: Duration::from_millis(cfg.transport.send_deadline_ms),
        session_queue_bytes: cfg.limits.session_queue_bytes,
        evict_same_platform: cfg.auth.evict_same_platform,
        hash_concurrency: cfg.auth.hash_concurrency,
        login_limits: LoginLimits {
            per_login: cfg.auth.login_fail_limit,
            per_addr: cfg.auth.login_ip_fail_limit,
            backoff_max: Duration::from_millis(cfg.auth.login_backoff_max_ms),
        },
        password_change_requires_current: cfg.auth.password_change_requires_current,
        max_groups_per_user: cfg.limits.max_groups_per_user,
        max_sessions_per_user: cfg.limits.max_sessions_per_user,
        max_loaded_topics: cfg.limits.max_loaded_topics,
        topic_idle: Duration::from_secs(cfg.limits.topic_idle_seconds),
        max_publishes_in_flight: cfg.limits.max_publishes_in_flight,
        max_user_agent: cfg.limits.max_user_agent_bytes,
        max_desc_bytes: cfg.limits.max_desc_bytes,
        api_rate_per_second: cfg.limits.api_rate_per_second,
        api_rate_burst: cfg.limits.api_rate_burst,
        outbox_max_depth: cfg.outbox.max_depth,
        calls: cfg.calls.clone(),
        files: cfg.files.service(),
        edits: palaver_service::EditConfig {
            edit_window: Duration::from_millis(cfg.messages.edit_window_ms),
            recall_window: Duration::from_millis(cfg.messages.recall_window_ms),
        },
        delete_mode: cfg.accounts.delete_mode.service(),
        credentials: cfg.accounts.credentials.service(),
        ..ServiceConfig::default()
    }
}

fn gateway_config(cfg: &Config) -> GatewayConfig {
    let t = &cfg.transport;
    GatewayConfig {
        max_message_size: cfg.limits.max_message_size,
        rate_per_second: cfg.limits.rate_per_second,
        rate_burst: cfg.limits.rate_burst,
        ws_read_buffer: t.ws_read_buffer,
        ws_write_buffer: t.ws_write_buffer,
        idle_timeout: Duration::from_secs(t.idle_timeout_seconds),
        ping_interval: Duration::from_secs(t.ping_interval_seconds),
        lp_poll_timeout: Duration::from_secs(t.lp_poll_timeout_seconds),
        lp_session_timeout: Duration::from_secs(t.lp_session_timeout_seconds),
        lp_max_sessions: cfg.limits.max_lp_sessions,
        lp_max_sessions_per_ip: cfg.limits.max_lp_sessions_per_ip,
        max_connections: cfg.server.max_connections,
        header_timeout: Duration::from_millis(t.header_timeout_ms),
        http_idle_timeout: Duration::from_millis(t.http_idle_timeout_ms),
        ws_handshake_timeout: Duration::from_millis(t.ws_handshake_timeout_ms),
        write_timeout: Duration::from_millis(t.write_timeout_ms),
        metrics_listener: !cfg.server.metrics_listen.is_empty(),
        protect_metrics: cfg.admin.protect_metrics,
        access_log: cfg.log.access,
    }
}
