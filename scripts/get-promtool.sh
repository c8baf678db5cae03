#!/bin/sh
# Puts Debian's promtool at $1 for test_metrics, without installing the
# prometheus service: the package is downloaded (apt-get download, no root
# needed) and only its promtool is extracted.
set -eu
dest=$(realpath -m "$1") # absolute: the work is done elsewhere
[ -x "$dest" ] && exit 0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
if ! apt-get download prometheus >/dev/null 2>&1; then
  # No package lists yet (a fresh machine): fetch them, then try again.
  SUDO=$( [ "$(id -u)" = 0 ] || echo sudo )
  $SUDO apt-get update -qq
  apt-get download prometheus >/dev/null
fi
dpkg-deb -x prometheus_*.deb x
mkdir -p "$(dirname "$dest")"
cp x/usr/bin/promtool "$dest"
echo "promtool: $("$dest" --version 2>&1 | head -1) at $dest"
