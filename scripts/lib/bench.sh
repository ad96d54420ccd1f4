# shellcheck shell=bash
# Shared by the benchmark scripts in host/palaver-bench: the configuration of a spawned scale-out node.

# Writes to $2 a Palaver configuration on MariaDB + Redis whose names all start with $1 (the control database
# $1_ctl, tenant databases $1_t_…, Redis keys $1…), with its own token key. Callers append their own tables.
write_scaleout_config() {
  local tag="$1" cfg="$2"
  cat >"$cfg" <<TOML
[store]
kind = "mysql"
url = "mysql://palaver:palaver@127.0.0.1:3306/${tag}_ctl"
tenant_database_prefix = "${tag}_t_"
[store_config.redis]
addr = "127.0.0.1:6379"
key_prefix = "${tag}"
[auth]
token_key = "$(head -c 32 /dev/urandom | base64)"
TOML
}
