//! `publish --compare`: the same load against a spawned embedded server and a spawned scale-out server
//! (MariaDB + Redis, each run on fresh databases and a fresh Redis key prefix), printed side by side.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, Result, bail, ensure};
use clap::Args;

use crate::pubload::{self, Figures, PublishArgs};
use crate::stats::round3;

/// The throughput the scale-out mode should reach per node.
const TARGET_SCALEOUT_MSG_PER_S: f64 = 10_000.0;

/// Options of the comparison.
#[derive(Args, Debug, Clone)]
pub(crate) struct CompareArgs {
    /// Run the load twice, against a spawned embedded server and a spawned scale-out server (needs --spawn).
    #[arg(long)]
    pub(crate) compare: bool,
    /// The scale-out configuration file given to the second server.
    #[arg(long, default_value = "deploy/scaleout.toml")]
    pub(crate) scaleout_config: PathBuf,
    /// MariaDB for the scale-out run, without a database name; every run creates fresh databases there.
    #[arg(long, default_value = "mysql://palaver:palaver@127.0.0.1:3306")]
    pub(crate) mysql: String,
    /// Redis for the scale-out run, as host:port; every run uses a fresh key prefix.
    #[arg(long, default_value = "127.0.0.1:6379")]
    pub(crate) redis: String,
    /// Keep the scale-out run's databases and Redis keys instead of removing them afterwards.
    #[arg(long)]
    pub(crate) keep_data: bool,
}

