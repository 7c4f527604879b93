#!/usr/bin/env bash
# run_shmem_bench.sh [rounds]: bobcat's OpenSHMEM vs Debian's Open MPI oshmem, 2 PEs on one node,
# interleaved (probe, bobcat, oshmem, probe per round) so that both see the same placements.
# JSON lines on stdout: the probe's one-way ns before and after each pair, then each run's metric
# lines and done line (contracts §3; the done line names the implementation). `bobcat run shmem`
# and the default campaign do the same through bobcat's runner and store (docs/evaluation.md).
# Needs BOBCAT_HOME (the install prefix). A benchmark, not a test: run it on a quiet machine.
set -u
rounds=${1:-3}
home=${BOBCAT_HOME:?set BOBCAT_HOME to bobcat\'s install prefix}
bench=$home/libexec/bobcat/bench
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 SHMEM_SYMMETRIC_SIZE=64M
have_oshmem=0
src=$(dirname "$(readlink -f "$0")")/shmem_bench.c  # installed next to this script
if [ -x /usr/bin/oshcc ] && /usr/bin/oshcc -O2 "$src" -o "$tmp/sb.oshmem" 2>/dev/null; then
  have_oshmem=1
fi
probe() { "$bench/bobcat-probe" 2>/dev/null | grep -v '"done"' | tail -1 | sed "s/^/{\"when\":\"$1\",\"round\":$r,\"probe\":/; s/\$/}/"; }
for r in $(seq 1 "$rounds"); do
  probe before
  timeout 300 "$home/bin/oshrun" -np 2 "$bench/shmem-bench.openmpi" --impl bobcat 2>/dev/null | grep '^{'
  if [ "$have_oshmem" = 1 ]; then
    # oshmem prints its results and then crashes in shmem_finalize on this machine: keep the lines.
    timeout 300 /usr/bin/oshrun -np 2 --bind-to core "$tmp/sb.oshmem" --impl oshmem 2>/dev/null | grep '^{'
  fi
  probe after
done
