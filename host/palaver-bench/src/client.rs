//! A minimal Tinode client over one WebSocket: hi, acc (sign-up), login, sub, and waiting for replies.

use std::future::Future;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use base64::Engine;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio::time::timeout;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};
use tokio_tungstenite::{WebSocketStream, client_async_with_config};

use crate::target::Target;

/// A WebSocket to the server over plain TCP (the tool only speaks to loopback, so there is no TLS).
pub(crate) type Ws = WebSocketStream<TcpStream>;

/// How long TCP connect plus the WebSocket upgrade may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one request may wait for its `{ctrl}`; generous because sign-up hashes a password under load.
pub(crate) const REPLY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one frame may take to be written.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// Small buffers keep thousands of client connections cheap.
///
/// tungstenite allocates its 128 KiB default read buffer eagerly, which would make the generator, not the
/// server, the memory hog (perf-reliability.md §2 measured 137 KB per connection with the default).
pub(crate) fn ws_config(read_buffer: usize) -> WebSocketConfig {
    WebSocketConfig::default().read_buffer_size(read_buffer).write_buffer_size(0)
}

/// Opens a WebSocket to the Tinode channel endpoint with the API key in the query.
pub(crate) async fn connect(target: &Target, read_buffer: usize) -> Result<Ws> {
    let attempt = async {
        let tcp = TcpStream::connect(target.addr).await.context("TCP connect")?;
        // Small request/reply frames would otherwise wait for Nagle's algorithm and distort latency.
        tcp.set_nodelay(true)?;
        let (ws, _response) = client_async_with_config(target.ws_url(), tcp, Some(ws_config(read_buffer)))
            .await
            .context("WebSocket upgrade")?;
        Ok(ws)
    };
    timeout(CONNECT_TIMEOUT, attempt).await.map_err(|_| anyhow!("connect timed out after {CONNECT_TIMEOUT:?}"))?
}

/// The `{ctrl}` that answered a request.
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    pub(crate) code: u16,
    pub(crate) topic: Option<String>,
    pub(crate) params: Value,
    pub(crate) raw: String,
}

/// One logged-in (or not yet logged-in) session.
pub(crate) struct Conn {
    pub(crate) ws: Ws,
    next_id: u64,
    /// The `usr…` id from the sign-up or login reply.
    pub(crate) user: String,
}

impl Conn {
    /// Wraps an open WebSocket.
    pub(crate) fn new(ws: Ws) -> Conn {
        Conn { ws, next_id: 1, user: String::new() }
    }

    /// Sends one text frame.
    pub(crate) async fn send_text(&mut self, text: String) -> Result<()> {
        timeout(WRITE_TIMEOUT, self.ws.send(Message::text(text)))
            .await
            .map_err(|_| anyhow!("write timed out"))?
            .context("write")
    }

    /// The next text frame, skipping control frames, failing on close or at the deadline.
    pub(crate) async fn next_text(&mut self, deadline: Instant) -> Result<Utf8Bytes> {
        next_text(&mut self.ws, deadline).await
    }

    /// Sends `{kind: body}` with a fresh id and waits for the `{ctrl}` carrying that id.
    pub(crate) async fn request(&mut self, kind: &str, mut body: Value) -> Result<Reply> {
        let id = format!("c{}", self.next_id);
        self.next_id += 1;
        body["id"] = json!(id);
        let mut envelope = json!({});
        envelope[kind] = body;
        self.send_text(envelope.to_string()).await?;
        let deadline = Instant::now() + REPLY_TIMEOUT;
        loop {
            let text =
                self.next_text(deadline).await.with_context(|| format!("waiting for the reply to {{{kind}}}"))?;
            let value: Value = serde_json::from_str(&text).with_context(|| format!("unparsable frame: {text}"))?;
            let Some(ctrl) = value.get("ctrl") else {
                continue;
            };
            if ctrl.get("id").and_then(Value::as_str) != Some(id.as_str()) {
                continue;
            }
            return Ok(Reply {
                code: ctrl.get("code").and_then(Value::as_u64).unwrap_or(0) as u16,
                topic: ctrl.get("topic").and_then(Value::as_str).map(str::to_owned),
                params: ctrl.get("params").cloned().unwrap_or(Value::Null),
                raw: text.to_string(),
            });
        }
    }

