#!/usr/bin/env bash
# Builds every image the Helm chart (helm/customer-api) needs, locally, with `docker build`
# of the project's Dockerfiles (deploy/docker): the gateway and each service, and the
# development dependencies (PostgreSQL from Debian's packages, the development
# Kafka-protocol broker, busybox for `helm test`).
#
#   images.sh [all]          start the daemon, build the stand-ins and every image; print
#                            one line per image with its time, then the references built
#   images.sh build NAME...  build these images only (gateway, topics, ..., devbroker,
#                            postgresql, busybox); with IMAGE set (skaffold's custom
#                            builder), the one NAME is built as that full reference
#   images.sh list           print the references the chart needs (for `kind load`)
#   images.sh names          print the image names images.sh builds
#   images.sh standins       build the local base images only, print their references
#
# Environment:
#   IMAGE_TAG    tag of the gateway's and the services' images (default dev)
#   DEPS_TAG     tag of the development dependencies' images, devbroker, postgresql and
#                busybox (default dev, as helm/customer-api/values-kind.yaml names them)
#   IMAGE_PREFIX repository prefix of every image (default customerapi)
#   IMAGES_BASE  local (default): no registry is needed. The Dockerfiles' base images
#                (build ARGs defaulting to the public golang, distroless and debian images)
#                point at stand-ins built here: a Go build image made of a Debian root
#                file system (rootfs.sh) and the host's Go toolchain, a FROM-scratch
#                runtime image; every build runs with --network none, the Go modules
#                coming from a `go work vendor` directory in the build context, prepared
#                on the host (cached by the go.work/go.mod/go.sum files).
#                public: the Dockerfiles' public base images and the network, as anywhere
#                a registry is reachable (the modules are then downloaded in the build).
#   IMAGE        full reference of the image `build NAME` produces (skaffold sets it)
#
# Everything cached lives under .cache/images (git-ignored). Builds are serialised with a
# lock (one shared build context). Logs go to stderr; references to stdout.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
here="$root/deploy/images"
docker=/usr/bin/docker
tag="${IMAGE_TAG:-dev}"
deps_tag="${DEPS_TAG:-dev}"
prefix="${IMAGE_PREFIX:-customerapi}"
base="${IMAGES_BASE:-local}"
cache="$root/.cache/images"
export DOCKER_BUILDKIT=1

log() { echo "images.sh: $*" >&2; }
die() { log "$*"; exit 1; }
case "$base" in local | public) ;; *) die "IMAGES_BASE must be local or public, not $base" ;; esac

# The images: the deployables (one generated Dockerfile each), then the dependencies.
services() {
	local f
	for f in "$root"/deploy/docker/*.Dockerfile; do
		f="${f##*/}"
		echo "${f%.Dockerfile}"
	done | sort
}
deps() { printf '%s\n' devbroker postgresql busybox; }
names() { services; deps; }
ref_of() {
	case "$1" in
	devbroker | postgresql | busybox) echo "$prefix/$1:$deps_tag" ;;
	*) echo "$prefix/$1:$tag" ;;
	esac
}

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
size_of() { "$docker" image inspect -f '{{.Size}}' "$1" | numfmt --to=iec --suffix=B; }

# sha256 (12 hex digits) of the files and strings given: path arguments are read, others
# are taken as they are.
hash_of() {
	local a
	for a in "$@"; do
		if [ -f "$a" ]; then printf '%s\n' "$a"; cat "$a"; else printf '%s\n' "$a"; fi
	done | sha256sum | cut -c1-12
}

# has REF HASH: the image exists and was built from inputs of that hash.
has() {
	[ "$("$docker" image inspect -f '{{index .Config.Labels "org.customerapi.inputs"}}' "$1" 2>/dev/null)" = "$2" ]
}

# --- stand-ins for the public base images -------------------------------------------------

build_image="" runtime_image=""

# One Debian root file system serves every local base: debootstrap is the slow part of a
# cold build (minutes each), so it runs once, with the packages of all the images.
rootfs_pkgs="ca-certificates,busybox-static,postgresql-15"
rootfs() { "$here/rootfs.sh" images "$rootfs_pkgs"; }

