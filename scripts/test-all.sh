#!/usr/bin/env bash
# Runs every check and test: formatting, clippy, the Rust unit/integration/contract tests (against real
# MariaDB, Redis and Apache Kafka, which it installs and starts when missing), the end-to-end suite that drives
# a real server with the npm tinode-sdk over WebSocket and long polling, on the embedded store and on MariaDB +
# Redis + Kafka (TURN credentials checked against a real coturn), the stock Tinode web app in headless Chromium,
# and the deployment artefacts in deploy/ (chart, compose file) without a container engine.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/setup.sh
. scripts/lib/services.sh
ensure_rust
ensure_wasm_target
ensure_node
ensure_python
# The MariaDB, Redis, Kafka and S3 adapters' tests fail (rather than skip) without their servers, so all four are
# started here (the scale-out end-to-end run below uses them too).
start_mariadb
start_redis
start_kafka
# SeaweedFS for the S3 file store's tests (palaver-blobs, palaver-server's files test; built from the Go module
# proxy on first use, about 7 minutes, then kept under /opt; exports PALAVER_TEST_S3_ENDPOINT).
start_seaweedfs
# coturn for the TURN credentials of tests/e2e/test/turn.test.js (exports PALAVER_TEST_TURN_PORT and _SECRET),
# Chromium for the web app test.
start_coturn
ensure_chromium
# clamd (one EICAR test signature) for the ClamAV scanner's tests (palaver-clamav; exports PALAVER_TEST_CLAMD).
start_clamd
# Mailpit (SMTP, read back over its REST API) for the code senders' tests (palaver-verify; installed with `go install`
# from the Go module proxy on first use, then kept under /opt; exports PALAVER_TEST_SMTP_ADDR and
# PALAVER_TEST_MAILPIT_API).
start_mailpit

start=$(date +%s)
step() { log "$1 ($(( $(date +%s) - start )) s so far)"; }

step "cargo fmt --check"
cargo fmt --all -- --check
(cd plugins && cargo fmt --all -- --check)

step "deployment artefacts: helm lint + strict schema check, docker-compose config (scripts/check-deploy.sh)"
./scripts/check-deploy.sh

step "building the plugins (cargo xtask plugins)"
cargo xtask plugins

# The plugins' native tests (the SDK, the plugins' rules and fixtures; about a minute). Their dependencies are what
# the runtime's test of a scaffolded plugin (`cargo xtask new-plugin`) reuses for its own native tests.
step "the plugins' native tests (cd plugins && cargo test)"
(cd plugins && cargo test --locked)

step "cargo clippy --all-targets -D warnings"
cargo clippy --locked --workspace --all-targets -- -D warnings

step "cargo test (unit, integration, storage contract)"
cargo test --locked --workspace

# The end-to-end suite runs against the debug binary that `cargo test` just built for the server's integration
# tests, so CI compiles the workspace once (a separate `cargo build -p palaver-server` would unify features
# differently and rebuild much of it); the benchmarks are what use release builds.
[ -x target/debug/palaver ] || { log "cargo test did not build target/debug/palaver"; exit 1; }

step "end-to-end: tinode-sdk against target/debug/palaver on the embedded store, deployable plugins loaded"
# target/plugins/deploy holds only the plugins a node may run (moderation, friends, governance, quiet-hours,
# file-policy, access-rules; those off by default stay off); the test components in target/plugins (traps, loops, memory
# bombs) are for the runtime's own tests.
moderation_dir="$PWD/target/plugins/deploy"
(
  cd tests/e2e
  npm ci --no-audit --no-fund --loglevel=error
  PALAVER_BIN="$PWD/../../target/debug/palaver" PALAVER_PLUGINS__DIR="$moderation_dir" E2E_MODERATION=1 npm test
)

step "end-to-end: the stock Tinode web app in headless Chromium against target/debug/palaver (tests/e2e/webapp)"
(
  cd tests/e2e/webapp
  PUPPETEER_SKIP_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error
  PALAVER_BIN="$PWD/../../../target/debug/palaver" npm test
)

