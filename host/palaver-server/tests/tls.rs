//! TLS to Redis: a node reaches a Redis that only speaks TLS through a `rediss://` address, trusting a private CA
//! through `SSL_CERT_FILE` (the system roots otherwise), and refuses to start against the same server when the
//! CA is not trusted. (MySQL's `ssl-mode` is checked in `palaver-store-mysql`.)
//!
//! Needs `redis-server` built with TLS (Debian's is) and `openssl` on the PATH; skips with a message when
//! either is missing.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn run(cmd: &mut Command) -> bool {
    cmd.stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

/// A CA and a `localhost` server certificate it signed, in `dir`.
fn certificates(dir: &Path) -> bool {
    let openssl = |args: &[&str]| run(Command::new("openssl").args(args).current_dir(dir));
    std::fs::write(dir.join("ext"), "subjectAltName=DNS:localhost,IP:127.0.0.1").unwrap();
    let ca = ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "1"];
    openssl(&[&ca[..], &["-subj", "/CN=Palaver test CA"]].concat())
        && openssl(&[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "srv.key",
            "-out",
            "srv.csr",
            "-subj",
            "/CN=localhost",
        ])
        && openssl(&[
            "x509",
            "-req",
            "-in",
            "srv.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "srv.pem",
            "-days",
            "1",
            "-extfile",
            "ext",
        ])
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// GET `path` on 127.0.0.1:`port`; the body, or `None` while nothing answers.
fn get(port: u16, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out.split_once("\r\n\r\n")?.1.to_owned())
}

/// Starts a node whose Redis is the TLS server on `redis_port`, trusting `ca` (or nothing but the system roots).
/// `Ok` with `/readyz`'s report on Redis once Redis answers there, `Err` with the log if the node exits.
fn start_node(dir: &Path, redis_port: u16, ca: Option<&Path>) -> Result<serde_json::Value, String> {
    let port = free_port();
    let data = tempfile::tempdir_in(dir).unwrap();
    let redis = format!("{{ addr = \"rediss://localhost:{redis_port}\", key_prefix = \"pt_tls{port}\" }}");
    let log = dir.join(format!("node-{port}.log"));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_palaver"));
    cmd.args(["serve", "--listen", &format!("127.0.0.1:{port}"), "--data-dir"])
        .arg(data.path())
        .env("PALAVER_STORE_CONFIG__REDIS", redis)
        .env_remove("PALAVER_LOG")
        .env_remove("SSL_CERT_DIR")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap());
    match ca {
        Some(ca) => cmd.env("SSL_CERT_FILE", ca),
        None => cmd.env_remove("SSL_CERT_FILE"),
    };
    let mut node = Killed(cmd.spawn().unwrap());
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Some(status) = node.0.try_wait().unwrap() {
            return Err(format!("exited ({status}): {}", std::fs::read_to_string(&log).unwrap_or_default()));
        }
        if let Some(body) = get(port, "/readyz") {
            let report: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
            if report["checks"]["redis"]["ok"] == true {
                return Ok(report["checks"]["redis"].clone());
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("the node neither reached Redis nor exited: {}", std::fs::read_to_string(&log).unwrap_or_default());
}

#[test]
fn a_node_reaches_redis_over_tls_with_a_rediss_address() {
    let dir = tempfile::tempdir().unwrap();
    if !certificates(dir.path()) {
        eprintln!("skipped: openssl could not make test certificates");
        return;
    }
    let redis_port = free_port();
    let server = Command::new("redis-server")
        .args(["--port", "0", "--tls-port", &redis_port.to_string(), "--save", "", "--appendonly", "no"])
        .args(["--tls-cert-file", "srv.pem", "--tls-key-file", "srv.key", "--tls-ca-cert-file", "ca.pem"])
        .args(["--tls-auth-clients", "no"])
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .spawn();
    let Ok(server) = server else {
        eprintln!("skipped: no redis-server");
        return;
    };
    let _server = Killed(server);
    let deadline = Instant::now() + Duration::from_secs(5);
    while std::net::TcpStream::connect(("127.0.0.1", redis_port)).is_err() {
        assert!(Instant::now() < deadline, "redis-server did not listen (built without TLS?)");
        std::thread::sleep(Duration::from_millis(50));
    }

    let trusted = start_node(dir.path(), redis_port, Some(&dir.path().join("ca.pem")));
    assert_eq!(trusted.expect("the node serves")["ok"], true);

    // The node claims its id in Redis before it serves, so an untrusted certificate stops the start.
    let untrusted = start_node(dir.path(), redis_port, None).expect_err("an unknown CA is refused");
    assert!(untrusted.to_lowercase().contains("certificate"), "{untrusted}");
}
