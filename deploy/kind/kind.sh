#!/usr/bin/env bash
# The kind cluster `customer-api` behind `make kind-up`, `make kind-down`, `make kind-node`.
#
#   kind.sh up      the node image (cached: deploy/kind/node/build.sh), the internal Docker
#                   network, then the cluster (one control plane, one worker) unless it
#                   runs; waits until both nodes and the system pods are Ready; writes the
#                   kubeconfig to .cache/kind/kubeconfig (context kind-customer-api)
#   kind.sh down    delete the cluster and its network
#   kind.sh node    build the node image only (prints its reference)
#   kind.sh env     print `export KUBECONFIG=...` for the shell
#
# No packet may leave the machine, so:
# - the nodes sit on an internal Docker network ($KIND_NETWORK, made here before kind runs,
#   handed to kind with KIND_EXPERIMENTAL_DOCKER_NETWORK): Docker drops whatever would leave
#   it, and there is no NAT; one iptables rule (DOCKER-USER) lets the pods' own addresses
#   pass between the nodes, within the bridge;
# - CoreDNS answers the cluster's names only (its `forward` to the node's resolver goes);
#   the nodes' resolver is Docker's embedded DNS, which knows the nodes and, with no route,
#   sends nothing out;
# - the kubeconfig names the control plane by its address on that network, which the host
#   reaches through the network's bridge.
# On hosts that cannot run kind's --privileged nodes or lack /lib/modules, kind calls
# deploy/kind/docker-wrapper.sh as `docker`.
#
# Environment: KIND (the kind binary; default: the components' (.cache/kind/components.env),
# else `kind` on the PATH), KIND_CLUSTER (customer-api), KIND_NETWORK (customer-api-kind),
# KIND_NODE_IMAGE (skip the build and use this image), KIND_WAIT (seconds, 300),
# KIND_KUBECONFIG (.cache/kind/kubeconfig).
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
docker=/usr/bin/docker
cluster="${KIND_CLUSTER:-customer-api}"
network="${KIND_NETWORK:-customer-api-kind}"
wait_s="${KIND_WAIT:-300}"
state="$root/.cache/kind"
kubeconfig="${KIND_KUBECONFIG:-$state/kubeconfig}"
context="kind-$cluster"
cp_node="$cluster-control-plane"

prog=kind.sh
# shellcheck source=deploy/kind/lib.sh
. "$root/deploy/kind/lib.sh"

# kind_bin: $KIND, else the kind make kind-tools recorded (components.env), else the newest built.
kind_bin() {
	local recorded
	recorded="$(sed -n 's/^KIND=//p' "$state/components.env" 2>/dev/null || true)"
	tool KIND "${recorded:-$state/bin/kind-v0.33.0-*/kind} $state/bin/kind-v0.33.0-*/kind" "make kind-tools (deploy/kind/kind-tools.mk)"
}

# kind runs with the wrapper as `docker` where the host needs it.
kind_env() {
	docker_on_path "$state/docker-bin"
	export KIND_EXPERIMENTAL_DOCKER_NETWORK="$network"
}

ensure_network() {
	if "$docker" network inspect "$network" >/dev/null 2>&1; then
		[ "$("$docker" network inspect -f '{{.Internal}}' "$network")" = true ] ||
			die "Docker network $network exists and is not internal: remove it (docker network rm $network)"
		return
	fi
	log "creating the internal Docker network $network"
	"$docker" network create --driver bridge --internal \
		--opt com.docker.network.bridge.enable_ip_masquerade=false \
		--label org.customerapi.kind="$cluster" "$network" >/dev/null
}

# The network's bridge on the host.
bridge_name() {
	local name
	name="$("$docker" network inspect -f '{{index .Options "com.docker.network.bridge.name"}}' "$network")"
	[ -n "$name" ] || name="br-$("$docker" network inspect -f '{{.Id}}' "$network" | cut -c1-12)"
	echo "$name"
}

# Pods talk across nodes with their own addresses (kube-router routes the pod subnets, no
# tunnel). The host bridges those frames through iptables (br_netfilter), where Docker's
# rules for an internal network drop anything whose source or destination is outside the
# network's subnet, before its own rule that accepts traffic within the bridge. Accept what
# enters and leaves this one bridge first (DOCKER-USER): it never leaves the machine; what
# would go out through another interface is still dropped.
intra_network_rule() { # intra_network_rule -C|-I|-D
	local br
	br="$(bridge_name)"
	iptables -w "$1" DOCKER-USER -i "$br" -o "$br" -m comment --comment "kind $cluster: within $network" -j ACCEPT
}
allow_intra_network() {
	intra_network_rule -C 2>/dev/null || intra_network_rule -I
}

node_image() {
	if [ -n "${KIND_NODE_IMAGE:-}" ]; then
		echo "$KIND_NODE_IMAGE"
		return
	fi
	"$root/deploy/kind/node/build.sh"
}

running() {
	local k="$1"
	"$k" get clusters 2>/dev/null | grep -qx "$cluster" || return 1
	[ "$("$docker" inspect -f '{{.State.Running}}' "$cp_node" 2>/dev/null)" = true ]
}

# kubectl inside the control-plane node: the host needs none to bring the cluster up.
in_cp() { "$docker" exec -i "$cp_node" kubectl --kubeconfig /etc/kubernetes/admin.conf "$@"; }

