"""The hugetlb pool a campaign's yod runs need: how many 2 MiB pages, and reserving them.

lwk's heaps take 2 MiB pages from the hugetlb pool (then shmem THP, then 4 KiB pages: docs/yod.md).
A fresh node has no pool, so without a reservation every lwk run of `make evaluate` would measure
4 KiB pages and the small-vs-large table (CNW §4.1.2) would compare 4 KiB with 4 KiB.  As root the
campaign raises the pool to what its largest job needs and gives back what it added afterwards
(as bench.smartmap does for the foundation benchmark); never lowers a pool someone else set.
Without root, or when the kernel cannot find the memory, it says so: the note goes into the
campaign summary and from there into the report.
"""
from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

from . import configs
from .runner import RunSpec
from ..launcher.plan import host_cores, memory_bound, parse_args, plan_heaps

HUGE_PAGE = 2 << 20
NR_HUGEPAGES = Path("/proc/sys/vm/nr_hugepages")
MEMINFO = Path("/proc/meminfo")


def job_pages(spec: RunSpec, cs: configs.ConfigSet) -> int:
    """2 MiB pages the heaps of one yod job need (0 for a run that does not go through yod or
    asks for small pages), from yod's own plan of the job: its heap per rank (--heap,
    --heap-node, or the default share of this node's memory) times the ranks on this host."""
    config = cs.get(spec.config)
    if not config.via_yod or spec.pages == "small":
        return 0
    pages = _yod_job_pages(spec.mode, spec.ranks, spec.mpi, config.vendor[spec.mpi].yod_args)
    if spec.benchmark == "shmem" and pages:
        # libbobcat adds the symmetric heap (rounded up to its 32 MiB block) to each PE's segment.
        from .shmem_run import SYMMETRIC_BYTES
        block = 32 << 20
        pages += spec.ranks * (-(-SYMMETRIC_BYTES // block) * block // HUGE_PAGE)
    return pages


@functools.lru_cache(maxsize=None)
def _yod_job_pages(mode: str, ranks: int, mpi: str, yod_args: tuple[str, ...]) -> int:
    """From yod's own plan (launcher.plan.plan_heaps, the pure part of its start-up). A job yod would
    refuse is an error here too (UsageError, with yod's message): the campaign must not quietly
    reserve nothing for it."""
    argv = ["-SN", "--simulate-nodes"] if mode == "SN" else ["-VN2"]
    argv += ["-np", str(ranks), "--mpi", mpi, *yod_args]
    opts = parse_args([*argv, "/bin/true"])
    room, _, as_limit = memory_bound()
    _, _, heaps = plan_heaps(opts, host_cores(), room, as_limit)
    return sum(g.np * -(-heap // HUGE_PAGE) for g, heap in zip(opts.groups, heaps))


def pool() -> tuple[int, int]:
    """(HugePages_Total, HugePages_Free) of the default 2 MiB size; (0, 0) if unknown."""
    total = free = 0
    try:
        for line in MEMINFO.read_text().splitlines():
            if line.startswith("HugePages_Total:"):
                total = int(line.split()[1])
            elif line.startswith("HugePages_Free:"):
                free = int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return total, free


class Reservation:
    """`with Reservation(need):` the pool has `need` free pages if root and memory allow; on exit
    the pool goes back to its size before, only if this raised it.  `record` says what happened
    (stored in the campaign summary); `short` is True when the runs will not all find the pages."""

    def __init__(self, need: int, is_root: bool | None = None):
        self.need = need
        self.is_root = os.geteuid() == 0 if is_root is None else is_root
        self.raised_from: int | None = None
        self.short = False
        self.record: dict[str, Any] = {"need_pages": need}

    def __enter__(self) -> "Reservation":
        if self.need <= 0:
            self.record["note"] = "no run needs 2 MiB heap pages"
            return self
        total, free = pool()
        self.record.update(pool_before=total, free_before=free)
        if free >= self.need:
            self.record["note"] = (f"hugetlb pool: {free} free 2 MiB pages cover the {self.need} "
                                   "the largest lwk job needs")
            return self
        fallback = ("large-page runs fall back to shmem THP (if enabled) or 4 KiB pages; a run "
                    "that got 4 KiB pages is not counted as large")
        if not self.is_root:
            self.short = True
            self.record["note"] = (
                f"not root: the hugetlb pool has {free} free 2 MiB pages and the largest lwk job "
                f"needs {self.need}, so {fallback} (reserve them as root: echo "
                f"{total + self.need - free} > {NR_HUGEPAGES}, or run the campaign as root)")
            return self
        want = total + self.need - free
        try:
            NR_HUGEPAGES.write_text(f"{want}\n")
        except OSError as e:
            self.short = True
            self.record["note"] = (f"cannot raise the hugetlb pool to {want} pages "
                                   f"({e.strerror}), so {fallback}")
            return self
        self.raised_from = total
        got_total, got_free = pool()
        self.record.update(pool_reserved=got_total, free_reserved=got_free)
        if got_free < self.need:
            self.short = True
            self.record["note"] = (
                f"raised the hugetlb pool from {total} to {got_total} pages but only {got_free} "
                f"are free and the largest lwk job needs {self.need} (not enough free memory "
                f"in 2 MiB pieces?), so {fallback}")
        else:
            self.record["note"] = (f"reserved hugetlb pages for the lwk runs: pool {total} → "
                                   f"{got_total} ({self.need} needed), given back at the end")
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.raised_from is None:
            return
        # Give back what this reservation added, from the pool as it is now: another job (a
        # second campaign, a test) may have raised it meanwhile, and restoring the size seen at
        # the start would take its pages away, or leave its pages behind when it gives back
        # first (issue 7's loaded runs ended with 792 pages nobody owned).
        added = self.record["pool_reserved"] - self.raised_from
        try:
            now = pool()[0]
            NR_HUGEPAGES.write_text(f"{max(now - added, 0)}\n")
            self.record["pool_after"] = pool()[0]
        except OSError as e:
            self.record["note"] += f"; could not give the pages back ({e.strerror})"
