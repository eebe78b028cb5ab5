# Shared by the scripts in deploy/kind (kind.sh, test-kind.sh, devloop.sh): sourced, never
# run. The script sets `root` (the checkout) and `prog` (its name in messages) first.
# shellcheck shell=bash disable=SC2154 # root and prog come from the script that sources this

log() { echo "$prog: $*" >&2; }
die() { log "$*"; exit 1; }
now() { date +%s.%N; }
# since T: seconds from T (a `now`) until now, one decimal.
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# newest GLOBS: the most recent executable the globs name (never a .tmp build in progress).
newest() {
	local f
	# shellcheck disable=SC2086,SC2010 # the globs are meant to expand; the names are ours
	f="$(ls -t $1 2>/dev/null | grep -v '\.tmp/' | head -n 1 || true)"
	[ -n "$f" ] && [ -x "$f" ] && echo "$f"
}

# tool VAR GLOBS HOW: $VAR when it names an executable, else the newest build the globs
# name in .cache, else the first GLOB's base name on the PATH; HOW says what builds it.
tool() {
	local var="$1" glob="$2" how="$3" name found
	name="$(basename "${glob%% *}")"
	if [ -n "${!var:-}" ]; then
		[ -x "${!var}" ] || die "$var=${!var} is not an executable"
		echo "${!var}"
	elif found="$(newest "$glob")"; then
		echo "$found"
	elif found="$(command -v "$name")"; then
		echo "$found"
	else
		die "$name is missing: $how (or set $var)"
	fi
}

# docker_on_path DIR: DIR first on the PATH with the `docker` kind and skaffold call. kind
# runs `docker run/exec --privileged`, which hosts that cannot grant every capability refuse:
# there it is deploy/kind/docker-wrapper.sh; elsewhere Debian's client (deploy/images/dockerd.sh).
docker_on_path() {
	local dir="$1" why
	mkdir -p "$dir"
	if why="$("$root/deploy/kind/docker-wrapper.sh" needed)"; then
		ln -sfn "$root/deploy/kind/docker-wrapper.sh" "$dir/docker"
		log "kind calls deploy/kind/docker-wrapper.sh as docker: $why"
	else
		ln -sfn /usr/bin/docker "$dir/docker"
	fi
	case ":$PATH:" in *":$dir:"*) ;; *) export PATH="$dir:$PATH" ;; esac
}
