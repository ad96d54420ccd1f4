//! The `http` import against a local server, through the `http-probe` test plugin (`plugins/testing/http-probe`):
//! what reaches the server, the allow-list and a tenant's narrowing, no redirects, the caps, the time bound, the
//! headers a plugin may not set, and the grant checked at load.

use crate::common::{ACTOR, LosesFirst, env};
use palaver_core::TenantId;
use palaver_plugin_runtime::{CommandContext, CommandOutcome, Grant, LoadError, Manifest, RegistryError, TenantChoice};
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A request as the server read it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    /// Names lower-case.
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// A tiny HTTP/1.1 server on 127.0.0.1, one request per connection: `/echo` answers 200 `hello`, `/redirect` a 302
/// to `/echo`, `/big` 2 KiB with a length, `/chunked` 2 KiB in chunks without one, `/headers` a 2-byte body with
/// 1 KiB of headers, `/hook` 204, `/fail` 500, `/slow` after three seconds.
struct Server {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    connections: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Server {
    async fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(AtomicUsize::new(0));
        let task = tokio::spawn({
            let (seen, connections) = (seen.clone(), connections.clone());
            async move {
                while let Ok((stream, _)) = listener.accept().await {
                    connections.fetch_add(1, Ordering::SeqCst);
                    tokio::spawn(serve(stream, addr, seen.clone()));
                }
            }
        });
        Server { addr, seen, connections, task }
    }

    fn port(&self) -> u16 {
        self.addr.port()
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().clone()
    }
}

async fn serve(mut stream: TcpStream, addr: SocketAddr, seen: Arc<Mutex<Vec<Seen>>>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or_default().split(' ');
    let (method, path) = (first.next().unwrap_or_default().to_owned(), first.next().unwrap_or_default().to_owned());
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize =
        headers.iter().find(|(k, _)| k == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => body.extend_from_slice(&chunk[..n]),
        }
    }
    seen.lock().push(Seen { method, path: path.clone(), headers, body });
    let response = match path.split('?').next().unwrap_or_default() {
        "/echo" => "HTTP/1.1 200 OK\r\nx-echo: yes\r\ncontent-length: 5\r\nconnection: close\r\n\r\nhello".to_owned(),
        "/redirect" => format!(
            "HTTP/1.1 302 Found\r\nlocation: http://{addr}/echo\r\ncontent-length: 5\r\nconnection: close\r\n\r\nmoved"
        ),
        "/big" => format!("HTTP/1.1 200 OK\r\ncontent-length: 2048\r\nconnection: close\r\n\r\n{}", "x".repeat(2048)),
        "/chunked" => {
            let chunk = format!("200\r\n{}\r\n", "y".repeat(512));
            format!(
                "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n{}0\r\n\r\n",
                chunk.repeat(4)
            )
        }
        "/headers" => format!(
            "HTTP/1.1 200 OK\r\nx-padding: {}\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok",
            "p".repeat(1024)
        ),
        "/hook" => "HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n".to_owned(),
        "/fail" => "HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_owned(),
        "/slow" => {
            tokio::time::sleep(Duration::from_secs(3)).await;
            "HTTP/1.1 200 OK\r\ncontent-length: 4\r\nconnection: close\r\n\r\nlate".to_owned()
        }
        _ => "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_owned(),
    };
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// The probe loaded with `allow` (and anything else `edit` changes) as its `[http]`.
fn probe(allow: &[String], edit: impl FnOnce(&mut Manifest)) -> crate::common::Env {
    let e = env();
    e.load_edited("http-probe-1.0.0", |m| {
        m.http.as_mut().expect("the probe has an [http] section").allow = allow.to_vec();
        edit(m);
    })
    .expect("the probe loads");
    e
}

/// Runs `http-probe.run` with `requests` for `tenant` and returns its results.
async fn run(e: &crate::common::Env, tenant: u64, requests: Value) -> Vec<Value> {
    let ctx = CommandContext::new(TenantId(tenant), ACTOR);
    match e.hooks.run_command(&ctx, "http-probe.run", &json!({ "requests": requests })).await {
        Ok(CommandOutcome::Ok(v)) => v["results"].as_array().cloned().unwrap_or_default(),
        other => panic!("the probe did not answer: {other:?}"),
    }
}

