#!/usr/bin/env bash
# `make test-kind`: the platform on the kind cluster of `make kind-up`, with real pods.
#
#   test-kind.sh          every phase below, in order; stops at the first that fails
#   test-kind.sh clean    uninstall the release and delete its namespace
#   test-kind.sh memory   report the nodes' memory now (phase 7 alone)
#
# Before the cluster phase: the e2e test binaries are built (go test -c), so nothing is
# downloaded later, and
#   1 images   every image the chart needs built (deploy/images/images.sh, tag $IMAGE_TAG)
#              and loaded into the nodes (kind load docker-image), plus the gateway's image
#              under a second tag for the rolling upgrade.
# Then, inside deploy/kind/capture.sh start ... stop (every packet on the host's outward
# interface is counted: it must see 0), with GOPROXY=off:
#   2 chart    a previous release removed; `helm install --wait` of values-dev.yaml +
#              values-kind.yaml into namespace customer-api (the gateway a NodePort on the
#              nodes' network); every pod Running, every container Ready through a
#              readinessProbe it has; `helm test`
#   3 e2e      the e2e/ suite, unchanged, against the gateway's NodePort (its admin API
#              through kubectl port-forward; webhook receivers on the host's address on the
#              nodes' network, E2E_RECEIVER_HOST)
#   4 faults   e2e/kind: a service's pod and the PostgreSQL pod deleted under writes, the
#              gateway rolled to a new image tag by `helm upgrade` under reads (numbers on
#              the FAULT lines)
#   5 policy   e2e/kind: a pod without the gateway's labels cannot reach a service's port
#              (kube-router enforces NetworkPolicies)
#   6 upgrade  e2e/kind: `helm upgrade` rotating a chart-made Secret rolls every
#              Deployment's pods (checksum/secret), `helm rollback` rolls them back; the
#              StatefulSets' pods stay the same
#   7 memory   the nodes' memory (docker stats, the node containers' cgroups, `free` in the
#              nodes and on the host), and the peak sampled during phases 2-6: must be
#              under $KIND_MEMORY_BOUND_GIB (24) GiB
#   8 uninstall `helm uninstall` leaves only the PersistentVolumeClaims, found by the
#              release's label as docs/kubernetes.md says, then deleted with that label
# Each phase prints its duration; on a failure, the pods' states, logs and the events go
# to .cache/kind-logs. The summary (phase times, FAULT/POLICY/UPGRADE lines, memory, the
# capture's count) is printed at the end and kept in .cache/kind-logs/summary.txt.
#
# Environment: IMAGE_TAG (dev), HELM, KUBECTL, KIND (binaries; found in .cache when unset),
# KUBECONFIG (.cache/kind/kubeconfig), KIND_CLUSTER (customer-api), KIND_NETWORK
# (customer-api-kind), KIND_NODEPORT (31580: the gateway's NodePort), E2E_RUN (go test
# -run of the e2e phase), KIND_SKIP_IMAGES=1 (the images are built and loaded already),
# KIND_MEMORY_BOUND_GIB (24), KIND_PHASES (the phases to run, default every one: "images
# chart e2e faults policy upgrade memory uninstall"; a rerun on the installed release may
# leave out images and chart, and leaves out uninstall to keep it).
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
docker=/usr/bin/docker
cluster="${KIND_CLUSTER:-customer-api}"
network="${KIND_NETWORK:-customer-api-kind}"
namespace=customer-api
release=customer-api
chart=helm/customer-api
tag="${IMAGE_TAG:-dev}"
roll_tag="$tag-roll"
nodeport="${KIND_NODEPORT:-31580}"
bound_gib="${KIND_MEMORY_BOUND_GIB:-24}"
export KUBECONFIG="${KUBECONFIG:-$root/.cache/kind/kubeconfig}"
logs="$root/.cache/kind-logs"
work="$root/.cache/kind-test"
summary="$logs/summary.txt"

prog=test-kind
# shellcheck source=deploy/kind/lib.sh
. "$root/deploy/kind/lib.sh"

