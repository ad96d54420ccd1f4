//! File security on a real node with a real ClamAV: uploads through `/v0/file/u/` are held `pending`, scanned by
//! clamd (`files.scan.clamd`, address from `PALAVER_TEST_CLAMD`, which `scripts/lib/services.sh start_clamd`
//! exports; its database holds the EICAR test file's signature), and settled: the EICAR file answers 451 and its
//! reader hears `file.unavailable` over the WebSocket, the clean one is served. And the `file-policy` plugin
//! (`scan-file`), enabled for a tenant through the admin API, blocking an executable.

mod common;

use common::Client;
use common::files::{get, header, upload};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// The EICAR anti-virus test file, put together at run time so that this source is not itself a match.
fn eicar() -> Vec<u8> {
    let bytes = [r"X5O!P%@AP[4\PZX54(P^)7CC)7}$", "EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*"].concat().into_bytes();
    assert_eq!(bytes.len(), 68);
    bytes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn clamd_blocks_the_eicar_file_and_its_reader_is_told() {
    let clamd = std::env::var("PALAVER_TEST_CLAMD").unwrap_or_else(|_| "tcp://127.0.0.1:13310".into());
    let dir = tempfile::tempdir().unwrap();
    let node = common::start(dir.path(), &[("PALAVER_FILES__SCAN__CLAMD", &clamd)]).await;
    let addr = node.addr();
    let mut alice = Client::connect(addr).await;
    let (alice_id, alice_token) = alice.signup("scan-alice").await;
    let mut bob = Client::connect(addr).await;
    let (bob_id, bob_token) = bob.signup("scan-bob").await;

    let (status, reply) = upload(addr, &alice_token, "eicar.com", "application/octet-stream", &eicar()).await;
    assert_eq!(status, 200, "{reply}");
    let bad = reply["ctrl"]["params"]["url"].as_str().unwrap().to_owned();
    let clean: Vec<u8> = (0..3 * 1024 * 1024u32).map(|i| (i % 249) as u8).collect();
    let (status, reply) = upload(addr, &alice_token, "data.bin", "application/octet-stream", &clean).await;
    assert_eq!(status, 200, "{reply}");
    let good = reply["ctrl"]["params"]["url"].as_str().unwrap().to_owned();

    // Both attach to their conversation, so its events reach Bob's session.
    assert_eq!(alice.req("sub", json!({ "topic": bob_id })).await["code"], 200);
    assert_eq!(bob.req("sub", json!({ "topic": alice_id })).await["code"], 200);
    alice
        .send_raw(
            json!({ "pub": { "id": "att", "topic": bob_id, "content": "two files" }, "extra": { "attachments": [bad, good] } })
                .to_string(),
        )
        .await;
    while let Some(f) = alice.next().await {
        if f["ctrl"]["id"] == "att" {
            assert_eq!(f["ctrl"]["code"], 202, "{f}");
            break;
        }
    }

    // The clean file: pending (503 with a retry hint) until clamd has read it, then served to Bob.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let resp = get(addr, &good, Some(&bob_token), &[]).await;
        match resp.status().as_u16() {
            200 => {
                assert!(resp.bytes().await.unwrap().as_ref() == &clean[..], "the whole file");
                break;
            }
            503 => {
                assert_eq!(header(&resp, "retry-after"), "2");
                let body: Value = resp.json().await.unwrap();
                assert_eq!(body["ctrl"]["code"], 503, "{body}");
            }
            other => panic!("the clean file answered {other}"),
        }
        assert!(Instant::now() < deadline, "the clean file was never served");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // The EICAR file: blocked, announced to Bob's session, 451 for everyone.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut told = None;
    while told.is_none() && Instant::now() < deadline {
        let Some(f) = bob.next_within(Duration::from_secs(1)).await else { continue };
        if f["info"]["event"] == "file.unavailable" {
            told = Some(f);
        }
    }
    let told = told.expect("Bob is told the file is unavailable");
    // Told when the scan blocks it, or, when the scan was quicker than the message, as the message is sent.
    assert_eq!(told["info"]["payload"]["url"], json!(bad), "{told}");
    assert_eq!(told["info"]["payload"]["status"], "blocked");
    for token in [&bob_token, &alice_token] {
        let resp = get(addr, &bad, Some(token), &[]).await;
        assert_eq!(resp.status(), 451);
        assert_eq!(resp.json::<Value>().await.unwrap()["ctrl"]["code"], 451);
    }

    let (_, metrics) = common::http(addr, "GET", "/metrics", "").await;
    assert_eq!(common::sample(&metrics, "palaver_files_scanned_total{outcome=\"blocked\"}"), Some(1.0), "{metrics}");
    assert_eq!(common::sample(&metrics, "palaver_files_scanned_total{outcome=\"clean\"}"), Some(1.0));
    node.shutdown().await;
}

const ADMIN_TOKEN: &str = "file-scan-admin-token-0123456789";

/// The admin API as the tests call it: status and JSON body.
async fn admin(addr: std::net::SocketAddr, method: &str, path: &str, body: &str) -> (u16, Value) {
    let auth = format!("Bearer {ADMIN_TOKEN}");
    let (status, text) = common::http_with(addr, method, path, &[("Authorization", &auth)], body).await;
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// The `file-policy` plugin, once a tenant enables it, makes uploads pending and blocks a Windows executable by
/// its magic bytes whatever its name; a PNG is served. No ClamAV on this node: the plugin alone scans.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_scan_file_plugin_blocks_an_executable_once_the_tenant_enables_it() {
    let plugins = common::plugins_dir(&["file-policy-"]);
    let dir = tempfile::tempdir().unwrap();
    let node = common::start(
        dir.path(),
        &[("PALAVER_PLUGINS__DIR", &plugins.path().to_string_lossy()), ("PALAVER_ADMIN__TOKEN", ADMIN_TOKEN)],
    )
    .await;
    let addr = node.addr();
    let mut alice = Client::connect(addr).await;
    let (_, token) = alice.signup("policy-alice").await;
    let (status, files) = admin(addr, "GET", "/v1/admin/tenants/1/files", "").await;
    assert_eq!((status, files["scanned"].clone()), (200, json!(false)), "off by default: {files}");
    let exe = [b"MZ\x90\x00".as_slice(), &[0u8; 60]].concat();
    let (_, reply) = upload(addr, &token, "holiday.jpg", "image/jpeg", &exe).await;
    let early = reply["ctrl"]["params"]["url"].as_str().unwrap().to_owned();
    assert_eq!(get(addr, &early, Some(&token), &[]).await.status(), 200, "not scanned: clean at once");

    let (status, _) = admin(addr, "PUT", "/v1/admin/tenants/1/plugins/file-policy", r#"{"enabled":true}"#).await;
    assert_eq!(status, 200);
    let (_, files) = admin(addr, "GET", "/v1/admin/tenants/1/files", "").await;
    assert_eq!(files["scanned"], true, "{files}");
    let (_, reply) = upload(addr, &token, "holiday.jpg", "image/jpeg", &exe).await;
    let bad = reply["ctrl"]["params"]["url"].as_str().unwrap().to_owned();
    let png = [b"\x89PNG\r\n\x1a\n".as_slice(), &[7u8; 100]].concat();
    let (_, reply) = upload(addr, &token, "cat.png", "image/png", &png).await;
    let good = reply["ctrl"]["params"]["url"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(20);
    while get(addr, &bad, Some(&token), &[]).await.status() != 451 {
        assert!(Instant::now() < deadline, "the executable was never blocked");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let resp = get(addr, &good, Some(&token), &[]).await;
    assert_eq!(resp.status(), 200);
    assert!(resp.bytes().await.unwrap().as_ref() == &png[..]);
    let (_, metrics) = common::http(addr, "GET", "/metrics", "").await;
    assert_eq!(common::sample(&metrics, "palaver_files_scanned_total{outcome=\"blocked\"}"), Some(1.0), "{metrics}");
    node.shutdown().await;
}
