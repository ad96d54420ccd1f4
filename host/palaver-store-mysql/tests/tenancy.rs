//! Tenancy beyond the contract: one database per tenant, disabled and unknown tenants, the default tenant, and
//! invalid codes.

mod common;

use common::Scratch;
use palaver_core::ports::{MessageStore, TenantStore, TopicStore, UserStore};
use palaver_core::{
    AuditStatus, AuthRecord, DefaultAccess, Message, RecordState, StoreError, TenantId, TenantState, Topic, TopicKind,
    User, UserId,
};
use serde_json::json;

fn user(id: u64) -> User {
    User {
        id: UserId(id),
        created: 1,
        updated: 1,
        state: RecordState::Active,
        auth_version: 0,
        defacs: DefaultAccess::USER,
        public: None,
        trusted: None,
        tags: vec!["t".into()],
        last_seen: None,
        user_agent: None,
    }
}

fn group(name: &str) -> Topic {
    palaver_contract::bare_topic(name, TopicKind::Group)
}

fn message(topic: &str, seq: i64) -> Message {
    Message {
        topic: topic.to_owned(),
        seq,
        created: 1_700_000_000_000 + seq,
        from: UserId(7),
        head: None,
        content: json!("hi"),
        client_mid: Some(format!("m{seq}")),
        audit: AuditStatus::Pass,
        risk_flags: Vec::new(),
    }
}

async fn count(conn: &mut sqlx::MySqlConnection, sql: &'static str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(conn).await.expect(sql)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_login_and_topic_live_in_separate_databases() {
    if common::skip() {
        return;
    }
    let scratch = Scratch::new();
    let store = scratch.store().await;
    let acme = store.create_tenant("acme", "Acme").await.unwrap();
    let other = store.create_tenant("other-1", "Other").await.unwrap();
    assert_eq!(acme.database, format!("{}t_acme", scratch.prefix));
    for (tenant, hash) in [(acme.id, "ha"), (other.id, "hb")] {
        let auth = AuthRecord { user: UserId(10), login: "alice".into(), secret_hash: hash.into() };
        store.create_user(tenant, &user(10), Some(&auth)).await.unwrap();
        store.create_topic(tenant, &group("grpShared")).await.unwrap();
        store.append(tenant, &message("grpShared", 1)).await.unwrap();
    }
    store.append(acme.id, &message("grpShared", 2)).await.unwrap();
    assert_eq!(store.find_auth(acme.id, "ALICE").await.unwrap().unwrap().secret_hash, "ha");
    assert_eq!(store.find_auth(other.id, "alice").await.unwrap().unwrap().secret_hash, "hb");

    let mut a = scratch.connect("t_acme").await;
    let mut b = scratch.connect("t_other-1").await;
    assert_eq!(count(&mut a, "SELECT COUNT(*) FROM im_group_messages").await, 2);
    assert_eq!(count(&mut b, "SELECT COUNT(*) FROM im_group_messages").await, 1);
    assert_eq!(count(&mut b, "SELECT COUNT(*) FROM auth WHERE login = 'alice'").await, 1);
    let tenant_columns = "SELECT COUNT(*) FROM information_schema.COLUMNS \
                          WHERE TABLE_SCHEMA = DATABASE() AND COLUMN_NAME = 'tenant_id'";
    assert_eq!(count(&mut a, tenant_columns).await, 0, "one database per tenant: no tenant_id columns");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disabled_and_unknown_tenants_are_not_found() {
    if common::skip() {
        return;
    }
    let scratch = Scratch::new();
    let store = scratch.store().await;
    let acme = store.create_tenant("acme", "Acme").await.unwrap();
    store.create_user(acme.id, &user(1), None).await.unwrap();
    assert_eq!(store.open_tenant_pools(), 1);

    store.set_tenant_state(acme.id, TenantState::Disabled).await.unwrap();
    assert_eq!(store.open_tenant_pools(), 0, "disabling closes the tenant's pool");
    assert_eq!(store.get_user(acme.id, UserId(1)).await, Err(StoreError::NotFound));
    assert_eq!(store.append(acme.id, &message("grpX", 1)).await, Err(StoreError::NotFound));
    store.set_tenant_state(acme.id, TenantState::Active).await.unwrap();
    assert!(store.get_user(acme.id, UserId(1)).await.unwrap().is_some(), "re-enabled, data intact");

    let unknown = TenantId(acme.id.0 + 100);
    assert_eq!(store.get_user(unknown, UserId(1)).await, Err(StoreError::NotFound));
    assert_eq!(store.get_topic(unknown, "grpX").await, Err(StoreError::NotFound));
    assert_eq!(store.append(unknown, &message("grpX", 1)).await, Err(StoreError::NotFound));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disabling_on_another_node_is_noticed_by_the_reaper() {
    if common::skip() {
        return;
    }
    let scratch = Scratch::new();
    let config = palaver_store_mysql::MysqlConfig {
        idle_pool_timeout: std::time::Duration::from_millis(200),
        ..scratch.config()
    };
    let node_a = scratch.store_with(config.clone()).await;
    let node_b = scratch.store_with(config).await;
    let acme = node_a.create_tenant("acme", "Acme").await.unwrap();
    node_a.create_user(acme.id, &user(1), None).await.unwrap();
    node_b.set_tenant_state(acme.id, TenantState::Disabled).await.unwrap();
    // Node A keeps the pool in use by polling; the reaper's state check still closes it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while node_a.get_user(acme.id, UserId(1)).await.is_ok() {
        assert!(std::time::Instant::now() < deadline, "node A never noticed the tenant was disabled");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(node_a.get_user(acme.id, UserId(1)).await, Err(StoreError::NotFound));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_tenant_is_created_once_and_owns_the_demo_key() {
    if common::skip() {
        return;
    }
    let scratch = Scratch::new();
    let store = scratch.store().await;
    let first = store.ensure_default_tenant("demo-key").await.unwrap();
    assert_eq!((first.id, first.code.as_str()), (TenantId::DEFAULT, palaver_store_mysql::DEFAULT_TENANT_CODE));
    assert_eq!(first.api_keys, vec!["demo-key".to_owned()]);
    let again = scratch.store().await.ensure_default_tenant("demo-key").await.unwrap();
    assert_eq!(again, first, "idempotent across restarts");
    assert_eq!(store.find_tenant_by_api_key("demo-key").await.unwrap().map(|t| t.id), Some(TenantId::DEFAULT));
    store.create_user(TenantId::DEFAULT, &user(1), None).await.unwrap();

    let acme = store.create_tenant("acme", "Acme").await.unwrap();
    store.add_api_key(acme.id, "acme-key").await.unwrap();
    assert!(matches!(store.ensure_default_tenant("acme-key").await, Err(StoreError::Conflict(_))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_codes_are_refused_before_any_ddl() {
    if common::skip() {
        return;
    }
    let scratch = Scratch::new();
    let store = scratch.store().await;
    for code in ["Acme", "a`b", "a;b", "", &"x".repeat(33)] {
        assert!(matches!(store.create_tenant(code, "x").await, Err(StoreError::Internal(_))), "{code:?}");
    }
    assert!(store.list_tenants().await.unwrap().is_empty());
}
