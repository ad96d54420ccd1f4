//! Tinode's out-of-band files over real HTTP: `POST /v0/file/u/` as the SDK's `LargeFileHelper` sends it
//! (multipart, `X-Tinode-APIKey` + `X-Tinode-Auth: Token …`), `GET`/`HEAD /v0/file/s/<id>.<ext>` with the
//! header or the query form of the credentials, ranges, validators, the refusals with their ctrl codes, and an
//! attachment opening a file to the other party of a conversation. On the embedded default (SQLite, files under
//! the data directory), and on two nodes sharing MariaDB + Redis and an S3 bucket (SeaweedFS, which
//! `scripts/lib/services.sh` starts; `PALAVER_SKIP_S3=1` skips that test).

mod common;

use common::files::{get, header, upload};
use common::{Client, KEY};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn files_round_trip_over_http_on_the_embedded_store() {
    let dir = tempfile::tempdir().unwrap();
    let node = common::start(dir.path(), &[("PALAVER_FILES__MAX_UPLOAD_SIZE", "65536")]).await;
    let addr = node.addr();
    let mut alice = Client::connect(addr).await;
    let (_, alice_token) = alice.signup("files-alice").await;
    let mut bob = Client::connect(addr).await;
    let (bob_id, bob_token) = bob.signup("files-bob").await;
    let hi = Client::connect(addr).await.req("hi", json!({ "ver": "0.25.3" })).await;
    assert_eq!(hi["params"]["maxFileUploadSize"], 65536, "{hi}");

    let photo: Vec<u8> = (0..40_000u32).map(|i| (i % 251) as u8).collect();
    let (status, reply) = upload(addr, &alice_token, "cat photo.jpg", "image/jpeg", &photo).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["ctrl"]["code"], 200);
    assert_eq!(reply["ctrl"]["id"], "f1", "the form's id is echoed");
    let url = reply["ctrl"]["params"]["url"].as_str().unwrap().to_owned();
    assert!(url.starts_with("/v0/file/s/") && url.ends_with(".jpg"), "{url}");
    let bytes_on_disk: u64 = walk(&dir.path().join("files")).iter().map(|p| std::fs::metadata(p).unwrap().len()).sum();
    assert_eq!(bytes_on_disk, 40_000, "the bytes are under the data directory");

    // The uploader reads it back, with the headers a browser needs.
    let resp = get(addr, &url, Some(&alice_token), &[]).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(header(&resp, "content-type"), "image/jpeg");
    assert_eq!(header(&resp, "accept-ranges"), "bytes");
    assert_eq!(header(&resp, "x-content-type-options"), "nosniff");
    assert_eq!(header(&resp, "content-disposition"), "inline; filename*=UTF-8''cat%20photo.jpg");
    let etag = header(&resp, "etag");
    assert_eq!(etag.len(), 66, "a quoted SHA-256: {etag}");
    assert_eq!(resp.bytes().await.unwrap().as_ref(), &photo[..]);

    // The query form of the credentials (`authorizeURL`), as an attachment (`asatt`).
    let query = format!("{url}?apikey={KEY}&auth=token&secret={}&asatt=1", urlencode(&alice_token));
    let resp = reqwest::get(format!("http://{addr}{query}")).await.unwrap();
    assert_eq!(resp.status(), 200);
    assert!(header(&resp, "content-disposition").starts_with("attachment;"));

    // A range, a range past the end, a revalidation, a HEAD.
    let resp = get(addr, &url, Some(&alice_token), &[("Range", "bytes=100-199")]).await;
    assert_eq!(resp.status(), 206);
    assert_eq!(header(&resp, "content-range"), "bytes 100-199/40000");
    assert_eq!(resp.bytes().await.unwrap().as_ref(), &photo[100..200]);
    let resp = get(addr, &url, Some(&alice_token), &[("Range", "bytes=40000-")]).await;
    assert_eq!(resp.status(), 416);
    assert_eq!(header(&resp, "content-range"), "bytes */40000");
    let resp = get(addr, &url, Some(&alice_token), &[("If-None-Match", &etag)]).await;
    assert_eq!(resp.status(), 304);
    let resp = reqwest::Client::new()
        .head(format!("http://{addr}{url}"))
        .header("X-Tinode-APIKey", KEY)
        .header("X-Tinode-Auth", format!("Token {alice_token}"))
        .send()
        .await
        .unwrap();
    assert_eq!((resp.status().as_u16(), header(&resp, "content-length")), (200, "40000".to_owned()));

    // Refusals, each with its ctrl code as the status and the body.
    let resp = get(addr, &url, Some(&bob_token), &[]).await;
    assert_eq!(resp.status(), 404, "Bob has no message naming it yet");
    let resp = get(addr, &url, None, &[]).await;
    assert_eq!(resp.status(), 401);
    assert_eq!(resp.json::<Value>().await.unwrap()["ctrl"]["code"], 401);
    let resp = get(addr, &url, Some("not-a-token"), &[]).await;
    assert_eq!(resp.status(), 401);
    let resp = reqwest::Client::new()
        .get(format!("http://{addr}{url}"))
        .header("X-Tinode-APIKey", "wrong")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    let (status, reply) = upload(addr, &alice_token, "big.bin", "application/octet-stream", &vec![7u8; 70_000]).await;
    assert_eq!((status, reply["ctrl"]["code"].clone()), (413, json!(413)), "{reply}");
    let resp = reqwest::Client::new()
        .post(format!("http://{addr}/v0/file/u/"))
        .header("X-Tinode-APIKey", KEY)
        .header("X-Tinode-Auth", format!("Token {alice_token}"))
        .body("not a form")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let resp = reqwest::Client::new()
        .request(reqwest::Method::OPTIONS, format!("http://{addr}/v0/file/u/"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 204);
    assert_eq!(header(&resp, "access-control-allow-origin"), "*");

    // Alice sends it to Bob as an attachment: now Bob reads it too.
    assert_eq!(alice.req("sub", json!({ "topic": bob_id })).await["code"], 200);
    let id = "att1";
    alice
        .send_raw(
            json!({ "pub": { "id": id, "topic": bob_id, "content": "a cat" }, "extra": { "attachments": [url] } })
                .to_string(),
        )
        .await;
    while let Some(f) = alice.next().await {
        if f["ctrl"]["id"] == id {
            assert_eq!(f["ctrl"]["code"], 202, "{f}");
            break;
        }
    }
    let resp = get(addr, &url, Some(&bob_token), &[]).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.bytes().await.unwrap().len(), 40_000);

    let (_, metrics) = common::http(addr, "GET", "/metrics", "").await;
    assert_eq!(common::sample(&metrics, "palaver_files_uploaded_total"), Some(1.0), "only the accepted upload");
    assert_eq!(common::sample(&metrics, "palaver_file_upload_bytes_total"), Some(40_000.0));
    node.shutdown().await;
}

