#!/usr/bin/env bash
# The same palaver-bench loads against three targets, one after the other in one run, printed as one table:
#   - Palaver embedded (SQLite, in-process bus), spawned by the bench (`--spawn target/release/palaver`);
#   - Palaver on MariaDB + Redis (a scale-out node without Kafka), spawned by the bench on fresh databases and a
#     fresh Redis key prefix per load;
#   - Tinode v0.22.13 on MariaDB, built once from the Go module proxy (scripts/lib/tinode.sh), started by this
#     script on a fresh database per load and reached with `--addr 127.0.0.1:$TINODE_PORT --pid <its pid>`.
# Every load gets a freshly started server, so one load's state (RSS, caches, topics) does not carry into the next;
# the loads run load by load, the three targets back to back, so a neighbour's noise on this shared 2-core machine
# hits all three columns alike. Each run's full output goes to its own log, listed at the end.
#
#   host/palaver-bench/compare-peers.sh                               # from anywhere; about 5 minutes
#                                                                     # (+ ~1.5 min to build Tinode the first time)
#   IDLE_CONNS=500 FANOUT_MEMBERS=50 host/palaver-bench/compare-peers.sh
#
# Where the protocols differ, so where the figures do not compare like for like:
#   - Tinode ignores `client_mid` (Palaver's idempotency key); these loads never send it, so neither server pays
#     for it here.
#   - Tinode has no per-session message rate limit; Palaver's (50 msg/s by default, ctrl 429) is lifted with
#     PALAVER_LIMITS__RATE_PER_SECOND=0 on every Palaver run, as the bench's RATE_LIMIT_HINT advises.
#   - Tinode detaches a slow session: when a member's outbound queue is full it drops the message and detaches
#     the session from the topic ("connection stuck, detaching" in its log), so that member gets nothing more;
#     Palaver drops only the frames beyond the session's queue (limits.session_queue_bytes) and keeps it attached.
#     At the fanout's maximum rate either may therefore come with lost deliveries; the bench prints those as
#     PROBLEM lines, and a cell whose log has any is marked with `!`. (Tinode's own log shows "topic's broadcast
#     queue is full" when the bench closes 1,000 members at once after the fanout: its hub drops their leave
#     messages, after the measurement.)
#   - Sign-up hashes passwords with bcrypt on Tinode and argon2 on Palaver (lowered here to 1 MiB × 1 pass, as in
#     compare-business.sh); only the setup of a load signs up, never the measured part.
#   - Tinode has no /readyz: the script waits for its port instead. It is one standalone node with no Redis.
#
# Settings (environment), each load's size first:
#   IDLE_CONNS (10000)                    idle WebSockets held: server KiB per connection
#   FANOUT_MEMBERS (1000), FANOUT_MESSAGES (500)
#                                         one group, one publisher at the maximum rate: deliveries/s
#   PACED_RATE (50), PACED_MESSAGES (250) the same group at a steady rate: publish→receive p99 in ms
#   P2P_PAIRS (10), P2P_MESSAGES (1000)   ping-pong over P2P topics: round trips/s
#   PUB_TOPICS (16), PUB_PUBLISHERS (2), PUB_MESSAGES (1000)
#                                         groups × publishers each × messages each: accepted msg/s
#   HOT_MESSAGES (5000)                   one group, one publisher: accepted msg/s
#   LOADS ("idle fanout paced p2p publish hot"), TARGETS ("embedded mariadb tinode"): a subset, in that order.
#   TINODE_PORT (6070), TINODE_HOME, TINODE_VERSION (see scripts/lib/tinode.sh), LOG_DIR (default: a new temp
#   dir), RUN_MAX_SECS (600: the bench's limit per run), BUILD (1: cargo build the release binaries first; 0 uses
#   the ones in target/release as they are).
# MariaDB and Redis are started when they are not running (scripts/lib/services.sh).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
root=$(pwd)
# shellcheck source-path=SCRIPTDIR/../..
. scripts/lib/setup.sh
. scripts/lib/services.sh
. scripts/lib/tinode.sh
. scripts/lib/bench.sh

IDLE_CONNS=${IDLE_CONNS:-10000}
FANOUT_MEMBERS=${FANOUT_MEMBERS:-1000}
FANOUT_MESSAGES=${FANOUT_MESSAGES:-500}
PACED_RATE=${PACED_RATE:-50}
PACED_MESSAGES=${PACED_MESSAGES:-250}
P2P_PAIRS=${P2P_PAIRS:-10}
P2P_MESSAGES=${P2P_MESSAGES:-1000}
PUB_TOPICS=${PUB_TOPICS:-16}
PUB_PUBLISHERS=${PUB_PUBLISHERS:-2}
PUB_MESSAGES=${PUB_MESSAGES:-1000}
HOT_MESSAGES=${HOT_MESSAGES:-5000}
LOADS=${LOADS:-"idle fanout paced p2p publish hot"}
TARGETS=${TARGETS:-"embedded mariadb tinode"}
TINODE_PORT=${TINODE_PORT:-6070}
RUN_MAX_SECS=${RUN_MAX_SECS:-600}
LOG_DIR=${LOG_DIR:-$(mktemp -d -t palaver-peers-XXXXXX)}
mkdir -p "$LOG_DIR"

