#!/usr/bin/env bash
# The kind cluster's component images, built here (no registry is reachable), and what the
# node image needs from them (deploy/kind/COMPONENTS.md).
#
#   images.sh all     build each component image under the exact reference kubeadm or the
#                     manifests in deploy/kind/components/manifests use (only when its
#                     inputs changed), `docker save` each into .cache/kind/images, and write
#                     .cache/kind/components.env (what the node image build sources)
#   images.sh tarball after all: assemble the kubernetes-server-linux-amd64.tar.gz that
#                     `kind build node-image --type file` reads; prints its path. Not used
#                     here: that builder pulls the add-on images (deploy/kind/COMPONENTS.md)
#   images.sh check   each binary answers --version with its pinned version; each image's
#                     entrypoint runs under `docker run --network none`; kubeadm's image
#                     list and the manifests' images are exactly what was built
#   images.sh build NAME...
#                     build (when its inputs changed) and save just these images
#   images.sh list    print the image references, one a line
#   images.sh node-inputs
#                     print what the node image is made of (KEY=value lines, as in
#                     .cache/kind/components.env) after building what is missing
#
# Binaries come from deploy/kind/kind-tools.mk (`make kind-components`, which sets the
# environment: KUBE_BIN K8S_VERSION KIND KIND_VERSION CONTAINERD_BIN CONTAINERD_VERSION
# CRICTL CRICTL_VERSION KIND_ETCD KIND_ETCD_VERSION COREDNS COREDNS_VERSION KUBE_ROUTER KUBE_ROUTER_VERSION
# LOCAL_PATH_PROVISIONER LOCAL_PATH_VERSION PAUSE). Images are built with
# `docker build --network none` from deploy/kind/components/images/<name>.Dockerfile and a
# context staged in .cache/kind/ctx/<name>; the ones that need a shell or iptables start
# from a Debian root file system (deploy/images/rootfs.sh). Each image carries the hash of
# its inputs (Dockerfile, staged files, base image) in the label io.customerapi.kind.inputs;
# an image whose label matches is not rebuilt.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
docker=/usr/bin/docker
export DOCKER_BUILDKIT=1
cache="$root/.cache/kind"
components="$root/deploy/kind/components"
label=io.customerapi.kind.inputs
# The Debian packages of the images that need more than their binary: iptables, ipset,
# iproute2, conntrack and kmod for kube-proxy and kube-router, busybox for the storage helper.
rootfs_packages=iptables,ipset,iproute2,conntrack,busybox-static,kmod

log() { echo "images.sh: $*" >&2; }
die() { log "$*"; exit 1; }

for v in KUBE_BIN K8S_VERSION KIND KIND_VERSION CONTAINERD_BIN CONTAINERD_VERSION CRICTL CRICTL_VERSION KIND_ETCD KIND_ETCD_VERSION \
	COREDNS COREDNS_VERSION KUBE_ROUTER KUBE_ROUTER_VERSION LOCAL_PATH_PROVISIONER LOCAL_PATH_VERSION PAUSE; do
	[ -n "${!v:-}" ] || die "$v is not set: run it through make kind-components (deploy/kind/kind-tools.mk)"
done
pause_version="$(cat "$(dirname "$PAUSE")/VERSION")"

names=(kube-apiserver kube-controller-manager kube-scheduler kube-proxy etcd coredns pause kube-router
	local-path-provisioner local-path-helper)

