//! Attacks over real sockets: guessing a long-poll session, holding long-poll sessions open without polling,
//! freezing the long-poll sweeper, creating sessions without bound, and a revoked WebSocket client that ignores
//! the close.

mod common;

use common::{Client, KEY, http, http_with, start};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::MaybeTlsStream;

/// Creates a long-polling session and returns its sid.
async fn lp_create(addr: SocketAddr) -> (u16, String) {
    let (status, body) = http(addr, "POST", &format!("/v0/channels/lp?apikey={KEY}"), "").await;
    let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    (status, v["ctrl"]["params"]["sid"].as_str().unwrap_or_default().to_owned())
}

async fn lp_send(addr: SocketAddr, sid: &str, msg: Value) -> (u16, String) {
    http(addr, "POST", &format!("/v0/channels/lp?apikey={KEY}&sid={sid}"), &msg.to_string()).await
}

async fn lp_poll(addr: SocketAddr, sid: &str) -> (u16, Value) {
    let (status, body) = http(addr, "GET", &format!("/v0/channels/lp?apikey={KEY}&sid={sid}"), "").await;
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

#[tokio::test]
async fn long_poll_sids_are_random_and_a_neighbour_s_sid_opens_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let node = start(dir.path(), &[]).await;
    let addr = node.addr();
    let (_, victim) = lp_create(addr).await;
    assert_eq!(lp_send(addr, &victim, json!({ "hi": { "id": "1", "ver": "0.25.3" } })).await.0, 200);
    let (_, hi) = lp_poll(addr, &victim).await;
    assert_eq!(hi["ctrl"]["params"]["sid"], victim, "the {{hi}} reply names the same sid, not an internal id");

    let (_, attacker) = lp_create(addr).await;
    for sid in [&victim, &attacker] {
        // 128 random bits in base64url, not a counter an attacker could step back from.
        assert_eq!(sid.len(), 22, "{sid}");
        assert!(sid.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'), "{sid}");
        assert!(u64::from_str_radix(sid, 16).is_err(), "{sid} reads as a number");
    }
    assert_ne!(victim[..8], attacker[..8], "consecutive sessions share no prefix");
    // The old attack: the neighbour of one's own sid.
    for guess in neighbours(&attacker) {
        let (status, _) = lp_send(addr, &guess, json!({ "hi": { "id": "x", "ver": "0.25.3" } })).await;
        assert_eq!(status, 403, "{guess}");
    }
    // A WebSocket session's sid is random too.
    let mut ws = Client::connect(addr).await;
    let hi = ws.req("hi", json!({ "ver": "0.25.3" })).await;
    assert_eq!(hi["params"]["sid"].as_str().map(str::len), Some(22), "{hi}");
    node.shutdown().await;
}

/// Sids one character away from `sid`, at its end (where a counter would change).
fn neighbours(sid: &str) -> Vec<String> {
    let (head, last) = sid.split_at(sid.len() - 1);
    ["A", "B", "a", "0", "-"].iter().filter(|c| **c != last).map(|c| format!("{head}{c}")).collect()
}

#[tokio::test]
async fn long_poll_sessions_are_capped_per_address_and_in_total() {
    let dir = tempfile::tempdir().unwrap();
    let node = start(dir.path(), &[("PALAVER_LIMITS__MAX_LP_SESSIONS_PER_IP", "3")]).await;
    let addr = node.addr();
    for _ in 0..3 {
        assert_eq!(lp_create(addr).await.0, 201);
    }
    let (status, body) = http(addr, "POST", &format!("/v0/channels/lp?apikey={KEY}"), "").await;
    assert_eq!(status, 429, "{body}");
    assert!(body.contains("too many long-polling sessions from this address"), "{body}");
    let (_, metrics) = http(addr, "GET", "/metrics", "").await;
    assert!(metrics.contains("palaver_security_refused_total{reason=\"lp_per_ip\"} 1"), "{metrics}");
    node.shutdown().await;

    let dir = tempfile::tempdir().unwrap();
    let node = start(dir.path(), &[("PALAVER_LIMITS__MAX_LP_SESSIONS", "2")]).await;
    let addr = node.addr();
    assert_eq!(lp_create(addr).await.0, 201);
    assert_eq!(lp_create(addr).await.0, 201);
    assert_eq!(lp_create(addr).await.0, 503);
    node.shutdown().await;
}

#[tokio::test]
async fn a_long_poll_session_that_only_sends_expires() {
    let dir = tempfile::tempdir().unwrap();
    let env =
        [("PALAVER_TRANSPORT__LP_POLL_TIMEOUT_SECONDS", "1"), ("PALAVER_TRANSPORT__LP_SESSION_TIMEOUT_SECONDS", "2")];
    let node = start(dir.path(), &env).await;
    let addr = node.addr();
    let (_, sid) = lp_create(addr).await;
    // Sending keeps no session alive: only collecting the replies does.
    let mut last = 200;
    for _ in 0..20 {
        last = lp_send(addr, &sid, json!({ "hi": { "ver": "0.25.3" } })).await.0;
        if last == 403 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert_eq!(last, 403, "the session expired although it kept sending");
    node.shutdown().await;
}

#[tokio::test]
async fn a_blocked_long_poll_request_freezes_neither_the_sweeper_nor_itself() {
    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("PALAVER_TRANSPORT__LP_POLL_TIMEOUT_SECONDS", "1"),
        ("PALAVER_TRANSPORT__LP_SESSION_TIMEOUT_SECONDS", "2"),
        ("PALAVER_TRANSPORT__SEND_DEADLINE_MS", "3000"),
        ("PALAVER_LIMITS__SESSION_QUEUE", "8"),
    ];
    let node = start(dir.path(), &env).await;
    let addr = node.addr();
    let (_, stuck) = lp_create(addr).await;
    // Fill the session's queue without ever polling: the next request's reply has no room and waits.
    for _ in 0..8 {
        assert_eq!(lp_send(addr, &stuck, json!({ "hi": { "ver": "0.25.3" } })).await.0, 200);
    }
    let sid = stuck.clone();
    let blocked = tokio::spawn(async move { lp_send(addr, &sid, json!({ "hi": { "ver": "0.25.3" } })).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!blocked.is_finished(), "the request waits for room");
    // Other sessions that stop polling still expire while that request holds its session.
    let mut idle = Vec::new();
    for _ in 0..4 {
        idle.push(lp_create(addr).await.1);
    }
    tokio::time::sleep(Duration::from_millis(3500)).await;
    for sid in &idle {
        assert_eq!(lp_poll(addr, sid).await.0, 403, "{sid} expired on time");
    }
    // The blocked request itself gives up at the send deadline, closing its session, rather than never.
    let (status, _) = tokio::time::timeout(Duration::from_secs(5), blocked).await.expect("not stuck").unwrap();
    assert_eq!(status, 200);
    assert_eq!(lp_poll(addr, &stuck).await.0, 403);
    node.shutdown().await;
}

#[tokio::test]
async fn a_revoked_client_that_ignores_the_close_is_cut_off() {
    let dir = tempfile::tempdir().unwrap();
    let token = "admin-token-for-tests-0123456789";
    let node = start(dir.path(), &[("PALAVER_ADMIN__TOKEN", token)]).await;
    let addr = node.addr();
    let mut c = Client::connect(addr).await;
    let (user, _) = c.signup("ignorer").await;
    let grp = c.req("sub", json!({ "topic": "new1" })).await["topic"].as_str().unwrap().to_owned();

    let auth = format!("Bearer {token}");
    let path = format!("/v1/admin/tenants/1/users/{user}/disable");
    // From here on the client speaks raw frames on the socket, so that nothing answers the server's close frame,
    // and it keeps publishing as if it had heard nothing. It reads from before the revocation, so the 205 is in
    // hand even if the server's cut arrives as a reset (which discards unread bytes) before the writes are done.
    let MaybeTlsStream::Plain(tcp) = c.ws.get_mut() else { panic!("plain TCP") };
    let (mut rx, mut tx) = tcp.split();
    let mut received = Vec::new();
    let reader = tokio::time::timeout(Duration::from_secs(5), rx.read_to_end(&mut received));
    let writer = async {
        let (status, body) = http_with(addr, "POST", &path, &[("Authorization", &auth)], "").await;
        assert_eq!(status, 200, "{body}");
        for i in 0..3 {
            let pubm = json!({ "pub": { "id": format!("p{i}"), "topic": grp, "content": "after revocation" } });
            // A failed write means the server has already cut the socket: the client gets no further.
            if tx.write_all(&masked_text_frame(pubm.to_string().as_bytes())).await.is_err() {
                break;
            }
        }
    };
    let (read, ()) = tokio::join!(reader, writer);
    let text = String::from_utf8_lossy(&received);
    // The end comes as a FIN, or as a reset when the server drops a socket with the client's frames unread.
    assert!(read.is_ok(), "the server dropped the connection by itself; got {text}");
    assert!(text.contains("\"code\":205"), "{text}");
    assert!(!text.contains("\"code\":202"), "no publish was accepted: {text}");
    node.shutdown().await;
}

/// A client-to-server text frame (masked, as RFC 6455 requires of clients).
fn masked_text_frame(payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0x81];
    match payload.len() {
        n @ 0..=125 => f.push(0x80 | n as u8),
        n => {
            f.push(0x80 | 126);
            f.extend_from_slice(&(n as u16).to_be_bytes());
        }
    }
    let key = [0x37, 0xfa, 0x21, 0x3d];
    f.extend_from_slice(&key);
    f.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
    f
}
