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
    return out + _layers()


def _peer_confs() -> dict[str, dict[str, str]]:
    """The peers scripts/peers.sh installed (their bobcat-peer.conf), by name."""
    root = paths.repo_root() / ".peers"
    found = {}
    for conf in sorted(root.glob("*/bobcat-peer.conf")) if root.is_dir() else []:
        kv = {}
        for line in conf.read_text().splitlines():
            k, eq, v = line.partition("=")
            if eq:
                kv[k] = v.strip("'")
        found[kv.get("name", conf.parent.name)] = kv
    return found


def _layers() -> list[Check]:
    """Every MPI this bobcat serves (share/bobcat/mpis.conf) and the layer flavour that serves it,
    and the installed peers the build has not picked up yet."""
    from . import mpis
    from .launcher.launch import launcher_of
    out = []
    t = mpis.table()
    lib_dir = paths.lib_dir()
    for m in t.values():
        layer = lib_dir / f"libbobcat-{m.flavour}.so"
        name = f"layer {m.flavour}"
        if m.family == "abi":
            served = "programs linked with libmpi_abi.so.1 (MPI 5.0 standard ABI) on any MPI that provides it"
            detail = f"{served}; built against {m.prefix}/include/mpi_abi.h"
            out.append(Check("OK" if layer.is_file() else "FAIL", name, detail,
                             "" if layer.is_file() else "make build"))
            continue
        exe = launcher_of(m)
        where = "system" if m.system else m.prefix
        detail = f"{m.product} {m.version} ({where}): {layer.name}, launcher {exe or m.launcher}"
        if not layer.is_file():
            out.append(Check("FAIL", name, detail + ": layer missing", "make build"))
        elif exe is None:
            out.append(Check("FAIL", name, detail + ": launcher missing",
                             "scripts/peers.sh install" if not m.system else "reinstall the MPI"))
        else:
            out.append(Check("OK", name, detail))
    peers = _peer_confs()
    missing = [n for n in peers if n not in t]
    if missing:
        out.append(Check("WARN", "peer MPIs", f"installed but without a layer: {', '.join(missing)}",
                         "make build (CMake picks up .peers/*)"))
    elif not peers:
        out.append(Check("WARN", "peer MPIs", "none installed: comparisons cover Debian's MPIs only",
                         "bobcat doctor --install-peers  (or make peers): Open MPI 5, MPICH 5, Intel MPI"))
    return out


def install_peers() -> int:
    """scripts/peers.sh install: today's MPIs beside the system's, in the source tree's .peers/."""
    script = paths.repo_root() / "scripts" / "peers.sh"
    if not script.is_file():
        print(f"doctor: {script} not found: --install-peers needs bobcat's source tree", flush=True)
        return 2
    rc = subprocess.run(["bash", str(script), "install"]).returncode
    if rc == 0:
        print("doctor: peers installed; `make build` builds a layer for each", flush=True)
    return rc


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
