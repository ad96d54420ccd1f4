//! Files through the service: who may read an upload (its uploader, readers of a topic whose message references
//! it, everyone for an avatar), ranges, the bounds of an upload, and the collection of unreferenced uploads.

mod harness;

use futures_util::StreamExt;
use harness::{Client, service_with};
use palaver_core::ports::{BlobError, ByteStream};
use palaver_core::{TenantId, UserId};
use palaver_service::admin::{AdminCommand, Outcome};
use palaver_service::{ByteRange, Service, ServiceConfig, ServiceError, UploadMeta, file_url};
use serde_json::json;
use std::time::Duration;

const T: TenantId = TenantId::DEFAULT;

fn body(bytes: &'static [u8]) -> ByteStream {
    Box::pin(futures_util::stream::iter(bytes.chunks(3).map(|c| Ok(bytes::Bytes::from_static(c)))))
}

fn meta(name: &str, mime: &str) -> UploadMeta {
    UploadMeta { name: name.into(), mime: mime.into() }
}

async fn user_of(svc: &Service, c: &Client) -> UserId {
    svc.authenticate_token(T, &c.token).await.expect("a valid token")
}

/// Reads a file as `user`, whole or by range: its bytes, or the refusal.
async fn read(svc: &Service, user: UserId, id: &str, range: Option<ByteRange>) -> Result<Vec<u8>, ServiceError> {
    let mut d = svc.open_file(T, user, id, range).await?;
    let mut out = Vec::new();
    while let Some(chunk) = d.read.body.next().await {
        out.extend_from_slice(&chunk.expect("a chunk"));
    }
    Ok(out)
}

async fn people(svc: &Service) -> (Client, Client, Client) {
    let mut alice = Client::connect(svc);
    alice.signup("alice", "alice-pass").await;
    let mut bob = Client::connect(svc);
    bob.signup("bob", "bob-pass").await;
    let mut carol = Client::connect(svc);
    carol.signup("carol", "carol-pass").await;
    (alice, bob, carol)
}

#[tokio::test]
async fn a_file_is_read_by_its_uploader_and_the_readers_of_a_topic_that_references_it() {
    let svc = service_with(ServiceConfig::default());
    let (mut alice, bob, carol) = people(&svc).await;
    let (a, b, c) = (user_of(&svc, &alice).await, user_of(&svc, &bob).await, user_of(&svc, &carol).await);
    let file = svc.upload_file(T, a, meta("hello.txt", "text/plain"), body(b"hello, world")).await.unwrap();
    assert_eq!((file.size, file.mime.as_str(), file.name.as_str()), (12, "text/plain", "hello.txt"));
    assert_eq!(file.sha256, "09ca7e4eaa6e8ae9c7d261167129184883644d07dfba7cbfbc4c8a2e08360d5b");
    let url = file_url(&file);
    assert_eq!(url, format!("/v0/file/s/{}.txt", file.id));
    assert_eq!(read(&svc, a, &file.id, None).await.unwrap(), b"hello, world");
    // Nobody else has it yet: not found, as for a file that does not exist.
    assert_eq!(read(&svc, b, &file.id, None).await, Err(ServiceError::NotFound));

    // Alice sends it to Bob: the P2P topic's readers may read it; Carol still may not.
    alice.sub(&bob.user).await;
    let id = alice.id();
    let frames = alice
        .send(json!({ "pub": { "id": id, "topic": bob.user, "content": "see attached" },
                      "extra": { "attachments": [url, "/v0/file/s/AAAAAAAAAAAAAAAAAAAAAA.png", "https://x.example/y"] } }))
        .await;
    assert!(frames.iter().any(|f| f["ctrl"]["id"] == json!(id) && f["ctrl"]["code"] == 202), "{frames:?}");
    assert_eq!(read(&svc, b, &file.id, None).await.unwrap(), b"hello, world");
    assert_eq!(read(&svc, c, &file.id, None).await, Err(ServiceError::NotFound));

    // Ranges: bounded, open, suffix; one past the end is refused with the size.
    assert_eq!(read(&svc, b, &file.id, Some(ByteRange::Bounded(7, 11))).await.unwrap(), b"world");
    assert_eq!(read(&svc, b, &file.id, Some(ByteRange::From(5))).await.unwrap(), b", world");
    assert_eq!(read(&svc, b, &file.id, Some(ByteRange::Suffix(5))).await.unwrap(), b"world");
    assert_eq!(
        read(&svc, b, &file.id, Some(ByteRange::From(12))).await,
        Err(ServiceError::RangeNotSatisfiable { size: 12 })
    );
}

