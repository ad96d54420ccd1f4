//! Migrations: re-running them on migrated databases changes nothing, `migrate_all` carries on past a broken
//! tenant, and the recovery in `migrations/mysql/README.md` brings a half-applied tenant back.

mod common;

use common::Scratch;
use palaver_core::UserId;
use palaver_core::ports::{PluginChoiceStore, PluginReleaseStore, PluginRollout, TenantStore, UserStore};
use sqlx::Executor;

/// The tenant migrations as files, to replay them by hand like an operator finishing a half-applied run.
/// Every tenant migration, in order (a test checks that none in the folder is missing here).
const TENANT_SQL: &[&str] = &[
    include_str!("../../../migrations/mysql/tenant/0001_core.sql"),
    include_str!("../../../migrations/mysql/tenant/0002_business.sql"),
    include_str!("../../../migrations/mysql/tenant/0003_relations.sql"),
    include_str!("../../../migrations/mysql/tenant/0004_groups.sql"),
    include_str!("../../../migrations/mysql/tenant/0005_outbox.sql"),
    include_str!("../../../migrations/mysql/tenant/0006_audit_lease.sql"),
    include_str!("../../../migrations/mysql/tenant/0007_admin_commands.sql"),
    include_str!("../../../migrations/mysql/tenant/0008_devices.sql"),
    include_str!("../../../migrations/mysql/tenant/0009_calls.sql"),
    include_str!("../../../migrations/mysql/tenant/0010_call_parties.sql"),
    include_str!("../../../migrations/mysql/tenant/0011_push_delayed.sql"),
    include_str!("../../../migrations/mysql/tenant/0012_settings.sql"),
    include_str!("../../../migrations/mysql/tenant/0013_files.sql"),
    include_str!("../../../migrations/mysql/tenant/0014_external_ids.sql"),
    include_str!("../../../migrations/mysql/tenant/0015_deleted_accounts.sql"),
    include_str!("../../../migrations/mysql/tenant/0016_credentials.sql"),
    include_str!("../../../migrations/mysql/tenant/0017_plugin_kv.sql"),
];

/// Every control migration, in order, likewise (a test checks that none in the folder is missing here).
const CONTROL_SQL: &[&str] = &[
    include_str!("../../../migrations/mysql/control/0001_registry.sql"),
    include_str!("../../../migrations/mysql/control/0002_plugin_choices.sql"),
    include_str!("../../../migrations/mysql/control/0003_plugin_releases.sql"),
];

