# Starts the external services the scale-out mode and its tests need, installing them from Debian's packages
# when missing. Sourced, not run; each function is idempotent, so calling it again only re-checks.
#
#   . scripts/lib/services.sh
#   start_mariadb            # MariaDB 10.11 on 127.0.0.1:3306, user palaver/palaver with ALL PRIVILEGES
#   start_redis              # Redis 7.0 on 127.0.0.1:6379
#   start_kafka              # Apache Kafka (KRaft, one node) on 127.0.0.1:9092
#   start_coturn             # coturn (TURN REST credentials, use-auth-secret) on 127.0.0.1:13478
#   start_clamd              # ClamAV's clamd (one test signature, for EICAR) on 127.0.0.1:13310
#   start_seaweedfs          # SeaweedFS (S3, key palaver/palaver-secret, bucket palaver-test) on 127.0.0.1:8333
#   stop_seaweedfs           # stops the SeaweedFS start_seaweedfs started
#   ensure_seaweedfs         # builds the pinned SeaweedFS `weed` with Go, once (start_seaweedfs calls it)
#   start_mailpit            # Mailpit (SMTP, messages read back over its REST API) on 127.0.0.1:1025 and :8025
#   stop_mailpit             # stops the Mailpit start_mailpit started
#   ensure_mailpit           # installs the pinned Mailpit with `go install`, once (start_mailpit calls it)
#   ensure_chromium          # Debian's Chromium, for the web app test in tests/e2e/webapp
#
# Settings (environment): PALAVER_MARIADB_DATADIR (default /var/lib/mysql), PALAVER_MARIADB_PORT (3306),
# PALAVER_MARIADB_LOG (/var/log/palaver-mariadb.err).

if ! declare -F apt_install >/dev/null 2>&1; then
  # shellcheck source=setup.sh
  . "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
fi

# True if the server answers over its unix socket as root.
mariadb_alive() {
  mariadb-admin --protocol=socket -uroot ping >/dev/null 2>&1
}

# Creates (or re-grants) the palaver user for TCP access. ALL PRIVILEGES ON *.* is needed because the store
# creates one database per tenant at run time.
mariadb_ensure_user() {
  mariadb --protocol=socket -uroot <<'SQL'
CREATE USER IF NOT EXISTS 'palaver'@'127.0.0.1' IDENTIFIED BY 'palaver';
CREATE USER IF NOT EXISTS 'palaver'@'localhost' IDENTIFIED BY 'palaver';
ALTER USER 'palaver'@'127.0.0.1' IDENTIFIED BY 'palaver';
ALTER USER 'palaver'@'localhost' IDENTIFIED BY 'palaver';
GRANT ALL PRIVILEGES ON *.* TO 'palaver'@'127.0.0.1' WITH GRANT OPTION;
GRANT ALL PRIVILEGES ON *.* TO 'palaver'@'localhost' WITH GRANT OPTION;
FLUSH PRIVILEGES;
SQL
}

start_mariadb() {
  local datadir="${PALAVER_MARIADB_DATADIR:-/var/lib/mysql}"
  local port="${PALAVER_MARIADB_PORT:-3306}"
  local errlog="${PALAVER_MARIADB_LOG:-/var/log/palaver-mariadb.err}"
  if command -v mariadb-admin >/dev/null 2>&1 && mariadb_alive; then
    log "MariaDB is already running; ensuring the palaver user"
    mariadb_ensure_user
    return 0
  fi
  if [ ! -x /usr/sbin/mariadbd ]; then
    log "installing mariadb-server from Debian's packages"
    # The package's maintainer scripts try to start the service; without an init system that start may fail
    # harmlessly, and the daemon is started by hand below either way.
    apt_install mariadb-server mariadb-client || [ -x /usr/sbin/mariadbd ]
  fi
  # The package may have started a server of its own after all.
  if mariadb_alive; then
    mariadb_ensure_user
    return 0
  fi
  mkdir -p /run/mysqld "$datadir"
  chown mysql:mysql /run/mysqld "$datadir"
  if [ ! -d "$datadir/mysql" ]; then
    log "initialising a MariaDB data directory in $datadir"
    mariadb-install-db --user=mysql --datadir="$datadir" --auth-root-authentication-method=socket \
      --skip-test-db >/dev/null
  fi
  log "starting mariadbd on 127.0.0.1:$port (datadir $datadir, log $errlog)"
  touch "$errlog" && chown mysql:mysql "$errlog"
  # Many tenants mean many databases and pools: raise the connection and open-table limits above the defaults.
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd -- \
    --user=mysql --datadir="$datadir" --bind-address=127.0.0.1 --port="$port" \
    --socket=/run/mysqld/mysqld.sock --log-error="$errlog" \
    --max-connections=1000 --table-open-cache=4000 --innodb-buffer-pool-size=512M
  local waited=0
  until mariadb_alive; do
    if [ "$waited" -ge 60 ]; then
      log "MariaDB did not answer within 60 s; see $errlog"
      tail -n 20 "$errlog" >&2 || true
      return 1
    fi
    sleep 1
    waited=$((waited + 1))
  done
  mariadb_ensure_user
  log "MariaDB is up: mysql://palaver:palaver@127.0.0.1:$port"
}

