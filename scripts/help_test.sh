#!/usr/bin/env bash
# The test of `make help` (scripts/help.awk), run by `make test` (help-check): the targets
# come in the groups a newcomer looks for, every documented target is listed exactly
# once, none outside a group, and the descriptions start in one column.
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(make --no-print-directory help)"
fail=0
bad() { echo "help_test: $*" >&2; fail=1; }

want="Run|Test|API and clients|Kubernetes|Operations"
got="$(grep -E '^[A-Z]' <<<"$out" | grep -v '^Usage:' | paste -sd'|')"
[ "$got" = "$want" ] || bad "groups are \"$got\", want \"$want\" (a target without a ##@ group above it lands in Other)"

# Every target with a `## description` in the Makefile or a file it includes, once.
mapfile -t files < <(echo Makefile; sed -n 's/^include //p' Makefile)
documented="$(grep -hE '^[a-zA-Z0-9_-]+:.*## ' "${files[@]}" | cut -d: -f1 | sort)"
listed="$(grep -E '^  [a-zA-Z0-9_-]' <<<"$out" | awk '{print $1}' | sort)"
[ "$documented" = "$listed" ] || bad "listed targets differ from the documented ones: $(diff <(echo "$documented") <(echo "$listed") | grep '^[<>]' | paste -sd' ')"

# One column: the description starts at the same offset on every line.
cols="$(grep -E '^  [a-zA-Z0-9_-]' <<<"$out" | awk '{ match($0, /^  [^ ]+ +/); print RLENGTH }' | sort -u)"
[ "$(wc -l <<<"$cols")" -eq 1 ] || bad "descriptions start in columns $(paste -sd, <<<"$cols"): a target name is longer than help.awk's width"
grep -q $'\033' <<<"$out" && bad "colour codes in output that is not a terminal"

[ "$fail" -eq 0 ] && echo "help_test: $(wc -l <<<"$listed") targets in 5 groups, one column"
exit "$fail"
