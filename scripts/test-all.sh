#!/usr/bin/env bash
# Runs every check and test: formatting, clippy, the Rust unit/integration/contract tests, and the end-to-end
# suite that drives a real server with the npm tinode-sdk over WebSocket and long polling.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/setup.sh
. scripts/lib/services.sh
ensure_rust
ensure_node
# The MariaDB store's tests need a server and fail without one; PALAVER_SKIP_MYSQL=1 skips them instead.
if [ "${PALAVER_SKIP_MYSQL:-}" != "1" ]; then
  start_mariadb
fi

start=$(date +%s)
step() { log "$1 ($(( $(date +%s) - start )) s so far)"; }

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy --all-targets -D warnings"
cargo clippy --locked --workspace --all-targets -- -D warnings

step "cargo test (unit, integration, storage contract)"
cargo test --locked --workspace

# The end-to-end suite runs against the debug binary that `cargo test` just built, so CI compiles the
# workspace once; the benchmarks are what use release builds.
step "building the server for the end-to-end suite"
cargo build --locked -p palaver-server

step "end-to-end: tinode-sdk against target/debug/palaver"
(
  cd tests/e2e
  npm ci --no-audit --no-fund --loglevel=error
  PALAVER_BIN="$PWD/../../target/debug/palaver" npm test
)

step "all tests passed"
