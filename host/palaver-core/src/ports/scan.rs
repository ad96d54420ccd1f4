//! File security: what looks at an upload before anyone but its uploader may read it. Two kinds of scanner,
//! both optional: a [`FileScanner`] reads a file's whole bytes (ClamAV through `clamd`), a [`ScanHook`] judges
//! its metadata and first bytes (the tenant's `scan-file` plugins). A file either of them would look at is
//! stored `pending`, and the file-security worker settles it.

use super::files::{ByteStream, FileRecord};
use crate::TenantId;

/// A scanner's conclusion about one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScanVerdict {
    /// Nothing found: the file may be served.
    Clean,
    /// Harmful or forbidden: the file is taken down (HTTP 451) and its readers are told (`file.unavailable`).
    Blocked { reason: String },
    /// Undecided: the file stays `pending` until an operator settles it (`file.audit.update`).
    Review { reason: String },
}

impl ScanVerdict {
    /// The word the audit log and metrics use: `clean`, `blocked`, `review`.
    pub fn as_str(&self) -> &'static str {
        match self {
            ScanVerdict::Clean => "clean",
            ScanVerdict::Blocked { .. } => "blocked",
            ScanVerdict::Review { .. } => "review",
        }
    }

    /// The reason a `blocked` or `review` verdict gives; empty for `clean`.
    pub fn reason(&self) -> &str {
        match self {
            ScanVerdict::Clean => "",
            ScanVerdict::Blocked { reason } | ScanVerdict::Review { reason } => reason,
        }
    }

    /// The stricter of two verdicts: blocked over review over clean (the first reason of the strictest kind).
    pub fn and(self, other: ScanVerdict) -> ScanVerdict {
        let rank = |v: &ScanVerdict| match v {
            ScanVerdict::Clean => 0,
            ScanVerdict::Review { .. } => 1,
            ScanVerdict::Blocked { .. } => 2,
        };
        if rank(&other) > rank(&self) { other } else { self }
    }
}

/// Why a scan could not conclude.
#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    /// The scanner is unreachable, timed out or answered with an error: the worker tries again later.
    #[error("scanner unavailable: {0}")]
    Unavailable(String),
}

/// A scanner of a file's whole bytes. Configured per node; it looks at every tenant's uploads.
#[async_trait::async_trait]
pub trait FileScanner: Send + Sync {
    /// What the logs and the audit log call it (`clamav`).
    fn name(&self) -> &'static str;

    /// The verdict on `file`, whose bytes `body` streams from the start.
    async fn scan(&self, file: &FileRecord, body: ByteStream) -> Result<ScanVerdict, ScanError>;
}

/// A file as a scan hook sees it: its record and its first bytes.
#[derive(Debug, Clone, Copy)]
pub struct ScanContext<'a> {
    pub tenant: TenantId,
    pub file: &'a FileRecord,
    /// The file's first bytes (at most the configured head size; the whole file when it is smaller).
    pub head: &'a [u8],
}

/// The tenant's file judges (plugins' `scan-file`). Implementations fail closed: a fault is a `Review`, so a file
/// no judge could look at waits for an operator rather than being served.
#[async_trait::async_trait]
pub trait ScanHook: Send + Sync {
    /// False when no hook would judge `tenant`'s files: their uploads then need no scan on its account.
    fn scans(&self, tenant: TenantId) -> bool;

    /// The verdict on one file.
    async fn scan_file(&self, ctx: &ScanContext<'_>) -> ScanVerdict;
}

#[async_trait::async_trait]
impl ScanHook for super::NoHooks {
    fn scans(&self, _: TenantId) -> bool {
        false
    }

    async fn scan_file(&self, _: &ScanContext<'_>) -> ScanVerdict {
        ScanVerdict::Clean
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stricter_verdict_wins() {
        let review = || ScanVerdict::Review { reason: "r".into() };
        let blocked = || ScanVerdict::Blocked { reason: "b".into() };
        assert_eq!(ScanVerdict::Clean.and(review()), review());
        assert_eq!(review().and(ScanVerdict::Clean), review());
        assert_eq!(review().and(blocked()), blocked());
        assert_eq!(blocked().and(review()), blocked());
        assert_eq!(
            ScanVerdict::Blocked { reason: "first".into() }.and(blocked()).reason(),
            "first",
            "of two equally strict verdicts the first stays"
        );
        assert_eq!(ScanVerdict::Clean.and(ScanVerdict::Clean), ScanVerdict::Clean);
    }
}
