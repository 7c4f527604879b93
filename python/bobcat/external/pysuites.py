"""External conformance: mpi4py's own test suite (or shmem4py's) run bare and under yod, per MPI,
differences reported. The machinery is harness.py; the OpenSHMEM side shmem4py_suite.py.

Exit status: 0 no regression, 1 regressions found, 2 the suite could not be had or built.

    python -m bobcat.external.pysuites                 # both MPIs, yod -VN2 -np 2 and 4 simulated nodes
    python -m bobcat.external.pysuites --mpi mpich --configs yod2 --control --include 'cco|p2p'
    python -m bobcat.external.pysuites --suite shmem4py
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys

from .. import paths
from .harness import (CONFIGS, DEFAULT_EXCLUDES, MPI4PY_VERSION, MPIS, Unavailable, say, build,
                      cached_baseline, compare, default_work, fetch, report_markdown, run_suite, use_env)
from .shmem4py_suite import main_shmem


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bobcat.external.pysuites",
                                 description="Run mpi4py's test suite bare and under yod; report "
                                             "the tests that fail only under yod.")
    ap.add_argument("--suite", default="mpi4py", choices=["mpi4py", "shmem4py"],
                    help="mpi4py (the MPI layer) or shmem4py (bobcat's OpenSHMEM against Open "
                         "MPI's oshmem; configurations osh2, osh4sim)")
    ap.add_argument("--mpi", default=",".join(MPIS),
                    help=f"comma list of: {', '.join(MPIS)} (default: all; the peers are today's MPIs "
                         "that scripts/peers.sh installed and bobcat has a layer for)")
    ap.add_argument("--configs", default="yod2,sim4",
                    help="comma list of yod configurations: yod2 (yod -VN2 -np 2 --heap 1G), "
                         "sim4 (yod -VN2 -np 4 --simulate-nodes --oversubscribe)")
    ap.add_argument("--control", action="store_true",
                    help="also run each configuration with BOBCAT_MPI=off to blame the MPI layer "
                         "or the rest of libbobcat")
    ap.add_argument("--include", action="append", default=[], help="test module regex to keep")
    ap.add_argument("--exclude", action="append", default=[], help="test module regex to leave out")
    ap.add_argument("-k", "--pattern", action="append", default=[], help="test name substring")
    ap.add_argument("--all-modules", action="store_true",
                    help="keep the modules left out by default (" + ", ".join(DEFAULT_EXCLUDES) + ")")
    ap.add_argument("--numpy", action="store_true", help="also run the NumPy variants (slower)")
    ap.add_argument("--thread-level", default="multiple",
                    choices=["single", "funneled", "serialized", "multiple"],
                    help="the level mpi4py requests (default multiple, mpi4py's own default; bobcat's "
                         "layer is on at every level)")
    ap.add_argument("--test-timeout", type=int, default=300,
                    help="seconds one test may take (MPICH's own 4-rank RMA tests at MULTIPLE take up to ~2 "
                         "minutes here, bare)")
    ap.add_argument("--job-timeout", type=int, default=1800, help="seconds one job may take")
    ap.add_argument("--fresh-baseline", action="store_true", help="ignore cached bare results")
    ap.add_argument("--work", default=default_work(), help="cache and results (build/external)")
    ap.add_argument("--tag", default="",
                    help="name of this run: its jobs go to <work>/runs/<tag>, its report to "
                         "<work>/report-<tag>.md (several runs, e.g. of different builds, share "
                         "one cache)")
    ap.add_argument("--json", help="write every result to this file (default <work>/results.json)")
    args = ap.parse_args(argv)

    if args.suite == "shmem4py":
        if args.configs == "yod2,sim4":
            args.configs = "osh2,osh4sim"
        os.makedirs(args.work, exist_ok=True)
        return main_shmem(args)
    mpis = [m for m in args.mpi.split(",") if m]
    cfgs = [c for c in args.configs.split(",") if c]
    for m in mpis:
        if m not in MPIS:
            ap.error(f"unknown MPI {m!r}: {', '.join(MPIS)}")
    use_env(mpis, MPIS)
    for c in cfgs:
        if c not in CONFIGS or CONFIGS[c]["yod"] is None:
            ap.error(f"unknown configuration {c!r}: yod2 or sim4")
    yod = os.path.join(paths.home_dir(), "bin", "yod")
    if not os.access(yod, os.X_OK):
        print(f"external: {yod} not found: run `make build` first (or set BOBCAT_HOME)",
              file=sys.stderr)
        return 2
    excluded = {} if args.all_modules else {k: v for k, v in DEFAULT_EXCLUDES.items()
                                            if not any(re.search(i, k) for i in args.include)}
    select = []
    for x in args.include:
        select += ["--include", x]
    for x in args.exclude + [f"^{k}$" for k in excluded]:
        select += ["--exclude", x]
    for x in args.pattern:
        select += ["--pattern", x]
    if args.numpy:
        select.append("--numpy")
    select += ["--thread-level", args.thread_level]
    os.makedirs(args.work, exist_ok=True)
    try:
        sdist = fetch(args.work)
        built = {m: build(args.work, m, sdist) for m in mpis}
    except Unavailable as e:
        print(f"external: {e}", file=sys.stderr)
        return 2

    runs, comps = [], []
    for m in mpis:
        testdir, libdir = built[m]
        for c in cfgs:
            base = cached_baseline(args.work, m, CONFIGS[c]["baseline"], testdir, libdir, select,
                                    args)
            if base["name"] not in [r["name"] for r in runs]:
                runs.append(base)
            say(f"{m} {c}: running under yod")
            run = run_suite(args.work, m, c, testdir, libdir, select,
                            test_timeout=args.test_timeout, job_timeout=args.job_timeout,
                            tag=args.tag)
            runs.append(run)
            ctl = None
            if args.control:
                say(f"{m} {c}: running under yod with BOBCAT_MPI=off (control)")
                ctl = run_suite(args.work, m, c, testdir, libdir, select, bobcat_mpi_off=True,
                                test_timeout=args.test_timeout, job_timeout=args.job_timeout,
                                tag=args.tag)
                runs.append(ctl)
            comps.append(compare(run, base, ctl))
            if ctl:
                comps.append(compare(ctl, base, None))
    md = report_markdown(runs, comps, excluded)
    rep = os.path.join(args.work, f"report-{args.tag}.md" if args.tag else "report.md")
    with open(rep, "w") as f:
        f.write(md)
    res = f"results-{args.tag}.json" if args.tag else "results.json"
    with open(args.json or os.path.join(args.work, res), "w") as f:
        json.dump({"mpi4py": MPI4PY_VERSION, "runs": runs, "comparisons": comps}, f, indent=1)
    print(md)
    n = sum(len(c["regressions"]) for c in comps)
    print(f"external: {n} regression(s); report {rep}")
    return 1 if n else 0


if __name__ == "__main__":
    sys.exit(main())