tools() {
	HELM="$(tool HELM "$root/.cache/bin/helm-*/helm" "make helm")"
	KUBECTL="$(tool KUBECTL "$root/.cache/k8s/kubernetes-*/kubectl $root/.cache/kind/bin/*/kubectl" "make cluster-tools")"
	KIND="$(tool KIND "$root/.cache/kind/bin/kind-*/kind" "make kind-tools")"
	export HELM KUBECTL KIND
	docker_on_path "$work/bin"
}

k() { "$KUBECTL" --namespace "$namespace" "$@"; }
h() { "$HELM" --namespace "$namespace" "$@"; }

# --- phases -------------------------------------------------------------------------

phase_names=()
phase_times=()
current=""
current_t0=0
# phase NAME FUNCTION: runs it (under set -e: its first failing command ends the run, and
# finish dumps the cluster's state), then prints and records its duration.
phase() {
	current="$1"
	current_t0=$SECONDS
	shift
	echo "=== phase $current"
	"$@"
	phase_names+=("$current")
	phase_times+=("$((SECONDS - current_t0))")
	echo "=== phase $current: $((SECONDS - current_t0)) s"
	current=""
}

dump() {
	mkdir -p "$logs"
	log "diagnostics in $logs"
	k get all,networkpolicies,pdb,pvc -o wide >"$logs/objects.txt" 2>&1 || true
	k describe pods >"$logs/pods.txt" 2>&1 || true
	k get events --sort-by=.lastTimestamp >"$logs/events.txt" 2>&1 || true
	"$KUBECTL" get pods -A -o wide >"$logs/all-pods.txt" 2>&1 || true
	local p
	for p in $(k get pods -o name 2>/dev/null); do
		k logs "$p" --all-containers --prefix >"$logs/${p#pod/}.log" 2>&1 || true
		k logs "$p" --all-containers --prefix --previous >"$logs/${p#pod/}.previous.log" 2>/dev/null || rm -f "$logs/${p#pod/}.previous.log"
	done
	k get pods -o wide >&2 || true
	tail -n 30 "$logs/events.txt" >&2 || true
}

prepare() {
	mkdir -p "$work" "$logs"
	rm -f "$summary" "$logs"/*.log "$logs"/*.txt
	tools
	"$KUBECTL" get nodes >/dev/null 2>&1 || die "no cluster at $KUBECONFIG: make kind-up"
	node_ip="$("$docker" inspect -f "{{(index .NetworkSettings.Networks \"$network\").IPAddress}}" "$cluster-control-plane")"
	[ -n "$node_ip" ] || die "$cluster-control-plane has no address on $network"
	# The host's address on the nodes' network: the pods reach the tests' webhook
	# receivers there (the CNI masquerades their traffic to the node's address).
	receiver_host="$("$docker" network inspect -f '{{range .IPAM.Config}}{{.Gateway}}{{end}}' "$network")"
	if [ -z "$receiver_host" ]; then
		local bridge
		bridge="br-$("$docker" network inspect -f '{{.Id}}' "$network" | cut -c1-12)"
		receiver_host="$(ip -4 -o addr show dev "$bridge" | awk '{sub(/\/.*/, "", $4); print $4; exit}')"
	fi
	[ -n "$receiver_host" ] || die "no address of this host on $network"
	base="http://$node_ip:$nodeport"
	admin_port=""
	admin_token="kind-admin-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
	log "building the test binaries (before the capture: nothing may be downloaded later)"
	local t0=$SECONDS
	(cd e2e && nice go test -c -o "$work/e2e.test" . && nice go test -c -o "$work/kind.test" ./kind)
	log "test binaries built in $((SECONDS - t0)) s"
}

