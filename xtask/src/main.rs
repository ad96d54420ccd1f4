//! The `cargo xtask` entry point (`.cargo/config.toml` aliases `cargo xtask` to `cargo run -p xtask --`).
//!
//! Tasks:
//! - `plugins [--out DIR]`: build every guest plugin into a component with its manifest, in `target/plugins/` by
//!   default, and print what was built.

use std::path::PathBuf;
use std::process::ExitCode;
use xtask::{plugins, plugins_out, repo_root};

const USAGE: &str = "usage: cargo xtask plugins [--out DIR]

  plugins   build every plugin under plugins/ and examples/ for wasm32-unknown-unknown in release,
            turn each into a component and write <name>-<version>.wasm and .toml to target/plugins/";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("plugins") => {}
        Some("help" | "-h" | "--help") => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    }
    let root = repo_root();
    let out = match args.get(1).map(String::as_str) {
        None => plugins_out(&root),
        Some("--out") => match args.get(2) {
            Some(d) => PathBuf::from(d),
            None => {
                eprintln!("--out needs a directory\n{USAGE}");
                return ExitCode::from(2);
            }
        },
        Some(other) => {
            eprintln!("unknown argument {other:?}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let mut log = |line: &str| eprintln!("xtask: {line}");
    match plugins::build(&root, &out, &mut log) {
        Ok(built) => {
            for b in &built {
                let shown = b.component.strip_prefix(&root).unwrap_or(&b.component);
                println!("built {:<22} {:<8} {:>8} bytes  {}", b.name, b.version, b.bytes, shown.display());
            }
            println!("{} plugins in {}", built.len(), out.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}
