#!/bin/bash
# Runs once, when the primary's volume is initialised (/docker-entrypoint-initdb.d): a `replicator`
# role for the read replica of docker/compose.scale.yaml, and the pg_hba line that lets it stream.
# The password comes from GUESTPASS_REPLICATION_PASSWORD, never from the command line.
set -euo pipefail
if [ -z "${GUESTPASS_REPLICATION_PASSWORD:-}" ]; then
  echo "GUESTPASS_REPLICATION_PASSWORD is not set: no replication role (no read replica)" >&2
  exit 0
fi
psql -v ON_ERROR_STOP=1 -X -q --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" <<'SQL'
\getenv password GUESTPASS_REPLICATION_PASSWORD
create role replicator with replication login password :'password';
SQL
echo "host replication replicator all scram-sha-256" >>"$PGDATA/pg_hba.conf"
