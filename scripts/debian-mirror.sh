#!/usr/bin/env bash
# Prints the Debian archive URI this machine's apt is configured with (deb822 .sources or
# a one-line sources.list), so scripts fetch from the mirror the machine already trusts
# instead of naming one. Override with DEBIAN_MIRROR=URI.
set -euo pipefail
if [ -n "${DEBIAN_MIRROR:-}" ]; then echo "$DEBIAN_MIRROR"; exit 0; fi
# apt's own view of its sources: the main suite's archive (not -updates/-security)
uri=$(apt-get indextargets --no-release-info --format '$(REPO_URI) $(RELEASE)' \
        'Identifier: Packages' 2>/dev/null | awk '$1 ~ /\/debian\/?$/ && $2 !~ /-/ {print $1; exit}')
for f in /etc/apt/sources.list.d/*.sources; do
  [ -z "$uri" ] && [ -f "$f" ] || continue
  # the first URIs line of a stanza whose URI ends in /debian (not -security, not -ports)
  uri=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i ~ /\/debian\/?$/) { print $i; exit } }' "$f")
  [ -n "$uri" ] && break
done
if [ -z "$uri" ] && [ -f /etc/apt/sources.list ]; then
  uri=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^https?:.*\/debian\/?$/) { print $i; exit } }' \
        /etc/apt/sources.list)
fi
if [ -z "$uri" ]; then
  echo "no Debian archive found in apt's sources; set DEBIAN_MIRROR=URI" >&2
  exit 1
fi
echo "${uri%/}"
