"""Benchmark of bobcat's nonblocking collectives (issue 30), 2 ranks on one node, against the real
MPIs at their default and best on-node settings. Not a test: timings need a quiet machine.

Protocol (as bench.coll): the variants are interleaved (A B C ... A B C ...) for --reps rounds, each
round one run of the imb benchmark per variant; medians over rounds; the core-to-core probe before
and after. Three tables:
  * Iallreduce + Wait at 8 B (and 64 KiB, 1 MiB) against bobcat's blocking Allreduce of the same run
    (aim: within 1.3x; the median of the ratios taken within each round) and against the best peer's
    Iallreduce (aim: 2x faster);
  * Ialltoall + Wait at 8 B, 64 KiB, 1 MiB per block against the best peer;
  * Ialltoallv + Wait (IMB's equal blocks) at the same sizes against bobcat's blocking Alltoallv of
    the same run and against the best peer's Ialltoallv;
  * IMB-NBC's overlap at 1 MiB (Ialltoall, Iallreduce): rank 0 computes for t_pure between the
    start and the wait while its node mate waits (`one`: SMARTMAP's helping, no progress thread),
    with both computing (`all`: IMB-NBC's own setting), and rank 0 computing for 2 t_pure (time
    enough for its node mate to do both shares on the other core).
bobcat's variants also run with BOBCAT_COLL_NBC_HELP=0 (every rank does only its own share) so the
overlap table shows what helping adds.
Usage: python -m bobcat.bench.nbc [--reps N] [--json FILE]
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
from . import coll
from .common import interleaved

SIZES = [8, 65536, 1 << 20]
# Overlap runs: (who computes, t_cpu / t_pure). IMB-NBC's own is ("all", 1); ("one", 2) gives the
# node mate time to do the computing rank's share as well as its own.
OVERLAP = [("one", 1), ("all", 1), ("one", 2), ("one", 3)]


def variants() -> dict[str, tuple[str, list[str], dict[str, str]]]:
    """bench.coll's peers and bobcat, each bobcat also with helping off (not the layer off)."""
    out = {}
    for name, (fl, cmd, extra) in coll.variants().items():
        if name.startswith("bobcat-off."):
            continue
        out[name] = (fl, cmd, extra)
        if name.startswith("bobcat."):
            out[f"bobcat-nohelp.{fl}"] = (fl, cmd, {**extra, "BOBCAT_COLL_NBC_HELP": "0"})
    return out


def _run(flavour: str, cmd: list[str], extra: dict[str, str], args: list[str]) -> list:
    exe = str(paths.home() / "libexec" / "bobcat" / "bench" / f"imb.{flavour}")
    env = {k: v for k, v in os.environ.items() if not k.startswith("BOBCAT_")}
    env.update(BOBCAT_HOME=str(paths.home()), OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    env.update(extra)
    r = subprocess.run(cmd + [exe] + args, capture_output=True, text=True, env=env, timeout=900)
    if r.returncode != 0 or '"valid": false' in r.stdout:
        print(f"warning: {cmd[0]} {flavour} {extra} exited {r.returncode}: {r.stderr[-300:]}", file=sys.stderr)
    return parsers.parse_jsonl(r.stdout).metrics


def run_once(flavour: str, cmd: list[str], extra: dict[str, str]) -> dict[str, float]:
    """One round of one variant: {"<bench>/<bytes>[/<mode>]/<metric>": value}."""
    out: dict[str, float] = {}
    sizes = ",".join(str(s) for s in SIZES)
    for m in _run(flavour, cmd, extra, ["--test", "Allreduce,Iallreduce,Ialltoall,Alltoallv,Ialltoallv", "--sizes", sizes, "--time", "0.2",
                                        "--iters", "2000", "--validate"]):
        if m.name == "t_avg":
            out[f"{m.bench.lower()}/{int(m.params.get('bytes', 0))}/t_avg"] = m.value
    for mode, factor in OVERLAP:
        for m in _run(flavour, cmd, extra, ["--test", "Iallreduce,Ialltoall", "--sizes", str(1 << 20), "--time", "0.2",
                                            "--iters", "500", "--overlap", mode, "--cpu-factor", str(factor)]):
            if m.name in ("overlap", "t_ovrl", "t_pure"):
                out[f"{m.bench.lower()}/{int(m.params.get('bytes', 0))}/{mode}x{factor}/{m.name}"] = m.value
    return out


def same_run_ratio(rounds: list[dict[str, float]], num: str, den: str) -> float:
    """The median over rounds of num / den taken within each round: the two calls ran in one job, so
    in one placement of the ranks (a VM's vCPUs move between rounds, and a ratio of two medians
    taken over different placements says little)."""
    rs = [r[num] / r[den] for r in rounds if r.get(num) and r.get(den)]
    return statistics.median(rs) if rs else float("nan")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json", help="write the raw results here")
    a = ap.parse_args(argv)
    before, after, rows = interleaved(variants(), run_once, a.reps)
    keys = sorted({k for rs in rows.values() for r in rs for k in r})
    med = {name: {k: statistics.median([r[k] for r in rs if k in r] or [float("nan")]) for k in keys}
           for name, rs in rows.items()}
    print(f"probe before {before}, after {after}; medians of {a.reps} interleaved rounds")
    for fl in ("openmpi", "mpich"):
        pre = "ompi" if fl == "openmpi" else "mpich"
        b = med[f"bobcat.{fl}"]
        peers = {n: m for n, m in med.items() if n.startswith(pre + ".")}
        print(f"\n== {fl}")
        for bench in ("iallreduce", "ialltoall", "ialltoallv"):
            for s in SIZES:
                k = f"{bench}/{s}/t_avg"
                best = min(peers, key=lambda n: peers[n].get(k, float("inf")))
                line = f"{bench:10s} {s:8d} B: bobcat {b.get(k, float('nan')):9.3f} us"
                if bench in ("iallreduce", "ialltoallv"):
                    blk = b.get(f"{bench[1:]}/{s}/t_avg", float("nan"))
                    ratio = same_run_ratio(rows[f"bobcat.{fl}"], k, f"{bench[1:]}/{s}/t_avg")
                    line += f" | blocking {blk:9.3f} (I/blocking {ratio:5.2f})"
                line += f" | best peer {best} {peers[best].get(k, float('nan')):9.3f} (peer/bobcat " \
                        f"{peers[best].get(k, float('nan')) / b.get(k, float('nan')):5.2f})"
                print(line)
        for bench in ("iallreduce", "ialltoall"):
            for mode, factor in OVERLAP:
                k = f"{bench}/{1 << 20}/{mode}x{factor}/overlap"
                cells = " ".join(f"{n} {m.get(k, float('nan')):5.1f}%" for n, m in med.items() if n.endswith(fl)
                                 or n.startswith(pre + "."))
                print(f"overlap {bench:10s} 1 MiB, {mode} computing {factor}x t_pure: {cells}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"probe_before": before, "probe_after": after, "medians": med, "rounds": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
