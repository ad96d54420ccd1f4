//! The push tests' helpers: a local webhook receiver that checks each request's HMAC signature exactly as
//! `docs/push.md` specifies it, and a login over a connection whose `{hi}` names a device token.

use super::Client;
use base64::Engine;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub const SECRET: &str = "webhook-test-secret";

/// An HTTP/1.1 server on a free local port that answers each request (its head and body) with the status `answer`
/// gives and an empty JSON body, on keep-alive connections.
pub async fn serve(answer: impl Fn(&str, &[u8]) -> u16 + Clone + Send + Sync + 'static) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = listener.accept().await else { return };
            let answer = answer.clone();
            tokio::spawn(async move {
                while let Some((head, body)) = read_request(&mut s).await {
                    let status = answer(&head, &body);
                    let resp = format!("HTTP/1.1 {status} X\r\ncontent-length: 2\r\n\r\n{{}}");
                    if s.write_all(resp.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// The value of header `name` (any case) in a request's `head`, or empty.
pub fn header(head: &str, name: &str) -> String {
    head.lines()
        .find_map(|l| l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.trim()))
        .unwrap_or("")
        .to_owned()
}

/// A webhook receiver: records each verified body; answers 410 for tokens listed in `gone` and 503 for those in
/// `failing`.
#[derive(Clone, Default)]
pub struct Hook {
    pub got: Arc<Mutex<Vec<Value>>>,
    pub gone: Arc<Mutex<Vec<String>>>,
    pub failing: Arc<Mutex<Vec<String>>>,
}

impl Hook {
    pub async fn start(&self) -> String {
        let hook = self.clone();
        let addr = serve(move |head, body| hook.check(head, body)).await;
        format!("http://{addr}/push")
    }

    fn check(&self, head: &str, body: &[u8]) -> u16 {
        let header = |name: &str| header(head, name);
        assert!(head.starts_with("POST /push HTTP/1.1"), "{head}");
        let ts: u64 = header("x-palaver-timestamp").parse().unwrap();
        assert_eq!(header("x-palaver-signature"), palaver_push::signature(SECRET.as_bytes(), ts, body));
        let v: Value = serde_json::from_slice(body).unwrap();
        let token = v["device"]["token"].as_str().unwrap().to_owned();
        self.got.lock().unwrap().push(v);
        if self.gone.lock().unwrap().contains(&token) {
            410
        } else if self.failing.lock().unwrap().contains(&token) {
            503
        } else {
            200
        }
    }

    /// Every push `token` got.
    pub fn to(&self, token: &str) -> Vec<Value> {
        self.got.lock().unwrap().iter().filter(|v| v["device"]["token"] == token).cloned().collect()
    }

    /// The message pushes (`what: msg`) `token` got, leaving out the silent `read` and `sub` ones.
    pub fn msgs(&self, token: &str) -> Vec<Value> {
        self.to(token).into_iter().filter(|v| v["data"]["what"] == "msg").collect()
    }

    /// Waits until `token` got `n` pushes (failing if it gets more within a short grace).
    pub async fn expect(&self, token: &str, n: usize) -> Vec<Value> {
        self.wait(n, || self.to(token)).await
    }

    /// Waits until `token` got `n` message pushes (failing if it gets more within a short grace).
    pub async fn expect_msgs(&self, token: &str, n: usize) -> Vec<Value> {
        self.wait(n, || self.msgs(token)).await
    }

    async fn wait(&self, n: usize, got: impl Fn() -> Vec<Value>) -> Vec<Value> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while got().len() < n && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        let got = got();
        assert_eq!(got.len(), n, "pushes: {got:?}");
        got
    }
}

pub async fn read_request(s: &mut tokio::net::TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = s.read(&mut chunk).await.ok().filter(|n| *n > 0)?;
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let len: usize = head
        .lines()
        .find_map(|l| l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case("content-length")))
        .map(|(_, v)| v.trim().parse().unwrap())
        .unwrap_or(0);
    while buf.len() < end + len {
        let n = s.read(&mut chunk).await.ok().filter(|n| *n > 0)?;
        buf.extend_from_slice(&chunk[..n]);
    }
    Some((head, buf[end..end + len].to_vec()))
}

/// Signs up (or logs in) `login` over a new connection whose `{hi}` names the device token `dev`.
pub async fn login(addr: std::net::SocketAddr, login: &str, dev: Option<&str>, create: bool) -> (Client, String) {
    let mut c = Client::connect(addr).await;
    let mut hi = json!({ "ver": "0.25.3", "platf": "android", "lang": "en" });
    if let Some(d) = dev {
        hi["dev"] = json!(d);
    }
    assert!(c.req("hi", hi).await["code"].as_i64().unwrap() < 300);
    let secret = base64::engine::general_purpose::STANDARD.encode(format!("{login}:secret1"));
    let ctrl = if create {
        c.req("acc", json!({ "user": "new", "secret": secret, "login": true })).await
    } else {
        c.req("login", json!({ "scheme": "basic", "secret": secret })).await
    };
    assert_eq!(ctrl["code"], 200, "{ctrl}");
    let user = ctrl["params"]["user"].as_str().unwrap().to_owned();
    (c, user)
}