#[tokio::test]
async fn a_reference_grants_nothing_its_author_could_not_read() {
    let svc = service_with(ServiceConfig::default());
    let (alice, mut bob, carol) = people(&svc).await;
    let (a, c) = (user_of(&svc, &alice).await, user_of(&svc, &carol).await);
    let file = svc.upload_file(T, a, meta("secret.pdf", "application/pdf"), body(b"%PDF-secret")).await.unwrap();
    // Bob learned the URL somehow, but may not read the file: naming it to Carol gives her nothing.
    bob.sub(&carol.user).await;
    let id = bob.id();
    bob.send(json!({ "pub": { "id": id, "topic": carol.user, "content": "look" },
                     "extra": { "attachments": [file_url(&file)] } }))
        .await;
    assert_eq!(read(&svc, c, &file.id, None).await, Err(ServiceError::NotFound));
}

#[tokio::test]
async fn an_avatar_is_readable_by_every_user_and_outlives_collection() {
    let svc = service_with(ServiceConfig {
        files: palaver_service::FilesConfig { gc_grace: Duration::ZERO, ..Default::default() },
        ..ServiceConfig::default()
    });
    let (mut alice, _bob, carol) = people(&svc).await;
    let (a, c) = (user_of(&svc, &alice).await, user_of(&svc, &carol).await);
    let photo = svc.upload_file(T, a, meta("me.png", "image/png"), body(b"\x89PNG....")).await.unwrap();
    let stray = svc.upload_file(T, a, meta("x.bin", ""), body(b"never sent")).await.unwrap();
    assert_eq!(stray.mime, "application/octet-stream");
    let (ctrl, _) = alice
        .req(
            "set",
            json!({ "topic": "me", "desc": { "public": { "fn": "alice", "photo": { "ref": file_url(&photo) } } } }),
        )
        .await;
    assert_eq!(ctrl["code"], 200, "{ctrl}");
    assert_eq!(read(&svc, c, &photo.id, None).await.unwrap(), b"\x89PNG....");
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert_eq!(svc.collect_files(T, 100).await.unwrap(), 1, "only the stray upload goes");
    assert_eq!(read(&svc, a, &stray.id, None).await, Err(ServiceError::NotFound));
    assert!(read(&svc, c, &photo.id, None).await.is_ok());
    assert_eq!(svc.collect_files(T, 100).await.unwrap(), 0);
}

#[tokio::test]
async fn uploads_are_bounded_in_size_type_and_rate() {
    let svc = service_with(ServiceConfig {
        files: palaver_service::FilesConfig {
            max_upload_size: 10,
            allowed_mime: vec!["image/*".into(), "text/plain".into()],
            max_uploads_per_hour: 2,
            ..Default::default()
        },
        ..ServiceConfig::default()
    });
    let (alice, _, _) = people(&svc).await;
    let a = user_of(&svc, &alice).await;
    let big = svc.upload_file(T, a, meta("big.txt", "text/plain"), body(b"0123456789A")).await;
    assert!(matches!(big, Err(ServiceError::TooLarge(_))), "{big:?}");
    let html = svc.upload_file(T, a, meta("x.html", "text/html"), body(b"<p>")).await;
    assert!(matches!(html, Err(ServiceError::Policy(_))), "{html:?}");
    // A client that goes away mid-upload leaves nothing, and is told why.
    let cut: ByteStream = Box::pin(futures_util::stream::iter([
        Ok(bytes::Bytes::from_static(b"abc")),
        Err(BlobError::Aborted("connection closed".into())),
    ]));
    let broken = svc.upload_file(T, a, meta("a.txt", "text/plain"), cut).await;
    assert!(matches!(broken, Err(ServiceError::Malformed(_))), "{broken:?}");
    svc.upload_file(T, a, meta("a.png", "image/png"), body(b"1")).await.unwrap();
    svc.upload_file(T, a, meta("b.png", "image/png"), body(b"2")).await.unwrap();
    let third = svc.upload_file(T, a, meta("c.png", "image/png"), body(b"3")).await;
    assert!(matches!(third, Err(ServiceError::RateLimited { .. })), "{third:?}");
}

