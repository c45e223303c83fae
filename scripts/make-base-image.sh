#!/usr/bin/env bash
# Make a Debian bookworm base image without a registry: debootstrap a minimal root file system
# from this host's Debian mirror and `docker import` it.
#
#   scripts/make-base-image.sh [--force] [NAME:TAG]     (default NAME:TAG: edgehub-base:bookworm)
#
# The image carries python3, python3-venv and ca-certificates, so builds FROM it need no apt, and
# its /etc/apt/sources.list points at the same mirror, so `apt-get install` still works in builds.
# The mirror is read from /etc/apt/sources.list or /etc/apt/sources.list.d/*.list|*.sources;
# EDGEHUB_DEBIAN_MIRROR overrides it. Needs root (debootstrap) and a reachable Docker daemon.
# Use it as: hub images build onnxruntime --base edgehub-base:bookworm
set -euo pipefail

SUITE=bookworm
INCLUDE=python3,python3-venv,ca-certificates
PATH_ENV=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

die() {
    echo "make-base-image: $*" >&2
    exit 1
}

force=0
name=""
for arg in "$@"; do
    case "$arg" in
    --force) force=1 ;;
    -h | --help)
        sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    -*) die "unknown option '$arg'; usage: $0 [--force] [NAME:TAG]" ;;
    *)
        [ -z "$name" ] || die "more than one image name given; usage: $0 [--force] [NAME:TAG]"
        name="$arg"
        ;;
    esac
done
name="${name:-edgehub-base:$SUITE}"

command -v docker >/dev/null 2>&1 || die "the docker CLI is not installed; run scripts/ci-docker.sh start"
docker info >/dev/null 2>&1 || die "cannot reach the Docker daemon; run scripts/ci-docker.sh start"

if [ "$force" -eq 0 ] && docker image inspect "$name" >/dev/null 2>&1; then
    echo "image $name already exists; nothing to do (use --force to rebuild it)"
    exit 0
fi

[ "$(id -u)" -eq 0 ] || die "debootstrap needs root; run this script with sudo"
command -v debootstrap >/dev/null 2>&1 ||
    die "debootstrap is not installed; run: apt-get install -y debootstrap"

# The first Debian archive URI of this host that carries $SUITE itself (not $SUITE-security):
# a one-line `deb [options] URI SUITE ...` entry, or the URIs field of a deb822 stanza.
list_mirror() {
    awk -v suite="$SUITE" '
        $1 == "deb" {
            i = 2
            if ($i ~ /^\[/) { while ($i !~ /\]$/ && i < NF) i++; i++ }
            if ($(i + 1) == suite) { print $i; exit }
        }' "$1"
}
sources_mirror() {
    awk -v suite="$SUITE" '
        function flush() {
            if (uris != "" && enabled && (" " suites " ") ~ (" " suite " ")) {
                n = split(uris, u, " "); print u[1]; done = 1
            }
            uris = ""; suites = ""; enabled = 1
        }
        BEGIN { enabled = 1 }
        done { exit }
        /^[[:space:]]*$/ { flush(); next }
        /^[[:space:]]*#/ { next }
        tolower($1) == "uris:" { $1 = ""; uris = $0; next }
        tolower($1) == "suites:" { $1 = ""; suites = $0; next }
        tolower($1) == "enabled:" && tolower($2) == "no" { enabled = 0 }
        END { if (!done) flush() }' "$1" | head -n 1
}
host_mirror() {
    local f found=""
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        case "$f" in
        *.sources) found="$(sources_mirror "$f")" ;;
        *) found="$(list_mirror "$f")" ;;
        esac
        if [ -n "$found" ]; then
            echo "$found"
            return 0
        fi
    done
}

mirror="${EDGEHUB_DEBIAN_MIRROR:-$(host_mirror)}"
[ -n "$mirror" ] || die "found no Debian '$SUITE' archive in /etc/apt/sources.list or" \
    "/etc/apt/sources.list.d/; set EDGEHUB_DEBIAN_MIRROR to a Debian mirror URL"
echo "debootstrap $SUITE from $mirror"

workdir="$(mktemp -d "${TMPDIR:-/tmp}/edgehub-base.XXXXXX")"
rootfs="$workdir/rootfs"
unmount_all() {
    # debootstrap mounts /proc, /sys (and, in containers, host device nodes) inside the rootfs;
    # never delete through a mount.
    [ -d "$rootfs" ] || return 0
    awk -v root="$rootfs/" 'index($2, root) == 1 { print $2 }' /proc/mounts | sort -r |
        while read -r mnt; do umount -l "$mnt" 2>/dev/null || true; done
}
cleanup() {
    unmount_all
    rm -rf --one-file-system "${workdir:?}"
}
trap cleanup EXIT

started=$(date +%s)
if ! debootstrap --variant=minbase --include="$INCLUDE" "$SUITE" "$rootfs" "$mirror"; then
    tail -n 20 "$rootfs/debootstrap/debootstrap.log" >&2 2>/dev/null || true
    die "debootstrap of $SUITE from $mirror failed (log above); check the mirror or set" \
        "EDGEHUB_DEBIAN_MIRROR"
fi

[ -s "$rootfs/etc/apt/sources.list" ] ||
    echo "deb $mirror $SUITE main" >"$rootfs/etc/apt/sources.list"
# Leave no host-specific or cached state in the image: package caches, lists, device nodes.
unmount_all
rm -rf --one-file-system "${rootfs:?}"/var/cache/apt/archives/*.deb "${rootfs:?}"/var/cache/apt/*.bin \
    "${rootfs:?}"/var/lib/apt/lists/* "${rootfs:?}"/dev/* "${rootfs:?}"/tmp/* "${rootfs:?}"/var/log/*.log
: >"$rootfs/etc/hostname"

tar --numeric-owner -C "$rootfs" -c . |
    docker import \
        --change "ENV PATH=$PATH_ENV" \
        --change "ENV LANG=C.UTF-8" \
        --change 'CMD ["/bin/bash"]' \
        --message "debootstrap --variant=minbase --include=$INCLUDE $SUITE" \
        - "$name" >/dev/null

echo "made $name in $(($(date +%s) - started)) s: $(docker image inspect -f '{{.Id}}' "$name")"
