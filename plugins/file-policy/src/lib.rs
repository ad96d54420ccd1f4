//! `file-policy`, the example file scanner (world `file-scanner`): what a tenant deploys to keep executables and
//! other forbidden files out of its chats, and to have an operator look at what it wants looked at.
//!
//! Per upload, the strictest finding wins, in this order:
//! 1. `block_executables`: a Windows (`MZ`, with or without a PE header), Linux (ELF) or macOS (Mach-O, thin or
//!    universal) executable in the file's first bytes is **blocked**, whatever the name or declared type say;
//! 2. `blocked_extensions`: a name whose extension is listed (`report.pdf.exe` counts as `exe`) is **blocked**;
//! 3. `max_size`: a file larger than this (0: no limit) goes to **review**;
//! 4. `review_mime`: a declared type that is listed (`application/zip`) or whose whole type is (`video/*`) goes to
//!    **review**;
//! 5. anything else is **clean**.

use palaver_plugin_sdk::{Context, File, FileScanner, Host, Level, ScanVerdict};
use serde::Deserialize;

/// The tenant's settings, as the manifest declares them (the host fills in the defaults).
#[derive(Debug, Deserialize)]
#[serde(default)]
struct Settings {
    blocked_extensions: Vec<String>,
    block_executables: bool,
    /// Bytes; 0 (or less) is no limit.
    max_size: i64,
    review_mime: Vec<String>,
}

impl Default for Settings {
    /// The manifest's defaults, for a host that passes none.
    fn default() -> Self {
        let blocked = ["exe", "scr", "bat", "cmd", "com", "js", "vbs", "msi", "jar", "ps1"];
        Settings {
            blocked_extensions: blocked.iter().map(|s| (*s).to_owned()).collect(),
            block_executables: true,
            max_size: 0,
            review_mime: Vec::new(),
        }
    }
}

/// The magic numbers this plugin recognises at the start of a file, with what they are.
const EXECUTABLES: [(&[u8], &str); 8] = [
    (b"\x7fELF", "a Linux executable (ELF)"),
    (&[0xfe, 0xed, 0xfa, 0xce], "a macOS executable (Mach-O, 32-bit)"),
    (&[0xce, 0xfa, 0xed, 0xfe], "a macOS executable (Mach-O, 32-bit)"),
    (&[0xfe, 0xed, 0xfa, 0xcf], "a macOS executable (Mach-O, 64-bit)"),
    (&[0xcf, 0xfa, 0xed, 0xfe], "a macOS executable (Mach-O, 64-bit)"),
    // `CAFEBABE` starts Java class files too: executable code either way.
    (&[0xca, 0xfe, 0xba, 0xbe], "a macOS universal executable (Mach-O) or a Java class"),
    (&[0xca, 0xfe, 0xba, 0xbf], "a macOS universal executable (Mach-O, 64-bit)"),
    (&[0xbe, 0xba, 0xfe, 0xca], "a macOS universal executable (Mach-O)"),
];

/// What executable `head` starts, if any.
fn executable(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"MZ") {
        // The DOS header's `e_lfanew` (offset 0x3c) points at the PE signature of a Windows program.
        let pe = head
            .get(0x3c..0x40)
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .and_then(|b| usize::try_from(u32::from_le_bytes(b)).ok())
            .and_then(|at| head.get(at..at.checked_add(4)?))
            .is_some_and(|sig| sig == b"PE\0\0");
        return Some(if pe { "a Windows executable (PE)" } else { "a Windows or DOS executable (MZ header)" });
    }
    EXECUTABLES.iter().find(|(magic, _)| head.starts_with(magic)).map(|(_, what)| *what)
}

/// Whether declared type `essence` matches `pattern` (`type/subtype` or `type/*`, any case).
fn mime_matches(pattern: &str, essence: &str) -> bool {
    let pattern = pattern.trim().to_ascii_lowercase();
    match pattern.strip_suffix("/*") {
        Some(kind) => essence.split_once('/').is_some_and(|(k, _)| k == kind),
        None => !pattern.is_empty() && pattern == essence,
    }
}

