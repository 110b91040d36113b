#!/usr/bin/env bash
# make images: local stand-ins for every image docker-compose.yml pulls, built from Debian
# packages, for machines where no image registry is reachable. Then writes .env so that a
# plain `docker-compose up -d` (which reads .env) uses them; delete .env to go back to
# the official images.
#
#   watchcache-local/debian:bookworm     debootstrap --variant=minbase, docker import
#   watchcache-local/python:3.11         Debian's python3 (3.11) + venv   (PYTHON_IMAGE)
#   watchcache-local/etcd:3.5.16         Debian 13's etcd-server/client   (ETCD_IMAGE)
#   watchcache-local/prometheus:bookworm Debian's prometheus              (PROMETHEUS_IMAGE)
#   watchcache-local/haproxy:bookworm    Debian's haproxy                 (LB_IMAGE)
#
# Images that exist already are kept (REBUILD=1 rebuilds them). Grafana has no Debian
# package: it stays behind the compose profile `grafana`, on its official image.
# Needs root (debootstrap), a running dockerd, debootstrap and dpkg-deb.
set -euo pipefail
cd "$(dirname "$0")/.."
here=scripts
mirror=$("$here/debian-mirror.sh")
prefix=watchcache-local
base=$prefix/debian:bookworm

have() { [ -z "${REBUILD:-}" ] && docker image inspect "$1" >/dev/null 2>&1; }
say() { echo "images: $*" >&2; }

for tool in docker debootstrap dpkg-deb; do
  command -v "$tool" >/dev/null || { echo "images: $tool is needed (apt-get install docker.io debootstrap)" >&2; exit 1; }
done
docker info >/dev/null 2>&1 || { echo "images: no Docker engine answers (start dockerd)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! have "$base"; then
  say "debootstrap bookworm (minbase) -> $base"
  debootstrap --variant=minbase bookworm "$work/rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 \
    || { tail -20 "$work/debootstrap.log" >&2; exit 1; }
  # apt inside the image uses the same mirror; no recommends, no docs in the layers
  printf 'APT::Install-Recommends "false";\n' >"$work/rootfs/etc/apt/apt.conf.d/99norecommends"
  rm -rf "$work/rootfs/var/cache/apt/archives"/*.deb "$work/rootfs/var/lib/apt/lists"/*
  tar -C "$work/rootfs" -c . | docker import - "$base" >/dev/null
  rm -rf "$work/rootfs"
fi

build() {  # build NAME DOCKERFILE [CONTEXT]
  local name=$1 file=$2 context=${3:-deploy/images}
  if have "$name"; then say "$name exists"; return 0; fi
  say "building $name"
  # the legacy builder's deprecation banner is noise here; real errors still show
  docker build -q --build-arg "BASE=$base" -f "$file" -t "$name" "$context" \
    2> >(grep -v -e DEPRECATED -e 'legacy builder' -e 'buildx' -e '^ *$' >&2) \
    >/dev/null
}

build "$prefix/python:3.11" deploy/images/python.Dockerfile
if ! have "$prefix/etcd:3.5.16"; then
  "$here/fetch-deb.sh" trixie "$work/etcd" etcd-server etcd-client
  build "$prefix/etcd:3.5.16" deploy/images/etcd.Dockerfile "$work/etcd"
fi
build "$prefix/prometheus:bookworm" deploy/images/prometheus.Dockerfile
build "$prefix/haproxy:bookworm" deploy/images/haproxy.Dockerfile

cat >.env <<ENV
# Written by \`make images\` (scripts/build-images.sh): docker-compose reads this file and
# uses the locally built images. Delete it to use the official images again.
PYTHON_IMAGE=$prefix/python:3.11
ETCD_IMAGE=$prefix/etcd:3.5.16
PROMETHEUS_IMAGE=$prefix/prometheus:bookworm
LB_IMAGE=$prefix/haproxy:bookworm
ENV
say "done; .env points docker-compose at them"