images() {
	if [ "${KIND_SKIP_IMAGES:-}" = 1 ]; then
		log "KIND_SKIP_IMAGES=1: using the images loaded already"
	else
		IMAGE_TAG="$tag" deploy/images/images.sh
	fi
	local refs=() gateway=""
	mapfile -t refs < <(IMAGE_TAG="$tag" deploy/images/images.sh list)
	[ "${#refs[@]}" -gt 0 ] || die "deploy/images/images.sh list printed no image"
	local r
	for r in "${refs[@]}"; do
		"$docker" image inspect "$r" >/dev/null 2>&1 || die "image $r is missing (deploy/images/images.sh)"
		case "$r" in */gateway:"$tag") gateway="$r" ;; esac
	done
	[ -n "$gateway" ] || die "no gateway image with tag $tag among: ${refs[*]}"
	# The rolling upgrade of phase 4 needs the gateway under another tag.
	"$docker" tag "$gateway" "${gateway%:*}:$roll_tag"
	refs+=("${gateway%:*}:$roll_tag")
	printf '%s\n' "${refs[@]}" >"$work/images.txt"
	log "loading ${#refs[@]} images into the nodes"
	"$KIND" load docker-image --name "$cluster" "${refs[@]}"
}

clean() {
	if h status "$release" >/dev/null 2>&1; then
		log "removing the previous release"
		h uninstall "$release" --wait --timeout 5m
	fi
	if "$KUBECTL" get namespace "$namespace" >/dev/null 2>&1; then
		"$KUBECTL" delete namespace "$namespace" --wait=true --timeout=5m
	fi
}

chart() {
	clean
	h install "$release" "$chart" --create-namespace \
		-f "$chart/values-dev.yaml" -f "$chart/values-kind.yaml" \
		--set image.tag="$tag" --set secrets.adminToken="$admin_token" \
		--set gateway.service.type=NodePort --set publicBaseURL="$base" \
		--wait --timeout 10m
	# Pin the gateway's NodePort, which publicBaseURL names (the chart does not set it;
	# later upgrades leave a field they never set as it is).
	local svc
	svc="$(k get service -l "app.kubernetes.io/instance=$release,app.kubernetes.io/component=gateway" \
		-o jsonpath='{range .items[?(@.spec.type=="NodePort")]}{.metadata.name}{end}')"
	[ -n "$svc" ] || die "no NodePort Service of the gateway"
	k patch service "$svc" --type json \
		-p "[{\"op\": \"replace\", \"path\": \"/spec/ports/0/nodePort\", \"value\": $nodeport}]" >/dev/null
	[ "$(k get service "$svc" -o jsonpath='{.spec.ports[0].nodePort}')" = "$nodeport" ] ||
		die "the gateway's Service did not take NodePort $nodeport"
	check_pods
	# (no --logs: the hook deletes its pod once it succeeded)
	h test "$release" --timeout 5m
	wait_http "$base/readyz"
}

# Every pod Running with every container Ready, and every container has a readinessProbe
# (so Ready means its probe passed).
check_pods() {
	k get pods -o wide
	local bad
	bad="$(k get pods -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.status.phase}{range .status.containerStatuses[*]}{" "}{.name}={.ready}{end}{"\n"}{end}' |
		awk '{ ok = ($2 == "Running"); for (i = 3; i <= NF; i++) if ($i !~ /=true$/) ok = 0; if (NF < 3 || !ok) print }')"
	[ -z "$bad" ] || { log "pods not Running and Ready:"; echo "$bad" >&2; return 1; }
	bad="$(k get pods -o jsonpath='{range .items[*]}{range .spec.containers[*]}{.name}{" "}{.readinessProbe.periodSeconds}{"\n"}{end}{end}' |
		awk 'NF < 2')"
	[ -z "$bad" ] || { log "containers without a readinessProbe: $bad"; return 1; }
	log "$(k get pods --no-headers | wc -l) pods Running, every container Ready through its readinessProbe"
}

wait_http() {
	local i
	for i in $(seq 1 60); do
		curl -fsS -o /dev/null --max-time 5 "$1" && return 0
		sleep 1
	done
	log "$1 does not answer"
	return 1
}

