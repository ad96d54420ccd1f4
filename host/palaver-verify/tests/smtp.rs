//! `SmtpSender` against a real SMTP server, Mailpit, which `scripts/lib/services.sh` (`start_mailpit`) runs with
//! any login accepted and recipients containing `#` refused with 550. Every message is read back over Mailpit's
//! REST API. Like the MariaDB and Redis tests these fail, not skip, when the server is absent: the test script
//! starts it. Addresses are random per run, so earlier runs and parallel tests do not meet.
//!
//! `PALAVER_TEST_SMTP_ADDR` (default 127.0.0.1:1025), `PALAVER_TEST_MAILPIT_API` (default http://127.0.0.1:8025).

use palaver_core::TenantId;
use palaver_core::ports::{CodeMessage, CodePurpose, CodeSender, SendError};
use palaver_verify::{SmtpConfig, SmtpSender, SmtpTls};
use serde_json::Value;
use std::time::{Duration, Instant};

const FROM: &str = "Palaver Test <no-reply@palaver.test>";

fn smtp_addr() -> (String, u16) {
    let addr = std::env::var("PALAVER_TEST_SMTP_ADDR").unwrap_or_else(|_| "127.0.0.1:1025".into());
    let (host, port) = addr.rsplit_once(':').expect("PALAVER_TEST_SMTP_ADDR is host:port");
    (host.to_owned(), port.parse().expect("a port"))
}

fn api() -> String {
    std::env::var("PALAVER_TEST_MAILPIT_API").unwrap_or_else(|_| "http://127.0.0.1:8025".into())
}

/// Mailpit as `start_mailpit` runs it: plain SMTP.
fn mailpit_config() -> SmtpConfig {
    let (host, port) = smtp_addr();
    SmtpConfig { host, port, tls: SmtpTls::None, from: FROM.into(), timeout_ms: 5_000, ..SmtpConfig::default() }
}

/// A recipient no other test or run uses.
fn unique(tag: &str) -> String {
    format!("{tag}-{:016x}@palaver.test", rand::random::<u64>())
}

fn message<'a>(to: &'a str, code: &'a str, purpose: CodePurpose) -> CodeMessage<'a> {
    CodeMessage { tenant: TenantId(7), method: "email", to, code, purpose, valid_minutes: 15, lang: Some("de") }
}

async fn get(url: &str) -> Value {
    let resp = reqwest::get(url).await.unwrap_or_else(|e| panic!("Mailpit API at {url}: {e} (is Mailpit running?)"));
    assert!(resp.status().is_success(), "{url}: HTTP {}", resp.status());
    resp.json().await.unwrap()
}

/// The messages Mailpit holds for `to`, found with its search.
async fn messages_to(to: &str) -> Vec<Value> {
    let mut url = reqwest::Url::parse(&format!("{}/api/v1/search", api())).unwrap();
    url.query_pairs_mut().append_pair("query", &format!("to:\"{to}\""));
    let found = get(url.as_str()).await;
    found["messages"].as_array().cloned().unwrap_or_default()
}

/// The one message to `to`, in full (waiting a little for it to be stored).
async fn the_message_to(to: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut list = messages_to(to).await;
    while list.is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        list = messages_to(to).await;
    }
    assert_eq!(list.len(), 1, "exactly one message to {to}: {list:?}");
    let id = list[0]["ID"].as_str().expect("an ID");
    get(&format!("{}/api/v1/message/{id}", api())).await
}

fn check_headers(m: &Value, to: &str, subject: &str) {
    assert_eq!(m["From"]["Address"], "no-reply@palaver.test", "{m}");
    assert_eq!(m["From"]["Name"], "Palaver Test", "{m}");
    let tos = m["To"].as_array().expect("To");
    assert_eq!(tos.len(), 1, "{m}");
    assert_eq!(tos[0]["Address"], to, "{m}");
    assert_eq!(m["Subject"], subject, "{m}");
    let id = m["MessageID"].as_str().expect("a Message-ID");
    assert!(id.ends_with("@palaver.test") && id.len() > 20, "the sender's domain: {id}");
}

#[tokio::test]
async fn a_confirm_code_arrives_with_its_code_and_validity() {
    // Logged in: Mailpit takes any user name and password over plain SMTP.
    let sender = SmtpSender::new(SmtpConfig {
        username: Some("mailer".into()),
        password: Some("mailer-password".into()),
        ..mailpit_config()
    })
    .unwrap();
    let to = unique("confirm");
    sender.send(&message(&to, "482913", CodePurpose::Confirm)).await.unwrap();

    let m = the_message_to(&to).await;
    check_headers(&m, &to, "Your confirmation code");
    let text = m["Text"].as_str().expect("a text part");
    assert!(text.lines().any(|l| l.trim() == "482913"), "the code on a line of its own: {text:?}");
    assert!(text.contains("valid for 15 minutes"), "{text:?}");
    assert_eq!(m["HTML"], "", "plain text only: {m}");
}