/// Runs both modes, prints the table, the verdict and the final JSON line.
pub(crate) async fn run(args: &PublishArgs) -> Result<()> {
    let compare = &args.compare;
    ensure!(args.target.spawn.is_some(), "--compare starts both servers itself, so it needs --spawn PATH");
    ensure!(
        compare.scaleout_config.is_file(),
        "--scaleout-config {} is not a file (run from the repository root or pass the path)",
        compare.scaleout_config.display()
    );
    let embedded = pubload::measure(&args.target, args, "embedded").await.context("the embedded run")?;
    println!();

    let tag = crate::run_tag();
    let control = format!("palaver_bench_{tag}");
    let tenant_prefix = format!("pb_{tag}_t_");
    let key_prefix = format!("im_bench_{tag}");
    let mut scaleout_target = args.target.clone();
    // --dev: the load speaks with Tinode's demo API key, which a scale-out node refuses without it.
    let config = ["--dev".to_owned(), "--config".to_owned(), compare.scaleout_config.display().to_string()];
    scaleout_target.server_args.splice(0..0, config);
    let env = [
        ("PALAVER_STORE__URL", format!("{}/{control}", compare.mysql.trim_end_matches('/'))),
        // A tenant database is named prefix + tenant code; a fresh prefix keeps `default` from reusing an old one.
        ("PALAVER_STORE__TENANT_DATABASE_PREFIX", tenant_prefix.clone()),
        ("PALAVER_STORE_CONFIG__REDIS", format!(r#"{{ addr = "{}", key_prefix = "{key_prefix}" }}"#, compare.redis)),
    ];
    scaleout_target.server_env.extend(env.into_iter().map(|(k, v)| (k.to_owned(), v)));
    println!("scale-out run: control database {control}, tenant databases {tenant_prefix}*, Redis keys {key_prefix}*");
    let scaleout = pubload::measure(&scaleout_target, args, "scale-out").await;
    if compare.keep_data {
        println!("kept the scale-out data (--keep-data)");
    } else {
        clean_up(compare, &control, &tenant_prefix, &key_prefix);
    }
    let scaleout = scaleout.context("the scale-out run")?;
    print_table(args, &embedded, &scaleout);
    Ok(())
}

/// Prints both runs side by side, the verdict on the scale-out target and the final JSON line.
fn print_table(args: &PublishArgs, embedded: &Figures, scaleout: &Figures) {
    let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { f64::NAN };
    let per_msg = |s: f64, f: &Figures| s * 1e6 / f.acked.max(1) as f64;
    let cpu_per_msg = |f: &Figures| f.server_cpu_s.map_or(f64::NAN, |s| per_msg(s, f));
    // Server, client and the co-located MariaDB and Redis: what one message costs the whole 2-core box.
    let box_per_msg = |f: &Figures| {
        let colocated: f64 = f.colocated_cpu_s.iter().map(|(_, s)| s).sum();
        per_msg(f.server_cpu_s.unwrap_or(0.0) + f.client_cpu_s + colocated, f)
    };
    println!();
    println!(
        "publish compare: {} topics × {} publishers × {} messages, window {}, client_mid {}",
        args.topics,
        args.publishers_per_topic,
        args.messages,
        args.window,
        if args.client_mid { "on" } else { "off" }
    );
    println!("  {:<26} {:>12} {:>12} {:>12}", "", "embedded", "scale-out", "ratio s/e");
    let rows: [(&str, f64, f64); 8] = [
        ("accepted msg/s", embedded.msg_per_s, scaleout.msg_per_s),
        ("ack p50 ms", embedded.ack.p50_ms, scaleout.ack.p50_ms),
        ("ack p99 ms", embedded.ack.p99_ms, scaleout.ack.p99_ms),
        ("ack p99.9 ms", embedded.ack.p999_ms, scaleout.ack.p999_ms),
        ("ack max ms", embedded.ack.max_ms, scaleout.ack.max_ms),
        ("server CPU µs per message", cpu_per_msg(embedded), cpu_per_msg(scaleout)),
        ("box CPU µs per message", box_per_msg(embedded), box_per_msg(scaleout)),
        ("rejected", embedded.rejected as f64, scaleout.rejected as f64),
    ];
    for (name, e, s) in rows {
        let r = ratio(s, e);
        let r = if r.is_finite() { format!("{r:.3}") } else { String::from("-") };
        println!("  {name:<26} {e:>12.3} {s:>12.3} {r:>12}");
    }
    let verdict = if scaleout.msg_per_s >= TARGET_SCALEOUT_MSG_PER_S { "meets" } else { "MISSES" };
    println!(
        "verdict: scale-out {:.0} accepted msg/s (target ≥ {TARGET_SCALEOUT_MSG_PER_S:.0} per node: {verdict}); \
         measured with client, MariaDB and Redis on the same 2 cores as the server",
        scaleout.msg_per_s
    );
    let mut out = pubload::head(args, "compare");
    pubload::put_figures(&mut out, "embedded_", embedded);
    pubload::put_figures(&mut out, "scaleout_", scaleout);
    out.set("ratio_msg_per_s", round3(ratio(scaleout.msg_per_s, embedded.msg_per_s)));
    out.set("ratio_ack_p99", round3(ratio(scaleout.ack.p99_ms, embedded.ack.p99_ms)));
    out.set("scaleout_target_msg_per_s", TARGET_SCALEOUT_MSG_PER_S);
    println!("{out}");
}

/// Drops the run's databases and deletes its Redis keys with the `mariadb` and `redis-cli` clients.
///
/// The bench carries no database drivers of its own; when a client is missing, the names to clean are printed.
fn clean_up(compare: &CompareArgs, control: &str, tenant_prefix: &str, key_prefix: &str) {
    match drop_databases(&compare.mysql, control, tenant_prefix) {
        Ok(dropped) => println!("cleanup: dropped databases {}", dropped.join(", ")),
        Err(err) => println!("cleanup: could not drop {control} and {tenant_prefix}* ({err:#}); drop them by hand"),
    }
    match delete_keys(&compare.redis, key_prefix) {
        Ok(n) => println!("cleanup: deleted {n} Redis keys under {key_prefix}"),
        Err(err) => println!("cleanup: could not delete Redis keys {key_prefix}* ({err:#})"),
    }
}

/// Runs `mariadb` against the server of `url` (`mysql://user:pass@host:port`) and returns its output.
fn mariadb(url: &str, sql: &str) -> Result<String> {
    let rest = url.trim_start_matches("mysql://").trim_end_matches('/');
    let (auth, hostport) = rest.rsplit_once('@').context("the MariaDB URL has no user@")?;
    let (user, password) = auth.split_once(':').unwrap_or((auth, ""));
    let (host, port) = hostport.split_once(':').unwrap_or((hostport, "3306"));
    let output = Command::new("mariadb")
        .args(["--protocol=tcp", "-h", host, "-P", port, "-u", user, "-N", "-B", "-e", sql])
        .env("MYSQL_PWD", password)
        .output()
        .context("running mariadb")?;
    if !output.status.success() {
        bail!("mariadb failed: {}", String::from_utf8_lossy(&output.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Drops the control database and every tenant database of the run; returns their names.
fn drop_databases(url: &str, control: &str, tenant_prefix: &str) -> Result<Vec<String>> {
    // The names are made of [a-z0-9_] by this tool, so they are safe to splice into SQL; `_` is escaped
    // because it is a wildcard in LIKE.
    let like = tenant_prefix.replace('_', "\\_");
    let listed = mariadb(url, &format!("SHOW DATABASES LIKE '{like}%'"))?;
    let mut names: Vec<String> = listed.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_owned).collect();
    names.push(control.to_owned());
    let sql: String = names.iter().map(|name| format!("DROP DATABASE IF EXISTS `{name}`;")).collect();
    mariadb(url, &sql)?;
    Ok(names)
}

/// Deletes every key under `prefix` in one server-side script; returns how many went.
fn delete_keys(addr: &str, prefix: &str) -> Result<u64> {
    let (host, port) = addr.split_once(':').unwrap_or((addr, "6379"));
    // KEYS is fine on a bench Redis and keeps this to one round trip.
    let script = "local n = 0 for _, k in ipairs(redis.call('KEYS', ARGV[1])) do redis.call('DEL', k) n = n + 1 end \
                  return n";
    let output = Command::new("redis-cli")
        .args(["-h", host, "-p", port, "EVAL", script, "0", &format!("{prefix}*")])
        .output()
        .context("running redis-cli")?;
    let text = String::from_utf8_lossy(&output.stdout);
    let text = text.trim().trim_start_matches("(integer) ");
    text.parse().with_context(|| format!("unexpected redis-cli answer {text:?}"))
}
