#!/usr/bin/env bash
# Friend requests over the /v1/im/ API with the friends plugin, on the embedded store and on MariaDB + Redis, in
# one invocation, so the figures read as a ratio on this noisy machine. Needs MariaDB and Redis running
# (scripts/lib/services.sh), the plugins built (cargo xtask plugins) and release builds:
# cargo build --release -p palaver-server -p palaver-bench
#
#   host/palaver-bench/compare-business.sh [USERS] [REQUESTS] [CONCURRENCY]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
users="${1:-200}"
requests="${2:-4000}"
concurrency="${3:-8}"
tag="pbb$(date +%s)"
cfg="$(mktemp --suffix=.toml)"
trap 'rm -f "$cfg"' EXIT
# shellcheck source=scripts/lib/bench.sh
. "$root/scripts/lib/bench.sh"
write_scaleout_config "$tag" "$cfg"
bench="$root/target/release/palaver-bench"
server="$root/target/release/palaver"
common=(--spawn "$server" --server-env "PALAVER_PLUGINS__DIR=$root/target/plugins/deploy"
  --server-env PALAVER_AUTH__ARGON2_MEMORY_KIB=1024 --server-env PALAVER_AUTH__ARGON2_ITERATIONS=1
  --server-env PALAVER_LIMITS__RATE_PER_SECOND=0 --server-env PALAVER_LIMITS__API_RATE_PER_SECOND=0 --users "$users" --requests "$requests" --concurrency "$concurrency")
echo "=== embedded (SQLite, in-process bus) ==="
"$bench" business "${common[@]}"
echo "=== scale-out (MariaDB + Redis) ==="
"$bench" business "${common[@]}" --server-arg=--config --server-arg="$cfg"
