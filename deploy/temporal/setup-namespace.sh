#!/bin/sh
# Creates the Temporal namespace (unless it exists) and registers the project's search attributes
# (shared/search-attributes.ts; registering one that exists is a no-op), with the Temporal CLI.
# docker-compose.yml's temporal-setup service runs it; so does the local postgres profile
# (scripts/env/temporal-server.ts), with the same arguments.
#   usage: setup-namespace.sh NAME=TYPE...        e.g. Stage=Keyword
#   TEMPORAL_ADDRESS (host:port), TEMPORAL_NAMESPACE (default "default"), TEMPORAL_RETENTION (72h)
set -eu
: "${TEMPORAL_ADDRESS:?TEMPORAL_ADDRESS (host:port of the frontend) is required}"
ns=${TEMPORAL_NAMESPACE:-default}

# retry TRIES COMMAND...: the server may still be starting, and a namespace just created reaches
# every service's cache within seconds. Bounded: the last failure is reported.
retry() {
  tries=$1
  shift
  n=1
  until "$@"; do
    [ "$n" -lt "$tries" ] || { echo "setup-namespace: gave up after $tries tries: $*" >&2; return 1; }
    n=$((n + 1))
    sleep 1
  done
}

retry 60 temporal operator cluster health --address "$TEMPORAL_ADDRESS" >/dev/null
if temporal operator namespace describe --address "$TEMPORAL_ADDRESS" --namespace "$ns" >/dev/null 2>&1; then
  echo "setup-namespace: namespace $ns exists"
else
  retry 5 temporal operator namespace create --address "$TEMPORAL_ADDRESS" --namespace "$ns" --retention "${TEMPORAL_RETENTION:-72h}"
fi
for attribute in "$@"; do
  retry 30 temporal operator search-attribute create --address "$TEMPORAL_ADDRESS" --namespace "$ns" \
    --name "${attribute%%=*}" --type "${attribute#*=}" >/dev/null
done
echo "setup-namespace: namespace $ns has search attributes $*"
