#!/bin/sh
# run_lang_pp.sh: Fortran vs C under yod, interleaved. Builds lang_pp.F90 (use mpi) and its C twin
# lang_pp.c with the chosen MPI's wrappers, runs them alternately ROUNDS times (2 ranks, one node)
# and prints per case the median of each language and the ratio Fortran/C.
#   bench/fortran/run_lang_pp.sh [openmpi|mpich] [ROUNDS] [mod|f08]   (BOBCAT_HOME: the installed tree)
# mod: `use mpi` (default); f08: `use mpi_f08`.
set -eu
mpi=${1:-openmpi}
rounds=${2:-7}
binding=${3:-mod}
case "$binding" in
mod) fflags= ;;
f08) fflags=-DUSE_F08 ;;
*) echo "run_lang_pp: binding is mod or f08, not $binding" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
home=${BOBCAT_HOME:-$here/../../build/stage}
dir=$(mktemp -d "${TMPDIR:-/tmp}/bobcat-langpp.XXXXXX")
trap 'rm -rf "$dir"' EXIT
"mpifort.$mpi" -O2 $fflags -J "$dir" -o "$dir/f" "$here/lang_pp.F90"
"mpicc.$mpi" -O2 -o "$dir/c" "$here/lang_pp.c"
i=0
while [ "$i" -lt "$rounds" ]; do
    for l in f c; do
        "$home/bin/yod" -VN2 -np 2 "$dir/$l" 2>/dev/null | sed "s/^/$l /" >>"$dir/out"
    done
    i=$((i + 1))
done
python3 - "$dir/out" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    lang, case, size, us = line.split()
    rows.setdefault((case, int(size)), {}).setdefault(lang, []).append(float(us))
print(f"{'case':<10} {'bytes':>8} {'Fortran us':>11} {'C us':>9} {'F/C':>6}  (medians of {len(next(iter(rows.values()))['c'])} runs)")
for (case, size), v in sorted(rows.items()):
    f, c = statistics.median(v["f"]), statistics.median(v["c"])
    print(f"{case:<10} {size:>8} {f:>11.3f} {c:>9.3f} {f / c:>6.3f}")
PY
