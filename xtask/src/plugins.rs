//! `cargo xtask plugins`: build every plugin crate of the plugins workspace for wasm32-unknown-unknown in release,
//! turn each core module into a component with wit-component, and write `<name>-<version>.wasm` with its manifest
//! to `target/plugins/`. The manifest written there names its component and pins the component's SHA-256.
//!
//! **Which crates.** The plugins workspace's members (`plugins/Cargo.toml`, `members`: a path or `dir/*`), wherever
//! they are kept: `cargo build --workspace` compiles exactly those, so exactly those are packaged. A member with a
//! `plugin.toml` beside its `Cargo.toml` is a plugin; a member that builds a `cdylib` without one is refused
//! (it would be compiled and then shipped nowhere), and so is a crate with a `plugin.toml` under `plugins/`,
//! `plugins/testing/` or `examples/` that is no member (cargo would silently skip it). A plugin kept anywhere
//! else, as a crate of its own (`[workspace]` in its `Cargo.toml`), is built alone with `--path DIR`
//! ([`build_path`]).

use crate::XtaskError;
use crate::toolchain::{self, TARGET, Toolchain};
use sha2::{Digest, Sha256};
use std::path::{Component, Path, PathBuf};

/// One plugin crate found in the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginCrate {
    pub dir: PathBuf,
    /// The cargo package's name.
    pub package: String,
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

/// `path` with `.` and `..` resolved by its text, so that member paths compare equal however they were written.
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// `path` made absolute against the current directory, and normalized.
pub(crate) fn absolute(path: &Path) -> Result<PathBuf, XtaskError> {
    let abs = std::path::absolute(path).map_err(|e| XtaskError::Io(format!("{}: {e}", path.display())))?;
    Ok(normalize(&abs))
}

/// The crate's `Cargo.toml`, parsed.
fn cargo_toml(dir: &Path) -> Result<toml::Table, XtaskError> {
    toml::from_str(&read(&dir.join("Cargo.toml"))?)
        .map_err(|e| XtaskError::Plugin(format!("{}: Cargo.toml: {e}", dir.display())))
}

fn builds_cdylib(cargo: &toml::Table) -> bool {
    let types = cargo.get("lib").and_then(|l| l.get("crate-type")).and_then(toml::Value::as_array);
    types.is_some_and(|t| t.iter().any(|t| t.as_str() == Some("cdylib")))
}

fn package_name(cargo: &toml::Table) -> &str {
    str_at(cargo, &["package", "name"]).unwrap_or("?")
}

/// The plugin crate in `dir`, `None` if `dir` has no `plugin.toml` and `Cargo.toml` side by side.
pub fn crate_at(dir: &Path) -> Result<Option<PluginCrate>, XtaskError> {
    let manifest = dir.join("plugin.toml");
    if !manifest.exists() || !dir.join("Cargo.toml").exists() {
        return Ok(None);
    }
    let bad = |m: &str| XtaskError::Plugin(format!("{}: {m}", dir.display()));
    let plugin: toml::Table = toml::from_str(&read(&manifest)?).map_err(|e| bad(&e.to_string()))?;
    let cargo = cargo_toml(dir)?;
    if plugin.contains_key("sha256") || plugin.contains_key("component") {
        return Err(bad("plugin.toml must not set sha256 or component: the build writes them"));
    }
    let name = str_at(&plugin, &["name"]).ok_or_else(|| bad("plugin.toml has no name"))?.to_owned();
    let version = str_at(&plugin, &["version"]).ok_or_else(|| bad("plugin.toml has no version"))?.to_owned();
    let package = str_at(&cargo, &["package", "name"]).ok_or_else(|| bad("Cargo.toml has no package name"))?;
    if !builds_cdylib(&cargo) {
        return Err(bad(&format!(
            "crate {package} has a plugin.toml but builds no component: its Cargo.toml needs \
             `[lib] crate-type = [\"cdylib\", \"rlib\"]`"
        )));
    }
    let lib = str_at(&cargo, &["lib", "name"]).unwrap_or(package).replace('-', "_");
    Ok(Some(PluginCrate {
        dir: dir.to_owned(),
        package: package.to_owned(),
        name,
        version,
        artifact: format!("{lib}.wasm"),
    }))
}

