# Starts the external services the scale-out mode and its tests need, installing them from Debian's packages
# when missing. Sourced, not run; each function is idempotent, so calling it again only re-checks.
#
#   . scripts/lib/services.sh
#   start_mariadb            # MariaDB 10.11 on 127.0.0.1:3306, user palaver/palaver with ALL PRIVILEGES
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
