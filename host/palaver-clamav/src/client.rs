//! The clamd client: one connection per command, every step under the configured timeout.

use crate::config::{Address, ClamdConfig};
use crate::reply::{parse_scan_reply, read_reply, unavailable};
use bytes::{BufMut, BytesMut};
use futures_util::StreamExt;
use palaver_core::ports::{ByteStream, FileRecord, FileScanner, ScanError, ScanVerdict};
use std::future::Future;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

/// Why a [`Clamd`] could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ClamdError {
    /// The configuration does not validate ([`ClamdConfig::validate`]).
    #[error("clamd configuration: {0}")]
    Config(String),
}

/// ClamAV's `clamd`, reached over TCP or a unix socket, as a [`FileScanner`].
#[derive(Debug, Clone)]
pub struct Clamd {
    cfg: ClamdConfig,
    address: Address,
}

/// How sending a stream failed: the body (nothing more to learn from clamd) or a write to clamd (whose reply
/// may say why it stopped reading).
enum Failed {
    Body(ScanError),
    Write(ScanError),
}

/// A connection either way clamd listens.
trait Conn: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Conn for T {}

impl Clamd {
    /// A client for the clamd `cfg` names. No I/O: a clamd that is down makes scans `Unavailable` (and the worker
    /// retry), it does not stop the node from starting.
    pub fn new(cfg: ClamdConfig) -> Result<Clamd, ClamdError> {
        cfg.validate().map_err(ClamdError::Config)?;
        let address = Address::parse(&cfg.address).map_err(ClamdError::Config)?;
        Ok(Clamd { cfg, address })
    }

    /// The configuration it was built with.
    pub fn config(&self) -> &ClamdConfig {
        &self.cfg
    }

    /// Asks clamd for `PONG`: for readiness checks and start-up logs.
    pub async fn ping(&self) -> Result<(), ScanError> {
        let mut conn = self.connect().await?;
        self.step("sending PING", conn.write_all(b"zPING\0")).await?;
        let reply = self.step("reading the PING reply", read_reply(&mut conn)).await?;
        if reply == "PONG" { Ok(()) } else { Err(unavailable(format!("clamd answered PING with {reply:?}"))) }
    }

    async fn connect(&self) -> Result<Box<dyn Conn>, ScanError> {
        let what = "connecting";
        let conn: Box<dyn Conn> = match &self.address {
            Address::Tcp(hostport) => {
                let s = self.step(what, tokio::net::TcpStream::connect(hostport.as_str())).await?;
                // Chunks are written whole; waiting to coalesce them only adds latency.
                let _ = s.set_nodelay(true);
                Box::new(s)
            }
            Address::Unix(path) => Box::new(self.step(what, tokio::net::UnixStream::connect(path)).await?),
        };
        Ok(conn)
    }

    /// Runs one network step under the timeout: expiry and I/O failure are both `Unavailable`.
    async fn step<T, E: std::fmt::Display>(
        &self,
        what: &str,
        fut: impl Future<Output = Result<T, E>>,
    ) -> Result<T, ScanError> {
        match tokio::time::timeout(self.cfg.timeout, fut).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(unavailable(format!("{what} ({}): {e}", self.address))),
            Err(_) => Err(unavailable(format!("{what} ({}): timed out after {:?}", self.address, self.cfg.timeout))),
        }
    }

    /// Streams `body` as INSTREAM chunks of at most `chunk` bytes, then the zero-length chunk. Bytes are gathered
    /// into one chunk-sized buffer whatever sizes the stream yields, so memory stays at one chunk.
    /// `Ok(None)` when everything was sent; `Ok(Some(verdict))` when the stream outgrew `max_bytes`.
    async fn send_stream(&self, conn: &mut dyn Conn, mut body: ByteStream) -> Result<Option<ScanVerdict>, Failed> {
        let chunk = self.cfg.chunk;
        let mut pending = BytesMut::with_capacity(chunk + 4);
        let mut sent: u64 = 0;
        loop {
            // The body comes from the blob store (S3, perhaps): a stalled read is bounded like clamd's steps.
            let next = tokio::time::timeout(self.cfg.timeout, body.next()).await.map_err(|_| {
                Failed::Body(unavailable(format!("reading the file: timed out after {:?}", self.cfg.timeout)))
            })?;
            let Some(piece) = next else { break };
            let mut piece = piece.map_err(|e| Failed::Body(unavailable(format!("reading the file: {e}"))))?;
            sent += piece.len() as u64;
            // The record's size was checked before sending; a body longer than its record is refused as well.
            if sent > self.cfg.max_bytes {
                return Ok(Some(self.too_large()));
            }
            while !piece.is_empty() {
                if pending.is_empty() {
                    pending.put_u32(0); // the length, filled in when the chunk is written
                }
                let take = piece.len().min(chunk + 4 - pending.len());
                pending.extend_from_slice(&piece.split_to(take));
                if pending.len() == chunk + 4 {
                    self.write_chunk(conn, &mut pending).await.map_err(Failed::Write)?;
                }
            }
        }
        if !pending.is_empty() {
            self.write_chunk(conn, &mut pending).await.map_err(Failed::Write)?;
        }
        self.step("ending the stream", conn.write_all(&[0, 0, 0, 0])).await.map_err(Failed::Write)?;
        self.step("flushing", conn.flush()).await.map_err(Failed::Write)?;
        Ok(None)
    }

    async fn write_chunk(&self, conn: &mut dyn Conn, pending: &mut BytesMut) -> Result<(), ScanError> {
        let len = u32::try_from(pending.len() - 4).expect("validate bounds the chunk to u32");
        pending[..4].copy_from_slice(&len.to_be_bytes());
        self.step("sending a chunk", conn.write_all(pending)).await?;
        pending.clear();
        Ok(())
    }

    fn too_large(&self) -> ScanVerdict {
        ScanVerdict::Review { reason: format!("larger than the {} bytes the scanner takes", self.cfg.max_bytes) }
    }
}

#[async_trait::async_trait]
impl FileScanner for Clamd {
    fn name(&self) -> &'static str {
        "clamav"
    }

    async fn scan(&self, file: &FileRecord, body: ByteStream) -> Result<ScanVerdict, ScanError> {
        if file.size > self.cfg.max_bytes {
            return Ok(self.too_large());
        }
        let started = Instant::now();
        // A fresh connection per scan: clamd closes one after answering INSTREAM.
        let mut conn = self.connect().await?;
        self.step("sending INSTREAM", conn.write_all(b"zINSTREAM\0")).await?;
        let verdict = match self.send_stream(&mut *conn, body).await {
            Ok(None) => {
                let reply = self.step("reading the reply", read_reply(&mut conn)).await?;
                parse_scan_reply(&reply)?
            }
            Ok(Some(verdict)) => verdict,
            Err(Failed::Body(e)) => return Err(e),
            Err(Failed::Write(e)) => {
                // clamd answers a stream past its StreamMaxLength and closes while the client still writes: the
                // write fails, but the reply may be waiting. Read it if it is there; otherwise the write's error
                // stands.
                let grace = self.cfg.timeout.min(Duration::from_secs(1));
                match tokio::time::timeout(grace, read_reply(&mut conn)).await {
                    Ok(Ok(reply)) => parse_scan_reply(&reply).map_err(|_| e)?,
                    _ => return Err(e),
                }
            }
        };
        tracing::debug!(
            file = %file.id,
            size = file.size,
            verdict = verdict.as_str(),
            reason = verdict.reason(),
            ms = started.elapsed().as_millis() as u64,
            "clamd scan"
        );
        Ok(verdict)
    }
}
