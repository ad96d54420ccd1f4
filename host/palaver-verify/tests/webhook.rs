//! `WebhookSender` against a local HTTP server (hyper) standing in for the SMS provider: it records each request
//! (method, path, headers, body) and answers with a scripted status, optionally after a delay.

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Request, Response};
use palaver_core::TenantId;
use palaver_core::ports::{CodeMessage, CodePurpose, CodeSender, SendError};
use palaver_verify::{SIGNATURE_HEADER, TIMESTAMP_HEADER, WebhookConfig, WebhookSender, signature};
use serde_json::json;
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One request as the server saw it; header names lower-cased.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    headers: BTreeMap<String, String>,
    body: Vec<u8>,
}

impl Seen {
    fn header(&self, name: &str) -> &str {
        self.headers.get(name).map(String::as_str).unwrap_or("")
    }
}

#[derive(Clone)]
struct Provider {
    seen: Arc<Mutex<Vec<Seen>>>,
    base: String,
}

impl Provider {
    /// A server on a free local port answering every request with `status` after `delay`.
    async fn start(status: u16, delay: Duration) -> Provider {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let p = Provider { seen: Arc::default(), base: format!("http://{}", listener.local_addr().unwrap()) };
        let seen = p.seen.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else { return };
                let seen = seen.clone();
                tokio::spawn(async move {
                    let svc = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                        let seen = seen.clone();
                        async move {
                            let method = req.method().to_string();
                            let path = req.uri().path().to_owned();
                            let headers = req
                                .headers()
                                .iter()
                                .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
                                .collect();
                            let body =
                                req.into_body().collect().await.map(|b| b.to_bytes().to_vec()).unwrap_or_default();
                            seen.lock().unwrap().push(Seen { method, path, headers, body });
                            tokio::time::sleep(delay).await;
                            let resp = Response::builder()
                                .status(status)
                                .header("content-type", "application/json")
                                .body(Full::new(Bytes::from(format!("{{\"status\":{status}}}"))))
                                .unwrap();
                            Ok::<_, Infallible>(resp)
                        }
                    });
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, svc).await;
                });
            }
        });
        p
    }

    fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

const SECRET: &str = "sms-webhook-secret";

fn sender(p: &Provider, secret: Option<&str>, timeout_ms: u64) -> WebhookSender {
    WebhookSender::new(WebhookConfig {
        url: format!("{}/sms/send", p.base),
        secret: secret.map(str::to_owned),
        timeout_ms,
    })
    .unwrap()
}

fn message<'a>(to: &'a str, purpose: CodePurpose, lang: Option<&'a str>) -> CodeMessage<'a> {
    CodeMessage { tenant: TenantId(42), method: "tel", to, code: "583920", purpose, valid_minutes: 10, lang }
}

#[tokio::test]
async fn posts_the_code_as_signed_json() {
    let p = Provider::start(200, Duration::ZERO).await;
    let before = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    sender(&p, Some(SECRET), 5_000).send(&message("+491701234567", CodePurpose::Confirm, Some("de"))).await.unwrap();

    let seen = p.requests();
    assert_eq!(seen.len(), 1);
    let r = &seen[0];
    assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/sms/send"));
    assert_eq!(r.header("content-type"), "application/json");
    let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(
        body,
        json!({
            "tenant": "42",
            "method": "tel",
            "to": "+491701234567",
            "code": "583920",
            "purpose": "confirm",
            "valid_minutes": 10,
            "lang": "de",
            "text": "Your confirmation code: 583920 (valid for 10 minutes).",
        })
    );
    // The push webhook's convention: HMAC-SHA256 over "{timestamp}.{body}", the same function byte for byte.
    let ts: u64 = r.header(TIMESTAMP_HEADER).parse().expect("a Unix-seconds timestamp");
    assert!(ts >= before && ts <= before + 60, "{ts}");
    assert_eq!(r.header(SIGNATURE_HEADER), signature(SECRET.as_bytes(), ts, &r.body));
    assert_eq!(r.header(SIGNATURE_HEADER), palaver_push::signature(SECRET.as_bytes(), ts, &r.body));
    assert_eq!((SIGNATURE_HEADER, TIMESTAMP_HEADER), (palaver_push::SIGNATURE_HEADER, palaver_push::TIMESTAMP_HEADER));
}

