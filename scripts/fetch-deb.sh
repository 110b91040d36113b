#!/usr/bin/env bash
# scripts/fetch-deb.sh SUITE DEST PACKAGE...
# Downloads Debian packages of SUITE (bookworm, trixie, ...) from the mirror apt is
# configured with, using a private apt state (the system's sources and package database
# stay untouched), and unpacks them into DEST (never installs them). Prints nothing but
# errors.
set -euo pipefail
suite=$1 dest=$2; shift 2
here=$(cd "$(dirname "$0")" && pwd)
mirror=$("$here/debian-mirror.sh")
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/etc/apt/sources.list.d" "$root/etc/apt/preferences.d" \
         "$root/var/lib/apt/lists/partial" "$root/var/cache/apt/archives/partial"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $suite main" \
  >"$root/etc/apt/sources.list"
opts=(-o "Dir::Etc=$root/etc/apt" -o "Dir::State=$root/var/lib/apt"
      -o "Dir::Cache=$root/var/cache/apt" -o "Dir::Etc::sourceparts=-"
      -o "APT::Get::List-Cleanup=0" -o "Debug::NoLocking=1" -o "APT::Sandbox::User=root" -q)
apt-get "${opts[@]}" update >/dev/null
(cd "$root" && apt-get "${opts[@]}" download "$@" >/dev/null)
mkdir -p "$dest"
for deb in "$root"/*.deb; do
  dpkg-deb -x "$deb" "$dest"
done
