//! Runs the ClamAV scanner against a real clamd, which `scripts/lib/services.sh` starts as `start_clamd` with one
//! signature (an MD5 of the EICAR test file). The tests fail without it, as the MariaDB, Redis and S3 adapters'
//! do. `PALAVER_TEST_CLAMD` (default `tcp://127.0.0.1:13310`) says where it is.

use bytes::Bytes;
use palaver_clamav::{Clamd, ClamdConfig};
use palaver_core::UserId;
use palaver_core::ports::{ByteStream, FileRecord, FileScanner, FileStatus, ScanError, ScanVerdict};
use std::time::Duration;

fn address() -> String {
    std::env::var("PALAVER_TEST_CLAMD").unwrap_or_else(|_| "tcp://127.0.0.1:13310".to_owned())
}

fn config() -> ClamdConfig {
    ClamdConfig { address: address(), timeout: Duration::from_secs(30), ..ClamdConfig::default() }
}

/// The test clamd, after checking it answers: an unreachable one fails the test rather than skipping it.
async fn clamd(cfg: ClamdConfig) -> Clamd {
    let clamd = Clamd::new(cfg).expect("a valid configuration");
    if let Err(e) = clamd.ping().await {
        panic!("no clamd at {} ({e}); start one with `. scripts/lib/services.sh; start_clamd`", address());
    }
    clamd
}

/// The EICAR anti-virus test file, put together at run time so that this source is not itself a match.
fn eicar() -> Vec<u8> {
    let bytes = [r"X5O!P%@AP[4\PZX54(P^)7CC)7}$", "EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*"].concat().into_bytes();
    assert_eq!(bytes.len(), 68);
    bytes
}

fn record(size: u64) -> FileRecord {
    FileRecord {
        id: "clamd-test".into(),
        uploader: UserId(1),
        size,
        mime: "application/octet-stream".into(),
        name: String::new(),
        sha256: String::new(),
        status: FileStatus::Pending,
        public: false,
        created: 0,
    }
}

/// `bytes` as a body of pieces of `piece` bytes.
fn body(bytes: Vec<u8>, piece: usize) -> ByteStream {
    let all = Bytes::from(bytes);
    let pieces: Vec<_> = (0..all.len()).step_by(piece).map(|i| Ok(all.slice(i..all.len().min(i + piece)))).collect();
    Box::pin(futures_util::stream::iter(pieces))
}

/// A loopback port nothing listens on (bound, then released).
fn dead_address() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    format!("tcp://{}", listener.local_addr().unwrap())
}

#[tokio::test]
async fn ping() {
    clamd(config()).await.ping().await.expect("PONG");
}

#[tokio::test]
async fn eicar_is_blocked() {
    let clamd = clamd(config()).await;
    assert_eq!(clamd.name(), "clamav");
    let verdict = clamd.scan(&record(68), body(eicar(), 68)).await.expect("a verdict");
    let ScanVerdict::Blocked { reason } = &verdict else { panic!("EICAR must be blocked, got {verdict:?}") };
    // `Palaver.Test.EICAR.UNOFFICIAL` from start_clamd's database; a clamd with the official one says
    // `Win.Test.EICAR_HDB-1`.
    assert!(reason.starts_with("clamav: ") && reason.contains("EICAR"), "{reason}");
}

#[tokio::test]
async fn eicar_split_over_small_chunks_is_blocked() {
    // clamd must see the chunks as one stream: a signature across chunk boundaries is still found.
    let clamd = clamd(ClamdConfig { chunk: 16, ..config() }).await;
    let verdict = clamd.scan(&record(68), body(eicar(), 5)).await.expect("a verdict");
    assert!(matches!(verdict, ScanVerdict::Blocked { .. }), "{verdict:?}");
}

#[tokio::test]
async fn a_clean_file_of_several_chunks_is_clean() {
    let clamd = clamd(config()).await;
    let size = 3 * 1024 * 1024;
    let bytes: Vec<u8> = (0..size).map(|i| (i % 253) as u8).collect();
    // 100 KB pieces against 64 KiB chunks: the client re-cuts them.
    let verdict = clamd.scan(&record(size as u64), body(bytes, 100_000)).await.expect("a verdict");
    assert_eq!(verdict, ScanVerdict::Clean);
}

#[tokio::test]
async fn a_file_over_max_bytes_goes_to_review_unsent() {
    clamd(config()).await;
    // Nothing listens at this address, and the body fails if read: a verdict proves clamd was not contacted.
    let cfg = ClamdConfig { address: dead_address(), max_bytes: 1024, ..config() };
    let unread: ByteStream = Box::pin(futures_util::stream::once(async {
        Err(palaver_core::ports::BlobError::Unavailable("the body must not be read".into()))
    }));
    let verdict = Clamd::new(cfg).unwrap().scan(&record(1025), unread).await.expect("a verdict");
    assert_eq!(verdict, ScanVerdict::Review { reason: "larger than the 1024 bytes the scanner takes".into() });
    // At the bound it is sent (and scanned) as usual.
    let at_bound = clamd(ClamdConfig { max_bytes: 1024, ..config() }).await;
    let verdict = at_bound.scan(&record(1024), body(vec![b'a'; 1024], 1024)).await.expect("a verdict");
    assert_eq!(verdict, ScanVerdict::Clean);
}

#[tokio::test]
async fn an_unreachable_clamd_is_unavailable() {
    let dead =
        Clamd::new(ClamdConfig { address: dead_address(), timeout: Duration::from_secs(5), ..config() }).unwrap();
    let err = dead.scan(&record(68), body(eicar(), 68)).await.expect_err("no verdict without clamd");
    assert!(matches!(err, ScanError::Unavailable(_)));
    assert!(matches!(dead.ping().await, Err(ScanError::Unavailable(_))));
}
