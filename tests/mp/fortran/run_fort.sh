#!/bin/sh
# run_fort.sh: run a Fortran test program (mp_fort*) under the launcher with BOBCAT_STATS=1 and
# check both what it says of its values and which path its calls took.
#   run_fort.sh p2p <launcher> [args...] <program>      every check passed, and rank 0's sends (to its
#                                                        node mate) and on one node its receives took
#                                                        the layer's path
#   run_fort.sh bobcat <launcher> [args...] <program>   every check passed, and rank 0's statistics
#                                                        show point-to-point and Allreduce on bobcat
#                                                        (every Allreduce the program says it made, but
#                                                        those on a communicator of one rank per node),
#                                                        every MPI_Put it says it made in the layer,
#                                                        and the pass-throughs it names counted
set -u
expect=$1
shift
out=$(BOBCAT_STATS=1 "$@" 2>&1)
rc=$?
printf '%s\n' "$out"
fail() { echo "run_fort: FAIL: $*"; exit 1; }
[ "$rc" -eq 0 ] || fail "the job exited $rc"
printf '%s\n' "$out" | grep -q 'FAILED' && fail "the program's checks failed"
printf '%s\n' "$out" | grep -Eq '^mp_fort[a-z0-9_]*: ok$' || fail "the program did not report ok"
r0() { printf '%s\n' "$out" | grep -E "stats rank 0( |:).*$1"; }
case "$expect" in
bobcat)
    r0 'layer=on' >/dev/null || fail "rank 0: the layer was not on"
    r0 'p2p send calls=[0-9]+ inplace=[1-9]' >/dev/null || fail "rank 0: no send took bobcat's path"
    r0 'p2p recv calls=[0-9]+ inplace=[1-9]' >/dev/null || fail "rank 0: no receive took bobcat's path"
    r0 'Allreduce calls=[0-9]+ inplace=[1-9]' >/dev/null || fail "rank 0: no Allreduce took bobcat's path"
    n=$(printf '%s\n' "$out" | sed -n 's/^mp_fort[0-9]*: allreduce calls=\([0-9]*\)$/\1/p' | head -n 1)
    [ -n "$n" ] || fail "the program did not say how many Allreduce calls it made"
    # each took bobcat's path, or is the real MPI's by design: a communicator with one rank on every
    # node (the evens and odds across two simulated nodes: why.one-per-node)
    line=$(r0 "Allreduce calls=$n ") || fail "rank 0: the statistics do not show $n Allreduce calls"
    i=$(printf '%s\n' "$line" | sed -n 's/.* inplace=\([0-9]*\) .*/\1/p')
    a=$(printf '%s\n' "$line" | sed -n 's/.* why\.one-per-node=\([0-9]*\).*/\1/p')
    [ $((${i:-0} + ${a:-0})) -eq "$n" ] || fail "rank 0: not all $n Allreduce calls took bobcat's path ($line)"
    # one-sided: every MPI_Put the program made reached the layer (on Open MPI through its Fortran
    # entry points, not the MPI's own window); on one node all took its path (a window across
    # simulated nodes is the real window's for every target: mixed)
    n=$(printf '%s\n' "$out" | sed -n 's/^mp_fort[0-9]*: rma puts=\([0-9]*\)$/\1/p' | head -n 1)
    [ -n "$n" ] || fail "the program did not say how many MPI_Put calls it made"
    r0 "Put calls=$n " >/dev/null || fail "rank 0: not all $n MPI_Put calls reached the layer"
    case " $* " in
    *" --simulate-nodes "*) ;;
    *) # in place (the heap) or staged (a Fortran array outside it): the layer's path either way
        r0 "Put calls=$n " | sed -n 's/.* inplace=\([0-9]*\) staged=\([0-9]*\) .*/\1 \2/p' |
            { read -r i s && [ $((i + s)) -eq "$n" ]; } || fail "rank 0: not all $n MPI_Put calls took the layer's path" ;;
    esac
    # routines the layer passes through: counted in the account as often as the program says
    printf '%s\n' "$out" | sed -n 's/^mp_fort[0-9]*: pass \([A-Za-z_]*\) calls=\([0-9]*\)$/\1 \2/p' |
        while read -r name calls; do
            r0 "MPI_$name calls=$calls " >/dev/null || { echo "run_fort: FAIL: rank 0: MPI_$name not counted $calls times"; exit 1; }
        done || exit 1
    ;;
p2p) # point-to-point alone (mp_fort08_large)
    r0 'layer=on' >/dev/null || fail "rank 0: the layer was not on"
    r0 'p2p send calls=[0-9]+ inplace=[0-9]+ staged=[0-9]+ mpi=0 ' >/dev/null || fail "rank 0: a send went to the real MPI"
    case " $* " in
    *" --simulate-nodes "*) ;; # rank 0 receives from the last rank, on the other node: the real MPI's
    *) r0 'p2p recv calls=[0-9]+ inplace=[0-9]+ staged=[0-9]+ mpi=0 ' >/dev/null || fail "rank 0: a receive went to the real MPI" ;;
    esac
    r0 'p2p send calls=[1-9]' >/dev/null || fail "rank 0: no send reached the layer"
    ;;
*) fail "unknown expectation $expect" ;;
esac
echo "run_fort: ok ($expect)"
