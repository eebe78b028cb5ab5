#!/usr/bin/env bash
# Builds the kind node image, offline, and prints its reference (logs on stderr).
#
#   deploy/kind/node/build.sh            ensure customerapi/kind-node:<k8s version>-<hash>
#   deploy/kind/node/build.sh --print    print the reference it would build, build nothing
#
# Two steps, each cached under a hash of its inputs (a second call returns at once):
#  1. the base image customerapi/kind-base:<hash>: a Debian bookworm root file system
#     (deploy/images/rootfs.sh kindnode <./packages>) + kind v0.33.0's base files (./files)
#     + containerd and crictl, with ./Dockerfile, built with `docker build --network none`;
#  2. the node image: what `kind build node-image` does, without its registry pulls and its
#     compiled-in kindnetd/local-path manifests (pkg/build/nodeimage/buildcontext.go): in a
#     container of the base image (--network none) the kubeadm, kubelet and kubectl binaries
#     go to /usr/bin, the version to /kind/version, the CNI and storage manifests to
#     /kind/manifests, every image kubeadm and the manifests need is imported (pinned) into
#     containerd's k8s.io namespace from `docker save`, then `docker commit`.
# The components come from .cache/kind/components.env, which `make kind-components`
# (deploy/kind/images.sh all, deploy/kind/COMPONENTS.md) writes; $KIND_COMPONENTS_ENV
# names another file.
# Needs root for debootstrap on the first run; downloads happen there only (Debian).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
docker=/usr/bin/docker
log() { echo "node/build.sh: $*" >&2; }
die() { log "$*"; exit 1; }

# --- inputs: the components (deploy/kind/COMPONENTS.md), as deploy/kind/images.sh all
# writes them (K8S_VERSION, K8S_BIN_DIR, CONTAINERD_BIN_DIR, CRICTL, IMAGES, IMAGE_ARCHIVES,
# PAUSE_IMAGE, MANIFESTS_DIR).
components_env="${KIND_COMPONENTS_ENV:-$root/.cache/kind/components.env}"
[ -f "$components_env" ] || die "$components_env is missing: make kind-components (deploy/kind/kind-tools.mk)"
# shellcheck disable=SC1090
. "$components_env"
for key in K8S_VERSION K8S_BIN_DIR CONTAINERD_BIN_DIR CRICTL IMAGES IMAGE_ARCHIVES PAUSE_IMAGE MANIFESTS_DIR; do
	[ -n "${!key:-}" ] || die "$key is not set in $components_env"
done
for b in containerd containerd-shim-runc-v2 ctr; do
	[ -x "$CONTAINERD_BIN_DIR/$b" ] || die "$CONTAINERD_BIN_DIR/$b is missing"
done
for b in kubeadm kubelet kubectl; do
	[ -x "$K8S_BIN_DIR/$b" ] || die "$K8S_BIN_DIR/$b is missing"
done
[ -x "$CRICTL" ] || die "$CRICTL (crictl) is missing"
for m in default-cni.yaml default-storage.yaml; do
	[ -f "$MANIFESTS_DIR/$m" ] || die "$MANIFESTS_DIR/$m is missing"
done
for a in $IMAGE_ARCHIVES; do
	[ -f "$a" ] || die "image archive $a is missing"
done

sha() { sha256sum "$@" | awk '{print $1}'; }

pkgs="$(grep -v '^#' "$here/packages" | grep -v '^[[:space:]]*$' | paste -sd, -)"
# The node's recipe: this directory (Dockerfile, files, packages, this script).
recipe="$(cd "$here" && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-64)"
containerd_sum="$(cd "$CONTAINERD_BIN_DIR" && sha containerd containerd-shim-runc-v2 ctr | paste -sd, -),$(sha "$CRICTL")"

# --print needs the rootfs reference without building it: rootfs.sh's hash is its own, so ask
# for the image only when it exists; otherwise hash the inputs that make it.
base_key="$(printf 'pkgs=%s\nrecipe=%s\ncontainerd=%s\nrootfs.sh=%s\n' "$pkgs" "$recipe" "$containerd_sum" \
	"$(sha "$root/deploy/images/rootfs.sh")" | sha256sum | cut -c1-12)"
base_ref="customerapi/kind-base:$base_key"

image_ids=""
for ref in $IMAGES; do
	id="$("$docker" image inspect -f '{{.Id}}' "$ref" 2>/dev/null)" || die "image $ref is not present locally (the components build it: deploy/kind/images.sh)"
	image_ids+="$ref@$id "
done
node_key="$(printf 'base=%s\nversion=%s\nk8s=%s\nmanifests=%s\nimages=%s\n' "$base_key" "$K8S_VERSION" \
	"$(cd "$K8S_BIN_DIR" && sha kubeadm kubelet kubectl | paste -sd, -)" \
	"$(cd "$MANIFESTS_DIR" && sha default-cni.yaml default-storage.yaml | paste -sd, -)" \
	"$image_ids" | sha256sum | cut -c1-12)"
node_ref="customerapi/kind-node:$K8S_VERSION-$node_key"

if [ "${1:-}" = --print ]; then
	echo "$node_ref"
	exit 0
fi
exists() { "$docker" image inspect "$1" >/dev/null 2>&1; }
if exists "$node_ref"; then
	echo "$node_ref"
	exit 0
fi

