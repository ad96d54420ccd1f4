//! The file aggregate: Tinode's out-of-band files (attachments, avatars, large files). Two ports, because the
//! bytes and the records live apart: [`BlobStore`] holds a file's bytes under an object key (the local
//! filesystem or S3-compatible object storage), [`FileStore`] its record and the topics whose messages reference
//! it, in the tenant's database, which decides who may read it. Every call and every object key carries the
//! tenant.

use crate::{Seq, SeqRange, StoreResult, TenantId, UnixMillis, UserId};
use bytes::Bytes;
use futures_core::Stream;
use std::pin::Pin;

/// A file's state. A new upload is `Clean` unless a scanner is configured to look at it first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileStatus {
    /// Waiting for a scan: served only to its uploader.
    Pending,
    /// Served to whoever may read it.
    Clean,
    /// Taken down (a scan or an operator): served to nobody (HTTP 451).
    Blocked,
}

impl FileStatus {
    /// The word stored in the `status` column.
    pub fn as_str(self) -> &'static str {
        match self {
            FileStatus::Pending => "pending",
            FileStatus::Clean => "clean",
            FileStatus::Blocked => "blocked",
        }
    }

    /// The status a stored word names.
    pub fn parse(s: &str) -> Option<FileStatus> {
        Some(match s {
            "pending" => FileStatus::Pending,
            "clean" => FileStatus::Clean,
            "blocked" => FileStatus::Blocked,
            _ => return None,
        })
    }
}

/// One uploaded file's record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRecord {
    /// Unguessable (128 random bits, base64url): the id is in every URL of the file.
    pub id: String,
    pub uploader: UserId,
    /// Bytes stored.
    pub size: u64,
    /// The MIME type the upload declared (or `application/octet-stream`).
    pub mime: String,
    /// The file name the upload gave, as sent (for `Content-Disposition`); empty when none.
    pub name: String,
    /// SHA-256 of the bytes, lower-case hex.
    pub sha256: String,
    pub status: FileStatus,
    /// An avatar (`public.photo.ref`): readable by every signed-in user of the tenant, as profiles are.
    pub public: bool,
    pub created: UnixMillis,
}

/// The file records of each tenant and the references messages make to them. Every call carries the tenant.
#[async_trait::async_trait]
pub trait FileStore: Send + Sync {
    /// Stores a new record; its id is new (an existing id is a `Conflict`).
    async fn create_file(&self, tenant: TenantId, file: &FileRecord) -> StoreResult<()>;

    /// The record, if there is one.
    async fn get_file(&self, tenant: TenantId, id: &str) -> StoreResult<Option<FileRecord>>;

    /// Records that message `seq` of `topic` references each of `ids` (ids with no record are skipped, a
    /// reference made twice is one). Returns how many references are new.
    async fn link_files(
        &self,
        tenant: TenantId,
        topic: &str,
        seq: Seq,
        ids: &[String],
        at: UnixMillis,
    ) -> StoreResult<u64>;

    /// Forgets the references of the messages of `topic` in `ranges` (half-open seq ranges), or of every message
    /// of the topic when `ranges` is `None` (the topic is gone): deleted messages no longer grant their readers
    /// the files, and files nothing else references become collectable. Returns how many references went.
    async fn unlink_files(&self, tenant: TenantId, topic: &str, ranges: Option<&[SeqRange]>) -> StoreResult<u64>;

    /// Up to `limit` topics whose messages reference the file, in name order.
    async fn file_topics(&self, tenant: TenantId, id: &str, limit: usize) -> StoreResult<Vec<String>>;

    /// Marks the file public (an avatar). False if there is no such file.
    async fn set_file_public(&self, tenant: TenantId, id: &str) -> StoreResult<bool>;

    /// Sets the file's status. False if there is no such file.
    async fn set_file_status(&self, tenant: TenantId, id: &str, status: FileStatus) -> StoreResult<bool>;

    /// Sets the status of a `pending` file to `status` (a scan's conclusion), in one conditional write, so an
    /// operator's decision made while the scan ran is never overwritten. False if the file is missing or no
    /// longer pending.
    async fn settle_pending_file(&self, tenant: TenantId, id: &str, status: FileStatus) -> StoreResult<bool>;

    /// How many files `uploader` created at or after `since` (the upload rate bound is checked against it).
    async fn count_uploads(&self, tenant: TenantId, uploader: UserId, since: UnixMillis) -> StoreResult<u64>;

    /// Up to `limit` files created before `before` that no message references and that are not public, oldest
    /// first: what garbage collection removes.
    async fn unreferenced_files(
        &self,
        tenant: TenantId,
        before: UnixMillis,
        limit: usize,
    ) -> StoreResult<Vec<FileRecord>>;

    /// Removes the record if nothing references it and it is not public, in one conditional write, so a
    /// reference made after [`FileStore::unreferenced_files`] listed it keeps it. False if nothing was removed.
    async fn delete_unreferenced_file(&self, tenant: TenantId, id: &str) -> StoreResult<bool>;
}

/// Why a blob operation failed.
#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    /// No object under that key.
    #[error("no such object")]
    NotFound,
    /// The stream being stored failed (the client went away, or it grew past the caller's bound): nothing is
    /// kept.
    #[error("upload aborted: {0}")]
    Aborted(String),
    /// The storage is unreachable or refused; the caller may retry later.
    #[error("storage unavailable: {0}")]
    Unavailable(String),
}

/// Bytes arriving or leaving in chunks; never the whole file in memory.
pub type ByteStream = Pin<Box<dyn Stream<Item = Result<Bytes, BlobError>> + Send>>;

/// An object being read: its whole size, the range of it the stream yields (`start..end`, end exclusive).
pub struct BlobRead {
    pub size: u64,
    pub start: u64,
    pub end: u64,
    pub body: ByteStream,
}

impl std::fmt::Debug for BlobRead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlobRead")
            .field("size", &self.size)
            .field("start", &self.start)
            .field("end", &self.end)
            .finish()
    }
}

/// File bytes by object key. Keys are `{tenant}/{file id}`; [`blob_key`] builds them.
#[async_trait::async_trait]
pub trait BlobStore: Send + Sync {
    /// Stores the stream under `key`, replacing nothing: the object appears whole when the stream ends
    /// successfully, and not at all when it fails. Returns the bytes stored.
    async fn put_blob(&self, key: &str, body: ByteStream) -> Result<u64, BlobError>;

    /// Reads the object, or the part `start..end` of it (`end` is clamped to the size; `None` reads to the end).
    /// The caller checks the range against the file's recorded size first: one that starts past the end is the
    /// store's error (`Unavailable`).
    async fn get_blob(&self, key: &str, range: Option<(u64, Option<u64>)>) -> Result<BlobRead, BlobError>;

    /// Removes the object; removing what is not there is no error.
    async fn delete_blob(&self, key: &str) -> Result<(), BlobError>;

    /// What the logs call this store (`fs`, `s3`, `memory`).
    fn kind(&self) -> &'static str;
}

/// The object key of a tenant's file: the tenant first, so one tenant's objects never share a prefix with
/// another's.
pub fn blob_key(tenant: TenantId, file_id: &str) -> String {
    format!("{}/{file_id}", tenant.0)
}
