//! The file scanner side of the SDK: the upload a scanner sees ([`File`]) and the verdict it gives
//! ([`ScanVerdict`]), for plugins of world `file-scanner` (`scan-file`, since `palaver:plugin@0.1.2`).

use crate::bindings::file_scanner::exports::palaver::plugin::scan_file as wit;

/// One uploaded file: its record and its first bytes. The name and MIME type are what the uploader declared:
/// judge the bytes too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    /// The file's id, as in its URLs.
    pub id: String,
    /// The uploader, `usr…`.
    pub uploader: String,
    /// The file name the upload gave, as sent; empty when none.
    pub name: String,
    /// The declared MIME type (`application/octet-stream` when none was).
    pub mime: String,
    /// Bytes stored.
    pub size: u64,
    /// SHA-256 of the whole file, lower-case hex.
    pub sha256: String,
    /// Unix ms the upload was stored.
    pub created_ms: u64,
    /// The first bytes: at most the host's head size (64 KiB by default), the whole file when it is smaller.
    pub head: Vec<u8>,
}

impl File {
    /// A file named `name` of type `mime` whose bytes are `head` (its size is the head's), as tests build them.
    pub fn new(name: &str, mime: &str, head: impl Into<Vec<u8>>) -> File {
        let head = head.into();
        File {
            id: "fileTest".to_owned(),
            uploader: "usrASNFZ4mrze8".to_owned(),
            name: name.to_owned(),
            mime: mime.to_owned(),
            size: u64::try_from(head.len()).unwrap_or(u64::MAX),
            sha256: String::new(),
            created_ms: 0,
            head,
        }
    }

    /// This file with another size (a test's large upload whose head is only its start).
    pub fn with_size(mut self, size: u64) -> File {
        self.size = size;
        self
    }

    /// The name's extension after the last dot, lower-case, without the dot; `None` when the name has none (or is
    /// only a leading dot and a word, like `.profile`). Trailing dots and spaces are ignored, as Windows ignores
    /// them when it opens a file (`setup.exe.` runs `setup.exe`).
    pub fn extension(&self) -> Option<String> {
        let base = self.name.rsplit(['/', '\\']).next().unwrap_or_default().trim_end_matches(['.', ' ']);
        let (stem, ext) = base.rsplit_once('.')?;
        (!stem.is_empty() && !ext.is_empty()).then(|| ext.to_ascii_lowercase())
    }

    /// The MIME type without parameters (`; charset=…`), lower-case.
    pub fn essence(&self) -> String {
        self.mime.split(';').next().unwrap_or_default().trim().to_ascii_lowercase()
    }

    pub(crate) fn from_wit(f: wit::FileInfo) -> File {
        File {
            id: f.id,
            uploader: f.call.actor,
            name: f.name,
            mime: f.mime,
            size: f.size,
            sha256: f.sha256,
            created_ms: f.created_ms,
            head: f.head,
        }
    }
}

/// The conclusion about one file. The host keeps at most 256 bytes of a reason and prefixes it with the plugin's
/// name; of several scanners the strictest verdict wins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScanVerdict {
    /// Nothing found: the file may be served.
    Clean,
    /// Harmful or forbidden: the file is taken down and its readers are told, for this reason.
    Blocked(String),
    /// Undecided: the file waits for an operator, for this reason.
    Review(String),
}

impl ScanVerdict {
    /// Blocks the file.
    pub fn blocked(reason: impl Into<String>) -> ScanVerdict {
        ScanVerdict::Blocked(reason.into())
    }

    /// Sends the file to review.
    pub fn review(reason: impl Into<String>) -> ScanVerdict {
        ScanVerdict::Review(reason.into())
    }

    /// The stricter of two verdicts: blocked over review over clean (of equally strict ones, `self`).
    pub fn and(self, other: ScanVerdict) -> ScanVerdict {
        let rank = |v: &ScanVerdict| match v {
            ScanVerdict::Clean => 0,
            ScanVerdict::Review(_) => 1,
            ScanVerdict::Blocked(_) => 2,
        };
        if rank(&other) > rank(&self) { other } else { self }
    }

    pub(crate) fn into_wit(self) -> wit::ScanVerdict {
        match self {
            ScanVerdict::Clean => wit::ScanVerdict::Clean,
            ScanVerdict::Blocked(r) => wit::ScanVerdict::Blocked(r),
            ScanVerdict::Review(r) => wit::ScanVerdict::Review(r),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extensions_are_the_last_dotted_part_lower_cased() {
        let ext = |name: &str| File::new(name, "", Vec::new()).extension();
        assert_eq!(ext("report.PDF").as_deref(), Some("pdf"));
        assert_eq!(ext("archive.tar.gz").as_deref(), Some("gz"));
        assert_eq!(ext("invoice.pdf.exe").as_deref(), Some("exe"));
        assert_eq!(ext("C:\\Users\\a\\setup.EXE").as_deref(), Some("exe"));
        assert_eq!(ext("dir.d/README"), None);
        assert_eq!(ext("README"), None);
        assert_eq!(ext(".profile"), None);
        assert_eq!(ext("trailing."), None);
        assert_eq!(ext("setup.exe. ").as_deref(), Some("exe"), "Windows drops trailing dots and spaces");
        assert_eq!(ext(""), None);
    }

    #[test]
    fn the_essence_drops_parameters() {
        assert_eq!(File::new("a", "Text/HTML; charset=utf-8", Vec::new()).essence(), "text/html");
    }

    #[test]
    fn the_stricter_verdict_wins() {
        let (r, b) = (ScanVerdict::review("r"), ScanVerdict::blocked("b"));
        assert_eq!(ScanVerdict::Clean.and(r.clone()), r);
        assert_eq!(r.clone().and(b.clone()), b);
        assert_eq!(b.clone().and(r), b);
        assert_eq!(ScanVerdict::review("first").and(ScanVerdict::review("second")), ScanVerdict::review("first"));
    }
}
