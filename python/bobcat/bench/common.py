"""What the benchmarks of bobcat itself share: where their binaries are, the core-to-core placement
probe they run before and after their rounds, and the node settings (hugetlb pool, shmem THP) they
hold for a run.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

from .. import paths
from ..evaluation import parsers
from ..evaluation.runner import probe_path

HUGE_SYSFS = Path("/proc/sys/vm/nr_hugepages")
THP_SYSFS = Path("/sys/kernel/mm/transparent_hugepage/shmem_enabled")


def bench_dir() -> Path:
    return paths.home() / "libexec" / "bobcat" / "bench"


def probe() -> dict:
    r = subprocess.run([str(probe_path())], capture_output=True, text=True, timeout=60)
    row = parsers.parse_probe(r.stdout)
    return {"oneway_ns": row["value"], "placement": row["placement"]} if row else {"error": r.stderr}


def interleaved(variants: dict, run_once, reps: int) -> tuple[dict, dict, dict]:
    """Every variant once per round (A B C ... A B C ...) for `reps` rounds, the placement probe
    before and after: (probe before, probe after, {variant: [run_once(*variant's value) per round]})."""
    before = probe()
    rows: dict[str, list] = {v: [] for v in variants}
    for _ in range(reps):
        for name, spec in variants.items():
            rows[name].append(run_once(*spec))
    return before, probe(), rows


class NodeSettings:
    """Reserve hugetlb pages and allow shmem THP for the run (root only); restore on exit."""

    def __init__(self, pages: int):
        self.pages = pages
        self.saved: dict[Path, str] = {}

    def __enter__(self):
        if os.geteuid() != 0:
            return self
        for path, value in ((HUGE_SYSFS, str(self.pages)), (THP_SYSFS, "advise")):
            try:
                old = path.read_text().strip()
                self.saved[path] = old.split("[")[1].split("]")[0] if "[" in old else old
                path.write_text(value)
            except OSError:
                pass
        return self

    def __exit__(self, *exc):
        for path, value in self.saved.items():
            try:
                path.write_text(value)
            except OSError:
                pass
