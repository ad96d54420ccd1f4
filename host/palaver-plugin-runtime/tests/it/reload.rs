//! Hot reload: swaps under a steady call load with every call counted, in-flight calls finishing on the version
//! they started on, a bad upload that leaves the old version running, one-call rollback, and the directory
//! watcher picking up dropped-in files.

use crate::common::{ACTOR, config, ctx, env, env_with, eventually, rejected};
use palaver_core::ports::PublishVerdict;
use palaver_core::{TenantId, UserId};
use palaver_plugin_runtime::{
    CommandContext, CommandOutcome, Directory, DirectoryError, Limits, LoadOutcome, MemberInfo, RegistryError,
    RuntimeConfig, TopicInfo, UserInfo,
};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hot_reload_under_steady_load_fails_and_drops_no_call() {
    // The question here is whether a swap drops or fails a call, not how fast a call is: four callers and the
    // swaps' compilations share two cores, and a call starved of CPU past the 20 ms wall-clock deadline would
    // count as a fault that says nothing about reloading. Fuel still bounds every call.
    let publish_limits = Limits { deadline: Duration::from_secs(2), ..Limits::PUBLISH };
    let e = env_with(RuntimeConfig { publish_limits, ..config() }, |s| s);
    let (v1, v2) = (e.copy("ruled-1.0.0"), e.copy("ruled-2.0.0"));
    e.registry.load_file(&v1).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let mut callers = Vec::new();
    for _ in 0..4 {
        let (hooks, stop) = (e.hooks.clone(), stop.clone());
        callers.push(tokio::spawn(async move {
            let mut seen = [0u64; 3];
            while !stop.load(Ordering::SeqCst) {
                match hooks.judge(&ctx(1), &json!("alpha beta"), None).await {
                    PublishVerdict::Reject { reason, .. } if reason == "v1: alpha" => seen[0] += 1,
                    PublishVerdict::Reject { reason, .. } if reason == "v2: beta" => seen[1] += 1,
                    _ => seen[2] += 1,
                }
                tokio::task::yield_now().await;
            }
            seen
        }));
    }
    let registry = e.registry.clone();
    let swaps = tokio::task::spawn_blocking(move || {
        let mut swaps = 0;
        for i in 0..10 {
            std::thread::sleep(Duration::from_millis(40));
            let path = if i % 2 == 0 { &v2 } else { &v1 };
            if let Ok(LoadOutcome::Loaded { .. }) = registry.load_file(path) {
                swaps += 1;
            }
        }
        swaps
    })
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(40)).await;
    stop.store(true, Ordering::SeqCst);
    let mut total = [0u64; 3];
    for c in callers {
        let seen = c.await.unwrap();
        for i in 0..3 {
            total[i] += seen[i];
        }
    }
    let info = e.info("ruled");
    eprintln!("hot reload under load: {swaps} swaps, {} calls on v1, {} on v2, {} other", total[0], total[1], total[2]);
    assert_eq!(swaps, 10);
    assert_eq!(total[2], 0, "every call got a verdict of v1 or v2: none failed open, none dropped");
    assert!(total[0] > 0 && total[1] > 0, "calls ran on both versions: {total:?}");
    assert_eq!(info.calls, total[0] + total[1], "the registry counted exactly the calls made");
    assert_eq!((info.faults, info.before_publish.skipped), (0, 0));
    assert_eq!(info.version.as_deref(), Some("1.0.0"));
    assert_eq!(rejected(&e.publish("alpha beta").await).1, "v1: alpha");
}

/// A directory whose user lookups wait at a gate, so that a test can hold a call in flight.
struct Gated {
    entered: tokio::sync::Notify,
    gate: tokio::sync::Semaphore,
}

#[async_trait::async_trait]
impl Directory for Gated {
    async fn user(&self, _: TenantId, _: UserId) -> Result<Option<UserInfo>, DirectoryError> {
        self.entered.notify_one();
        let _permit = self.gate.acquire().await.map_err(|e| DirectoryError::Unavailable(e.to_string()))?;
        Ok(None)
    }

    async fn topic(&self, _: TenantId, _: &str) -> Result<Option<TopicInfo>, DirectoryError> {
        Ok(None)
    }

    async fn member(&self, _: TenantId, _: &str, _: UserId) -> Result<Option<MemberInfo>, DirectoryError> {
        Ok(None)
    }

    async fn members(&self, _: TenantId, _: &str, _: usize) -> Result<Vec<MemberInfo>, DirectoryError> {
        Ok(Vec::new())
    }
}

