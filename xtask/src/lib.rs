//! Project tasks shared by the `cargo xtask` binary and by tests that need the plugins built.
//!
//! [`plugins::build`] is `cargo xtask plugins`, [`plugins::build_path`] its `--path DIR`, and
//! [`new_plugin::scaffold`] is `cargo xtask new-plugin`. [`ensure_plugins_built`] is what host tests call: it builds
//! the plugins once, under a file lock (test binaries and threads may ask at the same time), and skips the build
//! when no source of the plugins workspace (its members, the SDK and its WIT files) or of `xtask/` changed since
//! the last one.
//!
//! The repository root is found at run time ([`repo_root`]), never baked in when xtask is compiled: a copied or
//! moved checkout must build into its own `target/`, not the original's.

pub mod new_plugin;
pub mod plugins;
pub mod toolchain;

use sha2::{Digest, Sha256};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

/// Why a task failed.
#[derive(Debug, thiserror::Error)]
pub enum XtaskError {
    #[error("{0}")]
    Io(String),
    #[error("toolchain: {0}")]
    Toolchain(String),
    #[error("{0}")]
    Cargo(String),
    #[error("plugin: {0}")]
    Plugin(String),
    #[error("componentize: {0}")]
    Componentize(String),
    #[error("{0}")]
    Usage(String),
}

/// Whether `dir` is the root of a Palaver checkout: the host workspace's `Cargo.toml` with `xtask/` and the
/// plugins workspace beside it.
fn is_repo_root(dir: &Path) -> bool {
    dir.join("Cargo.toml").is_file()
        && dir.join("xtask/Cargo.toml").is_file()
        && dir.join("plugins/Cargo.toml").is_file()
}

/// The nearest directory at or above `start` that is a checkout's root.
pub fn root_above(start: &Path) -> Option<PathBuf> {
    start.ancestors().find(|d| is_repo_root(d)).map(Path::to_owned)
}

/// The repository root, found at run time: above the current directory (`cargo xtask` runs where it was typed,
/// `cargo test` in the tested crate's directory), else above the directory of the package cargo is running
/// (`CARGO_MANIFEST_DIR`, which `cargo run` and `cargo test` set for the process).
pub fn find_repo_root() -> Result<PathBuf, XtaskError> {
    let cwd = std::env::current_dir().map_err(|e| XtaskError::Io(format!("the current directory: {e}")))?;
    if let Some(root) = root_above(&cwd) {
        return Ok(root);
    }
    if let Some(root) = std::env::var_os("CARGO_MANIFEST_DIR").and_then(|d| root_above(Path::new(&d))) {
        return Ok(root);
    }
    Err(XtaskError::Usage(format!(
        "no Palaver checkout at or above {} (a directory with Cargo.toml, xtask/ and plugins/Cargo.toml): run \
         `cargo xtask` inside the repository",
        cwd.display()
    )))
}

/// [`find_repo_root`] for tests and examples, which cannot go on without it.
///
/// # Panics
///
/// Outside a checkout.
pub fn repo_root() -> PathBuf {
    match find_repo_root() {
        Ok(root) => root,
        Err(e) => panic!("{e}"),
    }
}

/// Where `cargo xtask plugins` writes components and manifests.
pub fn plugins_out(root: &Path) -> PathBuf {
    root.join("target/plugins")
}

