#!/usr/bin/env bash
# Builds the local control plane from the Go module proxy, once per version:
#   temporal (Temporal CLI dev server with the UI), etcd, kube-apiserver, kube-controller-manager
#   (garbage collection) and kubectl, Traefik (the local Gateway API gateway); for the postgres profile temporal-server, temporal-sql-tool
#   (with the server's PostgreSQL schema files) and temporal-ui-server, plus Debian's PostgreSQL;
#   Debian's Prometheus, unpacked.
# Binaries land in $KONFIDENCE_BIN_CACHE (default ~/.cache/konfidence-activation/bin), outside any
# clone, so that every checkout on a warm machine (CI clones afresh) skips the build.
# Idempotent and safe to run concurrently: a lock serializes builds, each result is moved in whole.
# The components build in three lines side by side (a Go build waits on the module proxy as much
# as it compiles), each into a log of its own; the end prints how long each took, so the slowest
# is known.
set -euo pipefail
# `install-binaries.sh dev`: only what the dev profile runs (npm start, npm test): no Temporal
# server, UI server or PostgreSQL, which the postgres and cluster profiles add (npm run
# test:postgres, .ci/run).
profile=${1:-all}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=versions.env
source "$root/scripts/versions.env"
cache=${KONFIDENCE_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/konfidence-activation/bin}
mkdir -p "$cache"

command -v go >/dev/null || { echo "install-binaries: Go is required (https://go.dev), not found on PATH" >&2; exit 1; }

# One builder at a time: a second caller waits, then finds the binaries in place.
exec 9>"$cache/.lock"
flock 9

export CGO_ENABLED=0
export GOFLAGS="${GOFLAGS:-} -trimpath -buildvcs=false"

# build NAME VERSION BINARY... -- COMMAND: runs COMMAND with $out set to a scratch folder that must
# receive every BINARY, then moves the folder to $cache/NAME-VERSION in one step.
build() {
  local name=$1 version=$2; shift 2
  local bins=()
  while [ "$1" != "--" ]; do bins+=("$1"); shift; done
  shift
  local dest="$cache/$name-$version" missing=0
  for b in "${bins[@]}"; do [ -x "$dest/$b" ] || missing=1; done
  if [ $missing = 0 ]; then echo "install-binaries: $name $version cached in $dest"; return; fi
  echo "install-binaries: building $name $version (${bins[*]}); the first build takes minutes"
  local started=$SECONDS
  out=$(mktemp -d "$cache/.build-$name-XXXXXX")
  "$@"
  for b in "${bins[@]}"; do [ -x "$out/$b" ] || { echo "install-binaries: $b was not built" >&2; exit 1; }; done
  rm -rf "$dest"
  mv "$out" "$dest"
  echo "install-binaries: built $name $version in $((SECONDS - started))s"
}

require_pin() { # the wrapper module must pin the version that versions.env names
  grep -q "$2" "$root/scripts/build/$1/go.mod" ||
    { echo "install-binaries: scripts/build/$1/go.mod does not pin $2 (see versions.env)" >&2; exit 1; }
}

# The CLI and the server build in one wrapper module, whose versions are the CLI's own (its
# go.mod, with the server it embeds): the server's build then finds most of its packages compiled
# by the CLI's, instead of compiling them again against the server's own go.mod.
temporal_build() { (cd "$root/scripts/build/temporal" && go build "$@"); }

build_temporal() {
  require_pin temporal "github.com/temporalio/cli $TEMPORAL_CLI_VERSION"
  temporal_build -o "$out/temporal" github.com/temporalio/cli/cmd/temporal
}

build_etcd() {
  require_pin etcd "go.etcd.io/etcd/server/v3 $ETCD_VERSION"
  (cd "$root/scripts/build/etcd" && go build -o "$out/etcd" go.etcd.io/etcd/server/v3)
}

