//! The listener under abuse, over real sockets: running out of descriptors, connections that never send their
//! headers, stalled bodies, WebSockets that never speak, the connection cap, clients that stop reading, and
//! where `/metrics` is served.

mod common;

use common::{Client, KEY, http, http_with, start};
use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{Instant, sleep, timeout};
use tokio_tungstenite::tungstenite::Message;

/// The status of `GET path`, or `None` if the server does not answer within two seconds.
async fn status(addr: SocketAddr, path: &str) -> Option<u16> {
    let attempt = async {
        let mut s = TcpStream::connect(addr).await.ok()?;
        let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        s.write_all(req.as_bytes()).await.ok()?;
        let mut buf = Vec::new();
        s.read_to_end(&mut buf).await.ok()?;
        String::from_utf8_lossy(&buf).split_whitespace().nth(1)?.parse().ok()
    };
    timeout(Duration::from_secs(2), attempt).await.ok()?
}

/// Waits until `GET path` answers `want`, for at most `within`; false if it never did.
async fn eventually_status(addr: SocketAddr, path: &str, want: u16, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if status(addr, path).await == Some(want) {
            return true;
        }
        sleep(Duration::from_millis(100)).await;
    }
    false
}

/// True if the server closes `s` within `within` (EOF or reset), reading and discarding what it sends.
async fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, s.read(&mut buf)).await {
            Err(_) => return false,
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => continue,
        }
    }
}

/// The value of an unlabelled metric.
fn metric(metrics: &str, name: &str) -> u64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {metrics}"))
}

/// A `palaver serve` process, killed when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn running_out_of_descriptors_backs_off_and_serving_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let log = dir.path().join("stderr");
    // 64 descriptors: the idle process uses about 17, so some 47 connections exhaust it.
    let child = Command::new("sh")
        .arg("-c")
        .arg(r#"ulimit -n 64 && exec "$0" serve --listen "$1" --data-dir "$2""#)
        .arg(env!("CARGO_BIN_EXE_palaver"))
        .arg(addr.to_string())
        .arg(dir.path().join("data"))
        .env("PALAVER_LOG", "warn")
        // Idle connections must stay open for this test: only the descriptor limit is in play.
        .env("PALAVER_TRANSPORT__HEADER_TIMEOUT_MS", "600000")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let _proc = Proc(child);
    assert!(eventually_status(addr, "/readyz", 200, Duration::from_secs(30)).await, "the server starts");

    // Far more idle connections than the process has descriptors: the kernel completes them all, the
    // server's accept fails with EMFILE beyond its limit.
    let mut idle = Vec::new();
    for _ in 0..120 {
        idle.push(TcpStream::connect(addr).await.unwrap());
    }
    assert_eq!(status(addr, "/livez").await, None, "no descriptor is left to serve a new client");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(&log).unwrap().contains("accept failed") {
        assert!(Instant::now() < deadline, "the accept error is logged");
        sleep(Duration::from_millis(50)).await;
    }

    drop(idle);
    assert!(
        eventually_status(addr, "/livez", 200, Duration::from_secs(20)).await,
        "once descriptors are free again a new client is served:\n{}",
        std::fs::read_to_string(&log).unwrap()
    );
    let (status, metrics) = http(addr, "GET", "/metrics", "").await;
    assert_eq!(status, 200);
    assert!(metric(&metrics, "palaver_accept_errors_total") >= 1, "{metrics}");
}

