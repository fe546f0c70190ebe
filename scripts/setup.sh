#!/usr/bin/env bash
# Installs what building Strata needs on Debian/Ubuntu: liblz4's headers (pkg-config liblz4).
# Does nothing when they are already there. Runs apt-get as root, or through sudo.
set -euo pipefail
if pkg-config --exists liblz4 2>/dev/null; then exit 0; fi
if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq liblz4-dev pkg-config >/dev/null
