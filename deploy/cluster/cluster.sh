#!/usr/bin/env bash
# A real Kubernetes control plane on this machine, without Docker: etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler and kwok (a fake node that runs no containers),
# each a process on 127.0.0.1, with certificates and kubeconfigs made at every start.
# `make cluster-up`, `make cluster-down` and `make test-cluster` build the binaries
# (tools/k8s, tools/etcd, kwok) and call this script; see docs/kubernetes.md.
#
#   cluster.sh up       start everything (a fresh etcd), wait until the node is Ready
#   cluster.sh down     stop every process this script started, by PID, and wait for exit
#   cluster.sh status   exit 0 when every process is running and the API server is ready
#   cluster.sh env      print the exports that point kubectl and helm at it (for eval)
#
# The binaries come from the environment (the Makefile sets them):
#   KUBE_BIN  directory with kube-apiserver, kube-controller-manager, kube-scheduler and
#             kubectl;  ETCD, KWOK, CLUSTERCERTS  the etcd, kwok and clustercerts binaries
# Settings (defaults in brackets):
#   CLUSTER_DIR [.cache/cluster]  certificates, kubeconfigs, etcd's data, logs and PIDs;
#                                 emptied by `up`, kept by `down` (logs to look at)
#   KUBE_APISERVER_PORT [26443]  ETCD_PORT [26379]  ETCD_PEER_PORT [26380]
#   KUBE_CONTROLLER_MANAGER_PORT [26257]  KUBE_SCHEDULER_PORT [26259]  KWOK_PORT [26247]
# The user's kubeconfig is $CLUSTER_DIR/kubeconfig (cluster admin).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE="$ROOT/deploy/cluster"
CLUSTER_DIR=${CLUSTER_DIR:-$ROOT/.cache/cluster}
KUBE_APISERVER_PORT=${KUBE_APISERVER_PORT:-26443}
ETCD_PORT=${ETCD_PORT:-26379}
ETCD_PEER_PORT=${ETCD_PEER_PORT:-26380}
KUBE_CONTROLLER_MANAGER_PORT=${KUBE_CONTROLLER_MANAGER_PORT:-26257}
KUBE_SCHEDULER_PORT=${KUBE_SCHEDULER_PORT:-26259}
KWOK_PORT=${KWOK_PORT:-26247}
# The order of start; `down` stops in reverse.
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok)
PKI="$CLUSTER_DIR/pki"
LOGS="$CLUSTER_DIR/logs"
PIDS="$CLUSTER_DIR/pids"
KUBECONFIG_FILE="$CLUSTER_DIR/kubeconfig"