fn error(result: &Value) -> &str {
    result["error"].as_str().unwrap_or_else(|| panic!("expected an error, got {result}"))
}

fn metric(e: &crate::common::Env, outcome: &str) -> u64 {
    let text = e.registry.render_metrics();
    let key = format!("palaver_plugin_http_requests_total{{plugin=\"http-probe\",outcome=\"{outcome}\"}} ");
    text.lines().find_map(|l| l.strip_prefix(key.as_str())).and_then(|n| n.trim().parse().ok()).unwrap_or(0)
}

#[tokio::test]
async fn a_listed_host_gets_the_request_as_the_plugin_sent_it() {
    let server = Server::start().await;
    let e = probe(&[format!("127.0.0.1:{}", server.port())], |_| {});
    let results = run(
        &e,
        1,
        json!([{
            "method": "POST",
            "url": server.url("/echo?x=1"),
            "headers": [["X-Signature", "sha256=abc"], ["content-type", "text/plain"]],
            "body": "ping",
        }]),
    )
    .await;
    assert_eq!(results[0]["status"], 200, "{results:?}");
    assert_eq!(results[0]["body"], "hello");
    assert_eq!(results[0]["headers"]["x-echo"], "yes", "header names come back lower-case");
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    let s = &seen[0];
    assert_eq!((s.method.as_str(), s.path.as_str(), s.body.as_slice()), ("POST", "/echo?x=1", b"ping".as_slice()));
    assert_eq!(s.header("x-signature"), Some("sha256=abc"));
    assert_eq!(s.header("content-type"), Some("text/plain"));
    assert_eq!(s.header("host"), Some(format!("127.0.0.1:{}", server.port()).as_str()), "the host sets host");
    assert_eq!(s.header("content-length"), Some("4"));
    assert_eq!(metric(&e, "ok"), 1);
    let text = e.registry.render_metrics();
    assert!(text.contains("palaver_plugin_http_duration_seconds_count{plugin=\"http-probe\"} 1"), "{text}");
}

#[tokio::test]
async fn hosts_ports_and_schemes_outside_the_list_are_denied_and_nothing_is_sent() {
    let (listed, other) = (Server::start().await, Server::start().await);
    let e = probe(&[format!("127.0.0.1:{}", listed.port())], |_| {});
    let results = run(
        &e,
        1,
        json!([
            { "url": other.url("/echo") },
            { "url": format!("http://localhost:{}/echo", listed.port()) },
            { "url": "http://127.0.0.1/echo" },
            { "url": format!("https://127.0.0.2:{}/echo", listed.port()) },
            { "url": "file:///etc/passwd" },
        ]),
    )
    .await;
    for r in &results {
        assert_eq!(error(r), "denied", "{results:?}");
    }
    assert!(results[0]["message"].as_str().unwrap().contains("allow-list"), "{results:?}");
    assert_eq!(other.connections.load(Ordering::SeqCst), 0, "nothing reached the unlisted server");
    assert_eq!(listed.connections.load(Ordering::SeqCst), 0);
    assert_eq!(metric(&e, "denied"), 5);
    // The listed one is reachable, so the denials were the list's doing.
    assert_eq!(run(&e, 1, json!([{ "url": listed.url("/echo") }])).await[0]["status"], 200);
}

#[tokio::test]
async fn a_listed_name_must_resolve_to_public_addresses_unless_the_manifest_says_private() {
    let server = Server::start().await;
    let entry = format!("localhost:{}", server.port());
    let url = format!("http://localhost:{}/echo", server.port());
    let e = probe(std::slice::from_ref(&entry), |_| {});
    let results = run(&e, 1, json!([{ "url": url }])).await;
    assert_eq!(error(&results[0]), "denied", "{results:?}");
    assert!(results[0]["message"].as_str().unwrap().contains("no public address"), "{results:?}");
    assert_eq!(server.connections.load(Ordering::SeqCst), 0);
    let e = probe(&[entry], |m| m.http.as_mut().unwrap().private_addresses = true);
    assert_eq!(run(&e, 1, json!([{ "url": url }])).await[0]["status"], 200);
}

