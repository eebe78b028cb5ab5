#!/bin/sh
# iptables-wrapper: picks the iptables back end (legacy or nft) the node uses, for a
# container that shares the node's network namespace (kube-proxy, kube-router), as
# kubernetes-sigs/iptables-wrappers does for the upstream kube-proxy image. Rules written
# with the other back end than the node's (kubelet, kind's entrypoint) would be invisible
# to them and break the node's networking.
#
# Installed (by the image's Dockerfile) as /usr/sbin/iptables-wrapper, with iptables,
# iptables-save, iptables-restore and the ip6tables ones pointing at it. Its first call
# decides, points those names at Debian's iptables-<mode> binaries (each link replaced
# atomically) and runs the command it was called as; later calls go straight to them.
# Called as iptables-wrapper, it decides and prints the chosen back end.
#
# The decision: the back end in which the kubelet made its hint chain (KUBE-IPTABLES-HINT
# or KUBE-KUBELET-CANARY in the mangle table); without one, the back end with more rules;
# a tie means nft (Debian bookworm's default).
set -eu

sbin=/usr/sbin

hints() {
	# $1: legacy or nft
	{ "$sbin/iptables-$1-save" -t mangle || true; "$sbin/ip6tables-$1-save" -t mangle || true; } 2>/dev/null |
		grep -cE '^:(KUBE-IPTABLES-HINT|KUBE-KUBELET-CANARY)' || true
}

rules() {
	{ "$sbin/iptables-$1-save" || true; "$sbin/ip6tables-$1-save" || true; } 2>/dev/null | grep -c '^-' || true
}

if [ "$(hints nft)" -gt 0 ]; then
	mode=nft
elif [ "$(hints legacy)" -gt 0 ]; then
	mode=legacy
elif [ "$(rules legacy)" -gt "$(rules nft)" ]; then
	mode=legacy
else
	mode=nft
fi

for cmd in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
	target="$sbin/$(echo "$cmd" | sed "s/^\(ip6\{0,1\}tables\)/\1-$mode/")"
	ln -sf "$target" "$sbin/.$cmd.$$"
	mv -fT "$sbin/.$cmd.$$" "$sbin/$cmd"
done

name="$(basename "$0")"
if [ "$name" = iptables-wrapper ]; then
	echo "iptables-$mode"
	exit 0
fi
exec "$sbin/$name" "$@"
