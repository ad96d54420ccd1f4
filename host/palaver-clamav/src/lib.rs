//! [`Clamd`]: the file scanner port ([`FileScanner`](palaver_core::ports::FileScanner)) over ClamAV's `clamd`, reached over TCP or a unix socket
//! with the `INSTREAM` command, so clamd needs no access to where the bytes are stored.
//!
//! **Port.** `scan` opens a connection (clamd closes it after answering INSTREAM), sends `zINSTREAM\0`, then the
//! file as it streams from the blob store, re-cut into chunks of at most [`ClamdConfig::chunk`] bytes, each behind
//! its 4-byte big-endian length, then a zero-length chunk, and reads the NUL-terminated reply (at most 4 KiB).
//! `stream: OK` is clean, `stream: <signature> FOUND` blocked (`clamav: <signature>`). The file is never held in
//! memory whole: one chunk at a time.
//!
//! **Size.** A file whose record is larger than [`ClamdConfig::max_bytes`] is not sent: it goes to review, as does
//! one clamd refuses as past its `StreamMaxLength` (`INSTREAM size limit exceeded`). Neither is clean: a scanner
//! that did not read the whole file cannot vouch for it.
//!
//! **On fault.** Every network step (connect, each write, each read of the body, the reply) is bounded by
//! [`ClamdConfig::timeout`]. A refused connection, an expired step, a failing body stream and any other clamd
//! `ERROR` are [`ScanError::Unavailable`](palaver_core::ports::ScanError::Unavailable): the file stays pending and the file-security worker tries again later.
//!
//! ```ignore
//! let cfg = ClamdConfig { address: "unix:/run/clamav/clamd.ctl".into(), ..ClamdConfig::default() };
//! cfg.validate()?;                                   // at start-up, with the rest of the configuration
//! let scanner: Arc<dyn FileScanner> = Arc::new(Clamd::new(cfg)?);
//! ```

mod client;
mod config;
mod reply;

#[cfg(test)]
mod fake_clamd;

pub use client::{Clamd, ClamdError};
pub use config::ClamdConfig;