#[tokio::test]
async fn a_reset_code_arrives_with_its_own_subject() {
    let sender = SmtpSender::new(mailpit_config()).unwrap();
    let to = unique("reset");
    sender.send(&message(&to, "771204", CodePurpose::Reset)).await.unwrap();

    let m = the_message_to(&to).await;
    check_headers(&m, &to, "Your password reset code");
    let text = m["Text"].as_str().expect("a text part");
    assert!(text.lines().any(|l| l.trim() == "771204"), "{text:?}");
    assert!(text.contains("reset your password"), "{text:?}");
}

#[tokio::test]
async fn a_recipient_the_server_refuses_is_refused() {
    // start_mailpit refuses recipients with a `#` (a valid character in an address) with 550 on RCPT TO.
    let sender = SmtpSender::new(mailpit_config()).unwrap();
    let to = unique("refuse#me");
    let err = sender.send(&message(&to, "100200", CodePurpose::Confirm)).await.unwrap_err();
    assert!(matches!(&err, SendError::Refused(r) if r.contains("550")), "{err:?}");
    assert!(messages_to(&to).await.is_empty());
}

#[tokio::test]
async fn a_malformed_address_is_refused_before_connecting() {
    // Nothing listens here; a refusal rather than `Unavailable` shows no connection was tried.
    let port = closed_port().await;
    let sender = SmtpSender::new(SmtpConfig { host: "127.0.0.1".into(), port, ..mailpit_config() }).unwrap();
    for bad in ["not-an-address", "two@@palaver.test", "bob@palaver.test\r\nBcc: eve@palaver.test", ""] {
        let err = sender.send(&message(bad, "1", CodePurpose::Confirm)).await.unwrap_err();
        assert!(matches!(err, SendError::Refused(_)), "{bad:?}: {err:?}");
    }
}

#[tokio::test]
async fn a_server_that_is_down_is_unavailable() {
    let port = closed_port().await;
    let sender = SmtpSender::new(SmtpConfig { host: "127.0.0.1".into(), port, ..mailpit_config() }).unwrap();
    let err = sender.send(&message(&unique("down"), "1", CodePurpose::Confirm)).await.unwrap_err();
    assert!(matches!(err, SendError::Unavailable(_)), "{err:?}");
}

#[tokio::test]
async fn a_server_that_never_answers_is_unavailable_within_the_timeout() {
    // Accepts the connection, never greets.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let hold = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    let sender =
        SmtpSender::new(SmtpConfig { host: "127.0.0.1".into(), port, timeout_ms: 300, ..mailpit_config() }).unwrap();
    let started = Instant::now();
    let err = sender.send(&message(&unique("silent"), "1", CodePurpose::Confirm)).await.unwrap_err();
    assert!(matches!(err, SendError::Unavailable(_)), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(3), "bounded by timeout_ms: {:?}", started.elapsed());
    hold.abort();
}

#[tokio::test]
async fn tls_the_server_does_not_speak_is_unavailable() {
    // Mailpit as started offers neither STARTTLS nor implicit TLS: both modes fail rather than fall back.
    for tls in [SmtpTls::Starttls, SmtpTls::Tls] {
        let sender = SmtpSender::new(SmtpConfig { tls, ..mailpit_config() }).unwrap();
        let to = unique("tls");
        let err = sender.send(&message(&to, "1", CodePurpose::Confirm)).await.unwrap_err();
        assert!(matches!(err, SendError::Unavailable(_)), "{tls:?}: {err:?}");
        assert!(messages_to(&to).await.is_empty(), "{tls:?}: nothing sent in clear");
    }
}

#[tokio::test]
async fn an_accepted_message_is_sent_even_if_quit_hangs() {
    // A minimal SMTP server that accepts everything and then never answers QUIT: the code has gone out, so the
    // send must succeed, and promptly.
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let (read, mut write) = stream.into_split();
        let mut lines = BufReader::new(read).lines();
        write.write_all(b"220 fake ESMTP\r\n").await.unwrap();
        let mut in_data = false;
        while let Ok(Some(line)) = lines.next_line().await {
            let reply: &[u8] = if in_data {
                if line != "." {
                    continue;
                }
                in_data = false;
                b"250 2.0.0 queued\r\n"
            } else if line.starts_with("EHLO") {
                b"250 fake\r\n"
            } else if line.starts_with("DATA") {
                in_data = true;
                b"354 go ahead\r\n"
            } else if line.starts_with("QUIT") {
                std::future::pending::<()>().await;
                unreachable!()
            } else {
                b"250 2.1.0 ok\r\n"
            };
            write.write_all(reply).await.unwrap();
        }
    });
    let sender =
        SmtpSender::new(SmtpConfig { host: "127.0.0.1".into(), port, timeout_ms: 5_000, ..mailpit_config() }).unwrap();
    let started = Instant::now();
    sender.send(&message(&unique("quit"), "1", CodePurpose::Confirm)).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    server.abort();
}

/// A local port nothing listens on.
async fn closed_port() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap().port()
}
