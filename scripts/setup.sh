#!/usr/bin/env bash
# Installs what building Strata needs on Debian/Ubuntu: liblz4's headers (pkg-config liblz4).
# With --benchmarks, also the C peers strata-bench compares with: SQLite, LMDB, LevelDB.
# Does nothing when they are already there. Runs apt-get as root, or through sudo.
set -euo pipefail
packages=(liblz4-dev pkg-config)
[ "${1:-}" = "--benchmarks" ] && packages+=(libsqlite3-dev liblmdb-dev libleveldb-dev)
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
