"""Facts about this node that a result depends on, stored with every run.

Everything here is read, never changed; a fact that cannot be read is recorded as None rather
than guessed.  The facts are gathered once per process (they do not change during a campaign,
except huge-page counts, which doctor reads fresh).
"""
from __future__ import annotations

import functools
import glob
import gzip
import os
import platform
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from .. import paths
from .. import mpis

LAUNCHERS = {"openmpi": "mpirun.openmpi", "mpich": "mpiexec.mpich"}


def read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _selected(choice: str | None) -> str | None:
    """THP files look like 'always [madvise] never'; the bracketed word is the setting."""
    if choice is None:
        return None
    m = re.search(r"\[(\w+)\]", choice)
    return m.group(1) if m else choice


def cpu_model() -> str | None:
    text = read("/proc/cpuinfo") or ""
    m = re.search(r"^model name\s*:\s*(.+)$", text, re.M)
    return m.group(1).strip() if m else platform.processor() or None


def cpu_id() -> str | None:
    """'family F model M stepping S' of the first cpu: a VM's model name ("AMD EPYC") may not say
    which generation runs it, and copy rates and line transfers differ between generations."""
    text = read("/proc/cpuinfo") or ""
    vals = [re.search(rf"^{k}\s*:\s*(\S+)", text, re.M) for k in ("cpu family", "model", "stepping")]
    if not all(vals):
        return None
    return "family {} model {} stepping {}".format(*(v.group(1) for v in vals))


def caches() -> dict[str, str]:
    """cpu0's caches by level and type ({"L1d": "32K", "L2": "512K", ...}), from sysfs."""
    out: dict[str, str] = {}
    for d in sorted(glob.glob("/sys/devices/system/cpu/cpu0/cache/index*")):
        level, kind, size = (read(f"{d}/{f}") for f in ("level", "type", "size"))
        if level and kind and size:
            suffix = {"Data": "d", "Instruction": "i"}.get(kind, "")
            out[f"L{level}{suffix}"] = size
    return out


def config_hz() -> int | None:
    """CONFIG_HZ from the running kernel's config, when /boot or /proc/config.gz has it."""
    texts = [read(p) for p in (f"/boot/config-{platform.release()}", *glob.glob("/boot/config-*"))]
    try:
        with gzip.open("/proc/config.gz", "rt") as f:
            texts.append(f.read())
    except OSError:
        pass
    for text in texts:
        m = re.search(r"^CONFIG_HZ=(\d+)$", text or "", re.M)
        if m:
            return int(m.group(1))
    return None


def hugepages() -> dict[str, Any]:
    """The 2 MiB hugetlb pool (total and free) and the sizes the kernel offers."""
    out: dict[str, Any] = {}
    meminfo = read("/proc/meminfo") or ""
    for key, name in (("HugePages_Total", "total"), ("HugePages_Free", "free"),
                      ("Hugepagesize", "size_kb")):
        m = re.search(rf"^{key}:\s*(\d+)", meminfo, re.M)
        out[name] = int(m.group(1)) if m else None
    nr = read("/proc/sys/vm/nr_hugepages")
    out["nr_hugepages"] = int(nr) if nr and nr.isdigit() else None
    out["sizes"] = sorted(os.path.basename(p) for p in glob.glob("/sys/kernel/mm/hugepages/hugepages-*"))
    return out


def thp() -> dict[str, str | None]:
    base = "/sys/kernel/mm/transparent_hugepage"
    return {"enabled": _selected(read(f"{base}/enabled")),
            "shmem_enabled": _selected(read(f"{base}/shmem_enabled")),
            "defrag": _selected(read(f"{base}/defrag"))}


def ptrace_scope() -> int | None:
    v = read("/proc/sys/kernel/yama/ptrace_scope")
    return int(v) if v is not None and v.isdigit() else None


# How mpis.conf's families and flavours are named in a version string.
_NAMES = {"openmpi": "Open MPI", "mpich": "MPICH", "impi": "Intel MPI"}


@functools.cache
def mpi_version(vendor: str) -> str | None:
    """The version of an installed MPI, e.g. 'Open MPI 4.1.4', 'MPICH 4.0.2 (ch4:ucx)' (what its
    launcher reports) or, for today's MPIs from scripts/peers.sh, 'Open MPI 5.0.11', 'MPICH 5.0.2
    (ch4:ucx ofi)', 'Intel MPI 2021.19.0' (mpis.conf's version; MPICH's devices from mpichversion)."""
    inst = mpis.table().get(vendor)
    if inst is not None and not inst.system:
        name = _NAMES.get(vendor, _NAMES.get(inst.family, inst.family))
        dev = ""
        tool = os.path.join(inst.prefix, "bin", "mpichversion")
        if vendor != "impi" and inst.family == "mpich" and os.access(tool, os.X_OK):
            try:
                text = subprocess.run([tool], capture_output=True, text=True, timeout=20).stdout
                m = re.search(r"^MPICH Device:\s*(.+)$", text, re.M)
                dev = f" ({m.group(1).strip()})" if m else ""
            except (OSError, subprocess.TimeoutExpired):
                pass
        return f"{name} {inst.version}{dev}" if inst.version else None
    launcher = LAUNCHERS.get(vendor)
    exe = shutil.which(launcher) if launcher else None
    if exe is None:
        return None
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    try:
        r = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=20, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = r.stdout + r.stderr
    if vendor == "openmpi":
        m = re.search(r"\(Open(?:RTE| MPI)\)\s+(\S+)", text)
        return f"Open MPI {m.group(1)}" if m else None
    m = re.search(r"Version:\s+(\S+)", text)
    device = re.search(r"Configure options:.*?--with-device=([\w:]+)", text)
    dev = f" ({device.group(1)})" if device else ""
    return f"MPICH {m.group(1)}{dev}" if m else None


@functools.cache
def git_rev() -> str | None:
    """HEAD of the checkout this code runs from, with '-dirty' when it has local changes."""
    root = paths.repo_root()
    if not (root / ".git").exists():
        return None
    try:
        rev = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "-uno"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (rev + ("-dirty" if dirty else "")) or None


@functools.cache
def facts() -> dict[str, Any]:
    """The machine facts stored with each run (runs.machine)."""
    return {
        "hostname": platform.node(),
        "cpu_model": cpu_model(),
        "cpu_id": cpu_id(),
        "caches": caches(),
        "cores": os.cpu_count(),
        "kernel": platform.release(),
        "config_hz": config_hz(),
        # Every installed MPI but the standard-ABI layer (it is one of the others).
        "mpi": {v: mpi_version(v) for v in {**dict.fromkeys(LAUNCHERS), **mpis.table()}
                if v != "abi"},
        "thp": thp(),
        "hugetlb": hugepages(),
        "ptrace_scope": ptrace_scope(),
        "page_size": os.sysconf("SC_PAGE_SIZE"),
    }
