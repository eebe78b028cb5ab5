#!/usr/bin/env bash
# Fails when api/openapi.yaml makes a breaking change to /v0 compared with the document in
# the first parent commit (on main: the main branch before this change). Skips, saying
# so, when there is no such commit (first commit, shallow clone) or it has no document.
# Usage: tools/api-diff.sh OASDIFF_BINARY   (API_DIFF_BASE overrides the base, e.g. origin/main)
set -euo pipefail
oasdiff=$1
base=${API_DIFF_BASE:-HEAD^1}
cd "$(dirname "$0")/.."
if ! git rev-parse --verify -q "$base^{commit}" >/dev/null 2>&1; then
	echo "api-diff: skipped: no commit $base (first commit or shallow clone)"
	exit 0
fi
if ! git cat-file -e "$base:api/openapi.yaml" 2>/dev/null; then
	echo "api-diff: skipped: $base has no api/openapi.yaml"
	exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git show "$base:api/openapi.yaml" >"$tmp/base.yaml"
echo "api-diff: api/openapi.yaml against $base ($(git rev-parse --short "$base"))"
# --flatten-allof compares what allOf branches describe together, not branch by branch
# (a renamed component inside allOf is no change); ERR-level findings break clients,
# except the corrections tools/api-diff-accepted.txt lists (the document catching up with
# what the service always did).
"$oasdiff" breaking "$tmp/base.yaml" api/openapi.yaml --flatten-allof --match-path '^/v0/' --fail-on ERR \
	--err-ignore tools/api-diff-accepted.txt
