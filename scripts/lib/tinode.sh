# shellcheck shell=bash
# Tinode (github.com/tinode/chat), built from the Go module proxy, as a benchmark peer on the local MariaDB.
# Sourced, not run; needs setup.sh's `log` (services.sh sources it).
#
#   ensure_tinode            # builds `tinode` and `tinode-db` (-tags mysql) once into $(tinode_home)
#   tinode_write_conf CONF DB PORT MEDIA_DIR
#                            # a tinode.conf from the module's own, on database DB, listening on 127.0.0.1:PORT
#   tinode_init_db CONF      # tinode-db -config CONF: creates the (missing) database and its schema
#   tinode_start CONF LOG    # starts the server in the background; sets TINODE_PID; waits for the port
#   tinode_stop              # SIGTERM (SIGKILL after 10 s) the server tinode_start started
#
# Settings (environment): TINODE_VERSION (v0.22.13: newer tags are refused by the proxy here), TINODE_HOME
# (/opt/palaver-tinode; $HOME/.cache/palaver-tinode when /opt is not writable): the binaries are
# <home>/<version>/tinode and tinode-db, next to the build module whose go.sum pins the sources.

tinode_version() {
  printf '%s' "${TINODE_VERSION:-v0.22.13}"
}

tinode_home() {
  local home="${TINODE_HOME:-/opt/palaver-tinode}"
  if [ -z "${TINODE_HOME:-}" ] && ! { mkdir -p "$home" 2>/dev/null && [ -w "$home" ]; }; then
    home="$HOME/.cache/palaver-tinode"
  fi
  printf '%s/%s' "$home" "$(tinode_version)"
}

tinode_go() {
  if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
    export PATH="/usr/local/go/bin:$PATH"
  fi
  command -v go >/dev/null 2>&1 || { log "go not found: install the Go toolchain, then rerun"; return 1; }
}

# The module's own sample config, server/tinode.conf, from the module cache (downloaded by ensure_tinode).
tinode_src() {
  (cd "$(tinode_home)" && go list -m -f '{{.Dir}}' github.com/tinode/chat)
}

# Builds both binaries in an empty module that requires github.com/tinode/chat at the pinned version. The package
# paths must be named in `go get`, or the build stops on "missing go.sum entry" for their dependencies.
ensure_tinode() {
  local dir version started
  dir=$(tinode_home)
  version=$(tinode_version)
  tinode_go || return 1
  if [ -x "$dir/tinode" ] && [ -x "$dir/tinode-db" ]; then
    return 0
  fi
  started=$(date +%s)
  log "building Tinode $version into $dir (takes minutes the first time)"
  mkdir -p "$dir"
  (
    set -e
    cd "$dir"
    [ -f go.mod ] || go mod init palaver.local/tinode-peer >/dev/null 2>&1
    GOFLAGS=-mod=mod go get "github.com/tinode/chat@$version" "github.com/tinode/chat/server@$version" \
      "github.com/tinode/chat/tinode-db@$version"
    go build -mod=mod -tags mysql -o tinode.tmp github.com/tinode/chat/server
    go build -mod=mod -tags mysql -o tinode-db.tmp github.com/tinode/chat/tinode-db
    mv tinode.tmp tinode
    mv tinode-db.tmp tinode-db
  ) || { log "building Tinode failed (module in $dir)"; return 1; }
  log "built Tinode $version in $(($(date +%s) - started)) s"
}

