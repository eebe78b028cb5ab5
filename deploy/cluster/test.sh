#!/usr/bin/env bash
# `make test-cluster`: the chart on the local control plane of cluster.sh. Starts the
# control plane (unless one is already up: `make cluster-up` leaves it running for the
# next run), runs the cluster tests of deploy/chartcheck (build tag `cluster`,
# cluster_test.go), and stops what it started, also when a test fails or it is interrupted.
# The binaries come from the Makefile's environment (KUBE_BIN, ETCD, KWOK, HELM, SKAFFOLD).
# CLUSTER_TEST_RUN narrows the tests (a go test -run pattern).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE="$ROOT/deploy/cluster"
export CLUSTER_DIR=${CLUSTER_DIR:-$ROOT/.cache/cluster}
: "${HELM:?HELM is not set: run through make (make test-cluster)}"
: "${SKAFFOLD:?SKAFFOLD is not set: run through make (make test-cluster)}"

t0=$SECONDS
if "$HERE/cluster.sh" status 2>/dev/null; then
  echo "test-cluster: using the control plane that is already up ($CLUSTER_DIR)" >&2
else
  trap '"$HERE/cluster.sh" down' EXIT
  trap 'exit 130' INT TERM
  "$HERE/cluster.sh" up
fi
up=$((SECONDS - t0))

export KUBECONFIG="$CLUSTER_DIR/kubeconfig" KUBECTL="$KUBE_BIN/kubectl"
cd "$ROOT/deploy/chartcheck"
go vet -tags cluster .
rc=0
go test -tags cluster -count=1 -timeout 20m -v -run "${CLUSTER_TEST_RUN:-^TestCluster}" . 2>&1 |
  tee "$CLUSTER_DIR/test.log" || rc=$?
echo "test-cluster: control plane up in ${up}s, tests in $((SECONDS - t0 - up))s; full log: $CLUSTER_DIR/test.log" >&2
exit "$rc"