/// The directories of the plugins workspace's members, as `plugins/Cargo.toml` lists them, without its
/// `exclude`s. Members are paths or `dir/*` (the only glob this reads; cargo reads the same).
pub fn member_dirs(root: &Path) -> Result<Vec<PathBuf>, XtaskError> {
    let base = root.join("plugins");
    let ws = cargo_toml(&base)?;
    let list = |key: &str| -> Vec<String> {
        let items = ws.get("workspace").and_then(|w| w.get(key)).and_then(toml::Value::as_array);
        items.map(|a| a.iter().filter_map(|m| m.as_str().map(str::to_owned)).collect()).unwrap_or_default()
    };
    let excluded: Vec<PathBuf> = list("exclude").iter().map(|e| normalize(&base.join(e))).collect();
    let mut dirs = Vec::new();
    for m in list("members") {
        let glob = m.strip_suffix("/*");
        if glob.unwrap_or(&m).contains(['*', '?', '[']) {
            return Err(XtaskError::Plugin(format!(
                "plugins/Cargo.toml: member {m:?}: xtask reads members written as a path or as `dir/*`"
            )));
        }
        match glob {
            Some(parent) => {
                let parent = normalize(&base.join(parent));
                let entries =
                    std::fs::read_dir(&parent).map_err(|e| XtaskError::Io(format!("{}: {e}", parent.display())))?;
                let mut found: Vec<PathBuf> =
                    entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_dir()).collect();
                found.sort();
                dirs.extend(found);
            }
            None => dirs.push(normalize(&base.join(&m))),
        }
    }
    dirs.retain(|d| !excluded.contains(d));
    Ok(dirs)
}

/// Every plugin crate of the plugins workspace, by directory. Refuses, naming the crate, a member that builds a
/// component but has no `plugin.toml`, and a plugin crate in the usual folders that the workspace does not build.
pub fn discover(root: &Path) -> Result<Vec<PluginCrate>, XtaskError> {
    let members = member_dirs(root)?;
    let shown = |d: &Path| d.strip_prefix(root).unwrap_or(d).display().to_string();
    let mut out = Vec::new();
    for dir in &members {
        if let Some(c) = crate_at(dir)? {
            out.push(c);
            continue;
        }
        if dir.join("Cargo.toml").exists() {
            let cargo = cargo_toml(dir)?;
            if builds_cdylib(&cargo) {
                return Err(XtaskError::Plugin(format!(
                    "crate {} ({}) builds a cdylib but has no plugin.toml beside its Cargo.toml: `cargo xtask \
                     plugins` would compile it and package nothing; add its manifest (docs/plugins.md, \
                     \"Reference\")",
                    package_name(&cargo),
                    shown(dir)
                )));
            }
        }
    }
    for parent in ["plugins", "plugins/testing", "examples"] {
        let Ok(entries) = std::fs::read_dir(root.join(parent)) else { continue };
        let mut dirs: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_dir()).collect();
        dirs.sort();
        for d in dirs {
            let d = normalize(&d);
            if members.contains(&d) || !d.join("plugin.toml").exists() || !d.join("Cargo.toml").exists() {
                continue;
            }
            // A crate of its own (its own `[workspace]`) is built with `--path`, on purpose apart.
            let cargo = cargo_toml(&d)?;
            if cargo.contains_key("workspace") {
                continue;
            }
            return Err(XtaskError::Plugin(format!(
                "crate {} ({}) has a plugin.toml but is no member of the plugins workspace, so nothing would build \
                 it: add {:?} to `members` in plugins/Cargo.toml (`cargo xtask new-plugin` does that for the plugins \
                 it scaffolds)",
                package_name(&cargo),
                shown(&d),
                relative_to(&root.join("plugins"), &d).display().to_string()
            )));
        }
    }
    out.sort_by(|a, b| a.dir.cmp(&b.dir));
    let mut names: Vec<(&str, &str)> = out.iter().map(|c| (c.name.as_str(), c.version.as_str())).collect();
    names.sort();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(XtaskError::Plugin(format!("two crates build plugin {} {}", w[0].0, w[0].1)));
    }
    Ok(out)
}

