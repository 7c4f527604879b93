"""`bobcat doctor`: is this node ready to measure?  One line per fact: OK, WARN or FAIL, with
the fix.  Read-only: doctor never changes a setting, it says which one to change.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass

from . import paths
from .evaluation import configs, machine, runner, shmem_run


@dataclass
class Check:
    status: str  # OK | WARN | FAIL
    name: str
    detail: str
    fix: str = ""


def _mpis() -> list[Check]:
    out = []
    for vendor, launcher in machine.LAUNCHERS.items():
        v = machine.mpi_version(vendor)
        if v:
            out.append(Check("OK", f"mpi {vendor}", f"{launcher}: {v}"))
        else:
            out.append(Check("FAIL", f"mpi {vendor}", f"{launcher} not found or not answering",
                             "apt-get install " + ("openmpi-bin libopenmpi-dev" if vendor == "openmpi"
                                                   else "mpich libmpich-dev")))
    return out


def _hwloc() -> Check:
    exe = shutil.which("hwloc-calc")
    if exe is None:
        return Check("WARN", "hwloc", "hwloc-calc not found", "apt-get install hwloc")
    counts = []
    for what in ("core", "pu"):
        r = subprocess.run([exe, "--number-of", what, "all"], capture_output=True, text=True,
                           timeout=20)
        counts.append(r.stdout.strip() or "?")
    detail = f"{counts[0]} cores, {counts[1]} PUs"
    if counts[0].isdigit() and int(counts[0]) < 2:
        return Check("WARN", "hwloc", detail + ": VN2 needs two cores", "run on a node with >= 2 cores")
    return Check("OK", "hwloc", detail)


def _hugepages() -> Check:
    h = machine.hugepages()
    detail = f"nr_hugepages={h['nr_hugepages']}, free={h['free']} ({h['size_kb']} kB pages)"
    if not h["nr_hugepages"]:
        return Check("WARN", "huge pages", detail + ": lwk heaps fall back to THP or 4 KiB pages",
                     "as root: echo 1024 > /proc/sys/vm/nr_hugepages  (2 GiB of 2 MiB pages)")
    if not h["free"]:
        return Check("WARN", "huge pages", detail + ": pool exhausted",
                     "raise /proc/sys/vm/nr_hugepages or stop what holds them")
    return Check("OK", "huge pages", detail)


def _thp() -> Check:
    t = machine.thp()
    detail = f"enabled={t['enabled']}, shmem_enabled={t['shmem_enabled']}"
    if t["enabled"] is None:
        return Check("WARN", "THP", "no /sys/kernel/mm/transparent_hugepage", "")
    if t["shmem_enabled"] in ("never", "deny", None):
        return Check("WARN", "THP", detail + ": memfd heaps cannot get THP (hugetlb or 4 KiB only)",
                     "as root: echo advise > /sys/kernel/mm/transparent_hugepage/shmem_enabled")
    return Check("OK", "THP", detail)


def _cma() -> Check:
    scope = machine.ptrace_scope()
    if scope is None:
        return Check("OK", "CMA", "no Yama: CMA allowed (process_vm_readv between same-user ranks)")
    if scope == 0:
        return Check("OK", "CMA", "kernel.yama.ptrace_scope=0: CMA allowed")
    return Check("WARN" if scope == 1 else "FAIL", "CMA",
                 f"kernel.yama.ptrace_scope={scope}: CMA between ranks is refused, the MPIs fall "
                 "back to double copy", "as root: sysctl kernel.yama.ptrace_scope=0")


def _measured_hz(seconds: float = 0.5) -> float | None:
    """Local timer interrupts on this CPU while it spins: the tick rate, when no config says it."""
    def loc() -> list[int] | None:
        for line in (machine.read("/proc/interrupts") or "").splitlines():
            if line.strip().startswith("LOC:"):
                return [int(x) for x in line.split()[1:] if x.isdigit()]
        return None
    cpu = os.sched_getaffinity(0)
    me = min(cpu)
    os.sched_setaffinity(0, {me})
    try:
        a, t0 = loc(), time.monotonic()
        while time.monotonic() - t0 < seconds:
            pass
        b, t1 = loc(), time.monotonic()
    finally:
        os.sched_setaffinity(0, cpu)
    if not a or not b or me >= len(a):
        return None
    return (b[me] - a[me]) / (t1 - t0)


def _tick() -> Check:
    hz = machine.config_hz()
    if hz:
        return Check("OK", "timer tick", f"CONFIG_HZ={hz} (a {1000 / hz:g} ms tick: selfish sees "
                     f"~{hz} detours per second per core)")
    m = _measured_hz()
    if m is None:
        return Check("WARN", "timer tick", "CONFIG_HZ unknown and /proc/interrupts has no LOC line",
                     "install the kernel config (/boot/config-$(uname -r))")
    return Check("OK", "timer tick", f"measured ~{m:.0f} Hz (no kernel config found)")


def _probe() -> Check:
    rec = runner.run_probe()
    if rec is None or "error" in rec:
        why = rec["error"] if rec else "no output"
        return Check("WARN", "placement probe", why,
                     f"build and install the tree, or set BOBCAT_HOME (now {paths.home()})")
    p = rec.get("placement")
    detail = f"one-way cache-line transfer {rec.get('value', 0):.1f} ns: placement {p}"
    if p == "core":
        return Check("OK", "placement probe", detail)
    return Check("WARN", "placement probe", detail + " (atypical: runs now are marked with it)",
                 "the hypervisor moves vCPUs; repeat later, or compare runs of one placement "
                 "(bobcat compare --placement core)")


def _benchmarks() -> Check:
    missing = [f"{b}.{m}" for b in runner.BENCHMARKS for m in runner.BENCHMARKS[b].mpis
               if not runner.bench_available(b, m)[0]]
    total = sum(len(b.mpis) for b in runner.BENCHMARKS.values())
    if not missing:
        return Check("OK", "benchmarks", f"all {total} programs installed under {paths.libexec_dir()}")
    return Check("WARN" if len(missing) < total else "FAIL", "benchmarks",
                 f"{total - len(missing)}/{total} installed; missing: {', '.join(missing)}",
                 f"cmake --install <build>, or set BOBCAT_HOME (now {paths.home()})")


def _oshmem() -> Check:
    """The shmem benchmark's peer: shmem_bench.c built with Open MPI's oshcc (cached)."""
    exe, why = shmem_run.oshmem_program()
    if exe is None:
        return Check("WARN", "shmem peer", f"oshmem unavailable: {why}; the shmem benchmark's "
                     "linux-* runs are skipped", "apt-get install libopenmpi-dev openmpi-bin")
    return Check("OK", "shmem peer", f"{shmem_run.OSHMEM_CC} builds shmem_bench.c: {exe}")


def _lwk() -> Check:
    yod, version = configs.find_yod()
    problems = [f"{v}: {why}" for v in configs.VENDORS for ok, why in [configs.yod_dry_run(v)]
                if not ok]
    if yod is None or problems:
        return Check("WARN", "lwk (yod)", "lwk unavailable: " + ("; ".join(problems) or version),
                     f"build and install the tree (yod, bobcat-rank, libbobcat-*.so) into "
                     f"BOBCAT_HOME (now {paths.home()})")
    return Check("OK", "lwk (yod)", f"{yod}: {version}; on-node MPI: {configs.onnode_mpi('openmpi')}")


def checks() -> list[Check]:
    return [*_mpis(), _hwloc(), _hugepages(), _thp(), _cma(), _tick(), _benchmarks(), _oshmem(),
            _lwk(),
            _probe()]
