//! The server under test: either an address the user gave, or a palaver binary this tool spawns and kills.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use clap::Args;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The demo API key that Tinode's web app and tn-cli use by default.
pub(crate) const DEMO_API_KEY: &str = "AQEAAAABAAD_rAp4DJh05a1HAwFT3A6K";

/// Where the server is, shared by every subcommand.
#[derive(Args, Debug, Clone)]
pub(crate) struct TargetArgs {
    /// Address of a running server; only loopback addresses are accepted.
    #[arg(long, default_value = "127.0.0.1:6060")]
    pub(crate) addr: SocketAddr,
    /// Path to a palaver binary to start (`serve --listen 127.0.0.1:<free port> --data-dir <temp>`) and kill afterwards.
    #[arg(long)]
    pub(crate) spawn: Option<PathBuf>,
    /// API key sent as `?apikey=` on every WebSocket.
    #[arg(long, default_value = DEMO_API_KEY)]
    pub(crate) apikey: String,
    /// PID of an already running server, so that its RSS and CPU can be read from /proc.
    #[arg(long)]
    pub(crate) pid: Option<u32>,
    /// Extra argument for the spawned `serve` (repeatable), e.g. `--server-arg=--config --server-arg=bench.toml`.
    #[arg(long = "server-arg", allow_hyphen_values = true)]
    pub(crate) server_args: Vec<String>,
    /// Extra environment variable for the spawned server (repeatable), e.g.
    /// `--server-env PALAVER_LIMITS__RATE_PER_SECOND=0` to lift the per-session message rate limit.
    #[arg(long = "server-env", value_parser = parse_env_pair)]
    pub(crate) server_env: Vec<(String, String)>,
    /// Seconds to wait for GET /readyz to answer 200 after spawning.
    #[arg(long, default_value_t = 30)]
    pub(crate) ready_secs: u64,
    /// Warnings a run asks for (a setting it chose on purpose logs one): not reported as problems.
    #[arg(skip)]
    pub(crate) expected_warnings: Vec<&'static str>,
}

/// A reachable server, with its PID when known; dropping it kills a spawned one.
pub(crate) struct Target {
    pub(crate) addr: SocketAddr,
    pub(crate) apikey: String,
    pub(crate) pid: Option<u32>,
    spawned: Option<Spawned>,
}

/// A child process and the temporary data dir it writes into.
struct Spawned {
    child: Child,
    log: PathBuf,
    expected_warnings: Vec<&'static str>,
    // Kept only so that the directory is removed when the server is gone.
    _dir: tempfile::TempDir,
}

