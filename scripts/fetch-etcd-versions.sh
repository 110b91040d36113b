#!/usr/bin/env bash
# Fetch the extra real etcd versions CI tests against, without installing them:
#   3.4.23  Debian 12 (bookworm) etcd-server
#   3.5.16  Debian 13 (trixie)  etcd-server  (has the progress-notify fixes #15220/#17507)
# Each .deb is downloaded with apt-get from a private apt state (so the system's sources
# and package database are untouched), from the mirror the machine's apt configuration
# already uses, and unpacked into $CACHE/<version>/.
# Prints nothing but errors; `scripts/fetch-etcd-versions.sh --print` prints the binaries.
set -euo pipefail
CACHE=${ETCD_CACHE:-"$(cd "$(dirname "$0")/.." && pwd)/.cache/etcd"}
mkdir -p "$CACHE"

# The machine's own Debian mirror (its main suite, not -updates/-security), from its apt
# configuration: this script names no host.
MIRROR=$(apt-get indextargets --no-release-info --format '$(REPO_URI) $(RELEASE)' \
           'Identifier: Packages' | awk '$1 ~ /\/debian\/?$/ && $2 !~ /-/ {print $1; exit}')
[ -n "$MIRROR" ] || { echo "no Debian archive in the apt configuration" >&2; exit 1; }

fetch() {  # fetch SUITE VERSION
  local suite=$1 version=$2
  local dest="$CACHE/$version"
  if [ -x "$dest/usr/bin/etcd" ]; then return 0; fi
  local root; root=$(mktemp -d)
  mkdir -p "$root/etc/apt/sources.list.d" "$root/etc/apt/preferences.d" \
           "$root/var/lib/apt/lists/partial" "$root/var/cache/apt/archives/partial"
  cat >"$root/etc/apt/sources.list" <<SRC
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR $suite main
SRC
  local opts=(-o "Dir::Etc=$root/etc/apt" -o "Dir::State=$root/var/lib/apt"
              -o "Dir::Cache=$root/var/cache/apt" -o "Dir::Etc::sourceparts=-"
              -o "APT::Get::List-Cleanup=0" -o "Debug::NoLocking=1" -o "APT::Sandbox::User=root" -q)
  apt-get "${opts[@]}" update >/dev/null
  (cd "$root" && apt-get "${opts[@]}" download "etcd-server" >/dev/null)
  local deb; deb=$(ls "$root"/etcd-server_*.deb)
  mkdir -p "$dest.tmp"
  dpkg-deb -x "$deb" "$dest.tmp"
  rm -rf "$dest"; mv "$dest.tmp" "$dest"
  rm -rf "$root"
  # read the whole output first: `etcd --version | head -1` can die of SIGPIPE under pipefail
  local reported; reported=$("$dest/usr/bin/etcd" --version)
  case "$reported" in
    *"etcd Version: $version"*) ;;
    *) echo "unexpected etcd version in $deb: $reported" >&2; exit 1 ;;
  esac
}

fetch bookworm 3.4.23
fetch trixie 3.5.16
if [ "${1:-}" = "--print" ]; then
  echo "$CACHE/3.4.23/usr/bin/etcd"
  echo "$CACHE/3.5.16/usr/bin/etcd"
fi
