#!/usr/bin/env bash
# Validates the deployment artefacts without a container engine or a cluster (none runs on CI):
# - the Helm chart: `helm lint --strict`, then `helm template` decoded strictly into the Kubernetes API's Go
#   types (deploy/tools/kubecheck), with the defaults and with every optional part switched on;
# - the alert rules: Prometheus's own rule parser (deploy/tools/rulecheck, what `promtool check rules` runs);
# - deploy/compose.yaml: `docker-compose config -q` (Debian's docker-compose validates without an engine).
# Helm, kubecheck and rulecheck are built from the Go module proxy on first use and cached in $PALAVER_TOOLS (default
# ~/.cache/palaver/tools).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/setup.sh

tools="${PALAVER_TOOLS:-$HOME/.cache/palaver/tools}"
mkdir -p "$tools"
export PATH="$tools:$PATH"
command -v go >/dev/null 2>&1 || [ -x /usr/local/go/bin/go ] && export PATH="$PATH:/usr/local/go/bin"

helm_version=v3.22.0
# A helm built by `go install` reports only its minor version, so a stamp file records which one was built.
if [ ! -x "$tools/helm" ] || [ "$(cat "$tools/helm.version" 2>/dev/null)" != "$helm_version" ]; then
  log "building helm $helm_version from the Go module proxy"
  GOFLAGS=-mod=mod GOBIN="$tools" go install "helm.sh/helm/v3/cmd/helm@$helm_version"
  echo "$helm_version" >"$tools/helm.version"
fi
log "building deploy/tools/kubecheck and deploy/tools/rulecheck"
(cd deploy/tools/kubecheck && go build -o "$tools/kubecheck" .)
(cd deploy/tools/rulecheck && go build -o "$tools/rulecheck" .)

chart=deploy/helm/palaver
# The values a real install must give (the chart refuses to render without them).
required=(--set secrets.tokenKey=dGVzdA== --set secrets.apiKeySalt=c2FsdA== \
  --set secrets.storeUrl=mysql://palaver:palaver@mariadb:3306/palaver_control)
everything=(--set autoscaling.enabled=true --set ingress.enabled=true --set serviceMonitor.enabled=true \
  --set secrets.adminToken=admin --set-json 'plugins.volume={"configMap":{"name":"palaver-plugins"}}' \
  --set files.store=s3 --set files.s3.endpoint=http://seaweedfs:8333 --set files.s3.bucket=palaver \
  --set files.s3.region=us-east-1 --set files.s3.virtualHosted=true --set secrets.s3AccessKeyId=palaver \
  --set secrets.s3SecretAccessKey=palaver-secret --set files.scan.clamd=tcp://clamav:3310 \
  --set files.pendingReaders=readers \
  --set-json 'env=[{"name":"PALAVER_LIMITS__MAX_MESSAGE_SIZE","value":"65536"}]')

log "helm lint --strict $chart"
helm lint --strict "$chart" "${required[@]}"
helm lint --strict "$chart" "${required[@]}" "${everything[@]}"
log "helm template | kubecheck (defaults, then every option on)"
helm template palaver "$chart" "${required[@]}" | kubecheck
helm template palaver "$chart" "${required[@]}" "${everything[@]}" | kubecheck
if helm template palaver "$chart" >/dev/null 2>&1; then
  log "the chart rendered without its required secrets"
  exit 1
fi

log "rulecheck deploy/prometheus/alerts.yaml (Prometheus's own rule parser)"
rulecheck deploy/prometheus/alerts.yaml

if ! command -v docker-compose >/dev/null 2>&1; then
  log "installing docker-compose from Debian's packages (it validates compose files without an engine)"
  # Without recommends: the engine and its firewall tools that docker-compose recommends are not needed to validate.
  apt_install --no-install-recommends docker-compose
fi
log "docker-compose config -q (deploy/compose.yaml)"
PALAVER_TOKEN_KEY=dGVzdA== docker-compose -f deploy/compose.yaml config -q
log "deployment artefacts are valid"
