//! File security through the service and its worker: with a scanner, an upload is pending (its uploader reads
//! it, other readers get `FILE_PENDING` unless the tenant lets them), a scan task reaches the outbox, and the
//! worker settles it: clean is served, blocked answers 451 and tells the readers `file.unavailable`, review
//! waits for an operator; an unavailable scanner is retried, then dead-lettered with the file still pending.

mod harness;

use futures_util::StreamExt;
use harness::{Client, service_with_scanners};
use palaver_core::ports::{
    ByteStream, FileRecord, FileScanner, FileStatus, NoHooks, OutboxStore, QueueTopic, ScanContext, ScanError,
    ScanHook, ScanVerdict, TaskQueue,
};
use palaver_core::{TenantId, UserId};
use palaver_service::admin::{AdminCommand, Outcome};
use palaver_service::{FilesConfig, ScanWorker, ScanWorkerConfig, Service, ServiceConfig, ServiceError, UploadMeta};
use palaver_store_memory::{MemoryOutbox, MemoryQueue};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

const T: TenantId = TenantId::DEFAULT;

/// Blocks files whose bytes contain `EVIL`; fails (unavailable) while `failures` is above zero.
#[derive(Default)]
struct Fake {
    failures: AtomicU32,
    scans: AtomicU32,
}

#[async_trait::async_trait]
impl FileScanner for Fake {
    fn name(&self) -> &'static str {
        "fake"
    }

    async fn scan(&self, _: &FileRecord, mut body: ByteStream) -> Result<ScanVerdict, ScanError> {
        self.scans.fetch_add(1, Ordering::SeqCst);
        if self.failures.load(Ordering::SeqCst) > 0 {
            self.failures.fetch_sub(1, Ordering::SeqCst);
            return Err(ScanError::Unavailable("down".into()));
        }
        let mut all = Vec::new();
        while let Some(chunk) = body.next().await {
            all.extend_from_slice(&chunk.expect("a chunk"));
        }
        Ok(if all.windows(4).any(|w| w == b"EVIL") {
            ScanVerdict::Blocked { reason: "fake: Evil.Test".into() }
        } else {
            ScanVerdict::Clean
        })
    }
}

/// Sends every file to review, and remembers the head it was given.
#[derive(Default)]
struct Reviewer {
    heads: parking_lot::Mutex<Vec<Vec<u8>>>,
}

#[async_trait::async_trait]
impl ScanHook for Reviewer {
    fn scans(&self, _: TenantId) -> bool {
        true
    }

    async fn scan_file(&self, ctx: &ScanContext<'_>) -> ScanVerdict {
        self.heads.lock().push(ctx.head.to_vec());
        ScanVerdict::Review { reason: format!("{} needs a look", ctx.file.name) }
    }
}

fn body(bytes: &'static [u8]) -> ByteStream {
    Box::pin(futures_util::stream::iter(bytes.chunks(3).map(|c| Ok(bytes::Bytes::from_static(c)))))
}

fn meta(name: &str) -> UploadMeta {
    UploadMeta { name: name.into(), mime: "application/octet-stream".into() }
}

async fn read(svc: &Service, user: UserId, id: &str) -> Result<Vec<u8>, ServiceError> {
    let mut d = svc.open_file(T, user, id, None).await?;
    let mut out = Vec::new();
    while let Some(chunk) = d.read.body.next().await {
        out.extend_from_slice(&chunk.expect("a chunk"));
    }
    Ok(out)
}