# One build at a time per node image.
mkdir -p "$root/.cache/kind"
exec 9>"$root/.cache/kind/node-build.lock"
flock 9
if exists "$node_ref"; then
	echo "$node_ref"
	exit 0
fi

start=$(date +%s)

# --- 1. the base image
if ! exists "$base_ref"; then
	rootfs="$("$root/deploy/images/rootfs.sh" kindnode "$pkgs")"
	ctx="$(mktemp -d "$root/.cache/kind/base-ctx.XXXXXX")"
	trap 'rm -rf "$ctx"' EXIT
	cp -a "$here/Dockerfile" "$here/files" "$ctx/"
	mkdir "$ctx/containerd"
	cp "$CONTAINERD_BIN_DIR"/{containerd,containerd-shim-runc-v2,ctr} "$CRICTL" "$ctx/containerd/"
	log "building $base_ref from $rootfs"
	DOCKER_BUILDKIT=1 "$docker" build --network none --build-arg ROOTFS="$rootfs" \
		--label org.customerapi.kind-base.rootfs="$rootfs" -t "$base_ref" "$ctx" >&2
	rm -rf "$ctx"
	trap - EXIT
	log "built $base_ref in $(($(date +%s) - start)) s"
fi

# --- 2. the node image
cid="customerapi-kind-node-build-$$"
cleanup() { "$docker" rm -f -v "$cid" >/dev/null 2>&1 || true; }
trap cleanup EXIT
log "building $node_ref in container $cid"
"$docker" run -d --name "$cid" --network none --entrypoint sleep \
	--security-opt seccomp=unconfined "$base_ref" infinity >/dev/null
in_node() { "$docker" exec -i "$cid" "$@"; }

for b in kubeadm kubelet kubectl; do
	"$docker" cp "$K8S_BIN_DIR/$b" "$cid:/usr/bin/$b"
	in_node chown root:root "/usr/bin/$b"
	in_node chmod 755 "/usr/bin/$b"
done
printf '%s' "$K8S_VERSION" | in_node sh -c 'cat >/kind/version'
for m in default-cni.yaml default-storage.yaml; do
	"$docker" cp "$MANIFESTS_DIR/$m" "$cid:/kind/manifests/$m"
	in_node chmod 644 "/kind/manifests/$m"
done
in_node kubeadm version -o short >&2

# containerd in the build container only imports (--no-unpack): no mounts, no network.
in_node sh -c 'mkdir -p /var/log && nohup containerd >/var/log/containerd-build.log 2>&1 &'
for _ in $(seq 1 60); do
	in_node ctr version >/dev/null 2>&1 && break
	sleep 0.5
done
in_node ctr version >/dev/null || {
	in_node tail -n 30 /var/log/containerd-build.log >&2 || true
	die "containerd did not start in the build container"
}
# The archives are `docker save`s of IMAGES (images.sh all), one image each.
for a in $IMAGE_ARCHIVES; do
	log "importing $(basename "$a")"
	in_node ctr --namespace=k8s.io images import --label=io.cri-containerd.pinned=pinned \
		--all-platforms --no-unpack --digests - <"$a" >/dev/null
done

# Every image kubeadm needs and the sandbox image must now be there under its exact name:
# the nodes have no registry to fall back on.
imported="$(in_node ctr --namespace=k8s.io images list -q)"
sandbox="$(in_node sed -n 's/^ *sandbox_image *= *"\(.*\)"/\1/p' /etc/containerd/config.toml)"
[ "$sandbox" = "$PAUSE_IMAGE" ] || die "containerd's sandbox image is $sandbox, the components' pause is $PAUSE_IMAGE"
required="$(in_node kubeadm config images list --kubernetes-version "$K8S_VERSION" | grep -v /pause:) $sandbox"
# A reference as containerd names it: docker.io/ and library/ where Docker leaves them out.
normalize() {
	local ref="$1" first="${1%%/*}"
	if [[ "$ref" != */* ]]; then
		ref="docker.io/library/$ref"
	elif [[ "$first" != *.* && "$first" != *:* && "$first" != localhost ]]; then
		ref="docker.io/$ref"
	fi
	echo "$ref"
}
for ref in $IMAGES; do
	required+=" $(normalize "$ref")"
done
missing=""
for ref in $required; do
	grep -qxF "$ref" <<<"$imported" || missing+=" $ref"
done
[ -z "$missing" ] || die "not in the node's containerd after the import:$missing (imported: $(grep -v '^sha256:' <<<"$imported" | paste -sd' ' -))"

# shellcheck disable=SC2016 # expanded by the node's shell
in_node sh -c 'kill $(cat /run/containerd/containerd.pid 2>/dev/null || pidof containerd)' || true
for _ in $(seq 1 40); do
	in_node sh -c 'pidof containerd >/dev/null' || break
	sleep 0.5
done
in_node rm -rf /var/log/containerd-build.log /run/containerd /tmp/*

"$docker" commit \
	--change 'ENTRYPOINT [ "/usr/local/bin/entrypoint", "/sbin/init" ]' \
	--change 'CMD []' \
	--change "LABEL org.customerapi.kind-node.base=$base_ref org.customerapi.kind-node.kubernetes=$K8S_VERSION" \
	"$cid" "$node_ref" >/dev/null
cleanup
trap - EXIT
log "built $node_ref in $(($(date +%s) - start)) s ($("$docker" image inspect -f '{{.Size}}' "$node_ref" | numfmt --to=iec))"
echo "$node_ref"
