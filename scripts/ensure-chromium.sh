#!/usr/bin/env bash
# Makes sure Debian's chromium is on this machine: the e2e test of /docs renders the
# reference in it headless. Installs the package when it is missing and we may (root with
# apt-get); otherwise explains what to do. Never downloads a browser build of its own.
set -euo pipefail

if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "chromium not found; installing Debian's chromium package..." >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends chromium >/dev/null
  exit 0
fi
echo "chromium not found: install Debian's chromium package (the /docs rendering test needs it)." >&2
exit 1
