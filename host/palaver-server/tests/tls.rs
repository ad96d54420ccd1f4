//! TLS to Redis: a node reaches a Redis that only speaks TLS through a `rediss://` address, trusting a private CA
//! through `SSL_CERT_FILE` (the system roots otherwise), and refuses to start against the same server when the
//! CA is not trusted; and TLS to MariaDB: against a throwaway `mariadbd` that takes only TLS clients, a node
//! with `ssl-mode=VERIFY_IDENTITY&ssl-ca=…` serves, one with `ssl-mode=DISABLED` or without the CA is refused.
//!
//! Needs `redis-server` built with TLS (Debian's is), `mariadb-server` (installed by `start_mariadb`), root, and
//! `openssl` on the PATH; skips with a message when one is missing.

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

/// The two tests start servers and nodes of their own; run one at a time so that neither's start-up times out
/// while the other's `mariadb-install-db` takes the machine.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

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
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
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

/// A throwaway MariaDB that only takes TLS clients (`require-secure-transport`, and a user `tls` that must use
/// it), with the test CA's certificate,
/// on its own data directory and port. `None` (with the reason printed) when it cannot run here: this needs
/// Debian's `mariadb-server` (`start_mariadb` of `scripts/lib/services.sh` installs it) and root, since the
/// server is started `--user=root`.
fn tls_mariadb(dir: &Path) -> Option<(Killed, u16)> {
    let data = dir.join("mariadb");
    std::fs::create_dir_all(&data).unwrap();
    let datadir = format!("--datadir={}", data.display());
    let installed = run(Command::new("mariadb-install-db")
        .args(["--no-defaults", &datadir, "--user=root"])
        .args(["--auth-root-authentication-method=normal", "--skip-test-db"]));
    if !installed {
        eprintln!("skipped: mariadb-install-db failed (is mariadb-server installed, and are we root?)");
        return None;
    }
    let port = free_port();
    let server = Command::new("/usr/sbin/mariadbd")
        .args(["--no-defaults", &datadir, "--user=root", "--bind-address=127.0.0.1", &format!("--port={port}")])
        .arg(format!("--socket={}", data.join("sock").display()))
        .args(["--require-secure-transport=ON", "--innodb-buffer-pool-size=32M"])
        // Absolute: the server reads relative names against its data directory.
        .args(
            ["srv.pem", "srv.key", "ca.pem"]
                .iter()
                .zip(["--ssl-cert", "--ssl-key", "--ssl-ca"])
                .map(|(file, flag)| format!("{flag}={}", dir.join(file).display())),
        )
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("mariadb.err")).unwrap())
        .spawn()
        .ok()?;
    let server = Killed(server);
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "mariadbd did not listen: {}",
            std::fs::read_to_string(dir.join("mariadb.err")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // A user that must come over TLS (`REQUIRE SSL`), made over the socket, which needs no transport security.
    let socket = format!("--socket={}", data.join("sock").display());
    // Host `localhost` explicitly: a fresh data directory's anonymous ''@'localhost' would shadow a '%' user.
    let sql = "CREATE USER 'tls'@'localhost' IDENTIFIED BY 'tls' REQUIRE SSL; \
               GRANT ALL PRIVILEGES ON *.* TO 'tls'@'localhost';";
    assert!(run(Command::new("mariadb").args(["--no-defaults", &socket, "-uroot", "-e", sql])), "the tls user");
    Some((server, port))
}

/// Starts a scale-out node on the MariaDB at `url`: `Ok` once `/readyz` reports the database answering, `Err`
/// with the log if the node exits first.
fn start_mysql_node(dir: &Path, url: &str) -> Result<(), String> {
    let port = free_port();
    let data = tempfile::tempdir_in(dir).unwrap();
    let log = dir.join(format!("node-{port}.log"));
    let mut node = Killed(
        Command::new(env!("CARGO_BIN_EXE_palaver"))
            .args(["serve", "--dev", "--listen", &format!("127.0.0.1:{port}"), "--data-dir"])
            .arg(data.path())
            .env("PALAVER_STORE__KIND", "mysql")
            .env("PALAVER_STORE__URL", url)
            .env_remove("PALAVER_LOG")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if let Some(status) = node.0.try_wait().unwrap() {
            return Err(format!("exited ({status}): {}", std::fs::read_to_string(&log).unwrap_or_default()));
        }
        if let Some(body) = get(port, "/readyz") {
            let report: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
            if report["checks"]["database"]["ok"] == true {
                return Ok(());
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("the node neither reached MariaDB nor exited: {}", std::fs::read_to_string(&log).unwrap_or_default());
}

#[test]
fn a_node_reaches_mariadb_over_tls_with_ssl_mode_and_a_private_ca() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    if !certificates(dir.path()) {
        eprintln!("skipped: openssl could not make test certificates");
        return;
    }
    let Some((_server, port)) = tls_mariadb(dir.path()) else { return };
    let ca = dir.path().join("ca.pem");
    let base = format!("mysql://tls:tls@localhost:{port}/pt_tls_ctl");

    // The CA named in the URL verifies the server's certificate: the node migrates its control database and serves.
    start_mysql_node(dir.path(), &format!("{base}?ssl-mode=VERIFY_IDENTITY&ssl-ca={}", ca.display()))
        .expect("the node serves over TLS");
    // The server takes TLS clients only, so the same user and password in plain text are refused (MariaDB
    // answers a `REQUIRE SSL` user without TLS with "access denied", a plain transport with "insecure").
    let plain = start_mysql_node(dir.path(), &format!("{base}?ssl-mode=DISABLED")).expect_err("plain text is refused");
    let plain = plain.to_lowercase();
    assert!(plain.contains("access denied") || plain.contains("insecure transport"), "{plain}");
    // Verifying against the system roots alone fails: the private CA is not among them.
    let untrusted =
        start_mysql_node(dir.path(), &format!("{base}?ssl-mode=VERIFY_CA")).expect_err("an unknown CA is refused");
    assert!(untrusted.to_lowercase().contains("certificate"), "{untrusted}");
}
