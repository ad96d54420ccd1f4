//! The file tables' shared parts: the row both adapters select from `im_files` (each writes its own select
//! list, since MariaDB converts its `DATETIME(3)` in SQL), how it becomes a [`FileRecord`], and the binds of a
//! new record after each adapter's own leading columns.

use crate::columns::{CorruptRow, user_col, user_of};
use palaver_core::ports::{FileRecord, FileStatus};

/// A row of `im_files`: `id, uploader_id, size, mime, name, sha256, status, public, created_at` (Unix ms).
pub type FileRow = (String, i64, i64, String, String, String, String, bool, i64);

/// The record a row holds; an unknown status or a negative size is a corrupt row.
pub fn file_of(row: FileRow) -> Result<FileRecord, CorruptRow> {
    let (id, uploader, size, mime, name, sha256, status, public, created) = row;
    let status = FileStatus::parse(&status).ok_or(CorruptRow::Value { column: "status", value: status })?;
    let size = u64::try_from(size).map_err(|_| CorruptRow::Value { column: "size", value: size.to_string() })?;
    Ok(FileRecord { id, uploader: user_of(uploader), size, mime, name, sha256, status, public, created })
}

/// The columns a new record binds, in the order `id, uploader_id, size, mime, name, sha256, status, public,
/// created_at`.
pub fn file_cols(f: &FileRecord) -> (&str, i64, i64, &str, &str, &str, &'static str, bool, i64) {
    let size = i64::try_from(f.size).unwrap_or(i64::MAX);
    (&f.id, user_col(f.uploader), size, &f.mime, &f.name, &f.sha256, f.status.as_str(), f.public, f.created)
}