# Redis 7.0 on 127.0.0.1:6379 (override the port with PALAVER_REDIS_PORT), without persistence: the scale-out
# mode keeps only short-lived and rebuildable state there, and tests start from whatever the server holds.
#
#   start_redis              # then tests read PALAVER_TEST_REDIS_URL, default redis://127.0.0.1:6379
redis_alive() {
  redis-cli -h 127.0.0.1 -p "${PALAVER_REDIS_PORT:-6379}" ping 2>/dev/null | grep -q PONG
}

start_redis() {
  local port="${PALAVER_REDIS_PORT:-6379}"
  if command -v redis-cli >/dev/null 2>&1 && redis_alive; then
    log "Redis is already answering on 127.0.0.1:$port"
    return 0
  fi
  if ! command -v redis-server >/dev/null 2>&1; then
    log "installing redis-server from Debian's packages"
    # As with MariaDB, the package may try to start a service without an init system; that is harmless, and
    # the server is started by hand below if it is not answering.
    apt_install redis-server || command -v redis-server >/dev/null 2>&1
  fi
  if redis_alive; then
    return 0
  fi
  log "starting redis-server on 127.0.0.1:$port (no persistence)"
  redis-server --daemonize yes --bind 127.0.0.1 --port "$port" --save "" --appendonly no \
    --logfile /var/log/palaver-redis.log
  local waited=0
  until redis_alive; do
    if [ "$waited" -ge 30 ]; then
      log "Redis did not answer within 30 s; see /var/log/palaver-redis.log"
      tail -n 20 /var/log/palaver-redis.log >&2 || true
      return 1
    fi
    sleep 1
    waited=$((waited + 1))
  done
  log "Redis is up: redis://127.0.0.1:$port"
}

# Apache Kafka (KRaft, one JVM as broker and controller) on 127.0.0.1:9092, from Maven Central's jars: Debian has
# no package. Needs Java 17 and Maven (installed from Debian's packages when missing). The jars are cached in
# $PALAVER_CACHE_DIR/kafka-<version> (default ~/.cache/palaver); every start formats a fresh data directory, since a
# broker restarted on the data of a killed one waits for its old registration to expire.
#
#   start_kafka              # then tests read PALAVER_TEST_KAFKA_BROKERS, default 127.0.0.1:9092
#   stop_kafka               # SIGTERM, and wait for the JVM to exit
#
# Settings (environment): PALAVER_KAFKA_PORT (9092; the controller listens on the next port), PALAVER_KAFKA_DIR
# (/tmp/palaver-kafka-<port>: config, data, log, pid), PALAVER_KAFKA_KEEP_DATA=1 restarts on the existing data
# (after a clean stop), PALAVER_KAFKA_VERSION (4.1.2).
kafka_home() {
  local version="${PALAVER_KAFKA_VERSION:-4.1.2}"
  printf '%s/kafka-%s' "${PALAVER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/palaver}" "$version"
}

kafka_dir() {
  printf '%s' "${PALAVER_KAFKA_DIR:-/tmp/palaver-kafka-${PALAVER_KAFKA_PORT:-9092}}"
}

kafka_alive() {
  (exec 3<>"/dev/tcp/127.0.0.1/${PALAVER_KAFKA_PORT:-9092}") 2>/dev/null
}

