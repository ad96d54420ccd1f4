//! A tiny interactive host for trying plugins by hand, as `docs/plugins.md` does: it loads a plugins directory,
//! watches it (drop a new `.wasm` + `.toml` in and it loads), and judges every line you type as a group message.
//!
//! `cargo run -p palaver-plugin-runtime --example plugin_host -- DIR`
//!
//! Lines starting with `:` are commands: `:list`, `:rollback NAME`, `:reload NAME`, `:rescan`, `:enable NAME`,
//! `:disable NAME`, `:settings NAME {json}`, `:command NAME {json}`, `:metrics`, `:quit`. Anything else is a
//! message from tenant 1.

use palaver_core::ports::PublishContext;
use palaver_core::{TenantId, TopicKind, UserId};
use palaver_plugin_runtime::{CommandContext, HostServices, PluginHooks, PluginRegistry, RuntimeConfig};
use serde_json::Value;
use std::io::BufRead;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

const TENANT: TenantId = TenantId(1);
const ACTOR: UserId = UserId(0x0102_0304_0506_0708);

fn list(registry: &PluginRegistry) {
    for p in registry.list() {
        let version = p.version.as_deref().unwrap_or("-");
        let hash: String = p.hash.as_deref().unwrap_or("").chars().take(12).collect();
        let state = serde_json::to_value(p.state).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
        let err = p.last_error.as_deref().map(|e| format!("  last error: {e}")).unwrap_or_default();
        println!("{:<14} {version:<8} {hash:<12} {state:<14} calls {:<6} faults {:<4}{err}", p.name, p.calls, p.faults);
    }
}

fn run(registry: &Arc<PluginRegistry>, hooks: &PluginHooks, rt: &tokio::runtime::Runtime, line: &str) -> bool {
    let (cmd, rest) = line.split_once(' ').unwrap_or((line, ""));
    let rest = rest.trim();
    let report = |r: Result<String, String>| match r {
        Ok(s) => println!("{s}"),
        Err(e) => println!("error: {e}"),
    };
    match cmd {
        ":quit" | ":q" => return false,
        ":list" => list(registry),
        ":metrics" => print!("{}", registry.render_metrics()),
        ":rescan" => println!("{:?}", registry.rescan()),
        ":rollback" => report(
            registry.rollback(rest).map(|r| format!("{} {} -> {}", r.name, r.from, r.to)).map_err(|e| e.to_string()),
        ),
        ":reload" => report(registry.reload(rest).map(|o| format!("{o:?}")).map_err(|e| e.to_string())),
        ":enable" | ":disable" => {
            report(
                registry
                    .set_enabled(TENANT, rest, Some(cmd == ":enable"))
                    .map(|()| "ok".to_owned())
                    .map_err(|e| e.to_string()),
            );
        }
        ":settings" => {
            let (name, json) = rest.split_once(' ').unwrap_or((rest, "null"));
            let parsed = serde_json::from_str::<Value>(json).map_err(|e| e.to_string());
            report(parsed.and_then(|v| {
                let v = if v.is_null() { None } else { Some(v) };
                registry.set_settings(TENANT, name, v).map(|()| "ok".to_owned()).map_err(|e| e.to_string())
            }));
        }
        ":command" => {
            let (name, json) = rest.split_once(' ').unwrap_or((rest, "null"));
            match serde_json::from_str::<Value>(json) {
                Ok(args) => {
                    let out = rt.block_on(hooks.run_command(&CommandContext::new(TENANT, ACTOR), name, &args));
                    println!("{out:?}");
                }
                Err(e) => println!("error: {e}"),
            }
        }
        c if c.starts_with(':') => println!("unknown command {c}"),
        _ => {
            let ctx = PublishContext {
                tenant: TENANT,
                topic: "grpTry".to_owned(),
                kind: TopicKind::Group,
                from: ACTOR,
                session: "repl".to_owned(),
                node: "local".to_owned(),
            };
            let verdict = rt.block_on(hooks.judge(&ctx, &Value::String(line.to_owned()), None));
            println!("{verdict:?}");
        }
    }
    true
}

fn main() {
    tracing_subscriber::fmt().with_env_filter("info").with_target(false).init();
    let Some(dir) = std::env::args().nth(1).map(PathBuf::from) else {
        eprintln!("usage: plugin_host DIR   (try target/plugins after `cargo xtask plugins`)");
        std::process::exit(2);
    };
    let cache = xtask::repo_root().join("target/plugin-cache");
    let registry = match PluginRegistry::new(RuntimeConfig::default().with_cache_dir(cache), HostServices::in_memory())
    {
        Ok(r) => Arc::new(r),
        Err(e) => {
            eprintln!("cannot start the runtime: {e}");
            std::process::exit(1);
        }
    };
    let report = registry.load_dir(&dir);
    for (path, why) in &report.refused {
        println!("refused {}: {why}", path.display());
    }
    let _watcher = match registry.watch(&dir, Duration::from_secs(1)) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("cannot watch {}: {e}", dir.display());
            std::process::exit(1);
        }
    };
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start tokio: {e}");
            std::process::exit(1);
        }
    };
    let hooks = PluginHooks::new(registry.clone());
    list(&registry);
    println!("type a message, or :list, :rollback NAME, :quit …");
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let line = line.trim();
        if !line.is_empty() && !run(&registry, &hooks, &rt, line) {
            break;
        }
    }
}
