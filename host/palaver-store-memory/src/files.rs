//! File records in process: one map per tenant from a file's id to its record and the references messages
//! make to it, for tests and the service harness (the embedded mode keeps them in SQLite).

use async_trait::async_trait;
use palaver_core::ports::{FileRecord, FileStatus, FileStore};
use palaver_core::{Seq, SeqRange, StoreError, StoreResult, TenantId, UnixMillis, UserId};
use parking_lot::Mutex;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

#[derive(Default)]
struct Files {
    records: HashMap<(TenantId, String), FileRecord>,
    /// (tenant, file id) → the (topic, seq) that reference it.
    refs: HashMap<(TenantId, String), BTreeSet<(String, Seq)>>,
}

/// File records by tenant and id. Clones share them.
#[derive(Clone, Default)]
pub struct MemoryFiles {
    inner: Arc<Mutex<Files>>,
}

impl MemoryFiles {
    pub fn new() -> MemoryFiles {
        MemoryFiles::default()
    }
}

#[async_trait]
impl FileStore for MemoryFiles {
    async fn create_file(&self, tenant: TenantId, file: &FileRecord) -> StoreResult<()> {
        let mut files = self.inner.lock();
        let key = (tenant, file.id.clone());
        if files.records.contains_key(&key) {
            return Err(StoreError::Conflict(format!("file {} exists", file.id)));
        }
        files.records.insert(key, file.clone());
        Ok(())
    }

    async fn get_file(&self, tenant: TenantId, id: &str) -> StoreResult<Option<FileRecord>> {
        Ok(self.inner.lock().records.get(&(tenant, id.to_owned())).cloned())
    }

    async fn link_files(
        &self,
        tenant: TenantId,
        topic: &str,
        seq: Seq,
        ids: &[String],
        _at: UnixMillis,
    ) -> StoreResult<u64> {
        let mut files = self.inner.lock();
        let mut added = 0;
        for id in ids {
            let key = (tenant, id.clone());
            if files.records.contains_key(&key) && files.refs.entry(key).or_default().insert((topic.to_owned(), seq)) {
                added += 1;
            }
        }
        Ok(added)
    }

    async fn unlink_files(&self, tenant: TenantId, topic: &str, ranges: Option<&[SeqRange]>) -> StoreResult<u64> {
        let mut files = self.inner.lock();
        let mut removed = 0;
        for (_, refs) in files.refs.iter_mut().filter(|((t, _), _)| *t == tenant) {
            let before = refs.len();
            refs.retain(|(name, seq)| {
                name != topic || ranges.is_some_and(|rs| !rs.iter().any(|r| *seq >= r.low && *seq < r.hi))
            });
            removed += (before - refs.len()) as u64;
        }
        Ok(removed)
    }

    async fn file_topics(&self, tenant: TenantId, id: &str, limit: usize) -> StoreResult<Vec<String>> {
        let files = self.inner.lock();
        let topics: BTreeSet<&String> =
            files.refs.get(&(tenant, id.to_owned())).into_iter().flatten().map(|(topic, _)| topic).collect();
        Ok(topics.into_iter().take(limit).cloned().collect())
    }

    async fn set_file_public(&self, tenant: TenantId, id: &str) -> StoreResult<bool> {
        Ok(self.inner.lock().records.get_mut(&(tenant, id.to_owned())).map(|r| r.public = true).is_some())
    }

    async fn set_file_status(&self, tenant: TenantId, id: &str, status: FileStatus) -> StoreResult<bool> {
        Ok(self.inner.lock().records.get_mut(&(tenant, id.to_owned())).map(|r| r.status = status).is_some())
    }

    async fn settle_pending_file(&self, tenant: TenantId, id: &str, status: FileStatus) -> StoreResult<bool> {
        let mut files = self.inner.lock();
        let pending = files.records.get_mut(&(tenant, id.to_owned())).filter(|r| r.status == FileStatus::Pending);
        Ok(pending.map(|r| r.status = status).is_some())
    }

    async fn count_uploads(&self, tenant: TenantId, uploader: UserId, since: UnixMillis) -> StoreResult<u64> {
        let files = self.inner.lock();
        let mine =
            files.records.iter().filter(|((t, _), r)| *t == tenant && r.uploader == uploader && r.created >= since);
        Ok(mine.count() as u64)
    }

    async fn unreferenced_files(
        &self,
        tenant: TenantId,
        before: UnixMillis,
        limit: usize,
    ) -> StoreResult<Vec<FileRecord>> {
        let files = self.inner.lock();
        let orphans: BTreeMap<(UnixMillis, &String), &FileRecord> = files
            .records
            .iter()
            .filter(|((t, id), r)| {
                *t == tenant
                    && r.created < before
                    && !r.public
                    && files.refs.get(&(tenant, id.clone())).is_none_or(BTreeSet::is_empty)
            })
            .map(|((_, id), r)| ((r.created, id), r))
            .collect();
        Ok(orphans.into_values().take(limit).cloned().collect())
    }

    async fn delete_unreferenced_file(&self, tenant: TenantId, id: &str) -> StoreResult<bool> {
        let mut files = self.inner.lock();
        let key = (tenant, id.to_owned());
        let referenced = files.refs.get(&key).is_some_and(|r| !r.is_empty());
        if referenced || files.records.get(&key).is_none_or(|r| r.public) {
            return Ok(false);
        }
        files.refs.remove(&key);
        Ok(files.records.remove(&key).is_some())
    }
}