# Downloads Kafka's jars (and an slf4j binding, without which the broker logs nothing) once.
kafka_jars() {
  local home version
  home=$(kafka_home)
  version="${PALAVER_KAFKA_VERSION:-4.1.2}"
  if [ -f "$home/lib/.complete" ]; then
    return 0
  fi
  command -v java >/dev/null 2>&1 || apt_install openjdk-17-jre-headless
  command -v mvn >/dev/null 2>&1 || apt_install maven
  log "fetching Apache Kafka $version jars from Maven Central into $home"
  mkdir -p "$home"
  cat >"$home/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>palaver</groupId>
  <artifactId>kafka-runtime</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>$version</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId><version>2.25.5</version></dependency>
  </dependencies>
  <build><plugins><plugin>
    <groupId>org.apache.maven.plugins</groupId><artifactId>maven-dependency-plugin</artifactId><version>3.8.1</version>
  </plugin></plugins></build>
</project>
POM
  rm -rf "$home/lib"
  (cd "$home" && mvn -B -q -Dmaven.repo.local="$home/m2" dependency:copy-dependencies -DincludeScope=runtime \
    -DoutputDirectory=lib)
  touch "$home/lib/.complete"
}

start_kafka() {
  local port="${PALAVER_KAFKA_PORT:-9092}"
  local controller=$((port + 1))
  local dir home
  dir=$(kafka_dir)
  home=$(kafka_home)
  if kafka_alive; then
    log "Kafka is already answering on 127.0.0.1:$port"
    return 0
  fi
  kafka_jars
  mkdir -p "$dir"
  if [ "${PALAVER_KAFKA_KEEP_DATA:-0}" != 1 ] || [ ! -f "$dir/data/meta.properties" ]; then
    rm -rf "$dir/data"
  fi
  cat >"$dir/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$controller
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$controller
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
num.partitions=1
log.dirs=$dir/data
PROPS
  cat >"$dir/log4j2.properties" <<'LOG'
status = warn
shutdownHook = disable
appender.file.type = File
appender.file.name = file
appender.file.fileName = ${sys:kafka.log.file}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
LOG
  local cp="$home/lib/*"
  if [ ! -f "$dir/data/meta.properties" ]; then
    local cluster_id
    cluster_id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')
    # `--cluster-id=…` in one word: one id in 64 starts with '-', which as a separate word reads as an option.
    java -cp "$cp" -Dlog4j2.configurationFile="$dir/log4j2.properties" -Dkafka.log.file="$dir/format.log" \
      kafka.tools.StorageTool format --cluster-id="$cluster_id" -c "$dir/server.properties" >/dev/null
  fi
  : >"$dir/kafka.log"
  log "starting Kafka on 127.0.0.1:$port (controller $controller, dir $dir)"
  nohup java -Xms64m -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
    -Dlog4j2.configurationFile="$dir/log4j2.properties" -Dkafka.log.file="$dir/kafka.log" \
    -cp "$cp" kafka.Kafka "$dir/server.properties" >"$dir/stdout.log" 2>&1 &
  echo $! >"$dir/kafka.pid"
  local waited=0
  until grep -q "Kafka Server started" "$dir/kafka.log" 2>/dev/null && kafka_alive; do
    if [ "$waited" -ge 240 ] || ! kill -0 "$(cat "$dir/kafka.pid")" 2>/dev/null; then
      log "Kafka did not start within $((waited / 2)) s; see $dir/kafka.log"
      tail -n 20 "$dir/kafka.log" "$dir/stdout.log" >&2 || true
      return 1
    fi
    sleep 0.5
    waited=$((waited + 1))
  done
  log "Kafka is up: 127.0.0.1:$port"
}

stop_kafka() {
  local dir pid
  dir=$(kafka_dir)
  [ -f "$dir/kafka.pid" ] || return 0
  pid=$(cat "$dir/kafka.pid")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 60); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$dir/kafka.pid"
}

