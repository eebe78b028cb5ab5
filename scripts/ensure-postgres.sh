#!/usr/bin/env bash
# Makes sure the PostgreSQL server binaries (initdb, postgres) are on this machine, which
# `make run` and the tests need for their private clusters. Installs Debian's package
# when they are missing and we may (root with apt-get); otherwise explains what to do.
set -euo pipefail

if command -v pg_ctl >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
  exit 0
fi
if [ -n "${PG_BINDIR:-}" ] || [ -n "${TEST_DATABASE_URL:-}" ]; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "PostgreSQL server binaries not found; installing Debian's postgresql package..." >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends postgresql >/dev/null
  exit 0
fi
echo "PostgreSQL server binaries not found: install the postgresql package, or set PG_BINDIR," >&2
echo "or point TEST_DATABASE_URL / DATABASE_URL at a server." >&2
exit 1
