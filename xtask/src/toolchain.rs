//! Finding a Rust toolchain that builds for wasm32-unknown-unknown: rustup's target when it is installed or can
//! be added, else Debian's `rustc-web` with its standard-library sources (`-Zbuild-std`), as the project's
//! TOOLCHAIN notes describe for machines where rustup cannot download the target.

use crate::XtaskError;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The wasm target every plugin is built for.
pub const TARGET: &str = "wasm32-unknown-unknown";

/// How to run cargo for the wasm target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Toolchain {
    /// rustup's toolchain, with the target installed.
    Rustup { cargo: PathBuf },
    /// Debian's rustc-web building std from source, linked with rustup's (or the system's) rust-lld.
    Debian { cargo: PathBuf, rustc: PathBuf, linker: PathBuf },
}

impl Toolchain {
    /// One line for the build log.
    pub fn describe(&self) -> String {
        match self {
            Toolchain::Rustup { cargo } => format!("rustup toolchain ({})", cargo.display()),
            Toolchain::Debian { rustc, .. } => format!("Debian rustc-web ({}) with -Zbuild-std", rustc.display()),
        }
    }

    /// A cargo command for this toolchain, cleared of the variables a parent cargo (a `cargo test` that asked
    /// for the plugins) leaves behind for its own build.
    pub fn cargo(&self) -> Command {
        let cargo = match self {
            Toolchain::Rustup { cargo } | Toolchain::Debian { cargo, .. } => cargo,
        };
        let mut c = clean(Command::new(cargo));
        if let Toolchain::Debian { rustc, linker, .. } = self {
            c.env("RUSTC", rustc).env("RUSTC_BOOTSTRAP", "1").env("CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER", linker);
        } else {
            c.env_remove("RUSTC");
        }
        c
    }

    /// The extra cargo arguments this toolchain needs.
    pub fn build_args(&self) -> Vec<&'static str> {
        match self {
            Toolchain::Rustup { .. } => Vec::new(),
            Toolchain::Debian { .. } => vec!["-Zbuild-std=std,panic_abort"],
        }
    }

    /// The target directory: the two toolchains' artifacts must never mix.
    pub fn target_dir(&self, root: &Path) -> PathBuf {
        match self {
            Toolchain::Rustup { .. } => root.join("target/wasm"),
            Toolchain::Debian { .. } => root.join("target/wasm-debian"),
        }
    }
}

/// `cmd` without the variables a parent cargo leaves behind for its own build.
fn clean(mut c: Command) -> Command {
    for v in ["CARGO_ENCODED_RUSTFLAGS", "CARGO_BUILD_TARGET", "RUSTC_WORKSPACE_WRAPPER", "RUSTC_WRAPPER"] {
        c.env_remove(v);
    }
    for v in ["CARGO_MAKEFLAGS", "MAKEFLAGS", "MFLAGS"] {
        c.env_remove(v);
    }
    c
}

/// The cargo that runs this task, for native builds (a plugin's own tests), cleared like [`Toolchain::cargo`].
pub fn native_cargo() -> Command {
    let mut c = clean(Command::new(host_cargo()));
    c.env_remove("RUSTC");
    c
}

