# Shared set-up for the scripts: make sure the toolchains the project needs are present, installing what is
# missing from Debian's packages. Sourced, not run.

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

apt_install() {
  if ! command -v apt-get >/dev/null 2>&1; then
    log "apt-get is not available; install $* by hand"
    return 1
  fi
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  if [ -z "${PALAVER_APT_UPDATED:-}" ]; then
    $sudo apt-get update -qq
    export PALAVER_APT_UPDATED=1
  fi
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@"
}

ensure_rust() {
  if [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
  fi
  if ! command -v cargo >/dev/null 2>&1; then
    log "cargo not found: install Rust 1.95 with rustup (https://rustup.rs), then rerun"
    exit 1
  fi
  if command -v rustup >/dev/null 2>&1; then
    rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt clippy
  fi
}

# Plugins are built for wasm32-unknown-unknown. rustup fetches the target; where it cannot, `cargo xtask plugins`
# falls back to building the standard library from Debian's rust-web-src (see ../shared/TOOLCHAIN.md).
ensure_wasm_target() {
  if command -v rustup >/dev/null 2>&1 && ! rustup target list --installed 2>/dev/null | grep -q '^wasm32-unknown-unknown$'; then
    rustup target add wasm32-unknown-unknown || log "rustup could not add wasm32-unknown-unknown; the xtask will fall back"
  fi
}

# The tidy test runs scripts/module-cycles.py.
ensure_python() {
  command -v python3 >/dev/null 2>&1 || { log "installing python3 from Debian's packages"; apt_install python3; }
}

ensure_node() {
  local major=0
  if command -v node >/dev/null 2>&1; then
    major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
  fi
  if [ "$major" -lt 18 ] || ! command -v npm >/dev/null 2>&1; then
    log "installing Node.js and npm from Debian's packages"
    apt_install nodejs npm
  fi
}
