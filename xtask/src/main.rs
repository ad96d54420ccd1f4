//! The `cargo xtask` entry point (`.cargo/config.toml` aliases `cargo xtask` to `cargo run -p xtask --`).
//!
//! Tasks:
//! - `plugins [--out DIR] [--path DIR]`: build every plugin crate of the plugins workspace (or, with `--path`, the
//!   one plugin crate in DIR, kept anywhere) into a component with its manifest, in `target/plugins/` by default,
//!   and print what was built.
//! - `new-plugin NAME [--dir PATH]`: scaffold a plugin in `plugins/NAME` (a member of the plugins workspace) or in
//!   PATH (a crate of its own, built with `plugins --path PATH`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use xtask::{XtaskError, find_repo_root, new_plugin, plugins, plugins_out};

const USAGE: &str = "usage: cargo xtask plugins [--out DIR] [--path DIR]
       cargo xtask new-plugin NAME [--dir PATH]

  plugins      build every member of the plugins workspace (plugins/Cargo.toml) that has a plugin.toml, for
               wasm32-unknown-unknown in release, turn each into a component and write <name>-<version>.wasm
               and .toml to target/plugins/ (or --out DIR), the deployable ones also to its deploy/; a member
               that builds a cdylib without a plugin.toml, or a plugin crate under plugins/ or examples/ that is
               no member, is refused
  plugins --path DIR
               build only the plugin crate in DIR (a member, or a crate with its own [workspace], kept
               anywhere) and write its component and manifest to target/plugins/ (or --out DIR), leaving the
               rest there alone
  new-plugin   scaffold plugin NAME (Cargo.toml, plugin.toml with fixtures, src/lib.rs with before-publish,
               on-command and native tests, README.md) in plugins/NAME, added to the workspace's members, or
               in --dir PATH as a crate of its own; an existing directory or a bad name is refused";

/// The value after flag `args[i]`, or a usage error.
fn value(args: &[String], i: usize) -> Result<PathBuf, XtaskError> {
    args.get(i + 1).map(PathBuf::from).ok_or_else(|| XtaskError::Usage(format!("{} needs a directory", args[i])))
}

fn plugins_task(root: &Path, args: &[String]) -> Result<(), XtaskError> {
    let (mut out, mut path) = (None, None);
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--out" => out = Some(value(args, i)?),
            "--path" => path = Some(value(args, i)?),
            other => return Err(XtaskError::Usage(format!("unknown argument {other:?}"))),
        }
        i += 2;
    }
    let out = out.unwrap_or_else(|| plugins_out(root));
    let mut log = |line: &str| eprintln!("xtask: {line}");
    let built = match &path {
        Some(dir) => vec![plugins::build_path(root, dir, &out, &mut log)?],
        None => plugins::build(root, &out, &mut log)?,
    };
    for b in &built {
        let shown = b.component.strip_prefix(root).unwrap_or(&b.component);
        println!("built {:<22} {:<8} {:>8} bytes  {}", b.name, b.version, b.bytes, shown.display());
    }
    println!("{} plugins in {}", built.len(), out.display());
    Ok(())
}

fn new_plugin_task(root: &Path, args: &[String]) -> Result<(), XtaskError> {
    let Some(name) = args.first().filter(|a| !a.starts_with('-')) else {
        return Err(XtaskError::Usage("new-plugin needs a NAME".to_owned()));
    };
    let dir = match args.get(1).map(String::as_str) {
        None => None,
        Some("--dir") if args.len() == 3 => Some(value(args, 1)?),
        Some(other) => return Err(XtaskError::Usage(format!("unexpected {other:?}"))),
    };
    let s = new_plugin::scaffold(root, name, dir.as_deref())?;
    let shown = s.dir.strip_prefix(root).unwrap_or(&s.dir);
    println!("created {}", shown.display());
    if let Some(m) = &s.member {
        println!("added {m:?} to members in plugins/Cargo.toml");
    }
    println!("build: {}\ntest:  {}", s.build, s.test);
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let task = args.first().map(String::as_str);
    if matches!(task, Some("help" | "-h" | "--help")) {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let result = find_repo_root().and_then(|root| match task {
        Some("plugins") => plugins_task(&root, &args[1..]),
        Some("new-plugin") => new_plugin_task(&root, &args[1..]),
        _ => Err(XtaskError::Usage("no such task".to_owned())),
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e @ XtaskError::Usage(_)) => {
            eprintln!("xtask: {e}\n\n{USAGE}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}