step "end-to-end: tinode-sdk against two target/debug/palaver nodes sharing MariaDB + Redis + Kafka, business plugins loaded, admin commands over Kafka"
scaleout_dir=$(mktemp -d)
control_db="palaver_e2e_$(date +%s)"
# Every node of a cluster must share the token key, or a token minted on one node fails on the other.
token_key=$(head -c 32 /dev/urandom | base64 -w0)
# The admin API (plugin settings, the HTTP front of the admin commands) and this run's own Kafka topics and
# consumer group, so that a rerun on the same broker starts clean. Exported: the nodes and `palaver admin
# command`, which admin.test.js runs, read the same settings.
export PALAVER_ADMIN__TOKEN
PALAVER_ADMIN__TOKEN=$(head -c 24 /dev/urandom | base64 -w0 | tr '+/' '-_')
kafka_run="e2e_$(date +%s)"
export PALAVER_KAFKA__GROUP_ID="$kafka_run"
export PALAVER_KAFKA__TOPICS="{ admin_command = \"$kafka_run.im.admin.command\", admin_result = \"$kafka_run.im.admin.command.result\", \
admin_event = \"$kafka_run.im.admin.event\", audit = \"$kafka_run.im.audit\", push = \"$kafka_run.im.push.task\", \
file_security = \"$kafka_run.im.file.security\", plugin_event = \"$kafka_run.im.plugin.event\", dead_letter = \"$kafka_run.im.dlq\" }"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
for node in 1 2; do
  mkdir -p "$scaleout_dir/n$node"
  PALAVER_SERVER__LISTEN="127.0.0.1:1606$node" PALAVER_STORE__URL="mysql://palaver:palaver@127.0.0.1:3306/$control_db" \
    PALAVER_STORE_CONFIG__REDIS='{ addr = "127.0.0.1:6379", key_prefix = "im_e2e" }' PALAVER_AUTH__TOKEN_KEY="$token_key" \
    PALAVER_SERVER__HEARTBEAT_MS=1000 PALAVER_PLUGINS__DIR="$PWD/target/plugins/deploy" PALAVER_CALLS__RING_TIMEOUT_MS=3000 \
    PALAVER_FILES__STORE=s3 PALAVER_FILES__S3__ENDPOINT="$PALAVER_TEST_S3_ENDPOINT" PALAVER_FILES__S3__BUCKET=palaver-test \
    PALAVER_FILES__S3__ACCESS_KEY_ID=palaver PALAVER_FILES__S3__SECRET_ACCESS_KEY=palaver-secret \
    PALAVER_FILES__SCAN__CLAMD="$PALAVER_TEST_CLAMD" \
    target/debug/palaver serve --dev --config deploy/scaleout.toml --node-id "e2e-$node" --data-dir "$scaleout_dir/n$node" \
    >"$scaleout_dir/n$node.log" 2>&1 &
  pids+=($!)
  # The first node creates the control database and migrates it; the second starts once that is done.
  for _ in $(seq 1 60); do
    curl -fs "http://127.0.0.1:1606$node/readyz" >/dev/null 2>&1 && break
    kill -0 "${pids[-1]}" 2>/dev/null || { cat "$scaleout_dir/n$node.log"; exit 1; }
    sleep 1
  done
done
show_logs() { tail -40 "$scaleout_dir/n1.log"; tail -40 "$scaleout_dir/n2.log"; }
(cd tests/e2e && PALAVER_URL=127.0.0.1:16061 npm test) || { show_logs; exit 1; }
(cd tests/e2e && PALAVER_URLS=127.0.0.1:16061,127.0.0.1:16062 node --test --test-concurrency=1 \
  --test-timeout=240000 --test-force-exit test/multinode.test.js) || { show_logs; exit 1; }
# Calls with the caller on one node and the callee on the other (the nodes ring for 3 s, short enough for the
# timeout cases to run, long enough for an answer on a loaded machine).
(cd tests/e2e && PALAVER_URLS=127.0.0.1:16061,127.0.0.1:16062 node --test --test-concurrency=1 \
  --test-timeout=240000 --test-force-exit test/calls.test.js) || { show_logs; exit 1; }
(cd tests/e2e && PALAVER_URLS=127.0.0.1:16061,127.0.0.1:16062 E2E_BUSINESS=1 node --test --test-concurrency=1 \
  --test-timeout=240000 --test-force-exit test/business.test.js) || { show_logs; exit 1; }
# Every admin command type produced to Kafka by `palaver admin command`, its effect seen on both nodes.
(cd tests/e2e && PALAVER_URLS=127.0.0.1:16061,127.0.0.1:16062 E2E_ADMIN=1 E2E_ADMIN_CONFIG="$PWD/../../deploy/scaleout.toml" \
  PALAVER_BIN="$PWD/../../target/debug/palaver" node --test --test-concurrency=1 --test-timeout=240000 \
  --test-force-exit test/admin.test.js) || { show_logs; exit 1; }
kill "${pids[@]}" && wait "${pids[@]}" 2>/dev/null || true
trap - EXIT

step "all tests passed"