/// `bytes` for people: `512 bytes`, `10 KiB`, `1.5 MiB`.
fn human(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    let text = format!("{value:.1}");
    let text = text.strip_suffix(".0").unwrap_or(&text);
    format!("{text} {}", UNITS[unit])
}

impl Settings {
    fn verdict(&self, file: &File) -> ScanVerdict {
        if self.block_executables
            && let Some(what) = executable(&file.head)
        {
            return ScanVerdict::blocked(format!("the file is {what}"));
        }
        if let Some(ext) = file.extension() {
            let listed = |e: &String| e.trim().trim_start_matches('.').eq_ignore_ascii_case(&ext);
            if self.blocked_extensions.iter().any(listed) {
                return ScanVerdict::blocked(format!("files of type .{ext} are not allowed"));
            }
        }
        if let Ok(max) = u64::try_from(self.max_size)
            && max > 0
            && file.size > max
        {
            return ScanVerdict::review(format!("the file is larger than {} ({})", human(max), human(file.size)));
        }
        let essence = file.essence();
        if self.review_mime.iter().any(|p| mime_matches(p, &essence)) {
            return ScanVerdict::review(format!("files of type {essence} are reviewed"));
        }
        ScanVerdict::Clean
    }
}

/// The scanner. It keeps nothing between calls but what the settings say.
#[derive(Default)]
pub struct FilePolicy;

impl FileScanner for FilePolicy {
    fn scan_file<H: Host>(&mut self, cx: &mut Context<'_, H>, file: &File) -> ScanVerdict {
        match cx.settings::<Settings>() {
            Ok(settings) => settings.verdict(file),
            Err(e) => {
                // The host validated the settings against the manifest: this is a plugin bug, and a file nobody
                // judged waits for an operator.
                cx.log(Level::Error, &format!("file-policy settings do not decode: {e}"));
                ScanVerdict::review("the file policy's settings could not be read")
            }
        }
    }
}

palaver_plugin_sdk::file_scanner!(FilePolicy);

#[cfg(test)]
mod tests {
    use super::*;
    use palaver_plugin_sdk::json;
    use palaver_plugin_sdk::testing::Harness;

    const MANIFEST: &str = include_str!("../plugin.toml");
    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

    fn harness(settings: palaver_plugin_sdk::Value) -> Harness<FilePolicy> {
        let mut h = Harness::with_manifest(MANIFEST).unwrap();
        h.settings(settings);
        h
    }

    /// The start of a Windows program: a DOS header whose `e_lfanew` points at `PE\0\0`.
    fn pe_head() -> Vec<u8> {
        let mut head = vec![0u8; 0x80];
        head[..2].copy_from_slice(b"MZ");
        head[0x3c..0x40].copy_from_slice(&0x40u32.to_le_bytes());
        head[0x40..0x44].copy_from_slice(b"PE\0\0");
        head
    }

    #[test]
    fn a_picture_is_clean() {
        assert_eq!(harness(json!({})).scan(&File::new("cat.png", "image/png", PNG)), ScanVerdict::Clean);
    }

    #[test]
    fn executables_are_blocked_whatever_they_are_called() {
        let mut h = harness(json!({}));
        let v = h.scan(&File::new("holiday.jpg", "image/jpeg", pe_head()));
        assert_eq!(v, ScanVerdict::blocked("the file is a Windows executable (PE)"));
        let v = h.scan(&File::new("notes.txt", "text/plain", b"MZ\x90\0".to_vec()));
        assert_eq!(v, ScanVerdict::blocked("the file is a Windows or DOS executable (MZ header)"));
        let v = h.scan(&File::new("", "application/octet-stream", b"\x7fELF\x02\x01\x01".to_vec()));
        assert_eq!(v, ScanVerdict::blocked("the file is a Linux executable (ELF)"));
        let v = h.scan(&File::new("a.bin", "application/octet-stream", vec![0xcf, 0xfa, 0xed, 0xfe, 7, 0, 0, 1]));
        assert_eq!(v, ScanVerdict::blocked("the file is a macOS executable (Mach-O, 64-bit)"));
        h.settings(json!({ "block_executables": false }));
        assert_eq!(h.scan(&File::new("holiday.jpg", "image/jpeg", pe_head())), ScanVerdict::Clean, "switched off");
    }

