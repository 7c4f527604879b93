#!/bin/sh
# run_fftw3d.sh: a real library's MPI_Alltoallv traffic under yod (issue 30): Debian's FFTW MPI
# interface (libfftw3-mpi, built on Open MPI) transforming an unevenly decomposed 3D array
# (bench/fftw/fftw3d.c: forward with transposed output, backward from it), 2 ranks on one node: yod
# against bare Open MPI at its default and with CMA off (its best for large messages on some CPUs),
# interleaved with the order rotated every round, the placement probe before and after. Checks
# that every run prints the same checksum (bitwise, as printed) and the same plan, prints per
# variant the median forward+backward time and the ratio yod / best bare, and yod's BOBCAT_STATS
# rows for MPI_Alltoallv (which path FFTW's transposes took).
#   bench/fftw/run_fftw3d.sh [ROUNDS] [N0 N1 N2]   (BOBCAT_HOME: the installed tree;
#                                                   apt install libfftw3-mpi-dev)
set -eu
rounds=${1:-5}
size=${2:+$2 $3 $4}
size=${size:-151 130 97}
here=$(cd "$(dirname "$0")" && pwd)
home=${BOBCAT_HOME:-$here/../../build/stage}
# shellcheck source=../common/rounds.sh
. "$here/../common/rounds.sh"
case $rounds in '' | *[!0-9]*) echo "run_fftw3d: ROUNDS must be a positive number, not '$rounds'" >&2; exit 2 ;; esac
[ -e /usr/include/fftw3-mpi.h ] || { echo "run_fftw3d: FFTW's MPI interface is needed (apt install libfftw3-mpi-dev)" >&2; exit 2; }
[ -x "$home/bin/yod" ] || { echo "run_fftw3d: no yod in $home (make build, or set BOBCAT_HOME)" >&2; exit 2; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/bobcat-fftw.XXXXXX")
trap 'rm -rf "$dir"' EXIT
mpicc.openmpi -O2 -o "$dir/fftw3d" "$here/fftw3d.c" -lfftw3_mpi -lfftw3 -lm ||
    { echo "run_fftw3d: building fftw3d.c failed" >&2; exit 3; }
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# shellcheck disable=SC2086 # $size is three numbers
run() { # variant -> the program's two output lines
    case $1 in
        ompi-default) mpirun.openmpi -np 2 --bind-to core "$dir/fftw3d" $size ;;
        ompi-nocma) mpirun.openmpi -np 2 --bind-to core --mca btl_vader_single_copy_mechanism none "$dir/fftw3d" $size ;;
        yod) BOBCAT_STATS=rank "$home/bin/yod" -VN2 -np 2 --heap 1G "$dir/fftw3d" $size 2>"$dir/stats.txt" ;;
    esac >"$dir/out.txt" || { echo "run_fftw3d: $1 failed" >&2; cat "$dir/out.txt" >&2; exit 1; }
    grep -v '^fftw3d: ranks' "$dir/out.txt" | tr -s ' \n' ' ' >>"$dir/plans.txt" # FFTW prints it on many lines
    echo >>"$dir/plans.txt"
    grep '^fftw3d: ranks' "$dir/out.txt"
}
echo "placement before: $(bc_probe)"
: >"$dir/all.txt"
: >"$dir/plans.txt"
bc_rounds "$rounds" "$dir/all.txt" yod ompi-default ompi-nocma
echo "placement after: $(bc_probe)"
[ "$(sort -u "$dir/plans.txt" | wc -l)" -eq 1 ] || { echo "run_fftw3d: FFTW chose different plans:" >&2; sort -u "$dir/plans.txt" >&2; exit 1; }
echo "transposes: $(grep -o 'mpi-transpose-[a-z]*' "$dir/plans.txt" | head -2 | tr '\n' ' ')"
[ "$(awk '{print $NF}' "$dir/all.txt" | sort -u | wc -l)" -eq 1 ] ||
    { echo "run_fftw3d: results differ between runs:" >&2; cat "$dir/all.txt" >&2; exit 1; }
echo "every run: checksum $(awk 'NR==1 {print $NF}' "$dir/all.txt")"
med() { bc_median "$1" "$dir/all.txt" 8; }
y=$(med yod); d=$(med ompi-default); c=$(med ompi-nocma)
echo "median forward+backward s ($size): yod $y | ompi-default $d | ompi-nocma $c"
awk -v y="$y" -v d="$d" -v c="$c" 'BEGIN {b = d < c ? d : c; printf "yod / best bare: %.3f\n", y / b}'
grep 'Alltoallv' "$dir/stats.txt" | head -2
