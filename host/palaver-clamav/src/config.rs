//! Where clamd is and the bounds a scan keeps to. A plain struct: the server maps its own configuration to it
//! and checks it at start-up with [`ClamdConfig::validate`], so a typo fails the start, not the first scan.

use std::path::PathBuf;
use std::time::Duration;

/// How to reach clamd and the bounds of one scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClamdConfig {
    /// `tcp://host:port`, `unix:/path/to/clamd.ctl`, or a bare `host:port` (TCP).
    pub address: String,
    /// The bound on every network step (connect, each write, each read of the body, the reply): a step that
    /// takes longer makes the scan `Unavailable`, so a stuck clamd never holds a worker.
    pub timeout: Duration,
    /// Files larger than this are not sent: they go to review. Keep it at or below clamd's `StreamMaxLength`
    /// (25 MiB by default), or clamd refuses them itself (also a review, but after the bytes were sent).
    pub max_bytes: u64,
    /// The largest INSTREAM chunk written. clamd reads chunks into a buffer of its own; 64 KiB keeps both sides'
    /// memory small without making the framing overhead noticeable.
    pub chunk: usize,
}

impl Default for ClamdConfig {
    fn default() -> Self {
        ClamdConfig {
            address: "tcp://127.0.0.1:3310".into(),
            timeout: Duration::from_secs(60),
            max_bytes: 100 * 1024 * 1024,
            chunk: 64 * 1024,
        }
    }
}

impl ClamdConfig {
    /// Checks the configuration without any I/O: the address form, a non-zero timeout and chunk.
    pub fn validate(&self) -> Result<(), String> {
        Address::parse(&self.address)?;
        if self.timeout.is_zero() {
            return Err("clamd timeout must be greater than zero".into());
        }
        if self.chunk == 0 {
            return Err("clamd chunk must be greater than zero".into());
        }
        // The chunk length goes on the wire as a 32-bit big-endian number.
        if u32::try_from(self.chunk).is_err() {
            return Err(format!("clamd chunk {} does not fit INSTREAM's 32-bit length", self.chunk));
        }
        Ok(())
    }
}

/// A parsed [`ClamdConfig::address`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Address {
    /// `host:port`, as `TcpStream::connect` takes it (a bracketed IPv6 host stays bracketed).
    Tcp(String),
    Unix(PathBuf),
}

impl Address {
    pub(crate) fn parse(address: &str) -> Result<Address, String> {
        let address = address.trim();
        if let Some(path) = address.strip_prefix("unix:") {
            if path.is_empty() {
                return Err(format!("clamd address {address:?}: unix: needs a socket path"));
            }
            return Ok(Address::Unix(PathBuf::from(path)));
        }
        let hostport = match address.split_once("://") {
            Some(("tcp", rest)) => rest,
            Some((scheme, _)) => {
                return Err(format!("clamd address {address:?}: unknown scheme {scheme:?} (tcp:// or unix:)"));
            }
            None => address,
        };
        let bad = || format!("clamd address {address:?}: expected tcp://host:port, unix:/path or host:port");
        let (host, port) = hostport.rsplit_once(':').ok_or_else(bad)?;
        let port: u16 = port.parse().map_err(|_| bad())?;
        // A bare IPv6 host would split at its last colon; only the bracketed form is unambiguous.
        let host_ok = !host.is_empty()
            && !host.contains('/')
            && (!host.contains(':') || (host.starts_with('[') && host.ends_with(']')));
        if port == 0 || !host_ok {
            return Err(bad());
        }
        Ok(Address::Tcp(hostport.to_owned()))
    }
}

impl std::fmt::Display for Address {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Address::Tcp(hostport) => write!(f, "tcp://{hostport}"),
            Address::Unix(path) => write!(f, "unix:{}", path.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_forms() {
        assert_eq!(Address::parse("tcp://127.0.0.1:3310"), Ok(Address::Tcp("127.0.0.1:3310".into())));
        assert_eq!(Address::parse("clamav.internal:3310"), Ok(Address::Tcp("clamav.internal:3310".into())));
        assert_eq!(Address::parse("tcp://[::1]:3310"), Ok(Address::Tcp("[::1]:3310".into())));
        assert_eq!(
            Address::parse("unix:/run/clamav/clamd.ctl"),
            Ok(Address::Unix(PathBuf::from("/run/clamav/clamd.ctl")))
        );
        for bad in [
            "",
            "unix:",
            "tcp://",
            "tcp://host",
            "tcp://:3310",
            "tcp://host:0",
            "tcp://host:99999",
            "tcp://host:port",
            "http://host:3310",
            "::1:3310",
            "localhost",
        ] {
            assert!(Address::parse(bad).is_err(), "{bad:?} must be refused");
        }
    }

    #[test]
    fn address_display_round_trips() {
        for a in ["tcp://127.0.0.1:3310", "unix:/run/clamd.ctl"] {
            assert_eq!(Address::parse(a).unwrap().to_string(), a);
        }
        assert_eq!(Address::parse("h:1").unwrap().to_string(), "tcp://h:1");
    }

    #[test]
    fn validation() {
        assert_eq!(ClamdConfig::default().validate(), Ok(()));
        let cfg = ClamdConfig::default();
        assert_eq!(cfg.address, "tcp://127.0.0.1:3310");
        assert_eq!((cfg.timeout, cfg.max_bytes, cfg.chunk), (Duration::from_secs(60), 100 << 20, 64 << 10));
        assert!(ClamdConfig { timeout: Duration::ZERO, ..ClamdConfig::default() }.validate().is_err());
        assert!(ClamdConfig { chunk: 0, ..ClamdConfig::default() }.validate().is_err());
        assert!(ClamdConfig { address: "ftp://x:1".into(), ..ClamdConfig::default() }.validate().is_err());
    }
}
