//! `cargo xtask new-plugin`: a plugin scaffolded into the plugins workspace's layout builds into a component
//! (`cargo xtask plugins --path`), passes the load gate (imports against grants, its golden fixtures run in wasm),
//! answers both hooks, and passes its own native `cargo test`.
//!
//! The layout is a copy of `plugins/Cargo.toml` and its lock file in a temporary directory, so the real workspace is
//! left alone; the builds share `target/wasm`, so only the SDK and the new crate compile. A test binary of its own:
//! its cargo builds take the CPU, and the `it` binary's calls run against 20 ms deadlines.

use palaver_core::ports::{PublishContext, PublishVerdict};
use palaver_core::{TenantId, TopicKind, UserId};
use palaver_plugin_runtime::{
    CommandContext, CommandOutcome, HostServices, LoadOutcome, PluginHooks, PluginRegistry, RuntimeConfig,
};
use serde_json::json;
use std::path::Path;
use std::sync::Arc;

/// A plugins workspace at `<at>/plugins` with no members, the real one's dependencies (their paths made
/// absolute), profile and lock file.
fn copy_workspace(root: &Path, at: &Path) {
    let real = root.join("plugins");
    let mut ws: toml::Table = toml::from_str(&std::fs::read_to_string(real.join("Cargo.toml")).unwrap()).unwrap();
    let w = ws.get_mut("workspace").and_then(toml::Value::as_table_mut).unwrap();
    w.insert("members".to_owned(), toml::Value::Array(Vec::new()));
    let deps = w.get_mut("dependencies").and_then(toml::Value::as_table_mut).unwrap();
    for (_, dep) in deps.iter_mut() {
        if let Some(path) = dep.get_mut("path") {
            let abs = real.join(path.as_str().unwrap()).canonicalize().unwrap();
            *path = toml::Value::String(abs.display().to_string());
        }
    }
    let copy = at.join("plugins");
    std::fs::create_dir_all(&copy).unwrap();
    std::fs::write(copy.join("Cargo.toml"), toml::to_string(&ws).unwrap()).unwrap();
    // The same versions as the real workspace: nothing to resolve or download, and every dependency is reused.
    std::fs::copy(real.join("Cargo.lock"), copy.join("Cargo.lock")).unwrap();
}

/// A group message's context in tenant 1.
fn ctx() -> PublishContext {
    PublishContext {
        tenant: TenantId(1),
        topic: "grpScaffold".to_owned(),
        kind: TopicKind::Group,
        from: UserId(7),
        session: "s".to_owned(),
        node: "test-node".to_owned(),
    }
}

#[tokio::test]
async fn a_scaffolded_plugin_builds_loads_and_passes_its_own_tests() {
    // The plugins workspace's dependencies, in target/wasm.
    xtask::ensure_plugins_built().expect("building the plugins");
    let root = xtask::repo_root();
    let tmp = tempfile::Builder::new().prefix("scaffold").tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    copy_workspace(&root, tmp.path());
    // A name no shipped plugin (nor the docs' tutorial plugin) has: its core module shares target/wasm.
    let s = xtask::new_plugin::scaffold(tmp.path(), "scaffold-check", None).unwrap();
    assert_eq!(s.member.as_deref(), Some("scaffold-check"));

    let mut log = |line: &str| eprintln!("xtask: {line}");
    let started = std::time::Instant::now();
    let b = xtask::plugins::build_path(&root, &s.dir, &tmp.path().join("out"), &mut log).unwrap();
    eprintln!("built {} in {:?}", b.component.display(), started.elapsed());

    // The load gate checks the imports against the grants and runs the manifest's five golden fixtures in wasm.
    let config = RuntimeConfig::default().with_node("test-node").with_cache_dir(root.join("target/plugin-test-cache"));
    let registry = Arc::new(PluginRegistry::new(config, HostServices::in_memory()).unwrap());
    let hooks = PluginHooks::new(registry.clone());
    let loaded = registry.load_file(&b.manifest).unwrap();
    assert!(matches!(loaded, LoadOutcome::Loaded { ref name, .. } if name == "scaffold-check"), "{loaded:?}");
    let spam = json!("buy SPAM now");
    assert_eq!(hooks.judge(&ctx(), &spam, None).await, PublishVerdict::Allow, "off until a tenant enables it");
    registry.set_enabled(TenantId(1), "scaffold-check", Some(true)).unwrap();
    let refused = PublishVerdict::Reject { code: 422, reason: "blocked word: spam".to_owned() };
    assert_eq!(hooks.judge(&ctx(), &spam, None).await, refused);
    let cmd = CommandContext::new(TenantId(1), UserId(7));
    let out = hooks.run_command(&cmd, "scaffold-check.echo", &json!({ "text": "hi" })).await.unwrap();
    assert_eq!(out, CommandOutcome::Ok(json!({ "text": "hi" })));

    let started = std::time::Instant::now();
    xtask::plugins::native_test(&root, &s.dir).unwrap();
    eprintln!("native tests in {:?}", started.elapsed());
}