# coturn, a TURN server checking TURN REST credentials (`use-auth-secret`: username `<unix expiry>:<anything>`,
# password base64(HMAC-SHA1(secret, username))), on 127.0.0.1 over UDP and TCP, without TLS/DTLS. Loopback peers
# are allowed, or a relay between two local clients is refused with 403 Forbidden IP. The secret is a fixed test
# value, not a secret: the server listens on loopback only. It is started with an empty configuration file, so
# /etc/turnserver.conf (the Debian package's) does not apply, and keeps its log, pid and user database in its
# own directory.
#
#   start_coturn             # then tests read PALAVER_TEST_TURN_PORT (13478) and PALAVER_TEST_TURN_SECRET
#   stop_coturn              # SIGTERM the daemon this function started (SIGKILL after 10 s)
#
# Settings (environment): PALAVER_COTURN_PORT (13478), PALAVER_COTURN_SECRET (palaver-test-turn-secret),
# PALAVER_COTURN_DIR (/tmp/palaver-coturn-<port>: log, pid, database). A coturn already answering on the port is
# taken as it is: its secret must be PALAVER_COTURN_SECRET.
coturn_dir() {
  printf '%s' "${PALAVER_COTURN_DIR:-/tmp/palaver-coturn-${PALAVER_COTURN_PORT:-13478}}"
}

# True if a STUN binding request over UDP is answered (the same port serves TURN). The client retries for ever
# when nothing answers, hence the timeout.
coturn_alive() {
  timeout 2 turnutils_stunclient -p "${PALAVER_COTURN_PORT:-13478}" 127.0.0.1 >/dev/null 2>&1
}

start_coturn() {
  local port="${PALAVER_COTURN_PORT:-13478}"
  local secret="${PALAVER_COTURN_SECRET:-palaver-test-turn-secret}"
  local dir
  dir=$(coturn_dir)
  export PALAVER_TEST_TURN_PORT="$port" PALAVER_TEST_TURN_SECRET="$secret"
  if command -v turnutils_stunclient >/dev/null 2>&1 && coturn_alive; then
    log "coturn is already answering on 127.0.0.1:$port"
    return 0
  fi
  if ! command -v turnserver >/dev/null 2>&1 || ! command -v turnutils_uclient >/dev/null 2>&1; then
    log "installing coturn from Debian's packages"
    # The package's service start is denied without an init system; the daemon is started by hand below.
    apt_install coturn || command -v turnserver >/dev/null 2>&1
  fi
  mkdir -p "$dir"
  : >"$dir/turnserver.log"
  log "starting coturn on 127.0.0.1:$port (dir $dir)"
  turnserver -c /dev/null --daemon --pidfile="$dir/turnserver.pid" --log-file="$dir/turnserver.log" --simple-log \
    --db="$dir/turndb" --listening-ip=127.0.0.1 --listening-port="$port" --relay-ip=127.0.0.1 \
    --use-auth-secret --static-auth-secret="$secret" --realm=palaver.test \
    --no-tls --no-dtls --no-cli --allow-loopback-peers
  local waited=0
  until coturn_alive; do
    if [ "$waited" -ge 30 ]; then
      log "coturn did not answer within 15 s; see $dir/turnserver.log"
      tail -n 20 "$dir/turnserver.log" >&2 || true
      return 1
    fi
    sleep 0.5
    waited=$((waited + 1))
  done
  log "coturn is up: turn:127.0.0.1:$port (static-auth-secret in PALAVER_TEST_TURN_SECRET)"
}

# Stops the process whose id is in the file $1: SIGTERM, then SIGKILL after $2 seconds; removes the file.
stop_pidfile() {
  local file="$1" grace="$2" pid
  [ -f "$file" ] || return 0
  pid=$(cat "$file")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 $((grace * 2))); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$file"
}

stop_coturn() {
  stop_pidfile "$(coturn_dir)/turnserver.pid" 10
}

# ClamAV's clamd, the file scanner, on 127.0.0.1 over TCP. There is no network for the virus databases
# (freshclam), so its only database is one MD5 signature, written here, for the EICAR test file: clamd answers
# `stream: Palaver.Test.EICAR.UNOFFICIAL FOUND` for it and `stream: OK` for anything else. It is started with a
# configuration file of its own, so /etc/clamav/clamd.conf and the package's systemd units do not apply; the stream
# limits are raised above the default 25 MiB so the adapter's own bound (`max_bytes`) is what tests meet first.
#
#   start_clamd              # then tests read PALAVER_TEST_CLAMD (tcp://127.0.0.1:13310)
#   stop_clamd               # SIGTERM the daemon this function started (SIGKILL after 10 s)
#
# Settings (environment): PALAVER_CLAMD_PORT (13310), PALAVER_CLAMD_DIR (/tmp/palaver-clamd-<port>: database,
# configuration, log, pid). A clamd already answering PING on the port is taken as it is.
clamd_dir() {
  printf '%s' "${PALAVER_CLAMD_DIR:-/tmp/palaver-clamd-${PALAVER_CLAMD_PORT:-13310}}"
}