#[tokio::test]
async fn hi_advertises_the_upload_limit() {
    let svc = service_with(ServiceConfig {
        files: palaver_service::FilesConfig { max_upload_size: 12345, ..Default::default() },
        ..ServiceConfig::default()
    });
    let mut c = Client::connect(&svc);
    assert_eq!(c.hi().await["params"]["maxFileUploadSize"], 12345);
    let off = service_with(ServiceConfig {
        files: palaver_service::FilesConfig { enabled: false, ..Default::default() },
        ..ServiceConfig::default()
    });
    let mut c = Client::connect(&off);
    assert_eq!(c.hi().await["params"]["maxFileUploadSize"], 0);
}

/// `file.audit.update` blocks a file: every download answers 451, the sessions attached to a topic that
/// references it and its uploader are told (`file.unavailable`); `clean` serves it again.
#[tokio::test]
async fn an_admin_block_makes_a_file_unavailable_and_tells_its_readers() {
    let svc = service_with(ServiceConfig::default());
    let (mut alice, mut bob, _) = people(&svc).await;
    let (a, b) = (user_of(&svc, &alice).await, user_of(&svc, &bob).await);
    let file = svc.upload_file(T, a, meta("x.png", "image/png"), body(b"PNGDATA")).await.unwrap();
    alice.sub(&bob.user).await;
    bob.sub(&alice.user).await;
    let id = alice.id();
    alice
        .send(json!({ "pub": { "id": id, "topic": bob.user, "content": "pic" }, "extra": { "attachments": [file_url(&file)] } }))
        .await;
    bob.drain();
    alice.drain();
    let audit = |status: &str, command_id: &str| AdminCommand {
        command_id: command_id.into(),
        kind: "file.audit.update".into(),
        payload: json!({ "file": file.id, "status": status, "reason": "malware" }),
        ..AdminCommand::default()
    };
    let Outcome::Ran(result) = svc.execute_admin_command(T, &audit("blocked", "b1")).await else { panic!("ran") };
    assert_eq!(
        (result.status.as_str(), result.detail["topics_notified"].as_u64()),
        ("succeeded", Some(1)),
        "{result:?}"
    );
    let (info, _) = bob.wait_for("file.unavailable", |f| f["info"]["event"] == "file.unavailable").await;
    assert_eq!(info["info"]["topic"], alice.user, "on the P2P topic, named as Bob names it");
    assert_eq!(info["info"]["payload"]["file"], json!(file.id));
    assert_eq!(info["info"]["payload"]["reason"], "malware");
    alice.wait_for("file.unavailable for the uploader", |f| f["info"]["event"] == "file.unavailable").await;
    assert_eq!(read(&svc, b, &file.id, None).await, Err(ServiceError::FileBlocked));
    assert_eq!(read(&svc, a, &file.id, None).await, Err(ServiceError::FileBlocked), "the uploader too");
    let Outcome::Ran(result) = svc.execute_admin_command(T, &audit("clean", "c1")).await else { panic!("ran") };
    assert_eq!(result.status, "succeeded");
    assert_eq!(read(&svc, b, &file.id, None).await.unwrap(), b"PNGDATA");
}

