#!/bin/sh
# run_client.sh: real MPI one-sided clients under yod (issue 26), 2 ranks on one node, yod against
# the bare launcher of the same MPI, both MPIs, rounds interleaved (order rotated every round), the
# placement probe before and after:
#   * ga_check (bench/rma/ga_check.c): a Global Arrays workload — puts, concurrent accumulates, a
#     shared task counter, gets, GA_Dgemm — on Debian's GA 5.8.2, which is built on ARMCI-MPI, so
#     every remote access is MPI one-sided (MPI_Accumulate, MPI_Get_accumulate, MPI_Fetch_and_op,
#     MPI_Win_flush*, MPI_Win_lock_all). Its checksums must be identical bit for bit in every run.
#   * NWChem 7.0.2 (Debian's nwchem.openmpi / nwchem.mpich, ARMCI-MPI linked in): a direct SCF of
#     benzene in 6-31G*. Its energy differs between runs in the last digits even bare (the SCF's
#     task counter hands out work in timing-dependent order and accumulates sum in that order), so
#     every run must agree within TOL Hartree; the spread is printed.
# Per program and MPI: the median of the program's own time (ga_check: its timed loop; NWChem: its
# "Total times" wall, 0.1 s resolution) and of the job's wall time, yod / bare, whether the results
# agree, and the one-sided rows of BOBCAT_STATS=rank from the last yod run.
# MPICH's runs of NWChem get ARMCI_USE_WIN_ALLOCATE=0 (Debian's README.Debian for nwchem-mpich: with
# MPI_Win_allocate windows its SCF does not converge); ga_check runs MPICH as it comes.
#   bench/rma/run_client.sh [ROUNDS] [GA_N] [GA_ITERS]    (default 3 512 200; BOBCAT_HOME: the
#   installed tree; apt install libglobalarrays-dev libarmci-mpi-dev libscalapack-openmpi-dev
#   libscalapack-mpich-dev nwchem-openmpi nwchem-mpich)
# Extra environment reaches every rank (e.g. ARMCI_RMA_ATOMICITY=0: ARMCI-MPI's puts and gets as
# MPI_Put and MPI_Get instead of MPI_Accumulate(MPI_REPLACE) and MPI_Get_accumulate(MPI_NO_OP)).
set -eu
rounds=${1:-3}
ga_n=${2:-512}
ga_iters=${3:-200}
TOL=${TOL:-1e-9}
here=$(cd "$(dirname "$0")" && pwd)
home=${BOBCAT_HOME:-$here/../../build/stage}
gacfg=/usr/lib/x86_64-linux-gnu/ga
for f in openmpi mpich; do
    [ -x "$gacfg/$f/bin/ga-config" ] || { echo "run_client: Global Arrays is needed (apt install libglobalarrays-dev libarmci-mpi-dev libscalapack-$f-dev)" >&2; exit 2; }
    command -v "nwchem.$f" >/dev/null || { echo "run_client: nwchem.$f is needed (apt install nwchem-$f)" >&2; exit 2; }
done
dir=$(mktemp -d "${TMPDIR:-/tmp}/bobcat-rma-client.XXXXXX")
trap 'rm -rf "$dir"' EXIT
for f in openmpi mpich; do
    # GA's libraries are Fortran underneath: libgfortran after them
    "mpicc.$f" -O2 -o "$dir/ga_check.$f" "$here/ga_check.c" $("$gacfg/$f/bin/ga-config" --libs) -lgfortran -lm ||
        { echo "run_client: building ga_check.c for $f failed" >&2; exit 3; }
    mkdir -p "$dir/nw.$f"
done
cat >"$dir/benzene.nw" <<'EOF'
start benzene
title "benzene 6-31G* direct SCF"
geometry units angstrom
  C    0.000000    1.396792    0.000000
  C    1.209657    0.698396    0.000000
  C    1.209657   -0.698396    0.000000
  C    0.000000   -1.396792    0.000000
  C   -1.209657   -0.698396    0.000000
  C   -1.209657    0.698396    0.000000
  H    0.000000    2.484212    0.000000
  H    2.151390    1.242106    0.000000
  H    2.151390   -1.242106    0.000000
  H    0.000000   -2.484212    0.000000
  H   -2.151390   -1.242106    0.000000
  H   -2.151390    1.242106    0.000000
end
basis
  * library 6-31g*
end
scf
  thresh 1e-8
  direct
