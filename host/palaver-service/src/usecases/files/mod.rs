//! Files: Tinode's out-of-band uploads (`/v0/file/u/`) and downloads (`/v0/file/s/<id>.<ext>`), the references
//! messages make to them (`extra.attachments`), avatars (`public.photo.ref`) and the collection of uploads that
//! nothing references.
//!
//! Who may read a file: its uploader; anyone signed in to the tenant if it is an avatar (profiles are visible to
//! every user); otherwise a user with R in a topic one of whose messages references it. A `pending` file (being
//! scanned, see `scan`) is served to its uploader only unless the tenant lets its readers have it too, a
//! `blocked` one to nobody. Bytes never pass through memory whole: the upload is hashed and counted as it
//! streams to the blob store, and a download streams from it.

use crate::Inner;
use crate::error::{ServiceError, ServiceResult};
use base64::Engine;
use futures_util::StreamExt;
use palaver_api::bodies::admin::PendingReaders;
use palaver_core::ports::{BlobError, BlobRead, ByteStream, FileRecord, FileStatus, blob_key};
use palaver_core::{AccessMode, Seq, TenantId, UserId, now_millis};
use settings::Limits;
use sha2::{Digest, Sha256};
use std::sync::Arc;
use std::time::Duration;

mod scan;
mod settings;

pub use scan::{FileScanTask, scan_record};

/// The file settings (`[files]`).
#[derive(Debug, Clone)]
pub struct FilesConfig {
    /// Uploads are accepted at all (downloads of stored files keep working when off).
    pub enabled: bool,
    /// The largest upload in bytes, advertised in `{hi}` as `maxFileUploadSize`.
    pub max_upload_size: u64,
    /// Uploads one user may make in an hour; 0 means no limit.
    pub max_uploads_per_hour: u64,
    /// MIME types accepted (`image/*` matches a whole family); empty accepts any.
    pub allowed_mime: Vec<String>,
    /// Uploads streaming through this node at once; more answer 503.
    pub max_concurrent_uploads: usize,
    /// An upload no message references and that is not an avatar is removed after this long.
    pub gc_grace: Duration,
    /// Attachments of one message that are recorded; more are ignored.
    pub max_attachments: usize,
    /// Who may download a file still being scanned, for tenants that do not say.
    pub pending_readers: PendingReaders,
    /// The first bytes of a file given to the tenant's `scan-file` plugins.
    pub scan_head_bytes: usize,
}

impl Default for FilesConfig {
    fn default() -> Self {
        FilesConfig {
            enabled: true,
            max_upload_size: 100 * 1024 * 1024,
            max_uploads_per_hour: 600,
            allowed_mime: Vec::new(),
            max_concurrent_uploads: 64,
            gc_grace: Duration::from_secs(24 * 3600),
            max_attachments: 32,
            pending_readers: PendingReaders::Uploader,
            scan_head_bytes: 64 * 1024,
        }
    }
}

/// What the client said of an upload: its file name and MIME type.
#[derive(Debug, Clone, Default)]
pub struct UploadMeta {
    pub name: String,
    pub mime: String,
}

/// A byte range as an HTTP `Range` header asks for it, resolved against the file's size by [`Files::open`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteRange {
    /// `bytes=a-b`: from `a` to `b` inclusive.
    Bounded(u64, u64),
    /// `bytes=a-`: from `a` to the end.
    From(u64),
    /// `bytes=-n`: the last `n` bytes.
    Suffix(u64),
}

/// A file being downloaded: its record and the stream of (the requested part of) its bytes.
#[derive(Debug)]
pub struct Download {
    pub file: FileRecord,
    pub read: BlobRead,
}

/// The path a file is served under (the `url` an upload answers with).
pub fn file_url(file: &FileRecord) -> String {
    format!("/v0/file/s/{}.{}", file.id, extension(&file.name, &file.mime))
}

/// The file id in a download URL as messages and profiles carry it: `/v0/file/s/<id>.<ext>`, possibly absolute
/// or with a query. `None` for anything else (an external link, a data URL).
pub(crate) fn file_id_of(url: &str) -> Option<&str> {
    let path = url.split(['?', '#']).next()?;
    let rest = &path[path.find("/v0/file/s/")? + "/v0/file/s/".len()..];
    let id = rest.split('.').next()?;
    let valid = id.len() == ID_LEN && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    valid.then_some(id)
}