impl Drop for Spawned {
    fn drop(&mut self) {
        // Killing an already exited child fails harmlessly, so the result is ignored on purpose.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Target {
    /// Starts or locates the server and waits until it is ready.
    pub(crate) async fn open(args: &TargetArgs) -> Result<Target> {
        Self::open_node(args, None).await
    }

    /// Starts `nodes` servers (`--node-id bench0`, `bench1`, …) with the same arguments, which must point them at
    /// shared storage (a scale-out `--config`), or locates the one given by `--addr`.
    pub(crate) async fn open_nodes(args: &TargetArgs, nodes: usize) -> Result<Vec<Target>> {
        if nodes <= 1 {
            return Ok(vec![Self::open(args).await?]);
        }
        ensure!(args.spawn.is_some(), "--nodes above 1 needs --spawn");
        let mut all = Vec::with_capacity(nodes);
        for i in 0..nodes {
            all.push(Self::open_node(args, Some(i)).await?);
        }
        Ok(all)
    }

    async fn open_node(args: &TargetArgs, node: Option<usize>) -> Result<Target> {
        let Some(path) = &args.spawn else {
            ensure!(
                args.addr.ip().is_loopback(),
                "--addr {} is not a loopback address; this tool only loads servers on this machine",
                args.addr
            );
            return Ok(Target { addr: args.addr, apikey: args.apikey.clone(), pid: args.pid, spawned: None });
        };
        let addr = free_loopback_port()?;
        let dir = tempfile::Builder::new().prefix("palaver-bench-").tempdir().context("creating a temp data dir")?;
        let log = dir.path().join("server.log");
        let out = File::create(&log).context("creating the server log")?;
        let err = out.try_clone()?;
        let child = Command::new(path)
            .arg("serve")
            .arg("--listen")
            .arg(addr.to_string())
            .arg("--data-dir")
            .arg(dir.path())
            .args(&args.server_args)
            .args(node.map(|i| vec!["--node-id".to_owned(), format!("bench{i}")]).unwrap_or_default())
            .envs(args.server_env.iter().cloned())
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .with_context(|| format!("spawning {}", path.display()))?;
        let pid = child.id();
        let mut target = Target {
            addr,
            apikey: args.apikey.clone(),
            pid: Some(pid),
            spawned: Some(Spawned { child, log, expected_warnings: args.expected_warnings.clone(), _dir: dir }),
        };
        println!("spawned {} serve {} (pid {pid}) on {addr}", path.display(), args.server_args.join(" "));
        target.wait_ready(Duration::from_secs(args.ready_secs)).await?;
        Ok(target)
    }

    /// Polls GET /readyz until it answers 200, failing early when the child exits.
    async fn wait_ready(&mut self, limit: Duration) -> Result<()> {
        let start = Instant::now();
        while start.elapsed() < limit {
            if let Some(status) = self.exited() {
                bail!("the server exited before it was ready ({status}); log tail:\n{}", self.log_tail(20));
            }
            if readyz(self.addr).await.unwrap_or(false) {
                println!("server ready after {:.2} s", start.elapsed().as_secs_f64());
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        bail!("GET /readyz did not answer 200 within {} s; log tail:\n{}", limit.as_secs(), self.log_tail(20))
    }

    /// The exit status of a spawned server that is no longer running.
    pub(crate) fn exited(&mut self) -> Option<String> {
        let spawned = self.spawned.as_mut()?;
        match spawned.child.try_wait() {
            Ok(Some(status)) => Some(status.to_string()),
            _ => None,
        }
    }

    /// The last lines the spawned server wrote, for error messages.
    pub(crate) fn log_tail(&self, lines: usize) -> String {
        let Some(spawned) = &self.spawned else {
            return String::from("(not spawned)");
        };
        let Ok(file) = File::open(&spawned.log) else {
            return String::from("(no log)");
        };
        let all: Vec<String> = BufReader::new(file).lines().map_while(|l| l.ok()).collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Prints how many WARN and ERROR lines the spawned server logged, quoting the first few.
    pub(crate) fn report_log_problems(&self) {
        let Some(spawned) = &self.spawned else { return };
        let Ok(text) = std::fs::read_to_string(&spawned.log) else { return };
        let expected = |line: &str| spawned.expected_warnings.iter().any(|w| line.contains(w));
        let bad: Vec<String> = text
            .lines()
            .map(strip_ansi)
            .filter(|line| (line.contains(" WARN ") || line.contains(" ERROR ")) && !expected(line))
            .collect();
        if bad.is_empty() {
            return;
        }
        println!("PROBLEM: the server logged {} WARN/ERROR lines; first ones:", bad.len());
        for line in bad.iter().take(5) {
            let cut = line.char_indices().nth(400).map_or(line.len(), |(i, _)| i);
            println!("  {}", &line[..cut]);
        }
    }

    /// The server's resident set size in KiB, when its PID is known.
    pub(crate) fn rss_kib(&self) -> Option<u64> {
        rss_kib(self.pid?)
    }

    /// CPU seconds (user + system) the server has used so far, when its PID is known.
    pub(crate) fn cpu_secs(&self) -> Option<f64> {
        cpu_secs(self.pid?)
    }

    /// Reports a server that died during the run, then kills a spawned server.
    pub(crate) fn finish(mut self) {
        if let Some(status) = self.exited() {
            println!("PROBLEM: the server exited during the run ({status}); log tail:\n{}", self.log_tail(30));
        }
        self.spawned = None;
    }

    /// The WebSocket URL of the Tinode channel endpoint.
    pub(crate) fn ws_url(&self) -> String {
        format!("ws://{}/v0/channels?apikey={}", self.addr, self.apikey)
    }
}

/// Removes the colour escapes (`ESC [ … m`) that the server's log may contain.
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // Skips the rest of the escape, up to and including its final letter.
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Parses `KEY=VALUE` for `--server-env`.
fn parse_env_pair(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(format!("expected KEY=VALUE, got {text:?}")),
    }
}

/// The advice printed when the server refuses messages with ctrl 429.
pub(crate) const RATE_LIMIT_HINT: &str = "the server's per-session rate limit (ctrl 429) refused messages; with --spawn, \
     lift it with --server-env PALAVER_LIMITS__RATE_PER_SECOND=0";

/// Binds port 0 on loopback to let the kernel choose a free port, then releases it for the server.
fn free_loopback_port() -> Result<SocketAddr> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(listener.local_addr()?)
}

/// One GET /readyz over a fresh connection; true when the status line says 200.
async fn readyz(addr: SocketAddr) -> Result<bool> {
    let attempt = async {
        let mut stream = TcpStream::connect(addr).await?;
        let request = format!("GET /readyz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await?;
        let mut buf = [0u8; 256];
        let n = stream.read(&mut buf).await?;
        let head = String::from_utf8_lossy(&buf[..n]);
        Ok::<bool, std::io::Error>(head.starts_with("HTTP/1.1 200") || head.starts_with("HTTP/1.0 200"))
    };
    Ok(tokio::time::timeout(Duration::from_secs(1), attempt).await??)
}

/// VmRSS of a process in KiB, from /proc/<pid>/status.
pub(crate) fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// utime + stime of a process in seconds, from /proc/<pid>/stat.
///
/// The kernel counts in clock ticks; USER_HZ is 100 on every Linux build this tool targets, and reading it
/// through sysconf would need unsafe code, which the workspace forbids.
pub(crate) fn cpu_secs(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces, so the fields are counted after its closing parenthesis.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) as f64 / 100.0)
}

/// The lowest PID whose command name (`/proc/<pid>/comm`) is `comm`, e.g. `mariadbd` or `redis-server`.
pub(crate) fn pid_of(comm: &str) -> Option<u32> {
    let entries = std::fs::read_dir("/proc").ok()?;
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == comm))
        .min()
}

