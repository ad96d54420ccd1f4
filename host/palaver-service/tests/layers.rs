//! Layering rules of the service's source: handlers and business commands call use cases, never the ports.
//!
//! The Tinode handlers (`src/handlers/`), the session (`src/session.rs`) and the business commands of `/v1/im/`
//! (`src/business/`) parse, authorize, call a use case (`src/usecases/`) and reply; a port reached from them
//! would put a rule where no other caller shares it.

use std::path::Path;

/// True if `code` names the ports: `ports.` or `ports::Ports` as a word of its own (`reports.` is no port).
fn names_a_port(code: &str) -> bool {
    ["ports.", "ports::Ports"].iter().any(|needle| {
        code.match_indices(needle)
            .any(|(at, _)| !code[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_'))
    })
}

/// Every line of `dir`'s `.rs` files (and of `dir` itself if it is a file) that names a port through `ports.`.
fn port_calls(path: &Path) -> Vec<String> {
    let mut hits = Vec::new();
    let files: Vec<_> = if path.is_dir() {
        std::fs::read_dir(path)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "rs"))
            .collect()
    } else {
        vec![path.to_path_buf()]
    };
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            if names_a_port(code) {
                hits.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
            }
        }
    }
    hits
}

#[test]
fn handlers_and_the_session_reach_no_port() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut hits = port_calls(&src.join("handlers"));
    hits.extend(port_calls(&src.join("session.rs")));
    assert!(hits.is_empty(), "handlers must call a use case (src/usecases/) instead of a port:\n{}", hits.join("\n"));
}

#[test]
fn business_commands_reach_no_port() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let hits = port_calls(&src.join("business"));
    assert!(
        hits.is_empty(),
        "business commands must call a use case (src/usecases/) instead of a port:\n{}",
        hits.join("\n")
    );
}

#[test]
fn the_word_check_tells_ports_from_other_names() {
    assert!(names_a_port("let s = &cx.svc.ports.subs;"));
    assert!(names_a_port("ports.users.get_user(t, u)"));
    assert!(names_a_port("fn f(p: crate::ports::Ports)"));
    assert!(!names_a_port("reports.file(&new, &[summary], now)"));
    assert!(!names_a_port("use palaver_core::ports::{Mute, GroupRole};"));
}

#[test]
fn the_check_finds_a_port_call() {
    // The rule above must be able to fail: the use cases themselves do reach the ports.
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    assert!(!port_calls(&src.join("usecases")).is_empty());
}
