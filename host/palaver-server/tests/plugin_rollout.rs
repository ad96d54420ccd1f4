//! Plugin releases rolled out through the admin API: an upload is checked (signature, the load gate with its
//! fixtures) and stored once, every node runs it within seconds, a canary's tenants run it first, a rollback is
//! cluster-wide and survives restarts and directory rescans. Uses the `ruled` test plugin (version 1 rejects
//! "alpha", version 2 "beta"); needs `cargo xtask plugins` to have built `target/plugins` (and MariaDB and Redis
//! for the two-node test).

mod common;

use base64::Engine as _;
use common::{Client, http_with, plugins_dir};
use ring::signature::{Ed25519KeyPair, KeyPair};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

const TOKEN: &str = "test-admin-token-rollouts-0123456789";
const BOUNDARY: &str = "----palaver-rollout-boundary";

fn built(file: &str) -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/plugins").join(file))
        .expect("run `cargo xtask plugins` first")
}

/// A release of the `ruled` plugin as built: its manifest and component.
fn release(version: &str) -> (String, Vec<u8>) {
    let manifest = String::from_utf8(built(&format!("ruled-{version}.toml"))).unwrap();
    (manifest, built(&format!("ruled-{version}.wasm")))
}

/// A manifest without the lines the build adds (`component`, `sha256`), so it fits another component.
fn unpinned(manifest: &str) -> String {
    manifest
        .lines()
        .filter(|l| !l.starts_with("component =") && !l.starts_with("sha256 ="))
        .collect::<Vec<_>>()
        .join("\n")
}

fn signed_message(manifest: &str, component: &[u8]) -> String {
    let hex = |b: &[u8]| -> String {
        ring::digest::digest(&ring::digest::SHA256, b).as_ref().iter().map(|x| format!("{x:02x}")).collect()
    };
    format!("palaver-plugin-release:1\n{}\n{}\n", hex(manifest.as_bytes()), hex(component))
}

