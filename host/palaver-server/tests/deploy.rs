//! The deployment artefacts in `deploy/` against the code: the image builds with the commands the README's
//! serve script runs; every metric the Grafana dashboard and the Prometheus alerts read is one a running node
//! exports; `/readyz` names every dependency; `config check` validates without starting; JSON logs are JSON; a
//! scale-out node refuses the demo salt and a missing token key without `--dev`.
//! (`scripts/check-deploy.sh` validates the chart and the compose file themselves.) The metrics test needs
//! `cargo xtask plugins` and Redis on 127.0.0.1:6379 (or `PALAVER_TEST_REDIS_ADDR`).

mod common;

use common::{Client, http, plugins_dir, start};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::PathBuf;

fn repo_file(path: &str) -> String {
    let full = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

#[test]
fn the_image_builds_with_the_commands_the_serve_script_runs() {
    let dockerfile = repo_file("deploy/Dockerfile");
    let serve = repo_file("scripts/serve.sh");
    let builds: Vec<&str> =
        dockerfile.lines().filter_map(|l| l.strip_prefix("RUN ")).filter(|c| c.starts_with("cargo ")).collect();
    assert_eq!(builds.len(), 2, "the plugins and the server: {builds:?}");
    for command in builds {
        assert!(serve.lines().any(|l| l.trim() == command), "scripts/serve.sh does not run `{command}`");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_metric_the_dashboard_and_the_alerts_read_is_exported() {
    // The Kafka consumers' metrics exist only with `[kafka]`: the audit test's Kafka node checks those.
    let all = common::deploy_metric_names();
    let used: BTreeSet<&String> = all.iter().filter(|n| !n.starts_with("palaver_kafka_")).collect();
    assert!(used.len() >= 10, "{used:?}");

    // A node with everything that registers metrics: the plugins and Redis.
    let plugins = plugins_dir(&["moderation-"]);
    let dir = plugins.path().to_string_lossy().into_owned();
    let redis = std::env::var("PALAVER_TEST_REDIS_ADDR").unwrap_or_else(|_| "127.0.0.1:6379".into());
    let tag = format!("pt_deploy_{:08x}", rand::random::<u32>());
    let redis_cfg = format!("{{ addr = \"{redis}\", key_prefix = \"{tag}\" }}");
    let data = tempfile::tempdir().unwrap();
    let node = start(data.path(), &[("PALAVER_PLUGINS__DIR", &dir), ("PALAVER_STORE_CONFIG__REDIS", &redis_cfg)]).await;
    let mut c = Client::connect(node.addr()).await;
    c.signup("watched").await;
    let grp = c.req("sub", json!({ "topic": "new1" })).await["topic"].as_str().unwrap().to_owned();
    assert_eq!(c.req("pub", json!({ "topic": grp, "content": "counted" })).await["code"], 202);
    let (status, metrics) = http(node.addr(), "GET", "/metrics", "").await;
    assert_eq!(status, 200);
    let exported = common::exported_names(&metrics);
    let missing: Vec<&String> = used.iter().copied().filter(|name| !exported.contains(name.as_str())).collect();
    assert!(missing.is_empty(), "used by deploy/ but not exported: {missing:?}");

    // Readiness names every dependency; the bus subscriber may still be connecting right after the start.
    let mut ready = Value::Null;
    for _ in 0..50 {
        let (status, body) = http(node.addr(), "GET", "/readyz", "").await;
        assert_eq!(status, 200, "{body}");
        ready = serde_json::from_str(&body).unwrap();
        if ready["status"] == "ready" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(ready["status"], "ready", "{ready}");
    for (name, required) in [("database", true), ("redis", false), ("bus", false)] {
        assert_eq!(ready["checks"][name], json!({ "ok": true, "required": required }), "{ready}");
    }
    node.shutdown().await;

    common::drop_redis_keys(&redis, &tag).await;
}

#[test]
fn config_check_validates_without_starting() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.toml");
    std::fs::write(&good, "[server]\nlisten = \"127.0.0.1:6999\"\n[log]\nformat = \"json\"\n").unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[limits]\nmax_message_size = 1\n").unwrap();
    let check = |file: &std::path::Path| {
        std::process::Command::new(env!("CARGO_BIN_EXE_palaver"))
            .args(["config", "check", "--config"])
            .arg(file)
            .env_remove("PALAVER_LOG")
            .output()
            .unwrap()
    };
    let ok = check(&good);
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    assert!(String::from_utf8_lossy(&ok.stdout).contains("configuration is valid"));
    let refused = check(&bad);
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("max_message_size"), "the reason is printed");
    assert!(!dir.path().join("data").exists(), "nothing was started or created");
}

#[test]
fn json_logs_are_one_object_per_line_and_the_access_log_hides_queries() {
    use std::io::{BufRead, BufReader, Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["serve", "--listen", &format!("127.0.0.1:{port}"), "--data-dir"])
        .arg(dir.path())
        .env("PALAVER_LOG__FORMAT", "json")
        .env("PALAVER_LOG__ACCESS", "true")
        .env_remove("PALAVER_LOG")
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    // Every line must be a JSON object with the standard fields.
    let mut next = move || {
        let line = lines.next()?.unwrap();
        let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert!(v["timestamp"].is_string() && v["level"].is_string() && v["message"].is_string(), "{line}");
        Some((line, v))
    };
    while let Some((_, v)) = next() {
        if v["message"] == "palaver is serving" {
            break;
        }
    }
    let mut http = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(http, "GET /livez?apikey=secret-key HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    http.read_to_end(&mut Vec::new()).unwrap();
    let access = loop {
        let (line, v) = next().expect("an access line before the log ends");
        if v["target"] == "palaver::access" {
            break (line, v);
        }
    };
    child.kill().unwrap();
    child.wait().unwrap();
    let (line, v) = access;
    assert_eq!(
        (v["method"].as_str(), v["path"].as_str(), v["status"].as_u64()),
        (Some("GET"), Some("/livez"), Some(200))
    );
    assert!(!line.contains("secret-key"), "the query stays out of the log: {line}");
}

#[test]
fn a_scale_out_node_refuses_development_settings_without_dev() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("node.toml");
    // Nothing listens on port 1: the refusal must come before any connection is tried.
    std::fs::write(&config, "[store]\nkind = \"mysql\"\nurl = \"mysql://palaver:palaver@127.0.0.1:1/c\"\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["serve", "--config"])
        .arg(&config)
        .arg("--data-dir")
        .arg(dir.path())
        .env_remove("PALAVER_API__KEY_SALT")
        .env_remove("PALAVER_AUTH__TOKEN_KEY")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("refusing to serve a scale-out node"), "{stderr}");
    assert!(
        stderr.contains("api.key_salt") && stderr.contains("auth.token_key") && stderr.contains("--dev"),
        "{stderr}"
    );
}