#[tokio::test]
async fn a_tenant_narrows_the_list_within_the_manifests() {
    let (a, b) = (Server::start().await, Server::start().await);
    let (entry_a, entry_b) = (format!("127.0.0.1:{}", a.port()), format!("127.0.0.1:{}", b.port()));
    let e = probe(&[entry_a.clone(), entry_b.clone()], |_| {});
    e.registry.set_tenant_http_allow(TenantId(1), "http-probe", Some(vec![entry_a.clone()])).unwrap();
    let requests = json!([{ "url": a.url("/echo") }, { "url": b.url("/echo") }]);
    let narrowed = run(&e, 1, requests.clone()).await;
    assert_eq!(narrowed[0]["status"], 200, "{narrowed:?}");
    assert_eq!(error(&narrowed[1]), "denied");
    assert!(narrowed[1]["message"].as_str().unwrap().contains("tenant"), "{narrowed:?}");
    assert_eq!(b.connections.load(Ordering::SeqCst), 0);
    // Another tenant has the manifest's whole list.
    let whole = run(&e, 2, requests.clone()).await;
    assert_eq!((whole[0]["status"].as_u64(), whole[1]["status"].as_u64()), (Some(200), Some(200)), "{whole:?}");
    // An empty list allows nothing; null goes back to the manifest's.
    e.registry.set_tenant_http_allow(TenantId(1), "http-probe", Some(vec![])).unwrap();
    assert_eq!(error(&run(&e, 1, json!([{ "url": a.url("/echo") }])).await[0]), "denied");
    e.registry.set_tenant_http_allow(TenantId(1), "http-probe", None).unwrap();
    assert_eq!(run(&e, 1, json!([{ "url": b.url("/echo") }])).await[0]["status"], 200);
    // A list reaching beyond the manifest's is refused, and so is one for a plugin without the grant.
    for outside in ["127.0.0.1", "127.0.0.1:1", "*.example.org", "localhost"] {
        let refused = e.registry.set_tenant_http_allow(TenantId(1), "http-probe", Some(vec![outside.to_owned()]));
        assert!(matches!(&refused, Err(RegistryError::HttpAllow { .. })), "{outside}: {refused:?}");
    }
    let choice = TenantChoice {
        plugin: "http-probe".to_owned(),
        enabled: None,
        settings: None,
        failure: Default::default(),
        http_allow: Some(vec!["127.0.0.1:1".to_owned()]),
    };
    assert!(matches!(e.registry.check_choice(&choice), Err(RegistryError::HttpAllow { .. })));
    assert!(
        e.registry.check_choice(&TenantChoice { http_allow: Some(vec![entry_b.clone()]), ..choice.clone() }).is_ok()
    );
    e.load("allow-all-1.0.0");
    let no_grant = TenantChoice { plugin: "allow-all".to_owned(), http_allow: Some(vec![entry_a]), ..choice };
    let refused = e.registry.check_choice(&no_grant).unwrap_err().to_string();
    assert!(refused.contains("no \"http\" grant"), "{refused}");
    assert_eq!(
        e.registry.http_allow(TenantId(1), "http-probe").unwrap(),
        Some(vec![format!("127.0.0.1:{}", a.port()), entry_b])
    );
    assert_eq!(e.registry.http_allow(TenantId(1), "allow-all").unwrap(), None);
}

#[tokio::test]
async fn redirects_come_back_as_they_are() {
    let server = Server::start().await;
    let e = probe(&[format!("127.0.0.1:{}", server.port())], |_| {});
    let results = run(&e, 1, json!([{ "url": server.url("/redirect") }])).await;
    assert_eq!(results[0]["status"], 302, "{results:?}");
    assert_eq!(results[0]["headers"]["location"], server.url("/echo"));
    assert_eq!(results[0]["body"], "moved");
    let paths: Vec<String> = server.seen().into_iter().map(|s| s.path).collect();
    assert_eq!(paths, ["/redirect"], "the redirect was not followed");
}