# The admin API has no public Service and its NetworkPolicy admits no one: reach it
# through kubectl port-forward (which enters the pod itself), restarted per phase since
# it follows one pod.
forward_pid=""
forward_admin() {
	stop_forward
	# a free local port, which kubectl picks and names in its first line
	# kubectl itself in the background (not through k, whose subshell would keep it alive
	# after a kill of $!)
	"$KUBECTL" --namespace "$namespace" port-forward --address 127.0.0.1 "service/$release-gateway-admin" ":8081" \
		>"$logs/port-forward.log" 2>&1 &
	forward_pid=$!
	local i
	admin_port=""
	for i in $(seq 1 100); do
		admin_port="$(sed -n 's/^Forwarding from 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$logs/port-forward.log" | head -n 1)"
		[ -z "$admin_port" ] || break
		kill -0 "$forward_pid" 2>/dev/null || break
		sleep 0.1
	done
	[ -n "$admin_port" ] || { cat "$logs/port-forward.log" >&2; log "kubectl port-forward to the admin API did not start"; return 1; }
	wait_http "http://127.0.0.1:$admin_port/healthz"
}
stop_forward() {
	if [ -n "$forward_pid" ]; then
		kill "$forward_pid" 2>/dev/null || true
		wait "$forward_pid" 2>/dev/null || true
		forward_pid=""
	fi
}

test_env() {
	env E2E_BASE_URL="$base" E2E_ADMIN_URL="http://127.0.0.1:$admin_port" E2E_ADMIN_TOKEN="$admin_token" \
		E2E_RECEIVER_HOST="$receiver_host" KIND_NAMESPACE="$namespace" KIND_RELEASE="$release" \
		KIND_CHART="$root/$chart" KIND_ROLL_TAG="$roll_tag" HELM="$HELM" KUBECTL="$KUBECTL" \
		E2E_REQUIRE_TS=1 E2E_REQUIRE_CHROMIUM=1 GOPROXY=off GOTOOLCHAIN=local "$@"
}

e2e() {
	forward_admin
	local out="$logs/e2e.txt" status=0
	(cd e2e && test_env "$work/e2e.test" -test.count=1 -test.timeout 20m -test.v ${E2E_RUN:+-test.run "$E2E_RUN"}) >"$out" 2>&1 || status=$?
	stop_forward
	local pass skip fail
	pass="$(grep -c '^--- PASS' "$out" || true)"
	skip="$(grep -c '^--- SKIP' "$out" || true)"
	fail="$(grep -c '^--- FAIL' "$out" || true)"
	echo "e2e: $pass passed, $fail failed, $skip skipped (they need the local process stack: its PIDs, its broker, killing its processes; e2e/kind holds their cluster counterparts) - $out" | tee -a "$summary"
	if [ "$status" -ne 0 ]; then
		grep -B2 -A25 '^--- FAIL' "$out" | head -n 200 >&2 || tail -n 100 "$out" >&2
		return "$status"
	fi
}

# kind_tests NAME REGEXP: the e2e/kind tests matching REGEXP; their FAULT, POLICY and
# UPGRADE lines go to the summary.
kind_tests() {
	local name="$1" run="$2" out="$logs/$1.txt" status=0
	forward_admin
	(cd e2e/kind && test_env "$work/kind.test" -test.count=1 -test.timeout 20m -test.v -test.run "$run") >"$out" 2>&1 || status=$?
	stop_forward
	grep -E '^(FAULT|POLICY|UPGRADE) ' "$out" | tee -a "$summary" || true
	grep -E '^(--- |ok|FAIL|PASS)' "$out" || true
	if grep -q '^--- SKIP' "$out"; then
		log "$name: a test skipped"
		status=1
	fi
	if [ "$status" -ne 0 ]; then
		tail -n 80 "$out" >&2
		return 1
	fi
}

faults() { kind_tests faults '^TestFault'; }
policy() { kind_tests policy '^TestNetworkPolicy'; }
upgrade() { kind_tests upgrade '^TestHelmUpgradeAndRollback'; }

