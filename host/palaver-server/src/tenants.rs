//! `palaver tenant …`: managing the tenant registry of the scale-out store from the command line.

use crate::config::{Config, StoreKind};
use crate::wiring::mysql_config;
use anyhow::Context;
use palaver_core::TenantState;
use palaver_core::ports::TenantStore;
use palaver_gateway::apikey::{decode_salt, make_key};
use palaver_store_mysql::MysqlStore;

/// What to do to the registry.
#[derive(Debug, Clone)]
pub enum TenantCommand {
    /// Creates a tenant (its database, migrated) and prints it with a fresh API key.
    Create { code: String, name: Option<String> },
    /// Lists every tenant.
    List,
    /// Enables or disables a tenant.
    SetState { code: String, active: bool },
    /// Adds a fresh API key to a tenant.
    NewKey { code: String },
    /// Adds a fresh API key and revokes every other key of the tenant.
    RotateKeys { code: String },
    /// Revokes one API key of a tenant.
    RevokeKey { code: String, key: String },
}

/// A fresh key of tenant `id`: the sequence bytes differ per key, so a tenant can hold several at once.
fn fresh_key(id: palaver_core::TenantId, salt: &[u8]) -> String {
    make_key(id.0 as u32 ^ (rand::random::<u32>() & 0xffff_0000), salt)
}

/// Runs one registry command against the configured MySQL store.
pub async fn run(cfg: &Config, command: TenantCommand) -> anyhow::Result<()> {
    anyhow::ensure!(
        cfg.store.kind == StoreKind::Mysql,
        "tenants live in the MySQL control database: set [store] kind = \"mysql\" and url"
    );
    let store = MysqlStore::connect(mysql_config(cfg)).await.context("connecting to the control database")?;
    let salt = decode_salt(&cfg.api.key_salt)?;
    let result = async {
        match command {
            TenantCommand::Create { code, name } => {
                let tenant = store.create_tenant(&code, name.as_deref().unwrap_or(&code)).await?;
                let key = make_key(tenant.id.0 as u32, &salt);
                store.add_api_key(tenant.id, &key).await?;
                println!(
                    "{}",
                    serde_json::json!({ "id": tenant.id.0, "code": tenant.code, "database": tenant.database, "api_key": key })
                );
            }
            TenantCommand::List => {
                for t in store.list_tenants().await? {
                    let state = if t.state == TenantState::Active { "active" } else { "disabled" };
                    println!("{}\t{}\t{}\t{}\t{} key(s)", t.id.0, t.code, state, t.database, t.api_keys.len());
                }
            }
            TenantCommand::SetState { code, active } => {
                let t = store.find_tenant_by_code(&code).await?.context("no such tenant")?;
                let state = if active { TenantState::Active } else { TenantState::Disabled };
                store.set_tenant_state(t.id, state).await?;
                println!("{} is now {}", t.code, if active { "active" } else { "disabled" });
            }
            TenantCommand::NewKey { code } => {
                let t = store.find_tenant_by_code(&code).await?.context("no such tenant")?;
                let key = fresh_key(t.id, &salt);
                store.add_api_key(t.id, &key).await?;
                println!("{key}");
            }
            TenantCommand::RotateKeys { code } => {
                let t = store.find_tenant_by_code(&code).await?.context("no such tenant")?;
                // The new key is stored before any old one goes, so the tenant is never left without a key.
                let key = fresh_key(t.id, &salt);
                store.add_api_key(t.id, &key).await?;
                for old in t.api_keys.iter().filter(|k| **k != key) {
                    store.remove_api_key(t.id, old).await?;
                }
                eprintln!(
                    "revoked {} key(s); nodes stop accepting them within a minute (their key cache)",
                    t.api_keys.len()
                );
                println!("{key}");
            }
            TenantCommand::RevokeKey { code, key } => {
                let t = store.find_tenant_by_code(&code).await?.context("no such tenant")?;
                match store.remove_api_key(t.id, key.trim()).await {
                    Ok(()) => println!("revoked; nodes stop accepting it within a minute (their key cache)"),
                    Err(palaver_core::StoreError::NotFound) => anyhow::bail!("{} holds no such key", t.code),
                    Err(e) => return Err(e.into()),
                }
            }
        }
        anyhow::Ok(())
    }
    .await;
    store.close().await;
    result
}