#[tokio::test]
async fn a_response_over_the_cap_is_a_limit_and_nothing_more_is_sent_in_the_call() {
    let server = Server::start().await;
    let e = probe(&[format!("127.0.0.1:{}", server.port())], |_| {});
    // The probe's manifest caps responses at 1 KiB.
    let results = run(&e, 1, json!([{ "url": server.url("/big") }, { "url": server.url("/echo") }])).await;
    assert_eq!(error(&results[0]), "limit", "{results:?}");
    assert!(results[0]["message"].as_str().unwrap().contains("1024"), "{results:?}");
    assert_eq!(error(&results[1]), "limit", "the call sends nothing more: {results:?}");
    // Without a content-length the body is read up to the cap and no further.
    let results = run(&e, 1, json!([{ "url": server.url("/chunked") }])).await;
    assert_eq!(error(&results[0]), "limit", "{results:?}");
    // The headers count too: 1 KiB of them and a 2-byte body pass the 1 KiB cap.
    let results = run(&e, 1, json!([{ "url": server.url("/headers") }])).await;
    assert_eq!(error(&results[0]), "limit", "{results:?}");
    assert!(results[0]["message"].as_str().unwrap().contains("header"), "{results:?}");
    let paths: Vec<String> = server.seen().into_iter().map(|s| s.path).collect();
    assert_eq!(paths, ["/big", "/chunked", "/headers"]);
    // The next call starts afresh.
    assert_eq!(run(&e, 1, json!([{ "url": server.url("/echo") }])).await[0]["status"], 200);
}

#[tokio::test]
async fn more_requests_than_the_cap_are_a_limit() {
    let server = Server::start().await;
    let e = probe(&[format!("127.0.0.1:{}", server.port())], |m| {
        m.http.as_mut().unwrap().max_requests = 3;
    });
    let five: Vec<Value> = (0..5).map(|_| json!({ "url": server.url("/echo") })).collect();
    let results = run(&e, 1, Value::Array(five)).await;
    let statuses: Vec<Option<u64>> = results.iter().map(|r| r["status"].as_u64()).collect();
    assert_eq!(statuses, [Some(200), Some(200), Some(200), None, None], "{results:?}");
    assert_eq!((error(&results[3]), error(&results[4])), ("limit", "limit"));
    assert_eq!(server.seen().len(), 3, "the server saw exactly the cap");
    assert_eq!(metric(&e, "limit"), 2);
}

/// A call that lost a key-value race runs again, and its requests with it (they are not buffered): the runs share
/// the call's `max_requests`, so the server never sees more than the cap of one call.
#[tokio::test]
async fn the_runs_of_a_call_share_its_request_cap() {
    let server = Server::start().await;
    let e = crate::common::env_with(crate::common::config(), |s| s.with_kv(Arc::new(LosesFirst::new(1))));
    e.load_edited("http-probe-1.0.0", |m| {
        let http = m.http.as_mut().expect("the probe has an [http] section");
        http.allow = vec![format!("127.0.0.1:{}", server.port())];
        http.max_requests = 2;
    })
    .expect("the probe loads");
    let two = json!([{ "url": server.url("/echo") }, { "url": server.url("/echo") }]);
    let ctx = CommandContext::new(TenantId(1), ACTOR);
    let out = e.hooks.run_command(&ctx, "http-probe.run", &json!({ "requests": two, "mark": "done" })).await;
    let Ok(CommandOutcome::Ok(v)) = out else { panic!("the probe did not answer: {out:?}") };
    // The first run sent both and lost its commit; the second, which committed, had none left.
    let results = v["results"].as_array().cloned().unwrap_or_default();
    assert_eq!((error(&results[0]), error(&results[1])), ("limit", "limit"), "{results:?}");
    assert_eq!(server.seen().len(), 2, "two requests for the call, not two per run");
    assert!(e.registry.render_metrics().contains("palaver_plugin_kv_retries_total{plugin=\"http-probe\"} 1"));
}

