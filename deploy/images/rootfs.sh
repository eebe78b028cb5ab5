#!/usr/bin/env bash
# Builds (once) a Debian bookworm root file system as a Docker image, for the images that
# need a shell or Debian packages here, where no container registry is reachable.
#
#   rootfs.sh NAME PKG[,PKG...]
#
# Ensures the image customerapi/rootfs-NAME:<hash> exists and prints its reference on
# stdout (logs go to stderr). <hash> is the first 12 hex digits of the sha256 of the
# package list (sorted, without duplicates) and of this script, so a changed list or a
# changed recipe builds a new image; a second call with the same inputs returns at once.
#
# The file system is made on the host with
#   debootstrap --variant=minbase --include=PKGS bookworm DIR http://deb.debian.org/debian
# (debootstrap is installed with apt-get when missing; this needs root), cleaned of apt's
# lists and caches, documentation and man pages, imported with `docker import`, and the
# directory is deleted afterwards. Calls for the same NAME and packages are serialised
# with a lock, so two callers at once build it once.
#
# Environment: DEBIAN_MIRROR (default http://deb.debian.org/debian), DEBIAN_SUITE
# (default bookworm; part of the hash).
set -euo pipefail

usage() { echo "usage: rootfs.sh NAME PKG[,PKG...]" >&2; exit 2; }
[ $# -eq 2 ] || usage
name="$1"
[[ "$name" =~ ^[a-z0-9][a-z0-9._-]*$ ]] || { echo "rootfs.sh: NAME must be lower-case letters, digits, . _ -" >&2; exit 2; }

root="$(cd "$(dirname "$0")/../.." && pwd)"
script="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
docker=/usr/bin/docker
suite="${DEBIAN_SUITE:-bookworm}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

# The package list, normalised: order and repeats do not change the image.
pkgs="$(tr ',' '\n' <<<"$2" | sed 's/[[:space:]]//g' | grep -v '^$' | sort -u | paste -sd, -)"
[ -n "$pkgs" ] || usage

hash="$( { printf 'suite=%s\npackages=%s\n' "$suite" "$pkgs"; cat "$script"; } | sha256sum | cut -c1-12)"
ref="customerapi/rootfs-$name:$hash"

log() { echo "rootfs.sh: $*" >&2; }
exists() { "$docker" image inspect "$ref" >/dev/null 2>&1; }

"$root/deploy/images/dockerd.sh" start

if exists; then
	echo "$ref"
	exit 0
fi

cache="$root/.cache/rootfs"
mkdir -p "$cache"
exec 9>"$cache/$name-$hash.lock"
flock 9
if exists; then # built by a concurrent call while we waited for the lock
	echo "$ref"
	exit 0
fi

if ! command -v debootstrap >/dev/null 2>&1; then
	if [ "$(id -u)" != 0 ]; then
		log "debootstrap is missing; install it (as root: apt-get install debootstrap)"
		exit 1
	fi
	log "installing debootstrap"
	apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >&2
fi

dir="$cache/$name-$hash.tmp"
cleanup() {
	# debootstrap may leave /proc or /sys mounted in the target when it fails.
	for m in proc sys dev/pts dev; do
		if mountpoint -q "$dir/$m" 2>/dev/null; then umount -l "$dir/$m" || true; fi
	done
	rm -rf "$dir"
}
trap cleanup EXIT
cleanup
mkdir -p "$dir"

start=$(date +%s)
log "debootstrap $suite ($pkgs) into $dir"
if ! debootstrap --variant=minbase --include="$pkgs" "$suite" "$dir" "$mirror" >"$cache/$name-$hash.log" 2>&1; then
	log "debootstrap failed; the end of $cache/$name-$hash.log:"
	tail -n 30 "$cache/$name-$hash.log" >&2
	[ -f "$dir/debootstrap/debootstrap.log" ] && tail -n 30 "$dir/debootstrap/debootstrap.log" >&2
	exit 1
fi

# Clean: nothing of apt's state an image needs, no documentation.
rm -rf "$dir"/var/lib/apt/lists/* "$dir"/var/cache/apt/* "$dir"/var/cache/debconf/*-old \
	"$dir"/usr/share/doc/* "$dir"/usr/share/man/* "$dir"/usr/share/info/* \
	"$dir"/var/log/* "$dir"/tmp/* "$dir"/var/tmp/* "$dir"/debootstrap
mkdir -p "$dir/var/lib/apt/lists/partial" "$dir/var/cache/apt/archives/partial"
# An image has no host name or resolver of its own; Docker provides both at run time.
: >"$dir/etc/hostname"
rm -f "$dir/etc/resolv.conf"

log "importing $ref"
tar --numeric-owner -C "$dir" -c . |
	"$docker" import \
		--change "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
		--change 'CMD ["/bin/bash"]' \
		--change "LABEL org.customerapi.rootfs.packages=$pkgs org.customerapi.rootfs.suite=$suite" \
		- "$ref" >/dev/null
log "built $ref in $(($(date +%s) - start)) s ($("$docker" image inspect -f '{{.Size}}' "$ref" | numfmt --to=iec))"
echo "$ref"
