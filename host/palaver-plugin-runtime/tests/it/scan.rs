//! `scan-file` (world `file-scanner`, since 0.1.2): the file-policy plugin's verdicts reach the file-security
//! worker with the plugin's name; several scanners run in priority order and the strictest verdict wins, a block
//! ending the scan; a trap, the deadline or an open breaker sends the file to review (fail-closed) and is counted;
//! reasons are cut to 256 bytes; a tenant that did not enable a scanner is not scanned; a scanner built against
//! 0.1.2 loads on the 0.1.3 host, and a component newer than the host is refused.

use crate::common::{ACTOR, artifact, as_built_against, config, env, env_with};
use palaver_core::TenantId;
use palaver_core::ports::{FileRecord, FileStatus, ScanContext, ScanHook, ScanVerdict};
use palaver_plugin_runtime::{BreakerConfig, FailurePolicy, FaultKind, Hook, LoadError, RegistryError, RuntimeConfig};
use serde_json::json;
use std::time::{Duration, Instant};

const T: TenantId = TenantId(1);
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

fn record(name: &str, mime: &str, size: u64) -> FileRecord {
    FileRecord {
        id: "fid0123456789abcdefghij".to_owned(),
        uploader: ACTOR,
        size,
        mime: mime.to_owned(),
        name: name.to_owned(),
        sha256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855".to_owned(),
        status: FileStatus::Pending,
        public: false,
        created: 1_767_310_200_000,
    }
}

/// The verdict of the tenant's scanners on a file with this name, type and head (its size is the head's).
async fn scan(e: &crate::common::Env, name: &str, mime: &str, head: &[u8]) -> ScanVerdict {
    scan_sized(e, name, mime, head, head.len() as u64).await
}

async fn scan_sized(e: &crate::common::Env, name: &str, mime: &str, head: &[u8], size: u64) -> ScanVerdict {
    let file = record(name, mime, size);
    e.hooks.scan_file(&ScanContext { tenant: T, file: &file, head }).await
}

fn blocked(reason: &str) -> ScanVerdict {
    ScanVerdict::Blocked { reason: reason.to_owned() }
}

fn review(reason: &str) -> ScanVerdict {
    ScanVerdict::Review { reason: reason.to_owned() }
}

fn scan_faults(e: &crate::common::Env, name: &str, kind: FaultKind) -> u64 {
    e.info(name).scan_file.faults_by_kind.get(&kind).copied().unwrap_or(0)
}

/// Loads file-policy and enables it for tenant 1 (it is off by default).
fn with_file_policy(e: &crate::common::Env) {
    e.load("file-policy-0.1.0");
    assert!(!e.hooks.scans(T), "file-policy is off unless a tenant enables it");
    e.registry.set_enabled(T, "file-policy", Some(true)).unwrap();
    assert!(e.hooks.scans(T));
}

#[tokio::test]
async fn file_policy_blocks_executables_and_extensions_and_reviews_large_files() {
    let e = env();
    assert!(!e.hooks.scans(T), "no scanner loaded: uploads need no scan on the plugins' account");
    with_file_policy(&e);
    assert_eq!(scan(&e, "cat.png", "image/png", PNG).await, ScanVerdict::Clean);
    assert_eq!(
        scan(&e, "holiday.jpg", "image/jpeg", b"MZ\x90\0\x03\0\0\0").await,
        blocked("file-policy: the file is a Windows or DOS executable (MZ header)"),
        "an executable is blocked whatever its name and type say"
    );
    assert_eq!(
        scan(&e, "invoice.pdf.exe", "application/pdf", b"%PDF-1.7").await,
        blocked("file-policy: files of type .exe are not allowed")
    );
    assert_eq!(scan_sized(&e, "film.mp4", "video/mp4", b"\0\0\0\x18ftypmp42", 15 << 20).await, ScanVerdict::Clean);
    e.registry.set_settings(T, "file-policy", Some(json!({ "max_size": 10 << 20 }))).unwrap();
    assert_eq!(
        scan_sized(&e, "film.mp4", "video/mp4", b"\0\0\0\x18ftypmp42", 15 << 20).await,
        review("file-policy: the file is larger than 10 MiB (15 MiB)")
    );
    let info = e.info("file-policy");
    assert_eq!((info.scan_file.calls, info.scan_file.faults), (5, 0));
    let metrics = e.registry.render_metrics();
    let line = "palaver_plugin_verdicts_total{plugin=\"file-policy\",hook=\"scan-file\",verdict=\"blocked\"} 2";
    assert!(metrics.contains(line), "{metrics}");
    e.registry.set_enabled(T, "file-policy", Some(false)).unwrap();
    assert!(!e.hooks.scans(T), "a tenant that disabled it is not scanned");
    assert!(!e.hooks.scans(TenantId(2)), "nor is a tenant that never enabled it");
}

