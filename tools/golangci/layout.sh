#!/usr/bin/env bash
# layout.sh SERVICE_DIR...: names every top-level folder of a service's internal/ other than
# the five layers (docs/architecture.md, "Layers") and fails if there is one. Depguard sees
# imports, not folders: a package outside the layers would escape every rule.
set -euo pipefail
status=0
for service in "$@"; do
	for file in "$service"/internal/*.go; do
		[ -e "$file" ] || continue
		echo "$file: a file of internal/ itself, outside the five layers"
		status=1
	done
	for dir in "$service"/internal/*/; do
		[ -d "$dir" ] || continue
		case "$(basename "$dir")" in
		domain | app | adapters | ports | application) ;;
		*)
			echo "${dir%/}: a package outside internal/{domain,app,adapters,ports,application}"
			status=1
			;;
		esac
	done
done
exit "$status"
