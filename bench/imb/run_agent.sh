#!/bin/sh
# run_agent.sh: what the progress thread (BOBCAT_PROGRESS=thread, issue 30) gives and costs for
# IMB-NBC's overlap of MPI_Iallreduce, rank 0 computing while rank 1 waits (imb --overlap one,
# t_cpu = t_pure), 2 ranks:
#   sim, agent.sim  yod --simulate-nodes -SN: one rank per node, so the call is hierarchical and its
#                   leaders' phase is the real MPI's MPI_Iallreduce in each rank's process, without
#                   and with the progress thread;
#   node, agent.node  yod -VN2: both on one node (bobcat's ring; rank 1 helps rank 0 either way);
#   bare            the real MPI alone (mpirun/mpiexec -np 2, bound to cores).
# Interleaved, order rotated each round, probe before and after; prints per variant the medians of
# t_pure (us), overlap (%) at 64 KiB and 1 MiB.
#   bench/imb/run_agent.sh [ROUNDS] [openmpi|mpich]   (BOBCAT_HOME: the installed tree)
set -eu
rounds=${1:-5}
mpi=${2:-openmpi}
here=$(cd "$(dirname "$0")" && pwd)
home=${BOBCAT_HOME:-$here/../../build/stage}
# shellcheck source=../common/rounds.sh
. "$here/../common/rounds.sh"
case $rounds in '' | *[!0-9]*) echo "run_agent: ROUNDS must be a positive number, not '$rounds'" >&2; exit 2 ;; esac
case $mpi in
    openmpi) bare="mpirun.openmpi -np 2 --bind-to core" ;;
    mpich) bare="mpiexec.mpich -n 2 -bind-to core" ;;
    *) echo "run_agent: the MPI is openmpi or mpich, not '$mpi'" >&2; exit 2 ;;
esac
imb=$home/libexec/bobcat/bench/imb.$mpi
[ -x "$imb" ] || { echo "run_agent: no $imb (make build, or set BOBCAT_HOME)" >&2; exit 2; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/bobcat-agent.XXXXXX")
trap 'rm -rf "$dir"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
args="--test Iallreduce --sizes 64K,1M --overlap one --cpu-factor 1 --time 0.2 --iters 300"
yod="$home/bin/yod --mpi $mpi --heap 512M"
run() { # variant -> "tpure64K overlap64K tpure1M overlap1M"
    # shellcheck disable=SC2086 # word lists
    case $1 in
        sim) $yod --simulate-nodes -SN -np 2 "$imb" $args ;;
        agent.sim) BOBCAT_PROGRESS=thread $yod --simulate-nodes -SN -np 2 "$imb" $args ;;
        node) $yod -VN2 -np 2 "$imb" $args ;;
        agent.node) BOBCAT_PROGRESS=thread $yod -VN2 -np 2 "$imb" $args ;;
        bare) $bare "$imb" $args ;;
    esac >"$dir/out.json" 2>"$dir/err.txt" || { echo "run_agent: $1 failed" >&2; cat "$dir/err.txt" >&2; exit 1; }
    python3 - "$dir/out.json" <<'PY'
import json, sys
v = {}
for line in open(sys.argv[1]):
    if line.startswith("{"):
        r = json.loads(line)
        if r.get("bench") == "iallreduce" and r.get("metric") in ("t_pure", "overlap"):
            v[(r["params"]["bytes"], r["metric"])] = r["value"]
print(" ".join(f"{v[(b, m)]:.2f}" for b in (65536, 1048576) for m in ("t_pure", "overlap")))
PY
}
echo "placement before: $(bc_probe)"
: >"$dir/all.txt"
bc_rounds "$rounds" "$dir/all.txt" sim agent.sim node agent.node bare
echo "placement after: $(bc_probe)"
printf '%-11s %12s %12s %12s %12s   (medians of %s rounds, %s)\n' variant "t_pure 64K" "overlap 64K" "t_pure 1M" \
    "overlap 1M" "$rounds" "$mpi"
for v in sim agent.sim node agent.node bare; do
    printf '%-11s %12s %12s %12s %12s\n' "$v" "$(bc_median "$v" "$dir/all.txt" 2)" "$(bc_median "$v" "$dir/all.txt" 3)" \
        "$(bc_median "$v" "$dir/all.txt" 4)" "$(bc_median "$v" "$dir/all.txt" 5)"
done