    /// Like [`Conn::request`], but a reply outside 2xx is an error that quotes the frame.
    pub(crate) async fn request_ok(&mut self, kind: &str, body: Value) -> Result<Reply> {
        let reply = self.request(kind, body).await?;
        if !(200..300).contains(&reply.code) {
            bail!("{{{kind}}} was answered with {}", reply.raw);
        }
        Ok(reply)
    }

    /// `{hi}`, which must be the first message of a session.
    pub(crate) async fn hi(&mut self) -> Result<Reply> {
        self.request_ok("hi", json!({"ver": "0.25.3", "ua": "palaver-bench/0.0", "lang": "en"})).await
    }

    /// `{acc user:"new"}` with basic credentials and `login:true`; remembers the new `usr…` id.
    pub(crate) async fn sign_up(&mut self, login: &str, password: &str, name: &str) -> Result<()> {
        let body = json!({
            "user": "new",
            "scheme": "basic",
            "secret": basic_secret(login, password),
            "login": true,
            "desc": {"public": {"fn": name}},
        });
        let reply = self.request_ok("acc", body).await?;
        self.remember_user(&reply)
    }

    /// `{login scheme:"basic"}`; remembers the `usr…` id.
    pub(crate) async fn login(&mut self, login: &str, password: &str) -> Result<()> {
        let body = json!({"scheme": "basic", "secret": basic_secret(login, password)});
        let reply = self.request_ok("login", body).await?;
        self.remember_user(&reply)
    }

    /// `{sub}` to `topic`, optionally with a `set` block (as when creating a group on `new`).
    pub(crate) async fn sub(&mut self, topic: &str, set: Option<Value>) -> Result<Reply> {
        let mut body = json!({"topic": topic});
        if let Some(set) = set {
            body["set"] = set;
        }
        self.request_ok("sub", body).await
    }

    /// Takes `params.user` from a sign-up or login reply.
    fn remember_user(&mut self, reply: &Reply) -> Result<()> {
        let user = reply.params.get("user").and_then(Value::as_str);
        self.user = user.ok_or_else(|| anyhow!("no params.user in {}", reply.raw))?.to_owned();
        Ok(())
    }
}

/// The next text frame of a bare WebSocket; ping/pong are skipped (tungstenite answers pings itself).
pub(crate) async fn next_text(ws: &mut Ws, deadline: Instant) -> Result<Utf8Bytes> {
    loop {
        let frame = tokio::time::timeout_at(deadline.into(), ws.next())
            .await
            .map_err(|_| anyhow!("no frame before the deadline"))?;
        match frame {
            None => bail!("the server closed the connection"),
            Some(Err(err)) => return Err(err).context("read"),
            Some(Ok(Message::Text(text))) => return Ok(text),
            Some(Ok(Message::Close(frame))) => bail!("the server sent close: {frame:?}"),
            Some(Ok(Message::Binary(bytes))) => {
                bail!("unexpected binary frame of {} bytes", bytes.len())
            }
            Some(Ok(_)) => {}
        }
    }
}

/// `base64("login:password")`, the standard padded alphabet that Go's `[]byte` JSON uses.
fn basic_secret(login: &str, password: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(format!("{login}:{password}"))
}

/// The password of a bench login; fixed, because the accounts are throwaway.
pub(crate) const PASSWORD: &str = "bench-pass-123";

/// Connects, says hi and signs up a fresh user.
pub(crate) async fn new_user(target: &Target, read_buffer: usize, login: &str, name: &str) -> Result<Conn> {
    let mut conn = Conn::new(connect(target, read_buffer).await?);
    conn.hi().await?;
    conn.sign_up(login, PASSWORD, name).await.with_context(|| format!("signing up {login}"))?;
    Ok(conn)
}

/// Runs `make(i)` for `i in 0..n` with at most `concurrency` in flight, printing progress every tenth.
///
/// Results come back in completion order, each with its index, so a failure can be reported precisely.
pub(crate) async fn bounded<T, F, Fut>(what: &str, n: usize, concurrency: usize, make: F) -> Vec<(usize, Result<T>)>
where
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let start = Instant::now();
    let step = (n / 10).max(1);
    let mut done = Vec::with_capacity(n);
    let mut stream = futures_util::stream::iter(0..n)
        .map(|i| {
            let fut = make(i);
            async move { (i, fut.await) }
        })
        .buffer_unordered(concurrency.max(1));
    while let Some(item) = stream.next().await {
        done.push(item);
        if done.len() % step == 0 && done.len() < n {
            println!("  {what}: {}/{n} after {:.1} s", done.len(), start.elapsed().as_secs_f64());
        }
    }
    done
}
