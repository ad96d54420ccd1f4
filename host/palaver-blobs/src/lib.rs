//! [`ObjectBlobs`]: the file bytes port ([`BlobStore`]) over `object_store`, one type for both places a node
//! keeps file bytes — a directory on the local filesystem (the embedded default, under `data_dir`) and an
//! S3-compatible bucket (the scale-out mode, where every node must read what another stored).
//!
//! **Port.** `put_blob` streams into a buffered writer that switches to a multipart upload past one part, so
//! a file of any size passes through a bounded buffer (`part_size × (concurrency + 1)` at most); `get_blob`
//! streams the object or a byte range of it.
//!
//! **On fault.** A stream that fails while being stored aborts the upload: the local store deletes its staging
//! file, S3 aborts its multipart upload, and no object appears (an object is visible only once whole). A
//! missing object is [`BlobError::NotFound`]; anything the storage itself refuses or cannot be reached for is
//! [`BlobError::Unavailable`], which the service reports as a retryable error.

use futures_util::StreamExt;
use object_store::aws::AmazonS3Builder;
use object_store::buffered::BufWriter;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt};
use palaver_core::ports::{BlobError, BlobRead, BlobStore, ByteStream};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use tokio::io::AsyncWriteExt;

/// Where an S3-compatible bucket is and how to sign for it (`[files.s3]` of the server's configuration).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct S3Config {
    /// `http://127.0.0.1:8333`, or the provider's endpoint; empty for AWS itself (from the region).
    pub endpoint: String,
    pub bucket: String,
    /// The region requests are signed for.
    pub region: String,
    pub access_key_id: String,
    pub secret_access_key: String,
    /// `https://bucket.endpoint/key` rather than `https://endpoint/bucket/key`.
    pub virtual_hosted: bool,
}

impl Default for S3Config {
    fn default() -> Self {
        S3Config {
            endpoint: String::new(),
            bucket: String::new(),
            region: "us-east-1".into(),
            access_key_id: String::new(),
            secret_access_key: String::new(),
            virtual_hosted: false,
        }
    }
}

/// File bytes in an `object_store`: a local directory or an S3-compatible bucket.
#[derive(Debug, Clone)]
pub struct ObjectBlobs {
    store: Arc<dyn ObjectStore>,
    kind: &'static str,
    /// Bytes buffered before a part is written; S3 needs at least 5 MiB per part but the last.
    part_size: usize,
    /// Parts in flight at once.
    concurrency: usize,
}

/// S3's smallest part but the last.
const S3_PART: usize = 5 * 1024 * 1024;
/// The local store writes parts at their offsets, so a small part keeps the buffer small.
const FS_PART: usize = 1024 * 1024;

impl ObjectBlobs {
    /// Files under `dir` (created if missing).
    pub fn local(dir: &std::path::Path) -> Result<Self, BlobError> {
        std::fs::create_dir_all(dir).map_err(|e| BlobError::Unavailable(format!("{}: {e}", dir.display())))?;
        let store = LocalFileSystem::new_with_prefix(dir).map_err(unavailable)?.with_automatic_cleanup(true);
        Ok(ObjectBlobs { store: Arc::new(store), kind: "fs", part_size: FS_PART, concurrency: 2 })
    }

    /// Files in process memory, for tests and the service harness.
    pub fn in_memory() -> Self {
        let store = object_store::memory::InMemory::new();
        ObjectBlobs { store: Arc::new(store), kind: "memory", part_size: FS_PART, concurrency: 2 }
    }

    /// Files in an S3-compatible bucket. Nothing is contacted until the first call.
    pub fn s3(cfg: &S3Config) -> Result<Self, BlobError> {
        let mut builder = AmazonS3Builder::new()
            .with_bucket_name(&cfg.bucket)
            .with_region(&cfg.region)
            .with_access_key_id(&cfg.access_key_id)
            .with_secret_access_key(&cfg.secret_access_key)
            .with_virtual_hosted_style_request(cfg.virtual_hosted);
        if !cfg.endpoint.is_empty() {
            builder = builder.with_endpoint(&cfg.endpoint).with_allow_http(cfg.endpoint.starts_with("http://"));
        }
        let store = builder.build().map_err(unavailable)?;
        Ok(ObjectBlobs { store: Arc::new(store), kind: "s3", part_size: S3_PART, concurrency: 1 })
    }

    fn path(key: &str) -> Result<Path, BlobError> {
        Path::parse(key).map_err(|e| BlobError::Unavailable(format!("bad object key {key:?}: {e}")))
    }
}

fn unavailable(e: object_store::Error) -> BlobError {
    match e {
        object_store::Error::NotFound { .. } => BlobError::NotFound,
        e => BlobError::Unavailable(e.to_string()),
    }
}

#[async_trait::async_trait]
impl BlobStore for ObjectBlobs {
    async fn put_blob(&self, key: &str, mut body: ByteStream) -> Result<u64, BlobError> {
        let path = Self::path(key)?;
        let mut writer =
            BufWriter::with_capacity(self.store.clone(), path, self.part_size).with_max_concurrency(self.concurrency);
        let mut size = 0u64;
        while let Some(chunk) = body.next().await {
            let step = match chunk {
                Ok(bytes) => {
                    size += bytes.len() as u64;
                    writer.put(bytes).await.map_err(unavailable)
                }
                Err(e) => Err(e),
            };
            if let Err(e) = step {
                // Deletes the staging file or aborts the multipart upload; the object never appears.
                if let Err(abort) = writer.abort().await {
                    tracing::warn!(key, error = %abort, "aborting a failed upload left parts behind");
                }
                return Err(e);
            }
        }
        // Completes the upload: only now is the object visible, whole.
        writer.shutdown().await.map_err(|e| BlobError::Unavailable(e.to_string()))?;
        Ok(size)
    }

    async fn get_blob(&self, key: &str, range: Option<(u64, Option<u64>)>) -> Result<BlobRead, BlobError> {
        let path = Self::path(key)?;
        let range = match range {
            None => None,
            Some((start, Some(end))) => Some(GetRange::Bounded(start..end)),
            Some((start, None)) => Some(GetRange::Offset(start)),
        };
        let got =
            self.store.get_opts(&path, GetOptions { range, ..GetOptions::default() }).await.map_err(unavailable)?;
        let (size, start, end) = (got.meta.size, got.range.start, got.range.end);
        let body = got.into_stream().map(|chunk| chunk.map_err(unavailable));
        Ok(BlobRead { size, start, end, body: Box::pin(body) })
    }

    async fn delete_blob(&self, key: &str) -> Result<(), BlobError> {
        match self.store.delete(&Self::path(key)?).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(unavailable(e)),
        }
    }

    fn kind(&self) -> &'static str {
        self.kind
    }
}
