#!/usr/bin/env bash
# Builds the local control plane from the Go module proxy, once per version:
#   temporal (Temporal CLI dev server with the UI), etcd, kube-apiserver, kube-controller-manager
#   (garbage collection) and kubectl.
# Binaries land in $KONFIDENCE_BIN_CACHE (default ~/.cache/konfidence-activation/bin), outside any
# clone, so that every checkout on a warm machine (CI clones afresh) skips the build.
# Idempotent and safe to run concurrently: a lock serializes builds, each result is moved in whole.
set -euo pipefail

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

build_temporal() { GOBIN=$out go install "github.com/temporalio/cli/cmd/temporal@$TEMPORAL_CLI_VERSION"; }

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
  (cd "$root/scripts/build/kubernetes" &&
    go build -ldflags "$ldflags" -o "$out/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver &&
    go build -ldflags "$ldflags" -o "$out/kubectl" k8s.io/kubernetes/cmd/kubectl &&
    go build -ldflags "$ldflags" -o "$out/kube-controller-manager" k8s.io/kubernetes/cmd/kube-controller-manager)
}

build temporal "$TEMPORAL_CLI_VERSION" temporal -- build_temporal
build etcd "$ETCD_VERSION" etcd -- build_etcd
build kubernetes "$KUBERNETES_VERSION" kube-apiserver kubectl kube-controller-manager -- build_kubernetes

# --- Temporal time-skipping test server (unit tests) ------------------------------------------
# Java jars from Maven Central, not a Go build: scripts/build/temporal-test-server/install.sh
# resolves them with Maven into $cache/temporal-test-server-$TEMPORAL_TEST_SERVER_VERSION (its own
# lock; this script's lock is held here). Needs java and mvn (.ci/run installs them); without
# them the control plane still installs, and the unit tests say what is missing.
if command -v java >/dev/null && command -v mvn >/dev/null; then
  KONFIDENCE_BIN_CACHE=$cache bash "$root/scripts/build/temporal-test-server/install.sh"
else
  echo "install-binaries: java or mvn not found: skipping the Temporal test server (apt-get install default-jdk-headless maven)" >&2
fi
# --- end of the Temporal test server --------------------------------------------------------

# The upstream route CRDs (Gateway API HTTPRoute, Istio VirtualService/DestinationRule) that tests
# and the sample install, cached by version. Needs the npm packages; without them, the first test
# run fetches them instead.
if [ -x "$root/node_modules/.bin/tsx" ]; then
  (cd "$root" && node_modules/.bin/tsx scripts/route-crds.ts)
else
  echo "install-binaries: npm packages not installed yet; route CRDs are fetched on first use"
fi