# Memory: a sampler runs from phase 2 to 6 (the nodes' use with the tests running);
# phase 7 reports it with the state at rest.
node_ids() { "$docker" ps -q --filter "label=io.x-k8s.kind.cluster=$cluster"; }
# nodes_mib prints the sum of the node containers' memory use (docker stats), in MiB.
nodes_mib() {
	# shellcheck disable=SC2046 # one argument per container
	"$docker" stats --no-stream --format '{{.MemUsage}}' $(node_ids) |
		awk '{ v = $1; u = v; sub(/^[0-9.]+/, "", u); sub(/[A-Za-z]+$/, "", v)
			f = (u == "GiB") ? 1024 : (u == "MiB") ? 1 : (u == "KiB") ? 1 / 1024 : 1 / 1048576
			s += v * f } END { printf "%.0f", s }'
}
sampler_pid=""
start_sampler() {
	: >"$work/memory-samples.txt"
	(
		while :; do
			echo "$(date +%s) $(nodes_mib)" >>"$work/memory-samples.txt"
			sleep 10
		done
	) &
	sampler_pid=$!
}
stop_sampler() {
	if [ -n "$sampler_pid" ]; then
		kill "$sampler_pid" 2>/dev/null || true
		wait "$sampler_pid" 2>/dev/null || true
		sampler_pid=""
	fi
}

memory() {
	stop_sampler
	local id name peak now_mib
	echo "node containers (docker stats: usage without the page cache):"
	# shellcheck disable=SC2046 # one argument per container
	"$docker" stats --no-stream --format '  {{.Name}}: {{.MemUsage}} ({{.MemPerc}}), CPU {{.CPUPerc}}' $(node_ids)
	local full cg
	for id in $(node_ids); do
		name="$("$docker" inspect -f '{{.Name}}' "$id")"
		full="$("$docker" inspect -f '{{.Id}}' "$id")"
		# the node container's cgroup (v1 with Docker's cgroupfs or systemd driver, or v2)
		for cg in "/sys/fs/cgroup/memory/docker/$full" "/sys/fs/cgroup/memory/system.slice/docker-$full.scope" \
			"/sys/fs/cgroup/system.slice/docker-$full.scope" "/sys/fs/cgroup/docker/$full"; do
			if [ -f "$cg/memory.usage_in_bytes" ]; then
				echo "${name#/}: cgroup memory.usage_in_bytes $(($(cat "$cg/memory.usage_in_bytes") / 1048576)) MiB," \
					"rss $(awk '$1 == "total_rss" { print int($2 / 1048576) }' "$cg/memory.stat") MiB," \
					"max $(($(cat "$cg/memory.max_usage_in_bytes") / 1048576)) MiB"
				break
			elif [ -f "$cg/memory.current" ]; then
				echo "${name#/}: cgroup memory.current $(($(cat "$cg/memory.current") / 1048576)) MiB," \
					"peak $(($(cat "$cg/memory.peak" 2>/dev/null || echo 0) / 1048576)) MiB"
				break
			fi
		done
		echo "${name#/}: free -m inside the node (the host's memory, seen from the node):"
		"$docker" exec "$id" sh -c 'free -m 2>/dev/null || head -n 3 /proc/meminfo' | sed 's/^/  /'
	done
	echo "host: free -m"
	free -m | sed 's/^/  /'
	now_mib="$(nodes_mib)"
	[ -s "$work/memory-samples.txt" ] || echo "$(date +%s) $now_mib" >"$work/memory-samples.txt"
	peak="$(awk 'max < $2 { max = $2 } END { print max + 0 }' "$work/memory-samples.txt")"
	echo "MEMORY nodes now ${now_mib} MiB; peak ${peak} MiB ($(wc -l <"$work/memory-samples.txt") samples, every 10 s from phase 2); bound ${bound_gib} GiB" |
		tee -a "$summary"
	[ "$peak" -gt 0 ] || { log "no memory sample was taken"; return 1; }
	if [ "$peak" -ge $((bound_gib * 1024)) ] || [ "$now_mib" -ge $((bound_gib * 1024)) ]; then
		log "the nodes use more than $bound_gib GiB"
		return 1
	fi
}

