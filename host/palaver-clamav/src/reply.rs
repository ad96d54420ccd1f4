//! What clamd says back, and how it is read. Replies to the `z`-commands end in a NUL byte; the reader stops
//! there (or at a bound, so a peer that is not clamd cannot make it buffer without end).

use palaver_core::ports::{ScanError, ScanVerdict};
use tokio::io::{AsyncRead, AsyncReadExt};

/// The longest reply read. A verdict is a signature name and a few words; anything longer is not clamd.
pub(crate) const MAX_REPLY: usize = 4096;

/// Reads one NUL-terminated reply (without the NUL); the error is the caller's to put in context. A peer that closes first gives what it sent, which the
/// parser judges; a peer that closes having sent nothing, or sends more than [`MAX_REPLY`] without a NUL, is an
/// error.
pub(crate) async fn read_reply<R: AsyncRead + Unpin>(r: &mut R) -> Result<String, String> {
    let mut buf = Vec::with_capacity(64);
    let mut read = [0u8; 256];
    loop {
        let n = r.read(&mut read).await.map_err(|e| e.to_string())?;
        if n == 0 {
            if buf.is_empty() {
                return Err("closed without a reply".into());
            }
            break;
        }
        if let Some(end) = read[..n].iter().position(|&b| b == 0) {
            buf.extend_from_slice(&read[..end]);
            break;
        }
        buf.extend_from_slice(&read[..n]);
        if buf.len() > MAX_REPLY {
            return Err(format!("a reply longer than {MAX_REPLY} bytes without its end"));
        }
    }
    if buf.len() > MAX_REPLY {
        return Err(format!("a reply longer than {MAX_REPLY} bytes"));
    }
    Ok(String::from_utf8_lossy(&buf).trim().to_owned())
}

/// The verdict an INSTREAM reply gives.
///
/// - `stream: OK` → clean;
/// - `stream: <signature> FOUND` → blocked, the reason naming the signature;
/// - `INSTREAM size limit exceeded. ERROR` → review: clamd would not read the whole file, so it cannot say;
/// - any other `… ERROR`, or anything unrecognised → unavailable: the worker tries again later.
pub(crate) fn parse_scan_reply(reply: &str) -> Result<ScanVerdict, ScanError> {
    let reply = reply.trim_end_matches(['\0', '\n', '\r', ' ']);
    if reply.ends_with("ERROR") {
        if reply.starts_with("INSTREAM size limit exceeded") {
            return Ok(ScanVerdict::Review { reason: "larger than clamd's StreamMaxLength".into() });
        }
        return Err(unavailable(format!("clamd: {reply}")));
    }
    // Only a session (IDSESSION, not used here) numbers its replies; the stream is always named `stream`.
    let Some(body) = reply.strip_prefix("stream: ") else {
        return Err(unavailable(format!("unexpected clamd reply {reply:?}")));
    };
    if body == "OK" {
        return Ok(ScanVerdict::Clean);
    }
    match body.strip_suffix(" FOUND").map(str::trim) {
        Some(signature) if !signature.is_empty() => Ok(ScanVerdict::Blocked { reason: format!("clamav: {signature}") }),
        _ => Err(unavailable(format!("unexpected clamd reply {reply:?}"))),
    }
}

pub(crate) fn unavailable(why: String) -> ScanError {
    ScanError::Unavailable(why)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts() {
        assert_eq!(parse_scan_reply("stream: OK").unwrap(), ScanVerdict::Clean);
        assert_eq!(
            parse_scan_reply("stream: Eicar-Signature FOUND").unwrap(),
            ScanVerdict::Blocked { reason: "clamav: Eicar-Signature".into() }
        );
        assert_eq!(
            parse_scan_reply("stream: Palaver.Test.EICAR.UNOFFICIAL FOUND\0").unwrap(),
            ScanVerdict::Blocked { reason: "clamav: Palaver.Test.EICAR.UNOFFICIAL".into() }
        );
        assert_eq!(
            parse_scan_reply("INSTREAM size limit exceeded. ERROR").unwrap(),
            ScanVerdict::Review { reason: "larger than clamd's StreamMaxLength".into() }
        );
    }

    #[test]
    fn faults_are_unavailable() {
        for reply in [
            "",
            "stream: ",
            "stream:  FOUND",
            "stream: FOUND",
            "PONG",
            "UNKNOWN COMMAND",
            "stream: lstat() failed: No such file or directory. ERROR",
            "Error processing command. ERROR",
            "COMMAND READ TIMED OUT",
        ] {
            assert!(
                matches!(parse_scan_reply(reply), Err(ScanError::Unavailable(_))),
                "{reply:?} must be unavailable, not a verdict"
            );
        }
    }

    #[tokio::test]
    async fn replies_end_at_nul_and_are_bounded() {
        let mut r: &[u8] = b"stream: OK\0trailing";
        assert_eq!(read_reply(&mut r).await.unwrap(), "stream: OK");
        let mut r: &[u8] = b"PONG";
        assert_eq!(read_reply(&mut r).await.unwrap(), "PONG", "a peer closing after its reply is read to the end");
        let mut r: &[u8] = b"";
        assert!(read_reply(&mut r).await.is_err());
        let long = vec![b'a'; MAX_REPLY + 1];
        assert!(read_reply(&mut long.as_slice()).await.is_err());
        let mut long = vec![b'a'; MAX_REPLY + 10];
        long.push(0);
        assert!(read_reply(&mut long.as_slice()).await.is_err(), "even when the NUL follows");
        let mut exact = vec![b'a'; MAX_REPLY];
        exact.push(0);
        assert_eq!(read_reply(&mut exact.as_slice()).await.unwrap().len(), MAX_REPLY);
    }
}
