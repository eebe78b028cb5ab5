#!/usr/bin/env bash
# The skaffold dev loop on the kind cluster of `make kind-up` (skaffold.yaml, profile kind),
# behind `make dev` and `make test-devloop`.
#
#   devloop.sh dev    skaffold dev -p kind: every image built by deploy/images/images.sh
#                     (offline, local base images), loaded into the nodes, the chart
#                     deployed into customer-api-dev, the gateway forwarded to
#                     127.0.0.1:25001; a change rebuilds and redeploys what it touches.
#                     Ctrl-C uninstalls the release.
#   devloop.sh test   the loop's test: skaffold's own reading of the kind profile checked
#                     (deploy/chartcheck), `skaffold dev -p kind` started, the first deploy
#                     awaited, the gateway's /docs page title changed in
#                     gateway/internal/docs/docs.go, the new answer awaited over HTTP on the
#                     gateway's NodePort, the file reverted (always: a trap, and at the next
#                     start if a run was killed), the old answer awaited, skaffold stopped
#                     (the release uninstalled). Prints the time from the change to the new
#                     answer, from the revert to the old one, and the whole test's.
#   devloop.sh build  skaffold build -p kind: every image as `dev` builds it, into skaffold's
#                     cache (no cluster needed: the first `dev` then finds them built)
#   devloop.sh env    print the environment and arguments skaffold runs with
#
# skaffold never phones home: its update check is off (flag and global config) and its
# global config (.cache/devloop/skaffold-config.yaml, not ~/.skaffold) sets collect-metrics
# false, so it neither prompts for nor sends usage data; helm runs with a private home.
# File watching polls the artifacts' dependencies (--trigger=polling): skaffold's default
# watcher would watch the whole tree, .cache/ (Docker's data root) included.
#
# Environment: SKAFFOLD, HELM, KIND, KUBECTL (binaries; found in .cache when unset: make
# skaffold, make helm, make kind-up build them), KUBECONFIG (default .cache/kind/kubeconfig),
# DEVLOOP_TIMEOUT (seconds from a change to its answer, default 300), DEVLOOP_START_TIMEOUT
# (seconds for the first build and deploy, default 1200).
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
cluster="${KIND_CLUSTER:-customer-api}"
context="kind-$cluster"
namespace=customer-api-dev
release=customer-api
state="$root/.cache/devloop"
export KUBECONFIG="${KUBECONFIG:-$root/.cache/kind/kubeconfig}"
change_timeout="${DEVLOOP_TIMEOUT:-300}"
start_timeout="${DEVLOOP_START_TIMEOUT:-1200}"
# The change the test makes: the /docs page's title, served by the gateway alone.
target=gateway/internal/docs/docs.go
marker='<title>Customer API reference</title>'

prog=devloop
# shellcheck source=deploy/kind/lib.sh
. "$root/deploy/kind/lib.sh"

