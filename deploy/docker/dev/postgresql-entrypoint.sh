#!/bin/sh
# Entrypoint of the development PostgreSQL image (postgresql.Dockerfile): what the official
# image's docker-entrypoint.sh does that the chart uses. On an empty PGDATA: initdb with
# POSTGRES_USER (default postgres) and POSTGRES_PASSWORD (required), password logins
# (scram-sha-256) from the network, then the files of /docker-entrypoint-initdb.d in order
# (*.sh executed when executable, else sourced; *.sql run with psql) against a server that
# listens on its socket only. Then, or at once when PGDATA is initialised, `exec postgres`
# with the arguments (`postgres -c name=value ...`; arguments starting with "-" are
# postgres's).
set -eu

if [ "$#" -eq 0 ] || [ "${1#-}" != "$1" ]; then
	set -- postgres "$@"
fi
if [ "$1" != postgres ]; then
	exec "$@"
fi

: "${POSTGRES_USER:=postgres}"
export POSTGRES_USER
: "${PGDATA:?PGDATA is not set}"

if [ ! -s "$PGDATA/PG_VERSION" ]; then
	if [ -z "${POSTGRES_PASSWORD:-}" ]; then
		echo "docker-entrypoint.sh: POSTGRES_PASSWORD is required to initialise $PGDATA" >&2
		exit 1
	fi
	mkdir -p "$PGDATA"
	chmod 700 "$PGDATA"
	pwfile="$(mktemp)"
	printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
	initdb --username="$POSTGRES_USER" --pwfile="$pwfile" --auth-local=trust \
		--auth-host=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 -D "$PGDATA"
	rm -f "$pwfile"
	echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
	echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"

	pg_ctl -D "$PGDATA" -w -o "-c listen_addresses='' -c unix_socket_directories=/var/run/postgresql" start
	for f in /docker-entrypoint-initdb.d/*; do
		case "$f" in
		*.sh)
			echo "docker-entrypoint.sh: running $f"
			# shellcheck source=/dev/null
			if [ -x "$f" ]; then "$f"; else . "$f"; fi
			;;
		*.sql)
			echo "docker-entrypoint.sh: running $f"
			psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres -f "$f"
			;;
		*) [ -e "$f" ] && echo "docker-entrypoint.sh: ignoring $f" ;;
		esac
	done
	pg_ctl -D "$PGDATA" -m fast -w stop
	echo "docker-entrypoint.sh: $PGDATA initialised"
fi

exec "$@"
