//! `cargo xtask new-plugin NAME [--dir PATH]`: scaffold a plugin that builds, tests and loads as it is — a
//! `Cargo.toml`, a `plugin.toml` with golden fixtures, a `src/lib.rs` with a `before-publish` and an `on-command`
//! hook and their native tests, and a `README.md` line.
//!
//! Where it goes decides how it builds. Under `plugins/` (the default, `plugins/NAME`) the crate becomes a member
//! of the plugins workspace, added to `members` in `plugins/Cargo.toml`, and `cargo xtask plugins` builds it with
//! the others. Anywhere else it is a crate of its own (`[workspace]`, the plugins' release profile, the SDK by
//! path), built with `cargo xtask plugins --path DIR`. An existing directory, a name the manifest would refuse, or
//! the name of a plugin or package the workspace has already are refused before anything is written.

use crate::XtaskError;
use crate::plugins::{absolute, discover, member_dirs, relative_to};
use std::path::{Path, PathBuf};

const PLUGIN_TOML: &str = include_str!("../templates/plugin.toml.tmpl");
const LIB_RS: &str = include_str!("../templates/lib.rs.tmpl");
const CARGO_MEMBER: &str = include_str!("../templates/Cargo-member.toml.tmpl");
const CARGO_STANDALONE: &str = include_str!("../templates/Cargo-standalone.toml.tmpl");
const README: &str = include_str!("../templates/README.md.tmpl");

/// What [`scaffold`] made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scaffolded {
    pub dir: PathBuf,
    /// The entry added to `members` in `plugins/Cargo.toml`, for a plugin kept under `plugins/`.
    pub member: Option<String>,
    /// How to build and test it.
    pub build: String,
    pub test: String,
}

/// Names a cargo package or a Rust crate cannot have, beside the keywords.
const RESERVED: [&str; 8] = ["test", "std", "core", "alloc", "proc_macro", "sdk", "testing", "target"];

const KEYWORDS: [&str; 52] = [
    "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn", "for", "if", "impl", "in",
    "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "self", "static", "struct", "super", "trait",
    "true", "type", "unsafe", "use", "where", "while", "async", "await", "dyn", "abstract", "become", "box", "do",
    "final", "macro", "override", "priv", "typeof", "unsized", "virtual", "yield", "try", "gen", "union",
];

/// Checks a plugin name: what the host's manifest accepts (lower-case letters, digits and dashes, starting with a
/// letter, at most 64), which is also a valid package name, minus what would make a confusing crate or type.
pub fn check_name(name: &str) -> Result<(), XtaskError> {
    let bad = |why: &str| Err(XtaskError::Plugin(format!("plugin name {name:?}: {why}")));
    if name.is_empty() || name.len() > 64 {
        return bad("1 to 64 characters");
    }
    if !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        return bad("must start with a lower-case letter");
    }
    if !name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-') {
        return bad("only lower-case letters, digits and dashes");
    }
    if name.ends_with('-') || name.contains("--") {
        return bad("dashes go between words");
    }
    let ident = name.replace('-', "_");
    if KEYWORDS.contains(&ident.as_str()) || RESERVED.contains(&ident.as_str()) {
        return bad("reserved (a Rust keyword, a standard crate, or a folder of plugins/)");
    }
    Ok(())
}

/// `my-filter` → `MyFilter`, the plugin's type.
fn type_name(name: &str) -> String {
    name.split('-')
        .map(|w| {
            let mut c = w.chars();
            c.next().map(|f| f.to_ascii_uppercase().to_string() + c.as_str()).unwrap_or_default()
        })
        .collect()
}

