#!/bin/sh
# Writes PgBouncer's user list from the environment (never from the command line), then runs PgBouncer
# in the foreground. GUESTPASS_LOGIN_PASSWORD: the password of guestpass_authenticator, the only role
# that connects through PgBouncer (migrations go straight to the primary: they hold a session lock).
set -eu
: "${GUESTPASS_LOGIN_PASSWORD:?set GUESTPASS_LOGIN_PASSWORD}"
umask 077
printf '"guestpass_authenticator" "%s"\n' "$GUESTPASS_LOGIN_PASSWORD" >/run/pgbouncer/userlist.txt
exec /usr/sbin/pgbouncer /etc/pgbouncer/pgbouncer.ini
