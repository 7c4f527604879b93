#!/usr/bin/env bash
# Install everything bobcat needs on a fresh Debian 12 machine (run as root), then the Python venv.
# Idempotent: a second run does nothing but check.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
APT_PKGS=(build-essential cmake pkg-config git
  openmpi-bin libopenmpi-dev mpich libmpich-dev
  hwloc libhwloc-dev hpcc libmimalloc-dev
  libfftw3-dev libfftw3-mpi-dev libsqlite3-dev sqlite3
  python3 python3-venv python3-dev chromium util-linux procps)
missing=()
for p in "${APT_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "setup: missing Debian packages: ${missing[*]}; run as root or: sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
venv="$here/.venv"
if [ ! -x "$venv/bin/python" ] || [ "$here/pyproject.toml" -nt "$venv/.stamp" ]; then
  echo "setup: creating Python environment in $venv"
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q -e "$here[test]"
  touch "$venv/.stamp"
fi
