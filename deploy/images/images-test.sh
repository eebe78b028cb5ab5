#!/usr/bin/env bash
# Proves the images `make images` built (deploy/images/images.sh) by running them together,
# with no network: every container joins the network namespace of the PostgreSQL container,
# started with --network none, so they talk over its loopback and nothing else exists (the
# test checks that the namespace has no interface but lo). Each container runs with a
# read-only root file system as its image's non-root user, as the chart runs them.
#
#   images-test.sh
#
# What it checks, in order:
#   - the PostgreSQL image initialises its data directory as the official image does (the
#     chart's init script creating one database per deployable, sourced from
#     /docker-entrypoint-initdb.d), and accepts a password connection over TCP;
#   - the services' wait-for-postgresql init container (the same image, as uid 65532)
#     creates a database that is missing;
#   - the development broker answers on its port (a Kafka-protocol client: the services);
#   - every service image starts, answers /healthz, and is ready (/readyz/local says
#     "ready", not "degraded": its database migrated and its Kafka probe answered by the
#     development broker);
#   - the gateway image, given the services as upstreams, answers /readyz with 200 (every
#     service ready through it);
#   - the busybox image has the applets the chart's `helm test` pod runs (sh, seq, wget;
#     and timeout: Debian's busybox wget has no timeout option of its own).
# Times and the images' sizes are printed. IMAGE_TAG/DEPS_TAG/IMAGE_PREFIX as images.sh.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
docker=/usr/bin/docker
images="$root/deploy/images/images.sh"
run="imgtest-$$"
password="images-test-password"
started=()

log() { echo "images-test: $*" >&2; }
fail() { log "FAIL: $*"; exit 1; }
ref() { "$images" list | grep "/$1:"; }

cleanup() {
	local c
	for c in "${started[@]}"; do
		"$docker" rm -f "$c" >/dev/null 2>&1 || true
	done
	rm -rf "$tmp"
}
tmp="$(mktemp -d)"
trap cleanup EXIT

"$root/deploy/images/dockerd.sh" start
for n in $("$images" names); do
	"$docker" image inspect "$(ref "$n")" >/dev/null 2>&1 || fail "$(ref "$n") is missing: run make images"
done

