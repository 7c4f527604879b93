#!/bin/sh
# mpich_nbr_loss.sh: MPICH 4.0.2's own neighbourhood alltoall forms lose a block, without bobcat.
#
# docs/mpi.md ("Neighbourhood collectives", known issue) tells how MPICH's MPI_(I)Neighbor_alltoall(w)
# on a distributed graph with repeated edges lost a block under yod across simulated nodes when
# MPICH served the call (BOBCAT_COLL_NEIGHBOR=mpi): the receiver waited for ever for one sender's
# block while the sender had completed. This script runs the same program with no bobcat at all:
# stop 50's tests/mp/mp_neighbor.c (which still probes MPICH's alltoall forms on that graph),
# linked against MPICH alone, with two MPI_Comm_splits of each of its eight topology communicators
# added right after they are made (a split by halves of the ranks, and one that gives the odd ranks
# MPI_COMM_NULL: what the layer makes for a communicator that spans two nodes). Correct MPI, run
# bare with `mpiexec.mpich -np 4`, once with glibc's malloc and once with mimalloc preloaded (the
# allocator bobcat's heap uses). Stop 54, from /tmp/nbr.XXXXXX/d.../nbr (paths of 21-28
# characters): glibc 0 of 8 layouts hung, mimalloc 8 of 8. From paths of 30 characters or more,
# 0 of 8 with either; without the splits, or with UCX_TLS=self,sysv instead of UCX's posix
# transport, mimalloc 0 of 4. So whether MPICH (or UCX's posix transport under it) loses the
# block follows the allocator and the process's memory layout: it depends on memory it does not
# own, has freed or has not set. Which is not known (Debian's libmpich has no debug symbols here).
#
#   tests/external/mpich_nbr_loss.sh [layouts]   (default 8; a run that outlives 15 s counts as hung)
set -eu
runs=${1:-8}
top=$(cd "$(dirname "$0")/../.." && pwd)
mimalloc=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2
for need in mpiexec.mpich cc git python3; do
    command -v "$need" >/dev/null || { echo "mpich_nbr_loss: $need not found (install mpich, git, python3)" >&2; exit 2; }
done
[ -e "$mimalloc" ] || { echo "mpich_nbr_loss: $mimalloc not found (apt-get install libmimalloc2.0)" >&2; exit 2; }
work=$(mktemp -d /tmp/nbr.XXXXXX)
trap 'pkill -KILL -f "$work/.*nbr" 2>/dev/null || true; rm -rf "$work"' EXIT INT TERM
git -C "$top" show 2249d43:tests/mp/mp_neighbor.c > "$work/mp_neighbor.c"
python3 - "$work/mp_neighbor.c" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
anchor = "    MPI_Comm *made[] = {&c1p, &c1n, &c2p, &c2n, &cdup, &csub, &gr, &dg};\n"
assert anchor in s, "stop 50's mp_neighbor.c changed"
s = s.replace(anchor, anchor + """    for (size_t i = 0; i < sizeof made / sizeof made[0]; i++) {
        MPI_Comm half, odd_null;
        int me;
        MPI_Comm_rank(*made[i], &me);
        MPI_Comm_split(*made[i], wrank / 2, me, &half);
        MPI_Comm_split(*made[i], wrank % 2 == 0 ? 0 : MPI_UNDEFINED, me, &odd_null);
    }
""")
open(p, "w").write(s)
PY
cc -O2 -g -DNDEBUG -D_GNU_SOURCE -std=gnu11 -I"$top/include" -I"$top/tests/mp" -isystem /usr/include/x86_64-linux-gnu/mpich "$work/mp_neighbor.c" -o "$work/nbr" -ldl -lmpich
# The outcome follows the process's memory layout: the same binary hung in 3 of 3 runs from one
# directory and in 0 of 3 from another whose name was 12 characters longer. So each run starts the
# binary from a directory of another name length (a different layout), the same ones for both
# allocators.
for alloc in glibc mimalloc; do
    hung=0
    i=0
    while [ "$i" -lt "$runs" ]; do
        i=$((i + 1))
        dir="$work/$(printf '%*s' "$i" '' | tr ' ' d)"
        mkdir -p "$dir"
        cp "$work/nbr" "$dir/nbr"
        pre=""
        [ "$alloc" = mimalloc ] && pre="LD_PRELOAD=$mimalloc"
        rc=0
        timeout 15 mpiexec.mpich -np 4 env $pre "$dir/nbr" > "$work/out" 2>&1 < /dev/null || rc=$?
        if [ "$rc" -eq 124 ]; then
            hung=$((hung + 1))
            echo "mpich_nbr_loss: $alloc, layout $i: hung"
        elif [ "$rc" -ne 0 ]; then
            echo "mpich_nbr_loss: $alloc, layout $i: failed (exit $rc):" >&2
            tail -5 "$work/out" >&2
        fi
        pkill -KILL -f "$work/.*nbr" 2>/dev/null || true
    done
    echo "mpich_nbr_loss: $alloc: $hung of $runs layouts hung"
done