# True if `zPING` is answered with `PONG` (bash's /dev/tcp: there is no nc here). clamd closes the connection
# after a z-command's reply; the timeout covers a port that accepts but never answers.
clamd_alive() {
  local port="${PALAVER_CLAMD_PORT:-13310}" reply
  reply=$(timeout 3 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port && printf 'zPING\\0' >&3 && head -c 5 <&3" \
    2>/dev/null | tr -d '\0')
  [ "$reply" = PONG ]
}

start_clamd() {
  local port="${PALAVER_CLAMD_PORT:-13310}"
  local dir
  dir=$(clamd_dir)
  export PALAVER_TEST_CLAMD="tcp://127.0.0.1:$port"
  if clamd_alive; then
    log "clamd is already answering on 127.0.0.1:$port"
    return 0
  fi
  if ! command -v clamd >/dev/null 2>&1 && [ ! -x /usr/sbin/clamd ]; then
    log "installing clamav-daemon from Debian's packages"
    # The package's service start is denied without an init system (and freshclam has no network): the daemon
    # is started by hand below, on a database written here.
    apt_install clamav-daemon || [ -x /usr/sbin/clamd ]
  fi
  local bin
  bin=$(command -v clamd || echo /usr/sbin/clamd)
  mkdir -p "$dir/db"
  # The EICAR test file, printed at run time so this script is not itself a match; its MD5 is
  # 44d88612fea8a8f36de82e1278abb02f, its size 68 bytes.
  printf '%s%s' 'X5O!P%@AP[4\PZX54(P^)7CC)7}$' 'EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*' >"$dir/eicar.com"
  printf '%s:%s:Palaver.Test.EICAR\n' "$(md5sum <"$dir/eicar.com" | cut -d' ' -f1)" \
    "$(wc -c <"$dir/eicar.com" | tr -d ' ')" >"$dir/db/palaver-test.hdb"
  rm -f "$dir/eicar.com"
  cat >"$dir/clamd.conf" <<CONF
Foreground yes
DatabaseDirectory $dir/db
TCPSocket $port
TCPAddr 127.0.0.1
LogFile $dir/clamd.log
LogTime yes
PidFile $dir/clamd.pid
StreamMaxLength 128M
MaxFileSize 128M
MaxScanSize 128M
CONF
  : >"$dir/clamd.log"
  log "starting clamd on 127.0.0.1:$port (dir $dir)"
  nohup "$bin" --config-file="$dir/clamd.conf" </dev/null >"$dir/stdout.log" 2>&1 &
  echo $! >"$dir/clamd.pid"
  local waited=0
  until clamd_alive; do
    if [ "$waited" -ge 120 ] || ! kill -0 "$(cat "$dir/clamd.pid")" 2>/dev/null; then
      log "clamd did not answer within $((waited / 2)) s; see $dir/clamd.log"
      tail -n 20 "$dir/clamd.log" "$dir/stdout.log" >&2 || true
      return 1
    fi
    sleep 0.5
    waited=$((waited + 1))
  done
  log "clamd is up: $PALAVER_TEST_CLAMD"
}

stop_clamd() {
  stop_pidfile "$(clamd_dir)/clamd.pid" 10
}

# SeaweedFS, a real S3-compatible server that checks request signatures, for the S3 blob store's tests: `weed mini`
# runs the master, a volume server, the filer and the S3 gateway (and an admin server, its UI off) in one process
# on 127.0.0.1. Debian has no package and only the Go module proxy is reachable, so ensure_seaweedfs builds the
# pinned version's `weed` from the module source once (about 6 minutes on 2 cores; the Go module and build caches
# keep a rebuild faster). The S3 credentials are fixed test values, not secrets: the server listens on loopback
# only. Data persists across restarts.
#
#   start_seaweedfs          # then tests read PALAVER_TEST_S3_ENDPOINT (http://127.0.0.1:8333), bucket
#                            # palaver-test, access key palaver, secret key palaver-secret
#   stop_seaweedfs           # SIGTERM the server this function started (SIGKILL after 30 s)
#
# Settings (environment): PALAVER_S3_PORT (8333; the master, volume server, filer and admin server take the next
# four ports, and each gRPC port is its HTTP port + 10000: 18333-18337), PALAVER_SEAWEEDFS_HOME
# (/opt/palaver-seaweedfs: the binary is <home>/<version>/weed), PALAVER_SEAWEEDFS_DATA (/var/lib/palaver-seaweedfs:
# data, identities file, pid), PALAVER_SEAWEEDFS_LOG (/var/log/palaver-seaweedfs.log), PALAVER_SEAWEEDFS_VERSION
# (the pinned module version). If a version needs a newer Go than the installed one, set GOTOOLCHAIN=go1.27.3 and
# the go command fetches that toolchain from the module proxy. A server already answering on the S3 port is taken
# as it is: it must accept these credentials.
seaweedfs_version() {
  printf '%s' "${PALAVER_SEAWEEDFS_VERSION:-v0.0.0-20261109003541-7506e5f91cd6}"
}

seaweedfs_bin() {
  printf '%s/%s/weed' "${PALAVER_SEAWEEDFS_HOME:-/opt/palaver-seaweedfs}" "$(seaweedfs_version)"
}

seaweedfs_data() {
  printf '%s' "${PALAVER_SEAWEEDFS_DATA:-/var/lib/palaver-seaweedfs}"
}

seaweedfs_alive() {
  (exec 3<>"/dev/tcp/127.0.0.1/${PALAVER_S3_PORT:-8333}") 2>/dev/null
}

# Creates the test bucket with a signed request (an existing one answers 409, which is as good). Debian 12's curl
# (7.88) signs with --aws-sigv4 but sends no x-amz-content-sha256 and does not canonicalise query strings: a
# request with a body needs `-H "x-amz-content-sha256: <sha256 of the body>"`, and a query must already be in
# canonical form (sorted, `key=value`, percent-encoded) for the signature to match.
seaweedfs_create_bucket() {
  local code
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 --aws-sigv4 "aws:amz:us-east-1:s3" \
    --user palaver:palaver-secret -X PUT "http://127.0.0.1:${PALAVER_S3_PORT:-8333}/palaver-test" 2>/dev/null)
  [ "$code" = 200 ] || [ "$code" = 409 ]
}

