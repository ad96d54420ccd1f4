//! `palaver tenant …` against a real MariaDB control database: a tenant is created with a key, `key add` gives
//! it a second one, `key rotate` leaves only a fresh key (a node that starts afterwards refuses the old ones
//! and takes the new one), and `key revoke` removes one key and refuses a key the tenant does not hold.

mod common;

use serde_json::Value;
use std::net::SocketAddr;
use std::process::Command;

struct Cli {
    env: Vec<(String, String)>,
}

impl Cli {
    /// Runs `palaver ARGS` on the test's control database: (exit ok, stdout, stderr).
    fn run(&self, args: &[&str]) -> (bool, String, String) {
        let out = Command::new(env!("CARGO_BIN_EXE_palaver"))
            .args(args)
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env_remove("PALAVER_LOG")
            .output()
            .unwrap();
        let text = |b: &[u8]| String::from_utf8_lossy(b).trim().to_owned();
        (out.status.success(), text(&out.stdout), text(&out.stderr))
    }

    fn ok(&self, args: &[&str]) -> String {
        let (ok, stdout, stderr) = self.run(args);
        assert!(ok, "palaver {args:?} failed: {stderr}");
        stdout
    }
}

/// Opens a long-poll session with `key`: 201 when the key is the tenant's, 403 when it is not.
async fn open_with(addr: SocketAddr, key: &str) -> u16 {
    common::http(addr, "POST", &format!("/v0/channels/lp?apikey={key}"), "").await.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenant_keys_are_added_rotated_and_revoked_from_the_cli() {
    let mysql = std::env::var("PALAVER_TEST_MYSQL_ADDR").unwrap_or_else(|_| "127.0.0.1:3306".into());
    let tag = format!("pt_cli_{:08x}", rand::random::<u32>());
    let url = format!("mysql://palaver:palaver@{mysql}/{tag}_ctl");
    let prefix = format!("{tag}_t_");
    let env = [
        ("PALAVER_STORE__KIND", "mysql"),
        ("PALAVER_STORE__URL", &url),
        ("PALAVER_STORE__TENANT_DATABASE_PREFIX", &prefix),
    ];
    let cli = Cli { env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect() };

    let created: Value = serde_json::from_str(&cli.ok(&["tenant", "create", "acme"])).unwrap();
    let first = created["api_key"].as_str().unwrap().to_owned();
    let second = cli.ok(&["tenant", "key", "add", "acme"]);
    assert_ne!(first, second);
    let listed = cli.ok(&["tenant", "list"]);
    assert!(listed.lines().any(|l| l.contains("\tacme\t") && l.ends_with("2 key(s)")), "{listed}");

    let (ok, third, stderr) = cli.run(&["tenant", "key", "rotate", "acme"]);
    assert!(ok && stderr.contains("revoked 2 key(s)"), "{stderr}");
    assert!(![first.as_str(), second.as_str()].contains(&third.as_str()));
    let listed = cli.ok(&["tenant", "list"]);
    assert!(listed.lines().any(|l| l.contains("\tacme\t") && l.ends_with("1 key(s)")), "{listed}");

    // A node that starts now has nothing cached: only the rotated key opens a session.
    let data = tempfile::tempdir().unwrap();
    let node = palaver_server::wiring::start(common::config(data.path(), &env)).await.expect("the node starts");
    assert_eq!(open_with(node.addr(), &third).await, 201, "the new key works");
    for old in [&first, &second] {
        assert_eq!(open_with(node.addr(), old).await, 403, "a rotated-out key is refused");
    }
    node.shutdown().await;

    assert!(cli.ok(&["tenant", "key", "revoke", "acme", &third]).starts_with("revoked"));
    let (ok, _, stderr) = cli.run(&["tenant", "key", "revoke", "acme", &third]);
    assert!(!ok && stderr.contains("acme holds no such key"), "a second revoke fails clearly: {stderr}");
    let listed = cli.ok(&["tenant", "list"]);
    assert!(listed.lines().any(|l| l.contains("\tacme\t") && l.ends_with("0 key(s)")), "{listed}");
    let (ok, _, stderr) = cli.run(&["tenant", "key", "rotate", "nobody"]);
    assert!(!ok && stderr.contains("no such tenant"), "{stderr}");
    common::drop_databases(&tag);
}
