#!/usr/bin/env python3
"""Daemons and launchers the test suite starts, left running after it (tests/run_all.sh).

    leftovers.py snapshot FILE        record the ones running now (before the suite)
    leftovers.py check FILE [GRACE]   after the suite: list the ones not in FILE that are still
                                      running GRACE seconds (default 15) later; exit 1 if any

A process is identified by its pid and start time (so a recycled pid is a new process) and
recognised by its command name (/proc/PID/comm: for a script, the script's name). Processes
that were running before the suite started are never reported: other workloads on the machine may
legitimately run mpirun or a Slurm daemon. The grace period lets daemons that were asked to stop
(slurmd's KillWait, an orted finishing) do so; it ends as soon as none is left. Stdlib only.

Only the suite's processes count. run_all.sh runs the suite in a mount namespace of its own (a
private /dev/shm), so a process in that namespace is the suite's whatever a test did to its
environment, and one outside it is another workload's (named in a note, never a failure); where
no namespace could be made, the suite's mark in the environment (LEFTOVERS_MARK=<value>, exported
by run_all.sh and inherited by everything the tests start) tells instead.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Callable

# What the tests start: the private Slurm cluster (tests/slurm) and its steps, Open MPI's and
# MPICH's launchers and their node daemons, and yod.
NAMES = frozenset({
    "slurmctld", "slurmd", "slurmstepd", "srun", "salloc",
    "mpirun", "mpirun.openmpi", "orterun", "orted", "prterun", "prted",
    "mpiexec", "mpiexec.openmpi", "mpiexec.mpich", "mpiexec.hydra", "hydra_pmi_proxy",
    "yod",
})


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return None


def watched(comm: str, argv: list[str]) -> bool:
    """One of NAMES, or yod run by an interpreter (`python -m bobcat.launcher.yod`, `python .../yod`)."""
    if comm in NAMES:
        return True
    if not comm.startswith("python"):
        return False
    args = [a for a in argv[1:] if a not in ("-S", "-s", "-E", "-I", "-u", "-B")]
    return args[:2] == ["-m", "bobcat.launcher.yod"] or (bool(args) and Path(args[0]).name == "yod")


def processes() -> dict[str, str]:
    """'pid:starttime' -> 'pid name: command line' for every watched process."""
    found = {}
    for d in Path("/proc").glob("[0-9]*"):
        comm = (_read(d / "comm") or "").strip()
        argv = (_read(d / "cmdline") or "").split("\0")[:-1]
        if not watched(comm, argv):
            continue
        stat = _read(d / "stat")
        if stat is None:
            continue
        # Fields 3 (state) and 22 (starttime), counted after the ')' that closes the name.
        fields = stat.rpartition(")")[2].split()
        if fields[0] in ("Z", "X"):  # ended, not yet reaped by its parent: nothing runs
            continue
        start = fields[19]
        found[f"{d.name}:{start}"] = f"{d.name} {comm}: {' '.join(argv)}{_origin(d)}"
    return found


def _origin(d: Path) -> str:
    mark = os.environ.get("LEFTOVERS_MARK")
    if not mark:
        return ""
    try:
        env = (d / "environ").read_bytes().split(b"\0")
    except OSError:
        return ""
    if f"LEFTOVERS_MARK={mark}".encode() in env:
        return "  [started by this suite]"
    return "  [no mark of this suite: another workload's, or a test cleared the environment]"


def left_after(before: set[str], grace: float,
               keep: Callable[[str], bool] = lambda _key: True) -> dict[str, str]:
    """The watched processes not in `before` (and kept by `keep`) still running after at most
    `grace` seconds; returns as soon as there are none."""
    deadline = time.monotonic() + grace
    while True:
        new = {k: v for k, v in processes().items() if k not in before and keep(k)}
        if not new or time.monotonic() >= deadline:
            return new
        time.sleep(0.2)


def _mount_ns(pid: str) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/mnt")
    except OSError:
        return None


def ours(key: str) -> bool:
    """Whether a process is the suite's. Where the suite runs in a mount namespace of its own
    (run_all.sh, BOBCAT_SUITE_PRIVATE_SHM), everything it started is in that namespace, whatever a
    test did to the environment, and nothing of another workload is; elsewhere, its mark in the
    environment tells (LEFTOVERS_MARK), or, without a mark to compare, every process counts."""
    pid = key.split(":", 1)[0]
    if os.environ.get("BOBCAT_SUITE_PRIVATE_SHM"):
        mine = _mount_ns("self")
        return mine is not None and _mount_ns(pid) == mine
    mark = os.environ.get("LEFTOVERS_MARK")
    if not mark:
        return True
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return True
    return f"LEFTOVERS_MARK={mark}".encode() in env


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "snapshot":
        Path(argv[1]).write_text("".join(f"{k}\n" for k in processes()))
        return 0
    if len(argv) >= 2 and argv[0] == "check":
        before = set(Path(argv[1]).read_text().split())
        new = left_after(before, float(argv[2]) if len(argv) > 2 else 15.0, ours)
        for v in sorted(new.values()):
            print(f"leftover daemon or launcher (started during the suite): {v}")
        # Launchers of other workloads that ran beside the suite: named, never counted.
        for k, v in sorted(processes().items()):
            if k not in before and not ours(k):
                print(f"note: not the suite's (another workload beside it): {v}")
        return 1 if new else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