/// A recalled message takes its files with it: the peer can no longer read them through it, and once nothing
/// references them they are collected.
#[tokio::test]
async fn a_recalled_attachment_is_no_longer_readable_and_is_collected() {
    let svc = service_with(ServiceConfig {
        files: palaver_service::FilesConfig { gc_grace: Duration::ZERO, ..Default::default() },
        ..ServiceConfig::default()
    });
    let (mut alice, bob, _) = people(&svc).await;
    let (a, b) = (user_of(&svc, &alice).await, user_of(&svc, &bob).await);
    let file = svc.upload_file(T, a, meta("oops.jpg", "image/jpeg"), body(b"JPEG")).await.unwrap();
    alice.sub(&bob.user).await;
    let id = alice.id();
    let frames = alice
        .send(json!({ "pub": { "id": id, "topic": bob.user, "content": "wrong chat" }, "extra": { "attachments": [file_url(&file)] } }))
        .await;
    let seq = frames
        .iter()
        .find_map(|f| (f["ctrl"]["id"] == json!(id)).then(|| f["ctrl"]["params"]["seq"].as_i64()))
        .flatten();
    let seq = seq.expect("the message is stored");
    assert!(read(&svc, b, &file.id, None).await.is_ok());
    let (ctrl, _) =
        alice.req("del", json!({ "topic": bob.user, "what": "msg", "delseq": [{ "low": seq }], "hard": true })).await;
    assert_eq!(ctrl["code"], 200, "{ctrl}");
    assert_eq!(read(&svc, b, &file.id, None).await, Err(ServiceError::NotFound), "gone with its message");
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert_eq!(svc.collect_files(T, 10).await.unwrap(), 1);
    assert_eq!(read(&svc, a, &file.id, None).await, Err(ServiceError::NotFound));
}

/// A tenant's own limits: lower the upload size and narrow the types for its users only; `null` restores the
/// node's; an upload size above the node's is held to it; settings that cannot work are refused.
#[tokio::test]
async fn a_tenant_sets_its_own_file_limits() {
    let svc = service_with(ServiceConfig {
        files: palaver_service::FilesConfig { max_upload_size: 100, ..Default::default() },
        ..ServiceConfig::default()
    });
    let (alice, _, _) = people(&svc).await;
    let a = user_of(&svc, &alice).await;
    let got = svc.set_file_settings(T, &json!({ "max_upload_size": 5, "allowed_mime": ["image/*"] })).await.unwrap();
    assert_eq!((got.max_upload_size, got.allowed_mime.clone()), (5, vec!["image/*".to_owned()]));
    let big = svc.upload_file(T, a, meta("a.png", "image/png"), body(b"123456")).await;
    assert!(matches!(big, Err(ServiceError::TooLarge(_))), "{big:?}");
    let text = svc.upload_file(T, a, meta("a.txt", "text/plain"), body(b"1")).await;
    assert!(matches!(text, Err(ServiceError::Policy(_))), "{text:?}");
    svc.upload_file(T, a, meta("a.png", "image/png"), body(b"12345")).await.unwrap();

    let got = svc.set_file_settings(T, &json!({ "max_upload_size": 1000, "allowed_mime": null })).await.unwrap();
    assert_eq!(got.max_upload_size, 100, "held to the node's");
    assert!(got.allowed_mime.is_empty() && got.settings.allowed_mime.is_none());
    svc.upload_file(T, a, meta("a.txt", "text/plain"), body(b"123456")).await.unwrap();

    for bad in
        [json!({ "max_upload_size": 0 }), json!({ "allowed_mime": ["Image/PNG"] }), json!({ "colour": 1 }), json!([1])]
    {
        let r = svc.set_file_settings(T, &bad).await;
        assert!(matches!(r, Err(ServiceError::Malformed(_))), "{bad}: {r:?}");
    }
    let got = svc.set_file_settings(T, &json!({ "max_upload_size": null })).await.unwrap();
    assert_eq!(got.settings, palaver_api::bodies::admin::FileSettings::default(), "nothing of its own left");
    assert_eq!(svc.file_settings(TenantId(2)).await.unwrap().max_upload_size, 100, "another tenant keeps the node's");
}
