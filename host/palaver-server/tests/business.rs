//! The business plugins as a node runs them: the real friends and governance components deciding `/v1/im/`
//! commands over MariaDB and Redis, on two nodes sharing both; per-tenant settings changing a rule at once; a
//! governance rule changed by loading a new plugin version under traffic; a failing plugin failing the command
//! closed with nothing written. Needs `cargo xtask plugins` to have built `target/plugins`, and MariaDB and
//! Redis (`PALAVER_TEST_MYSQL_ADDR`, `PALAVER_TEST_REDIS_ADDR`).

mod common;

use common::{Client, KEY, config, http_with, plugins_dir};
use palaver_server::wiring::{self, Node};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

const ADMIN: &str = "test-admin-token-0123456789";

fn env_addr(var: &str, default: &str) -> SocketAddr {
    std::env::var(var).unwrap_or_else(|_| default.into()).parse().unwrap()
}

/// A plugins directory holding the built friends and governance plugins.
fn business_plugins() -> tempfile::TempDir {
    plugins_dir(&["friends-0.1.0.", "governance-0.1.0."])
}

/// One node of a cluster named `tag` (its databases and Redis keys), with the plugins in `plugins`.
async fn node(data: &Path, plugins: &Path, tag: &str, id: &str) -> Node {
    let mysql = env_addr("PALAVER_TEST_MYSQL_ADDR", "127.0.0.1:3306");
    let redis = env_addr("PALAVER_TEST_REDIS_ADDR", "127.0.0.1:6379");
    let url = format!("mysql://palaver:palaver@{mysql}/{tag}_ctl");
    let redis_cfg = format!("{{ addr = \"{redis}\", key_prefix = \"{tag}\" }}");
    let prefix = format!("{tag}_t_");
    let dir = plugins.to_string_lossy().into_owned();
    let cfg = config(
        data,
        &[
            ("PALAVER_STORE__KIND", "mysql"),
            ("PALAVER_STORE__URL", &url),
            ("PALAVER_STORE__TENANT_DATABASE_PREFIX", &prefix),
            ("PALAVER_STORE_CONFIG__REDIS", &redis_cfg),
            ("PALAVER_AUTH__TOKEN_KEY", "c2hhcmVkIHRva2VuIGtleSBvZiB0aGUgYnVzaW5lc3MgdGVzdHM="),
            ("PALAVER_LIMITS__RATE_PER_SECOND", "0"),
            // The hot-reload test drives the API as fast as it answers; the per-user API rate is tested apart.
            ("PALAVER_LIMITS__API_RATE_PER_SECOND", "0"),
            ("PALAVER_PLUGINS__DIR", &dir),
            ("PALAVER_PLUGINS__WATCH", "false"),
            ("PALAVER_ADMIN__TOKEN", ADMIN),
            ("PALAVER_SERVER__NODE_ID", id),
        ],
    );
    wiring::start(cfg).await.expect("the node starts (are MariaDB and Redis running?)")
}

fn unique(name: &str) -> String {
    format!("pb_{name}_{:06x}", rand::random::<u32>() & 0xff_ffff)
}

/// A `/v1/im/` call as the user of `token`. The request body and the answer (the result or the error) are
/// checked against the node's own OpenAPI document, so every call of these tests also checks the schemas.
async fn api(addr: SocketAddr, token: &str, method: &str, path: &str, body: Value) -> (u16, Value) {
    let auth = format!("Token {token}");
    let text_body = if body.is_null() { String::new() } else { body.to_string() };
    let headers = [("X-Tinode-APIKey", KEY), ("Authorization", auth.as_str())];
    let (status, text) = http_with(addr, method, &format!("/v1/im{path}"), &headers, &text_body).await;
    let answer = serde_json::from_str(&text).unwrap_or(Value::Null);
    let doc = openapi(addr).await;
    let op = operation(doc, method, path.split('?').next().unwrap_or(path));
    let content = |v: &Value| v["content"]["application/json"]["schema"].clone();
    // A body that does not fit is refused by the gateway (BAD_ARGUMENT), as tests of that refusal show.
    if !body.is_null() && status != 400 {
        conforms(doc, &content(&op["requestBody"]), &body, &format!("request of {method} {path}"));
    }
    let key = if status == 200 { "200".to_owned() } else { "404".to_owned() };
    conforms(doc, &content(&op["responses"][key]), &answer, &format!("{status} of {method} {path}"));
    (status, answer)
}

