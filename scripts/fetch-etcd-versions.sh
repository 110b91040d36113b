#!/usr/bin/env bash
# Fetch the extra real etcd versions CI tests against, without installing them:
#   3.4.23  Debian 12 (bookworm) etcd-server
#   3.5.16  Debian 13 (trixie)  etcd-server  (has the progress-notify fixes #15220/#17507)
# Each .deb is downloaded by scripts/fetch-deb.sh (a private apt state: the system's
# sources and package database are untouched) and unpacked into $CACHE/<version>/.
# Prints nothing but errors; `scripts/fetch-etcd-versions.sh --print` prints the binaries.
set -euo pipefail
CACHE=${ETCD_CACHE:-"$(cd "$(dirname "$0")/.." && pwd)/.cache/etcd"}
mkdir -p "$CACHE"

fetch() {  # fetch SUITE VERSION
  local suite=$1 version=$2
  local dest="$CACHE/$version"
  if [ -x "$dest/usr/bin/etcd" ]; then return 0; fi
  rm -rf "$dest.tmp"
  "$(dirname "$0")/fetch-deb.sh" "$suite" "$dest.tmp" etcd-server
  rm -rf "$dest"; mv "$dest.tmp" "$dest"
  # read the whole output first: `etcd --version | head -1` can die of SIGPIPE under pipefail
  local reported; reported=$("$dest/usr/bin/etcd" --version)
  case "$reported" in
    *"etcd Version: $version"*) ;;
    *) echo "unexpected etcd version in $dest: $reported" >&2; exit 1 ;;
  esac
}

fetch bookworm 3.4.23
fetch trixie 3.5.16
if [ "${1:-}" = "--print" ]; then
  echo "$CACHE/3.4.23/usr/bin/etcd"
  echo "$CACHE/3.5.16/usr/bin/etcd"
fi