# Writes $1, a tinode.conf made from the module's server/tinode.conf (JSON with // comments and trailing commas,
# which are stripped first) with these changes: listen on 127.0.0.1:$3, no gRPC, the mysql adapter on database $2
# of the local MariaDB (user palaver/palaver), groups of up to 2000 subscribers (128 refuses a 1,000-member
# fanout), sign-up without email (the email validator's `required` list emptied), uploads under $4, and TLS, push,
# WebRTC, cluster, plugins and the account GC off. The API key salt stays the sample's, which accepts the demo key.
tinode_write_conf() {
  local conf="$1" db="$2" port="$3" media="$4" src
  src="$(tinode_src)/server/tinode.conf" || return 1
  [ -f "$src" ] || { log "no $src: run ensure_tinode first"; return 1; }
  mkdir -p "$media"
  python3 - "$src" "$conf" "$db" "$port" "$media" <<'PY'
import json, re, sys

src, dst, db, port, media = sys.argv[1:]

def strip_comments(text):
    # Drops // and /* */ comments outside strings ("http://…" values must survive).
    out, i, n, in_str = [], 0, len(text), False
    while i < n:
        c = text[i]
        if in_str:
            out.append(c)
            if c == "\\":
                out.append(text[i + 1]); i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True; out.append(c)
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
            continue
        elif text.startswith("/*", i):
            i = text.index("*/", i) + 2
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)

text = strip_comments(open(src, encoding="utf-8").read())
conf = json.loads(re.sub(r",(\s*[}\]])", r"\1", text))
conf["listen"] = f"127.0.0.1:{port}"
conf["grpc_listen"] = ""
conf["max_subscriber_count"] = 2000
conf["tls"]["enabled"] = False
conf["media"]["use_handler"] = "fs"
conf["media"]["handlers"]["fs"]["upload_dir"] = media
store = conf["store_config"]
store["use_adapter"] = "mysql"
mysql = store["adapters"]["mysql"]
mysql.pop("dsn", None)
mysql.update({"User": "palaver", "Passwd": "palaver", "Net": "tcp", "Addr": "127.0.0.1:3306", "DBName": db,
              "Collation": "utf8mb4_unicode_ci", "ParseTime": True})
conf["acc_validation"]["email"]["required"] = []
conf["acc_validation"]["tel"].pop("required", None)
conf["acc_gc_config"]["enabled"] = False
for push in conf.get("push", []):
    push["config"]["enabled"] = False
conf["webrtc"]["enabled"] = False
conf["cluster_config"]["self"] = ""
for plugin in conf.get("plugins", []):
    plugin["enabled"] = False
json.dump(conf, open(dst, "w", encoding="utf-8"), indent=1)
PY
}

# Creates the schema: tinode-db creates the database named in the config when it is missing (it has no -init
# flag; -reset drops and recreates an existing one, -no_init only checks).
tinode_init_db() {
  local conf="$1" out
  if ! out=$("$(tinode_home)/tinode-db" -config "$conf" 2>&1); then
    log "tinode-db failed:"
    printf '%s\n' "$out" >&2
    return 1
  fi
}

# Starts the server with the config $1, logging to $2; it serves no static files (`-static_data -`: without a
# static directory it would exit). Sets TINODE_PID and waits until the listen port accepts.
tinode_start() {
  local conf="$1" logfile="$2" port waited=0
  port=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["listen"].rsplit(":", 1)[1])' "$conf")
  (cd "$(dirname "$conf")" && exec "$(tinode_home)/tinode" -config "$conf" -static_data - </dev/null >"$logfile" 2>&1) &
  TINODE_PID=$!
  until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
    if [ "$waited" -ge 60 ] || ! kill -0 "$TINODE_PID" 2>/dev/null; then
      log "Tinode did not listen on 127.0.0.1:$port within $((waited / 2)) s; see $logfile"
      tail -n 20 "$logfile" >&2 || true
      tinode_stop
      return 1
    fi
    sleep 0.5
    waited=$((waited + 1))
  done
}

tinode_stop() {
  [ -n "${TINODE_PID:-}" ] || return 0
  kill "$TINODE_PID" 2>/dev/null || true
  for _ in $(seq 1 20); do
    kill -0 "$TINODE_PID" 2>/dev/null || break
    sleep 0.5
  done
  kill -9 "$TINODE_PID" 2>/dev/null || true
  wait "$TINODE_PID" 2>/dev/null || true
  TINODE_PID=""
}