end
task scf energy
EOF
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
probe() { "$home/libexec/bobcat/bench/bobcat-probe" --seconds 0.3 | sed -n 's/.*"placement": "\([a-z]*\)".*/\1/p' | head -1; }
now() { date +%s.%N; }
launch() { # flavour how -> the launcher's command prefix
    case $1.$2 in
        openmpi.bare) echo "mpirun.openmpi -np 2 --bind-to core" ;;
        mpich.bare) echo "mpiexec.mpich -n 2 -bind-to core" ;;
        *.yod) echo "$home/bin/yod -VN2 -np 2 --heap 1G" ;;
    esac
}
run() { # program flavour how -> one line: program flavour how job_wall_s program_time_s result...
    prog=$1 fl=$2 how=$3
    out="$dir/out.$prog.$fl.$how" err="$dir/err.$prog.$fl.$how"
    stats=
    [ "$how" = yod ] && stats=rank
    t0=$(now)
    case $prog in
        ga) env ${stats:+BOBCAT_STATS=$stats} $(launch "$fl" "$how") "$dir/ga_check.$fl" "$ga_n" "$ga_iters" >"$out" 2>"$err" ;;
        nwchem)
            (cd "$dir/nw.$fl" && if [ "$fl" = mpich ]; then export ARMCI_USE_WIN_ALLOCATE=0; fi &&
                env ${stats:+BOBCAT_STATS=$stats} $(launch "$fl" "$how") "nwchem.$fl" ../benzene.nw) >"$out" 2>"$err" ;;
    esac || { echo "run_client: $prog $fl $how failed:" >&2; tail -5 "$err" >&2; exit 1; }
    t1=$(now)
    wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')
    case $prog in
        ga) line=$(grep '^ga_check:' "$out") || { echo "run_client: ga_check $fl $how printed no result" >&2; exit 1; }
            t=$(echo "$line" | sed 's/.* time_s \([0-9.]*\).*/\1/')
            res=$(echo "$line" | sed 's/ time_s [0-9.]*//; s/^ga_check: //' | tr ' ' '_') ;;
        nwchem) res=$(awk '/Total SCF energy/ {print $5}' "$out")
            t=$(awk '/Total times/ {sub("s", "", $6); print $6}' "$out")
            [ -n "$res" ] || { echo "run_client: nwchem $fl $how printed no energy" >&2; tail -5 "$out" >&2; exit 1; } ;;
    esac
    [ "$how" = yod ] && cp "$err" "$dir/stats.$prog.$fl"
    echo "$prog $fl $how $wall $t $res"
}
echo "placement before: $(probe)"
variants="ga.openmpi.bare ga.openmpi.yod ga.mpich.bare ga.mpich.yod nwchem.openmpi.bare nwchem.openmpi.yod nwchem.mpich.bare nwchem.mpich.yod"
: >"$dir/all.txt"
i=0
while [ "$i" -lt "$rounds" ]; do
    for v in $variants; do
        run $(echo "$v" | tr '.' ' ') >>"$dir/all.txt"
    done
    variants="$(echo "$variants" | awk '{for (k = 2; k <= NF; k++) printf "%s ", $k; print $1}')" # rotate
    i=$((i + 1))
done
echo "placement after: $(probe)"
med() { # column of the rows matching "prog fl how"
    grep "^$1 $2 $3 " "$dir/all.txt" | awk -v c="$4" '{print $c}' | sort -g |
        awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'
}
status=0
for prog in ga nwchem; do
    for fl in openmpi mpich; do
        b=$(med $prog $fl bare 5); y=$(med $prog $fl yod 5)
        bw=$(med $prog $fl bare 4); yw=$(med $prog $fl yod 4)
        echo "$prog $fl: median program time bare $b s | yod $y s | yod / bare $(awk -v y="$y" -v b="$b" 'BEGIN {printf "%.3f", (b > 0) ? y / b : 0}'); job wall bare $bw s | yod $yw s ($rounds rounds)"
    done
    if [ $prog = ga ]; then
        n=$(grep '^ga ' "$dir/all.txt" | awk '{print $6}' | sort -u | wc -l)
        if [ "$n" -eq 1 ]; then
            echo "ga: every run of both MPIs, bare and yod, identical: $(grep '^ga ' "$dir/all.txt" | awk 'NR==1 {print $6}' | tr '_' ' ')"
        else
            echo "ga: RESULTS DIFFER between runs:"; grep '^ga ' "$dir/all.txt" | awk '{print $2, $3, $6}' | sort | uniq -c
            status=1
        fi
    else
        for how in bare yod; do
            grep "^nwchem [a-z]* $how " "$dir/all.txt" | awk -v h="$how" '{print $6}' | sort -g |
                awk -v h="$how" 'NR==1 {lo=$1} {hi=$1; n++} END {printf "nwchem %s: %d runs, SCF energy %.12f .. %.12f Eh\n", h, n, lo, hi}'
        done
        spread=$(grep '^nwchem ' "$dir/all.txt" | awk '{print $6}' | sort -g | awk 'NR==1 {lo=$1} {hi=$1} END {printf "%.3g", hi - lo}')
        if awk -v s="$spread" -v t="$TOL" 'BEGIN {exit !(s <= t)}'; then
            echo "nwchem: every run of both MPIs, bare and yod, within $spread Eh of each other (tolerance $TOL)"
        else
            echo "nwchem: ENERGIES DIFFER by $spread Eh (tolerance $TOL):"; grep '^nwchem ' "$dir/all.txt" | awk '{print $2, $3, $6}'
            status=1
        fi
    fi
done
# The one-sided rows of the last yod run of each: bobcat's per call (Put, Accumulate, ... by path:
# inplace, staged, mpi) and per window (`window "name" ... acc= inplace= staged= mpi=`), and the
# account's pass-through lines of calls left to the real MPI (MPI_Put calls=... mpi=...).
for f in "$dir"/stats.*; do
    echo "BOBCAT_STATS, last yod run of $(basename "$f" | sed 's/^stats\.//'):"
    grep '^bobcat: stats' "$f" | grep -E ': (layer=|(MPI_)?(Put|Get|Rput|Rget|Accumulate|Raccumulate|Get_accumulate|Rget_accumulate|Fetch_and_op|Compare_and_swap|RMA_[a-z]+|Win_[A-Za-z_]+) )' || echo "  (no one-sided rows)"
    w=$(grep -c '^bobcat: stats rank [0-9]*: window ' "$f" || true)
    [ "$w" -eq 0 ] || { echo "  $w per-window rows, the first two:"; grep '^bobcat: stats rank [0-9]*: window ' "$f" | head -2; }
done
exit $status
