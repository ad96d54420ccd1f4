//! `cargo xtask plugins`: build every guest plugin (each crate under `plugins/`, `plugins/testing/` and
//! `examples/` with a `plugin.toml`) for wasm32-unknown-unknown in release, turn each core module into a component
//! with wit-component, and write `<name>-<version>.wasm` with its manifest to `target/plugins/`. The manifest
//! written there names its component and pins the component's SHA-256.

use crate::XtaskError;
use crate::toolchain::{self, TARGET, Toolchain};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// One plugin crate found in the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginCrate {
    pub dir: PathBuf,
    /// The plugin's name and version, from its `plugin.toml`.
    pub name: String,
    pub version: String,
    /// The file name cargo gives the core module.
    pub artifact: String,
}

/// One component written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Built {
    pub name: String,
    pub version: String,
    pub component: PathBuf,
    pub manifest: PathBuf,
    pub bytes: usize,
    pub sha256: String,
}

fn read(path: &Path) -> Result<String, XtaskError> {
    std::fs::read_to_string(path).map_err(|e| XtaskError::Io(format!("{}: {e}", path.display())))
}

fn str_at<'a>(t: &'a toml::Table, path: &[&str]) -> Option<&'a str> {
    let (last, parents) = path.split_last()?;
    let mut table = t;
    for p in parents {
        table = table.get(*p)?.as_table()?;
    }
    table.get(*last)?.as_str()
}

fn crate_at(dir: &Path) -> Result<Option<PluginCrate>, XtaskError> {
    let manifest = dir.join("plugin.toml");
    if !manifest.exists() || !dir.join("Cargo.toml").exists() {
        return Ok(None);
    }
    let bad = |m: &str| XtaskError::Plugin(format!("{}: {m}", dir.display()));
    let plugin: toml::Table = toml::from_str(&read(&manifest)?).map_err(|e| bad(&e.to_string()))?;
    let cargo: toml::Table = toml::from_str(&read(&dir.join("Cargo.toml"))?).map_err(|e| bad(&e.to_string()))?;
    if plugin.contains_key("sha256") || plugin.contains_key("component") {
        return Err(bad("plugin.toml must not set sha256 or component: the build writes them"));
    }
    let name = str_at(&plugin, &["name"]).ok_or_else(|| bad("plugin.toml has no name"))?.to_owned();
    let version = str_at(&plugin, &["version"]).ok_or_else(|| bad("plugin.toml has no version"))?.to_owned();
    let package = str_at(&cargo, &["package", "name"]).ok_or_else(|| bad("Cargo.toml has no package name"))?;
    let lib = str_at(&cargo, &["lib", "name"]).unwrap_or(package).replace('-', "_");
    Ok(Some(PluginCrate { dir: dir.to_owned(), name, version, artifact: format!("{lib}.wasm") }))
}

/// Every plugin crate, in a stable order: `plugins/*`, `plugins/testing/*`, `examples/*`.
pub fn discover(root: &Path) -> Result<Vec<PluginCrate>, XtaskError> {
    let mut out = Vec::new();
    for parent in ["plugins", "plugins/testing", "examples"] {
        let Ok(entries) = std::fs::read_dir(root.join(parent)) else { continue };
        let mut dirs: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_dir()).collect();
        dirs.sort();
        for d in dirs {
            if let Some(c) = crate_at(&d)? {
                out.push(c);
            }
        }
    }
    let mut names: Vec<(&str, &str)> = out.iter().map(|c| (c.name.as_str(), c.version.as_str())).collect();
    names.sort();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(XtaskError::Plugin(format!("two crates build plugin {} {}", w[0].0, w[0].1)));
    }
    Ok(out)
}

