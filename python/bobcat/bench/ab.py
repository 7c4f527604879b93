"""Two builds of bobcat against each other: the same imb under each one's yod, interleaved.

A change to the MPI layer must not cost speed. This runs bench/imb (the newer build's binary, so
only libbobcat differs) under `OLD/bin/yod` and `NEW/bin/yod` in alternating rounds (the first
build of a round alternates too), each job timing every size in --slices slices with the in-job
placement probe around each, and prints per (test, size) the medians of each build and NEW / OLD,
over the samples of one placement state (default: the state most samples drew) and over all.
Lower is better for times, so a ratio below 1 means NEW is faster (msgrate: above 1).

    python -m bobcat.bench.ab --old /path/old/stage --new build/stage --rounds 8
    python -m bobcat.bench.ab --old build/stage --new build/stage --new-args '--thread-level multiple'
    python -m bobcat.bench.ab --old build/stage --new build/stage --new-env BOBCAT_PROGRESS=thread
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
from collections import Counter, defaultdict

TESTS = "PingPong,msgrate,Barrier,Allreduce,Bcast,Alltoall"
SIZES = "8,4096,65536,1M"


def run_one(home: str, imb: str, tests: str, sizes: str, slices: int, mpi: str, extra=(),
            env_extra=None) -> list[dict]:
    cmd = [os.path.join(home, "bin", "yod"), "-VN2", "-np", "2", "--heap", "512M", "--mpi", mpi, imb,
           "--test", tests, "--sizes", sizes, "--slices", str(slices), "--time", "0.05", *extra]
    env = dict(os.environ, BOBCAT_HOME=home, **(env_extra or {}))
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if out.returncode != 0:
        sys.exit(f"bench_ab: {' '.join(cmd)} failed ({out.returncode}): {out.stderr[-2000:]}")
    rows = []
    for line in out.stdout.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            if r.get("metric") in ("t_avg", "msgrate"):
                rows.append(r)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", required=True, help="install prefix (stage) of the baseline build")
    ap.add_argument("--new", required=True, help="install prefix (stage) of the build under test")
    ap.add_argument("--mpi", default="openmpi", choices=["openmpi", "mpich"])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--slices", type=int, default=4)
    ap.add_argument("--tests", default=TESTS)
    ap.add_argument("--sizes", default=SIZES)
    ap.add_argument("--placement", help="state to compare in (default: the most common one)")
    ap.add_argument("--old-args", default="", metavar="ARGS",
                    help="more imb arguments for the old build's jobs only; with --new equal to --old, "
                         "compares two settings of one build (e.g. --new-args '--thread-level multiple')")
    ap.add_argument("--new-args", default="", metavar="ARGS", help="the same for the new build's jobs")
    ap.add_argument("--old-env", action="append", default=[], metavar="NAME=VALUE",
                    help="an environment variable for the old build's jobs only, repeatable (e.g. --new-env "
                         "BOBCAT_PROGRESS=thread with --new equal to --old)")
    ap.add_argument("--new-env", action="append", default=[], metavar="NAME=VALUE",
                    help="the same for the new build's jobs")
    a = ap.parse_args(argv)
    extra = {"old": shlex.split(a.old_args), "new": shlex.split(a.new_args)}
    envs = {}
    for name, pairs in (("old", a.old_env), ("new", a.new_env)):
        envs[name] = {}
        for pair in pairs:
            key, eq, value = pair.partition("=")
            if not eq or not key:
                ap.error(f"--{name}-env takes NAME=VALUE, not {pair!r}")
            envs[name][key] = value
    imb = os.path.join(a.new, "libexec", "bobcat", "bench", f"imb.{a.mpi}")
    samples: dict[tuple, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    states = Counter()
    for k in range(a.rounds):
        order = [("old", a.old), ("new", a.new)]
        if k % 2:
            order.reverse()
        for name, home in order:
            for r in run_one(home, imb, a.tests, a.sizes, a.slices, a.mpi, extra[name], envs[name]):
                key = (r["bench"], r["params"].get("bytes"))
                st = r.get("placement", "?")
                states[st] += 1
                samples[key][name].append((st, r["value"], r["metric"]))
        print(f"bench_ab: round {k + 1}/{a.rounds} done", file=sys.stderr, flush=True)
    state = a.placement or states.most_common(1)[0][0]
    print(f"placement states drawn: {dict(states)}; ratios in state '{state}' and over all samples")
    print(f"{'test':10} {'bytes':>8} {'old':>10} {'new':>10} {'new/old':>8} {'n':>4} | "
          f"{'old all':>10} {'new all':>10} {'new/old':>8}")
    for (bench, size), d in sorted(samples.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0)):
        def med(name, only=None):
            v = [x for st, x, _ in d[name] if only is None or st == only]
            return statistics.median(v) if v else float("nan")
        o, n = med("old", state), med("new", state)
        oa, na = med("old"), med("new")
        cnt = min(sum(1 for st, _, _ in d["old"] if st == state), sum(1 for st, _, _ in d["new"] if st == state))
        print(f"{bench:10} {size if size is not None else '-':>8} {o:10.4g} {n:10.4g} {n / o:8.3f} {cnt:4d} | "
              f"{oa:10.4g} {na:10.4g} {na / oa:8.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
