#!/usr/bin/env bash
# Group fanout on one node and on two nodes sharing MariaDB and Redis, in one invocation, so the figures can be
# read as ratios on this noisy machine. Needs MariaDB and Redis running (scripts/lib/services.sh) and release
# builds: cargo build --release -p palaver-server -p palaver-bench
#
#   host/palaver-bench/compare-nodes.sh [MEMBERS] [MESSAGES]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
members="${1:-1000}"
messages="${2:-1000}"
tag="pbn$(date +%s)"
cfg="$(mktemp --suffix=.toml)"
trap 'rm -f "$cfg"' EXIT
# shellcheck source=scripts/lib/bench.sh
. "$root/scripts/lib/bench.sh"
write_scaleout_config "$tag" "$cfg"
cat >>"$cfg" <<TOML
argon2_memory_kib = 1024
argon2_iterations = 1
[limits]
rate_per_second = 0
TOML
bench="$root/target/release/palaver-bench"
server="$root/target/release/palaver"
# --dev: the bench sends the demo API key, a development setting a scale-out node otherwise refuses to start with.
for nodes in 1 2; do
  echo "=== ${nodes} node(s) ==="
  "$bench" fanout --spawn "$server" --server-arg=--dev --server-arg=--config --server-arg="$cfg" --nodes "$nodes" \
    --redis-addr 127.0.0.1:6379 --members "$members" --messages "$messages" --find-max
done