# Puts the Go toolchain on PATH (from /usr/local/go when it is not there yet); SeaweedFS and Mailpit are built
# with it. It is not installed here: Debian's is too old for these modules.
ensure_go() {
  if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
    export PATH="/usr/local/go/bin:$PATH"
  fi
  if ! command -v go >/dev/null 2>&1; then
    log "go not found: install the Go toolchain (1.26 or later), then rerun"
    return 1
  fi
}

# Builds the pinned `weed` once. `go install …/weed@version` refuses a module whose go.mod has replace directives,
# so the module source is fetched with `go mod download`, copied to a scratch directory and built there as the
# main module, where its replace directives apply.
ensure_seaweedfs() {
  local bin version src build old target started
  bin=$(seaweedfs_bin)
  version=$(seaweedfs_version)
  if [ -x "$bin" ]; then
    return 0
  fi
  ensure_go || return 1
  started=$(date +%s)
  log "building SeaweedFS $version into $bin (takes minutes)"
  src=$(go mod download -json "github.com/seaweedfs/seaweedfs@$version" | sed -n 's/^\t"Dir": "\(.*\)",\{0,1\}$/\1/p')
  if [ -z "$src" ] || [ ! -d "$src" ]; then
    log "could not fetch github.com/seaweedfs/seaweedfs@$version from the module proxy"
    return 1
  fi
  build=$(mktemp -d "${TMPDIR:-/tmp}/palaver-seaweedfs-build.XXXXXX")
  cp -r "$src/." "$build/"
  chmod -R u+w "$build"
  # A replace pointing at a local directory the module does not ship (a path on its author's machine) cannot
  # apply here: drop it, so the replaced module comes from the proxy at its required version.
  while IFS=$'\t' read -r old target; do
    case "$target" in /*) ;; *) target="$build/$target" ;; esac
    if [ ! -e "$target" ]; then
      log "dropping the replace of $old: its local target is missing"
      (cd "$build" && go mod edit -dropreplace="$old")
    fi
  done < <(cd "$build" && go mod edit -print | awk '
    /^replace \($/ { block = 1; next }
    block && /^\)$/ { block = 0; next }
    /^replace / || block {
      line = $0; sub(/^replace[ \t]+/, "", line); sub(/^[ \t]+/, "", line)
      if (split(line, side, " => ") != 2 || side[2] !~ /^(\.|\/)/) next
      n = split(side[1], o, " ")
      printf "%s\t%s\n", (n > 1 ? o[1] "@" o[2] : o[1]), side[2]
    }')
  mkdir -p "$(dirname "$bin")"
  if ! (cd "$build" && go build -mod=mod -trimpath -ldflags "-s -w" -o "$bin.tmp" ./weed); then
    log "building SeaweedFS failed (scratch copy kept in $build)"
    rm -f "$bin.tmp"
    return 1
  fi
  mv "$bin.tmp" "$bin"
  rm -rf "$build"
  log "built $bin in $(($(date +%s) - started)) s"
}

start_seaweedfs() {
  local port="${PALAVER_S3_PORT:-8333}"
  local logfile="${PALAVER_SEAWEEDFS_LOG:-/var/log/palaver-seaweedfs.log}"
  local data bin
  data=$(seaweedfs_data)
  export PALAVER_TEST_S3_ENDPOINT="http://127.0.0.1:$port"
  command -v curl >/dev/null 2>&1 || apt_install curl
  if seaweedfs_alive; then
    if seaweedfs_create_bucket; then
      log "SeaweedFS (S3) is already answering on 127.0.0.1:$port"
      return 0
    fi
    log "127.0.0.1:$port answers, but not as an S3 server accepting palaver/palaver-secret"
    return 1
  fi
  ensure_seaweedfs || return 1
  bin=$(seaweedfs_bin)
  mkdir -p "$data" "$(dirname "$logfile")"
  cat >"$data/s3-identities.json" <<'JSON'
{
  "identities": [
    {
      "name": "palaver",
      "credentials": [{ "accessKey": "palaver", "secretKey": "palaver-secret" }],
      "actions": ["Admin", "Read", "Write", "List", "Tagging"]
    }
  ]
}
JSON
  : >"$logfile"
  log "starting SeaweedFS on 127.0.0.1:$port (master, volume, filer, admin on $((port + 1))-$((port + 4));" \
    "data $data, log $logfile)"
  # Every port is given explicitly: `weed mini` then fails on a busy one instead of moving to another.
  nohup "$bin" mini -dir="$data" -ip=127.0.0.1 -ip.bind=127.0.0.1 -s3.port="$port" \
    -master.port=$((port + 1)) -volume.port=$((port + 2)) -filer.port=$((port + 3)) -admin.port=$((port + 4)) \
    -admin.port.legacy=0 -admin.ui=false -webdav=false -s3.port.iceberg=0 -s3.port.lance=0 \
    -s3.config="$data/s3-identities.json" </dev/null >"$logfile" 2>&1 &
  echo $! >"$data/weed.pid"
  local waited=0
  until seaweedfs_create_bucket; do
    if [ "$waited" -ge 120 ] || ! kill -0 "$(cat "$data/weed.pid")" 2>/dev/null; then
      log "SeaweedFS did not serve S3 within $((waited / 2)) s; see $logfile"
      tail -n 20 "$logfile" >&2 || true
      return 1
    fi
    sleep 0.5
    waited=$((waited + 1))
  done
  log "SeaweedFS is up: S3 at http://127.0.0.1:$port (access key palaver, secret palaver-secret, bucket palaver-test)"
}

stop_seaweedfs() {
  stop_pidfile "$(seaweedfs_data)/weed.pid" 30
}

# Mailpit, a real SMTP server that keeps what it receives and shows it over a REST API, for the code senders'
# tests (palaver-verify): SMTP and the API on 127.0.0.1, messages in a temporary database that goes with the
# process. Debian has no package, so ensure_mailpit installs the pinned version with `go install` from the Go
# module proxy once (a minute or two; the Go module and build caches keep a rebuild faster).
#
#   start_mailpit            # then tests read PALAVER_TEST_SMTP_ADDR (127.0.0.1:1025) and
#                            # PALAVER_TEST_MAILPIT_API (http://127.0.0.1:8025)
#   stop_mailpit             # SIGTERM the server this function started (SIGKILL after 10 s)
#
# Settings (environment): PALAVER_SMTP_PORT (1025), PALAVER_MAILPIT_PORT (8025: the API and web UI),
# PALAVER_MAILPIT_HOME (/opt/palaver-mailpit: the binary is <home>/<version>/mailpit), PALAVER_MAILPIT_DIR
# (/tmp/palaver-mailpit-<SMTP port>: log, pid), PALAVER_MAILPIT_VERSION (the pinned module version). A server
# already answering the API on the port is taken as it is: its SMTP port must be PALAVER_SMTP_PORT, and it must be
# started with the options below (any SMTP login accepted, recipients with a `#` refused).
mailpit_version() {
  printf '%s' "${PALAVER_MAILPIT_VERSION:-v1.33.1}"
}

mailpit_bin() {
  printf '%s/%s/mailpit' "${PALAVER_MAILPIT_HOME:-/opt/palaver-mailpit}" "$(mailpit_version)"
}

mailpit_dir() {
  printf '%s' "${PALAVER_MAILPIT_DIR:-/tmp/palaver-mailpit-${PALAVER_SMTP_PORT:-1025}}"
}

# True if the HTTP server answers its readiness check.
mailpit_alive() {
  curl -fs -o /dev/null --max-time 2 "http://127.0.0.1:${PALAVER_MAILPIT_PORT:-8025}/readyz" 2>/dev/null
}

# Installs the pinned `mailpit` once, into its own GOBIN.
ensure_mailpit() {
  local bin version started
  bin=$(mailpit_bin)
  version=$(mailpit_version)
  if [ -x "$bin" ]; then
    return 0
  fi
  ensure_go || return 1
  started=$(date +%s)
  log "installing Mailpit $version into $bin (go install)"
  mkdir -p "$(dirname "$bin")"
  if ! GOFLAGS=-mod=mod GOBIN="$(dirname "$bin")" go install -trimpath -ldflags "-s -w" \
    "github.com/axllent/mailpit@$version"; then
    log "installing github.com/axllent/mailpit@$version failed"
    return 1
  fi
  log "installed $bin in $(($(date +%s) - started)) s"
}

start_mailpit() {
  local smtp="${PALAVER_SMTP_PORT:-1025}"
  local port="${PALAVER_MAILPIT_PORT:-8025}"
  local dir bin
  dir=$(mailpit_dir)
  export PALAVER_TEST_SMTP_ADDR="127.0.0.1:$smtp" PALAVER_TEST_MAILPIT_API="http://127.0.0.1:$port"
  command -v curl >/dev/null 2>&1 || apt_install curl
  if mailpit_alive; then
    log "Mailpit is already answering on 127.0.0.1:$port"
    return 0
  fi
  ensure_mailpit || return 1
  bin=$(mailpit_bin)
  mkdir -p "$dir"
  : >"$dir/mailpit.log"
  log "starting Mailpit: SMTP on 127.0.0.1:$smtp, API on 127.0.0.1:$port (dir $dir)"
  # Any user name and password is accepted over plain SMTP, and none is needed; a recipient with a `#` in it is
  # refused (550), so the senders' tests meet a real recipient refusal.
  nohup "$bin" --smtp "127.0.0.1:$smtp" --listen "127.0.0.1:$port" --disable-version-check --smtp-disable-rdns \
    --smtp-auth-accept-any --smtp-auth-allow-insecure --smtp-allowed-recipients '^[^#]*$' \
    </dev/null >"$dir/mailpit.log" 2>&1 &
  echo $! >"$dir/mailpit.pid"
  local waited=0
  until mailpit_alive; do
    if [ "$waited" -ge 60 ] || ! kill -0 "$(cat "$dir/mailpit.pid")" 2>/dev/null; then
      log "Mailpit did not answer within $((waited / 2)) s; see $dir/mailpit.log"
      tail -n 20 "$dir/mailpit.log" >&2 || true
      return 1
    fi
    sleep 0.5
    waited=$((waited + 1))
  done
  log "Mailpit is up: SMTP at 127.0.0.1:$smtp, API at http://127.0.0.1:$port"
}

stop_mailpit() {
  stop_pidfile "$(mailpit_dir)/mailpit.pid" 10
}

# Debian's Chromium, which tests/e2e/webapp drives headless with puppeteer-core (that package downloads no browser
# of its own). Tests read E2E_CHROMIUM, default /usr/bin/chromium.
ensure_chromium() {
  if [ -x "${E2E_CHROMIUM:-/usr/bin/chromium}" ]; then
    return 0
  fi
  log "installing chromium from Debian's packages"
  apt_install chromium
}