# start NAME IMAGE [docker run options...] -- [args...]: a detached container in the test's
# network namespace (the first one, PostgreSQL, owns it).
start() {
	local name="$1" image="$2" opts=() net
	shift 2
	while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	if [ ${#started[@]} -eq 0 ]; then net=(--network none); else net=(--network "container:$run-postgresql"); fi
	"$docker" run -d --name "$run-$name" "${net[@]}" --read-only --tmpfs /tmp "${opts[@]}" "$image" "$@" >/dev/null
	started+=("$run-$name")
}

# probe COMMAND...: runs a command of the busybox image in the namespace.
probe() { "$docker" run --rm --network "container:$run-postgresql" --read-only "$(ref busybox)" "$@"; }

# until_ok SECONDS WHAT COMMAND...: retries the command until it succeeds.
until_ok() {
	local limit="$1" what="$2" t0
	shift 2
	t0=$(date +%s)
	until "$@" >/dev/null 2>&1; do
		if [ $(($(date +%s) - t0)) -ge "$limit" ]; then
			"$@" || true
			fail "$what: not within $limit s"
		fi
		sleep 1
	done
	log "ok: $what ($(($(date +%s) - t0)) s)"
}

logs_of() { "$docker" logs --tail 30 "$run-$1" 2>&1 | sed "s/^/  $1: /" >&2; }

services=(topics pages persons assets webhooks)
dbs=(gateway "${services[@]}")

# PostgreSQL, with the chart's init script (templates/postgresql.yaml: 10-databases.sh).
mkdir -p "$tmp/initdb"
{
	echo '#!/bin/sh'
	echo 'set -e'
	for db in "${dbs[@]}"; do
		echo "psql -v ON_ERROR_STOP=1 --username \"\$POSTGRES_USER\" --dbname postgres -c 'CREATE DATABASE \"$db\"'"
	done
} >"$tmp/initdb/10-databases.sh"
chmod 0644 "$tmp/initdb/10-databases.sh" # a ConfigMap's file: not executable, sourced
chmod 0755 "$tmp/initdb" "$tmp"
t0=$(date +%s)
start postgresql "$(ref postgresql)" --tmpfs /var/run/postgresql:uid=999,gid=999 \
	--tmpfs /var/lib/postgresql/data:uid=999,gid=999,mode=0700 \
	-e POSTGRES_USER=postgres -e POSTGRES_PASSWORD="$password" -e PGDATA=/var/lib/postgresql/data/pgdata \
	-v "$tmp/initdb:/docker-entrypoint-initdb.d:ro" --
trap 'logs_of postgresql; cleanup' ERR
until_ok 120 "postgresql: pg_isready" "$docker" exec "$run-postgresql" pg_isready -q -h 127.0.0.1 -U postgres
got="$("$docker" exec -e PGPASSWORD="$password" "$run-postgresql" psql -h 127.0.0.1 -U postgres -d postgres -tAc \
	"SELECT string_agg(datname, ',' ORDER BY datname) FROM pg_database WHERE datname NOT IN ('postgres','template0','template1')")"
want="$(printf '%s\n' "${dbs[@]}" | sort | paste -sd,)"
[ "$got" = "$want" ] || fail "postgresql: databases $got, want $want (the init script did not run)"
log "ok: postgresql: password login over TCP, databases $got ($(($(date +%s) - t0)) s from start)"
if "$docker" exec -e PGPASSWORD=wrong "$run-postgresql" psql -h 127.0.0.1 -U postgres -d postgres -tAc 'SELECT 1' >/dev/null 2>&1; then
	fail "postgresql: a wrong password is accepted over TCP"
fi
log "ok: postgresql: a wrong password is refused"
# The services' wait-for-postgresql init container (templates/_helpers.tpl): the same image,
# as the service's user (65532, in no /etc/passwd), creates a missing database.
# shellcheck disable=SC2016 # the script is the container's, expanded there
"$docker" run --rm --network "container:$run-postgresql" --read-only --tmpfs /tmp -u 65532:65532 \
	-e PGHOST=127.0.0.1 -e PGUSER=postgres -e PGPASSWORD="$password" -e DB=added_later \
	--entrypoint sh "$(ref postgresql)" -c '
		until pg_isready -q -h "$PGHOST" -U "$PGUSER"; do echo waiting for postgresql; sleep 2; done
		if [ -z "$(psql -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '"'"'$DB'"'"'")" ]; then
			psql -d postgres -c "CREATE DATABASE \"$DB\""
		fi' >/dev/null
[ "$("$docker" exec "$run-postgresql" psql -U postgres -d added_later -tAc 'SELECT current_database()')" = added_later ] ||
	fail "postgresql: the wait-for-postgresql script did not create its database"
log "ok: postgresql: the wait-for-postgresql script, as uid 65532, created its database"
user="$("$docker" exec "$run-postgresql" id -u)"
[ "$user" = 999 ] || fail "postgresql runs as uid $user, want 999"

# The network namespace is the loopback's alone.
ifaces="$(probe sh -c 'ls /sys/class/net' | paste -sd,)"
[ "$ifaces" = lo ] || fail "the test's network namespace has interfaces $ifaces, want lo only"
log "ok: no network: the containers' namespace has only lo"

# busybox: what the chart's `helm test` pod runs.
[ "$(probe sh -c 'seq 1 3 | wc -l')" = 3 ] || fail "busybox: sh, seq, wc"
probe sh -c 'command -v wget && command -v timeout' >/dev/null || fail "busybox: no wget or timeout"
[ "$(probe id -u)" = 65534 ] || fail "busybox: not running as nobody (65534)"
log "ok: busybox: sh, seq, wget, timeout, as 65534"

# The development broker.
start devbroker "$(ref devbroker)" -- -listen 127.0.0.1:9092 -advertise 127.0.0.1 -data /tmp/devbroker
until_ok 30 "devbroker: listening on 9092" probe sh -c 'nc -z 127.0.0.1 9092 || (echo | nc 127.0.0.1 9092)'

secrets=(-e CURSOR_SECRET=images-test-cursor-secret-0123456789
	-e INTERNAL_AUTH_SECRET=696d616765732d746573742d696e7465726e616c2d617574682d736563726574
	-e KAFKA_BROKERS=127.0.0.1:9092 -e PUBLIC_BASE_URL=http://127.0.0.1:25001 -e SHUTDOWN_TIMEOUT=5s)
port=25011
upstreams=()
for s in "${services[@]}"; do
	extra=()
	case "$s" in
	assets) extra=(-e ASSETS_STORAGE=local -e ASSETS_STORAGE_DIR=/tmp/assets
		-e SIGNING_KEY=696d616765732d746573742d7369676e696e672d6b65792d3031323334353637) ;;
	webhooks) extra=(-e WEBHOOK_SECRETS_KEYS=t1:aW1hZ2VzLXRlc3Qtd2ViaG9vay1rZXktMDEyMzQ1Njc=
		-e WEBHOOK_ALLOW_PRIVATE_TARGETS=true) ;;
	esac
	start "$s" "$(ref "$s")" "${secrets[@]}" "${extra[@]}" -e HTTP_ADDR=127.0.0.1:$port \
		-e METRICS_ADDR=127.0.0.1:$((port + 100)) \
		-e DATABASE_URL="postgres://postgres:$password@127.0.0.1:5432/$s?sslmode=disable" --
	upstreams+=(-e "UPSTREAM_${s^^}_URL=http://127.0.0.1:$port")
	eval "port_$s=$port"
	port=$((port + 1))
done
for s in "${services[@]}"; do
	p="port_$s"
	until_ok 60 "$s: /healthz" probe timeout 3 wget -q -O /dev/null "http://127.0.0.1:${!p}/healthz" ||
		{ logs_of "$s"; exit 1; }
	# "ready", not "degraded": the database and the (optional) Kafka check both pass.
	if ! until_ok 120 "$s: /readyz/local is ready (database migrated, the broker answers its Kafka probe)" \
		probe sh -c "timeout 5 wget -q -O - http://127.0.0.1:${!p}/readyz/local | grep -q '\"status\":\"ready\"'"; then
		logs_of "$s"
		exit 1
	fi
	u="$("$docker" image inspect -f '{{.Config.User}}' "$(ref "$s")")"
	[ "$u" = 65532:65532 ] || fail "$s: image user $u, want 65532:65532"
done

# The gateway, with the services as its upstreams: /readyz is 200 once every one is ready.
start gateway "$(ref gateway)" "${secrets[@]}" "${upstreams[@]}" -e HTTP_ADDR=127.0.0.1:25001 \
	-e ADMIN_ADDR=127.0.0.1:25002 -e ADMIN_TOKEN=images-test-admin-token-0123 \
	-e KEY_HASH_PEPPER=696d616765732d746573742d7065707065722d303132333435363738396162636465 \
	-e DATABASE_URL="postgres://postgres:$password@127.0.0.1:5432/gateway?sslmode=disable" --
until_ok 60 "gateway: /healthz" probe timeout 3 wget -q -O /dev/null http://127.0.0.1:25001/healthz
until_ok 120 "gateway: /readyz (every service ready through it)" probe timeout 5 wget -q -O /dev/null http://127.0.0.1:25001/readyz

trap cleanup ERR
log "sizes:"
for n in $("$images" names); do
	printf '  %-32s %s\n' "$(ref "$n")" "$("$docker" image inspect -f '{{.Size}}' "$(ref "$n")" | numfmt --to=iec --suffix=B)" >&2
done
log "PASS: $("$images" names | wc -l) images, $((${#services[@]} + 3)) containers, no network"
