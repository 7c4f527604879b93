"""malloc throughput under yod, two or more libbobcat builds (or knob settings) against each other
(issue 27: the per-thread heap policy). Runs bench/malloc/malloc_rate.c's `malloc-rate` under
`yod -np 1 --heap HEAP` for each case (threads x size) and each side, the sides interleaved within
every round and their order alternated, and prints the median Mops/s per side and its ratio to the
first side. A side is NAME=BOBCAT_HOME[:KNOB=VALUE,...], e.g.

  python bench/malloc/malloc_ab.py --reps 7 before=/tmp/old-stage after=$PWD/build/stage \\
      per-thread=$PWD/build/stage:BOBCAT_THREAD_HEAP=0
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

CASES = [(1, "64", 3_000_000), (8, "64", 1_000_000), (1, "256K", 300_000), (8, "256K", 100_000)]


def run(home: str, env_extra: dict, threads: int, size: str, ops: int, heap: str) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BOBCAT_")}
    env.update(env_extra, BOBCAT_HOME=home)
    prog = os.path.join(home, "libexec/bobcat/bench/malloc-rate")
    if not os.path.exists(prog):   # an older build without it: the program is the same
        prog = os.path.join(os.environ["MALLOC_RATE"])
    cmd = [os.path.join(home, "bin/yod"), "-np", "1", "--heap", heap, prog,
           "--threads", str(threads), "--size", size, "--ops", str(ops)]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr}")
    line = next(l for l in r.stdout.splitlines() if l.startswith("{"))
    return json.loads(line)["mops"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sides", nargs="+", help="NAME=BOBCAT_HOME[:KNOB=VALUE,...]")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--heap", default="1G")
    a = ap.parse_args()
    sides = []
    for s in a.sides:
        name, rest = s.split("=", 1)
        home, _, knobs = rest.partition(":")
        sides.append((name, home, dict(k.split("=", 1) for k in knobs.split(",") if k)))
    res = {(n, c): [] for n, _, _ in sides for c in CASES}
    for rep in range(a.reps):
        order = sides if rep % 2 == 0 else sides[::-1]
        for c in CASES:
            for name, home, knobs in order:
                res[(name, c)].append(run(home, knobs, c[0], c[1], c[2], a.heap))
    print(f"| threads | size | " + " | ".join(f"{n} Mops/s" for n, _, _ in sides) + " |")
    print("|---|---|" + "---|" * len(sides))
    for c in CASES:
        base = statistics.median(res[(sides[0][0], c)])
        cells = []
        for n, _, _ in sides:
            m = statistics.median(res[(n, c)])
            cells.append(f"{m:.1f}" + ("" if n == sides[0][0] else f" (×{m / base:.2f})"))
        print(f"| {c[0]} | {c[1]} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
