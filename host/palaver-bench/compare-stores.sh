#!/usr/bin/env bash
# Runs the write-path matrix of `palaver-bench publish --compare`: every shape against a spawned embedded server
# and a spawned scale-out server (MariaDB + Redis + Kafka, fresh databases, key prefix and topics per run), with
# and without client_mid. Each run's full output goes to a log; the final JSON line of each is printed at the end.
#
#   host/palaver-bench/compare-stores.sh                 # from the repository root
#   SHAPES="1:1:25000 64:2:250" MIDS=on host/palaver-bench/compare-stores.sh
#
# Settings (environment): SHAPES (topics:publishers-per-topic:messages, space-separated), MIDS (off, on or
# "off on"), QUIET_CORES (wait until other processes use fewer cores before each mode; 0 turns it off),
# LOG_DIR (default: a new temp dir). MariaDB, Redis and Kafka must be running (scripts/lib/services.sh starts
# them).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
SHAPES=${SHAPES:-"1:1:25000 16:4:500 64:2:400"}
MIDS=${MIDS:-"off on"}
QUIET_CORES=${QUIET_CORES:-0.3}
LOG_DIR=${LOG_DIR:-$(mktemp -d -t palaver-compare-XXXXXX)}

cargo build --release -p palaver-bench -p palaver-server

for mid in $MIDS; do
  for shape in $SHAPES; do
    IFS=: read -r topics per_topic messages <<<"$shape"
    flag=()
    [ "$mid" = on ] && flag=(--client-mid)
    log="$LOG_DIR/t${topics}p${per_topic}-mid-${mid}.log"
    echo "== topics $topics × publishers $per_topic × messages $messages, client_mid $mid → $log"
    target/release/palaver-bench --max-secs 2400 publish --spawn target/release/palaver --compare \
      --topics "$topics" --publishers-per-topic "$per_topic" --messages "$messages" "${flag[@]}" \
      --quiet-cores "$QUIET_CORES" --quiet-wait-secs 600 >"$log" 2>&1 || echo "   FAILED (see $log)"
    # The side-by-side table and the verdict, without the setup progress.
    sed -n '/^publish compare:/,/^verdict:/p' "$log"
  done
done

echo "== final JSON lines ($LOG_DIR)"
for log in "$LOG_DIR"/*.log; do
  grep '^{"bench":"publish"' "$log" | tail -n 1
done