# CoreDNS answers cluster.local (and the reverse zones) only: without `forward` it sends
# no query to the node's resolver, so no look-up of a name outside the cluster can leave.
coredns_local_only() {
	local corefile patched
	corefile="$(in_cp -n kube-system get configmap coredns -o jsonpath='{.data.Corefile}')"
	if ! grep -q '^[[:space:]]*forward ' <<<"$corefile"; then
		return
	fi
	# drop the forward plugin: one line or a { ... } block
	patched="$(awk '
		skip && /}/ { skip = 0; next }
		skip { next }
		/^[[:space:]]*forward / { if ($0 ~ /{[[:space:]]*$/) skip = 1; next }
		{ print }' <<<"$corefile")"
	grep -q 'kubernetes cluster.local' <<<"$patched" || die "unexpected CoreDNS Corefile: $corefile"
	log "CoreDNS: no forwarding out of the cluster"
	in_cp -n kube-system create configmap coredns --from-file=Corefile=/dev/stdin --dry-run=client -o yaml <<<"$patched" |
		in_cp -n kube-system replace -f - >/dev/null
	in_cp -n kube-system rollout restart deployment coredns >/dev/null
}

write_kubeconfig() {
	local k="$1" addr tmp
	addr="$("$docker" inspect -f "{{(index .NetworkSettings.Networks \"$network\").IPAddress}}" "$cp_node")"
	[ -n "$addr" ] || die "$cp_node has no address on $network"
	mkdir -p "$state"
	tmp="$(mktemp "$state/kubeconfig.XXXXXX")"
	"$k" get kubeconfig --name "$cluster" --internal >"$tmp"
	# the host reaches the node through the bridge, not by its container name
	sed -i "s#server: https://$cp_node:6443#server: https://$addr:6443#" "$tmp"
	grep -q "server: https://$addr:6443" "$tmp" || die "could not point the kubeconfig at $addr"
	chmod 600 "$tmp"
	mv "$tmp" "$kubeconfig"
}

# Pods not Running with every container ready, as "namespace/name status ready".
unready_pods() {
	in_cp get pods -A --no-headers 2>/dev/null |
		awk '$4 != "Completed" { split($3, r, "/"); if ($4 != "Running" || r[1] != r[2]) print $1 "/" $2, $4, $3 }'
}

wait_ready() {
	local deadline=$((SECONDS + wait_s)) nodes pods
	nodes="$("$docker" ps --filter "label=io.x-k8s.kind.cluster=$cluster" -q | wc -l)"
	log "waiting for $nodes nodes Ready"
	until [ "$(in_cp get nodes --no-headers 2>/dev/null | awk '$2 == "Ready"' | wc -l)" -eq "$nodes" ]; do
		[ $SECONDS -lt $deadline ] || { in_cp get nodes -o wide >&2 || true; die "nodes not Ready within ${wait_s}s"; }
		sleep 2
	done
	coredns_local_only
	log "waiting for the system pods (CNI, DNS, storage) Ready"
	# the add-ons kind applies: CoreDNS, the CNI's DaemonSet, local-path-provisioner
	until pods="$(in_cp get pods -A --no-headers 2>/dev/null)" &&
		grep -q coredns <<<"$pods" && grep -q local-path <<<"$pods" &&
		[ -z "$(unready_pods)" ] &&
		[ "$(in_cp -n kube-system get deployment coredns -o jsonpath='{.status.updatedReplicas}/{.status.readyReplicas}/{.spec.replicas}')" = 2/2/2 ]; do
		[ $SECONDS -lt $deadline ] || { in_cp get pods -A -o wide >&2 || true; die "system pods not Ready within ${wait_s}s"; }
		sleep 2
	done
}

up() {
	local start k image t0
	start=$SECONDS
	"$root/deploy/images/dockerd.sh" start
	k="$(kind_bin)"
	ensure_network
	kind_env
	t0=$SECONDS
	image="$(node_image)"
	log "node image $image ($((SECONDS - t0)) s)"
	if running "$k"; then
		log "cluster $cluster runs"
		allow_intra_network
	else
		if "$k" get clusters 2>/dev/null | grep -qx "$cluster"; then
			log "cluster $cluster exists but its control plane does not run: recreating it"
			"$k" delete cluster --name "$cluster"
		fi
		allow_intra_network
		t0=$SECONDS
		# kind's own kubeconfig merge goes to a scratch file; ours is written below.
		"$k" create cluster --name "$cluster" --image "$image" --config deploy/kind/cluster.yaml \
			--kubeconfig "$state/kind-admin-$cluster.kubeconfig" --wait 0s
		log "kind create cluster: $((SECONDS - t0)) s"
	fi
	wait_ready
	write_kubeconfig "$k"
	log "cluster $cluster Ready in $((SECONDS - start)) s; kubeconfig $kubeconfig (context $context)"
	echo "export KUBECONFIG=$kubeconfig"
}

down() {
	local k
	k="$(kind_bin)"
	kind_env
	"$k" delete cluster --name "$cluster" --kubeconfig "$state/kind-admin-$cluster.kubeconfig"
	if "$docker" network inspect "$network" >/dev/null 2>&1; then
		while intra_network_rule -C 2>/dev/null; do intra_network_rule -D; done
		"$docker" network rm "$network" >/dev/null
	fi
	rm -f "$kubeconfig"
}

case "${1:-}" in
up) up ;;
down) down ;;
node) "$root/deploy/images/dockerd.sh" start && node_image ;;
env) echo "export KUBECONFIG=$kubeconfig" ;;
*) echo "usage: kind.sh up|down|node|env" >&2; exit 2 ;;
esac
