//! Tidy checks: the source tree read as text, so that the docs cannot drift from the code unnoticed.
//!
//! Each check collects every offender and fails with the whole list, so one run says everything to fix:
//! the code map lists every crate, every source file opens with a `//!` line, every metric and every config key
//! is documented (`docs/metrics.md`, `docs/configuration.md`), no Markdown doc names a repository path that
//! does not exist, and the service's modules form no cycle, by imports or by the `Inner` methods they call.

use palaver_server::config::Config;
use palaver_store_redis::RedisConfig;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("the repository root")
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Fails with every offender, one a line, under a headline saying what is wrong and how to fix it.
fn report(what: &str, offenders: &[String]) {
    assert!(offenders.is_empty(), "{what}:\n  {}\n", offenders.join("\n  "));
}

/// Every `.rs` file under `dir`, skipping `target/` build output.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == "target" || n == "node_modules") {
                continue;
            }
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).display().to_string()
}

/// The spans between backticks of a Markdown text (code fences and all), in order.
fn backticked(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// The crate folders under `host/`.
fn host_crates(root: &Path) -> BTreeSet<String> {
    let mut crates = BTreeSet::new();
    for entry in fs::read_dir(root.join("host")).expect("host/").filter_map(Result::ok) {
        if entry.path().join("Cargo.toml").is_file() {
            crates.insert(entry.file_name().to_string_lossy().into_owned());
        }
    }
    crates
}

#[test]
fn every_host_crate_is_in_the_code_map() {
    let root = root();
    let arch = read(&root.join("ARCHITECTURE.md"));
    let section = arch.split("## Code map").nth(1).expect("ARCHITECTURE.md has a `## Code map` section");
    let section = section.split("\n## ").next().unwrap_or(section);
    // The first cell of each table row names a crate.
    let listed: BTreeSet<&str> =
        section.lines().filter_map(|l| l.strip_prefix("| `")).filter_map(|l| l.split('`').next()).collect();
    let missing: Vec<String> = host_crates(&root).into_iter().filter(|c| !listed.contains(c.as_str())).collect();
    report("crates under host/ missing from ARCHITECTURE.md's code map (add a row to its table)", &missing);
}

#[test]
fn every_source_file_opens_with_a_module_doc() {
    let root = root();
    let mut files = Vec::new();
    for dir in ["host", "xtask", "plugins"] {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 50, "found only {} .rs files: is the root {} right?", files.len(), root.display());
    let offenders: Vec<String> =
        files.iter().filter(|f| !read(f).starts_with("//!")).map(|f| relative(&root, f)).collect();
    report(".rs files that do not open with a `//!` line saying what the file is", &offenders);
}

/// Every `palaver_…` string literal of the files that register metrics (those implementing `MetricsSource` or
/// encoding a collector's descriptors). Counters are registered without the `_total` the exposition adds.
fn metric_names_in_code(root: &Path) -> (Vec<String>, BTreeMap<String, String>) {
    let mut files = Vec::new();
    rust_files(&root.join("host"), &mut files);
    let mut sources = Vec::new();
    let mut names = BTreeMap::new();
    for file in files.iter().filter(|f| f.components().any(|c| c.as_os_str() == "src")) {
        let text = read(file);
        if !text.contains("MetricsSource for") && !text.contains("encode_descriptor(") {
            continue;
        }
        sources.push(relative(root, file));
        for piece in text.split("\"palaver_").skip(1) {
            let tail: String =
                piece.chars().take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_').collect();
            // `"palaver_redis_"`-style prefixes and names cut short by a format placeholder are not names.
            if !tail.is_empty() && !tail.ends_with('_') {
                names.entry(format!("palaver_{tail}")).or_insert_with(|| relative(root, file));
            }
        }
    }
    (sources, names)
}

/// The first cells of the Markdown table rows of `text` that are one backticked name.
fn table_keys(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once("` |"))
        .map(|(key, _)| key.to_owned())
        .collect()
}