/// Two nodes of a cluster share the bucket: a file uploaded through one is served by the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cluster_serves_files_from_its_shared_bucket() {
    if std::env::var("PALAVER_SKIP_S3").is_ok_and(|v| v == "1") {
        eprintln!("notice: PALAVER_SKIP_S3=1, skipping an S3 test");
        return;
    }
    let mysql = std::env::var("PALAVER_TEST_MYSQL_ADDR").unwrap_or_else(|_| "127.0.0.1:3306".into());
    let redis = std::env::var("PALAVER_TEST_REDIS_ADDR").unwrap_or_else(|_| "127.0.0.1:6379".into());
    let endpoint = std::env::var("PALAVER_TEST_S3_ENDPOINT").unwrap_or_else(|_| "http://127.0.0.1:8333".into());
    let tag = format!("pt_files_{:08x}", rand::random::<u32>());
    let url = format!("mysql://palaver:palaver@{mysql}/{tag}_ctl");
    let redis_cfg = format!("{{ addr = \"{redis}\", key_prefix = \"{tag}\" }}");
    let prefix = format!("{tag}_t_");
    let token_key = "c2hhcmVkLXRva2VuLWtleS1mb3ItdGhlLWZpbGVzLXRlc3QtY2x1c3Rlcg==";
    let env = |node: &'static str| {
        vec![
            ("PALAVER_STORE__KIND", "mysql".to_owned()),
            ("PALAVER_STORE__URL", url.clone()),
            ("PALAVER_STORE__TENANT_DATABASE_PREFIX", prefix.clone()),
            ("PALAVER_STORE_CONFIG__REDIS", redis_cfg.clone()),
            ("PALAVER_AUTH__TOKEN_KEY", token_key.to_owned()),
            ("PALAVER_SERVER__NODE_ID", node.to_owned()),
            ("PALAVER_FILES__STORE", "s3".to_owned()),
            ("PALAVER_FILES__S3__ENDPOINT", endpoint.clone()),
            ("PALAVER_FILES__S3__BUCKET", "palaver-test".to_owned()),
            ("PALAVER_FILES__S3__ACCESS_KEY_ID", "palaver".to_owned()),
            ("PALAVER_FILES__S3__SECRET_ACCESS_KEY", "palaver-secret".to_owned()),
        ]
    };
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let start = |dir: &std::path::Path, vars: Vec<(&'static str, String)>| {
        let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
        common::config(dir, &vars)
    };
    let a = palaver_server::wiring::start(start(d1.path(), env("files-a"))).await.expect("node a (MariaDB, Redis up?)");
    let b = palaver_server::wiring::start(start(d2.path(), env("files-b"))).await.expect("node b");
    let mut alice = Client::connect(a.addr()).await;
    let (_, token) = alice.signup("s3-alice").await;
    let bytes: Vec<u8> = (0..6 * 1024 * 1024u32).map(|i| (i % 253) as u8).collect();
    let (status, reply) = upload(a.addr(), &token, "big.bin", "application/octet-stream", &bytes).await;
    assert_eq!(status, 200, "{reply}");
    let path = reply["ctrl"]["params"]["url"].as_str().unwrap().to_owned();
    let resp = get(b.addr(), &path, Some(&token), &[("Range", "bytes=5242870-5242889")]).await;
    assert_eq!(resp.status(), 206, "node b serves node a's upload from the bucket");
    assert_eq!(resp.bytes().await.unwrap().as_ref(), &bytes[5_242_870..5_242_890]);
    let resp = get(b.addr(), &path, Some(&token), &[]).await;
    assert!(resp.bytes().await.unwrap().as_ref() == &bytes[..], "the whole object, byte for byte");
    a.shutdown().await;
    b.shutdown().await;
    common::drop_databases(&tag);
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() { out.extend(walk(&path)) } else { out.push(path) }
    }
    out
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}
