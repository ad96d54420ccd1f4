//! The plugins' key-value store is the node's database: the example `hello` plugin counts greetings in it, and
//! the count survives a restart on the embedded SQLite store, and is one count for two nodes on MariaDB.
//! Needs `cargo xtask plugins` to have built `target/plugins` (and MariaDB for the second test).

mod common;

use palaver_core::TenantId;
use palaver_core::ports::PluginKv;
use palaver_plugin_runtime::{
    CommandContext, CommandOutcome, HostServices, PluginHooks, PluginRegistry, RuntimeConfig,
};
use serde_json::json;
use std::sync::Arc;

/// A registry over `kv` with the built `hello` plugin loaded and enabled for tenant 1: a node's plugin platform.
fn node(kv: Arc<dyn PluginKv>, plugins: &std::path::Path) -> PluginHooks {
    let services = HostServices::in_memory().with_kv(kv);
    let registry = Arc::new(PluginRegistry::new(RuntimeConfig::default(), services).expect("registry"));
    registry.load_file(&plugins.join("hello-0.1.0.toml")).expect("hello loads");
    registry.set_enabled(TenantId(1), "hello", Some(true)).unwrap();
    PluginHooks::new(registry)
}

async fn greet(hooks: &PluginHooks, name: &str) -> serde_json::Value {
    let ctx = CommandContext::new(TenantId(1), palaver_core::UserId(7));
    match hooks.run_command(&ctx, "hello.greet", &json!({ "name": name })).await.expect("the command runs") {
        CommandOutcome::Ok(v) => v["count"].clone(),
        other => panic!("hello.greet: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_count_survives_a_restart_on_sqlite() {
    let plugins = common::plugins_dir(&["hello-"]);
    let data = tempfile::tempdir().unwrap();
    let db = data.path().join("palaver.db");
    let store = Arc::new(palaver_store_sqlite::SqliteStore::open(&db).await.unwrap());
    let hooks = node(store.clone(), plugins.path());
    assert_eq!(greet(&hooks, "Ann").await, 1);
    assert_eq!(greet(&hooks, "Bo").await, 2);
    drop(hooks);
    store.close().await;
    drop(store);

    let store = Arc::new(palaver_store_sqlite::SqliteStore::open(&db).await.unwrap());
    let hooks = node(store.clone(), plugins.path());
    assert_eq!(greet(&hooks, "Cy").await, 3, "the restarted node counts on");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_on_mariadb_share_one_count() {
    let plugins = common::plugins_dir(&["hello-"]);
    let mysql = std::env::var("PALAVER_TEST_MYSQL_ADDR").unwrap_or_else(|_| "127.0.0.1:3306".into());
    let tag = format!("pt_kv_{:08x}", rand::random::<u32>());
    let cfg = palaver_store_mysql::MysqlConfig {
        tenant_database_prefix: format!("{tag}_t_"),
        ..palaver_store_mysql::MysqlConfig::new(format!("mysql://palaver:palaver@{mysql}/{tag}_ctl"))
    };
    let connect = || async {
        let store = palaver_store_mysql::MysqlStore::connect(cfg.clone()).await.expect("MariaDB up?");
        store.ensure_default_tenant("key").await.unwrap();
        Arc::new(store)
    };
    let (a, b) = (connect().await, connect().await);
    let (node_a, node_b) = (node(a, plugins.path()), node(b, plugins.path()));
    // Greetings through both nodes at once: one counter, each value handed out once.
    let (x, y) = tokio::join!(greet(&node_a, "Ann"), greet(&node_b, "Bo"));
    let mut got = [x.as_i64().unwrap(), y.as_i64().unwrap()];
    got.sort();
    assert_eq!(got, [1, 2]);
    assert_eq!(greet(&node_b, "Cy").await, 3);
    assert_eq!(greet(&node_a, "Di").await, 4);
    common::drop_databases(&tag);
}