/// Busy CPU seconds of the whole machine so far (every state of /proc/stat's `cpu` line but idle and iowait).
pub(crate) fn machine_busy_secs() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let fields: Vec<u64> = stat.lines().next()?.split_whitespace().skip(1).filter_map(|f| f.parse().ok()).collect();
    // user nice system idle iowait irq softirq steal; guest time is already counted in user.
    let busy: u64 = fields.iter().take(8).enumerate().filter(|(i, _)| *i != 3 && *i != 4).map(|(_, v)| v).sum();
    Some(busy as f64 / 100.0)
}

/// CPU seconds this bench process has used so far.
pub(crate) fn own_cpu_secs() -> f64 {
    cpu_secs(std::process::id()).unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_colour_escapes_from_log_lines() {
        let line = "\u{1b}[2m2026-12-01T08:41:49Z\u{1b}[0m \u{1b}[33m WARN\u{1b}[0m x: seq re-baselined";
        assert_eq!(strip_ansi(line), "2026-12-01T08:41:49Z  WARN x: seq re-baselined");
        assert!(strip_ansi(line).contains(" WARN "));
    }

    #[test]
    fn parses_env_pairs() {
        assert_eq!(parse_env_pair("A=b=c"), Ok(("A".into(), "b=c".into())));
        assert!(parse_env_pair("=x").is_err());
    }
}