#[tokio::test]
async fn a_connection_that_never_sends_its_headers_is_closed_after_the_header_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let node = start(dir.path(), &[("PALAVER_TRANSPORT__HEADER_TIMEOUT_MS", "300")]).await;
    let addr = node.addr();
    let mut silent = TcpStream::connect(addr).await.unwrap();
    assert!(closed_within(&mut silent, Duration::from_secs(10)).await, "a connection that says nothing");

    // Headers that trickle in keep bytes moving, so only the header timeout can end them.
    let mut slow = TcpStream::connect(addr).await.unwrap();
    slow.write_all(b"GET /livez HTTP/1.1\r\nHost: x\r\n").await.unwrap();
    let trickle = async {
        for i in 0..100 {
            if slow.write_all(format!("X-Slow-{i}: y\r\n").as_bytes()).await.is_err() {
                return true;
            }
            sleep(Duration::from_millis(100)).await;
        }
        false
    };
    assert!(timeout(Duration::from_secs(15), trickle).await.unwrap(), "trickled headers are cut off");

    // A keep-alive connection waiting for its next request is under the same limit.
    let mut kept = TcpStream::connect(addr).await.unwrap();
    kept.write_all(b"GET /livez HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    let mut buf = [0u8; 1024];
    let n = kept.read(&mut buf).await.unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"), "answered and kept open");
    assert!(closed_within(&mut kept, Duration::from_secs(10)).await, "then closed while it waits for nothing");
    let (status, metrics) = http(addr, "GET", "/metrics", "").await;
    assert_eq!(status, 200, "the node still serves");
    assert!(metrics.contains("palaver_connection_timeouts_total{kind=\"header\"}"), "{metrics}");
    node.shutdown().await;
}

#[tokio::test]
async fn a_stalled_request_body_is_closed_after_the_idle_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let node = start(
        dir.path(),
        &[
            ("PALAVER_TRANSPORT__HTTP_IDLE_TIMEOUT_MS", "1500"),
            ("PALAVER_TRANSPORT__LP_POLL_TIMEOUT_SECONDS", "1"),
            ("PALAVER_TRANSPORT__LP_SESSION_TIMEOUT_SECONDS", "30"),
        ],
    )
    .await;
    let addr = node.addr();
    let (status, body) = http(addr, "POST", &format!("/v0/channels/lp?apikey={KEY}"), "").await;
    assert_eq!(status, 201);
    let sid =
        serde_json::from_str::<serde_json::Value>(&body).unwrap()["ctrl"]["params"]["sid"].as_str().unwrap().to_owned();
    let path = format!("/v0/channels/lp?apikey={KEY}&sid={sid}");
    // A long poll waits (1 s here) without a byte moving; it is shorter than the idle timeout and is answered.
    assert_eq!(http(addr, "GET", &path, "").await.0, 200);
    // A body announced as 1000 bytes of which 10 come.
    let mut s = TcpStream::connect(addr).await.unwrap();
    let head = format!("POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{{\"hi\":{{\"i");
    s.write_all(head.as_bytes()).await.unwrap();
    assert!(closed_within(&mut s, Duration::from_secs(10)).await, "the stalled body is cut off");
    let (_, metrics) = http(addr, "GET", "/metrics", "").await;
    assert!(metrics.contains("palaver_connection_timeouts_total{kind=\"http_idle\"} 1"), "{metrics}");
    node.shutdown().await;
}

#[tokio::test]
async fn a_websocket_that_sends_nothing_is_closed_after_the_handshake_timeout() {
    let dir = tempfile::tempdir().unwrap();
    // The idle timeout (55 s by default) would hold it far longer.
    let node = start(dir.path(), &[("PALAVER_TRANSPORT__WS_HANDSHAKE_TIMEOUT_MS", "300")]).await;
    let (mut ws, _) =
        tokio_tungstenite::connect_async(format!("ws://{}/v0/channels?apikey={KEY}", node.addr())).await.unwrap();
    let ended = timeout(Duration::from_secs(10), async {
        loop {
            match ws.next().await {
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return,
                Some(Ok(_)) => continue,
            }
        }
    })
    .await;
    assert!(ended.is_ok(), "the server closed a WebSocket that never sent a frame");
    // A client that speaks at once is not affected, and later silences are the idle timeout's business.
    let mut c = Client::connect(node.addr()).await;
    c.signup("prompt").await;
    sleep(Duration::from_millis(600)).await;
    assert_eq!(c.req("hi", json!({ "ver": "0.25.3" })).await["code"], 200, "still connected after 600 ms");
    let (_, metrics) = http(node.addr(), "GET", "/metrics", "").await;
    assert!(metrics.contains("palaver_connection_timeouts_total{kind=\"ws_handshake\"} 1"), "{metrics}");
    node.shutdown().await;
}