standins() {
	if [ "$base" = public ]; then
		build_image="" runtime_image=""
		return 0
	fi
	local rootfs gover h start ctx
	rootfs="$(rootfs)"
	command -v go >/dev/null || die "go is missing (the Go build image copies the host's toolchain)"
	gover="$(go env GOVERSION)"
	gover="${gover#go}"
	local goroot
	goroot="$(go env GOROOT)"

	# The Go build image: the root file system plus the host's toolchain.
	build_image="$prefix/local-golang:$gover-bookworm"
	h="$(hash_of "$rootfs" "$gover" "$goroot" "$root/deploy/docker/local/golang.Dockerfile")"
	if ! has "$build_image" "$h"; then
		start="$(now)"
		ctx="$cache/golang-$gover"
		if [ ! -d "$ctx/go" ]; then
			rm -rf "$ctx.tmp" && mkdir -p "$ctx.tmp"
			# Hard links where the toolchain is on the same file system, a copy otherwise.
			cp -al "$goroot" "$ctx.tmp/go" 2>/dev/null || { rm -rf "$ctx.tmp/go"; cp -a "$goroot" "$ctx.tmp/go"; }
			rm -rf "$ctx" && mv "$ctx.tmp" "$ctx"
		fi
		"$docker" build -q --network none -f "$root/deploy/docker/local/golang.Dockerfile" \
			--build-arg ROOTFS_IMAGE="$rootfs" --label org.customerapi.inputs="$h" \
			-t "$build_image" "$ctx" >/dev/null
		log "$build_image built in $(since "$start") s ($(size_of "$build_image"))"
	fi

	# The runtime image: CA certificates, users, /tmp, on scratch.
	h="$(hash_of "$rootfs" "$root/deploy/docker/local/static.Dockerfile")"
	runtime_image="$prefix/local-static:$h"
	if ! has "$runtime_image" "$h"; then
		start="$(now)"
		"$docker" build -q --network none -f "$root/deploy/docker/local/static.Dockerfile" \
			--build-arg ROOTFS_IMAGE="$rootfs" --label org.customerapi.inputs="$h" \
			-t "$runtime_image" "$root/deploy/docker/local" >/dev/null
		log "$runtime_image built in $(since "$start") s ($(size_of "$runtime_image"))"
	fi
}

# --- the build context of the Go images ---------------------------------------------------

# vendor_dir prints the `go work vendor` directory of the workspace's current module
# requirements, making it when missing (downloads through the Go module proxy, on the host).
vendor_dir() {
	local mods files=() m h dir
	mods="$(cd "$root" && go work edit -json | sed -n 's/.*"DiskPath": "\(.*\)".*/\1/p')"
	files=("$root/go.work")
	[ -f "$root/go.work.sum" ] && files+=("$root/go.work.sum")
	for m in $mods; do
		files+=("$root/$m/go.mod")
		[ -f "$root/$m/go.sum" ] && files+=("$root/$m/go.sum")
	done
	h="$(hash_of "$(go env GOVERSION)" "${files[@]}")"
	dir="$cache/vendor-$h"
	if [ ! -f "$dir/modules.txt" ]; then
		local start
		start="$(now)"
		rm -rf "$dir.tmp"
		(cd "$root" && GOFLAGS=-mod=mod go work vendor -o "$dir.tmp") >&2
		rm -rf "$dir" && mv "$dir.tmp" "$dir"
		# Older vendor directories are of requirements that changed.
		find "$cache" -maxdepth 1 -name 'vendor-*' ! -name "vendor-$h" -exec rm -rf {} +
		log "go work vendor in $(since "$start") s ($(du -sh "$dir" | cut -f1))"
	fi
	echo "$dir"
}

# context prints the build context of the Go images: the working tree's files that git
# tracks or does not ignore (so an uncommitted change is built, as skaffold expects), with
# their modification times, plus vendor/ in local mode. The directory keeps its path, so
# BuildKit sends only what changed since the previous build.
context() {
	local ctx="$cache/context" new="$cache/context.new"
	rm -rf "$new" && mkdir -p "$new"
	(cd "$root" && git ls-files -z -co --exclude-standard |
		while IFS= read -r -d '' f; do [ -f "$f" ] && printf '%s\0' "$f"; done |
		tar --null -T - -cf -) | tar -C "$new" -xf -
	if [ "$base" = local ]; then
		cp -al "$(vendor_dir)" "$new/vendor"
	fi
	rm -rf "$ctx" && mv "$new" "$ctx"
	echo "$ctx"
}

