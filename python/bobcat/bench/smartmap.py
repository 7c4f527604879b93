"""The foundation benchmark (issue 2), one run: heap populate rate per page kind, page faults
after start, remote-window copy vs local memcpy, and yod's start overhead vs a bare mpiexec.

Protocol for a noisy machine: variants are interleaved (A B A B ...), medians are reported, and
the core-to-core probe runs before and after so the placement state is on record.
Run as root to measure hugetlb and THP: the pool and the shmem THP setting are set for the run
and restored afterwards. Usage: python -m bobcat.bench.smartmap [--reps N] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .. import paths
from ..evaluation import parsers
from .common import NodeSettings, bench_dir, probe


def metrics(text: str) -> list[parsers.Metric]:
    return parsers.parse_jsonl(text).metrics


def median_by(rows: list[parsers.Metric], metric: str, key: str) -> dict:
    groups: dict = {}
    for row in rows:
        if row.name == metric:
            groups.setdefault(row.params[key], []).append(row.value)
    return {k: statistics.median(v) for k, v in groups.items()}


# Each MPI's bare launcher for 2 ranks, bound and unbound: yod is compared with the faster one.
BARE_LAUNCHERS = {
    "openmpi": {"bound": ["mpirun.openmpi", "-np", "2", "--bind-to", "core"],
                "unbound": ["mpirun.openmpi", "-np", "2", "--bind-to", "none"]},
    "mpich": {"bound": ["mpiexec.mpich", "-n", "2", "-bind-to", "core"],
              "unbound": ["mpiexec.mpich", "-n", "2"]},
}


def start_overhead(reps: int, env: dict) -> dict:
    """yod vs the bare launcher of the same MPI program (MPI_Init + MPI_Finalize), for both MPIs,
    every variant interleaved; the overhead is against the faster bare variant (bound or not)."""
    yod = str(paths.home() / "bin" / "yod")
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "hello.c"
        src.write_text('#include <mpi.h>\nint main(int c,char**v){MPI_Init(&c,&v);MPI_Finalize();return 0;}\n')
        cmds: dict[str, list[str]] = {}
        for mpi, bare in BARE_LAUNCHERS.items():
            exe = str(Path(tmp) / f"hello.{mpi}")
            subprocess.run([f"mpicc.{mpi}", str(src), "-o", exe], check=True)
            cmds[f"yod.{mpi}"] = [yod, "-VN2", "-np", "2", "--heap", "128M", exe]
            for variant, argv in bare.items():
                cmds[f"bare.{mpi}.{variant}"] = argv + [exe]
        times: dict[str, list[float]] = {name: [] for name in cmds}
        for _ in range(reps):
            for name, cmd in cmds.items():
                t0 = time.perf_counter()
                subprocess.run(cmd, env=env, check=True, capture_output=True)
                times[name].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    out: dict = {"median_s": med, "samples": times}
    for mpi, bare in BARE_LAUNCHERS.items():
        fastest = min(bare, key=lambda v: med[f"bare.{mpi}.{v}"])
        out[mpi] = {"yod_s": med[f"yod.{mpi}"], "bare_s": med[f"bare.{mpi}.{fastest}"], "bare_variant": fastest,
                    "overhead_ms": 1e3 * (med[f"yod.{mpi}"] - med[f"bare.{mpi}.{fastest}"])}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5, help="repetitions of each variant (default 5)")
    ap.add_argument("--size", default="512M", help="heap size populated per sample (default 512M)")
    ap.add_argument("--json", type=Path, help="write every result to this file")
    args = ap.parse_args(argv)
    env = {k: v for k, v in os.environ.items() if not k.startswith("BOBCAT_")}
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", BOBCAT_HOME=str(paths.home()))
    result: dict = {"probe_before": probe()}
    # 4 GiB of 4 KiB pages first puts touched memory on the kernel's free lists, before the
    # hugetlb pool is reserved from them.
    subprocess.run([str(bench_dir() / "smartmap-populate"), "--size", "4G", "--reps", "1", "--kinds", "small"],
                   capture_output=True, env=env)
    with NodeSettings(pages=600):
        # One unmeasured pass first: memory the VM never touched is backed by the hypervisor on
        # first touch (~0.4 GB/s), which would measure the host, not the runtime.
        subprocess.run([str(bench_dir() / "smartmap-populate"), "--size", args.size, "--reps", "2"],
                       capture_output=True, env=env)
        r = subprocess.run([str(bench_dir() / "smartmap-populate"), "--size", args.size, "--reps", str(args.reps)],
                           capture_output=True, text=True, env=env)
        rows = metrics(r.stdout)
        result["populate_GBps"] = median_by(rows, "populate_rate", "pages")
        result["faults_after_start_max"] = max((int(row.value) for row in rows if row.name == "faults_after_start"),
                                               default=None)
        r = subprocess.run([str(paths.home() / "bin" / "yod"), "-VN2", "-np", "2", "--heap", "256M",
                            str(bench_dir() / "smartmap-copy.openmpi"), "--reps", "300"],
                           capture_output=True, text=True, env=env)
        rows = metrics(r.stdout)
        result["copy"] = {m: median_by(rows, m, "bytes")
                          for m in ("remote_copy", "local_copy", "local_hot_copy", "remote_over_local")}
        result["start"] = start_overhead(max(args.reps, 11), env)
    result["probe_after"] = probe()
    print(f"probe before/after: {result['probe_before']} / {result['probe_after']}")
    print("populate rate (GB/s, median):", {k: round(v, 2) for k, v in result["populate_GBps"].items()})
    print("page faults touching the heap after start (max over samples):", result["faults_after_start_max"])
    for size, ratio in sorted(result["copy"]["remote_over_local"].items()):
        c = result["copy"]
        print(f"copy {size >> 10:>5} KiB: through the window {c['remote_copy'][size]:.1f} GB/s, local "
              f"{c['local_copy'][size]:.1f} GB/s (same cache state), remote/local {ratio:.2f}; "
              f"local hot in own cache {c['local_hot_copy'][size]:.1f} GB/s")
    for mpi in BARE_LAUNCHERS:
        st = result["start"][mpi]
        print(f"start, {mpi}: yod {st['yod_s'] * 1e3:.0f} ms, bare launcher ({st['bare_variant']}) "
              f"{st['bare_s'] * 1e3:.0f} ms, overhead {st['overhead_ms']:.0f} ms (medians)")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
