"""Benchmark of bobcat's in-place collectives (issue 9), 2 ranks on one node, against the real
MPIs at their default and best on-node settings. Not a test: timings need a quiet machine.

Protocol (as bench.smartmap): the variants are interleaved (A B C ... A B C ...) for --reps rounds,
each round one IMB-style run of the imb benchmark per variant; medians over rounds of IMB's t_avg;
the core-to-core probe before and after. Ratios are (best peer median) / (bobcat median).
Usage: python -m bobcat.bench.coll [--reps N] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

from ..evaluation import parsers
from .. import paths
from .common import interleaved

# Cases: (IMB test, message size in bytes).
CASES = [("Barrier", 0), ("Allreduce", 8), ("Allreduce", 1 << 20), ("Bcast", 1 << 20), ("Alltoall", 1 << 20),
         ("Reduce", 1 << 20)]

# Variants: name -> (MPI flavour, command prefix, extra environment).
def variants() -> dict[str, tuple[str, list[str], dict[str, str]]]:
    yod = str(paths.home() / "bin" / "yod")
    ompi = ["mpirun.openmpi", "-np", "2", "--bind-to", "core"]
    mpich = ["mpiexec.mpich", "-n", "2", "-bind-to", "core"]
    return {
        "bobcat.openmpi": ("openmpi", [yod, "-VN2", "-np", "2", "--heap", "512M"], {}),
        "bobcat-off.openmpi": ("openmpi", [yod, "-VN2", "-np", "2", "--heap", "512M"], {"BOBCAT_MPI": "off"}),
        "ompi.default": ("openmpi", ompi, {}),
        "ompi.nocma": ("openmpi", ompi + ["--mca", "btl_vader_single_copy_mechanism", "none"], {}),
        "bobcat.mpich": ("mpich", [yod, "-VN2", "-np", "2", "--heap", "512M"], {}),
        "mpich.default": ("mpich", mpich, {}),
        "mpich.nocma": ("mpich", mpich, {"UCX_TLS": "sysv,posix,self"}),
    }


def run_once(flavour: str, cmd: list[str], extra: dict[str, str]) -> dict[tuple[str, int], float]:
    exe = str(paths.home() / "libexec" / "bobcat" / "bench" / f"imb.{flavour}")
    tests = ",".join(sorted({t for t, _ in CASES}))
    sizes = ",".join(str(s) for s in sorted({s for _, s in CASES}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("BOBCAT_")}
    env.update(BOBCAT_HOME=str(paths.home()), OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    env.update(extra)
    r = subprocess.run(cmd + [exe, "--test", tests, "--sizes", sizes, "--time", "0.2", "--iters", "2000",
                              "--validate"], capture_output=True, text=True, env=env, timeout=600)
    out = {}
    for m in parsers.parse_jsonl(r.stdout).metrics:
        if m.name == "t_avg":
            out[(m.bench.lower(), int(m.params.get("bytes", 0)))] = m.value
    if r.returncode != 0 or '"valid": false' in r.stdout:
        print(f"warning: {cmd[0]} {flavour} exited {r.returncode}: {r.stderr[-300:]}", file=sys.stderr)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json", help="write the raw results here")
    a = ap.parse_args(argv)
    before, after, rows = interleaved(variants(), run_once, a.reps)
    med = {name: {f"{t}/{s}": statistics.median([r[(t.lower(), s)] for r in rs if (t.lower(), s) in r]
                                                 or [float("nan")])
                  for t, s in CASES} for name, rs in rows.items()}
    print(f"probe before {before}, after {after}")
    for t, s in CASES:
        key = f"{t}/{s}"
        for fl in ("openmpi", "mpich"):
            peers = {n: m[key] for n, m in med.items() if n.startswith(("ompi" if fl == "openmpi" else "mpich") + ".")}
            best = min(peers, key=lambda n: peers[n])
            b = med[f"bobcat.{fl}"][key]
            print(f"{key:16s} {fl:8s} bobcat {b:9.3f} us | " + " ".join(f"{n} {v:9.3f}" for n, v in peers.items())
                  + f" | best peer / bobcat = {peers[best] / b:5.2f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"probe_before": before, "probe_after": after, "medians_us": med}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
