//! A test file scanner driven by the file's name: `boom` traps, `spin` never returns, `block` blocks, `review`
//! sends to review, `long` blocks with a reason of 1000 `é` (2000 bytes, which the host must cut to 256 bytes on a
//! character boundary), `uploader` reviews with the uploader and the head's length as the reason, anything else
//! is clean.

use palaver_plugin_sdk::{Context, File, FileScanner, Host, ScanVerdict};

/// Does what it is told.
#[derive(Default)]
pub struct ScanFault;

impl FileScanner for ScanFault {
    fn scan_file<H: Host>(&mut self, _cx: &mut Context<'_, H>, file: &File) -> ScanVerdict {
        match file.name.as_str() {
            "boom" => panic!("boom requested"),
            "spin" => {
                let mut n = file.size;
                // `black_box` keeps the optimiser from proving the loop useless.
                loop {
                    n = std::hint::black_box(n.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
                }
            }
            "block" => ScanVerdict::blocked("asked to"),
            "review" => ScanVerdict::review("asked to"),
            "long" => ScanVerdict::blocked("é".repeat(1000)),
            "uploader" => ScanVerdict::review(format!("{} sent {} bytes", file.uploader, file.head.len())),
            _ => ScanVerdict::Clean,
        }
    }
}

palaver_plugin_sdk::file_scanner!(ScanFault);
