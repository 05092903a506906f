#!/bin/bash
# Entry point of the read replica in docker/compose.scale.yaml: on an empty volume, copies the primary
# with pg_basebackup -R (standby.signal + primary_conninfo), then runs the image's own entry point.
# GUESTPASS_REPLICATION_PASSWORD is the password of the `replicator` role that
# primary-replication.sh created on the primary.
set -euo pipefail
: "${GUESTPASS_REPLICATION_PASSWORD:?set GUESTPASS_REPLICATION_PASSWORD}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  mkdir -p "$PGDATA"
  chown postgres:postgres "$PGDATA"
  chmod 0700 "$PGDATA"
  until pg_isready -h postgres -p 5432 -q; do sleep 1; done
  PGPASSWORD="$GUESTPASS_REPLICATION_PASSWORD" gosu postgres \
    pg_basebackup -h postgres -p 5432 -U replicator -D "$PGDATA" -R -X stream -c fast
fi
exec docker-entrypoint.sh "$@"