# spec NAME: sets ref (the image reference), base (1 when the image starts from the Debian
# root file system) and files (SOURCE=PATH-IN-IMAGE pairs).
spec() {
	base=0
	case "$1" in
	kube-apiserver | kube-controller-manager | kube-scheduler)
		ref="registry.k8s.io/$1:$K8S_VERSION"
		files=("$KUBE_BIN/$1=usr/local/bin/$1") ;;
	kube-proxy)
		ref="registry.k8s.io/kube-proxy:$K8S_VERSION" base=1
		files=("$KUBE_BIN/kube-proxy=usr/local/bin/kube-proxy" "$components/iptables-wrapper.sh=usr/sbin/iptables-wrapper") ;;
	etcd)
		ref="registry.k8s.io/etcd:${KIND_ETCD_VERSION#v}-0"
		files=("$KIND_ETCD=usr/local/bin/etcd") ;;
	coredns)
		ref="registry.k8s.io/coredns/coredns:$COREDNS_VERSION"
		files=("$COREDNS=coredns") ;;
	pause)
		ref="registry.k8s.io/pause:$pause_version"
		files=("$PAUSE=pause") ;;
	kube-router)
		ref="docker.io/customerapi/kind-kube-router:$KUBE_ROUTER_VERSION" base=1
		files=("$KUBE_ROUTER=usr/local/bin/kube-router" "$components/iptables-wrapper.sh=usr/sbin/iptables-wrapper") ;;
	local-path-provisioner)
		ref="docker.io/customerapi/kind-local-path-provisioner:$LOCAL_PATH_VERSION"
		files=("$LOCAL_PATH_PROVISIONER=usr/local/bin/local-path-provisioner") ;;
	local-path-helper)
		ref="docker.io/customerapi/kind-local-path-helper:$LOCAL_PATH_VERSION" base=1
		files=() ;;
	*) die "unknown image $1" ;;
	esac
}

base_image() {
	[ -n "${base_ref:-}" ] || base_ref="$(deploy/images/rootfs.sh kind-net "$rootfs_packages")"
	echo "$base_ref"
}

