//! The plugins-directory watcher: polls the manifests and components of a directory every interval and loads a
//! plugin whose files changed, once they have stayed the same for one whole interval (so a file still being
//! copied is not loaded half-written). Loads run on the watcher's own thread, off every request path.

use crate::error::RegistryError;
use crate::registry::{PluginRegistry, peek_identity};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

/// Size and modification time of a manifest and its component: what "changed" means.
type Signature = [(u64, Option<SystemTime>); 2];

fn stat(p: &Path) -> (u64, Option<SystemTime>) {
    std::fs::metadata(p).map(|m| (m.len(), m.modified().ok())).unwrap_or((0, None))
}

fn component_path(manifest: &Path) -> PathBuf {
    let named = std::fs::read_to_string(manifest)
        .ok()
        .and_then(|t| toml::from_str::<toml::Table>(&t).ok())
        .and_then(|t| t.get("component").and_then(|c| c.as_str()).map(str::to_owned));
    named.map_or_else(|| manifest.with_extension("wasm"), |c| manifest.with_file_name(c))
}

fn scan(dir: &Path) -> HashMap<PathBuf, Signature> {
    let Ok(entries) = std::fs::read_dir(dir) else { return HashMap::new() };
    entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| {
            let sig = [stat(&p), stat(&component_path(&p))];
            (p, sig)
        })
        .collect()
}

/// Watches one directory until dropped.
pub struct DirWatcher {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for DirWatcher {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take()
            && t.join().is_err()
        {
            tracing::error!("the plugin directory watcher panicked");
        }
    }
}

struct State {
    /// Signatures as last acted upon.
    seen: HashMap<PathBuf, Signature>,
    /// Signatures seen changed once; acted upon when the next poll sees them unchanged.
    pending: HashMap<PathBuf, Signature>,
}

impl State {
    fn poll(&mut self, registry: &PluginRegistry, dir: &Path) {
        for (path, sig) in scan(dir) {
            if self.seen.get(&path) == Some(&sig) {
                self.pending.remove(&path);
                continue;
            }
            if self.pending.get(&path) != Some(&sig) {
                self.pending.insert(path, sig);
                continue;
            }
            self.pending.remove(&path);
            self.seen.insert(path.clone(), sig);
            match registry.load_file(&path) {
                Ok(outcome) => tracing::info!(path = %path.display(), ?outcome, "plugins directory change loaded"),
                Err(e) => {
                    let name = peek_identity(&path).map(|(n, _)| n).unwrap_or_default();
                    tracing::warn!(path = %path.display(), plugin = %name, error = %e, "plugins directory change refused");
                }
            }
        }
    }
}

impl PluginRegistry {
    /// Starts watching `dir` (normally after [`PluginRegistry::load_dir`] on it): files as they are now count as
    /// seen; later changes load after one quiet interval. Polling keeps it free of platform watch APIs; at a
    /// second's interval it costs a few `stat` calls per plugin.
    pub fn watch(self: &Arc<Self>, dir: impl Into<PathBuf>, interval: Duration) -> Result<DirWatcher, RegistryError> {
        let dir = dir.into();
        let registry: Weak<PluginRegistry> = Arc::downgrade(self);
        let mut state = State { seen: scan(&dir), pending: HashMap::new() };
        let (stop, rx) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("plugin-watch".to_owned())
            .spawn(move || {
                while let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(interval) {
                    // The watcher must not keep a registry alive that everything else has let go of.
                    let Some(r) = registry.upgrade() else { break };
                    state.poll(&r, &dir);
                }
            })
            .map_err(|e| RegistryError::Watch(e.to_string()))?;
        Ok(DirWatcher { stop: Some(stop), thread: Some(thread) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scans_pair_manifests_with_their_components() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a-1.0.0.toml"), "name = \"a\"\nversion = \"1.0.0\"\n").unwrap();
        std::fs::write(d.path().join("a-1.0.0.wasm"), b"1234").unwrap();
        std::fs::write(d.path().join("b.toml"), "name = \"b\"\ncomponent = \"other.wasm\"\n").unwrap();
        std::fs::write(d.path().join("other.wasm"), b"12").unwrap();
        std::fs::write(d.path().join("notes.txt"), b"x").unwrap();
        let s = scan(d.path());
        assert_eq!(s.len(), 2);
        assert_eq!(s[&d.path().join("a-1.0.0.toml")][1].0, 4);
        assert_eq!(s[&d.path().join("b.toml")][1].0, 2);
    }
}
