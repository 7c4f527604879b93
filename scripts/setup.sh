#!/usr/bin/env bash
# Install everything bobcat needs on a fresh Debian 12 machine (run as root), then the Python venv.
# Idempotent: a second run does nothing but check.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
APT_PKGS=(build-essential cmake pkg-config git
  openmpi-bin libopenmpi-dev mpich libmpich-dev
  hwloc libhwloc-dev hpcc quantum-espresso libmimalloc-dev
  libfftw3-dev libfftw3-mpi-dev libsqlite3-dev sqlite3
  python3 python3-venv python3-dev chromium util-linux procps gfortran)
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
# Slurm, for the tests of yod's srun path (tests/python/test_yod_slurm.py starts a private
# cluster of its own). Not where a Slurm is already on PATH: a site's own build stays untouched.
# The packages' services (slurmctld, slurmd, munge) must not start or stay enabled on this
# machine, so a policy-rc.d refuses their start during the install and they are disabled after.
SLURM_PKGS=(slurmctld slurmd slurm-client)
if [ "$(id -u)" = 0 ] && [ "${BOBCAT_NO_SLURM:-0}" != 1 ] && ! command -v srun >/dev/null; then
  echo "setup: installing ${SLURM_PKGS[*]} (for the srun tests; BOBCAT_NO_SLURM=1 skips)"
  policy=/usr/sbin/policy-rc.d
  own_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod 755 "$policy" && own_policy=1
  fi
  export DEBIAN_FRONTEND=noninteractive
  if ! { apt-get install -y -qq --no-install-recommends "${SLURM_PKGS[@]}" >/dev/null 2>&1 ||
          { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${SLURM_PKGS[@]}" >/dev/null; }; }; then
    echo "setup: could not install Slurm; the srun tests will be skipped" >&2
  fi
  if [ $own_policy = 1 ]; then rm -f "$policy"; fi
  if command -v systemctl >/dev/null; then
    systemctl disable --now slurmctld slurmd munge >/dev/null 2>&1 || true
  fi
fi
venv="$here/.venv"
if [ ! -x "$venv/bin/python" ] || [ "$here/pyproject.toml" -nt "$venv/.stamp" ]; then
  echo "setup: creating Python environment in $venv"
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q -e "$here[test]"
  touch "$venv/.stamp"
fi