capture_on=""
# uninstall removes the release: what stays is exactly its PersistentVolumeClaims (Helm
# never deletes a StatefulSet's claims), which the release's label finds and deletes.
uninstall() {
	local sel="app.kubernetes.io/instance=$release" claims left after
	claims="$(k get pvc -l "$sel" -o name | sort)"
	[ -n "$claims" ] || die "the release has no PersistentVolumeClaim labelled $sel"
	h uninstall "$release" --wait --timeout 5m
	left="$(k get deployments,statefulsets,services,configmaps,secrets,serviceaccounts,networkpolicies,poddisruptionbudgets,roles,rolebindings \
		-l "$sel" -o name)" # an error fails the phase: an empty answer must mean nothing is left
	[ -z "$left" ] || die "left after helm uninstall: $(echo "$left" | paste -sd' ')"
	after="$(k get pvc -l "$sel" -o name | sort)"
	[ "$after" = "$claims" ] || die "PersistentVolumeClaims before helm uninstall: $claims; after: $after"
	k delete pvc -l "$sel" --wait --timeout 2m >/dev/null
	[ -z "$(k get pvc -l "$sel" -o name)" ] || die "PersistentVolumeClaims labelled $sel remain after deleting them by label"
	echo "UNINSTALL helm uninstall left only $(echo "$claims" | wc -l) PersistentVolumeClaims ($(echo "$claims" | sed 's|.*/||' | paste -sd' ')), deleted by the label $sel" |
		tee -a "$summary"
}

finish() {
	local status=$?
	stop_forward
	stop_sampler
	if [ -n "$current" ]; then
		echo "=== phase $current FAILED after $((SECONDS - current_t0)) s" | tee -a "$summary"
		dump
		[ "$status" -ne 0 ] || status=1
	fi
	if [ -n "$capture_on" ]; then
		capture_on=""
		deploy/kind/capture.sh stop | tee -a "$summary" || status=1
	fi
	if [ ${#phase_names[@]} -gt 0 ]; then
		echo "=== summary (also in $summary)"
		local i
		for i in "${!phase_names[@]}"; do
			echo "phase ${phase_names[$i]}: ${phase_times[$i]} s"
		done | tee -a "$summary"
		grep -v '^phase [a-z0-9]*: [0-9]* s$' "$summary" || true
	fi
	exit "$status"
}

# wanted NAME: whether $KIND_PHASES (default: every phase) names the phase.
wanted() { [[ " ${KIND_PHASES:-images chart e2e faults policy upgrade memory uninstall} " == *" $1 "* ]]; }

all() {
	trap finish EXIT
	prepare
	if wanted images; then phase images images; fi
	if ! wanted chart; then
		# the release installed before: its admin token
		admin_token="$(h get values "$release" -o json | sed -n 's/.*"adminToken":"\([^"]*\)".*/\1/p')"
		[ -n "$admin_token" ] || die "KIND_PHASES leaves out chart, and no release with an admin token is installed"
	fi
	deploy/kind/capture.sh start
	capture_on=1
	local t0=$SECONDS name
	start_sampler
	for name in chart e2e faults policy upgrade memory uninstall; do
		if wanted "$name"; then
			phase "$name" "$name"
		elif [ "$name" != memory ]; then
			log "phase $name skipped (KIND_PHASES)"
		fi
	done
	echo "phases 2-7 (inside the capture): $((SECONDS - t0)) s" | tee -a "$summary"
	capture_on=""
	deploy/kind/capture.sh stop | tee -a "$summary"
}

case "${1:-all}" in
all) all ;;
clean) tools && clean ;;
memory) mkdir -p "$work" "$logs" && rm -f "$work/memory-samples.txt" && memory ;;
*) echo "usage: test-kind.sh [all|clean|memory]" >&2; exit 2 ;;
esac