/// How many `.sql` files a migration folder holds.
fn migration_files(folder: &str) -> usize {
    let dir = format!("{}/../../migrations/mysql/{folder}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_dir(dir).unwrap().filter(|e| e.as_ref().unwrap().path().extension() == Some("sql".as_ref())).count()
}

#[test]
fn every_control_migration_is_replayed_here() {
    assert_eq!(migration_files("control"), CONTROL_SQL.len(), "add the new migration to CONTROL_SQL");
}

#[test]
fn every_tenant_migration_is_replayed_here() {
    assert_eq!(migration_files("tenant"), TENANT_SQL.len(), "add the new migration to TENANT_SQL");
}

async fn applied(conn: &mut sqlx::MySqlConnection) -> Vec<(i64, bool)> {
    sqlx::query_as("SELECT version, success FROM _sqlx_migrations ORDER BY version").fetch_all(conn).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrations_rerun_safely_on_migrated_databases() {
    if common::skip() {
        return;
    }
    let scratch = Scratch::new();
    let store = scratch.store().await;
    let acme = store.create_tenant("acme", "Acme").await.unwrap();
    let other = store.create_tenant("other", "Other").await.unwrap();
    store.create_user(acme.id, &common_user(), None).await.unwrap();
    let first = store.put_plugin_choice(acme.id, "p", &serde_json::json!({"enabled": true})).await.unwrap();
    let rollout =
        PluginRollout { plugin: "p".into(), live: Some("1.0.0".into()), canary: None, revision: 0, updated_at: 0 };
    let first_rollout = store.put_plugin_rollout(&rollout, 1).await.unwrap();

    // A second start re-runs the control migrations; migrate_all re-runs every tenant's, twice.
    let restarted = scratch.store().await;
    for _ in 0..2 {
        let report = restarted.migrate_all().await.unwrap();
        assert_eq!(report.migrated, vec![acme.id, other.id]);
        assert!(report.failed.is_empty(), "{report:?}");
    }
    let mut control = scratch.connect("control").await;
    let control_latest = CONTROL_SQL.len() as i64;
    assert_eq!(applied(&mut control).await, (1..=control_latest).map(|v| (v, true)).collect::<Vec<_>>());
    let mut tenant = scratch.connect("t_acme").await;
    let latest = TENANT_SQL.len() as i64;
    assert_eq!(applied(&mut tenant).await, (1..=latest).map(|v| (v, true)).collect::<Vec<_>>());
    let versions: Vec<Option<i64>> =
        sqlx::query_scalar("SELECT schema_version FROM tenants ORDER BY id").fetch_all(&mut control).await.unwrap();
    assert_eq!(versions, vec![Some(latest), Some(latest)]);

    // Every statement is repeatable, so replaying the files on a migrated database is harmless.
    for sql in TENANT_SQL {
        tenant.execute(*sql).await.unwrap();
    }
    for sql in CONTROL_SQL {
        control.execute(*sql).await.unwrap();
    }
    assert!(restarted.get_user(acme.id, UserId(5)).await.unwrap().is_some(), "data survived the replays");
    let second = restarted.put_plugin_choice(other.id, "p", &serde_json::json!({"enabled": false})).await.unwrap();
    assert!(second > first, "the version sequence survived the replays: {first} then {second}");
    assert_eq!(restarted.plugin_choices_since(0, 10).await.unwrap().len(), 2);
    let second_rollout = restarted.put_plugin_rollout(&rollout, 2).await.unwrap();
    assert!(
        second_rollout > first_rollout,
        "the revision sequence survived the replays: {first_rollout} then {second_rollout}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_applied_tenant_fails_alone_and_recovers_as_documented() {
    if common::skip() {
        return;
    }
    let scratch = Scratch::new();
    let store = scratch.store().await;
    let acme = store.create_tenant("acme", "Acme").await.unwrap();
    let other = store.create_tenant("other", "Other").await.unwrap();

    // Simulate a crash in the middle of migration 2: the row says dirty and one of its tables is missing.
    let mut tenant = scratch.connect("t_acme").await;
    tenant.execute("UPDATE _sqlx_migrations SET success = FALSE WHERE version = 2").await.unwrap();
    tenant.execute("DROP TABLE audit_log").await.unwrap();

    let report = store.migrate_all().await.unwrap();
    assert_eq!(report.migrated, vec![other.id], "the healthy tenant is still migrated");
    assert_eq!(report.failed.len(), 1);
    assert_eq!(report.failed[0].0, acme.id);
    assert!(report.failed[0].1.contains("partially applied"), "{}", report.failed[0].1);
    let mut control = scratch.connect("control").await;
    let error: Option<String> = sqlx::query_scalar("SELECT migrate_error FROM tenants WHERE id = ?")
        .bind(acme.id.0)
        .fetch_one(&mut control)
        .await
        .unwrap();
    assert!(error.is_some_and(|e| e.contains("partially applied")));

    // The README's recovery: delete the dirty row, run migrate_all again.
    tenant.execute("DELETE FROM _sqlx_migrations WHERE version = 2 AND success = FALSE").await.unwrap();
    let report = store.migrate_all().await.unwrap();
    assert_eq!((report.migrated, report.failed), (vec![acme.id, other.id], Vec::new()));
    let tables: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'audit_log'",
    )
    .fetch_one(&mut tenant)
    .await
    .unwrap();
    assert_eq!(tables, 1, "the missing table was created by the rerun");
    let error: Option<String> = sqlx::query_scalar("SELECT migrate_error FROM tenants WHERE id = ?")
        .bind(acme.id.0)
        .fetch_one(&mut control)
        .await
        .unwrap();
    assert_eq!(error, None);
}

fn common_user() -> palaver_core::User {
    palaver_core::User {
        id: UserId(5),
        created: 1,
        updated: 1,
        state: palaver_core::RecordState::Active,
        auth_version: 0,
        defacs: palaver_core::DefaultAccess::USER,
        public: None,
        trusted: None,
        tags: Vec::new(),
        last_seen: None,
        user_agent: None,
    }
}
