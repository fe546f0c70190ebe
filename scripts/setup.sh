#!/usr/bin/env bash
# Installs what building and testing Strata needs on Debian/Ubuntu: liblz4's headers
# (pkg-config liblz4), SQLite's (for StrataSQLite, through GRDB), and a PostgreSQL server for
# StrataPostgres's tests, which it starts, with the role and database the tests use
# (postgres://strata:strata@localhost:5432/strata_test; STRATA_POSTGRES_URL overrides), and
# headless Chromium with its driver and Selenium for Strata Studio's browser test.
# With --benchmarks, also the C peers strata-bench compares with: LMDB, LevelDB.
# Does nothing that is already done. Runs apt-get as root, or through sudo.
set -euo pipefail
packages=(liblz4-dev pkg-config libsqlite3-dev postgresql chromium chromium-driver python3-selenium)
[ "${1:-}" = "--benchmarks" ] && packages+=(liblmdb-dev libleveldb-dev)
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
if [ ${#missing[@]} -gt 0 ]; then
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# The PostgreSQL server the tests use: Debian's cluster, started, with the tests' role and database.
if [ -z "${STRATA_POSTGRES_URL:-}" ] && command -v pg_lsclusters >/dev/null; then
    cluster=$(pg_lsclusters --no-header | awk 'NR == 1 { print $1 " " $2 }')
    [ -n "$cluster" ] && { $SUDO pg_ctlcluster $cluster start 2>/dev/null || true; }
    psql() { $SUDO su postgres -c "psql -qtAc \"$1\""; }
    for _ in $(seq 1 30); do psql "SELECT 1" >/dev/null 2>&1 && break; sleep 0.5; done
    [ "$(psql "SELECT 1 FROM pg_roles WHERE rolname = 'strata'")" = "1" ] || psql "CREATE ROLE strata LOGIN PASSWORD 'strata'"
    [ "$(psql "SELECT 1 FROM pg_database WHERE datname = 'strata_test'")" = "1" ] || psql "CREATE DATABASE strata_test OWNER strata"
fi
