#!/usr/bin/env bash
# Proves the kind cluster of `make kind-up` works as a cluster, in namespace kind-smoke
# (deleted afterwards unless SMOKE_KEEP=1):
#   1. both nodes Ready (and the nodes' memory at rest, from `docker stats`);
#   2. a Deployment with one replica on each node behind a Service, reached from another
#      pod by the Service's DNS name (both replicas answer) and each replica by its pod IP
#      (pod to pod across the nodes);
#   3. cluster DNS: the Service's name resolves; a name outside the cluster does not
#      (CoreDNS forwards nothing out);
#   4. a PersistentVolumeClaim bound by local-path-provisioner, written and read by a pod;
#   5. NetworkPolicy enforced by the CNI: with a policy that lets only pods labelled
#      access=allowed reach the Deployment, the allowed probe is retried until it succeeds
#      (the CNI has synced the policy) and then the denied pod's probes must all fail for
#      15 s.
# Prints each check's time. The pods run the busybox of local-path-provisioner's helper
# image, which the node image holds (no registry here): $SMOKE_IMAGE overrides it.
# kubectl: $KUBECTL, else the one the components hold (.cache/kind/components.env), else
# the PATH's; the kubeconfig: $KUBECONFIG, else .cache/kind/kubeconfig.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
docker=/usr/bin/docker
cluster="${KIND_CLUSTER:-customer-api}"
ns=kind-smoke
export KUBECONFIG="${KUBECONFIG:-$root/.cache/kind/kubeconfig}"

log() { echo "smoke: $*" >&2; }
die() { log "FAIL: $*"; exit 1; }

if [ -z "${KUBECTL:-}" ]; then
	kbin="$(sed -n 's/^K8S_BIN_DIR=//p' "$root/.cache/kind/components.env" 2>/dev/null || true)"
	if [ -n "$kbin" ] && [ -x "$kbin/kubectl" ]; then KUBECTL="$kbin/kubectl"; else KUBECTL=kubectl; fi
fi
k() { "$KUBECTL" "$@"; }
kn() { "$KUBECTL" -n "$ns" "$@"; }

phase_start=$SECONDS
phase() {
	log "ok: $1 ($((SECONDS - phase_start)) s)"
	phase_start=$SECONDS
}

cleanup() {
	if [ "${SMOKE_KEEP:-}" != 1 ]; then
		k delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
	fi
}
trap cleanup EXIT

# --- 1. nodes
mapfile -t nodes < <(k get nodes -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}')
[ "${#nodes[@]}" -eq 2 ] || die "expected 2 nodes, got ${#nodes[@]}: ${nodes[*]}"
for n in "${nodes[@]}"; do
	[ "$(k get node "$n" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ] || die "node $n is not Ready"
done
phase "nodes Ready: ${nodes[*]}"
log "nodes' memory at rest (docker stats):"
# shellcheck disable=SC2046 # one argument per node id
"$docker" stats --no-stream --format '  {{.Name}} {{.MemUsage}}' \
	$("$docker" ps -q --filter "label=io.x-k8s.kind.cluster=$cluster") >&2

if [ -z "${SMOKE_IMAGE:-}" ]; then
	SMOKE_IMAGE="$("$docker" exec "$cluster-control-plane" cat /kind/manifests/default-storage.yaml |
		grep -oE 'image: *[^ ]*local-path-helper[^ ]*' | head -n 1 | sed 's/image: *//')"
	[ -n "$SMOKE_IMAGE" ] || die "no local-path helper image in the node's manifests: set SMOKE_IMAGE"
fi
log "pods run $SMOKE_IMAGE"

k delete namespace "$ns" --ignore-not-found --wait=true >/dev/null
k create namespace "$ns" >/dev/null

# --- 2. a Deployment on both nodes behind a Service
kn apply -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      # one replica on each node, the control plane's too
      tolerations: [{key: node-role.kubernetes.io/control-plane, operator: Exists, effect: NoSchedule}]
      topologySpreadConstraints:
        - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}}
      containers:
        - name: web
          image: $SMOKE_IMAGE
          imagePullPolicy: Never
          command: [busybox, sh, -c, 'busybox mkdir -p /www && busybox hostname > /www/index.html && exec busybox httpd -f -v -p 8080 -h /www']
          ports: [{containerPort: 8080}]
          readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Pod
metadata: {name: allowed, labels: {access: allowed}}
spec:
  tolerations: [{key: node-role.kubernetes.io/control-plane, operator: Exists, effect: NoSchedule}]
  containers:
    - {name: c, image: $SMOKE_IMAGE, imagePullPolicy: Never, command: [busybox, sleep, "3600"]}
---
apiVersion: v1
kind: Pod
metadata: {name: denied, labels: {access: denied}}
spec:
  tolerations: [{key: node-role.kubernetes.io/control-plane, operator: Exists, effect: NoSchedule}]
  containers:
    - {name: c, image: $SMOKE_IMAGE, imagePullPolicy: Never, command: [busybox, sleep, "3600"]}
EOF
kn rollout status deployment/web --timeout 120s >/dev/null || { kn get pods -o wide >&2; die "web not rolled out"; }
kn wait --for=condition=Ready pod/allowed pod/denied --timeout 120s >/dev/null || { kn get pods -o wide >&2; die "client pods not Ready"; }
web_nodes="$(kn get pods -l app=web -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort -u | wc -l)"
[ "$web_nodes" -eq 2 ] || die "the web replicas are not on both nodes"
phase "Deployment web: a replica on each node"