/// Turns a core module built with wit-bindgen into a component. The module carries its WIT worlds in custom
/// sections, so nothing else is needed.
pub fn componentize(core: &[u8]) -> Result<Vec<u8>, XtaskError> {
    let mut encoder = wit_component::ComponentEncoder::default();
    encoder.module(core).map_err(|e| XtaskError::Componentize(format!("{e:#}")))?.validate(true);
    encoder.encode().map_err(|e| XtaskError::Componentize(format!("{e:#}")))
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// Builds every plugin and writes the components and manifests to `out`; stale files there are removed.
pub fn build(root: &Path, out: &Path, log: &mut dyn FnMut(&str)) -> Result<Vec<Built>, XtaskError> {
    let crates = discover(root)?;
    if crates.is_empty() {
        return Err(XtaskError::Plugin(format!("no plugin crates under {}", root.display())));
    }
    let tc = toolchain::find(log)?;
    log(&format!("building {} plugins for {TARGET} with {}", crates.len(), tc.describe()));
    cargo_build(root, &tc)?;
    std::fs::create_dir_all(out).map_err(|e| XtaskError::Io(format!("{}: {e}", out.display())))?;
    let release = tc.target_dir(root).join(TARGET).join("release");
    let mut built = Vec::new();
    for c in &crates {
        let core_path = release.join(&c.artifact);
        let core = std::fs::read(&core_path).map_err(|e| XtaskError::Io(format!("{}: {e}", core_path.display())))?;
        let component = componentize(&core).map_err(|e| XtaskError::Plugin(format!("{}: {e}", c.name)))?;
        let stem = format!("{}-{}", c.name, c.version);
        let (wasm_path, manifest_path) = (out.join(format!("{stem}.wasm")), out.join(format!("{stem}.toml")));
        let sha = sha256_hex(&component);
        let source = read(&c.dir.join("plugin.toml"))?;
        let rel = c.dir.strip_prefix(root).unwrap_or(&c.dir).display().to_string();
        let manifest = format!(
            "# Built by `cargo xtask plugins` from {rel}/plugin.toml; sha256 pins the component beside it.\n\
             component = \"{stem}.wasm\"\nsha256 = \"{sha}\"\n\n{source}"
        );
        write(&wasm_path, &component)?;
        write(&manifest_path, manifest.as_bytes())?;
        built.push(Built {
            name: c.name.clone(),
            version: c.version.clone(),
            component: wasm_path,
            manifest: manifest_path,
            bytes: component.len(),
            sha256: sha,
        });
    }
    remove_stale(out, &built)?;
    write_deployable(root, out, &crates)?;
    Ok(built)
}

/// Copies the plugins a node may run (those under `plugins/`, not the test components of `plugins/testing/` nor
/// the examples) into `<out>/deploy/`, a directory a server can point `plugins.dir` at as it is.
fn write_deployable(root: &Path, out: &Path, crates: &[PluginCrate]) -> Result<(), XtaskError> {
    let deploy = out.join("deploy");
    if deploy.exists() {
        std::fs::remove_dir_all(&deploy).map_err(|e| XtaskError::Io(format!("{}: {e}", deploy.display())))?;
    }
    std::fs::create_dir_all(&deploy).map_err(|e| XtaskError::Io(format!("{}: {e}", deploy.display())))?;
    for c in crates.iter().filter(|c| c.dir.parent() == Some(root.join("plugins").as_path())) {
        for ext in ["wasm", "toml"] {
            let file = format!("{}-{}.{ext}", c.name, c.version);
            std::fs::copy(out.join(&file), deploy.join(&file))
                .map_err(|e| XtaskError::Io(format!("{}: {e}", deploy.join(&file).display())))?;
        }
    }
    Ok(())
}

/// Writes through a temporary file and a rename, so that a watcher never sees half a component.
fn write(path: &Path, bytes: &[u8]) -> Result<(), XtaskError> {
    if std::fs::read(path).is_ok_and(|old| old == bytes) {
        return Ok(());
    }
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes).map_err(|e| XtaskError::Io(format!("{}: {e}", tmp.display())))?;
    std::fs::rename(&tmp, path).map_err(|e| XtaskError::Io(format!("{}: {e}", path.display())))
}

fn remove_stale(out: &Path, built: &[Built]) -> Result<(), XtaskError> {
    let keep: Vec<&Path> = built.iter().flat_map(|b| [b.component.as_path(), b.manifest.as_path()]).collect();
    let entries = std::fs::read_dir(out).map_err(|e| XtaskError::Io(format!("{}: {e}", out.display())))?;
    for p in entries.filter_map(|e| e.ok().map(|e| e.path())) {
        let ours = p.extension().is_some_and(|x| x == "wasm" || x == "toml");
        if ours && !keep.contains(&p.as_path()) {
            std::fs::remove_file(&p).map_err(|e| XtaskError::Io(format!("{}: {e}", p.display())))?;
        }
    }
    Ok(())
}

fn cargo_build(root: &Path, tc: &Toolchain) -> Result<(), XtaskError> {
    let dir = root.join("plugins");
    let mut cmd = tc.cargo();
    cmd.current_dir(&dir)
        .env("CARGO_TARGET_DIR", tc.target_dir(root))
        .args(["build", "--release", "--workspace", "--target", TARGET])
        .args(tc.build_args());
    // CI builds exactly what the lock file says; a developer's build may update it.
    if std::env::var_os("CI").is_some() {
        cmd.arg("--locked");
    }
    let status = cmd.status().map_err(|e| XtaskError::Io(format!("cargo: {e}")))?;
    if status.success() {
        Ok(())
    } else {
        Err(XtaskError::Cargo(format!("cargo build in {} failed: {status}", dir.display())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugin_crates_are_found_with_their_artifacts() {
        let root = crate::repo_root();
        let crates = discover(&root).unwrap();
        let m = crates.iter().find(|c| c.name == "moderation").expect("the moderation plugin");
        assert_eq!(m.artifact, "moderation.wasm");
        assert!(crates.iter().any(|c| c.name == "hello"), "the example plugin");
        assert!(crates.iter().filter(|c| c.name == "ruled").count() == 2, "both versions of the reload fixture");
    }

    #[test]
    fn core_modules_become_components_and_junk_is_refused() {
        let empty_module = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
        let c = componentize(&empty_module).unwrap();
        assert_eq!(&c[4..8], &[0x0d, 0x00, 0x01, 0x00], "an empty module makes an empty component");
        assert!(componentize(b"junk").is_err());
    }
}
