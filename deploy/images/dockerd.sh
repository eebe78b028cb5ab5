#!/usr/bin/env bash
# Makes sure a Docker daemon answers, for `make images` and the kind targets.
#
#   dockerd.sh [start]   install Debian's docker.io when dockerd is missing (root, apt-get),
#                        then start dockerd with its data root in .cache/docker unless a
#                        daemon already answers on /var/run/docker.sock; waits until it does
#   dockerd.sh stop      stop the daemon this script started (its pid file), and wait
#   dockerd.sh status    exit 0 when a daemon answers
#
# The project talks to the daemon with Debian's client, /usr/bin/docker (20.10, with the
# built-in BuildKit); a newer client on the PATH would need the buildx plugin to build.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
docker=/usr/bin/docker
state="$root/.cache/dockerd"
pidfile="$state/dockerd.pid"
log="$state/dockerd.log"
data="${DOCKER_DATA_ROOT:-$root/.cache/docker}"

answers() { [ -x "$docker" ] && "$docker" info >/dev/null 2>&1; }

install() {
	[ -x /usr/sbin/dockerd ] && [ -x "$docker" ] && return 0
	if [ "$(id -u)" != 0 ]; then
		echo "dockerd.sh: Docker is missing; install Debian's docker.io (as root: apt-get install docker.io)" >&2
		exit 1
	fi
	echo "dockerd.sh: installing Debian's docker.io" >&2
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker.io iptables >/dev/null
}

start() {
	answers && return 0
	install
	answers && return 0
	mkdir -p "$state" "$data"
	echo "dockerd.sh: starting dockerd (data root $data, log $log)" >&2
	# setsid: the daemon outlives the make that started it and leaves its process group.
	setsid /usr/sbin/dockerd --data-root "$data" --pidfile "$pidfile" --storage-driver overlay2 \
		>>"$log" 2>&1 </dev/null &
	for _ in $(seq 1 120); do
		answers && return 0
		sleep 0.5
	done
	echo "dockerd.sh: dockerd did not answer within 60 s; the end of $log:" >&2
	tail -n 20 "$log" >&2
	exit 1
}

stop() {
	local pid
	# dockerd removes its pid file as it exits: read it once.
	pid="$(cat "$pidfile" 2>/dev/null || true)"
	[ -n "$pid" ] || return 0
	kill "$pid" 2>/dev/null || return 0
	for _ in $(seq 1 60); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.5
	done
	echo "dockerd.sh: dockerd ($pid) did not stop within 30 s" >&2
	exit 1
}

case "${1:-start}" in
start) start ;;
stop) stop ;;
status) answers ;;
*) echo "usage: dockerd.sh [start|stop|status]" >&2; exit 2 ;;
esac