/// Scaffolds plugin `name` in `dir` (default `plugins/<name>`) of the checkout at `root`.
pub fn scaffold(root: &Path, name: &str, dir: Option<&Path>) -> Result<Scaffolded, XtaskError> {
    check_name(name)?;
    let plugins = root.join("plugins");
    let dir = match dir {
        Some(d) => absolute(d)?,
        None => plugins.join(name),
    };
    if dir.exists() {
        return Err(XtaskError::Plugin(format!(
            "{} exists: new-plugin writes only into a new directory",
            dir.display()
        )));
    }
    for c in discover(root)? {
        if c.name == name || c.package == name {
            return Err(XtaskError::Plugin(format!("a plugin named {name} is already built from {}", c.dir.display())));
        }
    }
    for member in member_dirs(root)? {
        let package = std::fs::read_to_string(member.join("Cargo.toml")).ok().and_then(|t| {
            let t: toml::Table = toml::from_str(&t).ok()?;
            Some(t.get("package")?.get("name")?.as_str()?.to_owned())
        });
        if package.as_deref() == Some(name) {
            return Err(XtaskError::Plugin(format!(
                "the plugins workspace has a package {name} ({})",
                member.display()
            )));
        }
    }
    let inside = dir.starts_with(&plugins);
    let shown = dir.strip_prefix(root).unwrap_or(&dir).display().to_string();
    let (cargo, member, build, test) = if inside {
        let member = relative_to(&plugins, &dir).display().to_string();
        // A folder the members already take in (`testing/*`) needs no entry of its own.
        let ws = std::fs::read_to_string(plugins.join("Cargo.toml")).unwrap_or_default();
        let globbed = members_of(&ws)
            .unwrap_or_default()
            .iter()
            .filter_map(|m| m.strip_suffix("/*"))
            .any(|parent| Some(crate::plugins::normalize(&plugins.join(parent)).as_path()) == dir.parent());
        let member = (!globbed).then_some(member);
        let build = "cargo xtask plugins".to_owned();
        (CARGO_MEMBER.to_owned(), member, build, format!("cd plugins && cargo test -p {name}"))
    } else {
        let ws = workspace_package(root)?;
        let sdk = relative_to(&dir, &plugins.join("sdk")).display().to_string();
        let cargo =
            CARGO_STANDALONE.replace("__EDITION__", &ws.0).replace("__RUST_VERSION__", &ws.1).replace("__SDK__", &sdk);
        (cargo, None, format!("cargo xtask plugins --path {shown}"), format!("cd {shown} && cargo test"))
    };
    let fill = |t: &str| {
        t.replace("__NAME__", name)
            .replace("__TYPE__", &type_name(name))
            .replace("__BUILD__", &build)
            .replace("__TEST__", &test)
    };
    let mut files = vec![
        ("Cargo.toml", fill(&cargo)),
        ("plugin.toml", fill(PLUGIN_TOML)),
        ("src/lib.rs", fill(LIB_RS)),
        ("README.md", fill(README)),
    ];
    if !inside {
        files.push((".gitignore", "/target\n".to_owned()));
    }
    let written = write_all(&dir, &files).and_then(|()| match &member {
        Some(m) => add_member(&plugins.join("Cargo.toml"), m),
        None => Ok(()),
    });
    if let Err(e) = written {
        // Nothing half-made stays behind: the directory was new.
        let _ = std::fs::remove_dir_all(&dir);
        return Err(e);
    }
    // A long name makes lines the formatter would wrap, and `cargo fmt --check` would then fail on a fresh
    // scaffold; without rustfmt the code is still right, only not formatted.
    let _ = std::process::Command::new("rustfmt").arg("--edition").arg("2024").arg(dir.join("src/lib.rs")).status();
    Ok(Scaffolded { dir, member, build, test })
}

fn write_all(dir: &Path, files: &[(&str, String)]) -> Result<(), XtaskError> {
    for (rel, text) in files {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| XtaskError::Io(format!("{}: {e}", parent.display())))?;
        }
        std::fs::write(&path, text).map_err(|e| XtaskError::Io(format!("{}: {e}", path.display())))?;
    }
    Ok(())
}

/// The plugins workspace's `edition` and `rust-version`, for a crate of its own.
fn workspace_package(root: &Path) -> Result<(String, String), XtaskError> {
    let path = root.join("plugins/Cargo.toml");
    let text = std::fs::read_to_string(&path).map_err(|e| XtaskError::Io(format!("{}: {e}", path.display())))?;
    let t: toml::Table = toml::from_str(&text).map_err(|e| XtaskError::Plugin(format!("{}: {e}", path.display())))?;
    let get = |k: &str| {
        let v = t.get("workspace").and_then(|w| w.get("package")).and_then(|p| p.get(k)).and_then(|v| v.as_str());
        v.map(str::to_owned).ok_or_else(|| XtaskError::Plugin(format!("{}: no workspace.package.{k}", path.display())))
    };
    Ok((get("edition")?, get("rust-version")?))
}