log() { printf 'cluster: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

need_bins() {
  : "${KUBE_BIN:?KUBE_BIN is not set: run through make (make cluster-up)}"
  : "${ETCD:?ETCD is not set: run through make (make cluster-up)}"
  : "${KWOK:?KWOK is not set: run through make (make cluster-up)}"
  : "${CLUSTERCERTS:?CLUSTERCERTS is not set: run through make (make cluster-up)}"
  local b
  for b in "$KUBE_BIN"/{kube-apiserver,kube-controller-manager,kube-scheduler,kubectl} "$ETCD" "$KWOK" "$CLUSTERCERTS"; do
    [ -x "$b" ] || die "missing binary $b (make cluster-tools builds it)"
  done
}

kubectl() { "$KUBE_BIN/kubectl" --kubeconfig "$KUBECONFIG_FILE" "$@"; }

# The PID recorded for a component, when that process is still alive and still runs the
# binary it was started as (a PID reused by another process is not ours).
live_pid() {
  local f="$PIDS/$1.pid" pid bin
  [ -f "$f" ] || return 1
  read -r pid bin <"$f" || return 1
  [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$bin" ] || return 1
  echo "$pid"
}

# A process that has not exited (a zombie has no executable left to link to).
alive() { readlink "/proc/$1/exe" >/dev/null 2>&1; }

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# start NAME BINARY ARGS...: runs it in its own session (so it outlives `make cluster-up`
# and a Ctrl-C of the caller's terminal), output to logs/NAME.log, PID to pids/NAME.pid.
start() {
  local name=$1 bin=$2
  shift 2
  local pid exe i
  exe=$(readlink -f "$bin")
  setsid "$bin" "$@" </dev/null >"$LOGS/$name.log" 2>&1 &
  pid=$!
  echo "$pid $exe" >"$PIDS/$name.pid"
  # Until setsid has exec'd the binary, the PID still runs setsid.
  for ((i = 0; i < 50; i++)); do
    [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$exe" ] && return 0
    alive "$pid" || return 0
    sleep 0.1
  done
}

# wait_for WHAT SECONDS COMPONENT COMMAND...: retries COMMAND until it succeeds; fails
# with the component's log tail when it does not in time or the component exited.
wait_for() {
  local what=$1 secs=$2 comp=$3 i
  shift 3
  for ((i = 0; i < secs * 5; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    if ! live_pid "$comp" >/dev/null; then
      tail -n 30 "$LOGS/$comp.log" >&2 || true
      die "$comp exited while waiting for $what (log: $LOGS/$comp.log)"
    fi
    sleep 0.2
  done
  tail -n 30 "$LOGS/$comp.log" >&2 || true
  die "$what: not within ${secs}s (log: $LOGS/$comp.log)"
}

etcd_healthy() {
  (exec 3<>"/dev/tcp/127.0.0.1/$ETCD_PORT" && printf 'GET /health HTTP/1.0\r\n\r\n' >&3 && grep -q '"health":"true"' <&3)
}
# A component's /healthz over TLS (serving certificate from clustercerts).
component_healthy() {
  "$KUBE_BIN/kubectl" --kubeconfig "$PKI/admin.kubeconfig" --server "https://127.0.0.1:$1" \
    --certificate-authority "$PKI/ca.crt" get --raw /healthz | grep -qx ok
}
node_ready() {
  [ "$(kubectl get node kwok-node-0 -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')" = True ]
}
default_service_account() { kubectl -n default get serviceaccount default; }

up() {
  need_bins
  if status 2>/dev/null; then
    log "already up (KUBECONFIG=$KUBECONFIG_FILE); \`make cluster-down\` stops it"
    return 0
  fi
  local c p
  for c in "${COMPONENTS[@]}"; do
    if p=$(live_pid "$c"); then die "$c is still running (PID $p) from an earlier start: make cluster-down"; fi
  done
  for p in "$KUBE_APISERVER_PORT" "$ETCD_PORT" "$ETCD_PEER_PORT" "$KUBE_CONTROLLER_MANAGER_PORT" "$KUBE_SCHEDULER_PORT" "$KWOK_PORT"; do
    if port_in_use "$p"; then die "127.0.0.1:$p is in use (set the *_PORT variables of deploy/cluster/cluster.sh)"; fi
  done
  case "$CLUSTER_DIR" in /*/*) ;; *) die "CLUSTER_DIR=$CLUSTER_DIR: an absolute directory two levels deep at least (it is emptied)" ;; esac
  rm -rf "$CLUSTER_DIR"
  mkdir -p "$PKI" "$LOGS" "$PIDS" "$CLUSTER_DIR/home"
  mkdir -m 700 "$CLUSTER_DIR/etcd"
  local t0=$SECONDS
  "$CLUSTERCERTS" -dir "$PKI" -server "https://127.0.0.1:$KUBE_APISERVER_PORT" -service-ip 10.96.0.1
  cp "$PKI/admin.kubeconfig" "$KUBECONFIG_FILE"

  # etcd: one member, loopback only. No fsync: the data is thrown away with the cluster.
  start etcd "$ETCD" --name local --data-dir "$CLUSTER_DIR/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "local=http://127.0.0.1:$ETCD_PEER_PORT" --unsafe-no-fsync --log-level warn
  wait_for "etcd healthy" 30 etcd etcd_healthy

  # The API server: client certificates signed by the local CA, RBAC, the default
  # admission plugins (PodSecurity among them), service account tokens signed with sa.key.
  # No endpoint reconciler: the kubernetes Service cannot point at a loopback address.
  start kube-apiserver "$KUBE_BIN/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --bind-address 127.0.0.1 --secure-port "$KUBE_APISERVER_PORT" --advertise-address 127.0.0.1 \
    --endpoint-reconciler-type none --cert-dir "$CLUSTER_DIR/apiserver-certs" \
    --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
    --client-ca-file "$PKI/ca.crt" --authorization-mode RBAC --allow-privileged=true \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
    --service-cluster-ip-range 10.96.0.0/16 --profiling=false
  wait_for "kube-apiserver /readyz" 90 kube-apiserver kubectl get --raw /readyz

  # The controllers (Deployments, ReplicaSets, StatefulSets, garbage collection, the
  # namespaces' default ServiceAccount, PersistentVolume binding, HPAs, ...), each with
  # its own service account's credentials, as kubeadm runs it.
  start kube-controller-manager "$KUBE_BIN/kube-controller-manager" \
    --kubeconfig "$PKI/kube-controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$KUBE_CONTROLLER_MANAGER_PORT" \
    --tls-cert-file "$PKI/components-serving.crt" --tls-private-key-file "$PKI/components-serving.key" \
    --use-service-account-credentials --service-account-private-key-file "$PKI/sa.key" \
    --root-ca-file "$PKI/ca.crt" --leader-elect=false --profiling=false
  start kube-scheduler "$KUBE_BIN/kube-scheduler" \
    --kubeconfig "$PKI/kube-scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$KUBE_SCHEDULER_PORT" \
    --tls-cert-file "$PKI/components-serving.crt" --tls-private-key-file "$PKI/components-serving.key" \
    --leader-elect=false --profiling=false
  wait_for "kube-controller-manager /healthz" 60 kube-controller-manager component_healthy "$KUBE_CONTROLLER_MANAGER_PORT"
  wait_for "kube-scheduler /healthz" 60 kube-scheduler component_healthy "$KUBE_SCHEDULER_PORT"
  wait_for "the default ServiceAccount (controller manager)" 60 kube-controller-manager default_service_account

  # kwok: the fake node's kubelet (node status, Lease, pod status) and a cloud provider's
  # load balancer controller, by the stages in kwok-stages.yaml. A private HOME, so no
  # ~/.kwok/kwok.yaml of the user's is read.
  HOME="$CLUSTER_DIR/home" start kwok "$KWOK" \
    --kubeconfig "$PKI/kwok.kubeconfig" --config "$HERE/kwok-stages.yaml" \
    --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake \
    --node-lease-duration-seconds 40 --cidr 10.244.0.0/16 --node-ip 10.0.0.10 \
    --server-address "127.0.0.1:$KWOK_PORT"
  kubectl apply -f "$HERE/node.yaml" >/dev/null
  wait_for "node kwok-node-0 Ready (kwok)" 60 kwok node_ready

  log "up in $((SECONDS - t0))s: $(kubectl version 2>/dev/null | tr '\n' ' ')"
  log "export KUBECONFIG=$KUBECONFIG_FILE   (logs: $LOGS; stop: make cluster-down)"
}

status() {
  need_bins
  local c
  for c in "${COMPONENTS[@]}"; do
    live_pid "$c" >/dev/null || { log "$c is not running"; return 1; }
  done
  kubectl get --raw /readyz >/dev/null 2>&1 || { log "kube-apiserver is not ready"; return 1; }
}

down() {
  local i c pid n stopped=0
  for ((i = ${#COMPONENTS[@]} - 1; i >= 0; i--)); do
    c=${COMPONENTS[i]}
    if ! pid=$(live_pid "$c"); then rm -f "$PIDS/$c.pid"; continue; fi
    kill -TERM "$pid" 2>/dev/null || true
    for ((n = 0; n < 150; n++)); do
      alive "$pid" || break
      sleep 0.1
    done
    if alive "$pid"; then
      log "$c (PID $pid) did not stop within 15s of SIGTERM: SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      for ((n = 0; n < 50; n++)); do
        alive "$pid" || break
        sleep 0.1
      done
    fi
    rm -f "$PIDS/$c.pid"
    stopped=$((stopped + 1))
  done
  log "down ($stopped processes stopped; logs kept in $LOGS)"
}

print_env() {
  need_bins
  printf 'export KUBECONFIG=%q\n' "$KUBECONFIG_FILE"
  # shellcheck disable=SC2016 # $PATH is for the eval, not expanded here
  printf 'export PATH=%q:"$PATH"\n' "$KUBE_BIN${HELM:+:$(dirname "$HELM")}"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  env) print_env ;;
  *) echo "usage: $0 up|down|status|env" >&2; exit 2 ;;
esac
