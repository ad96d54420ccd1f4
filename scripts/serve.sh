#!/usr/bin/env bash
# Runs Palaver on the embedded default (SQLite in ./data, one node, no services). Extra arguments go to
# `palaver serve`, e.g. `./scripts/serve.sh --listen 0.0.0.0:6060 --data-dir /var/lib/palaver`.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/setup.sh
ensure_rust
ensure_wasm_target
log "building the plugins (cargo xtask plugins)"
cargo xtask plugins
log "building palaver (release)"
cargo build --release --locked -p palaver-server
# The deployable plugins (moderation, friends, group governance) run unless another directory is given.
export PALAVER_PLUGINS__DIR="${PALAVER_PLUGINS__DIR:-$PWD/target/plugins/deploy}"
log "serving on the embedded default with the plugins in $PALAVER_PLUGINS__DIR; Ctrl-C drains and stops"
exec target/release/palaver serve "$@"