fetch() { # fetch POD URL: the answer, or nothing and status 1 (within 3 s)
	# Debian's busybox wget has no working timeout option (-T segfaults): its timeout applet.
	kn exec "$1" -- busybox timeout 3 busybox wget -q -O - "$2" 2>/dev/null
}
# pod to pod, across the nodes
for ip in $(kn get pods -l app=web -o jsonpath='{.items[*].status.podIP}'); do
	answer="$(fetch allowed "http://$ip:8080/")" || die "web pod $ip does not answer allowed's request"
	log "  $ip answers: $answer"
done
# through the Service, by its DNS name: both replicas behind it
want="$(kn get pods -l app=web -o jsonpath='{.items[*].metadata.name}' | tr ' ' '\n' | sort | paste -sd' ' -)"
seen=""
for _ in $(seq 1 60); do
	answer="$(fetch allowed "http://web.$ns.svc.cluster.local/")" || die "the Service web does not answer by name"
	seen="$(printf '%s\n%s\n' "$seen" "$answer" | grep -v '^$' | sort -u | paste -sd' ' -)"
	[ "$seen" = "$want" ] && break
done
[ "$seen" = "$want" ] || die "the Service reached only $seen of $want"
phase "Service web answers from both replicas ($want)"

# --- 3. cluster DNS
kn exec allowed -- busybox timeout 10 busybox nslookup "web.$ns.svc.cluster.local" >/dev/null || die "cluster DNS does not resolve the Service"
kn exec allowed -- busybox timeout 10 busybox nslookup kubernetes.default.svc.cluster.local >/dev/null || die "cluster DNS does not resolve kubernetes.default"
if kn exec allowed -- busybox timeout 10 busybox nslookup example.com >/dev/null 2>&1; then
	die "example.com resolved: CoreDNS forwards out of the cluster"
fi
phase "cluster DNS resolves the cluster's names, and nothing outside it"

# --- 4. a PVC bound by local-path-provisioner
kn apply -f - >/dev/null <<EOF
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 16Mi}}
---
apiVersion: v1
kind: Pod
metadata: {name: writer}
spec:
  restartPolicy: Never
  containers:
    - name: c
      image: $SMOKE_IMAGE
      imagePullPolicy: Never
      command: [busybox, sh, -c, 'echo persisted > /data/file && busybox sync && busybox cat /data/file']
      volumeMounts: [{name: data, mountPath: /data}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
EOF
for _ in $(seq 1 120); do
	phase_now="$(kn get pod writer -o jsonpath='{.status.phase}')"
	[ "$phase_now" = Succeeded ] && break
	[ "$phase_now" = Failed ] && { kn describe pod writer >&2; die "the PVC writer failed"; }
	sleep 1
done
[ "$(kn get pvc data -o jsonpath='{.status.phase}')" = Bound ] || { kn describe pvc data >&2; die "PVC data is not Bound"; }
[ "$(kn logs writer)" = persisted ] || die "the PVC writer did not read back what it wrote"
sc="$(kn get pvc data -o jsonpath='{.spec.storageClassName}')"
phase "PVC data Bound (StorageClass $sc, $(kn get pvc data -o jsonpath='{.spec.volumeName}')), written and read"

# --- 5. NetworkPolicy
kn apply -f - >/dev/null <<EOF
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web-from-allowed}
spec:
  podSelector: {matchLabels: {app: web}}
  policyTypes: [Ingress]
  ingress:
    - from: [{podSelector: {matchLabels: {access: allowed}}}]
      ports: [{port: 8080}]
EOF
# The allowed probe, until the CNI has synced the policy (it answers all along; retried
# so that a slow sync shows as a failure to answer, never as a pass of the denied probe).
ok=""
for _ in $(seq 1 30); do
	if fetch allowed "http://web.$ns.svc.cluster.local/" >/dev/null; then ok=1; break; fi
	sleep 1
done
[ -n "$ok" ] || die "the allowed pod cannot reach web under the policy"
# Wait until the denied pod is refused once: the policy is in place.
refused=""
for _ in $(seq 1 60); do
	if ! fetch denied "http://web.$ns.svc.cluster.local/" >/dev/null; then refused=1; break; fi
	sleep 1
done
[ -n "$refused" ] || die "the denied pod still reaches web 60 s after the policy: the CNI does not enforce it"
# Then every probe for 15 s must fail, the allowed one keeps answering.
end=$((SECONDS + 15)) probes=0
while [ $SECONDS -lt $end ]; do
	if fetch denied "http://web.$ns.svc.cluster.local/" >/dev/null; then die "the denied pod reached web through the Service"; fi
	for ip in $(kn get pods -l app=web -o jsonpath='{.items[*].status.podIP}'); do
		if fetch denied "http://$ip:8080/" >/dev/null; then die "the denied pod reached web pod $ip"; fi
	done
	fetch allowed "http://web.$ns.svc.cluster.local/" >/dev/null || die "the allowed pod lost web under the policy"
	probes=$((probes + 1))
done
phase "NetworkPolicy enforced: $probes rounds of denied probes in 15 s all failed, the allowed ones answered"
log "all checks passed"
