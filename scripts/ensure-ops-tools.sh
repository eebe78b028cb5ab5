#!/usr/bin/env bash
# Makes sure the real programs the operations tests run are on this machine: Prometheus
# and promtool (Debian's `prometheus` package) and a Redis server (`redis-server`). Like
# ensure-postgres.sh, it installs Debian's packages when they are missing and we may (root
# with apt-get); otherwise it explains what to do. The packages' own services are not
# started: the tests start their own processes on free ports.
set -euo pipefail

missing=()
command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian's ${missing[*]} for the operations tests..." >&2
  export DEBIAN_FRONTEND=noninteractive
  # No daemon of theirs is wanted: policy-rc.d answers "not allowed" to every start the
  # packages' scripts ask for, for the length of the install only.
  policy=/usr/sbin/policy-rc.d
  created_policy=
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" && created_policy=1
  fi
  trap '[ -n "$created_policy" ] && rm -f "$policy"' EXIT
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  exit 0
fi
echo "missing ${missing[*]}: install Debian's prometheus and redis-server packages (or put" >&2
echo "prometheus, promtool and redis-server on PATH)." >&2
exit 1