#[tokio::test]
async fn the_connection_beyond_max_connections_gets_503() {
    let dir = tempfile::tempdir().unwrap();
    let node = start(dir.path(), &[("PALAVER_SERVER__MAX_CONNECTIONS", "3")]).await;
    let addr = node.addr();
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(TcpStream::connect(addr).await.unwrap());
    }
    let (status, body) = http(addr, "GET", "/livez", "").await;
    assert_eq!((status, body.as_str()), (503, "too many connections"), "connection number 4");
    let refused = tokio_tungstenite::connect_async(format!("ws://{addr}/v0/channels?apikey={KEY}")).await;
    assert!(refused.unwrap_err().to_string().contains("503"), "a WebSocket too");
    // A closed connection frees its place (the guard counts every way a connection ends).
    held.pop();
    assert!(eventually_status(addr, "/livez", 200, Duration::from_secs(10)).await, "served again");
    let mut ws = Client::connect(addr).await;
    ws.signup("fits").await;
    drop(ws);
    held.clear();
    assert!(eventually_status(addr, "/metrics", 200, Duration::from_secs(10)).await);
    let (_, metrics) = http(addr, "GET", "/metrics", "").await;
    assert!(metric(&metrics, "palaver_connections_refused_total") >= 2, "{metrics}");
    node.shutdown().await;
}

/// Signs up, fills a group with `n` messages of about `size` bytes, then asks for the whole history `pages`
/// times without reading a single reply. Returns the client, still unread.
async fn hoard(addr: SocketAddr, n: usize, size: usize, pages: usize) -> Client {
    let mut c = Client::connect(addr).await;
    c.signup("hoarder").await;
    let grp = c.req("sub", json!({ "topic": "new1" })).await["topic"].as_str().unwrap().to_owned();
    for i in 0..n {
        let ctrl = c.req("pub", json!({ "topic": grp, "content": format!("{i:04}{}", "m".repeat(size)) })).await;
        assert_eq!(ctrl["code"], 202, "{ctrl}");
    }
    // Drain our own echoes of those messages before we stop reading.
    while c.next().await.is_some() {}
    for i in 0..pages {
        let get = json!({ "get": { "id": format!("g{i}"), "topic": grp, "what": "data", "data": { "limit": n } } });
        c.send_raw(get.to_string()).await;
    }
    c
}

/// Waits until the node has no session left; false if one is still there after `within`.
async fn sessions_gone(addr: SocketAddr, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        let (_, metrics) = http(addr, "GET", "/metrics", "").await;
        if metrics.lines().any(|l| l == "palaver_sessions 0") {
            return true;
        }
        sleep(Duration::from_millis(100)).await;
    }
    false
}