fn output(cmd: &mut Command) -> Option<String> {
    let out = cmd.output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The cargo that runs this task, or the one on `PATH`.
fn host_cargo() -> PathBuf {
    std::env::var_os("CARGO").map_or_else(|| PathBuf::from("cargo"), PathBuf::from)
}

fn rustup_has_target() -> bool {
    output(Command::new("rustup").args(["target", "list", "--installed"]))
        .is_some_and(|s| s.lines().any(|l| l.trim() == TARGET))
}

/// rustup's toolchain if it has (or can be given) the wasm target, else the Debian fallback. Setting
/// `PALAVER_PLUGINS_TOOLCHAIN=debian` forces the fallback, to exercise it.
pub fn find(log: &mut dyn FnMut(&str)) -> Result<Toolchain, XtaskError> {
    let forced = std::env::var("PALAVER_PLUGINS_TOOLCHAIN").is_ok_and(|v| v == "debian");
    if !forced {
        if rustup_has_target() {
            return Ok(Toolchain::Rustup { cargo: host_cargo() });
        }
        log(&format!("rustup has no {TARGET} target; trying `rustup target add {TARGET}`"));
        let added = Command::new("rustup").args(["target", "add", TARGET]).status().is_ok_and(|s| s.success());
        if added && rustup_has_target() {
            return Ok(Toolchain::Rustup { cargo: host_cargo() });
        }
        log("rustup could not add the target; falling back to Debian's rustc-web with -Zbuild-std");
    }
    debian(log)
}

fn debian(log: &mut dyn FnMut(&str)) -> Result<Toolchain, XtaskError> {
    let (rustc, cargo) = (PathBuf::from("/usr/bin/rustc"), PathBuf::from("/usr/bin/cargo"));
    let src = Path::new("/usr/lib/rustlib/src/rust/library");
    if !rustc.exists() || !cargo.exists() || !src.exists() {
        log("installing rustc-web and rust-web-src with apt-get");
        let ok = Command::new("apt-get")
            .args(["install", "-y", "--no-install-recommends", "rustc-web", "rust-web-src"])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .is_ok_and(|s| s.success());
        if !ok || !rustc.exists() || !cargo.exists() {
            return Err(XtaskError::Toolchain(format!(
                "no {TARGET} toolchain: `rustup target add {TARGET}` failed and `apt-get install rustc-web rust-web-src` \
                 did not provide /usr/bin/rustc and /usr/bin/cargo"
            )));
        }
    }
    let linker = rust_lld().ok_or_else(|| {
        XtaskError::Toolchain("no rust-lld (rustup's sysroot) or wasm-ld (lld) to link the wasm target".to_owned())
    })?;
    Ok(Toolchain::Debian { cargo, rustc, linker })
}

/// rustup's `rust-lld`, which links wasm, else a system `rust-lld` or `wasm-ld`.
fn rust_lld() -> Option<PathBuf> {
    let sysroot = output(Command::new("rustc").args(["--print", "sysroot"])).map(|s| PathBuf::from(s.trim()));
    let host = output(Command::new("rustc").args(["--print", "host-tuple"]))
        .map_or_else(|| "x86_64-unknown-linux-gnu".to_owned(), |s| s.trim().to_owned());
    let candidates = [
        sysroot.map(|s| s.join("lib/rustlib").join(&host).join("bin/rust-lld")),
        Some(PathBuf::from("/usr/bin/rust-lld")),
        Some(PathBuf::from("/usr/bin/wasm-ld")),
    ];
    candidates.into_iter().flatten().find(|p| p.exists())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fallback_builds_std_and_keeps_its_own_target_dir() {
        let t = Toolchain::Debian {
            cargo: "/usr/bin/cargo".into(),
            rustc: "/usr/bin/rustc".into(),
            linker: "/x/rust-lld".into(),
        };
        assert_eq!(t.build_args(), vec!["-Zbuild-std=std,panic_abort"]);
        assert_eq!(t.target_dir(Path::new("/r")), PathBuf::from("/r/target/wasm-debian"));
        let c = t.cargo();
        let envs: Vec<_> =
            c.get_envs().filter_map(|(k, v)| Some((k.to_str()?.to_owned(), v?.to_str()?.to_owned()))).collect();
        assert!(envs.contains(&("RUSTC_BOOTSTRAP".to_owned(), "1".to_owned())));
        assert!(envs.contains(&("CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER".to_owned(), "/x/rust-lld".to_owned())));
        let r = Toolchain::Rustup { cargo: "cargo".into() };
        assert!(r.build_args().is_empty());
        assert_eq!(r.target_dir(Path::new("/r")), PathBuf::from("/r/target/wasm"));
        assert!(r.describe().contains("rustup"));
    }
}
