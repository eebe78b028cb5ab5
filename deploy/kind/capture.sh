#!/usr/bin/env bash
# Proves that nothing leaves the machine while the cluster runs: a capture of EVERY packet
# (no filter, both directions) on the host's outward interface, which must stay empty.
#
#   capture.sh start    install tcpdump when missing (apt-get: do this before the phase
#                       that must be silent), then capture in the background
#   capture.sh stop     stop the capture, print the count of packets and exit 1 unless it
#                       is 0 (with the first packets, to tell what left)
#   capture.sh status   exit 0 while a capture runs
#
# Whatever may need the network (Go modules, apt, debootstrap) must run before `start`:
# test-kind wraps its cluster phases in start/stop. The interface is $CAPTURE_IFACE, else
# the one of the default route, else eth0. Files: $CAPTURE_DIR, default .cache/kind/capture/
# (one capture at a time per directory; the pcap is kept
# for reading with `tcpdump -nn -r`).
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="${CAPTURE_DIR:-$root/.cache/kind/capture}"
pidfile="$dir/tcpdump.pid"
pcap="$dir/outward.pcap"
errlog="$dir/tcpdump.log"

log() { echo "capture.sh: $*" >&2; }

iface() {
	if [ -n "${CAPTURE_IFACE:-}" ]; then
		echo "$CAPTURE_IFACE"
		return
	fi
	local dev
	dev="$(ip -4 route show default 2>/dev/null | awk '{for (i = 1; i < NF; i++) if ($i == "dev") {print $(i + 1); exit}}')"
	echo "${dev:-eth0}"
}

running() {
	local pid
	pid="$(cat "$pidfile" 2>/dev/null)" || return 1
	kill -0 "$pid" 2>/dev/null
}

start() {
	if running; then
		log "a capture already runs (pid $(cat "$pidfile")); stop it first"
		exit 1
	fi
	if ! command -v tcpdump >/dev/null; then
		[ "$(id -u)" = 0 ] || { log "tcpdump is missing (as root: apt-get install tcpdump)"; exit 1; }
		log "installing tcpdump"
		apt-get update -qq >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends tcpdump >&2
	fi
	mkdir -p "$dir"
	rm -f "$pcap" "$errlog"
	local dev
	dev="$(iface)"
	# -U: write each packet as it comes, so a stop never loses the last ones; -s 128: the
	# headers are enough to tell what left.
	setsid tcpdump -i "$dev" -n -U -s 128 -w "$pcap" >"$errlog" 2>&1 </dev/null &
	echo $! >"$pidfile"
	for _ in $(seq 1 50); do
		grep -q "listening on" "$errlog" 2>/dev/null && break
		running || { cat "$errlog" >&2; log "tcpdump did not start"; exit 1; }
		sleep 0.1
	done
	grep -q "listening on" "$errlog" || { cat "$errlog" >&2; log "tcpdump is not listening"; exit 1; }
	echo "$dev" >"$dir/iface"
	date +%s >"$dir/started"
	log "capturing every packet on $dev into $pcap"
}

stop() {
	running || { log "no capture runs"; exit 1; }
	local pid
	pid="$(cat "$pidfile")"
	kill -INT "$pid"
	for _ in $(seq 1 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		log "tcpdump ($pid) did not stop"
		exit 1
	fi
	rm -f "$pidfile"
	local count dropped seconds dev
	dev="$(cat "$dir/iface")"
	seconds=$(($(date +%s) - $(cat "$dir/started")))
	count="$(tcpdump -n -r "$pcap" 2>/dev/null | wc -l)"
	dropped="$(sed -n 's/^\([0-9]*\) packets\{0,1\} dropped by kernel.*/\1/p' "$errlog")"
	echo "capture: $count packets on $dev in $seconds s (dropped by kernel: ${dropped:-?}; $pcap)"
	if [ "${dropped:-0}" != 0 ]; then
		log "the kernel dropped packets: the count is not complete"
		exit 1
	fi
	if [ "$count" != 0 ]; then
		log "packets left or reached $dev; the first of them:"
		tcpdump -nn -q -r "$pcap" -c 20 >&2 2>/dev/null || true
		log "packets per source > destination address (top 10):"
		tcpdump -nn -q -r "$pcap" 2>/dev/null |
			awk '{src = $3; dst = $5; sub(/\.[0-9]+$/, "", src); sub(/\.[0-9]+:?$/, "", dst); print $2, src, ">", dst}' |
			sort | uniq -c | sort -rn | head -n 10 >&2 || true
		exit 1
	fi
}

case "${1:-}" in
start) start ;;
stop) stop ;;
status) running ;;
*) echo "usage: capture.sh start|stop|status" >&2; exit 2 ;;
esac