fn form(fields: &[(&str, &[u8])]) -> Vec<u8> {
    let mut body = Vec::new();
    for (name, value) in fields {
        body.extend_from_slice(format!("--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{name}\"").as_bytes());
        if *name == "component" {
            body.extend_from_slice(b"; filename=\"c.wasm\"\r\nContent-Type: application/wasm");
        }
        body.extend_from_slice(b"\r\n\r\n");
        body.extend_from_slice(value);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{BOUNDARY}--\r\n").as_bytes());
    body
}

async fn upload(addr: SocketAddr, fields: &[(&str, &[u8])]) -> (u16, Value) {
    let resp = reqwest::Client::new()
        .post(format!("http://{addr}/v1/admin/plugins"))
        .header("Authorization", format!("Bearer {TOKEN}"))
        .header("Content-Type", format!("multipart/form-data; boundary={BOUNDARY}"))
        .body(form(fields))
        .send()
        .await
        .unwrap();
    (resp.status().as_u16(), resp.json().await.unwrap_or(Value::Null))
}

/// Uploads release `manifest` + `component`, signed by `key` if given, and expects 200.
async fn release_ok(
    addr: SocketAddr,
    manifest: &str,
    component: &[u8],
    key: Option<&Ed25519KeyPair>,
    extra: &[(&str, &[u8])],
) -> Value {
    let sig = key.map(|k| {
        base64::engine::general_purpose::STANDARD.encode(k.sign(signed_message(manifest, component).as_bytes()))
    });
    let mut fields: Vec<(&str, &[u8])> = vec![("manifest", manifest.as_bytes()), ("component", component)];
    if let Some(s) = &sig {
        fields.push(("signature", s.as_bytes()));
    }
    fields.extend_from_slice(extra);
    let (status, v) = upload(addr, &fields).await;
    assert_eq!(status, 200, "{v}");
    v
}

async fn admin(addr: SocketAddr, method: &str, path: &str, body: &str) -> (u16, Value) {
    let auth = format!("Bearer {TOKEN}");
    let (status, text) = http_with(addr, method, path, &[("Authorization", &auth)], body).await;
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// A new user's group on `addr` with API key `key`, and the client.
async fn group(addr: SocketAddr, key: &str, login: &str) -> (Client, String) {
    let (ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/v0/channels?apikey={key}")).await.unwrap();
    let mut c = Client { ws, n: 0 };
    c.signup(login).await;
    let grp = c.req("sub", json!({ "topic": "new1" })).await["topic"].as_str().unwrap().to_owned();
    (c, grp)
}

async fn publish(c: &mut Client, topic: &str, text: &str) -> u64 {
    c.req("pub", json!({ "topic": topic, "content": text })).await["code"].as_u64().unwrap()
}

/// Which words the group's rule rejects now: `"alpha"` (version 1), `"beta"` (version 2), or both or neither.
async fn rejects(c: &mut Client, grp: &str) -> (bool, bool) {
    (publish(c, grp, "say alpha").await == 422, publish(c, grp, "say beta").await == 422)
}

/// Waits up to `within` for the rule of `version` (1 or 2) to judge the group.
async fn until_version(c: &mut Client, grp: &str, version: u8, within: Duration, what: &str) {
    let want = if version == 1 { (true, false) } else { (false, true) };
    let started = Instant::now();
    loop {
        let now = rejects(c, grp).await;
        if now == want {
            return;
        }
        assert!(started.elapsed() < within, "{what}: version {version} does not judge after {within:?} ({now:?})");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_are_signed_checked_stored_and_a_rollback_outlives_restarts_and_rescans() {
    let key = Ed25519KeyPair::from_seed_unchecked(&[7; 32]).unwrap();
    let public = base64::engine::general_purpose::STANDARD.encode(key.public_key().as_ref());
    let stranger = Ed25519KeyPair::from_seed_unchecked(&[8; 32]).unwrap();
    // The directory holds version 2; uploads bring version 1 in.
    let plugins = plugins_dir(&["ruled-2.0.0."]);
    let data = tempfile::tempdir().unwrap();
    let dir = plugins.path().to_string_lossy().into_owned();
    let env = [
        ("PALAVER_PLUGINS__DIR", dir.as_str()),
        ("PALAVER_ADMIN__TOKEN", TOKEN),
        ("PALAVER_PLUGINS__TRUSTED_KEYS__CI", public.as_str()),
        ("PALAVER_PLUGINS__MAX_UPLOAD_BYTES", "1048576"),
    ];
    let node = common::start(data.path(), &env).await;
    let addr = node.addr();
    let (mut c, grp) = group(addr, common::KEY, "roller").await;
    assert_eq!(rejects(&mut c, &grp).await, (false, true), "the directory's version 2 runs");

    let (v1, c1) = release("1.0.0");
    // This cluster takes signed releases only, by its trusted key, over this very manifest and component.
    let (status, v) = upload(addr, &[("manifest", v1.as_bytes()), ("component", &c1)]).await;
    assert_eq!((status, v["reason"].as_str()), (403, Some("SIGNATURE_INVALID")), "{v}");
    for (signer, message) in [(&stranger, signed_message(&v1, &c1)), (&key, signed_message("other", &c1))] {
        let sig = base64::engine::general_purpose::STANDARD.encode(signer.sign(message.as_bytes()));
        let (status, v) =
            upload(addr, &[("manifest", v1.as_bytes()), ("component", &c1), ("signature", sig.as_bytes())]).await;
        assert_eq!((status, v["reason"].as_str()), (403, Some("SIGNATURE_INVALID")), "{v}");
    }
    let r = release_ok(addr, &v1, &c1, Some(&key), &[]).await;
    assert_eq!(
        (r["name"].as_str(), r["version"].as_str(), r["signed_by"].as_str()),
        (Some("ruled"), Some("1.0.0"), Some("ci"))
    );
    assert_eq!((r["stored"].as_bool(), r["rollout"]["live"].as_str()), (Some(true), Some("1.0.0")), "{r}");
    assert_eq!(rejects(&mut c, &grp).await, (true, false), "the upload runs at once on the node that took it");
    let again = release_ok(addr, &v1, &c1, Some(&key), &[]).await;
    assert_eq!(again["stored"], false, "the same release again stores nothing: {again}");

    // A released version is immutable: another component under 1.0.0 (the same code plus a custom section).
    let mut c1b = c1.clone();
    c1b.extend_from_slice(&[0x00, 0x05, 0x04, b'n', b'o', b't', b'e']);
    let v1b = unpinned(&v1);
    let sig = base64::engine::general_purpose::STANDARD.encode(key.sign(signed_message(&v1b, &c1b).as_bytes()));
    let (status, v) =
        upload(addr, &[("manifest", v1b.as_bytes()), ("component", &c1b), ("signature", sig.as_bytes())]).await;
    assert_eq!((status, v["reason"].as_str()), (409, Some("RELEASE_CONFLICT")), "{v}");
    // So is its manifest: one changed under the same version would be gated here but never run anywhere.
    let v1c = v1.replace("description = ", "description = \"changed\"\n# was: ");
    let sig = base64::engine::general_purpose::STANDARD.encode(key.sign(signed_message(&v1c, &c1).as_bytes()));
    let (status, v) =
        upload(addr, &[("manifest", v1c.as_bytes()), ("component", &c1), ("signature", sig.as_bytes())]).await;
    assert_eq!((status, v["reason"].as_str()), (409, Some("RELEASE_CONFLICT")), "{v}");
    assert!(v["message"].as_str().unwrap().contains("manifest"), "{v}");
    let (status, v) = admin(addr, "PUT", "/v1/admin/plugins/nothing-uploaded/rollout", r#"{"live":null}"#).await;
    assert_eq!((status, v["reason"].as_str()), (404, Some("RELEASE_NOT_FOUND")), "{v}");
    // A release that fails its own fixtures is refused before it is stored.
    let (v2, c2) = release("2.0.0");
    let broken = unpinned(&v2)
        .replace("version = \"2.0.0\"", "version = \"3.0.0\"")
        .replace("reason = \"v2\"", "reason = \"v9\"");
    let sig = base64::engine::general_purpose::STANDARD.encode(key.sign(signed_message(&broken, &c2).as_bytes()));
    let (status, v) =
        upload(addr, &[("manifest", broken.as_bytes()), ("component", &c2), ("signature", sig.as_bytes())]).await;
    assert_eq!((status, v["reason"].as_str()), (422, Some("RELEASE_REFUSED")), "{v}");
    assert!(v["message"].as_str().unwrap().contains("fixture"), "{v}");
    let (status, v) = admin(addr, "PUT", "/v1/admin/plugins/ruled/rollout", r#"{"live":"3.0.0"}"#).await;
    assert_eq!((status, v["reason"].as_str()), (404, Some("RELEASE_NOT_FOUND")), "nothing was stored: {v}");
    // Bounded.
    let big = vec![0u8; 1_100_000];
    let (status, v) = upload(addr, &[("manifest", v1.as_bytes()), ("component", &big)]).await;
    assert_eq!((status, v["reason"].as_str()), (413, Some("UPLOAD_TOO_LARGE")), "{v}");
    let (status, v) = upload(addr, &[("manifest", v1.as_bytes())]).await;
    assert_eq!((status, v["reason"].as_str()), (400, Some("BAD_UPLOAD")), "{v}");
    assert_eq!(rejects(&mut c, &grp).await, (true, false), "no refused upload changed what runs");

    // Version 2 for everyone, then a rollback, which the directory (holding version 2) does not undo.
    release_ok(addr, &v2, &c2, Some(&key), &[]).await;
    assert_eq!(rejects(&mut c, &grp).await, (false, true));
    let (status, v) = admin(addr, "POST", "/v1/admin/plugins/ruled/rollback", "").await;
    assert_eq!((status, v["from"].as_str(), v["to"].as_str()), (200, Some("2.0.0"), Some("1.0.0")), "{v}");
    assert_eq!(rejects(&mut c, &grp).await, (true, false));
    let (status, v) = admin(addr, "POST", "/v1/admin/plugins/rescan", "").await;
    assert_eq!(status, 200, "{v}");
    let (status, v) = admin(addr, "POST", "/v1/admin/plugins/ruled/reload", "").await;
    assert_eq!((status, v["reason"].as_str()), (409, Some("PLUGIN_ACTION_FAILED")), "a file cannot override: {v}");
    assert_eq!(rejects(&mut c, &grp).await, (true, false), "a rescan leaves a rolled-out plugin alone");
    drop(c);
    node.shutdown().await;

    let node = common::start(data.path(), &env).await;
    let addr = node.addr();
    let (mut c, grp) = group(addr, common::KEY, "after-restart").await;
    assert_eq!(rejects(&mut c, &grp).await, (true, false), "the rollback outlives a restart");
    let (status, list) = admin(addr, "GET", "/v1/admin/plugins", "").await;
    assert_eq!(status, 200);
    let ruled = list["plugins"].as_array().unwrap().iter().find(|p| p["name"] == "ruled").unwrap();
    assert_eq!((ruled["version"].as_str(), ruled["managed"].as_bool()), (Some("1.0.0"), Some(true)), "{ruled}");
    assert_eq!(list["rollouts"][0]["live"], "1.0.0", "{list}");
    let mine = list["nodes"].as_array().unwrap().iter().find(|n| n["plugin"] == "ruled").unwrap();
    assert_eq!((mine["live"].as_str(), &mine["error"]), (Some("1.0.0"), &Value::Null), "{mine}");
    // Handed back to the directory: its version 2 runs from the next rescan.
    let (status, _) = admin(addr, "PUT", "/v1/admin/plugins/ruled/rollout", r#"{"live":null}"#).await;
    assert_eq!(status, 200);
    admin(addr, "POST", "/v1/admin/plugins/rescan", "").await;
    assert_eq!(rejects(&mut c, &grp).await, (false, true));
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_upload_reaches_every_node_a_canary_first_and_a_rollback_everywhere() {
    let mysql = std::env::var("PALAVER_TEST_MYSQL_ADDR").unwrap_or_else(|_| "127.0.0.1:3306".into());
    let redis = std::env::var("PALAVER_TEST_REDIS_ADDR").unwrap_or_else(|_| "127.0.0.1:6379".into());
    let tag = format!("pt_roll_{:08x}", rand::random::<u32>());
    let plugins = plugins_dir(&["ruled-2.0.0."]);
    let dir = plugins.path().to_string_lossy().into_owned();
    let (url, prefix) = (format!("mysql://palaver:palaver@{mysql}/{tag}_ctl"), format!("{tag}_t_"));
    let redis_cfg = format!("{{ addr = \"{redis}\", key_prefix = \"{tag}\" }}");
    let store_env = [
        ("PALAVER_STORE__KIND".to_owned(), "mysql".to_owned()),
        ("PALAVER_STORE__URL".to_owned(), url.clone()),
        ("PALAVER_STORE__TENANT_DATABASE_PREFIX".to_owned(), prefix.clone()),
    ];
    // A second tenant, from the CLI as an operator makes one.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["tenant", "create", "staging"])
        .envs(store_env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .env_remove("PALAVER_LOG")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let created: Value = serde_json::from_slice(&out.stdout).unwrap();
    let (staging, staging_key) = (created["id"].as_u64().unwrap(), created["api_key"].as_str().unwrap().to_owned());
    let env = |node: &'static str| {
        let mut vars = store_env.to_vec();
        vars.extend([
            ("PALAVER_STORE_CONFIG__REDIS".to_owned(), redis_cfg.clone()),
            (
                "PALAVER_AUTH__TOKEN_KEY".to_owned(),
                "c2hhcmVkLXRva2VuLWtleS1mb3ItdGhlLXJvbGxvdXQtdGVzdC1jbHVzdGVy".to_owned(),
            ),
            ("PALAVER_SERVER__NODE_ID".to_owned(), node.to_owned()),
            ("PALAVER_PLUGINS__DIR".to_owned(), dir.clone()),
            ("PALAVER_ADMIN__TOKEN".to_owned(), TOKEN.to_owned()),
        ]);
        vars
    };
    let start = |d: &Path, vars: Vec<(String, String)>| {
        let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        common::config(d, &vars)
    };
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = palaver_server::wiring::start(start(d1.path(), env("roll-a"))).await.expect("node a (MariaDB up?)");
    let b = palaver_server::wiring::start(start(d2.path(), env("roll-b"))).await.expect("node b");
    let (mut on_b, grp_b) = group(b.addr(), common::KEY, "tenant1-on-b").await;
    let (mut staged_on_a, grp_staged) = group(a.addr(), &staging_key, "staging-on-a").await;
    assert_eq!(rejects(&mut on_b, &grp_b).await, (false, true), "the directory's version 2 runs");

    // One upload on node a; node b runs it within seconds.
    let (v1, c1) = release("1.0.0");
    release_ok(a.addr(), &v1, &c1, None, &[]).await;
    until_version(&mut on_b, &grp_b, 1, Duration::from_secs(5), "node b after the upload on node a").await;
    until_version(&mut staged_on_a, &grp_staged, 1, Duration::from_secs(5), "the staging tenant").await;

    // Version 2 as a canary for the staging tenant, uploaded on node b: only that tenant runs it, on both nodes.
    let (v2, c2) = release("2.0.0");
    let tenants = staging.to_string();
    let r = release_ok(b.addr(), &v2, &c2, None, &[("tenants", tenants.as_bytes())]).await;
    assert_eq!(
        (r["rollout"]["live"].as_str(), r["rollout"]["canary"]["version"].as_str()),
        (Some("1.0.0"), Some("2.0.0")),
        "{r}"
    );
    until_version(&mut staged_on_a, &grp_staged, 2, Duration::from_secs(5), "the canary tenant on node a").await;
    assert_eq!(rejects(&mut on_b, &grp_b).await, (true, false), "the other tenants keep version 1");

    // Then everyone.
    let (status, v) =
        admin(a.addr(), "PUT", "/v1/admin/plugins/ruled/rollout", r#"{"live":"2.0.0","canary":null}"#).await;
    assert_eq!((status, v["live"].as_str()), (200, Some("2.0.0")), "{v}");
    until_version(&mut on_b, &grp_b, 2, Duration::from_secs(5), "tenant 1 on node b after the promotion").await;

    // A release its own fixtures refuse changes nothing anywhere.
    let broken = unpinned(&v2)
        .replace("version = \"2.0.0\"", "version = \"3.0.0\"")
        .replace("reason = \"v2\"", "reason = \"v9\"");
    let (status, v) = upload(b.addr(), &[("manifest", broken.as_bytes()), ("component", &c2)]).await;
    assert_eq!((status, v["reason"].as_str()), (422, Some("RELEASE_REFUSED")), "{v}");

    // A rollback on node a is a rollback everywhere.
    let (status, v) = admin(a.addr(), "POST", "/v1/admin/plugins/ruled/rollback", "").await;
    assert_eq!((status, v["to"].as_str()), (200, Some("1.0.0")), "{v}");
    until_version(&mut on_b, &grp_b, 1, Duration::from_secs(5), "node b after the rollback on node a").await;
    until_version(&mut staged_on_a, &grp_staged, 1, Duration::from_secs(5), "the staging tenant after it").await;
    // Both nodes say what they run.
    let started = Instant::now();
    loop {
        let (_, list) = admin(b.addr(), "GET", "/v1/admin/plugins", "").await;
        let ran: Vec<(String, Option<String>)> = list["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|n| n["plugin"] == "ruled")
            .map(|n| (n["node"].as_str().unwrap().to_owned(), n["live"].as_str().map(str::to_owned)))
            .collect();
        let want =
            vec![("roll-a".to_owned(), Some("1.0.0".to_owned())), ("roll-b".to_owned(), Some("1.0.0".to_owned()))];
        if ran == want {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(5), "node reports: {ran:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    drop((on_b, staged_on_a));
    a.shutdown().await;
    b.shutdown().await;

    // Restarted, both keep the rollback though their directory holds version 2.
    let a = palaver_server::wiring::start(start(d1.path(), env("roll-a"))).await.expect("node a again");
    let b = palaver_server::wiring::start(start(d2.path(), env("roll-b"))).await.expect("node b again");
    for (node, login) in [(&a, "again-a"), (&b, "again-b")] {
        let (mut c, grp) = group(node.addr(), common::KEY, login).await;
        assert_eq!(rejects(&mut c, &grp).await, (true, false), "{login}: the rollback outlives the restart");
    }
    a.shutdown().await;
    b.shutdown().await;
    common::drop_databases(&tag);
}