fn message(o: CommandOutcome) -> String {
    match o {
        CommandOutcome::Rejected { message, .. } => message,
        other => panic!("expected a rejection, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_in_flight_finishes_on_the_version_it_started_on() {
    let gated = Arc::new(Gated { entered: tokio::sync::Notify::new(), gate: tokio::sync::Semaphore::new(0) });
    let e = env_with(config(), |s| s.with_directory(gated.clone()));
    e.load("hello-0.1.0");
    e.registry.set_enabled(TenantId(1), "hello", Some(true)).unwrap();
    let hooks = e.hooks.clone();
    let cmd = CommandContext::new(TenantId(1), ACTOR);
    let in_flight = tokio::spawn(async move { hooks.run_command(&cmd, "hello.whoami", &json!(null)).await });
    gated.entered.notified().await;
    // The call is suspended inside the host's directory import; a new version goes live meanwhile.
    let outcome = e.load_edited("hello-0.1.0", |m| {
        m.version = "0.1.1".to_owned();
        m.settings.get_mut("greeting").expect("greeting setting").default = Some(json!("Hej"));
        // The shipped fixtures expect "Hello"; this version's gate would rightly refuse it with them.
        m.fixtures.clear();
    });
    assert!(
        matches!(outcome, Ok(LoadOutcome::Loaded { ref replaced, .. }) if replaced.as_deref() == Some("0.1.0")),
        "{outcome:?}"
    );
    gated.gate.add_permits(100);
    let old = message(in_flight.await.unwrap().unwrap());
    assert!(old.starts_with("Hello, stranger"), "finished on 0.1.0: {old}");
    let new = message(
        e.hooks.run_command(&CommandContext::new(TenantId(1), ACTOR), "hello.whoami", &json!(null)).await.unwrap(),
    );
    assert!(new.starts_with("Hej, stranger"), "the next call runs on 0.1.1: {new}");
    assert_eq!(e.info("hello").faults, 0);
}

#[tokio::test]
async fn a_bad_upload_keeps_the_old_version_running() {
    let e = env();
    e.load("ruled-1.0.0");
    // A component that does not match its manifest's pinned hash (a half-copied upload, say).
    let v2 = e.copy("ruled-2.0.0");
    std::fs::write(e.dir.path().join("ruled-2.0.0.wasm"), b"\0asm\x0d\0\x01\0truncated").unwrap();
    let err = e.registry.load_file(&v2).unwrap_err();
    assert!(err.to_string().contains("hash mismatch"), "{err}");
    let info = e.info("ruled");
    assert_eq!(info.version.as_deref(), Some("1.0.0"));
    assert!(info.last_error.as_deref().is_some_and(|m| m.contains("hash mismatch")));
    assert_eq!(rejected(&e.publish("alpha beta").await).1, "v1: alpha", "v1 still answers");
    // Unpinned junk fails to compile; still the old version runs.
    let (mut m, _) = crate::common::artifact("ruled-2.0.0");
    m.sha256 = None;
    assert!(e.registry.load_bytes(m, b"\0asm\x0d\0\x01\0junk").is_err());
    assert_eq!(e.info("ruled").version.as_deref(), Some("1.0.0"));
    assert_eq!(e.info("ruled").load_refusals, 2);
    // Putting the live version back (the bad change undone) clears the error too: what is offered runs.
    let (m1, wasm1) = crate::common::artifact("ruled-1.0.0");
    assert!(matches!(e.registry.load_bytes(m1, &wasm1), Ok(palaver_plugin_runtime::LoadOutcome::Unchanged { .. })));
    assert_eq!(e.info("ruled").last_error, None);
    // A good upload clears the error.
    e.load("ruled-2.0.0");
    let info = e.info("ruled");
    assert_eq!(
        (info.version.as_deref(), info.last_error, info.previous_version.as_deref()),
        (Some("2.0.0"), None, Some("1.0.0"))
    );
}

#[tokio::test]
async fn rollback_brings_the_previous_version_back_in_one_call() {
    let e = env();
    e.load("ruled-1.0.0");
    e.load("ruled-2.0.0");
    assert_eq!(rejected(&e.publish("alpha beta").await).1, "v2: beta");
    let r = e.registry.rollback("ruled").unwrap();
    assert_eq!((r.from.as_str(), r.to.as_str()), ("2.0.0", "1.0.0"));
    assert_eq!(rejected(&e.publish("alpha beta").await).1, "v1: alpha");
    assert_eq!(e.info("ruled").previous_version.as_deref(), Some("2.0.0"));
    e.registry.rollback("ruled").unwrap();
    assert_eq!(rejected(&e.publish("alpha beta").await).1, "v2: beta", "rolling back a rollback rolls forward");
    e.load("moderation-0.1.0");
    assert!(matches!(e.registry.rollback("moderation"), Err(RegistryError::NoPrevious(_))));
    assert!(matches!(e.registry.rollback("nope"), Err(RegistryError::UnknownPlugin(_))));
}

#[tokio::test]
async fn the_watcher_loads_dropped_in_files_and_refuses_a_bad_change() {
    let e = env();
    let dir = e.dir.path().to_owned();
    e.registry.load_dir(&dir);
    let _watcher = e.registry.watch(&dir, Duration::from_millis(50)).unwrap();
    e.copy("ruled-1.0.0");
    eventually("ruled 1.0.0 to load", || e.registry.info("ruled").and_then(|i| i.version).as_deref() == Some("1.0.0"));
    e.copy("ruled-2.0.0");
    eventually("ruled 2.0.0 to load", || e.registry.info("ruled").and_then(|i| i.version).as_deref() == Some("2.0.0"));
    assert_eq!(rejected(&e.publish("alpha beta").await).1, "v2: beta");
    std::fs::write(dir.join("ruled-2.0.0.wasm"), b"not a component").unwrap();
    eventually("the bad change to be refused", || e.info("ruled").last_error.is_some());
    assert_eq!(e.info("ruled").version.as_deref(), Some("2.0.0"));
    let again = e.registry.reload("ruled").map_err(|e| e.to_string());
    assert!(again.unwrap_err().contains("hash mismatch"), "reload reads the same bad files");
}