#[tokio::test]
async fn a_request_over_the_size_cap_is_a_limit() {
    let server = Server::start().await;
    let e = probe(&[format!("127.0.0.1:{}", server.port())], |m| {
        m.http.as_mut().unwrap().max_request_bytes = 64;
    });
    let results = run(
        &e,
        1,
        json!([{ "method": "POST", "url": server.url("/echo"), "body": "z".repeat(65) }, { "url": server.url("/echo") }]),
    )
    .await;
    assert_eq!((error(&results[0]), error(&results[1])), ("limit", "limit"), "{results:?}");
    assert_eq!(server.connections.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_slow_server_times_out_before_the_calls_deadline() {
    let server = Server::start().await;
    // The probe's deadline is 500 ms, its request timeout the default 2 s: the deadline bounds the wait, and the
    // plugin still answers (the host stops waiting a little before the deadline).
    let e = probe(&[format!("127.0.0.1:{}", server.port())], |_| {});
    let started = Instant::now();
    let results = run(&e, 1, json!([{ "url": server.url("/slow") }])).await;
    let took = started.elapsed();
    assert_eq!(error(&results[0]), "timeout", "{results:?}");
    assert!(took >= Duration::from_millis(400) && took < Duration::from_millis(1500), "took {took:?}");
    assert_eq!(metric(&e, "timeout"), 1);
    // A shorter request timeout than the deadline is the bound then.
    let e = probe(&[format!("127.0.0.1:{}", server.port())], |m| m.http.as_mut().unwrap().timeout_ms = 100);
    let started = Instant::now();
    let results = run(&e, 1, json!([{ "url": server.url("/slow") }, { "url": server.url("/echo") }])).await;
    let took = started.elapsed();
    assert_eq!(error(&results[0]), "timeout", "{results:?}");
    assert_eq!(results[1]["status"], 200, "a timeout leaves the call's other requests alone: {results:?}");
    assert!(took < Duration::from_millis(450), "took {took:?}");
}

#[tokio::test]
async fn headers_the_host_sets_and_malformed_requests_are_invalid() {
    let server = Server::start().await;
    let e = probe(&[format!("127.0.0.1:{}", server.port())], |m| {
        m.http.as_mut().unwrap().methods = vec!["GET".to_owned()];
    });
    let url = server.url("/echo");
    let header = |k: &str, v: &str| json!({ "url": url, "headers": [[k, v]] });
    let results = run(
        &e,
        1,
        json!([
            header("Host", "evil.example"),
            header("content-length", "1"),
            header("Connection", "keep-alive"),
            header("transfer-encoding", "chunked"),
            header("x-split", "a\r\nx-injected: 1"),
            header("bad name", "v"),
            { "method": "TRACE", "url": url },
            { "url": "not a url" },
            { "url": format!("http://user:pw@127.0.0.1:{}/echo", server.port()) },
        ]),
    )
    .await;
    for r in &results {
        assert_eq!(error(r), "invalid", "{results:?}");
    }
    // A method the manifest does not allow is denied.
    let post = run(&e, 1, json!([{ "method": "POST", "url": url }])).await;
    assert_eq!(error(&post[0]), "denied", "{post:?}");
    assert_eq!(server.connections.load(Ordering::SeqCst), 0, "none of them was sent");
    assert_eq!(metric(&e, "invalid"), 9);
}

/// The example webhook plugin end to end: a stored message reaches the tenant's URL signed over the timestamp and
/// the raw body; a receiver's 500 is a listener failure, so the host delivers again. The shipped manifest allows a
/// placeholder host only: the test replaces it by its receiver in the copy it loads, as an operator would.
#[tokio::test]
async fn the_webhook_plugin_posts_signed_events_and_fails_on_a_bad_answer() {
    use hmac::{Hmac, Mac};
    use palaver_core::ports::{AccountChange, EventHook, PluginEvent};
    let server = Server::start().await;
    let e = env();
    let manifest = e.copy("webhook-0.1.0");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let shipped = "allow = [\"hooks.example.invalid\"]";
    assert!(text.contains(shipped), "the shipped allow-list reaches no real host: {text}");
    let local = format!("allow = [\"127.0.0.1:{}\"]", server.port());
    std::fs::write(&manifest, text.replace(shipped, &local)).unwrap();
    e.registry.load_file(&manifest).expect("the webhook loads");
    e.registry.set_enabled(TenantId(1), "webhook", Some(true)).unwrap();
    let settings = json!({ "url": server.url("/hook"), "secret": "s3cret", "topics": ["grpHooked"] });
    e.registry.set_settings(TenantId(1), "webhook", Some(settings)).unwrap();
    let event = |topic: &str| PluginEvent::Published {
        tenant: TenantId(1),
        topic: topic.to_owned(),
        seq: 9,
        ts: 1_000,
        from: ACTOR,
        content: json!("hi there"),
        head: None,
    };
    assert_eq!(e.hooks.deliver(&event("grpHooked"), None, 1).await, vec![]);
    assert_eq!(e.hooks.deliver(&event("grpOther"), None, 1).await, vec![], "not a chosen topic: nothing sent");
    let seen = server.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    let s = &seen[0];
    assert_eq!((s.method.as_str(), s.path.as_str()), ("POST", "/hook"));
    assert_eq!(s.header("x-palaver-delivery"), Some("message:1:grpHooked:9"));
    let ts = s.header("x-palaver-timestamp").expect("a timestamp");
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(b"s3cret").unwrap();
    mac.update(format!("{ts}.").as_bytes());
    mac.update(&s.body);
    let hex: String = mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(s.header("x-palaver-signature"), Some(format!("sha256={hex}").as_str()));
    let body: Value = serde_json::from_slice(&s.body).unwrap();
    assert_eq!(
        (body["event"].as_str(), body["content"].as_str(), body["seq"].as_i64()),
        (Some("message"), Some("hi there"), Some(9))
    );
    // An operator's suspension: named by the event's id, made by an operator, acted on the account itself.
    let suspended = PluginEvent::Account {
        tenant: TenantId(1),
        id: "5eed".to_owned(),
        user: ACTOR,
        actor: None,
        change: AccountChange::Suspended,
        ts: 2_000,
        public: None,
        tags: Vec::new(),
    };
    assert_eq!(e.hooks.deliver(&suspended, None, 1).await, vec![]);
    let seen = server.seen();
    assert_eq!(seen[1].header("x-palaver-delivery"), Some("account:1:5eed"), "{seen:?}");
    let body: Value = serde_json::from_slice(&seen[1].body).unwrap();
    assert_eq!((body["change"].as_str(), body["by_operator"].as_bool()), (Some("suspended"), Some(true)), "{body}");
    assert_eq!((body["id"].as_str(), body["actor"].as_str()), (Some("5eed"), Some(ACTOR.to_string().as_str())));
    // A receiver that fails makes the delivery fail, named by the plugin.
    let failing = json!({ "url": server.url("/fail"), "secret": "s3cret" });
    e.registry.set_settings(TenantId(1), "webhook", Some(failing)).unwrap();
    let failed = e.hooks.deliver(&event("grpHooked"), None, 2).await;
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0].plugin, "webhook");
    assert!(failed[0].reason.contains("500"), "{failed:?}");
}

#[test]
fn a_component_importing_http_needs_the_grant() {
    let e = env();
    let refused = e.load_edited("http-probe-1.0.0", |m| {
        m.grants.retain(|g| *g != Grant::Http);
        m.http = None;
    });
    let err = match refused {
        Err(RegistryError::Load(e)) => e,
        other => panic!("expected a load error, got {other:?}"),
    };
    assert!(matches!(&err, LoadError::NotGranted(m) if m.contains("palaver:plugin/http@")), "{err}");
    // The grant without a list, or a list without the grant, is refused before the component is looked at.
    let no_list = e.load_edited("http-probe-1.0.0", |m| m.http = None).unwrap_err().to_string();
    assert!(no_list.contains("needs an [http] section"), "{no_list}");
    let no_grant =
        e.load_edited("http-probe-1.0.0", |m| m.grants.retain(|g| *g != Grant::Http)).unwrap_err().to_string();
    assert!(no_grant.contains("not in grants"), "{no_grant}");
}
