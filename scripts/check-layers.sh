#!/usr/bin/env bash
# The import direction inside each service (docs/architecture.md, "Layers"): dependencies
# point inward. domain imports no other layer; app (the use cases) imports domain and
# libs only; ports (HTTP) import app and domain, never the adapters; adapters implement the
# interfaces and are never imported by the inner layers; only application (the wiring)
# sees them all. Test files may cross the layers (integration tests); the code may not.
# Exits 1 and names every import that breaks the rule.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
root=github.com/customerapi/platform/services
status=0
while read -r pkg imports; do
  case "$pkg" in
    "$root"/*/internal/*) ;;
    *) continue ;;
  esac
  service=${pkg#"$root"/}
  service=${service%%/*}
  layer=${pkg#"$root/$service/internal/"}
  layer=${layer%%/*}
  case "$layer" in
    domain) banned="app adapters ports application" ;;
    app) banned="adapters ports application" ;;
    ports) banned="adapters application" ;;
    adapters) banned="ports application" ;;
    *) continue ;;
  esac
  for imp in $imports; do
    for b in $banned; do
      case "$imp" in
        "$root/$service/internal/$b" | "$root/$service/internal/$b"/*)
          echo "layers: $pkg imports $imp ($layer must not depend on $b)"
          status=1 ;;
      esac
    done
  done
done < <($GO list -f '{{.ImportPath}} {{join .Imports " "}}' "$root/...")
exit $status