#[tokio::test]
async fn a_client_that_stops_reading_is_closed_at_its_queue_byte_cap() {
    let dir = tempfile::tempdir().unwrap();
    let node = start(
        dir.path(),
        &[
            ("PALAVER_LIMITS__RATE_PER_SECOND", "0"),
            ("PALAVER_LIMITS__SESSION_QUEUE_BYTES", "65536"),
            // Long enough that only the byte cap can end this session.
            ("PALAVER_TRANSPORT__WRITE_TIMEOUT_MS", "600000"),
        ],
    )
    .await;
    let addr = node.addr();
    // 40 pages of 40 messages of 8 KB: some 13 MB, far beyond the socket buffers and the 64 KiB cap, and
    // fewer frames per page than the frame cap, so the bytes are what fills the queue.
    let mut c = hoard(addr, 40, 8000, 40).await;
    assert!(sessions_gone(addr, Duration::from_secs(30)).await, "the session was closed");
    let (_, metrics) = http(addr, "GET", "/metrics", "").await;
    assert!(metrics.contains("palaver_session_queue_overflows_total 1"), "{metrics}");
    // The client, reading at last, finds the connection ended before all 40 pages came.
    let mut data = 0;
    let ended = timeout(Duration::from_secs(10), async {
        loop {
            match c.ws.next().await {
                Some(Ok(Message::Text(t))) if t.as_str().contains("\"data\"") => data += 1,
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return,
                Some(Ok(_)) => {}
            }
        }
    })
    .await;
    assert!(ended.is_ok(), "the connection is closed");
    assert!(data < 40 * 40, "not everything was delivered: {data}");
    node.shutdown().await;
}

#[tokio::test]
async fn a_client_that_stops_reading_is_disconnected_by_the_write_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let node = start(
        dir.path(),
        &[
            ("PALAVER_LIMITS__RATE_PER_SECOND", "0"),
            // Large enough that only the write timeout can end this session.
            ("PALAVER_LIMITS__SESSION_QUEUE_BYTES", "1073741824"),
            ("PALAVER_TRANSPORT__WRITE_TIMEOUT_MS", "500"),
        ],
    )
    .await;
    let addr = node.addr();
    let c = hoard(addr, 40, 8000, 40).await;
    assert!(sessions_gone(addr, Duration::from_secs(30)).await, "the session was closed");
    let (_, metrics) = http(addr, "GET", "/metrics", "").await;
    assert!(metrics.contains("palaver_connection_timeouts_total{kind=\"write\"} 1"), "{metrics}");
    assert!(metrics.contains("palaver_session_queue_overflows_total 0"), "{metrics}");
    drop(c);
    node.shutdown().await;
}

#[tokio::test]
async fn metrics_can_have_a_listener_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let node = start(dir.path(), &[("PALAVER_SERVER__METRICS_LISTEN", "127.0.0.1:0")]).await;
    let maddr = node.metrics_addr().expect("a metrics listener");
    let (status, body) = http(maddr, "GET", "/metrics", "").await;
    assert_eq!(status, 200);
    assert!(body.contains("palaver_sessions 0"), "{body}");
    assert_eq!(http(node.addr(), "GET", "/metrics", "").await.0, 404, "no longer on the main listener");
    assert_eq!(http(maddr, "GET", "/livez", "").await.0, 404, "the metrics listener serves metrics only");
    assert_eq!(http(maddr, "GET", "/v0/channels/lp", "").await.0, 404);
    assert_eq!(http(node.addr(), "GET", "/livez", "").await.0, 200);
    node.shutdown().await;
}

#[tokio::test]
async fn protected_metrics_need_the_admin_token() {
    let dir = tempfile::tempdir().unwrap();
    let token = "metrics-admin-token-0123456789";
    let node = start(dir.path(), &[("PALAVER_ADMIN__TOKEN", token), ("PALAVER_ADMIN__PROTECT_METRICS", "true")]).await;
    let addr = node.addr();
    assert_eq!(http(addr, "GET", "/metrics", "").await.0, 401, "no token");
    let wrong = http_with(addr, "GET", "/metrics", &[("Authorization", "Bearer not-the-token-at-all")], "").await;
    assert_eq!(wrong.0, 401, "a wrong token");
    let bearer = format!("Bearer {token}");
    let (status, body) = http_with(addr, "GET", "/metrics", &[("Authorization", &bearer)], "").await;
    assert_eq!(status, 200);
    assert!(body.contains("palaver_sessions"), "{body}");
    assert_eq!(http(addr, "GET", "/livez", "").await.0, 200, "probes stay open");
    node.shutdown().await;
}

