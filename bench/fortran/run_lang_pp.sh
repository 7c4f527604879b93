#!/bin/sh
# run_lang_pp.sh: Fortran vs C under yod, interleaved. Builds lang_pp.F90 (use mpi) and its C twin
# lang_pp.c with the chosen MPI's wrappers, runs them alternately ROUNDS times (2 ranks, one node)
# and prints per case the median of each language and the ratio Fortran/C.
# The two vCPUs change placement (MACHINE.md) between runs: an 8-byte Allreduce takes ~0.08 us with
# the ranks on separate cores and ~0.33 us across chips, so a median over runs of both kinds lands
# anywhere between and the ratio swings by 10 % and more. Each run is bracketed by the placement probe;
# the ratios come from the runs that began and ended in the most frequent placement (if at least 5
# of each language did; otherwise from all runs, said so), and the count of each placement is printed.
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
probe() {
    "$home/libexec/bobcat/bench/bobcat-probe" --seconds 0.2 | sed -n 's/.*"placement": "\([a-z]*\)".*/\1/p' | head -1
}
i=0
while [ "$i" -lt "$rounds" ]; do
    # The order alternates, so drift touches both languages alike.
    for l in $([ $((i % 2)) -eq 0 ] && echo f c || echo c f); do
        before=$(probe)
        "$home/bin/yod" -VN2 -np 2 "$dir/$l" 2>/dev/null >"$dir/run"
        after=$(probe)
        sed "s/^/$l $before-$after /" "$dir/run" >>"$dir/out"
    done
    i=$((i + 1))
done
python3 - "$dir/out" <<'PY'
import collections, statistics, sys
rows, seen = {}, collections.Counter()
for line in open(sys.argv[1]):
    lang, pl, case, size, us = line.split()
    rows.setdefault((case, int(size)), {}).setdefault(lang, []).append((pl, float(us)))
    if case == "pingpong" and size == "8":
        seen[pl] += 1
# The placement most runs began and ended in; its runs alone if it has 5 of each language.
top = next((p for p, _ in seen.most_common() if p.split("-")[0] and p.split("-")[0] == p.split("-")[1]), None)
sel = {k: {l: [u for p, u in v if p == top] for l, v in lv.items()} for k, lv in rows.items()}
print("placement before-after of each run:", ", ".join(f"{p} {n}" for p, n in seen.most_common()))
if top and all(len(x) >= 5 for lv in sel.values() for x in lv.values()):
    print(f"medians of the runs in {top.split('-')[0]} placement")
    use = sel
else:
    print("fewer than 5 runs of a language began and ended in one placement: medians of all runs")
    use = {k: {l: [u for _, u in v] for l, v in lv.items()} for k, lv in rows.items()}
n = min(len(x) for lv in use.values() for x in lv.values())
print(f"{'case':<10} {'bytes':>8} {'Fortran us':>11} {'C us':>9} {'F/C':>6}  (medians of {n}+ runs)")
for (case, size), v in sorted(use.items()):
    f, c = statistics.median(v["f"]), statistics.median(v["c"])
    print(f"{case:<10} {size:>8} {f:>11.3f} {c:>9.3f} {f / c:>6.3f}")
PY
