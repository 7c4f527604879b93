#!/bin/sh
# run_pass_cost.sh [openmpi|mpich]: the cost of the layer's pass-through entry points, with the
# account off and on (bench/account/README.md). Builds pass_cost.c, runs it under yod three ways,
# interleaved, 3 rounds: the layer's entry point with the account off (the default), with it on
# (BOBCAT_STATS_DIR set), and BOBCAT_MPI=off for comparison.
set -eu
mpi=${1:-openmpi}
here=$(cd "$(dirname "$0")" && pwd)
home=${BOBCAT_HOME:-$here/../../build/stage}
dir=$(mktemp -d "${TMPDIR:-/tmp}/bobcat-passcost.XXXXXX")
trap 'rm -rf "$dir"' EXIT
"mpicc.$mpi" -O2 -o "$dir/pc" "$here/pass_cost.c"
mkdir "$dir/acct"
for round in 1 2 3; do
    printf 'account off: '; "$home/bin/yod" -VN2 -np 2 "$dir/pc" 2>/dev/null
    printf 'account on:  '; BOBCAT_STATS_DIR="$dir/acct" "$home/bin/yod" -VN2 -np 2 "$dir/pc" 2>/dev/null
done
