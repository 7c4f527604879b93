"""bobcat against the stock MPIs inside a Docker-like seccomp sandbox (issue 27, docs/containers.md).

Every variant runs under `bobcat-nocma` (process_vm_readv/writev and ptrace fail with EPERM, as
under Docker's and Podman's default profile without CAP_SYS_PTRACE): bobcat under yod on each MPI,
each MPI's default (its CMA single copy fails), and each MPI's best setting without CMA (Open MPI:
vader's single_copy_mechanism none; MPICH: UCX_TLS=sysv,posix,self). One imb job per variant per
round (PingPong 8 B / 64 KiB / 1 MiB and Allreduce 1 MiB, validated), the variants interleaved
round by round, 2 ranks one per core; medians of the rounds' t_avg, and each variant's ratio to
bobcat on the same MPI. The core-to-core probe runs before and after (docs/../MACHINE.md: the
placement moves).

    python -m bobcat.bench.sandbox [--reps N] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from .. import paths
from .common import bench_dir, probe

TESTS = "PingPong,Allreduce"
SIZES = "8,65536,1048576"
ROWS = [("PingPong", 8), ("PingPong", 65536), ("PingPong", 1048576), ("Allreduce", 1048576)]
ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def variants() -> dict[str, tuple[str, list[str], dict[str, str]]]:
    """name -> (mpi, command before the imb arguments, extra environment)."""
    b = bench_dir()
    yod = str(paths.home() / "bin" / "yod")
    return {
        "bobcat/openmpi": ("openmpi", [yod, "-VN2", "-np", "2", "--heap", "256M", str(b / "imb.openmpi")], {}),
        "bobcat/mpich": ("mpich", [yod, "-VN2", "-np", "2", "--heap", "256M", str(b / "imb.mpich")], {}),
        "openmpi default": ("openmpi", ["mpirun.openmpi", "-np", "2", "--bind-to", "core", str(b / "imb.openmpi")], {}),
        "openmpi no-cma": ("openmpi", ["mpirun.openmpi", "-np", "2", "--bind-to", "core", "--mca",
                                       "btl_vader_single_copy_mechanism", "none", str(b / "imb.openmpi")], {}),
        "mpich default": ("mpich", ["mpiexec.mpich", "-n", "2", "-bind-to", "core", str(b / "imb.mpich")], {}),
        "mpich no-cma": ("mpich", ["mpiexec.mpich", "-n", "2", "-bind-to", "core", str(b / "imb.mpich")],
                         {"UCX_TLS": "sysv,posix,self"}),
    }


def run_one(cmd: list[str], env: dict[str, str]) -> tuple[dict[tuple[str, int], float], int]:
    """One job under bobcat-nocma: t_avg (µs) per (test, bytes), and how many CMA failures the MPI
    printed (Open MPI's "Read -1, expected ..., errno = 1")."""
    nocma = str(paths.libexec_dir() / "bobcat-nocma")
    e = {k: v for k, v in os.environ.items() if not k.startswith(("BOBCAT_", "UCX_"))}
    e.update(BOBCAT_HOME=str(paths.home()), **env)
    if os.geteuid() == 0:
        e.update(ROOT_ENV)
    full = [nocma, *cmd, "--test", TESTS, "--sizes", SIZES, "--time", "0.2", "--validate"]
    r = subprocess.run(full, capture_output=True, text=True, env=e, timeout=300)
    if r.returncode != 0 or '"valid": true' not in r.stdout:
        raise RuntimeError(f"{' '.join(full)} failed ({r.returncode}): {r.stderr[-1500:]}")
    out = {}
    for line in r.stdout.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            if row.get("metric") == "t_avg":
                out[(row["bench"].lower(), int(row["params"]["bytes"]))] = float(row["value"])
    return out, r.stderr.count("errno = 1")


def table(medians: dict[str, dict[str, float]], cma_fail: dict[str, int]) -> list[str]:
    names = list(medians)
    head = "| variant (all under the seccomp filter) | " + " | ".join(
        f"{t} {_size(n)} (µs)" for t, n in ROWS) + " | PingPong 1 MiB (GB/s) | CMA failures logged |"
    lines = [head, "|" + "---|" * (len(ROWS) + 3)]
    for name in names:
        m = medians[name]
        mpi = name.split("/")[-1].split()[0]
        ref = medians.get(f"bobcat/{mpi}")
        cells = []
        for t, n in ROWS:
            v = m.get(f"{t} {n}")
            if v is None:
                cells.append("—")
                continue
            r = ref.get(f"{t} {n}") if ref and not name.startswith("bobcat") else None
            cells.append(f"{v:.2f}" + (f" (×{v / r:.2f})" if r else ""))
        pp = m.get("PingPong 1048576")
        bw = f"{(1 << 20) / pp / 1e3:.1f}" if pp else "—"
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {bw} | {cma_fail.get(name, 0)} |")
    return lines


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB" if n >= 1 << 10 else f"{n} B"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5, help="rounds; each runs every variant once (default 5)")
    ap.add_argument("--json", type=Path, help="write every sample and median to this file")
    args = ap.parse_args(argv)
    vs = variants()
    samples: dict[str, dict[str, list[float]]] = {v: {} for v in vs}
    cma: dict[str, int] = {v: 0 for v in vs}
    before = probe()
    order = list(vs)
    for rep in range(args.reps):
        for name in (order if rep % 2 == 0 else order[::-1]):
            _, cmd, env = vs[name]
            got, fails = run_one(cmd, env)
            cma[name] += fails
            for (t, n), v in got.items():
                key = f"{'PingPong' if t == 'pingpong' else 'Allreduce' if t == 'allreduce' else t} {n}"
                samples[name].setdefault(key, []).append(v)
        print(f"sandbox: round {rep + 1}/{args.reps} done", file=sys.stderr)
    after = probe()
    medians = {v: {k: statistics.median(x) for k, x in s.items()} for v, s in samples.items()}
    load = os.getloadavg()[0]
    print(f"probe before {before}, after {after}; load average {load:.1f} at the end (a busy node "
          f"shifts every variant); medians of {args.reps} interleaved rounds (t_avg)")
    for line in table(medians, cma):
        print(line)
    if args.json:
        args.json.write_text(json.dumps({"probe": [before, after], "samples": samples, "medians": medians,
                                         "cma_failures": cma}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