/// The OpenAPI document the nodes serve, fetched once (every node of these tests serves the same one).
async fn openapi(addr: SocketAddr) -> &'static Value {
    static DOC: tokio::sync::OnceCell<Value> = tokio::sync::OnceCell::const_new();
    DOC.get_or_init(|| async move {
        let (status, text) = http_with(addr, "GET", "/v1/openapi.json", &[], "").await;
        assert_eq!(status, 200);
        serde_json::from_str(&text).unwrap()
    })
    .await
}

/// The documented operation serving `method path`: the template with the most literal segments that fits.
fn operation(doc: &Value, method: &str, path: &str) -> Value {
    let got: Vec<&str> = path.trim_matches('/').split('/').collect();
    let mut best: Option<(usize, &Value)> = None;
    for (template, ops) in doc["paths"].as_object().unwrap() {
        let want: Vec<&str> = template.trim_start_matches("/v1/im").trim_matches('/').split('/').collect();
        let fits = want.len() == got.len() && want.iter().zip(&got).all(|(w, g)| w.starts_with('{') || w == g);
        let literals = want.iter().filter(|w| !w.starts_with('{')).count();
        if let Some(op) = ops.get(method.to_lowercase()).filter(|_| fits)
            && best.is_none_or(|(l, _)| literals > l)
        {
            best = Some((literals, op));
        }
    }
    best.unwrap_or_else(|| panic!("{method} {path} is not documented")).1.clone()
}

/// Fails unless `value` is valid against `schema`, whose `$ref`s point into the document's components.
fn conforms(doc: &Value, schema: &Value, value: &Value, what: &str) {
    if let Err(e) = check(doc, schema, value) {
        panic!("{what} does not fit its schema: {e}: {value}");
    }
}

fn fits(doc: &Value, schema: &Value, value: &Value) -> bool {
    check(doc, schema, value).is_ok()
}

/// Validators are compiled once per schema: the load test below calls the API as fast as it can.
fn check(doc: &Value, schema: &Value, value: &Value) -> Result<(), String> {
    type Validators = std::sync::Mutex<std::collections::HashMap<String, Arc<jsonschema::Validator>>>;
    static VALIDATORS: std::sync::OnceLock<Validators> = std::sync::OnceLock::new();
    let key = schema.to_string();
    let cached = VALIDATORS.get_or_init(Default::default).lock().unwrap().get(&key).cloned();
    let validator = match cached {
        Some(v) => v,
        None => {
            let mut root = schema.clone();
            root["components"] = doc["components"].clone();
            let v = Arc::new(jsonschema::draft202012::new(&root).map_err(|e| format!("bad schema: {e}"))?);
            VALIDATORS.get_or_init(Default::default).lock().unwrap().insert(key, v.clone());
            v
        }
    };
    validator.validate(value).map_err(|e| format!("{e} (at {})", e.instance_path))
}