#[tokio::test]
async fn scanners_run_in_priority_order_and_the_strictest_verdict_wins() {
    let e = env();
    with_file_policy(&e); // priority 100
    e.load("scan-fault-1.0.0"); // priority 200, on by default
    e.registry.set_settings(T, "file-policy", Some(json!({ "max_size": 4 }))).unwrap();
    // file-policy reviews (too large), scan-fault blocks: blocked wins, whoever came first.
    assert_eq!(scan(&e, "block", "image/png", PNG).await, blocked("scan-fault: asked to"));
    // Two reviews: the first one's reason stays.
    assert_eq!(
        scan(&e, "review", "image/png", PNG).await,
        review("file-policy: the file is larger than 4 bytes (16 bytes)")
    );
    // file-policy blocks first: nothing can be stricter, so scan-fault is not called.
    let before = e.info("scan-fault").scan_file.calls;
    assert_eq!(
        scan(&e, "review", "image/png", b"\x7fELF\x02\x01\x01\0").await,
        blocked("file-policy: the file is a Linux executable (ELF)")
    );
    assert_eq!(e.info("scan-fault").scan_file.calls, before, "a block ends the scan");
    e.registry.set_settings(T, "file-policy", None).unwrap();
    assert_eq!(scan(&e, "fine", "image/png", PNG).await, ScanVerdict::Clean, "both clean");
}

#[tokio::test]
async fn the_file_reaches_the_plugin_and_long_reasons_are_cut() {
    let e = env();
    e.load("scan-fault-1.0.0");
    assert!(e.hooks.scans(T));
    let head = vec![7u8; 64 << 10];
    assert_eq!(
        scan_sized(&e, "uploader", "application/octet-stream", &head, 1 << 30).await,
        review(&format!("scan-fault: {ACTOR} sent 65536 bytes")),
        "the uploader is the actor, the head arrives whole"
    );
    let ScanVerdict::Blocked { reason } = scan(&e, "long", "text/plain", b"x").await else {
        panic!("expected a block")
    };
    let kept = reason.strip_prefix("scan-fault: ").expect("the plugin's name first");
    assert_eq!(kept.len(), 256, "cut to 256 bytes");
    assert!(kept.chars().all(|c| c == 'é'), "on a character boundary");
    assert_eq!(e.info("scan-fault").scan_file.faults, 0);
}

#[tokio::test]
async fn a_trap_or_the_deadline_sends_the_file_to_review() {
    let e = env();
    e.load("scan-fault-1.0.0");
    assert_eq!(scan(&e, "boom", "text/plain", b"x").await, review("plugin scan-fault failed: trap"));
    assert_eq!(scan_faults(&e, "scan-fault", FaultKind::Trap), 1);
    let started = Instant::now();
    assert_eq!(scan(&e, "spin", "text/plain", b"x").await, review("plugin scan-fault failed: deadline"));
    let took = started.elapsed();
    assert!(took < Duration::from_secs(2), "stopped by the 30 ms deadline, took {took:?}");
    assert_eq!(scan_faults(&e, "scan-fault", FaultKind::Deadline), 1);
    // The next call gets a fresh instance.
    assert_eq!(scan(&e, "fine", "text/plain", b"x").await, ScanVerdict::Clean);
}

#[tokio::test]
async fn an_open_breaker_sends_the_file_to_review() {
    let breaker =
        BreakerConfig { failure_threshold: 1, cool_down: Duration::from_secs(60), ..BreakerConfig::default() };
    let e = env_with(RuntimeConfig { breaker, ..config() }, |s| s);
    e.load("scan-fault-1.0.0");
    assert_eq!(scan(&e, "boom", "text/plain", b"x").await, review("plugin scan-fault failed: trap"));
    assert_eq!(
        scan(&e, "fine", "text/plain", b"x").await,
        review("plugin scan-fault failed: its circuit breaker is open"),
        "a skipped scanner looked at nothing"
    );
    assert_eq!(e.info("scan-fault").scan_file.skipped, 1);
}

#[tokio::test]
async fn scan_file_never_fails_open() {
    let e = env();
    e.load("scan-fault-1.0.0");
    let refused = e.registry.set_tenant_failure_policy(T, "scan-fault", Hook::ScanFile, Some(FailurePolicy::Open));
    assert!(matches!(refused, Err(RegistryError::ScanFailsClosed(_))), "{refused:?}");
    let refused = e.registry.set_failure_policy("scan-fault", Hook::ScanFile, Some(FailurePolicy::Open));
    assert!(matches!(refused, Err(RegistryError::ScanFailsClosed(_))), "{refused:?}");
    assert!(e.registry.set_tenant_failure_policy(T, "scan-fault", Hook::ScanFile, Some(FailurePolicy::Closed)).is_ok());
    let policies = e.registry.failure_policies(T, "scan-fault").unwrap();
    assert_eq!(policies, vec![(Hook::ScanFile, FailurePolicy::Closed)]);
}

#[tokio::test]
async fn a_scanner_built_against_a_newer_patch_is_refused() {
    let e = env();
    let (mut m, wasm) = artifact("scan-fault-1.0.0");
    m.sha256 = None;
    let refused = e.registry.load_bytes(m, &as_built_against(&wasm, "0.1.4"));
    assert!(
        matches!(&refused, Err(RegistryError::Load(LoadError::UnsupportedImport(m))) if m.contains("@0.1.4")),
        "{refused:?}"
    );
    assert!(!e.hooks.scans(T));
}

#[tokio::test]
async fn a_scanner_built_against_0_1_2_still_loads_and_runs() {
    let e = env();
    let (mut m, wasm) = artifact("scan-fault-1.0.0");
    m.sha256 = None;
    e.registry.load_bytes(m, &as_built_against(&wasm, "0.1.2")).expect("a 0.1.2 component loads");
    assert_eq!(scan(&e, "block", "text/plain", b"x").await, blocked("scan-fault: asked to"));
    assert_eq!(e.info("scan-fault").scan_file.faults, 0);
}
