#!/usr/bin/env bash
# The kind loop behind `make kind-up`, `make e2e-kind` and `make kind-down`.
#
#   kind.sh up     create the cluster (deploy/kind/cluster.yaml), build every image, load
#                  the images into the cluster, install the chart with the in-chart
#                  PostgreSQL and Kafka, wait for the rollout and run `helm test`
#   kind.sh e2e    up, then port-forward the gateway (25001) and its admin API (25002), run
#                  the e2e/ suite against them (E2E_BASE_URL), and tear the cluster down
#   kind.sh down   delete the cluster
#
# Needs Docker and kubectl; helm and kind come from the Makefile ($HELM, $KIND).
# KEEP_CLUSTER=1 keeps the cluster after `e2e`; E2E_RUN narrows the suite (go test -run).
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
HELM="${HELM:-helm}"
KIND="${KIND:-kind}"
KUBECTL="${KUBECTL:-kubectl}"
cluster="${KIND_CLUSTER:-customer-api}"
context="kind-$cluster"
namespace="${NAMESPACE:-customer-api}"
release="${RELEASE:-customer-api}"
tag="${IMAGE_TAG:-kind-$(git rev-parse --short HEAD 2>/dev/null || echo dev)}"
chart=helm/customer-api
# A fresh admin token per run; the rest of the development secrets come from values-dev.yaml.
admin_token="${E2E_ADMIN_TOKEN:-kind-admin-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')}"
logs="$root/.cache/kind-logs"

deployables() {
	for f in deploy/docker/*.Dockerfile; do basename "$f" .Dockerfile; done
}

need() {
	for tool in "$@"; do
		command -v "$tool" >/dev/null || { echo "kind.sh: $tool is required" >&2; exit 1; }
	done
}

build_images() {
	local revision created
	revision="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
	created="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	for d in $(deployables); do
		echo "--- build customerapi/$d:$tag"
		DOCKER_BUILDKIT=1 docker build -f "deploy/docker/$d.Dockerfile" -t "customerapi/$d:$tag" \
			--build-arg VERSION="$tag" --build-arg REVISION="$revision" --build-arg CREATED="$created" .
	done
}

up() {
	need docker "$KUBECTL" "$HELM" "$KIND"
	if ! "$KIND" get clusters 2>/dev/null | grep -qx "$cluster"; then
		"$KIND" create cluster --name "$cluster" --config deploy/kind/cluster.yaml --wait 180s
	fi
	build_images
	local images=()
	for d in $(deployables); do images+=("customerapi/$d:$tag"); done
	"$KIND" load docker-image --name "$cluster" "${images[@]}"
	"$HELM" upgrade --install "$release" "$chart" --kube-context "$context" \
		--namespace "$namespace" --create-namespace \
		-f "$chart/values-dev.yaml" --set image.tag="$tag" --set secrets.adminToken="$admin_token" \
		--wait --timeout 10m
	"$KUBECTL" --context "$context" -n "$namespace" rollout status deployment --timeout 5m
	"$KUBECTL" --context "$context" -n "$namespace" rollout status statefulset --timeout 5m
	"$HELM" test "$release" --kube-context "$context" --namespace "$namespace" --logs --timeout 5m
}

down() {
	"$KIND" delete cluster --name "$cluster"
}

dump() {
	mkdir -p "$logs"
	echo "--- diagnostics in $logs"
	"$KUBECTL" --context "$context" -n "$namespace" get all,networkpolicies,pdb -o wide >"$logs/objects.txt" 2>&1 || true
	"$KUBECTL" --context "$context" -n "$namespace" describe pods >"$logs/pods.txt" 2>&1 || true
	"$KUBECTL" --context "$context" -n "$namespace" get events --sort-by=.lastTimestamp >"$logs/events.txt" 2>&1 || true
	for p in $("$KUBECTL" --context "$context" -n "$namespace" get pods -o name 2>/dev/null); do
		"$KUBECTL" --context "$context" -n "$namespace" logs "$p" --all-containers --prefix >"$logs/${p#pod/}.log" 2>&1 || true
	done
	tail -n 50 "$logs/events.txt" || true
}

wait_http() {
	for _ in $(seq 1 60); do
		curl -fsS -o /dev/null "$1" && return 0
		sleep 1
	done
	echo "kind.sh: $1 does not answer" >&2
	return 1
}

e2e() {
	need curl go
	local pids=() status=0
	cleanup() {
		if [ ${#pids[@]} -gt 0 ]; then kill "${pids[@]}" 2>/dev/null || true; fi
		[ "$status" -eq 0 ] || dump
		[ "${KEEP_CLUSTER:-}" = 1 ] || down
	}
	trap 'status=$?; cleanup' EXIT
	up
	"$KUBECTL" --context "$context" -n "$namespace" port-forward "service/$release-gateway" 25001:80 >/dev/null &
	pids+=($!)
	# The admin API has no public Service: forward to a gateway pod directly.
	"$KUBECTL" --context "$context" -n "$namespace" port-forward "deployment/$release-gateway" 25002:8081 >/dev/null &
	pids+=($!)
	wait_http http://127.0.0.1:25001/readyz
	wait_http http://127.0.0.1:25002/healthz
	(cd e2e && E2E_BASE_URL=http://127.0.0.1:25001 E2E_ADMIN_URL=http://127.0.0.1:25002 \
		E2E_ADMIN_TOKEN="$admin_token" go test -count=1 -timeout 20m ${E2E_RUN:+-run "$E2E_RUN"} ./...)
}

case "${1:-}" in
up) up ;;
e2e) e2e ;;
down) down ;;
*) echo "usage: $0 up|e2e|down" >&2; exit 2 ;;
esac
