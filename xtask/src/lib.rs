//! Project tasks shared by the `cargo xtask` binary and by tests that need the plugins built.
//!
//! [`plugins::build`] is `cargo xtask plugins`. [`ensure_plugins_built`] is what host tests call: it builds the
//! plugins once, under a file lock (test binaries and threads may ask at the same time), and skips the build when
//! no source under `plugins/`, `examples/`, `wit/` or `xtask/` changed since the last one.

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
}

/// The repository root (this crate lives in `<root>/xtask`).
pub fn repo_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent().map_or_else(|| here.to_owned(), Path::to_owned)
}

/// Where `cargo xtask plugins` writes components and manifests.
pub fn plugins_out(root: &Path) -> PathBuf {
    root.join("target/plugins")
}

/// Hashes the size and modification time of every source file a plugin build reads.
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
    let mut files = Vec::new();
    for d in ["plugins", "examples", "wit", "xtask/src"] {
        walk(&root.join(d), &mut files);
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
    let root = repo_root();
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
        assert!(root.join("wit/worlds.wit").exists());
    }

    #[test]
    fn the_fingerprint_is_stable_while_nothing_changes() {
        let root = repo_root();
        assert_eq!(fingerprint(&root), fingerprint(&root));
        assert_eq!(fingerprint(&root).len(), 64);
    }
}
