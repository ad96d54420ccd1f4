//! The load gate: a grant violation, a core module, junk, a component of another world, a manifest that claims
//! the wrong world, a failing golden fixture, a hash mismatch and stored settings that no longer fit are all
//! refused at load, visible in the listing; the disk cache; loading a directory.

use crate::common::{artifact, config, copy_into, env};
use palaver_core::TenantId;
use palaver_plugin_runtime::{
    Expect, Fixture, Grant, Hook, LoadError, LoadOutcome, PluginRegistry, PluginState, RegistryError, World,
};
use serde_json::json;

fn load_error(r: Result<LoadOutcome, RegistryError>) -> LoadError {
    match r {
        Err(RegistryError::Load(e)) => e,
        other => panic!("expected a load error, got {other:?}"),
    }
}

#[test]
fn an_import_that_is_not_granted_is_refused_at_load_and_listed() {
    let e = env();
    let err = load_error(e.registry.load_file(&e.copy("ungranted-1.0.0")));
    assert!(matches!(&err, LoadError::NotGranted(m) if m.contains("palaver:plugin/events@0.1.3")), "{err}");
    let info = e.info("ungranted");
    assert_eq!(info.state, PluginState::Failed);
    assert_eq!(info.version, None);
    assert!(info.last_error.unwrap().contains("events"));
    assert_eq!(info.load_refusals, 1);
    // The same component with the grant loads: the check is against the manifest, not the code.
    e.load_edited("ungranted-1.0.0", |m| m.grants.push(Grant::Events)).unwrap();
    assert_eq!(e.info("ungranted").state, PluginState::Active);
    assert_eq!(e.info("ungranted").last_error, None);
}

#[test]
fn a_core_module_and_junk_are_refused() {
    let e = env();
    let (manifest, _) = artifact("allow-all-1.0.0");
    let core = xtask::repo_root().join("target/wasm/wasm32-unknown-unknown/release/palaver_test_allow_all.wasm");
    let core = std::fs::read(core).expect("the core module cargo built");
    let mut m = manifest.clone();
    m.sha256 = None;
    let err = load_error(e.registry.load_bytes(m.clone(), &core));
    assert!(matches!(&err, LoadError::NotAComponent(msg) if msg.contains("core WebAssembly module")), "{err}");
    let err = load_error(e.registry.load_bytes(m, b"#!/bin/sh\necho not wasm\n"));
    assert!(matches!(err, LoadError::NotAComponent(_)), "{err}");
}

#[test]
fn a_component_of_another_world_is_refused() {
    let e = env();
    let err = load_error(e.registry.load_file(&e.copy("wrong-world-1.0.0")));
    assert!(matches!(&err, LoadError::WorldMismatch(m) if m.contains("acme:filter")), "{err}");
}

#[test]
fn a_manifest_that_claims_the_wrong_world_is_refused() {
    let e = env();
    let err = load_error(e.load_edited("trap-1.0.0", |m| {
        m.world = World::PublishFilter;
        m.hooks.on_command = None;
    }));
    assert!(matches!(&err, LoadError::WorldMismatch(m) if m.contains("on-command")), "{err}");
    let err = load_error(e.load_edited("allow-all-1.0.0", |m| m.world = World::Full));
    assert!(matches!(&err, LoadError::WorldMismatch(m) if m.contains("on-command")), "{err}");
}

#[test]
fn a_failing_golden_fixture_refuses_the_version() {
    let e = env();
    let err = load_error(e.load_edited("moderation-0.1.0", |m| {
        m.fixtures.push(Fixture {
            content: Some(json!("forbidden")),
            ..Fixture::new("forbidden is fine, says nobody", Hook::BeforePublish, Expect::Allow)
        });
    }));
    assert!(matches!(&err, LoadError::Fixture { name, .. } if name.contains("says nobody")), "{err}");
    assert!(e.registry.info("moderation").is_some_and(|i| i.version.is_none()));
}

#[test]
fn a_component_that_does_not_match_its_pinned_hash_is_refused() {
    let e = env();
    let (mut m, wasm) = artifact("allow-all-1.0.0");
    m.sha256 = Some("00".repeat(32));
    let err = load_error(e.registry.load_bytes(m, &wasm));
    assert!(matches!(err, LoadError::HashMismatch { .. }), "{err}");
}

#[test]
fn stored_tenant_settings_must_fit_a_new_versions_schema() {
    let e = env();
    e.load("moderation-0.1.0");
    e.registry.set_settings(TenantId(7), "moderation", Some(json!({ "max_length": 5 }))).unwrap();
    let err = load_error(e.load_edited("moderation-0.1.0", |m| {
        m.version = "0.2.0".to_owned();
        m.settings.remove("max_length");
        m.fixtures.retain(|f| f.settings.as_ref().is_none_or(|s| s.get("max_length").is_none()));
    }));
    assert!(matches!(err, LoadError::TenantSettings { tenant: 7, .. }), "{err}");
    assert_eq!(e.info("moderation").version.as_deref(), Some("0.1.0"), "the old version stays");
}

#[test]
fn compiled_components_are_cached_on_disk() {
    let cache = tempfile::tempdir().unwrap();
    let cfg = || config().with_cache_dir(cache.path());
    let first = PluginRegistry::new(cfg(), Default::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    first.load_file(&copy_into(dir.path(), "allow-all-1.0.0")).unwrap();
    let files = walk(cache.path());
    assert!(!files.is_empty(), "the compiled component is in the cache");
    let second = PluginRegistry::new(cfg(), Default::default()).unwrap();
    second.load_file(&dir.path().join("allow-all-1.0.0.toml")).unwrap();
    assert_eq!(first.engine_id(), second.engine_id());
    let after = walk(cache.path());
    assert_eq!(after, files, "the second engine reused the entry");
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        // The cache worker also keeps usage statistics and clean-up markers, written in the background.
        if p.is_dir() {
            out.extend(walk(&p));
        } else if p.extension().is_none_or(|x| x != "stats") && !p.to_string_lossy().contains(".wip") {
            out.push(p);
        }
    }
    out.sort();
    out
}

#[test]
fn a_directory_loads_the_highest_version_of_each_plugin_and_reports_refusals() {
    let e = env();
    for stem in ["ruled-1.0.0", "ruled-2.0.0", "moderation-0.1.0", "ungranted-1.0.0"] {
        e.copy(stem);
    }
    std::fs::write(e.dir.path().join("broken.toml"), "this is not a manifest").unwrap();
    let report = e.registry.load_dir(e.dir.path());
    let mut loaded: Vec<String> = report
        .loaded
        .iter()
        .map(|o| match o {
            LoadOutcome::Loaded { name, version, .. } | LoadOutcome::Unchanged { name, version } => {
                format!("{name}@{version}")
            }
        })
        .collect();
    loaded.sort();
    assert_eq!(loaded, vec!["moderation@0.1.0", "ruled@2.0.0"]);
    assert_eq!(report.refused.len(), 2, "{:?}", report.refused);
    let again = e.registry.rescan();
    assert!(again.loaded.iter().all(|o| matches!(o, LoadOutcome::Unchanged { .. })), "{again:?}");
}
