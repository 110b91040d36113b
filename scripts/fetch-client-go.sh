#!/usr/bin/env bash
# scripts/fetch-client-go.sh DEST
# Debian 13's client-go (golang-k8s-client-go-dev) and every Go source package it
# depends on, unpacked into DEST (DEST/usr/share/gocode/src is then a GOPATH tree) for
# tests/e2e/test_client_go.py, which builds its small client-go program against it.
# Nothing is installed and no Go dependency is committed. The dependency closure is
# resolved by apt in a private state, as scripts/fetch-deb.sh downloads.
# golang-github-golang-protobuf-1-3-dev is left out: its files share a path with
# -1-5-dev's (the one client-go's dependencies build with) and would clash.
set -euo pipefail
dest=$1
here=$(cd "$(dirname "$0")" && pwd)
mirror=$("$here/debian-mirror.sh")
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/etc/apt/sources.list.d" "$root/etc/apt/preferences.d" \
         "$root/var/lib/apt/lists/partial" "$root/var/cache/apt/archives/partial"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror trixie main" \
  >"$root/etc/apt/sources.list"
opts=(-o "Dir::Etc=$root/etc/apt" -o "Dir::State=$root/var/lib/apt"
      -o "Dir::Cache=$root/var/cache/apt" -o "Dir::Etc::sourceparts=-"
      -o "APT::Get::List-Cleanup=0" -o "Debug::NoLocking=1" -o "APT::Sandbox::User=root" -q)
apt-get "${opts[@]}" update >/dev/null
packages=$(apt-cache "${opts[@]}" depends --recurse --no-recommends --no-suggests \
             --no-conflicts --no-breaks --no-replaces --no-enhances --no-pre-depends \
             golang-k8s-client-go-dev \
           | grep -E '^golang-.*-dev$' | grep -v '^golang-github-golang-protobuf-1-3-dev$' \
           | sort -u)
[ -n "$packages" ] || { echo "no client-go packages resolved" >&2; exit 1; }
rm -rf "$dest.tmp"
# shellcheck disable=SC2086  # one word per package
"$here/fetch-deb.sh" trixie "$dest.tmp" $packages
[ -d "$dest.tmp/usr/share/gocode/src/k8s.io/client-go" ] \
  || { echo "client-go sources missing in $dest.tmp" >&2; exit 1; }
rm -rf "$dest"; mv "$dest.tmp" "$dest"