/// Adds `member` to the `members` array of the workspace manifest at `path`, keeping the rest of its text as it
/// is (a TOML library would rewrite the comments away), and checks the result by parsing it.
fn add_member(path: &Path, member: &str) -> Result<(), XtaskError> {
    let text = std::fs::read_to_string(path).map_err(|e| XtaskError::Io(format!("{}: {e}", path.display())))?;
    let new = with_member(&text, member).map_err(|why| XtaskError::Plugin(format!("{}: {why}", path.display())))?;
    let tmp = path.with_extension("toml.tmp");
    std::fs::write(&tmp, &new).map_err(|e| XtaskError::Io(format!("{}: {e}", tmp.display())))?;
    std::fs::rename(&tmp, path).map_err(|e| XtaskError::Io(format!("{}: {e}", path.display())))
}

fn members_of(text: &str) -> Result<Vec<String>, String> {
    let t: toml::Table = toml::from_str(text).map_err(|e| e.to_string())?;
    let members = t.get("workspace").and_then(|w| w.get("members")).and_then(toml::Value::as_array);
    let members = members.ok_or("no [workspace] members")?;
    Ok(members.iter().filter_map(|m| m.as_str().map(str::to_owned)).collect())
}

/// The manifest text with `member` appended to `members = [...]`.
fn with_member(text: &str, member: &str) -> Result<String, String> {
    let before = members_of(text)?;
    let key = text
        .match_indices("members")
        .map(|(at, _)| at)
        .find(|&at| text[..at].ends_with('\n') || at == 0)
        .ok_or("no `members = [` line")?;
    let open = key + text[key..].find('[').ok_or("members is no array")?;
    let close = open + text[open..].find(']').ok_or("members has no closing bracket")?;
    let inside = text[open + 1..close].trim_end();
    let entry = format!("{member:?}");
    let insert = if inside.trim().is_empty() {
        entry
    } else if inside.ends_with(',') {
        format!(" {entry}")
    } else {
        format!(", {entry}")
    };
    let at = open + 1 + inside.len();
    let new = format!("{}{insert}{}", &text[..at], &text[at..]);
    let mut want = before;
    want.push(member.to_owned());
    if members_of(&new)? != want {
        return Err(format!("adding {member:?} to members did not give {want:?}"));
    }
    Ok(new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_manifest_rule() {
        for ok in ["shout", "no-caps", "rule2", "a"] {
            check_name(ok).unwrap();
        }
        for bad in ["", "Shout", "2fast", "no_caps", "no caps", "trailing-", "two--dashes", "self", "test", "sdk"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        assert!(check_name(&"a".repeat(65)).is_err());
        assert_eq!(type_name("no-caps-2"), "NoCaps2");
        assert_eq!(type_name("shout"), "Shout");
    }

    #[test]
    fn a_member_is_added_without_touching_the_rest() {
        let text = "# comment\n[workspace]\nresolver = \"3\"\nmembers = [\"sdk\", \"testing/*\"]\n# keep\n";
        let new = with_member(text, "shout").unwrap();
        assert_eq!(
            new,
            "# comment\n[workspace]\nresolver = \"3\"\nmembers = [\"sdk\", \"testing/*\", \"shout\"]\n# keep\n"
        );
        let multi = "[workspace]\nmembers = [\n  \"sdk\",\n]\n";
        assert_eq!(with_member(multi, "x").unwrap(), "[workspace]\nmembers = [\n  \"sdk\", \"x\"\n]\n");
        assert_eq!(with_member("[workspace]\nmembers = []\n", "x").unwrap(), "[workspace]\nmembers = [\"x\"]\n");
        assert!(with_member("[workspace]\n", "x").is_err());
    }

    /// The shipped workspace manifest takes the edit too.
    #[test]
    fn the_plugins_workspace_takes_a_member() {
        let text = std::fs::read_to_string(crate::repo_root().join("plugins/Cargo.toml")).unwrap();
        let new = with_member(&text, "shout").unwrap();
        assert_eq!(members_of(&new).unwrap().last().map(String::as_str), Some("shout"));
    }

    /// A crate of its own must build like the workspace's members: same profile, same edition.
    #[test]
    fn a_crate_of_its_own_has_the_workspace_profile() {
        let root = crate::repo_root();
        let ws: toml::Table =
            toml::from_str(&std::fs::read_to_string(root.join("plugins/Cargo.toml")).unwrap()).unwrap();
        let own: toml::Table = toml::from_str(&CARGO_STANDALONE.replace("__", "x")).unwrap();
        assert_eq!(own["profile"]["release"], ws["profile"]["release"]);
    }

    /// A fake checkout: a plugins workspace with one member plugin, and the SDK folder.
    fn checkout() -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("plugins");
        std::fs::create_dir_all(p.join("sdk")).unwrap();
        std::fs::create_dir_all(p.join("taken")).unwrap();
        std::fs::write(
            p.join("Cargo.toml"),
            "[workspace]\nmembers = [\"sdk\", \"taken\"]\n[workspace.package]\nedition = \"2024\"\nrust-version = \"1.95\"\n",
        )
        .unwrap();
        std::fs::write(p.join("sdk/Cargo.toml"), "[package]\nname = \"palaver-plugin-sdk\"\n").unwrap();
        std::fs::write(
            p.join("taken/Cargo.toml"),
            "[package]\nname = \"taken\"\n[lib]\ncrate-type = [\"cdylib\", \"rlib\"]\n",
        )
        .unwrap();
        std::fs::write(p.join("taken/plugin.toml"), "name = \"taken\"\nversion = \"1.0.0\"\n").unwrap();
        tmp
    }

    #[test]
    fn a_plugin_under_plugins_becomes_a_member() {
        let tmp = checkout();
        let s = scaffold(tmp.path(), "shout-out", None).unwrap();
        assert_eq!((s.dir.clone(), s.member.as_deref()), (tmp.path().join("plugins/shout-out"), Some("shout-out")));
        let ws = std::fs::read_to_string(tmp.path().join("plugins/Cargo.toml")).unwrap();
        assert_eq!(members_of(&ws).unwrap(), ["sdk", "taken", "shout-out"]);
        let lib = std::fs::read_to_string(s.dir.join("src/lib.rs")).unwrap();
        assert!(lib.contains("pub struct ShoutOut;") && lib.contains("\"shout-out.echo\"") && !lib.contains("__"));
        let manifest = std::fs::read_to_string(s.dir.join("plugin.toml")).unwrap();
        let m: toml::Table = toml::from_str(&manifest).unwrap();
        assert_eq!(m["name"].as_str(), Some("shout-out"));
        assert_eq!(m["fixtures"].as_array().map(Vec::len), Some(5));
        let cargo: toml::Table = toml::from_str(&std::fs::read_to_string(s.dir.join("Cargo.toml")).unwrap()).unwrap();
        assert_eq!(cargo["package"]["name"].as_str(), Some("shout-out"));
        let readme = std::fs::read_to_string(s.dir.join("README.md")).unwrap();
        assert!(readme.contains("cargo xtask plugins") && readme.contains("cargo test -p shout-out"), "{readme}");
        // The workspace now packages it.
        assert!(discover(tmp.path()).unwrap().iter().any(|c| c.name == "shout-out" && c.artifact == "shout_out.wasm"));
    }

    #[test]
    fn a_plugin_elsewhere_is_a_crate_of_its_own() {
        let tmp = checkout();
        let dir = tmp.path().join("mine/loud");
        let s = scaffold(tmp.path(), "loud", Some(&dir)).unwrap();
        assert_eq!(s.member, None);
        let text = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        let cargo: toml::Table = toml::from_str(&text).unwrap();
        assert!(cargo.contains_key("workspace"));
        assert_eq!(cargo["package"]["edition"].as_str(), Some("2024"));
        assert_eq!(cargo["dependencies"]["palaver-plugin-sdk"]["path"].as_str(), Some("../../plugins/sdk"));
        assert!(s.build.ends_with("--path mine/loud"), "{}", s.build);
        let ws = std::fs::read_to_string(tmp.path().join("plugins/Cargo.toml")).unwrap();
        assert_eq!(members_of(&ws).unwrap(), ["sdk", "taken"], "the workspace is left alone");
    }

    #[test]
    fn existing_directories_and_taken_names_are_refused() {
        let tmp = checkout();
        let e = scaffold(tmp.path(), "taken", Some(&tmp.path().join("new"))).unwrap_err().to_string();
        assert!(e.contains("already built from"), "{e}");
        let e = scaffold(tmp.path(), "palaver-plugin-sdk", None).unwrap_err().to_string();
        assert!(e.contains("has a package"), "{e}");
        std::fs::create_dir_all(tmp.path().join("plugins/exists")).unwrap();
        let e = scaffold(tmp.path(), "exists", None).unwrap_err().to_string();
        assert!(e.contains("exists: new-plugin writes only into a new directory"), "{e}");
        assert!(scaffold(tmp.path(), "Bad", None).is_err());
        assert!(!tmp.path().join("plugins/Bad").exists());
    }
}