/// Hashes the size and modification time of every source file a plugin build reads: the plugins workspace
/// (`plugins/`, with the SDK and its WIT files, and every member kept elsewhere, such as `examples/`) and xtask.
fn fingerprint(root: &Path) -> String {
    fn walk(dir: &Path, files: &mut Vec<(String, u64, u128)>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for e in entries.filter_map(Result::ok) {
            let p = e.path();
            let name = e.file_name();
            if p.is_dir() {
                if name != "target" && name != ".git" {
                    walk(&p, files);
                }
                continue;
            }
            if let Ok(m) = e.metadata() {
                let mtime =
                    m.modified().ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos());
                files.push((p.display().to_string(), m.len(), mtime));
            }
        }
    }
    let mut dirs: Vec<PathBuf> =
        ["plugins", "examples", "xtask/src", "xtask/templates"].iter().map(|d| root.join(d)).collect();
    // Members kept outside those folders; a manifest that does not read is caught by the build itself.
    for member in plugins::member_dirs(root).unwrap_or_default() {
        if !dirs.iter().any(|d| member.starts_with(d)) {
            dirs.push(member);
        }
    }
    let mut files = Vec::new();
    for d in &dirs {
        walk(d, &mut files);
    }
    files.sort();
    let mut h = Sha256::new();
    for (p, len, mtime) in files {
        h.update(format!("{p}\0{len}\0{mtime}\n"));
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Builds the plugins into `target/plugins` unless they are up to date, and returns that directory. Safe to call
/// from many tests at once: one builds, the others wait on the lock and then find the stamp current.
pub fn ensure_plugins_built() -> Result<PathBuf, XtaskError> {
    let root = find_repo_root()?;
    let out = plugins_out(&root);
    std::fs::create_dir_all(&out).map_err(|e| XtaskError::Io(format!("{}: {e}", out.display())))?;
    let lock_path = root.join("target/plugins.lock");
    let lock = File::create(&lock_path).map_err(|e| XtaskError::Io(format!("{}: {e}", lock_path.display())))?;
    lock.lock().map_err(|e| XtaskError::Io(format!("lock {}: {e}", lock_path.display())))?;
    let stamp = root.join("target/plugins.stamp");
    let want = fingerprint(&root);
    let current = std::fs::read_to_string(&stamp).is_ok_and(|s| s == want);
    if !current {
        let mut log = |line: &str| eprintln!("xtask: {line}");
        let built = plugins::build(&root, &out, &mut log)?;
        for b in &built {
            eprintln!("xtask: built {} {} ({} bytes)", b.name, b.version, b.bytes);
        }
        std::fs::write(&stamp, &want).map_err(|e| XtaskError::Io(format!("{}: {e}", stamp.display())))?;
    }
    // The lock is released when the file closes; say so explicitly, since the order matters.
    drop(lock);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_holds_the_workspaces() {
        let root = repo_root();
        assert!(root.join("Cargo.toml").exists());
        assert!(root.join("plugins/Cargo.toml").exists());
        assert!(root.join("plugins/sdk/wit/worlds.wit").exists());
    }

    /// The root is found from where xtask runs, not from where it was compiled: a copied checkout finds itself.
    #[test]
    fn the_root_is_found_above_any_directory_of_a_checkout() {
        let tmp = tempfile::tempdir().unwrap();
        let copy = tmp.path().join("copy");
        for dir in ["xtask", "plugins", "host/palaver-plugin-runtime/src"] {
            std::fs::create_dir_all(copy.join(dir)).unwrap();
        }
        for file in ["Cargo.toml", "xtask/Cargo.toml", "plugins/Cargo.toml"] {
            std::fs::write(copy.join(file), "").unwrap();
        }
        assert_eq!(root_above(&copy), Some(copy.clone()));
        assert_eq!(root_above(&copy.join("host/palaver-plugin-runtime/src")), Some(copy.clone()));
        assert_eq!(root_above(&copy.join("plugins")), Some(copy.clone()), "the plugins workspace is not the root");
        assert_eq!(root_above(tmp.path()), None);
        std::fs::remove_file(copy.join("plugins/Cargo.toml")).unwrap();
        assert_eq!(root_above(&copy.join("host")), None, "no plugins workspace, no checkout");
        // `cargo test` runs this in the crate's directory, whichever checkout it is.
        let here = std::env::current_dir().unwrap();
        assert_eq!(find_repo_root().unwrap(), root_above(&here).unwrap());
    }

    #[test]
    fn the_fingerprint_is_stable_while_nothing_changes() {
        let root = repo_root();
        assert_eq!(fingerprint(&root), fingerprint(&root));
        assert_eq!(fingerprint(&root).len(), 64);
    }
}