/// Alice and Bob, Alice's uploads of `contents`, and a message of hers to Bob that references them all.
async fn share(svc: &Service, contents: &[&'static [u8]]) -> (Client, Client, UserId, UserId, Vec<FileRecord>) {
    let mut alice = Client::connect(svc);
    alice.signup("alice", "alice-pass").await;
    let mut bob = Client::connect(svc);
    bob.signup("bob", "bob-pass").await;
    let a = svc.authenticate_token(T, &alice.token).await.unwrap();
    let b = svc.authenticate_token(T, &bob.token).await.unwrap();
    let mut files = Vec::new();
    for (i, bytes) in contents.iter().enumerate() {
        files.push(svc.upload_file(T, a, meta(&format!("f{i}.txt")), body(bytes)).await.unwrap());
    }
    alice.sub(&bob.user).await;
    bob.sub(&alice.user).await;
    let urls: Vec<String> = files.iter().map(palaver_service::file_url).collect();
    let id = alice.id();
    alice
        .send(json!({ "pub": { "id": id, "topic": bob.user, "content": "look" }, "extra": { "attachments": urls } }))
        .await;
    alice.drain();
    bob.drain();
    (alice, bob, a, b, files)
}

/// Moves the scan tasks the outbox holds to `queue`, as the relay does in a node; returns how many.
async fn relay(outbox: &MemoryOutbox, queue: &MemoryQueue) -> usize {
    let entries = outbox.pending(T, 100).await.unwrap();
    let tasks: Vec<_> = entries.iter().filter(|e| e.record.topic == QueueTopic::FileSecurity).collect();
    for e in &tasks {
        queue.produce(e.record.clone()).await.unwrap();
    }
    outbox.remove(T, &entries.iter().map(|e| e.id).collect::<Vec<_>>()).await.unwrap();
    tasks.len()
}

fn worker(svc: &Service, queue: &MemoryQueue, max_attempts: u32) -> tokio::task::JoinHandle<()> {
    let cfg = ScanWorkerConfig {
        group: "scan".into(),
        max_attempts,
        backoff_initial: Duration::from_millis(5),
        backoff_max: Duration::from_millis(5),
    };
    ScanWorker::new(svc.clone(), Arc::new(queue.clone()), cfg).spawn()
}

async fn eventually<F: Future<Output = bool>>(what: &str, mut check: impl FnMut() -> F) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !check().await {
        assert!(Instant::now() < deadline, "{what} never happened");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn without_a_scanner_an_upload_is_clean_and_queues_nothing() {
    let outbox = MemoryOutbox::new();
    let svc = service_with_scanners(ServiceConfig::default(), Arc::new(NoHooks), None, outbox.clone());
    let file = svc.upload_file(T, UserId(1), meta("a.bin"), body(b"hello")).await.unwrap();
    assert_eq!(file.status, FileStatus::Clean);
    let pending = outbox.pending(T, 100).await.unwrap();
    assert!(pending.iter().all(|e| e.record.topic != QueueTopic::FileSecurity), "{pending:?}");
    assert!(!svc.file_settings(T).await.unwrap().scanned);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pending_file_waits_for_its_scan_and_a_blocked_one_is_announced() {
    let outbox = MemoryOutbox::new();
    let fake = Arc::new(Fake::default());
    let svc = service_with_scanners(ServiceConfig::default(), Arc::new(NoHooks), Some(fake.clone()), outbox.clone());
    assert!(svc.file_settings(T).await.unwrap().scanned);
    let (mut sender, mut peer, up, p, files) = share(&svc, &[b"fine bytes", b"an EVIL payload"]).await;
    let (good, bad) = (&files[0], &files[1]);
    assert_eq!((good.status, bad.status), (FileStatus::Pending, FileStatus::Pending));
    assert_eq!(read(&svc, up, &good.id).await.unwrap(), b"fine bytes", "the uploader reads a pending file");
    assert_eq!(read(&svc, p, &good.id).await, Err(ServiceError::FilePending), "a reader waits for the scan");
    assert_eq!(read(&svc, UserId(999), &good.id).await, Err(ServiceError::NotFound), "a stranger learns nothing");

    let queue = MemoryQueue::new();
    assert_eq!(relay(&outbox, &queue).await, 2, "one task per upload");
    let run = worker(&svc, &queue, 3);
    eventually("the clean file served", || async { read(&svc, p, &good.id).await.is_ok() }).await;
    let (info, _) = peer.wait_for("file.unavailable", |f| f["info"]["event"] == "file.unavailable").await;
    assert_eq!(info["info"]["payload"]["file"], json!(bad.id));
    assert_eq!(info["info"]["payload"]["reason"], "fake: Evil.Test");
    sender.wait_for("file.unavailable for the uploader", |f| f["info"]["event"] == "file.unavailable").await;
    assert_eq!(read(&svc, p, &bad.id).await, Err(ServiceError::FileBlocked));
    assert_eq!(read(&svc, up, &bad.id).await, Err(ServiceError::FileBlocked), "the uploader too");

    // The same task again changes nothing: the files are settled.
    let scans = fake.scans.load(Ordering::SeqCst);
    let again = palaver_service::scan_record(T, good);
    queue.produce(again).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(fake.scans.load(Ordering::SeqCst), scans, "a settled file is not scanned again");
    run.abort();

    let audits: Vec<serde_json::Value> = outbox
        .pending(T, 100)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.record.topic == QueueTopic::Audit)
        .map(|e| serde_json::from_slice(&e.record.payload).unwrap())
        .filter(|a: &serde_json::Value| a["action"] == "file.scan")
        .collect();
    assert_eq!(audits.len(), 2, "{audits:?}");
    let metrics = svc.render_metrics();
    assert!(metrics.contains("palaver_files_scanned_total{outcome=\"blocked\"} 1"), "{metrics}");
    assert!(metrics.contains("palaver_files_scanned_total{outcome=\"clean\"} 1"), "{metrics}");
}

#[tokio::test]
async fn a_tenant_may_let_readers_have_pending_files() {
    let fake = Arc::new(Fake::default());
    let svc = service_with_scanners(ServiceConfig::default(), Arc::new(NoHooks), Some(fake), MemoryOutbox::new());
    let (_alice, _bob, _a, b, files) = share(&svc, &[b"xyz"]).await;
    assert_eq!(read(&svc, b, &files[0].id).await, Err(ServiceError::FilePending));
    let settings = svc.set_file_settings(T, &json!({ "pending_readers": "readers" })).await.unwrap();
    assert_eq!(settings.pending_readers, palaver_api::bodies::admin::PendingReaders::Readers);
    assert_eq!(read(&svc, b, &files[0].id).await.unwrap(), b"xyz", "a reader has it before the scan");
    assert_eq!(read(&svc, UserId(999), &files[0].id).await, Err(ServiceError::NotFound), "a stranger still not");
    let refused = svc.set_file_settings(T, &json!({ "pending_readers": "all" })).await;
    assert!(refused.is_err(), "{refused:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_waits_for_an_operator_and_a_plugin_sees_the_head() {
    let outbox = MemoryOutbox::new();
    let reviewer = Arc::new(Reviewer::default());
    let cfg = ServiceConfig { files: FilesConfig { scan_head_bytes: 4, ..Default::default() }, ..Default::default() };
    let svc = service_with_scanners(cfg, reviewer.clone(), None, outbox.clone());
    let file = svc.upload_file(T, UserId(1), meta("doc.pdf"), body(b"%PDF-1.7 rest")).await.unwrap();
    assert_eq!(file.status, FileStatus::Pending);
    let queue = MemoryQueue::new();
    assert_eq!(relay(&outbox, &queue).await, 1);
    let run = worker(&svc, &queue, 1);
    eventually("the plugin called", || async { !reviewer.heads.lock().is_empty() }).await;
    assert_eq!(reviewer.heads.lock()[0], b"%PDF", "the first scan_head_bytes bytes");
    eventually("the review summary", || async {
        let entries = outbox.pending(T, 100).await.unwrap();
        entries
            .iter()
            .any(|e| e.record.topic == QueueTopic::AdminEvent && e.record.header("type") == Some("file.review"))
    })
    .await;
    run.abort();
    assert_eq!(read(&svc, UserId(1), &file.id).await.unwrap(), b"%PDF-1.7 rest", "still its uploader's");
    let command = AdminCommand {
        command_id: "ok-1".into(),
        kind: "file.audit.update".into(),
        payload: json!({ "file": file.id, "status": "clean" }),
        ..AdminCommand::default()
    };
    let Outcome::Ran(result) = svc.execute_admin_command(T, &command).await else { panic!("ran") };
    assert_eq!(result.status, "succeeded", "{result:?}");
    let settled = svc.file_settings(T).await.unwrap();
    assert!(settled.scanned);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unavailable_scanner_is_retried_then_dead_lettered_and_the_file_stays_pending() {
    let outbox = MemoryOutbox::new();
    let fake = Arc::new(Fake { failures: AtomicU32::new(1), ..Fake::default() });
    let svc = service_with_scanners(ServiceConfig::default(), Arc::new(NoHooks), Some(fake.clone()), outbox.clone());
    let first = svc.upload_file(T, UserId(1), meta("a.txt"), body(b"ok")).await.unwrap();
    let queue = MemoryQueue::new();
    relay(&outbox, &queue).await;
    let run = worker(&svc, &queue, 2);
    eventually("a retry that succeeds", || async { fake.scans.load(Ordering::SeqCst) == 2 }).await;
    eventually("the file settled", || async {
        svc.open_file(T, UserId(2), &first.id, None).await.err() != Some(ServiceError::FilePending)
    })
    .await;

    fake.failures.store(10, Ordering::SeqCst);
    let second = svc.upload_file(T, UserId(1), meta("b.txt"), body(b"ok")).await.unwrap();
    let mut dead = queue.subscribe(QueueTopic::DeadLetter, "check").await.unwrap();
    relay(&outbox, &queue).await;
    let letter = tokio::time::timeout(Duration::from_secs(5), dead.next()).await.expect("a dead letter").unwrap();
    run.abort();
    assert_eq!(letter.record.header("dlq.topic"), Some("file_security"));
    assert!(letter.record.header("dlq.error").is_some_and(|e| e.contains("2 times")), "{letter:?}");
    assert_eq!(letter.record.header("file"), Some(second.id.as_str()));
    assert_eq!(read(&svc, UserId(1), &second.id).await.unwrap(), b"ok", "pending: its uploader's only");
    let metrics = svc.render_metrics();
    assert!(metrics.contains("palaver_files_scanned_total{outcome=\"failed\"} 1"), "{metrics}");
}

/// A file blocked before the message naming it was sent: the message's readers are told as it is delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_blocked_before_it_is_sent_is_announced_with_the_message() {
    let outbox = MemoryOutbox::new();
    let fake = Arc::new(Fake::default());
    let svc = service_with_scanners(ServiceConfig::default(), Arc::new(NoHooks), Some(fake), outbox.clone());
    let (mut alice, mut bob, a, b, _) = share(&svc, &[]).await;
    let file = svc.upload_file(T, a, meta("bad.txt"), body(b"EVIL again")).await.unwrap();
    let queue = MemoryQueue::new();
    relay(&outbox, &queue).await;
    let run = worker(&svc, &queue, 1);
    eventually("the block", || async { read(&svc, a, &file.id).await == Err(ServiceError::FileBlocked) }).await;
    run.abort();
    bob.drain();
    let id = alice.id();
    let url = palaver_service::file_url(&file);
    alice
        .send(json!({ "pub": { "id": id, "topic": bob.user, "content": "x" }, "extra": { "attachments": [url] } }))
        .await;
    let (info, _) = bob.wait_for("file.unavailable", |f| f["info"]["event"] == "file.unavailable").await;
    assert_eq!(info["info"]["payload"]["file"], json!(file.id));
    assert_eq!(info["info"]["payload"]["status"], "blocked");
    assert_eq!(read(&svc, b, &file.id).await, Err(ServiceError::FileBlocked));
}