# --- builds -------------------------------------------------------------------------------

revision() {
	local r
	r="$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
	if [ "$r" != unknown ] && ! git -C "$root" diff --quiet HEAD -- 2>/dev/null; then
		r="$r-dirty"
	fi
	echo "$r"
}

ctx_dir="" # made once per run, by the first Go image that needs it
rev="" created=""

# build NAME REF: builds one image.
build() {
	local name="$1" ref="$2" start net=() args=() file dir
	start="$(now)"
	[ "$base" = local ] && net=(--network none)
	args=(--build-arg VERSION="${ref##*:}" --build-arg REVISION="$rev" --build-arg CREATED="$created")
	case "$name" in
	postgresql | busybox)
		file="$root/deploy/docker/dev/$name.Dockerfile"
		dir="$root/deploy/docker/dev"
		[ "$base" = local ] && args+=(--build-arg BASE_IMAGE="$(rootfs)")
		;;
	*)
		if [ "$name" = devbroker ]; then
			file="deploy/docker/dev/devbroker.Dockerfile"
		else
			file="deploy/docker/$name.Dockerfile"
		fi
		[ -f "$root/$file" ] || die "no image named $name (images.sh names lists them)"
		[ -n "$ctx_dir" ] || ctx_dir="$(context)"
		dir="$ctx_dir"
		file="$dir/$file"
		if [ "$base" = local ]; then
			args+=(--build-arg BUILD_IMAGE="$build_image" --build-arg RUNTIME_IMAGE="$runtime_image")
		fi
		;;
	esac
	local out="$cache/logs/$name.log"
	mkdir -p "$cache/logs"
	if ! "$docker" build --progress plain "${net[@]}" "${args[@]}" -f "$file" -t "$ref" "$dir" >"$out" 2>&1; then
		log "building $ref failed; the end of $out:"
		tail -n 40 "$out" >&2
		exit 1
	fi
	log "$ref built in $(since "$start") s ($(size_of "$ref"))"
}

main() {
	local cmd="${1:-all}"
	[ $# -gt 0 ] && shift
	case "$cmd" in
	list)
		for n in $(names); do ref_of "$n"; done
		return 0
		;;
	names)
		names
		return 0
		;;
	all | build | standins) ;;
	*) die "usage: images.sh [all | build NAME... | list | names | standins]" ;;
	esac

	"$here/dockerd.sh" start
	mkdir -p "$cache"
	exec 8>"$cache/.lock"
	flock 8

	local total
	total="$(now)"
	# One revision for every image of the run (the commit, "-dirty" with uncommitted
	# changes), and its commit time as the creation time, so an unchanged tree rebuilds
	# nothing.
	rev="$(revision)"
	created="$(git -C "$root" log -1 --format=%cI 2>/dev/null || echo unknown)"
	standins
	if [ "$cmd" = standins ]; then
		[ -n "$build_image" ] && printf '%s\n%s\n' "$build_image" "$runtime_image"
		return 0
	fi

	local todo=() built=() n
	if [ "$cmd" = all ]; then
		mapfile -t todo < <(names)
	else
		[ $# -gt 0 ] || die "usage: images.sh build NAME..."
		todo=("$@")
		if [ -n "${IMAGE:-}" ] && [ $# -ne 1 ]; then
			die "IMAGE names one reference: build one image with it"
		fi
	fi
	local known
	known="$(names)"
	for n in "${todo[@]}"; do
		grep -qx -- "$n" <<<"$known" || die "no image named $n (images.sh names lists them)"
	done
	for n in "${todo[@]}"; do
		local ref
		ref="$(ref_of "$n")"
		[ "$cmd" = build ] && [ -n "${IMAGE:-}" ] && ref="$IMAGE"
		build "$n" "$ref"
		built+=("$ref")
	done
	log "${#built[@]} image(s) in $(since "$total") s"
	printf '%s\n' "${built[@]}"
}

main "$@"