#[test]
fn every_metric_is_in_docs_metrics() {
    let root = root();
    let (sources, names) = metric_names_in_code(&root);
    for expected in ["palaver-service", "palaver-plugin-runtime", "palaver-store-redis"] {
        assert!(
            sources.iter().any(|s| s.starts_with(&format!("host/{expected}/"))),
            "no metrics source found in {expected}: {sources:?}"
        );
    }
    let documented = table_keys(&read(&root.join("docs/metrics.md")));
    // A histogram is documented once; its series add `_bucket`, `_sum` and `_count`.
    // A counter is registered without `_total` and documented (as exported) with it.
    let base = |n: &str| {
        let total = format!("{n}_total");
        if documented.contains(&total) {
            return total;
        }
        ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| n.strip_suffix(s).filter(|b| documented.contains(*b)))
            .unwrap_or(n)
            .to_owned()
    };
    let missing: Vec<String> = names
        .iter()
        .filter(|(n, _)| !documented.contains(&base(n)))
        .map(|(n, file)| format!("{n} (in {file})"))
        .collect();
    report("metrics missing from docs/metrics.md (add a row: name, type, labels, meaning)", &missing);
    let in_code: BTreeSet<String> = names.keys().map(|n| base(n)).collect();
    let stale: Vec<String> = documented.difference(&in_code).cloned().collect();
    report("docs/metrics.md lists metrics no code renders (remove or rename them)", &stale);
}

/// The dotted path of every leaf of a TOML value.
fn leaf_paths(prefix: &str, value: &toml::Value, out: &mut BTreeSet<String>) {
    match value {
        // A map whose keys are the user's (extra headers, say) is empty by default: it is one documented key.
        toml::Value::Table(table) if table.is_empty() && !prefix.is_empty() => {
            out.insert(prefix.to_owned());
        }
        toml::Value::Table(table) => {
            for (key, v) in table {
                let path = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
                leaf_paths(&path, v, out);
            }
        }
        _ => {
            out.insert(prefix.to_owned());
        }
    }
}

#[test]
fn every_config_key_is_in_docs_configuration() {
    let root = root();
    let mut cfg = Config::default();
    // The optional section is absent by default; filled, its keys serialise too.
    cfg.store_config.redis = Some(RedisConfig::default());
    cfg.kafka = Some(palaver_queue_kafka::KafkaConfig::default());
    cfg.push.fcm = Some(Default::default());
    cfg.push.apns = Some(Default::default());
    cfg.push.jpush = Some(Default::default());
    cfg.push.webhook = Some(Default::default());
    let login = Some(String::new());
    let smtp = palaver_verify::SmtpConfig { username: login.clone(), password: login.clone(), ..Default::default() };
    cfg.accounts.credentials.email = Some(smtp);
    cfg.accounts.credentials.tel = Some(palaver_verify::WebhookConfig { secret: login, ..Default::default() });
    let value = toml::Value::try_from(&cfg).expect("the config serialises to TOML");
    let mut keys = BTreeSet::new();
    leaf_paths("", &value, &mut keys);
    assert!(keys.contains("store_config.redis.addr"), "the walk missed the redis section: {keys:?}");
    let documented = table_keys(&read(&root.join("docs/configuration.md")));
    let missing: Vec<String> = keys.difference(&documented).cloned().collect();
    report(
        "config keys missing from docs/configuration.md (add a row: key, type, default, meaning from its `///` doc)",
        &missing,
    );
    let stale: Vec<String> = documented.difference(&keys).cloned().collect();
    report("docs/configuration.md lists keys the typed config does not have", &stale);
}

/// The Markdown docs whose backticked repository paths must exist.
fn markdown_docs(root: &Path) -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = [
        "README.md",
        "ARCHITECTURE.md",
        "SECURITY.md",
        "deploy/README.md",
        "tests/e2e/README.md",
        "migrations/mysql/README.md",
        "plugins/sdk/wit/README.md",
        "plugins/README.md",
    ]
    .iter()
    .map(|d| root.join(d))
    .filter(|p| p.is_file())
    .collect();
    let mut in_docs: Vec<PathBuf> = fs::read_dir(root.join("docs"))
        .expect("docs/")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    in_docs.sort();
    docs.extend(in_docs);
    docs
}

