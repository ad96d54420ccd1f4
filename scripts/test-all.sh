#!/usr/bin/env bash
# Runs every check and test: formatting, clippy, the Rust unit/integration/contract tests (against real
# MariaDB and Redis, which it installs and starts when missing), and the end-to-end suite that drives a real
# server with the npm tinode-sdk over WebSocket and long polling, on the embedded store and on MariaDB + Redis.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/setup.sh
. scripts/lib/services.sh
ensure_rust
ensure_wasm_target
ensure_node
# The MariaDB and Redis adapters' tests fail (rather than skip) without their servers, so both are started here.
start_mariadb
start_redis

start=$(date +%s)
step() { log "$1 ($(( $(date +%s) - start )) s so far)"; }

step "cargo fmt --check"
cargo fmt --all -- --check
(cd plugins && cargo fmt --all -- --check)

step "building the plugins (cargo xtask plugins)"
cargo xtask plugins

step "cargo clippy --all-targets -D warnings"
cargo clippy --locked --workspace --all-targets -- -D warnings

step "cargo test (unit, integration, storage contract)"
cargo test --locked --workspace

# The end-to-end suite runs against the debug binary that `cargo test` just built for the server's integration
# tests, so CI compiles the workspace once (a separate `cargo build -p palaver-server` would unify features
# differently and rebuild much of it); the benchmarks are what use release builds.
[ -x target/debug/palaver ] || { log "cargo test did not build target/debug/palaver"; exit 1; }

step "end-to-end: tinode-sdk against target/debug/palaver on the embedded store, moderation plugin loaded"
# target/plugins/deploy holds only the plugins a node may run (the moderation plugin); the test components
# in target/plugins (traps, loops, memory bombs) are for the runtime's own tests.
moderation_dir="$PWD/target/plugins/deploy"
(
  cd tests/e2e
  npm ci --no-audit --no-fund --loglevel=error
  PALAVER_BIN="$PWD/../../target/debug/palaver" PALAVER_PLUGINS__DIR="$moderation_dir" E2E_MODERATION=1 npm test
)

step "end-to-end: tinode-sdk against target/debug/palaver on MariaDB + Redis"
scaleout_dir=$(mktemp -d)
control_db="palaver_e2e_$(date +%s)"
PALAVER_SERVER__LISTEN=127.0.0.1:16061 PALAVER_STORE__URL="mysql://palaver:palaver@127.0.0.1:3306/$control_db" \
  PALAVER_STORE_CONFIG__REDIS='{ addr = "127.0.0.1:6379", key_prefix = "im_e2e" }' \
  target/debug/palaver serve --config deploy/scaleout.toml --data-dir "$scaleout_dir" >"$scaleout_dir/server.log" 2>&1 &
scaleout_pid=$!
trap 'kill "$scaleout_pid" 2>/dev/null || true' EXIT
for _ in $(seq 1 60); do
  curl -fs http://127.0.0.1:16061/readyz >/dev/null 2>&1 && break
  kill -0 "$scaleout_pid" 2>/dev/null || { cat "$scaleout_dir/server.log"; exit 1; }
  sleep 1
done
(cd tests/e2e && PALAVER_URL=127.0.0.1:16061 npm test) || { tail -50 "$scaleout_dir/server.log"; exit 1; }
kill "$scaleout_pid" && wait "$scaleout_pid" 2>/dev/null || true
trap - EXIT

step "all tests passed"
