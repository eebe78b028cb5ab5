#!/usr/bin/env bash
# Tests deploy/kind/docker-wrapper.sh against a fake docker that prints its arguments:
# kind's node `run` and `exec --privileged` are rewritten where this host needs it, every
# other command passes through unchanged. Runs on any host (the expectations follow what
# `docker-wrapper.sh needed` says about this one).
#
#   deploy/kind/docker-wrapper_test.sh
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/docker" <<'EOF'
#!/bin/sh
for a in "$@"; do printf '[%s]' "$a"; done
echo
EOF
chmod +x "$tmp/docker"
export REAL_DOCKER="$tmp/docker" KIND_EMPTY_MODULES="$tmp/empty-modules"
wrapper="$here/docker-wrapper.sh"
fails=0
expect() { # expect NAME WANT GOT
	if [ "$2" != "$3" ]; then
		echo "FAIL $1:" >&2
		echo "  want $2" >&2
		echo "  got  $3" >&2
		fails=$((fails + 1))
	else
		echo "ok   $1"
	fi
}

lacks_res=0 lacks_mod=0
why="$("$wrapper" needed || true)"
[[ "$why" == *CAP_SYS_RESOURCE* ]] && lacks_res=1
[[ "$why" == */lib/modules* ]] && lacks_mod=1
echo "this host: ${why:-needs no wrapper}"

# kind's node run (the arguments that matter, in kind v0.33.0's order)
got="$("$wrapper" run --name c-control-plane --label io.x-k8s.kind.cluster=c --privileged \
	--security-opt seccomp=unconfined --volume /var --volume /lib/modules:/lib/modules:ro node:img)"
want="[run][--name][c-control-plane][--label][io.x-k8s.kind.cluster=c]"
if [ $lacks_res = 1 ]; then
	want+="[--cap-add=ALL][--cap-drop=SYS_RESOURCE][--security-opt][systempaths=unconfined][--device-cgroup-rule][a *:* rwm][--device][/dev/kmsg]"
else
	want+="[--privileged]"
fi
want+="[--security-opt][seccomp=unconfined][--volume][/var][--volume]"
if [ $lacks_mod = 1 ]; then want+="[$tmp/empty-modules:/lib/modules:ro]"; else want+="[/lib/modules:/lib/modules:ro]"; fi
want+="[node:img]"
expect "kind node run" "$want" "$got"
if [ $lacks_mod = 1 ]; then
	expect "empty modules directory made" yes "$([ -d "$tmp/empty-modules" ] && echo yes || echo no)"
fi

# a run that is not a kind node's: unchanged
got="$("$wrapper" run --privileged --volume /lib/modules:/lib/modules:ro other)"
expect "other run unchanged" "[run][--privileged][--volume][/lib/modules:/lib/modules:ro][other]" "$got"

# kind's exec into a node
got="$("$wrapper" exec --privileged -i c-control-plane ctr --namespace=k8s.io images import -)"
if [ $lacks_res = 1 ]; then
	want="[exec][-i][c-control-plane][ctr][--namespace=k8s.io][images][import][-]"
else
	want="[exec][--privileged][-i][c-control-plane][ctr][--namespace=k8s.io][images][import][-]"
fi
expect "kind exec" "$want" "$got"

# anything else passes through, arguments with spaces intact
got="$("$wrapper" ps -a --filter "label=io.x-k8s.kind.cluster=c" --format '{{.Names}} x')"
expect "ps unchanged" "[ps][-a][--filter][label=io.x-k8s.kind.cluster=c][--format][{{.Names}} x]" "$got"

[ $fails = 0 ] || { echo "$fails failed" >&2; exit 1; }
echo "all passed"