    #[test]
    fn listed_extensions_are_blocked_in_any_case() {
        let mut h = harness(json!({}));
        let v = h.scan(&File::new("invoice.pdf.EXE", "application/pdf", b"%PDF-1.7".to_vec()));
        assert_eq!(v, ScanVerdict::blocked("files of type .exe are not allowed"));
        assert!(matches!(h.scan(&File::new("run.ps1", "text/plain", b"Write-Host".to_vec())), ScanVerdict::Blocked(_)));
        assert_eq!(h.scan(&File::new("exe", "text/plain", b"hi".to_vec())), ScanVerdict::Clean, "no extension");
        h.settings(json!({ "blocked_extensions": [".ZIP"] }));
        assert!(matches!(
            h.scan(&File::new("a.zip", "application/zip", b"PK\x03\x04".to_vec())),
            ScanVerdict::Blocked(_)
        ));
        assert_eq!(h.scan(&File::new("a.exe", "text/plain", b"hi".to_vec())), ScanVerdict::Clean, "the list replaced");
    }

    #[test]
    fn large_files_go_to_review() {
        let mut h = harness(json!({ "max_size": 10 << 20 }));
        let big = File::new("film.mp4", "video/mp4", b"\0\0\0\x18ftypmp42".to_vec()).with_size(15 << 20);
        assert_eq!(h.scan(&big), ScanVerdict::review("the file is larger than 10 MiB (15 MiB)"));
        let at_limit = big.clone().with_size(10 << 20);
        assert_eq!(h.scan(&at_limit), ScanVerdict::Clean, "at the limit is not larger");
        h.settings(json!({ "max_size": 0 }));
        assert_eq!(h.scan(&big), ScanVerdict::Clean, "0: no limit");
        h.settings(json!({ "max_size": -1 }));
        assert_eq!(h.scan(&big), ScanVerdict::Clean, "less than 0: no limit either");
    }

    #[test]
    fn listed_types_go_to_review() {
        let mut h = harness(json!({ "review_mime": ["application/zip", "Video/*"] }));
        let zip = File::new("a.zip", "application/zip", b"PK\x03\x04".to_vec());
        assert_eq!(h.scan(&zip), ScanVerdict::review("files of type application/zip are reviewed"));
        let film = File::new("f.webm", "video/webm; codecs=vp9", b"\x1aE\xdf\xa3".to_vec());
        assert_eq!(h.scan(&film), ScanVerdict::review("files of type video/webm are reviewed"));
        assert_eq!(h.scan(&File::new("cat.png", "image/png", PNG)), ScanVerdict::Clean);
    }

    #[test]
    fn blocking_comes_before_review() {
        let mut h = harness(json!({ "max_size": 1, "review_mime": ["application/*"] }));
        let v = h.scan(&File::new("tool.exe", "application/x-msdownload", pe_head()));
        assert_eq!(v, ScanVerdict::blocked("the file is a Windows executable (PE)"));
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(human(512), "512 bytes");
        assert_eq!(human(1024), "1 KiB");
        assert_eq!(human(1536), "1.5 KiB");
        assert_eq!(human(10 << 20), "10 MiB");
        assert_eq!(human(3 << 30), "3 GiB");
    }

    #[test]
    fn a_short_or_odd_mz_head_is_still_an_executable() {
        assert_eq!(executable(b"MZ"), Some("a Windows or DOS executable (MZ header)"));
        let mut far = pe_head();
        far[0x3c..0x40].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(executable(&far), Some("a Windows or DOS executable (MZ header)"), "e_lfanew past the head");
        assert_eq!(executable(b"M"), None);
        assert_eq!(executable(PNG), None);
    }
}
