#!/usr/bin/env bash
# The `docker` kind calls on hosts that cannot run its node containers as they are:
# deploy/kind/kind.sh puts a link named `docker` to this script first on kind's PATH only
# when `docker-wrapper.sh needed` says so. Every command goes to the real client
# ($REAL_DOCKER, default /usr/bin/docker) unchanged, except `docker run` of a kind node
# (the label io.x-k8s.kind.cluster), whose arguments change where the host needs it:
#
# - The host's capability bounding set lacks CAP_SYS_RESOURCE: `--privileged` cannot start
#   (Docker 20.10 asks runc for every capability: "unable to apply caps: operation not
#   permitted"). It becomes every capability but that one, unconfined /proc and /sys paths,
#   access to every device and /dev/kmsg (the kubelet reads it). The node's entrypoint
#   remounts the cgroup mounts read-write, and its containerd restricts OOM scores
#   (deploy/kind/node/files).
# - The host has no /lib/modules (kind mounts it read-only): an empty directory
#   ($KIND_EMPTY_MODULES, default .cache/kind/empty-modules) instead, so Docker does not
#   create /lib/modules on the host.
# - `docker exec --privileged` (kind runs every command in a node so) fails like `run`
#   where CAP_SYS_RESOURCE is missing: the flag goes, the process gets the node's
#   capabilities.
#
# - kind's network is internal (deploy/kind/kind.sh): no published ports, so kind's question
#   for the API server's published endpoint gets the control plane's address on it.
#
#   docker-wrapper.sh needed     exit 0 when this host needs the wrapper (prints why)
#   docker-wrapper.sh ARGS...    as docker ARGS...
set -euo pipefail

real="${REAL_DOCKER:-/usr/bin/docker}"
root="$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)"
empty_modules="${KIND_EMPTY_MODULES:-$root/.cache/kind/empty-modules}"

# CAP_SYS_RESOURCE is capability 24.
lacks_sys_resource() {
	local bnd
	bnd="$(awk '/^CapBnd:/ {print $2}' /proc/self/status)"
	(((0x$bnd >> 24 & 1) == 0))
}
lacks_modules() { [ ! -d /lib/modules ]; }
# kind's network (KIND_EXPERIMENTAL_DOCKER_NETWORK) is internal: Docker publishes no ports.
internal_network() {
	[ -n "${KIND_EXPERIMENTAL_DOCKER_NETWORK:-}" ] &&
		[ "$("$real" network inspect -f '{{.Internal}}' "$KIND_EXPERIMENTAL_DOCKER_NETWORK" 2>/dev/null)" = true ]
}

if [ "${1:-}" = needed ]; then
	why=()
	if lacks_sys_resource; then why+=("the capability bounding set lacks CAP_SYS_RESOURCE"); fi
	if lacks_modules; then why+=("there is no /lib/modules"); fi
	if internal_network; then why+=("kind's network $KIND_EXPERIMENTAL_DOCKER_NETWORK is internal"); fi
	[ ${#why[@]} -gt 0 ] || exit 1
	(IFS=';'; echo "${why[*]}")
	exit 0
fi

is_kind_node_run() {
	[ "${1:-}" = run ] || return 1
	local a
	for a in "$@"; do
		case "$a" in io.x-k8s.kind.cluster=* | --label=io.x-k8s.kind.cluster=*) return 0 ;; esac
	done
	return 1
}

# kind asks for the API server's published endpoint, first through Docker Desktop's label
# desktop.docker.io/ports/6443/tcp, then the port mapping; on an internal network there is
# no mapping (kind create fails at its last step, the kubeconfig). Answer the label's
# question with the node's address on that network, which the host reaches directly.
if [ "${1:-}" = inspect ] && [ $# -eq 4 ] && [ "$2" = --format ] &&
	[[ "$3" =~ desktop\.docker\.io/ports/([0-9]+)/tcp ]]; then
	port="${BASH_REMATCH[1]}"
	answer="$("$real" "$@")"
	if [ -z "$answer" ] && internal_network &&
		[ -n "$("$real" inspect -f '{{index .Config.Labels "io.x-k8s.kind.cluster"}}' "$4" 2>/dev/null)" ]; then
		addr="$("$real" inspect -f "{{(index .NetworkSettings.Networks \"$KIND_EXPERIMENTAL_DOCKER_NETWORK\").IPAddress}}" "$4")"
		[ -n "$addr" ] && answer="$addr:$port"
	fi
	echo "$answer"
	exit 0
fi

# kind runs every command in a node as `docker exec --privileged` (kind create, kind load):
# that fails the same way; without the flag the process has the node's own capabilities,
# which are all but CAP_SYS_RESOURCE here.
if [ "${1:-}" = exec ] && lacks_sys_resource; then
	args=()
	for a in "$@"; do
		[ "$a" = --privileged ] || args+=("$a")
	done
	exec "$real" "${args[@]}"
fi

if ! is_kind_node_run "$@"; then
	exec "$real" "$@"
fi

args=()
for a in "$@"; do
	if [ "$a" = --privileged ] && lacks_sys_resource; then
		args+=(--cap-add=ALL --cap-drop=SYS_RESOURCE --security-opt systempaths=unconfined
			--device-cgroup-rule 'a *:* rwm' --device /dev/kmsg)
	elif [[ "$a" == /lib/modules:/lib/modules* || "$a" == --volume=/lib/modules:* ]] && lacks_modules; then
		mkdir -p "$empty_modules"
		a="${a/\/lib\/modules:/$empty_modules:}"
		args+=("$a")
	else
		args+=("$a")
	fi
done
exec "$real" "${args[@]}"