#[tokio::test]
async fn a_client_that_reads_is_not_affected_by_the_limits() {
    let dir = tempfile::tempdir().unwrap();
    let node = start(
        dir.path(),
        &[
            ("PALAVER_LIMITS__RATE_PER_SECOND", "0"),
            ("PALAVER_LIMITS__SESSION_QUEUE_BYTES", "65536"),
            ("PALAVER_TRANSPORT__WRITE_TIMEOUT_MS", "500"),
        ],
    )
    .await;
    let mut c = Client::connect(node.addr()).await;
    c.signup("reader").await;
    let grp = c.req("sub", json!({ "topic": "new1" })).await["topic"].as_str().unwrap().to_owned();
    for i in 0..20 {
        c.req("pub", json!({ "topic": grp, "content": format!("{i:04}{}", "m".repeat(2000)) })).await;
    }
    while c.next().await.is_some() {}
    // One page of 40 KB fits the 64 KiB cap.
    c.ws.send(Message::text(json!({ "get": { "id": "p", "topic": grp, "what": "data" } }).to_string())).await.unwrap();
    let mut data = 0;
    while let Some(f) = c.next().await {
        if f.get("data").is_some() {
            data += 1;
        }
        if f["ctrl"]["id"] == "p" {
            break;
        }
    }
    assert_eq!(data, 20);
    node.shutdown().await;
}

#[tokio::test]
async fn long_polling_gives_queue_bytes_back_as_it_polls() {
    let dir = tempfile::tempdir().unwrap();
    let node = start(
        dir.path(),
        &[("PALAVER_LIMITS__RATE_PER_SECOND", "0"), ("PALAVER_LIMITS__SESSION_QUEUE_BYTES", "65536")],
    )
    .await;
    let addr = node.addr();
    let (_, body) = http(addr, "POST", &format!("/v0/channels/lp?apikey={KEY}"), "").await;
    let sid =
        serde_json::from_str::<serde_json::Value>(&body).unwrap()["ctrl"]["params"]["sid"].as_str().unwrap().to_owned();
    let path = format!("/v0/channels/lp?apikey={KEY}&sid={sid}");
    // Sends one message and polls until the ctrl answering `id` (the frames before it are returned too).
    let call = |msg: serde_json::Value, id: &'static str| {
        let path = path.clone();
        async move {
            assert_eq!(http(addr, "POST", &path, &msg.to_string()).await.0, 200);
            let mut seen = Vec::new();
            loop {
                let (status, body) = http(addr, "GET", &path, "").await;
                assert_eq!(status, 200, "the session is still there");
                let f: serde_json::Value = serde_json::from_str(&body).expect("a frame, not an empty poll");
                if f["ctrl"]["id"] == id {
                    return (f, seen);
                }
                seen.push(f);
            }
        }
    };
    call(json!({ "hi": { "id": "h", "ver": "0.25.3" } }), "h").await;
    let secret = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, "lpreader:secret1");
    let (ctrl, _) = call(json!({ "acc": { "id": "a", "user": "new", "secret": secret, "login": true } }), "a").await;
    assert_eq!(ctrl["ctrl"]["code"], 200);
    let (ctrl, _) = call(json!({ "sub": { "id": "s", "topic": "new1" } }), "s").await;
    let grp = ctrl["ctrl"]["topic"].as_str().unwrap().to_owned();
    for _ in 0..20 {
        let content = "m".repeat(2000);
        assert_eq!(
            call(json!({ "pub": { "id": "p", "topic": grp, "noecho": true, "content": content } }), "p").await.0["ctrl"]
                ["code"],
            202
        );
    }
    // Each page is some 40 KB of a 64 KiB cap: the second one fits only if polling the first gave its bytes
    // back.
    for _ in 0..3 {
        let get = json!({ "get": { "id": "g", "topic": grp, "what": "data" } });
        let (_, frames) = call(get, "g").await;
        assert_eq!(frames.iter().filter(|f| f.get("data").is_some()).count(), 20);
    }
    node.shutdown().await;
}
