//! Layering rules of the service's source: handlers call use cases, never the ports.
//!
//! The Tinode handlers (`src/handlers/`) and the session (`src/session.rs`) parse, authorize, call a use case
//! (`src/usecases/`) and reply; a port reached from them would put a rule where no other caller shares it.

use std::path::Path;

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
            if code.contains("ports.") || code.contains("ports::Ports") {
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
fn the_check_finds_a_port_call() {
    // The rule above must be able to fail: the use cases themselves do reach the ports.
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    assert!(!port_calls(&src.join("usecases")).is_empty());
}