/// `to` relative to `from` (both absolute and normalized), by their text.
pub(crate) fn relative_to(from: &Path, to: &Path) -> PathBuf {
    let (f, t): (Vec<_>, Vec<_>) = (from.components().collect(), to.components().collect());
    let common = f.iter().zip(&t).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..f.len() {
        out.push("..");
    }
    for c in &t[common..] {
        out.push(c);
    }
    out
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

/// Builds every plugin of the plugins workspace and writes the components and manifests to `out`; other
/// components and manifests there are removed, and `out/deploy/` gets the plugins a node may run.
pub fn build(root: &Path, out: &Path, log: &mut dyn FnMut(&str)) -> Result<Vec<Built>, XtaskError> {
    let crates = discover(root)?;
    if crates.is_empty() {
        return Err(XtaskError::Plugin(format!("no plugin crates in {}", root.join("plugins/Cargo.toml").display())));
    }
    let tc = toolchain::find(log)?;
    log(&format!("building {} plugins for {TARGET} with {}", crates.len(), tc.describe()));
    let dir = root.join("plugins");
    let mut cmd = cargo_build(root, &tc, &dir);
    cmd.arg("--workspace");
    // CI builds exactly what the lock file says; a developer's build may update it.
    if std::env::var_os("CI").is_some() {
        cmd.arg("--locked");
    }
    run(cmd, &dir)?;
    std::fs::create_dir_all(out).map_err(|e| XtaskError::Io(format!("{}: {e}", out.display())))?;
    let release = tc.target_dir(root).join(TARGET).join("release");
    let built = crates.iter().map(|c| package(root, c, &release, out)).collect::<Result<Vec<_>, _>>()?;
    remove_stale(out, &built)?;
    write_deployable(root, out, &crates)?;
    Ok(built)
}

/// `cargo xtask plugins --path DIR`: builds the one plugin crate in `dir` (a member of the plugins workspace, or a
/// crate of its own anywhere, such as one `cargo xtask new-plugin --dir` scaffolded) and writes its component and
/// manifest to `out`, leaving everything else there alone. It shares the repository's wasm target directory, so
/// the SDK and its dependencies are not compiled again.
pub fn build_path(root: &Path, dir: &Path, out: &Path, log: &mut dyn FnMut(&str)) -> Result<Built, XtaskError> {
    let dir = absolute(dir)?;
    let Some(c) = crate_at(&dir)? else {
        return Err(XtaskError::Plugin(format!(
            "{}: no plugin crate here (a plugin crate has a Cargo.toml and a plugin.toml side by side)",
            dir.display()
        )));
    };
    // Core modules land in one directory of the shared target, named after the library, and components in
    // `out` after the plugin: another crate's must not be overwritten.
    for other in discover(root)?.iter().filter(|o| o.dir != c.dir) {
        if (&other.name, &other.version) == (&c.name, &c.version) {
            return Err(XtaskError::Plugin(format!(
                "{}: plugin {} {} is also built from {}: rename it or change its version",
                dir.display(),
                c.name,
                c.version,
                other.dir.display()
            )));
        }
        if other.artifact == c.artifact {
            return Err(XtaskError::Plugin(format!(
                "{}: its library is called like {}'s ({}): rename the package or set `[lib] name`",
                dir.display(),
                other.dir.display(),
                c.artifact
            )));
        }
    }
    let tc = toolchain::find(log)?;
    log(&format!("building {} for {TARGET} with {}", dir.display(), tc.describe()));
    let mut cmd = cargo_build(root, &tc, &dir);
    cmd.arg("--manifest-path").arg(dir.join("Cargo.toml"));
    run(cmd, &dir)?;
    std::fs::create_dir_all(out).map_err(|e| XtaskError::Io(format!("{}: {e}", out.display())))?;
    package(root, &c, &tc.target_dir(root).join(TARGET).join("release"), out)
}

/// Runs the native tests of the plugin crate in `dir` (`cargo test`, with the target directory the plugins
/// workspace uses for its own native tests, so that shared dependencies are reused).
pub fn native_test(root: &Path, dir: &Path) -> Result<(), XtaskError> {
    let dir = absolute(dir)?;
    let mut cmd = toolchain::native_cargo();
    cmd.current_dir(&dir)
        .env("CARGO_TARGET_DIR", root.join("target/wasm"))
        .arg("test")
        .arg("--manifest-path")
        .arg(dir.join("Cargo.toml"));
    run(cmd, &dir)
}

/// Turns a built core module into a component, and writes it with its manifest to `out`.
fn package(root: &Path, c: &PluginCrate, release: &Path, out: &Path) -> Result<Built, XtaskError> {
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
    Ok(Built {
        name: c.name.clone(),
        version: c.version.clone(),
        component: wasm_path,
        manifest: manifest_path,
        bytes: component.len(),
        sha256: sha,
    })
}

/// Copies the plugins a node may run (the crates directly under `plugins/`, not the test components of
/// `plugins/testing/`, the examples, nor members kept elsewhere) into `<out>/deploy/`, a directory a server can
/// point `plugins.dir` at as it is.
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

/// `cargo build --release --target wasm32-unknown-unknown` run in `dir`, into the toolchain's target directory.
fn cargo_build(root: &Path, tc: &Toolchain, dir: &Path) -> std::process::Command {
    let mut cmd = tc.cargo();
    cmd.current_dir(dir)
        .env("CARGO_TARGET_DIR", tc.target_dir(root))
        .args(["build", "--release", "--target", TARGET])
        .args(tc.build_args());
    cmd
}

fn run(mut cmd: std::process::Command, dir: &Path) -> Result<(), XtaskError> {
    let status = cmd.status().map_err(|e| XtaskError::Io(format!("cargo: {e}")))?;
    if status.success() {
        Ok(())
    } else {
        Err(XtaskError::Cargo(format!("cargo in {} failed: {status}", dir.display())))
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
        assert!(!crates.iter().any(|c| c.package == "palaver-plugin-sdk"), "the SDK is a member, not a plugin");
    }

    #[test]
    fn core_modules_become_components_and_junk_is_refused() {
        let empty_module = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
        let c = componentize(&empty_module).unwrap();
        assert_eq!(&c[4..8], &[0x0d, 0x00, 0x01, 0x00], "an empty module makes an empty component");
        assert!(componentize(b"junk").is_err());
    }

    /// A repository layout in a temporary directory: a plugins workspace with the given members, and crates.
    struct Layout {
        tmp: tempfile::TempDir,
    }

    impl Layout {
        fn new(members: &str) -> Layout {
            let tmp = tempfile::tempdir().unwrap();
            std::fs::create_dir_all(tmp.path().join("plugins")).unwrap();
            let ws = format!("[workspace]\nmembers = {members}\nexclude = [\"skipped\"]\n");
            std::fs::write(tmp.path().join("plugins/Cargo.toml"), ws).unwrap();
            Layout { tmp }
        }

        fn root(&self) -> &Path {
            self.tmp.path()
        }

        /// A crate at `rel` (under the root): a cdylib unless `lib`, with a plugin.toml if `plugin` names one.
        fn krate(&self, rel: &str, package: &str, cdylib: bool, plugin: Option<(&str, &str)>) {
            let dir = self.root().join(rel);
            std::fs::create_dir_all(&dir).unwrap();
            let lib = if cdylib { "[lib]\ncrate-type = [\"cdylib\", \"rlib\"]\n" } else { "" };
            std::fs::write(dir.join("Cargo.toml"), format!("[package]\nname = \"{package}\"\n{lib}")).unwrap();
            if let Some((name, version)) = plugin {
                let m = format!("name = \"{name}\"\nversion = \"{version}\"\nworld = \"full\"\n");
                std::fs::write(dir.join("plugin.toml"), m).unwrap();
            }
        }
    }

    /// A member kept anywhere is packaged: the build and the packaging read the same list.
    #[test]
    fn members_kept_anywhere_are_plugins() {
        let l = Layout::new(r#"["sdk", "testing/*", "../elsewhere/far", "../examples/ex"]"#);
        l.krate("plugins/sdk", "palaver-plugin-sdk", false, None);
        l.krate("plugins/testing/t", "t", true, Some(("t", "1.0.0")));
        l.krate("elsewhere/far", "far-away", true, Some(("far", "0.2.0")));
        l.krate("examples/ex", "ex", true, Some(("ex", "0.1.0")));
        let found = discover(l.root()).unwrap();
        let names: Vec<&str> = found.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["far", "ex", "t"]);
        let far = &found[0];
        assert_eq!((far.artifact.as_str(), far.dir.clone()), ("far_away.wasm", l.root().join("elsewhere/far")));
    }

    #[test]
    fn a_member_that_builds_a_component_without_a_manifest_is_refused_by_name() {
        let l = Layout::new(r#"["lost"]"#);
        l.krate("plugins/lost", "lost-plugin", true, None);
        let e = discover(l.root()).unwrap_err().to_string();
        assert!(e.contains("lost-plugin") && e.contains("plugins/lost") && e.contains("no plugin.toml"), "{e}");
    }

    #[test]
    fn a_plugin_crate_the_workspace_does_not_build_is_refused_by_name() {
        let l = Layout::new(r#"["a"]"#);
        l.krate("plugins/a", "a", true, Some(("a", "1.0.0")));
        l.krate("plugins/forgotten", "forgotten", true, Some(("forgotten", "1.0.0")));
        let e = discover(l.root()).unwrap_err().to_string();
        assert!(
            e.contains("crate forgotten (plugins/forgotten)") && e.contains("add \"forgotten\" to `members`"),
            "{e}"
        );
        // A crate of its own is left to `--path`; an excluded one too.
        std::fs::write(l.root().join("plugins/forgotten/Cargo.toml"), "[package]\nname = \"forgotten\"\n[workspace]\n")
            .unwrap();
        assert_eq!(discover(l.root()).unwrap().len(), 1);
    }

    #[test]
    fn a_plugin_crate_must_build_a_cdylib() {
        let l = Layout::new(r#"["a"]"#);
        l.krate("plugins/a", "a", false, Some(("a", "1.0.0")));
        let e = discover(l.root()).unwrap_err().to_string();
        assert!(e.contains("builds no component") && e.contains("cdylib"), "{e}");
    }

    #[test]
    fn excluded_members_and_odd_globs() {
        let l = Layout::new(r#"["x/*"]"#);
        l.krate("plugins/x/skipped", "s", true, None);
        std::fs::write(
            l.root().join("plugins/Cargo.toml"),
            "[workspace]\nmembers = [\"x/*\"]\nexclude = [\"x/skipped\"]\n",
        )
        .unwrap();
        assert_eq!(member_dirs(l.root()).unwrap(), Vec::<PathBuf>::new());
        std::fs::write(l.root().join("plugins/Cargo.toml"), "[workspace]\nmembers = [\"x/a*\"]\n").unwrap();
        assert!(member_dirs(l.root()).unwrap_err().to_string().contains("`dir/*`"));
    }

    #[test]
    fn paths_are_normalized_and_related_by_their_text() {
        assert_eq!(normalize(Path::new("/r/plugins/../examples/./x")), PathBuf::from("/r/examples/x"));
        assert_eq!(relative_to(Path::new("/r/plugins"), Path::new("/r/plugins/a")), PathBuf::from("a"));
        assert_eq!(relative_to(Path::new("/r/a/b"), Path::new("/r/plugins/sdk")), PathBuf::from("../../plugins/sdk"));
    }
}
