#!/bin/sh
# run_lang_cost.sh: the Fortran binding's own cost per call, under yod and bare. lang_cost.F90
# calls MPI_Send + MPI_Recv to MPI_PROC_NULL and an 8-byte MPI_Allreduce on MPI_COMM_SELF in blocks
# that alternate, in the same process, with the same calls made from C (lang_cost_c.c): no peer and
# no wait, so the difference F - C is the binding's conversion work alone, free of the placement
# noise that run_lang_pp.sh's pingpong carries. One rank; each line is "<case> <F ns> <C ns> <F/C>"
# (medians of 101 blocks of 20,000 calls).
#   bench/fortran/run_lang_cost.sh [openmpi|mpich] [mod|f08] [RUNS]   (BOBCAT_HOME: the installed tree)
set -eu
mpi=${1:-openmpi}
binding=${2:-mod}
runs=${3:-3}
case "$binding" in
mod) fflags= ;;
f08) fflags=-DUSE_F08 ;;
*) echo "run_lang_cost: binding is mod or f08, not $binding" >&2; exit 2 ;;
esac
case "$mpi" in
openmpi|mpich) ;;
*) echo "run_lang_cost: MPI is openmpi or mpich, not $mpi" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
home=${BOBCAT_HOME:-$here/../../build/stage}
dir=$(mktemp -d "${TMPDIR:-/tmp}/bobcat-langcost.XXXXXX")
trap 'rm -rf "$dir"' EXIT
"mpicc.$mpi" -O2 -c -o "$dir/c.o" "$here/lang_cost_c.c"
"mpifort.$mpi" -O2 $fflags -J "$dir" -o "$dir/f" "$here/lang_cost.F90" "$dir/c.o"
echo "case      F ns/call C ns/call   F/C  ($mpi, $binding)"
i=0
while [ "$i" -lt "$runs" ]; do
    "$home/bin/yod" -np 1 "$dir/f" 2>/dev/null | sed 's/^/yod  /'
    "mpiexec.$mpi" -n 1 "$dir/f" | sed 's/^/bare /'
    i=$((i + 1))
done
