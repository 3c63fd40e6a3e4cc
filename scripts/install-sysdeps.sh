#!/usr/bin/env bash
# Installs the Debian packages fsmeter needs, only those missing, only as root.
# Without root it says what is missing and carries on: fsmeter then runs on a
# directory target and the tests that need those tools skip with a reason.
set -euo pipefail
missing=()
for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
    echo "fsmeter: not installing Debian packages (${missing[*]}): run 'make sysdeps' as root on Debian, or install them yourself" >&2
    exit 0
fi
echo "fsmeter: installing Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