bench="$root/target/release/palaver-bench"
server="$root/target/release/palaver"
mysql_cli=(mariadb --protocol=tcp -h 127.0.0.1 -P 3306 -u palaver -N -B)
export MYSQL_PWD=palaver
work=$(mktemp -d -t palaver-peers-work-XXXXXX)
# Databases and Redis key prefixes made by this run, removed on exit whatever happens.
made_dbs=()
made_prefixes=()
TINODE_PID=""

# Deletes the Redis keys under the prefix $1 (a scale-out run's), in one server-side script.
delete_redis_prefix() {
  redis-cli -h 127.0.0.1 -p 6379 EVAL \
    "for _, k in ipairs(redis.call('KEYS', ARGV[1])) do redis.call('DEL', k) end" 0 "$1*" >/dev/null 2>&1 || true
}

cleanup() {
  tinode_stop
  local db prefix
  for db in "${made_dbs[@]}"; do
    "${mysql_cli[@]}" -e "DROP DATABASE IF EXISTS \`$db\`" 2>/dev/null || true
  done
  for prefix in "${made_prefixes[@]}"; do
    drop_tagged_dbs "$prefix" 2>/dev/null || true
    delete_redis_prefix "$prefix"
  done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ "${BUILD:-1}" = 1 ]; then
  ensure_rust
  cargo build --release -p palaver-bench -p palaver-server
fi
if [ ! -x "$bench" ] || [ ! -x "$server" ]; then
  log "missing $bench or $server: build them (BUILD=1)"
  exit 1
fi
command -v jq >/dev/null 2>&1 || apt_install jq
start_mariadb
start_redis
case " $TARGETS " in *" tinode "*)
  tinode_started=$(date +%s)
  ensure_tinode
  log "Tinode $(tinode_version) ready in $(($(date +%s) - tinode_started)) s: $(tinode_home)"
  ;;
esac
# Tinode holds one descriptor per connection and inherits this shell's limit (the bench raises its own).
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# The bench arguments of a load, and the key of its final JSON line that the table shows.
load_args() {
  case "$1" in
    idle) echo "idle --conns $IDLE_CONNS" ;;
    fanout) echo "fanout --members $FANOUT_MEMBERS --messages $FANOUT_MESSAGES" ;;
    paced) echo "fanout --members $FANOUT_MEMBERS --messages $PACED_MESSAGES --rate $PACED_RATE" ;;
    p2p) echo "p2p --pairs $P2P_PAIRS --messages $P2P_MESSAGES" ;;
    publish) echo "publish --topics $PUB_TOPICS --publishers-per-topic $PUB_PUBLISHERS --messages $PUB_MESSAGES" ;;
    hot) echo "publish --topics 1 --publishers-per-topic 1 --messages $HOT_MESSAGES" ;;
    *) log "unknown load $1"; return 1 ;;
  esac
}
load_key() {
  case "$1" in
    idle) echo kib_per_conn ;; fanout) echo deliveries_per_s ;; paced) echo p99_ms ;; p2p) echo round_trips_per_s ;;
    publish | hot) echo msg_per_s ;;
  esac
}
load_label() {
  case "$1" in
    idle) echo "idle ${IDLE_CONNS} WebSockets (server KiB/conn)" ;;
    fanout) echo "fanout to ${FANOUT_MEMBERS} members, max rate (deliveries/s)" ;;
    paced) echo "fanout to ${FANOUT_MEMBERS} members at ${PACED_RATE} msg/s (p99 ms)" ;;
    p2p) echo "P2P round trips, ${P2P_PAIRS} pairs (/s)" ;;
    publish) echo "publish ${PUB_TOPICS} topics × ${PUB_PUBLISHERS} publishers (msg/s)" ;;
    hot) echo "publish 1 hot topic × 1 publisher (msg/s)" ;;
  esac
}

# Palaver on MariaDB + Redis: a configuration naming a fresh control database, tenant database prefix and Redis
# key prefix. --dev because the loads use Tinode's demo API key, which a scale-out node refuses otherwise.
palaver_mariadb_args() {
  local tag="$1" cfg="$work/$1.toml"
  write_scaleout_config "$tag" "$cfg"
  printf '%s\n' --server-arg=--dev --server-arg=--config "--server-arg=$cfg"
}

# Drops the databases whose names start with $1_ (a Palaver scale-out run's control and tenant databases).
drop_tagged_dbs() {
  local db
  for db in $("${mysql_cli[@]}" -e "SHOW DATABASES LIKE '${1}\\_%'"); do
    "${mysql_cli[@]}" -e "DROP DATABASE IF EXISTS \`$db\`" || true
  done
}