/// Length of a file id: 16 random bytes in unpadded base64url.
const ID_LEN: usize = 22;

/// The URL's extension: the name's when it is a short plain one, else one for the MIME type.
fn extension(name: &str, mime: &str) -> String {
    let from_name = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    if let Some(ext) =
        from_name.filter(|e| !e.is_empty() && e.len() <= 8 && e.bytes().all(|b| b.is_ascii_alphanumeric()))
    {
        return ext;
    }
    let sub = mime.split_once('/').map_or("", |(_, s)| s);
    match sub {
        "jpeg" => "jpg".into(),
        "svg+xml" => "svg".into(),
        "plain" => "txt".into(),
        s if !s.is_empty() && s.len() <= 8 && s.bytes().all(|b| b.is_ascii_alphanumeric()) => s.into(),
        _ => "bin".into(),
    }
}

/// A MIME type as stored: lower-case `type/subtype` of token characters without parameters, else
/// `application/octet-stream` (it becomes a response header, so nothing else may pass).
fn clean_mime(mime: &str) -> String {
    let essence = mime.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    let token = |s: &str| {
        !s.is_empty() && s.len() <= 100 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$&^_.+-".contains(&b))
    };
    match essence.split_once('/') {
        Some((t, s)) if token(t) && token(s) => essence,
        _ => "application/octet-stream".into(),
    }
}

/// A file name as stored: control characters dropped, at most 255 bytes; the download's
/// `Content-Disposition` quotes it.
fn clean_name(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars().filter(|c| !c.is_control() && *c != '/' && *c != '\\') {
        if out.len() + c.len_utf8() > 255 {
            break;
        }
        out.push(c);
    }
    out
}

/// True if `pattern` can stand in an accepted-types list (`[files] allowed_mime`, a tenant's own): a MIME type in
/// its stored form (lower-case `type/subtype` of token characters), or a family `type/*`.
pub fn mime_pattern_ok(pattern: &str) -> bool {
    match pattern.split_once('/') {
        Some((family, "*")) => clean_mime(&format!("{family}/x")) == format!("{family}/x"),
        Some(_) => clean_mime(pattern) == pattern,
        None => false,
    }
}

/// True if `mime` is accepted by `allowed` (`image/*` takes the family; empty takes all).
fn mime_allowed(allowed: &[String], mime: &str) -> bool {
    allowed.is_empty()
        || allowed.iter().any(|a| match a.strip_suffix("/*") {
            Some(family) => mime.split_once('/').is_some_and(|(t, _)| t == family),
            None => a == mime,
        })
}

/// The file use cases of one tenant.
pub(crate) struct Files<'a> {
    pub(super) svc: &'a Inner,
    pub(super) tenant: TenantId,
}

