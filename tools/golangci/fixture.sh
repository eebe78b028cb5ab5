#!/usr/bin/env bash
# fixture.sh GOLANGCI: proves the shape's rules bite. Runs golangci-lint (.golangci.yml) and
# layout.sh on testdata/services/topics, whose packages break each rule exactly once, and
# requires exactly the findings of testdata/expected.txt: every rule fires, once, and
# nothing else (no finding on the imports a layer may make, no type error).
set -euo pipefail
golangci="$1"
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/testdata/services/topics"
out="$(GOWORK=off "$golangci" run --allow-serial-runners --max-issues-per-linter=0 --max-same-issues=0 --config "$here/../../.golangci.yml" ./... 2>&1 || true)"
cd "$here/testdata"
got="$(
	{
		grep -E '^[^ ]+:[0-9]+:[0-9]+: ' <<<"$out" |
			sed -E "s#^.*(services/topics/[^:]*):[0-9]+:[0-9]+: (import '[^']*' is not allowed from list '[a-z]+').*\(depguard\)\$#\1: \2#"
		"$here/layout.sh" services/topics || true
	} | sort
)"
if ! diff -u expected.txt - <<<"$got"; then
	echo "$out" >&2
	echo "fixture.sh: the shape's rules no longer catch exactly the wrong imports of tools/golangci/testdata (- expected, + found; golangci-lint's output above)" >&2
	exit 1
fi
echo "fixture.sh: $(wc -l <expected.txt) findings, as expected (tools/golangci/testdata)"