# Runs one load against one target; the log is $LOG_DIR/<load>-<target>.log.
run_one() {
  local load="$1" target="$2" log="$LOG_DIR/$1-$2.log" tag args=() extra=() common_palaver=() started
  tag="pbp$(date +%s)${RANDOM}"
  read -r -a args <<<"$(load_args "$load")"
  common_palaver=(--spawn "$server" --server-env PALAVER_LIMITS__RATE_PER_SECOND=0
    --server-env PALAVER_AUTH__ARGON2_MEMORY_KIB=1024 --server-env PALAVER_AUTH__ARGON2_ITERATIONS=1)
  case "$target" in
    embedded) extra=("${common_palaver[@]}") ;;
    mariadb)
      made_prefixes+=("$tag")
      mapfile -t extra < <(palaver_mariadb_args "$tag")
      extra=("${common_palaver[@]}" "${extra[@]}")
      ;;
    tinode)
      local db="tinode_${tag}" conf="$work/tinode-$tag/tinode.conf"
      mkdir -p "$work/tinode-$tag"
      made_dbs+=("$db")
      if ! { tinode_write_conf "$conf" "$db" "$TINODE_PORT" "$work/tinode-$tag/uploads" &&
        tinode_init_db "$conf" && tinode_start "$conf" "$LOG_DIR/$load-tinode.server.log"; }; then
        echo "   FAILED to start Tinode (see $LOG_DIR/$load-tinode.server.log)"
        return 0
      fi
      extra=(--addr "127.0.0.1:$TINODE_PORT" --pid "$TINODE_PID")
      ;;
  esac
  echo "== $load on $target → $log"
  started=$(date +%s)
  "$bench" --max-secs "$RUN_MAX_SECS" "${args[@]}" "${extra[@]}" >"$log" 2>&1 || echo "   FAILED (see $log)"
  echo "   $(($(date +%s) - started)) s: $(problems "$log") PROBLEM line(s)"
  case "$target" in
    tinode)
      if ! kill -0 "$TINODE_PID" 2>/dev/null; then
        echo "   PROBLEM: Tinode exited during the run (see $LOG_DIR/$load-tinode.server.log)"
      fi
      tinode_stop
      "${mysql_cli[@]}" -e "DROP DATABASE IF EXISTS \`tinode_${tag}\`" || true
      ;;
    mariadb)
      drop_tagged_dbs "$tag"
      delete_redis_prefix "$tag"
      ;;
  esac
}

# PROBLEM lines of a log, less the one a scale-out node always causes: its start-up warning that uploaded files
# stay in its own directory (no S3 here), which the bench counts as "the server logged 1 WARN/ERROR lines".
problems() {
  local n
  n=$(grep -c '^PROBLEM' "$1" || true)
  if grep -q "^PROBLEM: the server logged 1 WARN/ERROR lines" "$1" &&
    grep -q "WARN palaver_server::wiring: files are kept in this node's own directory" "$1"; then
    n=$((n - 1))
  fi
  echo "$n"
}

# The figure of a log's final {"bench":...} line, `!` appended when the log has PROBLEM lines.
cell() {
  local log="$LOG_DIR/$1-$2.log" value
  [ -f "$log" ] || { echo "-"; return; }
  value=$(grep '^{"bench":' "$log" | tail -n 1 | jq -r --arg k "$(load_key "$1")" '.[$k] // empty' 2>/dev/null || true)
  [ -n "$value" ] || { echo "FAILED"; return; }
  [ "$(problems "$log")" -eq 0 ] || value="$value !"
  echo "$value"
}

run_started=$(date +%s)
for load in $LOADS; do
  load_args "$load" >/dev/null
  for target in $TARGETS; do
    run_one "$load" "$target"
  done
done

echo
elapsed=$(($(date +%s) - run_started))
echo "== palaver-bench: Palaver and Tinode $(tinode_version) side by side (${elapsed} s; same 2 shared cores)"
declare -A heading=([embedded]="palaver embedded" [mariadb]="palaver mariadb+redis" [tinode]="tinode mariadb")
printf '%-52s' "load"
for target in $TARGETS; do printf ' %22s' "${heading[$target]}"; done
echo
for load in $LOADS; do
  printf '%-52s' "$(load_label "$load")"
  for target in $TARGETS; do printf ' %22s' "$(cell "$load" "$target")"; done
  echo
done
echo "(! = the run's log has PROBLEM lines: lost deliveries, closed sessions, refused publishes…;"
echo "   a scale-out node's start-up warning about local files is not counted)"
echo
echo "== logs ($LOG_DIR)"
for load in $LOADS; do
  for target in $TARGETS; do
    echo "  $LOG_DIR/$load-$target.log"
    if [ "$target" = tinode ] && [ -f "$LOG_DIR/$load-tinode.server.log" ]; then
      echo "  $LOG_DIR/$load-tinode.server.log"
    fi
  done
done
