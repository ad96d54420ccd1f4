//! `palaver admin command`: produces one admin command to the configured task queue (Kafka with `[kafka]`, the
//! embedded SQLite queue otherwise) exactly as an Admin Server would, and with `--wait` prints its result from
//! `im.admin.command.result` (read in a consumer group of its own, filtered by the command id).

use crate::backbone::open_queue;
use crate::config::{Config, StoreKind};
use anyhow::{Context, bail};
use palaver_core::ports::QueueTopic;
use palaver_service::admin::{Actor, AdminCommand, COMMAND_TYPES, CommandResult};
use palaver_store_sqlite::SqliteStore;
use serde_json::Value;
use std::time::Duration;

/// One `palaver admin command` invocation.
#[derive(Debug, Clone)]
pub struct CommandRequest {
    pub kind: String,
    /// A tenant id (decimal) or a tenant code.
    pub tenant: String,
    /// The payload, a JSON object.
    pub payload: String,
    /// Reuse an id (a retry); a fresh one otherwise.
    pub command_id: Option<String>,
    /// Wait this long for the result and print it.
    pub wait: Option<Duration>,
}

/// Produces the command and, when asked, waits for its result. Returns the result when it waited.
pub async fn run(cfg: &Config, req: CommandRequest) -> anyhow::Result<Option<CommandResult>> {
    if !COMMAND_TYPES.contains(&req.kind.as_str()) {
        bail!("unknown command type {:?}; one of: {}", req.kind, COMMAND_TYPES.join(", "));
    }
    let payload: Value = serde_json::from_str(&req.payload).context("--payload is not JSON")?;
    if !payload.is_object() {
        bail!("--payload must be a JSON object");
    }
    let numeric = req.tenant.parse::<u64>().is_ok();
    let cmd = AdminCommand {
        command_id: req.command_id.clone().unwrap_or_else(|| AdminCommand::new_id("cli")),
        tenant_id: numeric.then(|| req.tenant.clone()),
        tenant_code: (!numeric).then(|| req.tenant.clone()),
        kind: req.kind.clone(),
        actor: Actor { kind: "cli".into(), id: std::env::var("USER").unwrap_or_else(|_| "cli".into()) },
        issued_at: Some(Value::String(palaver_service::admin::rfc3339(palaver_core::now_millis()))),
        payload,
        ..AdminCommand::default()
    };
    // The embedded queue: opened as the server opens it (which moves one left in the store's file first).
    let sqlite = match (&cfg.kafka, cfg.store.kind) {
        (None, StoreKind::Sqlite) => {
            let path = cfg.server.data_dir.join("palaver.db");
            Some(SqliteStore::open(&path).await.with_context(|| format!("opening {}", path.display()))?)
        }
        _ => None,
    };
    let backbone = open_queue(cfg, sqlite.as_ref()).await?;
    let queue = backbone.queue.clone();
    // Joined before producing, so that no result can slip past (a new group also starts at the beginning).
    let mut results = match req.wait {
        Some(_) => {
            let group = format!("{}.cli.{:016x}", backbone.group_id, rand::random::<u64>());
            Some(queue.subscribe(QueueTopic::AdminResult, &group).await.context("subscribing to the results")?)
        }
        None => None,
    };
    queue.produce(cmd.record()).await.context("producing the command")?;
    eprintln!("produced command {}", cmd.command_id);
    let outcome = match (results.as_mut(), req.wait) {
        (Some(consumer), Some(wait)) => {
            let found = tokio::time::timeout(wait, async {
                loop {
                    let d = consumer.next().await?;
                    if d.record.header("command_id") == Some(cmd.command_id.as_str())
                        && let Ok(r) = serde_json::from_slice::<CommandResult>(&d.record.payload)
                    {
                        return Ok::<_, palaver_core::StoreError>(r);
                    }
                }
            })
            .await;
            match found {
                Ok(Ok(r)) => Some(r),
                Ok(Err(e)) => bail!("reading the results: {e}"),
                Err(_) => bail!("no result for {} within {} ms", cmd.command_id, wait.as_millis()),
            }
        }
        _ => None,
    };
    drop(results);
    backbone.stop().await;
    if let Some(s) = sqlite {
        s.close().await;
    }
    Ok(outcome)
}