impl Files<'_> {
    /// Stores an upload of `user`: checks the type and the rates, streams the bytes to the blob store while
    /// hashing and counting them (more than `max_upload_size` aborts it: 413), then records the file. A failure
    /// anywhere leaves neither object nor record.
    pub(crate) async fn upload(&self, user: UserId, meta: UploadMeta, body: ByteStream) -> ServiceResult<FileRecord> {
        let cfg = &self.svc.cfg.files;
        if !cfg.enabled {
            return Err(ServiceError::NotImplemented);
        }
        let limits = Limits::of(cfg, &self.own_settings().await?);
        let mime = clean_mime(&meta.mime);
        if !mime_allowed(&limits.allowed_mime, &mime) {
            return Err(ServiceError::Policy(format!("files of type {mime} are not accepted")));
        }
        let _permit = self.svc.uploads.clone().try_acquire_owned().map_err(|_| ServiceError::Unavailable {
            reason: "too many uploads in progress".into(),
            retry_after_ms: 1000,
        })?;
        let now = now_millis();
        let max_per_hour = limits.max_uploads_per_hour;
        if max_per_hour > 0
            && self.svc.ports.files.count_uploads(self.tenant, user, now - 3_600_000).await? >= max_per_hour
        {
            return Err(ServiceError::RateLimited {
                why: format!("at most {max_per_hour} uploads an hour"),
                retry_after_ms: 60_000,
            });
        }
        let id = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(rand::random::<[u8; 16]>());
        let key = blob_key(self.tenant, &id);
        let limit = limits.max_upload_size;
        let seen = Arc::new(parking_lot::Mutex::new((Sha256::new(), 0u64)));
        let counter = seen.clone();
        let counted = body.map(move |chunk| {
            let chunk = chunk?;
            let mut seen = counter.lock();
            seen.1 += chunk.len() as u64;
            if seen.1 > limit {
                return Err(BlobError::Aborted(format!("over {limit} bytes")));
            }
            seen.0.update(&chunk);
            Ok(chunk)
        });
        let stored = self.svc.ports.blobs.put_blob(&key, Box::pin(counted)).await;
        let (hasher, size) = std::mem::take(&mut *seen.lock());
        match stored {
            Ok(_) => {}
            Err(BlobError::Aborted(_)) if size > limit => {
                return Err(ServiceError::TooLarge(format!("a file is at most {limit} bytes")));
            }
            Err(BlobError::Aborted(why)) => return Err(ServiceError::Malformed(format!("upload interrupted: {why}"))),
            Err(e) => return Err(ServiceError::Unavailable { reason: e.to_string(), retry_after_ms: 1000 }),
        }
        // A file some scanner will look at waits for it: nobody but its uploader reads it until it is settled.
        let scanned = self.scanned();
        let file = FileRecord {
            id,
            uploader: user,
            size,
            mime,
            name: clean_name(&meta.name),
            sha256: hasher.finalize().iter().map(|b| format!("{b:02x}")).collect(),
            status: if scanned { FileStatus::Pending } else { FileStatus::Clean },
            public: false,
            created: now,
        };
        if let Err(e) = self.svc.ports.files.create_file(self.tenant, &file).await {
            // No record, no object: the bytes would otherwise be unreachable and never collected.
            let _ = self.svc.ports.blobs.delete_blob(&key).await;
            return Err(e.into());
        }
        if scanned && let Err(e) = self.svc.put_outbox(self.tenant, &[scan_record(self.tenant, &file)]).await {
            // A pending file no task will settle would stay unreadable for good: refuse the upload instead.
            let _ = self.svc.ports.files.delete_unreferenced_file(self.tenant, &file.id).await;
            let _ = self.svc.ports.blobs.delete_blob(&key).await;
            return Err(ServiceError::Unavailable {
                reason: format!("the scan could not be queued: {e}"),
                retry_after_ms: 5000,
            });
        }
        self.svc.metrics.file_uploaded(size);
        Ok(file)
    }

    /// True if this tenant's uploads are scanned: a whole-file scanner is configured, or a `scan-file` plugin is
    /// enabled for the tenant.
    pub(crate) fn scanned(&self) -> bool {
        self.svc.ports.scanner.is_some() || self.svc.ports.scan_hook.scans(self.tenant)
    }

    /// Opens a file `user` may read, whole or the part `range` asks for. A file that does not exist and one the
    /// user may not read are both 404 (an id says nothing to whoever cannot read it); a blocked file is 451; a
    /// pending one, to anyone but its uploader, 503 unless the tenant's `pending_readers` is `readers`; a range
    /// past the end is 416.
    pub(crate) async fn open(&self, user: UserId, id: &str, range: Option<ByteRange>) -> ServiceResult<Download> {
        let file = self.svc.ports.files.get_file(self.tenant, id).await?.ok_or(ServiceError::NotFound)?;
        if !self.may_read(user, &file).await? {
            return Err(ServiceError::NotFound);
        }
        match file.status {
            FileStatus::Blocked => return Err(ServiceError::FileBlocked),
            FileStatus::Pending if file.uploader != user => {
                let own = self.own_settings().await?;
                if Limits::of(&self.svc.cfg.files, &own).pending_readers == PendingReaders::Uploader {
                    return Err(ServiceError::FilePending);
                }
            }
            _ => {}
        }
        let span = match range {
            None => None,
            Some(r) => Some(resolve(r, file.size).ok_or(ServiceError::RangeNotSatisfiable { size: file.size })?),
        };
        let read =
            match self.svc.ports.blobs.get_blob(&blob_key(self.tenant, id), span.map(|(a, b)| (a, Some(b)))).await {
                Ok(read) => read,
                Err(BlobError::NotFound) => {
                    tracing::warn!(tenant = self.tenant.0, file = id, "a file record has no object");
                    return Err(ServiceError::NotFound);
                }
                Err(e) => return Err(ServiceError::Unavailable { reason: e.to_string(), retry_after_ms: 1000 }),
            };
        Ok(Download { file, read })
    }

    /// Whether `user` may read `file`, its status aside: what [`Files::open`] then checks.
    async fn may_read(&self, user: UserId, file: &FileRecord) -> ServiceResult<bool> {
        if file.uploader == user {
            return Ok(true);
        }
        if file.public {
            return Ok(true);
        }
        for topic in self.svc.ports.files.file_topics(self.tenant, &file.id, MAX_TOPICS_CHECKED).await? {
            let sub = self.svc.ports.subs.get_sub(self.tenant, &topic, user).await?;
            if sub.is_some_and(|s| s.mode().has(AccessMode::READ)) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Records that message `seq` of `topic`, from `sender`, references the files its attachment URLs name:
    /// only files the sender may read, so a reference never grants what its author did not have. With
    /// `announce` (the message is delivered, not held), the topic hears `file.unavailable` for each of them that
    /// is blocked once the reference is recorded: a scan that blocked it just before saw no reference to tell.
    pub(crate) async fn link(
        &self,
        topic: &str,
        seq: Seq,
        sender: UserId,
        urls: &[String],
        announce: bool,
    ) -> ServiceResult<u64> {
        let mut ids: Vec<String> = Vec::new();
        for id in urls.iter().filter_map(|u| file_id_of(u)).take(self.svc.cfg.files.max_attachments) {
            if ids.iter().any(|known| known == id) {
                continue;
            }
            match self.svc.ports.files.get_file(self.tenant, id).await? {
                Some(file) if self.may_read(sender, &file).await? => ids.push(file.id),
                _ => {}
            }
        }
        if ids.is_empty() {
            return Ok(0);
        }
        let linked = self.svc.ports.files.link_files(self.tenant, topic, seq, &ids, now_millis()).await?;
        // Read after the reference is written: a block settled before this read is seen here, one settled after
        // it lists this topic among the references (`announce_blocked`); either way the topic is told.
        for id in ids.iter().filter(|_| announce) {
            if let Some(file) = self.svc.ports.files.get_file(self.tenant, id).await?
                && file.status == FileStatus::Blocked
            {
                self.announce_to(&file, topic, "blocked before it was sent");
            }
        }
        Ok(linked)
    }

    /// Forgets the file references of deleted messages (`ranges` of `topic`, or all of a deleted topic): their
    /// readers no longer read the files through them, and files nothing else references are collected. A
    /// failure is logged, not returned: the deletion itself has happened, and a stale reference only keeps a file
    /// readable by the topic's members a while longer.
    pub(crate) async fn forget(&self, topic: &str, ranges: Option<&[palaver_core::SeqRange]>) {
        if let Err(e) = self.svc.ports.files.unlink_files(self.tenant, topic, ranges).await {
            tracing::warn!(tenant = self.tenant.0, topic, error = %e, "deleted messages keep their file references");
        }
    }

    /// Makes the file a new `public` value names as its photo (`public.photo.ref`) readable by everyone, when
    /// `user` uploaded it: an avatar is shown wherever the profile is.
    pub(crate) async fn adopt_avatar(&self, user: UserId, public: Option<&serde_json::Value>) -> ServiceResult<()> {
        let Some(url) = public.and_then(|p| p.get("photo")).and_then(|p| p.get("ref")).and_then(|r| r.as_str()) else {
            return Ok(());
        };
        let Some(id) = file_id_of(url) else { return Ok(()) };
        match self.svc.ports.files.get_file(self.tenant, id).await? {
            Some(file) if file.uploader == user && !file.public => {
                self.svc.ports.files.set_file_public(self.tenant, id).await?;
            }
            _ => {}
        }
        Ok(())
    }

    /// Removes up to `limit` uploads older than the grace period that nothing references and that are not
    /// avatars. The record goes first, by a removal that checks again that nothing references it (a message
    /// may have named the file since it was listed), then the object: a failure in between leaves bytes
    /// nobody can reach, never a reference to nothing. Returns how many were removed.
    pub(crate) async fn collect(&self, limit: usize) -> ServiceResult<usize> {
        let before = now_millis() - self.svc.cfg.files.gc_grace.as_millis() as i64;
        let mut removed = 0;
        for file in self.svc.ports.files.unreferenced_files(self.tenant, before, limit).await? {
            if !self.svc.ports.files.delete_unreferenced_file(self.tenant, &file.id).await? {
                continue;
            }
            removed += 1;
            if let Err(e) = self.svc.ports.blobs.delete_blob(&blob_key(self.tenant, &file.id)).await {
                tracing::warn!(tenant = self.tenant.0, file = %file.id, error = %e, "a collected file's bytes stay behind");
            }
        }
        self.svc.metrics.files_collected(removed);
        Ok(removed)
    }
}

/// Topics checked for a reader before a file is refused: a file referenced in more topics than this is still
/// readable by members of the first ones, in name order.
const MAX_TOPICS_CHECKED: usize = 64;

/// The half-open span `start..end` a range names in a file of `size` bytes, or `None` when it asks for nothing
/// inside it (416).
fn resolve(range: ByteRange, size: u64) -> Option<(u64, u64)> {
    let (start, end) = match range {
        ByteRange::Bounded(a, b) if a <= b => (a, b.saturating_add(1).min(size)),
        ByteRange::Bounded(..) => return None,
        ByteRange::From(a) => (a, size),
        ByteRange::Suffix(n) => (size.saturating_sub(n), size),
    };
    (start < end).then_some((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_read_from_download_urls_only() {
        let id = "AAAAAAAAAAAAAAAAAAAAAA";
        assert_eq!(file_id_of(&format!("/v0/file/s/{id}.jpg")), Some(id));
        assert_eq!(file_id_of(&format!("/v0/file/s/{id}")), Some(id));
        assert_eq!(file_id_of(&format!("https://chat.example/v0/file/s/{id}.png?apikey=x&secret=y")), Some(id));
        assert_eq!(file_id_of("/v0/file/s/short.jpg"), None);
        assert_eq!(file_id_of(&format!("/v0/file/s/{}.jpg", "A".repeat(23))), None);
        assert_eq!(file_id_of("https://elsewhere.example/cat.png"), None);
        assert_eq!(file_id_of("/v0/file/s/AAAAAAAAAAAAAAAAAAAA/../x.jpg"), None);
    }

    #[test]
    fn ranges_resolve_against_the_size() {
        assert_eq!(resolve(ByteRange::Bounded(2, 5), 10), Some((2, 6)));
        assert_eq!(resolve(ByteRange::Bounded(2, 50), 10), Some((2, 10)));
        assert_eq!(resolve(ByteRange::From(9), 10), Some((9, 10)));
        assert_eq!(resolve(ByteRange::Suffix(3), 10), Some((7, 10)));
        assert_eq!(resolve(ByteRange::Suffix(30), 10), Some((0, 10)));
        assert_eq!(resolve(ByteRange::From(10), 10), None);
        assert_eq!(resolve(ByteRange::Bounded(5, 2), 10), None);
        assert_eq!(resolve(ByteRange::Suffix(0), 10), None);
    }

    #[test]
    fn names_types_and_extensions_are_made_safe() {
        assert_eq!(clean_mime("Image/PNG; charset=x"), "image/png");
        assert_eq!(clean_mime("text/html\r\nX-Evil: 1"), "application/octet-stream");
        assert_eq!(clean_mime(""), "application/octet-stream");
        assert_eq!(clean_name("a\r\nb/../c.txt"), "ab..c.txt");
        assert_eq!(extension("Cat.JPEG", "image/jpeg"), "jpeg");
        assert_eq!(extension("noext", "image/jpeg"), "jpg");
        assert_eq!(extension("x.tar.gz", "application/gzip"), "gz");
        assert_eq!(extension("", "application/vnd.openxmlformats"), "bin");
        assert!(mime_allowed(&[], "a/b"));
        assert!(mime_allowed(&["image/*".into()], "image/png"));
        assert!(!mime_allowed(&["image/*".into(), "application/pdf".into()], "text/html"));
        assert!(mime_allowed(&["application/pdf".into()], "application/pdf"));
    }
}