build_kubernetes() {
  require_pin kubernetes "k8s.io/kubernetes $KUBERNETES_VERSION"
  local minor=${KUBERNETES_VERSION#v1.}; minor=${minor%%.*}
  local ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$KUBERNETES_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  done
  # One build of the three: the packages they share compile once, and side by side.
  (cd "$root/scripts/build/kubernetes" &&
    go build -ldflags "$ldflags" -o "$out/" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl \
      k8s.io/kubernetes/cmd/kube-controller-manager)
}

build_traefik() {
  require_pin traefik "github.com/traefik/traefik/v3 $TRAEFIK_VERSION"
  # Its Gateway API dependency is the CRD version the local control plane installs.
  require_pin traefik "sigs.k8s.io/gateway-api $GATEWAY_API_VERSION"
  (cd "$root/scripts/build/traefik" && go build -ldflags "-s -w" -o "$out/traefik" github.com/traefik/traefik/v3/cmd/traefik)
}

# `go install` names both binaries `server`: each goes to a folder of its own, then is renamed.
install_as() { # NAME PACKAGE@VERSION: go install into $out/NAME
  local tmp; tmp=$(mktemp -d "$out/.gobin-XXXXXX")
  GOBIN=$tmp go install "$2"
  mv "$tmp/$(basename "${2%@*}")" "$out/$1" && rmdir "$tmp"
}

# The module's folder in the Go module cache (go install has just downloaded it).
module_dir() { go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'; }

# The Temporal server for the postgres profile, with its SQL tool and the PostgreSQL schema files
# that tool applies (the admin-tools image keeps them in /etc/temporal/schema, likewise).
build_temporal_server() {
  require_pin temporal "go.temporal.io/server $TEMPORAL_SERVER_VERSION"
  local module=go.temporal.io/server@$TEMPORAL_SERVER_VERSION
  # Both are named after their package, `server` and `sql`: built into a folder, then renamed.
  local tmp; tmp=$(mktemp -d "$out/.bin-XXXXXX")
  temporal_build -o "$tmp/" go.temporal.io/server/cmd/server go.temporal.io/server/cmd/tools/sql
  mv "$tmp/server" "$out/temporal-server" && mv "$tmp/sql" "$out/temporal-sql-tool" && rmdir "$tmp"
  local dir; dir=$(module_dir "$module")
  mkdir -p "$out/schema/postgresql"
  cp -R "$dir/schema/postgresql/v12" "$out/schema/postgresql/v12"
  chmod -R u+w "$out/schema"
}

# The Temporal UI server (what the temporalio/ui image runs) with the config template that image
# renders from its environment (TEMPORAL_ADDRESS, TEMPORAL_UI_PORT, ...).
build_temporal_ui() {
  local module=github.com/temporalio/ui-server/v2@$TEMPORAL_UI_SERVER_VERSION
  install_as temporal-ui-server "github.com/temporalio/ui-server/v2/cmd/server@$TEMPORAL_UI_SERVER_VERSION"
  local dir; dir=$(module_dir "$module")
  mkdir -p "$out/config"
  cp "$dir/config/docker.yaml" "$out/config/docker.yaml"
  chmod u+w "$out/config/docker.yaml"
}

# --- The components, side by side ----------------------------------------------------------
logs="$cache/.logs"
mkdir -p "$logs"
rm -f "$logs"/*.log
names=()
pids=()
# timed NAME COMMAND...: runs COMMAND, its output in $logs/NAME.log, and says how long it took.
timed() {
  local name=$1; shift
  ( started=$SECONDS; "$@"; echo "install-binaries: $name took $((SECONDS - started))s" ) >"$logs/$name.log" 2>&1
}
# line NAME COMMAND... [--then NAME COMMAND...]: one background line of work; its parts one after
# the other, where the later reuse what the earlier compiled (the Go build cache).
line() {
  local parts=("$@")
  (
    set -e
    local i=0 start=0
    while [ $i -le ${#parts[@]} ]; do
      if [ $i -eq ${#parts[@]} ] || [ "${parts[$i]}" = "--then" ]; then
        timed "${parts[@]:$start:$((i - start))}"
        start=$((i + 1))
      fi
      i=$((i + 1))
    done
  ) &
  names+=("${1}")
  pids+=($!)
}

# PostgreSQL for the postgres profile: Debian's server package, pinned to its major version. Only
# the binaries are used (scripts/env/postgres.ts runs a private server in the state folder); no
# system service is needed.
install_postgresql() {
  local pg_bin=/usr/lib/postgresql/$POSTGRESQL_MAJOR/bin
  if [ -x "$pg_bin/postgres" ] && [ -x "$pg_bin/initdb" ]; then
    echo "install-binaries: PostgreSQL $POSTGRESQL_MAJOR found in $pg_bin"
  elif command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    echo "install-binaries: installing postgresql-$POSTGRESQL_MAJOR from Debian"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "postgresql-$POSTGRESQL_MAJOR"
  else
    echo "install-binaries: PostgreSQL $POSTGRESQL_MAJOR not found in $pg_bin: the postgres profile needs it (as root: apt-get install postgresql-$POSTGRESQL_MAJOR)" >&2
  fi
}

# Prometheus (the analyses of progressive activations): Debian's package, pinned, downloaded with
# apt and unpacked into the cache (its binary is all the local control plane runs; no system
# service, no dependencies needed for the API it uses).
install_prometheus() {
  local prom_dir="$cache/prometheus-$PROMETHEUS_DEB_VERSION" tmp
  if [ -x "$prom_dir/prometheus" ]; then
    echo "install-binaries: prometheus $PROMETHEUS_DEB_VERSION cached in $prom_dir"
  elif command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null; then
    echo "install-binaries: downloading prometheus $PROMETHEUS_DEB_VERSION from Debian"
    tmp=$(mktemp -d "$cache/.build-prometheus-XXXXXX")
    if ! (cd "$tmp" && apt-get download -qq "prometheus=$PROMETHEUS_DEB_VERSION" 2>/dev/null); then
      # A fresh machine has no package lists yet.
      [ "$(id -u)" = 0 ] && apt-get update -qq
      (cd "$tmp" && apt-get download -qq "prometheus=$PROMETHEUS_DEB_VERSION")
    fi
    dpkg-deb -x "$tmp"/prometheus_*.deb "$tmp/root"
    mkdir -p "$tmp/out" && mv "$tmp/root/usr/bin/prometheus" "$tmp/out/prometheus"
    rm -rf "$prom_dir" && mv "$tmp/out" "$prom_dir" && rm -rf "$tmp"
    echo "install-binaries: prometheus $PROMETHEUS_DEB_VERSION unpacked into $prom_dir"
  else
    echo "install-binaries: apt-get not found: cannot fetch Debian's prometheus $PROMETHEUS_DEB_VERSION, which the analyses' tests need" >&2
  fi
}

# Temporal time-skipping test server (unit tests): Java jars from Maven Central, not a Go build:
# scripts/build/temporal-test-server/install.sh resolves them with Maven into
# $cache/temporal-test-server-$TEMPORAL_TEST_SERVER_VERSION (its own lock). Needs java and mvn
# (.ci/run installs them); without them the control plane still installs, and the unit tests say
# what is missing.
install_test_server() {
  if command -v java >/dev/null && command -v mvn >/dev/null; then
    KONFIDENCE_BIN_CACHE=$cache bash "$root/scripts/build/temporal-test-server/install.sh"
  else
    echo "install-binaries: java or mvn not found: skipping the Temporal test server (apt-get install default-jdk-headless maven)" >&2
  fi
}

# Debian's packages one after the other (apt takes its locks).
debian_packages() {
  if [ "$profile" != dev ]; then install_postgresql; fi
  install_prometheus
}

# Three lines of work for two or more cores. The Temporal CLI embeds the server of the version
# temporal-server is, both from one wrapper module: built one after the other, the second reuses
# most of the first's packages.
line kubernetes build kubernetes "$KUBERNETES_VERSION" kube-apiserver kubectl kube-controller-manager -- build_kubernetes \
  --then etcd build etcd "$ETCD_VERSION" etcd -- build_etcd
if [ "$profile" = dev ]; then
  line temporal build temporal "$TEMPORAL_CLI_VERSION" temporal -- build_temporal
else
  line temporal build temporal "$TEMPORAL_CLI_VERSION" temporal -- build_temporal \
    --then temporal-server build temporal-server "$TEMPORAL_SERVER_VERSION" temporal-server temporal-sql-tool -- build_temporal_server \
    --then temporal-ui-server build temporal-ui-server "$TEMPORAL_UI_SERVER_VERSION" temporal-ui-server -- build_temporal_ui
fi
line traefik build traefik "$TRAEFIK_VERSION" traefik -- build_traefik \
  --then debian-packages debian_packages \
  --then temporal-test-server install_test_server

failed=()
for i in "${!names[@]}"; do
  wait "${pids[$i]}" || failed+=("${names[$i]}")
done
# What each part said, in the order of the lines; a part that failed shows the end of its log.
for log in "$logs"/*.log; do
  if grep -q 'install-binaries: .* took ' "$log"; then
    grep -h 'install-binaries:' "$log" || true
  else
    echo "install-binaries: $(basename "$log" .log) did not finish; the end of $log:" >&2
    tail -n 30 "$log" >&2
    failed+=("$(basename "$log" .log)")
  fi
done
[ ${#failed[@]} -eq 0 ] || { echo "install-binaries: failed: ${failed[*]}" >&2; exit 1; }
# --- end of the components --------------------------------------------------------------------

# The upstream route CRDs (Gateway API HTTPRoute, Istio VirtualService/DestinationRule) that tests
# and the sample install, cached by version. Needs the npm packages; without them, the first test
# run fetches them instead.
if [ -x "$root/node_modules/.bin/tsx" ]; then
  (cd "$root" && node_modules/.bin/tsx scripts/route-crds.ts)
else
  echo "install-binaries: npm packages not installed yet; route CRDs are fetched on first use"
fi
