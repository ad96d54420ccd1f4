//! With `log.otlp.endpoint` set, a node posts its tracing spans to the collector as OTLP/HTTP protobuf
//! (`POST {endpoint}/v1/traces`), named by `log.otlp.service_name` and the node id, and flushes the last batch
//! when it stops. The collector here is a plain HTTP listener that records what it is sent.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// One request the collector received.
struct Export {
    path: String,
    content_type: String,
    body: Vec<u8>,
}

/// Answers every request with 200 and hands it to `tx`; one connection may carry several requests.
fn collector(listener: TcpListener, tx: mpsc::Sender<Export>) {
    for conn in listener.incoming().flatten() {
        let tx = tx.clone();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut writer = conn;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    return;
                }
                let path = line.split_whitespace().nth(1).unwrap_or_default().to_owned();
                let (mut length, mut content_type) = (0usize, String::new());
                loop {
                    let mut header = String::new();
                    reader.read_line(&mut header).unwrap();
                    let header = header.trim_end();
                    if header.is_empty() {
                        break;
                    }
                    let (name, value) = header.split_once(':').unwrap();
                    match name.to_ascii_lowercase().as_str() {
                        "content-length" => length = value.trim().parse().unwrap(),
                        "content-type" => content_type = value.trim().to_owned(),
                        _ => {}
                    }
                }
                let mut body = vec![0; length];
                reader.read_exact(&mut body).unwrap();
                writer
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n")
                    .unwrap();
                let _ = tx.send(Export { path, content_type, body });
            }
        });
    }
}

fn get(port: u16, path: &str) -> Option<String> {
    let mut http = TcpStream::connect(("127.0.0.1", port)).ok()?;
    write!(http, "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").ok()?;
    let mut answer = String::new();
    http.read_to_string(&mut answer).ok()?;
    Some(answer)
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle.as_bytes())
}

#[test]
fn spans_reach_the_collector_as_otlp_protobuf_and_the_last_batch_is_flushed_at_the_stop() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || collector(listener, tx));

    let dir = tempfile::tempdir().unwrap();
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["serve", "--listen", &format!("127.0.0.1:{port}"), "--node-id", "otlp-node-7", "--data-dir"])
        .arg(dir.path())
        .env("PALAVER_LOG__OTLP__ENDPOINT", &endpoint)
        .env("PALAVER_LOG__OTLP__SERVICE_NAME", "palaver-otlp-test")
        .env_remove("PALAVER_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while get(port, "/livez").is_none_or(|a| !a.starts_with("HTTP/1.1 200")) {
        assert!(Instant::now() < deadline, "the node did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    // Each request runs in an `http` span with its request id.
    for _ in 0..3 {
        assert!(get(port, "/readyz").is_some());
    }
    // The batch interval is longer than this test: what arrives was flushed by the stop.
    let stopped = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(stopped.success());
    let status = child.wait().unwrap();
    assert!(status.success(), "a clean stop: {status}");

    let mut exports = Vec::new();
    while let Ok(export) = rx.recv_timeout(Duration::from_secs(2)) {
        exports.push(export);
    }
    assert!(!exports.is_empty(), "the collector got nothing");
    for e in &exports {
        assert_eq!((e.path.as_str(), e.content_type.as_str()), ("/v1/traces", "application/x-protobuf"));
    }
    let body: Vec<u8> = exports.iter().flat_map(|e| e.body.clone()).collect();
    // Protobuf keeps strings as they are: the resource names the service and the node, the spans their fields.
    for needle in ["service.name", "palaver-otlp-test", "service.instance.id", "otlp-node-7", "request_id"] {
        assert!(contains(&body, needle), "{needle:?} is not in the exported spans");
    }
}
