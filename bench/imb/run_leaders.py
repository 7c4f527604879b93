#!/usr/bin/env python3
"""run_leaders.py: the leaders' phase of bobcat's collectives across simulated nodes (issue 28).

imb runs every test on a communicator split from MPI_COMM_WORLD, so at MPI_THREAD_MULTIPLE on
Open MPI its collectives take the point-to-point leaders (docs/mpi.md, "Threads").

  leaders   (default) four variants: --thread-level multiple with BOBCAT_COLL_LEADERS auto
            (mt-p2p) and comm (mt-realmpi: the real MPI, as before stop 55), and the default level
            with auto (single-comm) and p2p (single-p2p);
  oneper    two variants: the default path and BOBCAT_COLL_HIER=0 (the real MPI), to compare the
            hierarchical path with the real MPI's on a layout such as -SN.

Interleaved rounds, medians of imb's t_avg (us), the placement probe before and after.
  bench/imb/run_leaders.py [--rounds 7] [--mpi openmpi] [--layout '-VN1 -np 2'] [--mode leaders]
(BOBCAT_HOME: the installed tree, default build/stage next to this file)"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
HOME = os.environ.get("BOBCAT_HOME", os.path.join(HERE, "..", "..", "build", "stage"))
BUILD = os.path.join(HERE, "..", "..", "build", "bench")
MODES = {
    "leaders": {"mt-p2p": (["--thread-level", "multiple"], {}),
                "mt-realmpi": (["--thread-level", "multiple"], {"BOBCAT_COLL_LEADERS": "comm"}),
                "single-comm": ([], {}),
                "single-p2p": ([], {"BOBCAT_COLL_LEADERS": "p2p"})},
    "oneper": {"hier": ([], {}), "realmpi": ([], {"BOBCAT_COLL_HIER": "0"})},
}


def probe():
    out = subprocess.run([os.path.join(BUILD, "bobcat-probe")], capture_output=True, text=True).stdout
    for line in out.splitlines():
        d = json.loads(line)
        if d.get("metric") == "oneway_ns":
            return f"{d['value']:.0f} ns ({d.get('placement', '?')})"
    return "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--mpi", choices=["openmpi", "mpich"], default="openmpi")
    ap.add_argument("--layout", default="-VN1 -np 2", help="yod's placement options (default '-VN1 -np 2')")
    ap.add_argument("--mode", choices=sorted(MODES), default="leaders")
    ap.add_argument("--tests", default="Barrier,Bcast,Allreduce,Allgather,Alltoall")
    ap.add_argument("--sizes", default="8,65536")
    a = ap.parse_args()
    if a.rounds < 1:
        ap.error("--rounds must be at least 1")
    var = MODES[a.mode]
    res = {}
    print(f"probe before: {probe()}", flush=True)
    for _ in range(a.rounds):
        for v, (args, env) in var.items():
            e = dict(os.environ, **env, BOBCAT_STATS="off")
            cmd = [os.path.join(HOME, "bin", "yod"), "--mpi", a.mpi, "--oversubscribe", "--heap", "128M",
                   "--simulate-nodes"] + a.layout.split() + [os.path.join(BUILD, f"imb.{a.mpi}"), "--test", a.tests,
                                                             "--sizes", a.sizes, "--time", "0.2", "--iters", "100000"] + args
            p = subprocess.run(cmd, env=e, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600)
            if p.returncode != 0:
                sys.exit(f"run_leaders: {v} failed (exit {p.returncode}): {p.stderr.strip()[-400:]}")
            for line in p.stdout.splitlines():
                d = json.loads(line)
                if d.get("metric") == "t_avg":
                    res.setdefault((d["bench"], d["params"].get("bytes", 0), v), []).append(d["value"])
    print(f"probe after: {probe()}")
    names = list(var)
    print(f"{'test':10} {'bytes':>6} " + " ".join(f"{v:>12}" for v in names) + "   ratios to " + names[1])
    for b, s in sorted({(b, s) for b, s, _ in res}):
        m = {v: statistics.median(res[(b, s, v)]) for v in names}
        print(f"{b:10} {s:>6} " + " ".join(f"{m[v]:12.2f}" for v in names) + "   " +
              " ".join(f"{v}={m[v] / m[names[1]]:.2f}" for v in names if v != names[1]))


if __name__ == "__main__":
    main()
