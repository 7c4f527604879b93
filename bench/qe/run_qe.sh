#!/bin/sh
# run_qe.sh: Quantum ESPRESSO's pw.x (Debian's, Open MPI) under yod against bare Open MPI at its
# default and at its best on-node setting, interleaved (issue 28). The input is
# tests/python/data/qe/si8.in (8-atom silicon SCF) with the plane-wave cutoff raised to ECUT Ry so a
# run takes seconds; the pseudopotential is made on the spot by ld1.x. Per round the three
# variants run in rotated order; the placement probe runs before and after. Prints per variant the
# median of pw.x's own WALL time and of the job's wall time, and the ratio yod / best bare.
#   bench/qe/run_qe.sh [ROUNDS] [ECUT]        (BOBCAT_HOME: the installed tree)
set -eu
rounds=${1:-5}
ecut=${2:-30}
here=$(cd "$(dirname "$0")" && pwd)
home=${BOBCAT_HOME:-$here/../../build/stage}
data=$here/../../tests/python/data/qe
command -v pw.x >/dev/null && command -v ld1.x >/dev/null || { echo "run_qe: pw.x and ld1.x are needed (apt install quantum-espresso)" >&2; exit 2; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/bobcat-qe.XXXXXX")
trap 'rm -rf "$dir"' EXIT
cd "$dir"
ld1.x <"$data/si_ld1.in" >ld1.out 2>&1 || { echo "run_qe: ld1.x failed (see $dir/ld1.out)" >&2; exit 3; }
sed "s/ecutwfc = [0-9.]*/ecutwfc = $ecut/" "$data/si8.in" >si8.in
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
probe() { "$home/libexec/bobcat/bench/bobcat-probe" --seconds 0.3 | sed -n 's/.*"placement": "\([a-z]*\)".*/\1/p' | head -1; }
run() { # variant -> "variant pw_wall job_wall energy"
    t0=$(date +%s.%N)
    case $1 in
        ompi-default) mpirun.openmpi -np 2 --bind-to core pw.x -in si8.in >out.txt 2>err.txt ;;
        ompi-nocma) mpirun.openmpi -np 2 --bind-to core --mca btl_vader_single_copy_mechanism none pw.x -in si8.in >out.txt 2>err.txt ;;
        yod) "$home/bin/yod" -VN2 -np 2 --heap 1G pw.x -in si8.in >out.txt 2>err.txt ;;
    esac || { echo "run_qe: $1 failed:" >&2; tail -5 out.txt err.txt >&2; exit 1; }
    t1=$(date +%s.%N)
    wall=$(sed -n 's/.*PWSCF *:.*CPU *\([0-9.ms ]*\)WALL.*/\1/p' out.txt | tail -1)
    energy=$(sed -n 's/^! *total energy *= *\([-0-9.]*\) Ry.*/\1/p' out.txt)
    echo "$1 $(python3 -c "import sys; s=sys.argv[1].replace(' ',''); m=0.0
if 'm' in s: a,s=s.split('m'); m=float(a)*60
print(m+float(s.rstrip('s') or 0))" "$wall") $(python3 -c "print($t1-$t0)") $energy" >>results.txt
}
echo "probe before: $(probe)"
set -- ompi-default ompi-nocma yod
i=0
while [ "$i" -lt "$rounds" ]; do
    for v in "$@"; do run "$v"; done
    first=$1; shift; set -- "$@" "$first" # rotate the order
    i=$((i + 1))
done
echo "probe after: $(probe)"
python3 - results.txt <<'PY'
import statistics, sys
rows = {}
energies = set()
for line in open(sys.argv[1]):
    v, pw, job, e = line.split()
    rows.setdefault(v, []).append((float(pw), float(job)))
    energies.add(e)
med = {v: (statistics.median(p for p, _ in r), statistics.median(j for _, j in r)) for v, r in rows.items()}
best = min(("ompi-default", "ompi-nocma"), key=lambda v: med[v][0])
print(f"{'variant':<14} {'pw.x WALL s':>12} {'job wall s':>11} {'runs':>5}")
for v, (p, j) in med.items():
    print(f"{v:<14} {p:>12.2f} {j:>11.2f} {len(rows[v]):>5}")
print(f"yod / best bare ({best}): pw.x WALL {med['yod'][0] / med[best][0]:.3f}, job {med['yod'][1] / med[best][1]:.3f}")
print("total energies:", "identical" if len(energies) == 1 else f"DIFFER: {sorted(energies)}")
PY
