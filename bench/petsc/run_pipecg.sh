#!/bin/sh
# run_pipecg.sh: a real program with nonblocking collectives under yod (issue 30): PETSc's
# pipelined CG (KSPPIPECG: every iteration's dot products are one MPI_Iallreduce overlapped with
# the matrix-vector product) on the 5-point Laplacian of an N x N grid (bench/petsc/pipecg.c,
# Debian's PETSc 3.18, which is built on Open MPI), 2 ranks on one node: yod against bare Open MPI
# at its default and at its best on-node setting, interleaved, the placement probe before and
# after. Checks that every run reports the same iteration count and residual (bitwise, as printed),
# prints per variant the median solve time and the ratio yod / best bare, and yod's BOBCAT_STATS
# rows for MPI_Iallreduce (which path the nonblocking reductions took).
#   bench/petsc/run_pipecg.sh [ROUNDS] [N]     (BOBCAT_HOME: the installed tree;
#                                               apt install libpetsc-real3.18-dev)
set -eu
rounds=${1:-5}
n=${2:-400}
here=$(cd "$(dirname "$0")" && pwd)
home=${BOBCAT_HOME:-$here/../../build/stage}
# shellcheck source=../common/rounds.sh
. "$here/../common/rounds.sh"
pkg-config --exists petsc || { echo "run_pipecg: PETSc is needed (apt install libpetsc-real3.18-dev)" >&2; exit 2; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/bobcat-petsc.XXXXXX")
trap 'rm -rf "$dir"' EXIT
mpicc.openmpi -O2 -o "$dir/pipecg" "$here/pipecg.c" $(pkg-config --cflags --libs petsc) ||
    { echo "run_pipecg: building pipecg.c failed" >&2; exit 3; }
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
run() { # variant -> the program's result line
    case $1 in
        ompi-default) mpirun.openmpi -np 2 --bind-to core "$dir/pipecg" -n "$n" ;;
        ompi-nocma) mpirun.openmpi -np 2 --bind-to core --mca btl_vader_single_copy_mechanism none "$dir/pipecg" -n "$n" ;;
        yod) BOBCAT_STATS=rank "$home/bin/yod" -VN2 -np 2 --heap 1G "$dir/pipecg" -n "$n" 2>"$dir/stats.txt" ;;
    esac | grep '^pipecg:' || { echo "run_pipecg: $1 failed" >&2; exit 1; }
}
echo "placement before: $(bc_probe)"
: >"$dir/all.txt"
bc_rounds "$rounds" "$dir/all.txt" yod ompi-default ompi-nocma
echo "placement after: $(bc_probe)"
# every run: the same iterations and residual
sols=$(awk '{print $6, $8}' "$dir/all.txt" | sort -u | wc -l)
[ "$sols" -eq 1 ] || { echo "run_pipecg: results differ between runs:" >&2; cat "$dir/all.txt" >&2; exit 1; }
echo "every run: $(awk 'NR==1 {print "iterations", $6, "residual", $8}' "$dir/all.txt")"
med() { bc_median "$1" "$dir/all.txt" 12; }
y=$(med yod); d=$(med ompi-default); c=$(med ompi-nocma)
echo "median solve s: yod $y | ompi-default $d | ompi-nocma $c"
awk -v y="$y" -v d="$d" -v c="$c" 'BEGIN {b = d < c ? d : c; printf "yod / best bare: %.3f\n", y / b}'
grep 'Iallreduce' "$dir/stats.txt" | head -2