# setup finds the tools and prepares skaffold's environment: a bin directory first on the
# PATH with helm, kubectl, kind and docker (skaffold calls them by name), its global config
# and caches under .cache/devloop. `setup no-cluster` is enough for builds.
setup() {
	SKAFFOLD="$(tool SKAFFOLD "$root/.cache/k8s/skaffold-*/skaffold" "make skaffold")"
	HELM="$(tool HELM "$root/.cache/bin/helm-*/helm" "make helm")"
	export SKAFFOLD HELM
	[ -x deploy/images/images.sh ] || die "deploy/images/images.sh is missing (make images builds the images skaffold builds one by one)"
	mkdir -p "$state/bin" "$state/helm"
	ln -sfn "$HELM" "$state/bin/helm"
	docker_on_path "$state/bin"
	export HELM_CACHE_HOME="$state/helm/cache" HELM_CONFIG_HOME="$state/helm/config" HELM_DATA_HOME="$state/helm/data"
	export SKAFFOLD_UPDATE_CHECK=false
	printf 'global:\n  collect-metrics: false\n  update-check: false\n  survey:\n    disable-prompt: true\nkubeContexts: []\n' \
		>"$state/skaffold-config.yaml"
	# A build needs no cluster: before `make kind-up`, skaffold reads an empty kubeconfig.
	local kubeconfig="$KUBECONFIG"
	if [ "${1:-}" = no-cluster ] && [ ! -r "$kubeconfig" ]; then
		kubeconfig="$state/empty-kubeconfig"
		: >"$kubeconfig"
	fi
	skaffold_args=(-p kind --kube-context "$context" --kubeconfig "$kubeconfig"
		--config "$state/skaffold-config.yaml" --cache-file "$state/skaffold-cache"
		--update-check=false --interactive=false)
	# dev's file watching: polling the artifacts' dependencies only.
	watch_args=(--trigger=polling --watch-poll-interval=500)
	[ "${1:-}" != no-cluster ] || return 0
	KIND="$(tool KIND "$root/.cache/kind/bin/kind-*/kind" "make kind-up")"
	KUBECTL="$(tool KUBECTL "$root/.cache/k8s/kubernetes-*/kubectl $root/.cache/kind/bin/*/kubectl" "make cluster-tools")"
	export KIND KUBECTL
	ln -sfn "$KUBECTL" "$state/bin/kubectl"
	ln -sfn "$KIND" "$state/bin/kind"
	[ -r "$KUBECONFIG" ] || die "no kubeconfig at $KUBECONFIG: make kind-up"
	"$KUBECTL" --context "$context" get nodes >/dev/null 2>&1 ||
		die "the kind cluster $cluster does not answer (context $context, $KUBECONFIG): make kind-up"
}

env_cmd() {
	setup no-cluster
	echo "PATH=$PATH"
	echo "KUBECONFIG=$KUBECONFIG"
	echo "HELM_CACHE_HOME=$HELM_CACHE_HOME HELM_CONFIG_HOME=$HELM_CONFIG_HOME HELM_DATA_HOME=$HELM_DATA_HOME"
	echo "SKAFFOLD_UPDATE_CHECK=$SKAFFOLD_UPDATE_CHECK"
	echo "$SKAFFOLD dev ${skaffold_args[*]} ${watch_args[*]} --port-forward=user"
}

# dependencies builds the images the release runs besides skaffold's artifacts (the
# development PostgreSQL, broker and busybox of values-kind.yaml: every image the chart
# renders with the profile's values, less the deployables') with images.sh, and loads
# them into the nodes (kind skips those already there).
dependencies() {
	local deployables ref name refs=()
	deployables="$(for f in deploy/docker/*.Dockerfile; do basename "$f" .Dockerfile; done)"
	while read -r ref; do
		name="${ref%:*}"
		name="${name##*/}"
		grep -qx -- "$name" <<<"$deployables" || refs+=("$ref")
	done < <("$HELM" template "$release" helm/customer-api --namespace "$namespace" \
		-f helm/customer-api/values-dev.yaml -f helm/customer-api/values-kind.yaml |
		sed -n 's/^ *image: *"\{0,1\}\([^"]*\)"\{0,1\} *$/\1/p' | sort -u)
	[ ${#refs[@]} -gt 0 ] || return 0
	log "the release's other images: ${refs[*]}"
	for ref in "${refs[@]}"; do
		name="${ref%:*}"
		IMAGE="$ref" deploy/images/images.sh build "${name##*/}" >/dev/null
	done
	"$KIND" load docker-image --name "$cluster" "${refs[@]}" >&2
}

build() {
	setup no-cluster
	exec "$SKAFFOLD" build "${skaffold_args[@]}" "$@"
}

dev() {
	setup
	dependencies
	exec "$SKAFFOLD" dev "${skaffold_args[@]}" "${watch_args[@]}" --port-forward=user "$@"
}

# --- the test --------------------------------------------------------------------------

backup="$state/revert/docs.go"
skaffold_pid=
status=1

# restore puts the target file back as it was before the change, if it was changed.
restore() {
	if [ -f "$backup" ]; then
		if ! cmp -s "$backup" "$target"; then
			cat "$backup" >"$target"
			log "reverted $target"
		fi
		rm -f "$backup"
	fi
}

# A run killed before its trap ran leaves the backup: the file is restored first.
recover() {
	if [ -f "$backup" ]; then
		if grep -q '(devloop ' "$target"; then
			log "a previous run left $target changed: restoring it"
			restore
		else
			rm -f "$backup"
		fi
	fi
}

stop_skaffold() {
	[ -n "$skaffold_pid" ] || return 0
	if kill -0 "$skaffold_pid" 2>/dev/null; then
		log "stopping skaffold (it uninstalls the release)"
		kill -INT "$skaffold_pid" 2>/dev/null || true
		for _ in $(seq 1 240); do
			kill -0 "$skaffold_pid" 2>/dev/null || break
			sleep 0.5
		done
		if kill -0 "$skaffold_pid" 2>/dev/null; then
			log "skaffold did not stop within 120 s: killing its process group"
			kill -KILL -- "-$skaffold_pid" 2>/dev/null || true
		fi
	fi
	wait "$skaffold_pid" 2>/dev/null || true
	skaffold_pid=
}

dump() {
	log "diagnostics (skaffold's log: $skaffold_log)"
	tail -n 60 "$skaffold_log" >&2 || true
	"$KUBECTL" --context "$context" -n "$namespace" get pods -o wide >&2 || true
	"$KUBECTL" --context "$context" -n "$namespace" get events --sort-by=.lastTimestamp 2>/dev/null | tail -n 25 >&2 || true
}

on_exit() {
	local rc=$?
	restore
	[ "$status" -eq 0 ] || [ -z "${skaffold_log:-}" ] || dump
	stop_skaffold
	exit "$rc"
}

skaffold_alive() {
	kill -0 "$skaffold_pid" 2>/dev/null || die "skaffold exited (log: $skaffold_log)"
}

# page fetches the gateway's /docs page (empty when it does not answer).
page() { curl -fsS --max-time 3 "$url" 2>/dev/null || true; }

# await_title waits until the page's title is $1, at most $2 seconds.
await_title() {
	local want="<title>$1</title>" deadline=$((SECONDS + $2))
	while [ "$SECONDS" -lt "$deadline" ]; do
		skaffold_alive
		if page | grep -qF "$want"; then
			return 0
		fi
		sleep 0.5
	done
	die "the gateway did not answer with $want within $2 s (its answer: $(page | grep -o '<title>[^<]*</title>' || echo none))"
}

gateway_pods() {
	"$KUBECTL" --context "$context" -n "$namespace" get pods -l app.kubernetes.io/component=gateway \
		-o jsonpath='{range .items[*]}{.metadata.name}{" "}{end}'
}

# built_since lists the images skaffold built after the log's byte offset $1.
built_since() {
	tail -c +"$(($1 + 1))" "$skaffold_log" | { grep -o 'Building \[[^]]*\]' || true; } |
		sed 's/Building \[\(.*\)\]/\1/' | sort -u | tr '\n' ' '
}

test_cmd() {
	local t0 t_start t_change t_new t_revert
	t0="$(now)"
	setup
	mkdir -p "$state/logs" "$(dirname "$backup")"
	recover
	grep -qF "$marker" "$target" || die "$target does not hold $marker: the test changes that title"
	trap on_exit EXIT
	trap 'exit 130' INT TERM

	dependencies
	log "checks: skaffold's own reading of the kind profile and its dependencies (deploy/chartcheck)"
	(cd deploy/chartcheck && SKAFFOLD="$SKAFFOLD" HELM="$HELM" go test -count=1 \
		-run 'TestSkaffold|TestMatchGlob' .) >&2

	skaffold_log="$state/logs/skaffold-$(date -u +%Y%m%dT%H%M%SZ).log"
	log "starting skaffold dev -p kind (log: $skaffold_log)"
	t_start="$(now)"
	setsid "$SKAFFOLD" dev "${skaffold_args[@]}" "${watch_args[@]}" --port-forward=off --tail=false >"$skaffold_log" 2>&1 &
	skaffold_pid=$!
	local deadline=$((SECONDS + start_timeout))
	until grep -q 'Watching for changes' "$skaffold_log"; do
		skaffold_alive
		[ "$SECONDS" -lt "$deadline" ] || die "no first deploy within $start_timeout s"
		sleep 1
	done
	local first_deploy
	first_deploy="$(since "$t_start")"
	log "first build and deploy: $first_deploy s ($(built_since 0))"

	local ip port
	ip="$("$KUBECTL" --context "$context" get nodes -o jsonpath='{.items[0].status.addresses[?(@.type=="InternalIP")].address}')"
	port="$("$KUBECTL" --context "$context" -n "$namespace" get service "$release-gateway" -o jsonpath='{.spec.ports[?(@.name=="http")].nodePort}')"
	if [ -z "$ip" ] || [ -z "$port" ]; then die "no node address ($ip) or NodePort ($port) for the gateway"; fi
	url="http://$ip:$port/docs"
	log "the gateway's /docs on the NodePort: $url"
	await_title "Customer API reference" 60
	local pods_before
	pods_before="$(gateway_pods)"

	# Writes under .cache/ (Docker's data root, the build caches) trigger nothing: skaffold
	# polls the artifacts' dependencies only.
	local offset
	offset="$(stat -c %s "$skaffold_log")"
	date >"$state/watch-probe"
	mkdir -p "$root/.cache/images" && date >"$root/.cache/images/devloop-watch-probe"
	sleep 3
	rm -f "$state/watch-probe" "$root/.cache/images/devloop-watch-probe"
	if grep -q 'Generating tags\|Building \[' < <(tail -c +"$((offset + 1))" "$skaffold_log"); then
		die "a write under .cache/ made skaffold rebuild"
	fi

	# The change: a title nobody has seen before.
	local nonce
	nonce="$(date +%s)-$RANDOM"
	cp -p "$target" "$backup"
	offset="$(stat -c %s "$skaffold_log")"
	sed "s|$marker|<title>Customer API reference (devloop $nonce)</title>|" "$backup" >"$target"
	t_change="$(now)"
	grep -qF "(devloop $nonce)" "$target" || die "the change to $target did not take"
	log "changed $target: the title now ends with (devloop $nonce)"
	await_title "Customer API reference (devloop $nonce)" "$change_timeout"
	t_new="$(since "$t_change")"
	local pods_after rebuilt
	pods_after="$(gateway_pods)"
	rebuilt="$(built_since "$offset")"
	log "new answer after $t_new s; rebuilt: ${rebuilt:-none}; gateway pods: $pods_before-> $pods_after"
	[[ " $rebuilt " == *" customerapi/gateway "* ]] || die "skaffold did not rebuild customerapi/gateway (built: $rebuilt)"
	# The new answer comes from a new pod; the old one may still be listed, terminating,
	# and must be gone within a minute (the Deployment rolled, nothing kept the old image).
	local p new=
	for p in $pods_after; do
		[[ " $pods_before " == *" $p "* ]] || new="$new $p"
	done
	[ -n "$new" ] || die "no new gateway pod answers the new title (pods: $pods_after)"
	local deadline=$((SECONDS + 60)) old
	while :; do
		old=
		for p in $(gateway_pods); do
			[[ " $pods_before " != *" $p "* ]] || old="$old $p"
		done
		[ -n "$old" ] || break
		[ "$SECONDS" -lt "$deadline" ] || die "the old gateway pod(s)$old still run a minute after the new answer"
		sleep 1
	done

	# The revert, and the old answer back.
	offset="$(stat -c %s "$skaffold_log")"
	restore
	t_revert="$(now)"
	await_title "Customer API reference" "$change_timeout"
	local t_old
	t_old="$(since "$t_revert")"
	log "old answer back after $t_old s; rebuilt: $(built_since "$offset")"

	status=0
	stop_skaffold
	if "$HELM" --kube-context "$context" -n "$namespace" status "$release" >/dev/null 2>&1; then
		die "the release $release is still installed in $namespace after skaffold stopped"
	fi
	echo "devloop test passed: first build and deploy ${first_deploy} s; change to new answer ${t_new} s; revert to old answer ${t_old} s; whole test $(since "$t0") s"
}

case "${1:-}" in
dev) shift; dev "$@" ;;
build) shift; build "$@" ;;
test) test_cmd ;;
env) env_cmd ;;
*) echo "usage: $0 dev [skaffold flags]|build [skaffold flags]|test|env" >&2; exit 2 ;;
esac