/// The repository paths a backticked span names: its first word, when it starts with a top-level folder
/// (`host/…`, `docs/…`, …) or a crate folder (`palaver-gateway/src/ws.rs`, read under `host/`). A `{a,b}` group
/// expands to each path; at a placeholder (`…`, `*`, `<`, `{`) only the folders before it must exist.
fn named_paths(span: &str) -> Vec<String> {
    const TOP: [&str; 9] =
        ["host/", "xtask/", "scripts/", "deploy/", "docs/", "migrations/", "tests/", "plugins/", "examples/"];
    let word = span.split_whitespace().next().unwrap_or("");
    let word = word.trim_end_matches([',', '.', ':', ';', ')']);
    let path = if TOP.iter().any(|t| word.starts_with(t)) {
        word.to_owned()
    } else if word.starts_with("palaver-") && word.contains('/') {
        format!("host/{word}")
    } else {
        return Vec::new();
    };
    // `{control,tenant}` names two paths.
    if let (Some(open), Some(close)) = (path.find('{'), path.find('}'))
        && open < close
        && path[open + 1..close].contains(',')
    {
        return path[open + 1..close]
            .split(',')
            .flat_map(|alt| named_paths(&format!("{}{alt}{}", &path[..open], &path[close + 1..])))
            .collect();
    }
    match path.find(['…', '*', '<', '{', '$']) {
        Some(at) => match path[..at].rfind('/') {
            Some(slash) => vec![path[..=slash].to_owned()],
            None => Vec::new(),
        },
        None => vec![path],
    }
}

/// Paths a doc tells the reader to create, so they need not exist: (doc, path prefix).
const CREATED_BY_THE_READER: [(&str, &str); 1] = [("docs/plugins.md", "plugins/shout/")];

#[test]
fn docs_name_only_paths_that_exist() {
    let root = root();
    let mut missing = Vec::new();
    for doc in markdown_docs(&root) {
        let text = read(&doc);
        let dir = doc.parent().unwrap_or(&root).to_path_buf();
        let name = relative(&root, &doc);
        for span in backticked(&text) {
            for path in named_paths(span) {
                if CREATED_BY_THE_READER.iter().any(|(d, p)| *d == name && path.starts_with(p)) {
                    continue;
                }
                // Repository-relative first; a doc in a folder may also name its neighbours.
                if !root.join(&path).exists() && !dir.join(&path).exists() {
                    missing.push(format!("{name}: `{path}`"));
                }
            }
        }
    }
    report("Markdown docs name repository paths that do not exist (fix the path or drop it)", &missing);
}

#[test]
fn the_path_parser_reads_what_docs_write() {
    assert_eq!(named_paths("host/palaver-server/tests/scaleout.rs"), ["host/palaver-server/tests/scaleout.rs"]);
    assert_eq!(named_paths("palaver-gateway/src/ws.rs"), ["host/palaver-gateway/src/ws.rs"]);
    assert_eq!(
        named_paths("migrations/mysql/{control,tenant}/"),
        ["migrations/mysql/control/", "migrations/mysql/tenant/"]
    );
    assert_eq!(named_paths("host/…"), ["host/"]);
    assert_eq!(named_paths("deploy/scaleout.toml --node-id x"), ["deploy/scaleout.toml"]);
    assert!(named_paths("palaver serve").is_empty());
    assert!(named_paths("im:{tenant}:rt:{kind}").is_empty());
}

#[test]
fn the_service_modules_form_no_cycle() {
    // `--methods` counts a call of another module's `impl Inner` method as an edge too: the shared state's methods
    // are spread over modules, so imports alone would miss a loop of calls.
    let out = std::process::Command::new("python3")
        .current_dir(root())
        .args(["scripts/module-cycles.py", "host/palaver-service", "--methods"])
        .output()
        .expect("python3 runs scripts/module-cycles.py (scripts/test-all.sh installs it)");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "module-cycles.py failed: {}", String::from_utf8_lossy(&out.stderr));
    assert!(
        text.lines().next().is_some_and(|l| l.ends_with(" 0 cycle(s)")),
        "module cycles in palaver-service:\n{text}"
    );
}