async fn admin(addr: SocketAddr, method: &str, path: &str, body: Value) -> (u16, Value) {
    let auth = format!("Bearer {ADMIN}");
    let (status, text) = http_with(addr, method, path, &[("Authorization", &auth)], &body.to_string()).await;
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// Sets a plugin's settings for the default tenant on every node (settings are per node, like the plugins).
async fn settings(nodes: &[&Node], plugin: &str, values: Value) {
    for n in nodes {
        let path = format!("/v1/admin/tenants/1/plugins/{plugin}");
        let (status, v) = admin(n.addr(), "PUT", &path, json!({ "settings": values })).await;
        assert_eq!(status, 200, "{v}");
    }
}

/// A signed-up user: the socket client, the user id and the token.
async fn user(addr: SocketAddr, login: &str) -> (Client, String, String) {
    let mut c = Client::connect(addr).await;
    let (uid, token) = c.signup(login).await;
    (c, uid, token)
}

/// Reads the socket until an `{info}` with business event `event` arrives.
async fn wait_info(c: &mut Client, event: &str) -> Value {
    let wait = async {
        while let Some(f) = c.next().await {
            if f["info"]["event"] == event {
                return f["info"].clone();
            }
        }
        panic!("the socket closed before {event}");
    };
    tokio::time::timeout(Duration::from_secs(5), wait).await.unwrap_or_else(|_| panic!("no {event} within 5 s"))
}

fn reason(v: &Value) -> &str {
    v["reason"].as_str().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn friend_rules_come_from_the_plugin_and_hold_across_two_nodes() {
    let (plugins, d1, d2, tag) =
        (business_plugins(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), unique("fr"));
    let n1 = node(d1.path(), plugins.path(), &tag, "n1").await;
    let n2 = node(d2.path(), plugins.path(), &tag, "n2").await;
    let (a1, a2) = (n1.addr(), n2.addr());
    let (mut ca, alice, ta) = user(a1, &format!("{tag}a")).await;
    let (_cb, bob, tb) = user(a1, &format!("{tag}b")).await;
    let (_cc, carol, tc) = user(a2, &format!("{tag}c")).await;
    let (_cd, dave, _) = user(a2, &format!("{tag}d")).await;
    settings(&[&n1, &n2], "friends", json!({ "daily_limit": 2, "p2p_requires_friendship": true })).await;

    let (s, r) = api(a1, &ta, "POST", "/friends/requests", json!({ "to": bob, "message": "hi" })).await;
    assert_eq!((s, r["created"].clone()), (200, json!(true)), "{r}");
    let id = r["request"]["id"].as_i64().unwrap();
    // The schemas `api` checks against are real: a body that differs from the code's types does not fit.
    let doc = openapi(a1).await;
    let op = operation(doc, "POST", "/friends/requests");
    let schema = |v: &Value| v["content"]["application/json"]["schema"].clone();
    let mut bent = r.clone();
    bent["request"]["created"] = json!(12);
    assert!(!fits(doc, &schema(&op["responses"]["200"]), &bent), "a mistyped field");
    assert!(!fits(doc, &schema(&op["requestBody"]), &json!({ "to": bob, "mesage": "typo" })), "an unknown field");
    let (s, e) = api(a1, &ta, "POST", "/friends/requests", json!({ "to": bob, "mesage": "typo" })).await;
    assert_eq!((s, reason(&e)), (400, "BAD_ARGUMENT"), "and the gateway refuses what does not fit: {e}");
    let (s, r) = api(a2, &ta, "POST", "/friends/requests", json!({ "to": bob })).await;
    assert_eq!((s, r["created"].clone(), r["request"]["id"].as_i64()), (200, json!(false), Some(id)), "a repeat");
    let (s, _) = api(a2, &ta, "POST", "/friends/requests", json!({ "to": carol })).await;
    assert_eq!(s, 200);
    let (s, r) = api(a1, &ta, "POST", "/friends/requests", json!({ "to": dave })).await;
    assert_eq!((s, reason(&r)), (429, "FRIEND_REQUEST_LIMIT"), "the tenant's daily limit of two: {r}");
    let long = "x".repeat(201);
    let (s, r) = api(a1, &tb, "POST", "/friends/requests", json!({ "to": dave, "message": long })).await;
    assert_eq!((s, reason(&r)), (400, "MESSAGE_TOO_LONG"));

    // Two accepts of one request race on two nodes: exactly one wins, one friendship exists.
    let path = format!("/friends/requests/{id}/accept");
    let (x, y) = tokio::join!(api(a1, &tb, "POST", &path, Value::Null), api(a2, &tb, "POST", &path, Value::Null));
    let mut codes = [x.0, y.0];
    codes.sort();
    assert_eq!(codes, [200, 409], "{x:?} {y:?}");
    for (addr, token, other) in [(a1, &ta, &bob), (a2, &tb, &alice)] {
        let (_, list) = api(addr, token, "GET", "/friends", Value::Null).await;
        let friends: Vec<&str> =
            list["friends"].as_array().unwrap().iter().map(|f| f["user"].as_str().unwrap()).collect();
        assert_eq!(friends, [other.as_str()]);
    }
    let (s, r) = api(a2, &tb, "POST", "/friends/requests", json!({ "to": alice })).await;
    assert_eq!((s, reason(&r)), (409, "ALREADY_FRIENDS"));

    // A block stops requests both ways, with the same words.
    let (s, _) = api(a1, &tb, "POST", "/blocks", json!({ "user": carol })).await;
    assert_eq!(s, 200);
    let (s, r) = api(a2, &tc, "POST", "/friends/requests", json!({ "to": bob })).await;
    assert_eq!((s, reason(&r)), (403, "BLOCKED"));
    let (s, r) = api(a1, &tb, "POST", "/friends/requests", json!({ "to": carol })).await;
    assert_eq!((s, reason(&r)), (403, "BLOCKED"));
    let (_, blocks) = api(a2, &tb, "GET", "/blocks", Value::Null).await;
    assert_eq!(blocks["blocks"][0]["user"], carol.as_str());
    // The tenant requires friendship for P2P: alice may write to her friend bob, not to dave.
    for peer in [&bob, &dave] {
        assert_eq!(ca.req("sub", json!({ "topic": peer })).await["code"], 200);
    }
    assert_eq!(ca.req("pub", json!({ "topic": bob, "content": "hi friend" })).await["code"], 202);
    let ctrl = ca.req("pub", json!({ "topic": dave, "content": "hi stranger" })).await;
    assert_eq!((ctrl["code"].clone(), ctrl["text"].clone()), (json!(403), json!("FRIENDSHIP_REQUIRED")), "{ctrl}");
    // The friend request reached bob as a stored notification, readable from either node.
    let (_, n) = api(a2, &tb, "GET", "/notifications", Value::Null).await;
    assert!(n["notifications"].as_array().unwrap().iter().any(|x| x["kind"] == "friend_request"), "{n}");
    n1.shutdown().await;
    n2.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn governance_rules_mutes_and_join_approval_across_two_nodes() {
    let (plugins, d1, d2, tag) =
        (business_plugins(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), unique("gv"));
    let n1 = node(d1.path(), plugins.path(), &tag, "n1").await;
    let n2 = node(d2.path(), plugins.path(), &tag, "n2").await;
    let (a1, a2) = (n1.addr(), n2.addr());
    let (mut co, owner, to) = user(a1, &format!("{tag}o")).await;
    let grp = co.req("sub", json!({ "topic": "new1" })).await["topic"].as_str().unwrap().to_owned();
    let (mut cm, m1, tm1) = user(a2, &format!("{tag}m1")).await;
    let (mut cn, m2, tm2) = user(a1, &format!("{tag}m2")).await;
    for c in [&mut cm, &mut cn] {
        assert_eq!(c.req("sub", json!({ "topic": grp })).await["code"], 200);
    }
    settings(&[&n1, &n2], "governance", json!({ "max_admins": 1 })).await;
    let g = |rest: &str| format!("/groups/{grp}{rest}");

    let (s, r) = api(a1, &to, "PUT", &g(&format!("/members/{m1}/role")), json!({ "role": "admin" })).await;
    assert_eq!(s, 200, "{r}");
    let (s, r) = api(a2, &to, "PUT", &g(&format!("/members/{m2}/role")), json!({ "role": "admin" })).await;
    assert_eq!((s, reason(&r)), (409, "ADMIN_LIMIT"), "the tenant's limit of one admin: {r}");
    let (s, r) = api(a1, &tm2, "DELETE", &g(&format!("/members/{m1}")), Value::Null).await;
    assert_eq!((s, reason(&r)), (403, "ADMIN_REQUIRED"), "a member cannot kick: {r}");
    let (s, r) = api(a2, &tm1, "DELETE", &g(&format!("/members/{owner}")), Value::Null).await;
    assert_eq!((s, reason(&r)), (403, "OWNER_PROTECTED"));

    // The admin on node 2 mutes the member on node 1; the member's send is refused there at once.
    assert_eq!(cn.req("pub", json!({ "topic": grp, "content": "before" })).await["code"], 202);
    let (s, r) = api(a2, &tm1, "PUT", &g(&format!("/mutes/{m2}")), json!({ "duration_ms": 60_000 })).await;
    assert_eq!(s, 200, "{r}");
    // Once the member's device hears of the mute (the event follows the invalidation on the same ordered bus),
    // its node refuses the send.
    let info = wait_info(&mut cn, "group.mute.updated").await;
    assert_eq!((info["what"].clone(), info["payload"]["user_id"].clone()), (json!("group"), json!(m2)));
    let ctrl = cn.req("pub", json!({ "topic": grp, "content": "muted" })).await;
    assert_eq!((ctrl["code"].clone(), ctrl["text"].clone()), (json!(403), json!("GROUP_MUTED")), "{ctrl}");
    let (s, r) =
        api(a2, &tm1, "PUT", &g(&format!("/mutes/{m2}")), json!({ "duration_ms": 40i64 * 24 * 3600 * 1000 })).await;
    assert_eq!((s, reason(&r)), (400, "MUTE_TOO_LONG"));
    let (_, members) = api(a1, &to, "GET", &g("/members"), Value::Null).await;
    let row = members["members"].as_array().unwrap().iter().find(|m| m["user"] == m2.as_str()).unwrap().clone();
    assert_eq!(row["muted"], true, "{members}");

    // Join with approval: a plain member cannot decide, an admin can, once.
    let (_, x, tx) = user(a2, &format!("{tag}x")).await;
    let (s, r) = api(a2, &tx, "POST", &g("/join-requests"), json!({ "message": "let me in" })).await;
    assert_eq!((s, r["joined"].clone()), (200, json!(false)), "{r}");
    let id = r["request"]["id"].as_i64().unwrap();
    let approve = g(&format!("/join-requests/{id}/approve"));
    let (s, r) = api(a1, &tm2, "POST", &approve, Value::Null).await;
    assert_eq!((s, reason(&r)), (403, "ADMIN_REQUIRED"));
    let (s, _) = api(a2, &tm1, "POST", &approve, Value::Null).await;
    assert_eq!(s, 200);
    let (s, r) = api(a1, &to, "POST", &approve, Value::Null).await;
    assert_eq!((s, reason(&r)), (409, "REQUEST_NOT_PENDING"));
    let (_, members) = api(a1, &tx, "GET", &g("/members"), Value::Null).await;
    assert_eq!(members["total"], 4, "the approved user is a member: {members}");
    let (_, notes) = api(a2, &tx, "GET", "/notifications", Value::Null).await;
    assert!(notes["notifications"].as_array().unwrap().iter().any(|n| n["kind"] == "join_result"), "{notes}");

    let big = "y".repeat(2001);
    let (s, r) = api(a1, &to, "POST", &g("/announcements"), json!({ "content": big })).await;
    assert_eq!((s, reason(&r)), (413, "ANNOUNCEMENT_TOO_LARGE"));
    let _ = (cm, x);
    n1.shutdown().await;
    n2.shutdown().await;
}

/// The version the rescan `report` says `plugin` now runs.
fn loaded<'a>(report: &'a Value, plugin: &str) -> &'a Value {
    report["loaded"]
        .as_array()
        .and_then(|l| l.iter().find(|p| p["name"] == plugin))
        .map_or(&Value::Null, |p| &p["version"])
}

/// A copy of a built plugin's manifest under a new version, with `edit` applied to its text.
fn new_version(dir: &Path, plugin: &str, from: &str, to: &str, edit: impl Fn(String) -> String) {
    let text = std::fs::read_to_string(dir.join(format!("{plugin}-{from}.toml"))).unwrap();
    let text = text.replacen(&format!("version = \"{from}\""), &format!("version = \"{to}\""), 1);
    std::fs::write(dir.join(format!("{plugin}-{to}.toml")), edit(text)).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_governance_version_changes_the_admin_limit_under_traffic_and_no_call_fails() {
    let (plugins, data, tag) = (business_plugins(), tempfile::tempdir().unwrap(), unique("hr"));
    // The question is whether a swap under traffic fails a call, not how fast a call is: on two busy cores a
    // call starved of CPU past the manifest's 20 ms wall-clock deadline would fail for reasons unrelated to the
    // swap. Fuel still bounds every call.
    let manifest = plugins.path().join("governance-0.1.0.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    assert!(text.contains("deadline_ms = 20\n"), "the manifest's deadline line");
    std::fs::write(&manifest, text.replacen("deadline_ms = 20\n", "deadline_ms = 2000\n", 1)).unwrap();
    let n = node(data.path(), plugins.path(), &tag, "n1").await;
    let addr = n.addr();
    let (mut co, _, to) = user(addr, &format!("{tag}o")).await;
    let grp = co.req("sub", json!({ "topic": "new1" })).await["topic"].as_str().unwrap().to_owned();
    let mut members = Vec::new();
    for i in 0..3 {
        let (mut c, uid, _) = user(addr, &format!("{tag}m{i}")).await;
        assert_eq!(c.req("sub", json!({ "topic": grp })).await["code"], 200);
        members.push((c, uid));
    }
    // Three callers each toggle one member between admin and member; the default rule (five admins) never
    // refuses, the new version's (one admin) must.
    let swap_started: Arc<std::sync::Mutex<Option<Instant>>> = Arc::default();
    let swapped: Arc<std::sync::Mutex<Option<Instant>>> = Arc::default();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut tasks = Vec::new();
    for (_, uid) in &members {
        let (grp, uid, to, stop) = (grp.clone(), uid.clone(), to.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            let mut log = Vec::new();
            let mut i = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let role = if i.is_multiple_of(2) { "admin" } else { "member" };
                let path = format!("/groups/{grp}/members/{uid}/role");
                let (s, r) = api(addr, &to, "PUT", &path, json!({ "role": role })).await;
                log.push((Instant::now(), s, reason(&r).to_owned()));
                i += 1;
            }
            log
        }));
    }
    tokio::time::sleep(Duration::from_millis(800)).await;
    new_version(plugins.path(), "governance", "0.1.0", "0.2.0", |t| {
        t.replace("default = 5\ndescription = \"The most admins", "default = 1\ndescription = \"The most admins")
            .replace("result = { max_admins = 5 }", "result = { max_admins = 1 }")
    });
    *swap_started.lock().unwrap() = Some(Instant::now());
    let (s, report) = admin(addr, "POST", "/v1/admin/plugins/rescan", Value::Null).await;
    *swapped.lock().unwrap() = Some(Instant::now());
    assert_eq!(s, 200, "{report}");
    assert_eq!(loaded(&report, "governance"), "0.2.0", "{report}");
    tokio::time::sleep(Duration::from_millis(800)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (started, done) = (swap_started.lock().unwrap().unwrap(), swapped.lock().unwrap().unwrap());
    let (mut before, mut after, mut limited) = (0, 0, 0);
    let (_, listing) = admin(addr, "GET", "/v1/admin/plugins", Value::Null).await;
    for t in tasks {
        for (at, status, why) in t.await.unwrap() {
            let ok = status == 200 || (status == 409 && why == "ADMIN_LIMIT");
            assert!(ok, "no call fails: {status} {why}; the plugins: {listing}");
            if at < started {
                assert_eq!(status, 200, "the old rule allows five admins");
                before += 1;
            } else if at > done {
                after += 1;
                limited += usize::from(status == 409);
            }
        }
    }
    assert!(before > 10 && after > 10, "traffic on both sides of the swap: {before} before, {after} after");
    assert!(limited > 0, "the new rule (one admin) refuses grants after the swap");
    let _ = members;
    n.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_plugin_fails_the_command_closed_and_writes_nothing() {
    let (plugins, data, tag) = (business_plugins(), tempfile::tempdir().unwrap(), unique("fc"));
    let n = node(data.path(), plugins.path(), &tag, "n1").await;
    let addr = n.addr();
    let (_ca, _, ta) = user(addr, &format!("{tag}a")).await;
    let (_cb, bob, _) = user(addr, &format!("{tag}b")).await;
    // A version that runs out of fuel on every call (and so carries no fixtures, which would refuse it); with no
    // allowance per KiB of arguments either.
    new_version(plugins.path(), "friends", "0.1.0", "0.1.1", |t| {
        let t = t
            .replace("fuel = 2_000_000", "fuel = 10\nfuel_per_kib = 0")
            .replace("fuel = 2000000", "fuel = 10\nfuel_per_kib = 0");
        t.split("[[fixtures]]").next().unwrap().to_owned()
    });
    let (s, report) = admin(addr, "POST", "/v1/admin/plugins/rescan", Value::Null).await;
    assert_eq!((s, loaded(&report, "friends").clone()), (200, json!("0.1.1")), "{report}");
    let (s, r) = api(addr, &ta, "POST", "/friends/requests", json!({ "to": bob })).await;
    assert_eq!((s, reason(&r)), (503, "PLUGIN_UNAVAILABLE"), "{r}");
    let (s, _) = admin(addr, "POST", "/v1/admin/plugins/friends/rollback", Value::Null).await;
    assert_eq!(s, 200);
    let (s, out) = api(addr, &ta, "GET", "/friends/requests?box=outgoing", Value::Null).await;
    assert_eq!((s, out["requests"].as_array().map(Vec::len)), (200, Some(0)), "nothing was written: {out}");
    let (s, _) = api(addr, &ta, "POST", "/friends/requests", json!({ "to": bob })).await;
    assert_eq!(s, 200, "the old version runs again");
    n.shutdown().await;
}
