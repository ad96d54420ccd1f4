//! Reporting a plugin's panic to the host. A plugin is built with `panic = "abort"`: a panic ends in a wasm
//! `unreachable` trap, and all the host would see is the trap and a backtrace of function indices. The export
//! macros install a panic hook on the first call into an instance that sends `panicked at <file:line>: <message>`
//! through the `log` import at error level; the host keeps the last error line of a call and puts it into the
//! fault it records (its log line, the plugin's `last_fault`, and `last_error` when a golden fixture faults).
//!
//! **Grants.** A component imports only what its code calls, and the host refuses a component that imports an
//! interface its manifest does not grant. A hook that called `log` unconditionally would make every plugin import
//! `log`, so every plugin without the `log` grant would be refused at load. So the hook reports only when the
//! manifest beside the crate grants `log`: the export macros read `plugin.toml` at compile time
//! ([`grants_log`]), and without the grant the hook is never installed and its `log` call is compiled out, so the
//! component does not import `log`. Granting `log` is how a plugin asks for its panics to be reported; the
//! scaffold of `cargo xtask new-plugin` grants it.

use std::panic::PanicHookInfo;

/// Installs the panic hook when `REPORT` (the manifest grants `log`); without it, does nothing, and the `log`
/// import is not referenced.
pub(crate) fn install<const REPORT: bool>() {
    if REPORT {
        std::panic::set_hook(Box::new(|info| {
            use crate::bindings::platform::palaver::plugin::log;
            log::log(crate::bindings::wit::LogLevel::Error, &message(info));
        }));
    }
}

/// `panicked at src/lib.rs:12:5: the message`, as Rust's default hook says it.
pub(crate) fn message(info: &PanicHookInfo<'_>) -> String {
    let what = info.payload_as_str().unwrap_or("a panic with a non-string payload");
    match info.location() {
        Some(at) => format!("panicked at {}:{}:{}: {what}", at.file(), at.line(), at.column()),
        None => format!("panicked: {what}"),
    }
}

/// Whether a manifest's top-level `grants = [...]` lists `"log"`. A `const fn`, so that the export macros decide
/// at compile time (see the module docs). It reads the TOML text just far enough: top-level keys come before the
/// first table header, so the scan stops at a line that starts with `[`; comments and both kinds of quotes are
/// understood, and the array may span lines.
pub const fn grants_log(manifest: &str) -> bool {
    let b = manifest.as_bytes();
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && (b[i] == b' ' || b[i] == b'\t') {
            i += 1;
        }
        if i < b.len() && b[i] == b'[' {
            return false;
        }
        if starts_with_at(b, i, b"grants") {
            let mut j = i + b"grants".len();
            while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
                j += 1;
            }
            if j < b.len() && b[j] == b'=' {
                return array_has_log(b, j + 1);
            }
        }
        while i < b.len() && b[i] != b'\n' {
            i += 1;
        }
        i += 1;
    }
    false
}

const fn starts_with_at(b: &[u8], at: usize, word: &[u8]) -> bool {
    if at + word.len() > b.len() {
        return false;
    }
    let mut k = 0;
    while k < word.len() {
        if b[at + k] != word[k] {
            return false;
        }
        k += 1;
    }
    true
}

/// Whether the array that starts after `=` at `i` holds the string `log`.
const fn array_has_log(b: &[u8], mut i: usize) -> bool {
    while i < b.len() && (b[i] == b' ' || b[i] == b'\t') {
        i += 1;
    }
    if i >= b.len() || b[i] != b'[' {
        return false;
    }
    i += 1;
    while i < b.len() {
        match b[i] {
            b']' => return false,
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            quote @ (b'"' | b'\'') => {
                let start = i + 1;
                let mut end = start;
                while end < b.len() && b[end] != quote && b[end] != b'\n' {
                    end += 1;
                }
                if end - start == 3 && starts_with_at(b, start, b"log") {
                    return true;
                }
                i = end;
            }
            _ => {}
        }
        i += 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::grants_log;

    #[test]
    fn the_log_grant_is_read_from_the_manifest_text() {
        assert!(grants_log("name = \"a\"\ngrants = [\"settings\", \"log\"]\n"));
        assert!(grants_log("grants=['log']"));
        assert!(grants_log("  grants = [\n  \"kv\", # the store\n  \"log\",\n]\n"));
        assert!(!grants_log("grants = [\"kv\", \"events\"]\n"));
        assert!(!grants_log("grants = [\"logs\", \"blog\"]\n"));
        assert!(!grants_log("grants = [] # \"log\" later\n"));
        assert!(!grants_log("grants = [\n # \"log\"\n \"kv\"]\n"));
        assert!(!grants_log("grants_extra = [\"log\"]\n"));
        assert!(!grants_log("name = \"a\"\n"));
        assert!(!grants_log(""));
        // Only top-level keys: the first table header ends the scan.
        assert!(!grants_log("name = \"a\"\n[settings.grants]\ngrants = [\"log\"]\n"));
        // What the export macros rely on: the answer is known when the plugin compiles.
        const { assert!(grants_log("grants = [\"log\"]")) };
    }

    /// The scan agrees with a TOML parser on every manifest of this repository.
    #[test]
    fn the_scan_agrees_with_toml_on_the_shipped_manifests() {
        let plugins = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut dirs = Vec::new();
        for parent in [plugins.clone(), plugins.join("testing"), plugins.join("../examples")] {
            for e in std::fs::read_dir(&parent).unwrap().filter_map(Result::ok) {
                dirs.push(e.path());
            }
        }
        let mut checked = 0;
        for dir in dirs {
            let Ok(text) = std::fs::read_to_string(dir.join("plugin.toml")) else { continue };
            let parsed: toml::Table = toml::from_str(&text).unwrap();
            let granted = parsed
                .get("grants")
                .and_then(toml::Value::as_array)
                .is_some_and(|a| a.iter().any(|g| g.as_str() == Some("log")));
            assert_eq!(grants_log(&text), granted, "{}", dir.display());
            checked += 1;
        }
        assert!(checked >= 10, "only {checked} manifests found");
    }
}
