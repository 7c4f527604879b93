"""The `shmem` campaign benchmark: bench/shmem/shmem_bench.c, one source, two OpenSHMEMs.

* Under a yod configuration (`lwk`): bobcat's own build, `shmem-bench.<mpi>` (linked to
  libbobcat-shmem-<mpi>.so), launched through bobcat's `oshrun` (yod underneath): put/get/atomics
  are loads, stores and memcpy through the SMARTMAP windows.
* Under any other configuration (the peer, e.g. `linux-shm`): the same source built with Debian's
  Open MPI `oshcc` (oshmem) and launched with Open MPI's `oshrun` and the configuration's own
  launcher arguments. MPICH ships no OpenSHMEM, so that pairing is unavailable (a Skip).

Open MPI 4.1.4's oshmem prints its results and then crashes in shmem_finalize on this machine
(SIGSEGV in both PEs). Its results are printed and validated before that, so the run keeps them
and its record says it crashed (runner: `crashed_after_done`); it is never a silent pass.
"""
from __future__ import annotations

import functools
import hashlib
import os
import subprocess
from pathlib import Path
from typing import Any

from . import configs
from .. import paths

OSHMEM_CC = "/usr/bin/oshcc"
OSHMEM_RUN = "/usr/bin/oshrun"
# Symmetric heap per PE for both implementations: the benchmark allocates 4 MiB of it.
SYMMETRIC_SIZE = "64M"
SYMMETRIC_BYTES = 64 << 20
MODES = ("VN2",)
OSHMEM_DEFECT = ("Open MPI's oshmem crashes in shmem_finalize on this machine after printing its "
                 "results (Debian 12, Open MPI 4.1.4)")


def source() -> Path:
    """shmem_bench.c as installed next to the benchmark binaries."""
    return paths.libexec_dir() / "bench" / "shmem_bench.c"


def bobcat_program(vendor: str) -> Path:
    return paths.libexec_dir() / "bench" / f"shmem-bench.{vendor}"


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "bobcat"