# build NAME: stages the context, builds the image when its inputs changed, saves its
# archive; prints the archive's path.
build() {
	local name="$1" ctx="$cache/ctx/$1" build_args=() inputs current archive start f
	spec "$name"
	start=$(date +%s)
	rm -rf "$ctx" && mkdir -p "$ctx/rootfs"
	cp "$components/images/$name.Dockerfile" "$ctx/Dockerfile"
	if [ "$base" = 0 ]; then mkdir -m 1777 "$ctx/rootfs/tmp"; fi
	for f in ${files[@]+"${files[@]}"}; do
		[ -f "${f%%=*}" ] || die "$name: ${f%%=*} is missing (make kind-component-bins)"
		install -D -m 0755 "${f%%=*}" "$ctx/rootfs/${f#*=}"
	done
	if [ "$base" = 1 ]; then
		build_args=(--build-arg "BASE=$(base_image)")
		echo "base $($docker image inspect -f '{{.Id}}' "$(base_image)")" >"$ctx/base"
	fi
	inputs="$(cd "$ctx" && { find . -type f | LC_ALL=C sort | xargs sha256sum; find . -printf '%p %m %l\n' | LC_ALL=C sort; } | sha256sum | cut -c1-16)"
	current="$($docker image inspect -f "{{index .Config.Labels \"$label\"}}" "$ref" 2>/dev/null || true)"
	if [ "$current" != "$inputs" ]; then
		log "build $ref (log: $cache/logs/$name.build.log)"
		mkdir -p "$cache/logs"
		$docker build --network none --label "$label=$inputs" ${build_args[@]+"${build_args[@]}"} -t "$ref" "$ctx" \
			>"$cache/logs/$name.build.log" 2>&1 || { tail -30 "$cache/logs/$name.build.log" >&2; die "$name: docker build failed"; }
	fi
	archive="$cache/images/$name-$inputs.tar"
	if [ ! -f "$archive" ]; then
		mkdir -p "$cache/images"
		rm -f "$cache/images/$name"-*.tar
		$docker save -o "$archive.tmp" "$ref"
		mv "$archive.tmp" "$archive"
	fi
	rm -rf "$ctx"
	log "$(printf '%-24s %-62s %4ss %s' "$name" "$ref" $(($(date +%s) - start)) "$(du -h "$archive" | cut -f1)")"
	echo "$archive"
}

# tarball ARCHIVE...: the layout of a kubernetes-server-linux-amd64.tar.gz that kind's
# tarball builder reads (pkg/build/nodeimage/internal/kube/builder_tarball.go):
# kubernetes/version, and in kubernetes/server/bin kubeadm, kubelet, kubectl and the four
# image archives kube-apiserver.tar, kube-controller-manager.tar, kube-scheduler.tar,
# kube-proxy.tar (kind treats the first image of each as present; all are imported).
tarball() {
	local key out dir b
	key="$( { echo "$K8S_VERSION"; sha256sum "$KUBE_BIN/kubeadm" "$KUBE_BIN/kubelet" "$KUBE_BIN/kubectl"; printf '%s\n' "$@"; } | sha256sum | cut -c1-12)"
	out="$cache/kubernetes-server-linux-amd64-$K8S_VERSION-$key.tar.gz"
	if [ ! -f "$out" ]; then
		dir="$cache/tarball.tmp"
		rm -rf "$dir" && mkdir -p "$dir/kubernetes/server/bin"
		echo "$K8S_VERSION" >"$dir/kubernetes/version"
		for b in kubeadm kubelet kubectl; do ln "$KUBE_BIN/$b" "$dir/kubernetes/server/bin/$b" 2>/dev/null || cp "$KUBE_BIN/$b" "$dir/kubernetes/server/bin/$b"; done
		for a in "$@"; do
			b="$(basename "$a" | sed 's/-[0-9a-f]\{16\}\.tar$//')"
			ln "$a" "$dir/kubernetes/server/bin/$b.tar" 2>/dev/null || cp "$a" "$dir/kubernetes/server/bin/$b.tar"
			echo "$K8S_VERSION" >"$dir/kubernetes/server/bin/$b.docker_tag"
		done
		rm -f "$cache"/kubernetes-server-linux-amd64-*.tar.gz
		tar -C "$dir" -c kubernetes | gzip -1 >"$out.tmp"
		mv "$out.tmp" "$out"
		rm -rf "$dir"
	fi
	echo "$out"
}

all() {
	local name archives=() refs=() t0 env
	t0=$(date +%s)
	base_ref="$(base_image)"
	for name in "${names[@]}"; do
		archives+=("$(build "$name")")
		spec "$name"
		refs+=("$ref")
	done
	env="$cache/components.env"
	{
		echo "# Written by deploy/kind/images.sh all: the kind components (deploy/kind/COMPONENTS.md)."
		echo "K8S_VERSION=$K8S_VERSION"
		echo "K8S_BIN_DIR=$KUBE_BIN"
		echo "KIND=$KIND"
		echo "KIND_VERSION=$KIND_VERSION"
		echo "CONTAINERD_BIN_DIR=$CONTAINERD_BIN"
		echo "CONTAINERD_VERSION=$CONTAINERD_VERSION"
		echo "CRICTL=$CRICTL"
		echo "PAUSE_IMAGE=registry.k8s.io/pause:$pause_version"
		echo "IMAGES=\"${refs[*]}\""
		echo "IMAGE_ARCHIVES=\"${archives[*]}\""
		echo "MANIFESTS_DIR=$components/manifests"
	} >"$env.tmp"
	mv "$env.tmp" "$env"
	log "all images ready in $(($(date +%s) - t0))s; $env"
}

list() {
	local name
	for name in "${names[@]}"; do spec "$name"; echo "$ref"; done
}

# expect WHAT WANT COMMAND...: runs COMMAND, fails unless its output contains WANT.
expect() {
	local what="$1" want="$2" out
	shift 2
	out="$("$@" 2>&1)" || die "$what: $* failed: $out"
	grep -qF -- "$want" <<<"$out" || die "$what: want $want in: $out"
	log "ok $(printf '%-40s' "$what") $(head -1 <<<"$out" | cut -c1-90)"
}

check() {
	# --pull never: an image missing here must fail the check, not reach for a registry.
	local b name run=("$docker" run --rm --pull never --network none)
	# The binaries.
	for b in kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubelet; do
		expect "$b --version" "Kubernetes $K8S_VERSION" "$KUBE_BIN/$b" --version
	done
	expect "kubeadm version" "$K8S_VERSION" "$KUBE_BIN/kubeadm" version -o short
	expect "kubectl version --client" "Client Version: $K8S_VERSION" "$KUBE_BIN/kubectl" version --client
	expect "kind version" "kind v${KIND_VERSION#v} " "$KIND" version
	expect "containerd --version" "$CONTAINERD_VERSION" "$CONTAINERD_BIN/containerd" --version
	expect "ctr --version" "$CONTAINERD_VERSION" "$CONTAINERD_BIN/ctr" --version
	expect "containerd-shim-runc-v2 -v" "$CONTAINERD_VERSION" "$CONTAINERD_BIN/containerd-shim-runc-v2" -v
	expect "crictl --version" "crictl version $CRICTL_VERSION" "$CRICTL" --version
	expect "etcd --version" "etcd Version: ${KIND_ETCD_VERSION#v}" "$KIND_ETCD" --version
	expect "coredns -version" "CoreDNS-${COREDNS_VERSION#v}" "$COREDNS" -version
	expect "kube-router --version" "$KUBE_ROUTER_VERSION" "$KUBE_ROUTER" --version
	expect "local-path-provisioner --version" "$LOCAL_PATH_VERSION" "$LOCAL_PATH_PROVISIONER" --version
	expect "pause -v" "v$pause_version-" "$PAUSE" -v
	# The images: each entrypoint, with no network.
	for b in kube-apiserver kube-controller-manager kube-scheduler kube-proxy; do
		spec "$b"
		expect "image $b" "Kubernetes $K8S_VERSION" "${run[@]}" "$ref" --version
	done
	spec etcd && expect "image etcd" "etcd Version: ${KIND_ETCD_VERSION#v}" "${run[@]}" "$ref" --version
	spec coredns && expect "image coredns" "CoreDNS-${COREDNS_VERSION#v}" "${run[@]}" "$ref" -version
	spec pause && expect "image pause" "v$pause_version-" "${run[@]}" "$ref" -v
	spec kube-router && expect "image kube-router" "$KUBE_ROUTER_VERSION" "${run[@]}" "$ref" --version
	# ipset asks the kernel for its protocol version: that needs NET_ADMIN.
	expect "image kube-router: ipset, ip" "iproute2" "${run[@]}" --cap-add NET_ADMIN --entrypoint /bin/sh "$ref" -c 'ipset --version && ip -V'
	spec local-path-provisioner && expect "image local-path-provisioner" "$LOCAL_PATH_VERSION" "${run[@]}" "$ref" --version
	# shellcheck disable=SC2016 # the helper's shell expands it
	spec local-path-helper && expect "image local-path-helper" "made and removed" "${run[@]}" "$ref" \
		-c 'set -eu; d=/tmp/pv/a; mkdir -m 0777 -p "$d"; rm -rf /tmp/pv; echo made and removed'
	# iptables in the images that write rules: the wrapper picks a back end and iptables runs.
	for name in kube-proxy kube-router; do
		spec "$name"
		expect "image $name: iptables-wrapper" "Chain INPUT" "${run[@]}" --cap-add NET_ADMIN --entrypoint /bin/sh "$ref" \
			-c 'iptables-wrapper && iptables -L -n && conntrack --version'
	done
	# kubeadm's list is exactly the images built under kubeadm's names.
	local want have
	want="$("$KUBE_BIN/kubeadm" config images list --kubernetes-version "$K8S_VERSION" 2>/dev/null | LC_ALL=C sort)"
	have="$(list | grep '^registry.k8s.io/' | LC_ALL=C sort)"
	[ "$want" = "$have" ] || die "kubeadm config images list differs from the images built:$(diff <(echo "$want") <(echo "$have"))"
	log "ok kubeadm config images list = the $(wc -l <<<"$want") registry.k8s.io images built"
	# Every image the manifests name is built here.
	local img
	# shellcheck disable=SC2013 # references have no spaces
	for img in $(grep -hoE '(docker\.io|registry\.k8s\.io)/[^ "]*' "$components"/manifests/*.yaml | sort -u); do
		list | grep -qxF "$img" || die "$img (deploy/kind/components/manifests) is not built here"
	done
	log "ok every image of deploy/kind/components/manifests is built here"
}

case "${1:-}" in
all) all ;;
node-inputs) all >&2 && grep -v '^#' "$cache/components.env" ;;
check) check ;;
build)
	shift
	[ $# -gt 0 ] || { echo "usage: images.sh build NAME..." >&2; exit 2; }
	for n in "$@"; do build "$n" >/dev/null; done ;;
tarball)
	all >&2
	tarball "$cache"/images/kube-{apiserver,controller-manager,scheduler,proxy}-????????????????.tar ;;
list) list ;;
*) echo "usage: images.sh all|check|list" >&2; exit 2 ;;
esac
