//! The hooks of `palaver:plugin@0.1.3` wired through a node, with the example plugins: `access-rules` (world
//! `gate`) refuses a login from outside the tenant's networks and makes new members of a group read-only;
//! `webhook` (world `listener`, outbound HTTP) forwards a sign-up and a stored message to a local receiver as
//! signed POSTs, delivered again after the receiver failed once. Needs `cargo xtask plugins` to have built
//! `target/plugins`.

mod common;

use common::cluster::{Cleanup, node};
use common::webhook::{header, serve};
use common::{Client, http_with, plugins_dir};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const ADMIN: &str = "test-admin-token-plugin-hooks-0123456";
const SECRET: &str = "s3cret-webhook";

async fn admin(addr: SocketAddr, method: &str, path: &str, body: &str) -> (u16, Value) {
    let auth = format!("Bearer {ADMIN}");
    let (status, text) = http_with(addr, method, path, &[("Authorization", &auth)], body).await;
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// A receiver keeping every verified body; with `fail_first` it answers the first request 500, the others 200.
#[derive(Clone, Default)]
struct Receiver {
    fail_first: bool,
    got: Arc<Mutex<Vec<(String, Value)>>>,
}

impl Receiver {
    async fn start(&self) -> SocketAddr {
        let me = self.clone();
        serve(move |head, body| me.check(head, body)).await
    }

    /// Checks the request as the webhook plugin documents it; the status to answer.
    fn check(&self, head: &str, body: &[u8]) -> u16 {
        let header = |name: &str| header(head, name);
        assert!(head.starts_with("POST /hook HTTP/1.1"), "{head}");
        assert_eq!(header("content-type"), "application/json");
        let ts: u64 = header("x-palaver-timestamp").parse().unwrap();
        assert_eq!(header("x-palaver-signature"), palaver_push::signature(SECRET.as_bytes(), ts, body));
        let v: Value = serde_json::from_slice(body).unwrap();
        assert_eq!(header("x-palaver-event"), v["event"].as_str().unwrap());
        let mut got = self.got.lock().unwrap();
        got.push((header("x-palaver-delivery"), v));
        if self.fail_first && got.len() == 1 { 500 } else { 200 }
    }

    /// Waits until `n` requests came.
    async fn wait(&self, n: usize) -> Vec<(String, Value)> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
        loop {
            let got = self.got.lock().unwrap().clone();
            if got.len() >= n {
                return got;
            }
            assert!(tokio::time::Instant::now() < deadline, "{} of {n} requests: {got:?}", got.len());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// The example plugins, the webhook's allow-list set to `hook` by the operator (the packaged manifest lists a
/// placeholder host that resolves nowhere).
fn plugins_with_webhook_to(hook: SocketAddr) -> tempfile::TempDir {
    let plugins = plugins_dir(&["access-rules-", "webhook-"]);
    let manifest = std::fs::read_dir(plugins.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("webhook-") && p.extension().unwrap() == "toml")
        .unwrap();
    let text = std::fs::read_to_string(&manifest).unwrap();
    assert!(text.contains("allow = [\"hooks.example.invalid\"]"), "{text}");
    std::fs::write(&manifest, text.replace("allow = [\"hooks.example.invalid\"]", &format!("allow = [\"{hook}\"]")))
        .unwrap();
    plugins
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gates_refuse_and_narrow_and_a_listener_forwards_events_over_http() {
    let receiver = Receiver { fail_first: true, ..Receiver::default() };
    let hook = receiver.start().await;
    let plugins = plugins_with_webhook_to(hook);
    let data = tempfile::tempdir().unwrap();
    let dir = plugins.path().to_string_lossy().into_owned();
    let node = common::start(data.path(), &[("PALAVER_PLUGINS__DIR", &dir), ("PALAVER_ADMIN__TOKEN", ADMIN)]).await;
    let addr = node.addr();

    // The webhook, on for the tenant: a sign-up reaches the receiver, the second time (the first got a 500).
    let settings = json!({ "enabled": true, "settings": { "url": format!("http://{hook}/hook"), "secret": SECRET } });
    let (status, v) = admin(addr, "PUT", "/v1/admin/tenants/1/plugins/webhook", &settings.to_string()).await;
    assert_eq!(status, 200, "{v}");
    let mut owner = Client::connect(addr).await;
    let (owner_id, owner_token) = owner.signup("owner").await;
    let got = receiver.wait(2).await;
    assert_eq!(got[0].0, got[1].0, "a retry names the same delivery");
    let (_, created) = &got[1];
    assert_eq!(
        (&created["event"], &created["change"], &created["user"]),
        (&json!("account"), &json!("created"), &json!(owner_id))
    );
    assert_eq!((&got[0].1["attempt"], &created["attempt"]), (&json!(1), &json!(2)), "{got:?}");

    // A stored message is forwarded with its content and seq.
    let group = owner.req("sub", json!({ "topic": "new1" })).await["topic"].as_str().unwrap().to_owned();
    let ctrl = owner.req("pub", json!({ "topic": group, "content": "hello hooks" })).await;
    assert_eq!(ctrl["code"], 202, "{ctrl}");
    let got = receiver.wait(3).await;
    let (delivery, msg) = &got[2];
    assert_eq!(
        (&msg["event"], &msg["topic"], &msg["seq"], &msg["content"]),
        (&json!("message"), &json!(group), &json!(1), &json!("hello hooks"))
    );
    assert_eq!(msg["sender"], json!(owner_id));
    assert_eq!(delivery, &format!("message:1:{group}:1"));

    // The gate: logins only from 10.0.0.0/8, new members of the group read-only.
    let rules =
        json!({ "enabled": true, "settings": { "login_allow_cidrs": ["10.0.0.0/8"], "read_only_joins": [group] } });
    let (status, v) = admin(addr, "PUT", "/v1/admin/tenants/1/plugins/access-rules", &rules.to_string()).await;
    assert_eq!(status, 200, "{v}");
    let mut c = Client::connect(addr).await;
    c.req("hi", json!({ "ver": "0.25.3" })).await;
    let secret = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, "owner:secret1");
    // A refused password reads as a wrong one (the gate confirms no guess); a token gets the gate's answer.
    let ctrl = c.req("login", json!({ "scheme": "basic", "secret": secret })).await;
    assert_eq!(ctrl["code"], 401, "a login from 127.0.0.1 is outside 10.0.0.0/8: {ctrl}");
    let ctrl = c.req("login", json!({ "scheme": "token", "secret": owner_token })).await;
    assert_eq!(ctrl["code"], 403, "{ctrl}");
    assert!(ctrl["text"].as_str().unwrap().contains("127.0.0.1"), "{ctrl}");
    let ctrl = c.req("sub", json!({ "topic": "me" })).await;
    assert_eq!(ctrl["code"], 401, "still not logged in: {ctrl}");
    let rules =
        json!({ "enabled": true, "settings": { "login_allow_cidrs": ["127.0.0.0/8"], "read_only_joins": [group] } });
    let (status, v) = admin(addr, "PUT", "/v1/admin/tenants/1/plugins/access-rules", &rules.to_string()).await;
    assert_eq!(status, 200, "{v}");
    let ctrl = c.req("login", json!({ "scheme": "basic", "secret": secret })).await;
    assert_eq!(ctrl["code"], 200, "{ctrl}");

    let mut member = Client::connect(addr).await;
    member.signup("member").await;
    let ctrl = member.req("sub", json!({ "topic": group })).await;
    assert_eq!(ctrl["code"], 200, "{ctrl}");
    let given = ctrl["params"]["acs"]["given"].as_str().unwrap().to_owned();
    assert!(!given.contains('W') && given.contains('R'), "a read-only join: {ctrl}");
    let ctrl = member.req("pub", json!({ "topic": group, "content": "may I?" })).await;
    assert_eq!(ctrl["code"], 403, "{ctrl}");
    // A tenant chooses a gate's failure policy; a listener's is fixed.
    let path = "/v1/admin/tenants/1/plugins/access-rules";
    let (status, v) = admin(addr, "PUT", path, r#"{"failure":{"on-login":"open","before-subscribe":null}}"#).await;
    assert_eq!((status, &v["failure_chosen"]["on-login"]), (200, &json!("open")), "{v}");
    let (status, v) =
        admin(addr, "PUT", "/v1/admin/tenants/1/plugins/webhook", r#"{"failure":{"after-publish":"open"}}"#).await;
    assert_eq!(status, 409, "{v}");
    // The member's sign-up was forwarded too, once.
    let got = receiver.wait(4).await;
    assert_eq!(got[3].1["change"], "created");
    node.shutdown().await;
}

/// Two nodes on MariaDB, Redis and Kafka: events made on either node reach the listener once, whichever node's
/// worker consumes them. `PALAVER_SKIP_KAFKA=1` skips it with a notice when no broker runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_two_kafka_nodes_each_event_reaches_the_listener_once() {
    if std::env::var("PALAVER_SKIP_KAFKA").is_ok_and(|v| v == "1") {
        eprintln!("notice: PALAVER_SKIP_KAFKA=1, skipping a Kafka test");
        return;
    }
    let receiver = Receiver::default();
    let hook = receiver.start().await;
    let plugins = plugins_with_webhook_to(hook);
    let dir = plugins.path().to_string_lossy().into_owned();
    let tag = format!("pph_{:08x}", rand::random::<u32>());
    let _cleanup = Cleanup(tag.clone());
    let extra = [("PALAVER_PLUGINS__DIR", dir.as_str()), ("PALAVER_ADMIN__TOKEN", ADMIN)];
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = node(da.path(), &tag, &format!("{tag}-a"), &extra).await;
    let b = node(db.path(), &tag, &format!("{tag}-b"), &extra).await;
    let settings = json!({ "enabled": true, "settings": { "url": format!("http://{hook}/hook"), "secret": SECRET } });
    let (status, v) = admin(a.addr(), "PUT", "/v1/admin/tenants/1/plugins/webhook", &settings.to_string()).await;
    assert_eq!(status, 200, "{v}");
    // Node B applies the stored choice within a second.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while admin(b.addr(), "GET", "/v1/admin/tenants/1/plugins/webhook", "").await.1["enabled"] != json!(true) {
        assert!(tokio::time::Instant::now() < deadline, "node B never applied the choice");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let mut ann = Client::connect(a.addr()).await;
    let (ann_id, _) = ann.signup(&format!("{tag}a")).await;
    let mut bob = Client::connect(b.addr()).await;
    let (bob_id, _) = bob.signup(&format!("{tag}b")).await;
    let group = ann.req("sub", json!({ "topic": "new1" })).await["topic"].as_str().unwrap().to_owned();
    assert_eq!(bob.req("sub", json!({ "topic": group })).await["code"], 200);
    // One at a time, so the seqs follow the order written here.
    assert_eq!(ann.req("pub", json!({ "topic": group, "content": "from a" })).await["code"], 202);
    assert_eq!(bob.req("pub", json!({ "topic": group, "content": "from b" })).await["code"], 202);
    assert_eq!(ann.req("pub", json!({ "topic": group, "content": "again a" })).await["code"], 202);
    let got = receiver.wait(5).await;
    // A grace for duplicates: a second delivery of any event would come within it.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let got_now = receiver.got.lock().unwrap().clone();
    assert_eq!(got_now.len(), 5, "each event once: {got_now:?}");
    let mut users: Vec<String> = got
        .iter()
        .filter(|(_, v)| v["event"] == "account")
        .map(|(_, v)| v["user"].as_str().unwrap().to_owned())
        .collect();
    users.sort();
    let mut want = vec![ann_id, bob_id];
    want.sort();
    assert_eq!(users, want);
    let mut seqs: Vec<(i64, String)> = got
        .iter()
        .filter(|(_, v)| v["event"] == "message")
        .map(|(_, v)| (v["seq"].as_i64().unwrap(), v["content"].as_str().unwrap().to_owned()))
        .collect();
    seqs.sort();
    assert_eq!(seqs, vec![(1, "from a".to_owned()), (2, "from b".to_owned()), (3, "again a".to_owned())]);
    b.shutdown().await;
    a.shutdown().await;
}