#[tokio::test]
async fn a_reset_without_a_language_or_a_secret() {
    let p = Provider::start(204, Duration::ZERO).await;
    sender(&p, None, 5_000).send(&message("+15551234567", CodePurpose::Reset, None)).await.unwrap();

    let r = &p.requests()[0];
    let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(
        body,
        json!({
            "tenant": "42",
            "method": "tel",
            "to": "+15551234567",
            "code": "583920",
            "purpose": "reset",
            "valid_minutes": 10,
            "text": "Your password reset code: 583920 (valid for 10 minutes).",
        })
    );
    assert!(!r.headers.contains_key(SIGNATURE_HEADER) && !r.headers.contains_key(TIMESTAMP_HEADER), "{r:?}");
}

#[tokio::test]
async fn a_client_error_is_refused() {
    let p = Provider::start(400, Duration::ZERO).await;
    let err = sender(&p, Some(SECRET), 5_000).send(&message("+491701234567", CodePurpose::Confirm, None)).await;
    assert!(matches!(&err, Err(SendError::Refused(r)) if r.contains("400")), "{err:?}");
}

#[tokio::test]
async fn a_server_error_is_unavailable() {
    let p = Provider::start(503, Duration::ZERO).await;
    let err = sender(&p, Some(SECRET), 5_000).send(&message("+491701234567", CodePurpose::Confirm, None)).await;
    assert!(matches!(&err, Err(SendError::Unavailable(r)) if r.contains("503")), "{err:?}");
}

#[tokio::test]
async fn throttling_is_unavailable_not_refused() {
    let p = Provider::start(429, Duration::ZERO).await;
    let err = sender(&p, Some(SECRET), 5_000).send(&message("+491701234567", CodePurpose::Confirm, None)).await;
    assert!(matches!(&err, Err(SendError::Unavailable(r)) if r.contains("429")), "{err:?}");
}

#[tokio::test]
async fn a_slow_provider_is_unavailable_within_the_timeout() {
    let p = Provider::start(200, Duration::from_secs(5)).await;
    let started = Instant::now();
    let err = sender(&p, Some(SECRET), 300).send(&message("+491701234567", CodePurpose::Confirm, None)).await;
    assert!(matches!(err, Err(SendError::Unavailable(_))), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
}

/// An error answer that never ends is read only up to a bound: the sender answers at once, not at the timeout.
#[tokio::test]
async fn an_endless_error_answer_is_read_only_up_to_a_bound() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/sms/send", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut head = Vec::new();
        let mut buf = [0u8; 4096];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = s.read(&mut buf).await.unwrap();
            head.extend_from_slice(&buf[..n]);
        }
        let _ = s.write_all(b"HTTP/1.1 503 Service Unavailable\r\ntransfer-encoding: chunked\r\n\r\n").await;
        let chunk = format!("{:x}\r\n{}\r\n", 16 * 1024, "x".repeat(16 * 1024));
        // Until the client hangs up.
        while s.write_all(chunk.as_bytes()).await.is_ok() {}
    });
    let s = WebhookSender::new(WebhookConfig { url, secret: None, timeout_ms: 10_000 }).unwrap();
    let started = Instant::now();
    let err = s.send(&message("+491701234567", CodePurpose::Confirm, None)).await;
    let Err(SendError::Unavailable(reason)) = err else { panic!("a 503 is unavailable: {err:?}") };
    assert!(reason.starts_with("SMS webhook answered HTTP 503: xxx"), "{reason}");
    assert!(started.elapsed() < Duration::from_secs(5), "not read until the timeout: {:?}", started.elapsed());
}

#[tokio::test]
async fn a_provider_that_is_down_is_unavailable() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/sms/send", listener.local_addr().unwrap());
    drop(listener);
    let s = WebhookSender::new(WebhookConfig { url, secret: None, timeout_ms: 2_000 }).unwrap();
    let err = s.send(&message("+491701234567", CodePurpose::Confirm, None)).await;
    assert!(matches!(err, Err(SendError::Unavailable(_))), "{err:?}");
}

#[tokio::test]
async fn a_number_that_is_not_one_is_refused_before_sending() {
    let p = Provider::start(200, Duration::ZERO).await;
    let s = sender(&p, Some(SECRET), 5_000);
    for bad in ["491701234567", "+4917", "+49 170 1234567", "+1234567890123456", "alice@example.com", ""] {
        let err = s.send(&message(bad, CodePurpose::Confirm, None)).await;
        assert!(matches!(err, Err(SendError::Refused(_))), "{bad:?}: {err:?}");
    }
    assert!(p.requests().is_empty());
}