@functools.cache
def oshmem_program() -> tuple[Path | None, str]:
    """shmem_bench.c built with Open MPI's oshcc, once: cached in ~/.cache/bobcat under a name
    that hashes the source and oshcc's full command (so a changed source or compiler rebuilds).
    (path, "ok") or (None, why it cannot be had)."""
    src = source()
    for what, p in (("Open MPI's OpenSHMEM compiler", OSHMEM_CC),
                    ("Open MPI's OpenSHMEM launcher", OSHMEM_RUN)):
        if not os.access(p, os.X_OK):
            return None, f"{what} {p} not found (apt-get install libopenmpi-dev openmpi-bin)"
    if not src.exists():
        return None, f"{src} not found (build and install the tree, or set BOBCAT_HOME)"
    try:
        showme = subprocess.run([OSHMEM_CC, "--showme"], capture_output=True, text=True,
                                timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"{OSHMEM_CC} --showme: {e}"
    if showme.returncode != 0:
        return None, f"{OSHMEM_CC} --showme exited {showme.returncode}: {_last(showme.stderr)}"
    key = hashlib.sha256(src.read_bytes() + showme.stdout.encode()).hexdigest()[:16]
    exe = cache_dir() / f"shmem-bench.oshmem-{key}"
    if os.access(exe, os.X_OK):
        return exe, "ok"
    tmp = exe.with_name(f"{exe.name}.{os.getpid()}.tmp")
    try:
        exe.parent.mkdir(parents=True, exist_ok=True)
        r = subprocess.run([OSHMEM_CC, "-O2", str(src), "-o", str(tmp)], capture_output=True,
                           text=True, timeout=180)
        if r.returncode != 0:
            return None, f"{OSHMEM_CC} cannot build {src.name}: {_last(r.stderr or r.stdout)}"
        os.replace(tmp, exe)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"building {src.name} with {OSHMEM_CC}: {e}"
    finally:
        tmp.unlink(missing_ok=True)
    return exe, "ok"


def _last(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][:200] if lines else "no message"


def available(config: configs.Config | None, vendor: str, mode: str | None) -> tuple[bool, str]:
    """Whether `shmem` can run under (config, vendor, mode), and why not. Without a
    configuration: whether bobcat's own build is installed for the MPI (`bobcat list`)."""
    if mode is not None and mode not in MODES:
        return False, (f"shmem runs 2 PEs on one node (mode {'/'.join(MODES)}), not {mode}: "
                       "the papers' SHMEM figure is on-node")
    if config is None or config.via_yod:
        prog = bobcat_program(vendor)
        if not prog.exists():
            return False, (f"{prog} not found (build and install the tree (cmake --install) or "
                           f"set BOBCAT_HOME (now {paths.home()}))")
        return True, "ok"
    if vendor != "openmpi":
        return False, ("the peer OpenSHMEM is Debian's Open MPI oshmem (mpi = openmpi); MPICH ships "
                       "no OpenSHMEM (bobcat's own runs under lwk with either Debian MPI)")
    exe, why = oshmem_program()
    return (True, "ok") if exe else (False, why)


def ucx_env(cs: configs.ConfigSet, config: configs.Config, mode: str) -> dict[str, str]:
    """The UCX settings a configuration means for Open MPI's oshmem. oshmem's put/get/atomics go
    through its UCX SPML, which Open MPI's `--mca btl ...` does not touch: `linux-nic`'s
    `btl tcp,self` alone left oshmem on shared memory (1 µs puts here; 12 µs with UCX on TCP).
    MPICH here is ch4:ucx too, so the configuration's MPICH settings say what the configuration
    means for UCX: its UCX_* variables (and the network ones when the configuration or the mode
    sends traffic through the network stack)."""
    env: dict[str, str] = {}
    if "mpich" in config.vendor:
        env.update(config.vendor["mpich"].env)
    if config.network or mode == "SN":
        env.update(cs.network["mpich"].env)
    return {k: v for k, v in env.items() if k.startswith("UCX_")}


def launch(cs: configs.ConfigSet, config: configs.Config, vendor: str, mode: str, ranks: int,
           args: list[str]) -> configs.Launch:
    """The command line of one shmem run: bobcat's oshrun for a yod configuration, Open MPI's
    oshrun with the configuration's launcher arguments otherwise."""
    if config.via_yod:
        program = [str(bobcat_program(vendor)), *args, "--impl", "bobcat"]
        lc = configs.build(cs, config, vendor, mode, ranks, program)
        # configs.build gives yod's own options (-VN2 -np N --mpi M ...), which oshrun passes
        # through; oshrun is installed next to yod.
        oshrun = Path(lc.argv[0]).parent / "oshrun"
        lc.argv[0] = str(oshrun)
        lc.detail.update(launcher=f"{oshrun} (bobcat's oshrun over yod)", shmem_impl="bobcat",
                         shmem_library=f"libbobcat-shmem-{vendor}.so")
    else:
        exe, why = oshmem_program()
        if exe is None:
            raise configs.ConfigError(f"{config.name}: {why}")
        program = [str(exe), *args, "--impl", "oshmem"]
        lc = configs.build(cs, config, vendor, mode, ranks, program)
        lc.argv[0] = OSHMEM_RUN
        ucx = ucx_env(cs, config, mode)
        lc.env.update(ucx)
        lc.detail["env"] = {**lc.detail.get("env", {}), **ucx}
        if ucx:
            lc.detail["shmem_transport"] = ("oshmem moves data with UCX, not with Open MPI's "
                                            "BTLs: it takes the configuration's UCX settings "
                                            f"(those of MPICH's ch4:ucx): {ucx}")
        at = len(lc.argv) - len(program)
        # named, as configs.build does for the configuration's environment
        lc.argv[at:at] = [a for k in ("SHMEM_SYMMETRIC_SIZE", *ucx) for a in ("-x", k)]
        lc.detail.update(launcher=f"{OSHMEM_RUN} (Open MPI's oshrun = mpirun)",
                         shmem_impl="oshmem", shmem_binary=str(exe),
                         shmem_build=[OSHMEM_CC, "-O2", str(source()), "-o", str(exe)],
                         known_crash_after_done=OSHMEM_DEFECT)
    lc.env["SHMEM_SYMMETRIC_SIZE"] = SYMMETRIC_SIZE
    lc.detail["env"] = {**lc.detail.get("env", {}), "SHMEM_SYMMETRIC_SIZE": SYMMETRIC_SIZE}
    return lc


def crash_record(returncode: int, stderr: str, known: str) -> dict[str, Any]:
    """What the record says about a job that exited badly after its valid done line."""
    sig = returncode - 128 if returncode > 128 else -returncode if returncode < 0 else None
    name = None
    if sig:
        import signal as _signal
        try:
            name = _signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
    said = [ln.strip() for ln in stderr.splitlines()
            if any(w in ln for w in ("signal", "Segmentation", "exited on", "Caught"))]
    return {"exit_code": returncode, "signal": name, "known": known,
            "stderr": said[:4] or [_last(stderr)]}

