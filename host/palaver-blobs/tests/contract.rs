//! Runs the blob store contract against both places file bytes live: a temporary directory, and a real
//! S3-compatible server (SeaweedFS, which `scripts/lib/services.sh` starts as `start_seaweedfs`). The S3 cases
//! fail without the server, as the MariaDB and Redis adapters' do; `PALAVER_SKIP_S3=1` skips them.
//! `PALAVER_TEST_S3_ENDPOINT` (default `http://127.0.0.1:8333`), `_BUCKET` (`palaver-test`), `_ACCESS_KEY`
//! (`palaver`) and `_SECRET_KEY` (`palaver-secret`) say where it is.

use palaver_blobs::{ObjectBlobs, S3Config};

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

/// A body of one chunk.
fn one_chunk(bytes: &'static [u8]) -> palaver_core::ports::ByteStream {
    Box::pin(futures_util::stream::iter([Ok(bytes::Bytes::from_static(bytes))]))
}

/// The test bucket, or `None` (after a notice) when the S3 tests are skipped.
fn s3() -> Option<ObjectBlobs> {
    if std::env::var("PALAVER_SKIP_S3").is_ok_and(|v| v == "1") {
        eprintln!("notice: PALAVER_SKIP_S3=1, skipping an S3 test");
        return None;
    }
    let cfg = S3Config {
        endpoint: env_or("PALAVER_TEST_S3_ENDPOINT", "http://127.0.0.1:8333"),
        bucket: env_or("PALAVER_TEST_S3_BUCKET", "palaver-test"),
        region: "us-east-1".into(),
        access_key_id: env_or("PALAVER_TEST_S3_ACCESS_KEY", "palaver"),
        secret_access_key: env_or("PALAVER_TEST_S3_SECRET_KEY", "palaver-secret"),
        virtual_hosted: false,
    };
    Some(ObjectBlobs::s3(&cfg).expect("an S3 client"))
}

mod fs {
    /// A store in a temporary directory that lives as long as the test process (the cases use keys of their
    /// own, so one directory may serve them all).
    fn dir() -> &'static std::path::Path {
        static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
        DIR.get_or_init(|| tempfile::tempdir().expect("a temporary directory")).path()
    }

    palaver_contract::blob_contract_tests!(async { palaver_blobs::ObjectBlobs::local(dir()).expect("a local store") });
}

mod s3 {
    palaver_contract::blob_contract_tests!({
        let Some(store) = super::s3() else { return };
        std::future::ready(store)
    });
}

/// A wrong secret is refused by the server (it checks signatures), and the refusal is `Unavailable`, never
/// a silent success.
#[tokio::test]
async fn s3_refuses_a_wrong_secret() {
    use palaver_core::ports::{BlobError, BlobStore};
    let Some(good) = s3() else { return };
    // The server is there and takes the right secret.
    good.put_blob("1/accepted", one_chunk(b"x")).await.expect("a put with the right secret");
    good.delete_blob("1/accepted").await.unwrap();
    let cfg = S3Config {
        endpoint: env_or("PALAVER_TEST_S3_ENDPOINT", "http://127.0.0.1:8333"),
        bucket: env_or("PALAVER_TEST_S3_BUCKET", "palaver-test"),
        region: "us-east-1".into(),
        access_key_id: env_or("PALAVER_TEST_S3_ACCESS_KEY", "palaver"),
        secret_access_key: "not-the-secret".into(),
        virtual_hosted: false,
    };
    let store = ObjectBlobs::s3(&cfg).expect("an S3 client");
    let put = store.put_blob("1/refused", one_chunk(b"x")).await;
    match put {
        Err(BlobError::Unavailable(why)) => assert!(why.contains("403") || why.contains("Forbidden"), "{why}"),
        other => panic!("a wrong secret must be refused: {other:?}"),
    }
}
