#!/bin/sh
# Creates Temporal's two PostgreSQL databases and sets up or updates their schema with Temporal's
# own SQL tool, from the schema files of the server version. Every step is idempotent: run it before
# every server start (docker-compose.yml's temporal-admin-tools service; the local postgres profile,
# scripts/env/temporal-server.ts, runs this same file).
#   POSTGRES_SEEDS, DB_PORT, POSTGRES_USER, POSTGRES_PWD  where PostgreSQL is and who connects
#   DBNAME, VISIBILITY_DBNAME                              default temporal, temporal_visibility
#   TEMPORAL_SCHEMA_DIR                                    default /etc/temporal/schema (admin-tools image)
set -eu
: "${POSTGRES_SEEDS:?POSTGRES_SEEDS (PostgreSQL host) is required}"
: "${POSTGRES_USER:?POSTGRES_USER is required}"
: "${POSTGRES_PWD:?POSTGRES_PWD is required}"
schema=${TEMPORAL_SCHEMA_DIR:-/etc/temporal/schema}/postgresql/v12

for pair in "${DBNAME:-temporal}:temporal" "${VISIBILITY_DBNAME:-temporal_visibility}:visibility"; do
  db=${pair%%:*}
  dir=${pair#*:}
  set -- --plugin postgres12 --ep "$POSTGRES_SEEDS" -p "${DB_PORT:-5432}" -u "$POSTGRES_USER" --pw "$POSTGRES_PWD" --db "$db"
  temporal-sql-tool "$@" create
  # Version 0.0 only creates the version table; update-schema then applies every versioned step
  # the database lacks (none on a current database).
  temporal-sql-tool "$@" setup-schema -v 0.0
  temporal-sql-tool "$@" update-schema -d "$schema/$dir/versioned"
  echo "setup-schema: the schema of $db is current"
done
