//! A fake clamd in the test process: it records exactly what the client sends (the command, every chunk's
//! length, the bytes) and answers what the test says, so the framing is checked byte for byte and the faults a
//! real clamd will not produce on demand (a silent peer, an early close) can be staged.

use crate::{Clamd, ClamdConfig};
use bytes::Bytes;
use palaver_core::UserId;
use palaver_core::ports::{BlobError, ByteStream, FileRecord, FileScanner, FileStatus, ScanError, ScanVerdict};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// What the fake saw on one connection.
#[derive(Debug, Default)]
struct Seen {
    command: String,
    chunks: Vec<usize>,
    data: Vec<u8>,
    /// The zero-length chunk arrived.
    ended: bool,
}

/// How the fake behaves once it has the command.
#[derive(Clone, Copy)]
enum Act {
    /// Read the whole stream, then answer this.
    Answer(&'static str),
    /// Answer this after the first chunk and close, as clamd does past StreamMaxLength.
    AnswerEarly(&'static str),
    /// Read the whole stream and never answer.
    Silent,
}

async fn serve<S: AsyncRead + AsyncWrite + Unpin>(mut s: S, act: Act) -> Seen {
    let mut seen = Seen::default();
    let mut b = [0u8; 1];
    while s.read_exact(&mut b).await.is_ok() && b[0] != 0 {
        seen.command.push(b[0] as char);
    }
    if seen.command == "zPING" {
        s.write_all(b"PONG\0").await.unwrap();
        return seen;
    }
    loop {
        let len = match s.read_u32().await {
            Ok(len) => len as usize,
            Err(_) => return seen,
        };
        if len == 0 {
            seen.ended = true;
            break;
        }
        let mut buf = vec![0; len];
        if s.read_exact(&mut buf).await.is_err() {
            return seen;
        }
        seen.chunks.push(len);
        seen.data.extend_from_slice(&buf);
        if let Act::AnswerEarly(reply) = act {
            s.write_all(format!("{reply}\0").as_bytes()).await.unwrap();
            return seen; // dropped: closed with the rest of the stream unread
        }
    }
    match act {
        Act::Answer(reply) => s.write_all(format!("{reply}\0").as_bytes()).await.unwrap(),
        Act::Silent => tokio::time::sleep(Duration::from_secs(30)).await,
        Act::AnswerEarly(_) => unreachable!(),
    }
    seen
}

/// A fake listening on a fresh port, serving one connection; its address and what it will have seen.
async fn fake(act: Act) -> (String, JoinHandle<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = format!("tcp://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move { serve(listener.accept().await.unwrap().0, act).await });
    (addr, task)
}

fn clamd(address: &str, chunk: usize) -> Clamd {
    let cfg = ClamdConfig { address: address.into(), timeout: Duration::from_secs(5), max_bytes: 1 << 20, chunk };
    Clamd::new(cfg).unwrap()
}

fn record(size: u64) -> FileRecord {
    FileRecord {
        id: "f1".into(),
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

/// A body yielding pieces of the given sizes, with recognisable bytes.
fn body_of(sizes: &[usize]) -> (Vec<u8>, ByteStream) {
    let mut all = Vec::new();
    let mut pieces = Vec::new();
    for &n in sizes {
        let piece: Vec<u8> = (all.len()..all.len() + n).map(|i| (i % 251) as u8).collect();
        all.extend_from_slice(&piece);
        pieces.push(Ok(Bytes::from(piece)));
    }
    (all, Box::pin(futures_util::stream::iter(pieces)))
}

#[tokio::test]
async fn instream_framing_is_exact() {
    let (addr, seen) = fake(Act::Answer("stream: OK")).await;
    // Pieces smaller and larger than a chunk, and an empty one: the client re-cuts them into full chunks.
    let (sent, body) = body_of(&[100, 5000, 3, 0, 2000]);
    let verdict = clamd(&addr, 1024).scan(&record(sent.len() as u64), body).await.unwrap();
    assert_eq!(verdict, ScanVerdict::Clean);
    let seen = seen.await.unwrap();
    assert_eq!(seen.command, "zINSTREAM");
    assert_eq!(seen.chunks, [1024, 1024, 1024, 1024, 1024, 1024, 959], "full chunks, then the rest");
    assert!(seen.ended, "the stream ends with a zero-length chunk");
    assert_eq!(seen.data, sent);
}

#[tokio::test]
async fn an_empty_file_is_only_the_end() {
    let (addr, seen) = fake(Act::Answer("stream: OK")).await;
    let (_, body) = body_of(&[]);
    assert_eq!(clamd(&addr, 1024).scan(&record(0), body).await.unwrap(), ScanVerdict::Clean);
    let seen = seen.await.unwrap();
    assert!(seen.chunks.is_empty() && seen.ended);
}

#[tokio::test]
async fn found_is_blocked_with_the_signature() {
    let (addr, _seen) = fake(Act::Answer("stream: Win.Test.EICAR_HDB-1 FOUND")).await;
    let (sent, body) = body_of(&[68]);
    let verdict = clamd(&addr, 1024).scan(&record(sent.len() as u64), body).await.unwrap();
    assert_eq!(verdict, ScanVerdict::Blocked { reason: "clamav: Win.Test.EICAR_HDB-1".into() });
}

#[tokio::test]
async fn an_early_size_limit_reply_is_read_after_a_failed_write() {
    let (addr, seen) = fake(Act::AnswerEarly("INSTREAM size limit exceeded. ERROR")).await;
    // Far more than the socket buffers hold, so the client is still writing when the fake closes.
    let (sent, body) = body_of(&[8 << 20]);
    let c = Clamd::new(ClamdConfig { max_bytes: 16 << 20, ..clamd(&addr, 1024).config().clone() }).unwrap();
    let verdict = c.scan(&record(sent.len() as u64), body).await.unwrap();
    assert_eq!(verdict, ScanVerdict::Review { reason: "larger than clamd's StreamMaxLength".into() });
    assert_eq!(seen.await.unwrap().chunks, [1024]);
}

#[tokio::test]
async fn a_body_longer_than_max_bytes_is_review() {
    let (addr, _seen) = fake(Act::Answer("stream: OK")).await;
    let c = Clamd::new(ClamdConfig { max_bytes: 1000, ..clamd(&addr, 256).config().clone() }).unwrap();
    // The record claims less than the body yields.
    let (_, body) = body_of(&[600, 600]);
    let verdict = c.scan(&record(10), body).await.unwrap();
    assert_eq!(verdict, ScanVerdict::Review { reason: "larger than the 1000 bytes the scanner takes".into() });
}

#[tokio::test]
async fn a_silent_clamd_times_out() {
    let (addr, _seen) = fake(Act::Silent).await;
    let cfg = ClamdConfig { timeout: Duration::from_millis(200), ..clamd(&addr, 1024).config().clone() };
    let (sent, body) = body_of(&[10]);
    let started = std::time::Instant::now();
    let err = Clamd::new(cfg).unwrap().scan(&record(sent.len() as u64), body).await.unwrap_err();
    assert!(matches!(&err, ScanError::Unavailable(why) if why.contains("timed out")), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn a_failing_body_is_unavailable() {
    let (addr, _seen) = fake(Act::Answer("stream: OK")).await;
    let body: ByteStream = Box::pin(futures_util::stream::iter([
        Ok(Bytes::from_static(b"abc")),
        Err(BlobError::Unavailable("s3 went away".into())),
    ]));
    let err = clamd(&addr, 1024).scan(&record(3), body).await.unwrap_err();
    assert!(matches!(&err, ScanError::Unavailable(why) if why.contains("s3 went away")), "{err}");
}

#[tokio::test]
async fn other_errors_are_unavailable() {
    let (addr, _seen) = fake(Act::Answer("Error processing command. ERROR")).await;
    let (sent, body) = body_of(&[10]);
    let err = clamd(&addr, 1024).scan(&record(sent.len() as u64), body).await.unwrap_err();
    assert!(matches!(&err, ScanError::Unavailable(why) if why.contains("Error processing command")), "{err}");
}

#[tokio::test]
async fn ping_over_a_unix_socket() {
    let path = std::env::temp_dir().join(format!("palaver-clamav-test-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let listener = tokio::net::UnixListener::bind(&path).unwrap();
    let seen = tokio::spawn(async move { serve(listener.accept().await.unwrap().0, Act::Silent).await });
    clamd(&format!("unix:{}", path.display()), 1024).ping().await.unwrap();
    assert_eq!(seen.await.unwrap().command, "zPING");
    let _ = std::fs::remove_file(&path);
}
