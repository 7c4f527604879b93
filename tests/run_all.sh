#!/usr/bin/env bash
# The whole test suite (make test): C tests through CTest, then pytest, then a check that nothing
# of any job is left behind (processes, /dev/shm entries, bootstrap sockets), nor any daemon or
# launcher the tests start (Slurm, mpirun/orted, mpiexec/hydra, yod) that was not running before.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export BOBCAT_HOME=${BOBCAT_HOME:-$PWD/$BUILD/stage}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# The suite in a mount namespace of its own with a private /dev/shm (where the MPIs put their
# segments): every entry found there afterwards is the suite's, and the segments of MPI jobs running
# beside it on the machine are neither seen nor touched. Where namespaces cannot be made (not root,
# unprivileged user namespaces off), the suite runs as before and compares the shared /dev/shm.
if [ -z "${BOBCAT_SUITE_PRIVATE_SHM:-}" ] && unshare --mount --propagation private true 2>/dev/null; then
  export BOBCAT_SUITE_PRIVATE_SHM=1
  exec unshare --mount --propagation private sh -c \
    'mount -t tmpfs -o mode=1777,nosuid,nodev bobcat-suite-shm /dev/shm && exec bash "$0"' "$0"
fi

shm_before=$(ls -1 /dev/shm 2>/dev/null | sort)
procs_before=$(mktemp)
trap 'rm -f "$procs_before"' EXIT
# Inherited by everything the tests start: tells this suite's leftovers from other workloads'.
export LEFTOVERS_MARK="$$-$(date +%s%N)"
.venv/bin/python tests/leftovers.py snapshot "$procs_before"
rc=0
echo "== C tests (ctest) =="
(cd "$BUILD" && ctest --output-on-failure --timeout 300) || rc=1
echo "== Python tests (pytest) =="
.venv/bin/python -m pytest -q tests/python || rc=1

echo "== leftovers =="
left=0
# First, with a grace period: a job process below may be the child of a launcher still ending.
.venv/bin/python tests/leftovers.py check "$procs_before" 15 || left=1
for e in /proc/[0-9]*/environ; do
  if { tr '\0' '\n' < "$e"; } 2>/dev/null | grep -q '^BOBCAT_JOB_ID=' &&
     { tr '\0' '\n' < "$e"; } 2>/dev/null | grep -qx "LEFTOVERS_MARK=$LEFTOVERS_MARK"; then
    pid=${e#/proc/}; pid=${pid%/environ}
    echo "leftover job process: $pid $(tr '\0' ' ' < /proc/$pid/cmdline 2>/dev/null)"; left=1
  fi
done
# A socket lives only while a process holds it: name the holder. /proc/net/unix is per network
# namespace, /proc/PID per PID namespace: a socket whose holder this suite cannot see at all belongs
# to a workload outside its PID namespace (the suite run under `unshare -p`), not to the suite.
while read -r _ _ _ _ _ _ inode path; do
  holders=$(for fd in /proc/[0-9]*/fd/*; do
              [ "$(readlink "$fd" 2>/dev/null)" = "socket:[$inode]" ] && { p=${fd#/proc/}; echo "${p%%/*}"; }
            done 2>/dev/null | sort -u)
  if [ -n "$holders" ]; then
    for h in $holders; do
      # a holder without the suite's mark belongs to another workload's job running beside it
      if { tr '\0' '\n' < /proc/$h/environ; } 2>/dev/null | grep -qx "LEFTOVERS_MARK=$LEFTOVERS_MARK"; then
        echo "leftover bootstrap socket $path held by $h: $(tr '\0' ' ' < /proc/$h/cmdline 2>/dev/null)"; left=1
      else
        echo "note: bootstrap socket $path is another workload's (held by $h, not started by this suite)"
      fi
    done
  else
    echo "note: bootstrap socket $path is held by no process visible here (another PID namespace's workload)"
  fi
done < <(grep '@bobcat-' /proc/net/unix)
shm_after=$(ls -1 /dev/shm 2>/dev/null | sort)
new_shm=$(comm -13 <(echo "$shm_before") <(echo "$shm_after"))
if [ -n "$new_shm" ]; then echo "new /dev/shm entries: $new_shm"; left=1; fi
[ $left = 0 ] && echo "no leftover processes, daemons, launchers, sockets or /dev/shm entries"
[ $left = 0 ] || rc=1
exit $rc
