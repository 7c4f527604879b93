"""Benchmark of MPI one-sided communication (issue 26), 2 ranks on one node: bobcat (the MPI program
under yod with the layer on) against the real MPIs bare, Open MPI at its default and at each of its
one-sided components, and MPICH. Not a test: timings need a quiet machine.

Protocol (as bench.coll and bench.nbc): the variants are interleaved (A B C ... A B C ...) for --reps
rounds, each round one run of the rma benchmark (bench/rma/rma_bench.c) per variant; every number
of a run is already a median of that run's repetitions, and the table gives the median over rounds;
the core-to-core probe before and after. Ratios are formed per round, within one run where they
compare two numbers of the same run (put/memcpy, fence/barrier), and their median is printed.

A variant that dies in a test (Debian's Open MPI 4.1.4 default one-sided component, osc rdma, takes
SIGSEGV in MPI_Compare_and_swap) is recorded as crashed in that test, and the tests after it run
again in a second job: a crash costs one number, not the row.

The aims of the issue, printed with each ratio: put and get 8 B latency and Fetch_and_op 8 B at
least 5x faster than the best peer; put bandwidth at least 0.9 of a memcpy of the same size in the
same run; a fence epoch at most 2x bobcat's own MPI_Barrier.
Usage: python -m bobcat.bench.rma [--reps N] [--variants a,b] [--win allocate|create|dynamic]
       [--time S] [--json FILE]
       python -m bobcat.bench.rma --merge A.json B.json ...   (report the rounds of several runs)
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys

from ..evaluation import parsers
from .. import paths
from .common import interleaved

# The program's tests, in the order it runs them (compare_and_swap last: see the banner).
TESTS = ["put", "get", "fetch_and_op", "put_bw", "fence", "compare_and_swap"]
SIZES = [65536, 1 << 20]
# What each test prints: the keys of its numbers (bandwidth keys carry the size).
KEYS = {
    "put": ["put_latency"],
    "get": ["get_latency"],
    "fetch_and_op": ["fetch_and_op"],
    "put_bw": [f"{m}/{s}" for s in SIZES for m in ("put_bw", "memcpy_bw")],
    "fence": ["fence", "barrier"],
    "compare_and_swap": ["compare_and_swap"],
}
ALL_KEYS = [k for t in TESTS for k in KEYS[t]]
UNITS = {"put_bw": "GB/s", "memcpy_bw": "GB/s"}
# The latencies compared with the best peer (aim: bobcat 5x faster); compare_and_swap is shown
# beside them, without an aim.
LATENCIES = ["put_latency", "get_latency", "fetch_and_op", "compare_and_swap"]
AIM_SPEEDUP = 5.0
AIM_BW = 0.9
AIM_FENCE = 2.0
YOD_HEAP = "512M"


def variants() -> dict[str, tuple[str, list[str], dict[str, str]]]:
    """name -> (MPI flavour, command prefix, extra environment). `bobcat.*` are the layer's; every
    other one is a peer. Open MPI's one-sided components are each forced once: sm (shared memory,
    the best here), ucx and pt2pt (the two the issue names as working) beside the default (rdma)."""
    yod = [str(paths.home() / "bin" / "yod"), "-VN2", "-np", "2", "--heap", YOD_HEAP]
    ompi = ["mpirun.openmpi", "-np", "2", "--bind-to", "core"]
    mpich = ["mpiexec.mpich", "-n", "2", "-bind-to", "core"]
    return {
        "bobcat.openmpi": ("openmpi", yod, {}),
        "bobcat.mpich": ("mpich", yod, {}),
        "ompi.default": ("openmpi", ompi, {}),
        "ompi.osc-sm": ("openmpi", ompi + ["--mca", "osc", "sm"], {}),
        "ompi.osc-ucx": ("openmpi", ompi + ["--mca", "osc", "ucx"], {}),
        "ompi.osc-pt2pt": ("openmpi", ompi + ["--mca", "osc", "pt2pt"], {}),
        "mpich.default": ("mpich", mpich, {}),
    }


def is_peer(name: str) -> bool:
    return not name.startswith("bobcat")


def key_of(m: parsers.Metric) -> str:
    return f"{m.name}/{m.size}" if m.name in UNITS else m.name


def running_test(stderr: str) -> str | None:
    """The test the program had started last (it names each on stderr before running it)."""
    found = re.findall(r"^rma: test (\w+)", stderr, re.M)
    return found[-1] if found else None


def death(stderr: str, rc: int | None) -> str:
    """Why a job ended badly, in a few words: the signal a launcher reports, or the exit status."""
    if rc is None:
        return "timeout"
    m = re.search(r"signal (\d+)(?: \((SIG\w+)\)| \(([^)]*)\))?", stderr)
    if m:
        return f"signal {m.group(1)}" + (f" {m.group(2) or m.group(3)}" if m.group(2) or m.group(3) else "")
    # an MPI error that was fatal (Open MPI names the call; MPICH prints "Fatal error in MPI_...")
    call = re.search(r"error occurred in (MPI_\w+)|Fatal error in (?:P?MPI_)?(\w+)", stderr)
    return f"exit {rc}" + (f" (error in {call.group(1) or 'MPI_' + call.group(2)})" if call else "")


def kind_of(why: str) -> str:
    """The table's word for a test that did not give its number."""
    return "crashed" if why.startswith("signal") else "timeout" if why == "timeout" else "failed"


def failures(stderr: str) -> list[str]:
    """The program's validation failures (bc_fail prints each at once, so a job that dies later
    has still told them)."""
    return re.findall(r"^rma: validation failed: (.*)$", stderr, re.M)


def outcome(tests: list[str], stdout: str, stderr: str, rc: int | None) -> tuple[dict, dict, list[str], list[str]]:
    """One job's result: (values by key, {crashed test: why}, the tests still to run, validation
    failures). A job that ended badly is blamed on the test it was running (or, when it named none,
    the first test whose numbers are missing); the tests after that one whose numbers are missing
    remain. A failed validation exits 1 after its done line: that is not a crash."""
    parsed = parsers.parse_jsonl(stdout)
    values = {key_of(m): m.value for m in parsed.metrics if key_of(m) in ALL_KEYS}
    bad = failures(stderr)
    if parsed.done is not None and not parsed.valid and not bad:
        bad = ["the done line says valid: false"]
    if parsed.done is not None and rc in (0, 1):
        return values, {}, [], bad
    missing = [t for t in tests if any(k not in values for k in KEYS[t])]
    culprit = running_test(stderr)
    if culprit is None and not values:
        # it died before its first test (making the window: Open MPI's osc sm cannot make a
        # Win_create or dynamic window): every test would, so none runs again
        why = death(stderr, rc)
        return values, {t: why for t in missing}, [], bad
    if culprit not in missing:
        culprit = missing[0] if missing else None
    if culprit is None:
        # every number arrived and then the job failed (at MPI_Win_free or MPI_Finalize)
        return values, {"finalize": death(stderr, rc)}, [], bad
    rest = [t for t in missing if tests.index(t) > tests.index(culprit)]
    return values, {culprit: death(stderr, rc)}, rest, bad


def run_once(flavour: str, cmd: list[str], extra: dict[str, str], args: list[str] | None = None,
             timeout: float = 300) -> dict:
    """One round of one variant: {"values": {key: value}, "crashed": {test: why}, "failures": [...]}.
    A crash in a test costs that test: the ones after it run again in a new job."""
    exe = str(paths.home() / "libexec" / "bobcat" / "bench" / f"rma.{flavour}")
    env = {k: v for k, v in os.environ.items() if not k.startswith("BOBCAT_")}
    env.update(BOBCAT_HOME=str(paths.home()), OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    env.update(extra)
    out = {"values": {}, "crashed": {}, "failures": []}
    tests = list(TESTS)
    while tests:
        try:
            r = subprocess.run(cmd + [exe, "--test", ",".join(tests)] + (args or []), capture_output=True,
                               text=True, env=env, timeout=timeout)
            stdout, stderr, rc = r.stdout, r.stderr, r.returncode
        except subprocess.TimeoutExpired as e:
            stdout = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            stderr = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
            rc = None
        values, crashed, rest, bad = outcome(tests, stdout, stderr, rc)
        out["values"].update(values)
        out["crashed"].update(crashed)
        out["failures"] += bad
        for line in bad:
            print(f"warning: {cmd[0]} {flavour} {extra}: validation failed: {line}", file=sys.stderr)
        for test, why in crashed.items():
            print(f"warning: {cmd[0]} {flavour} {extra}: {test} {kind_of(why)} ({why})", file=sys.stderr)
        tests = rest
    return out


def summarize(rows: dict[str, list[dict]]) -> dict[str, dict]:
    """Per variant: medians over rounds of every number and of the same-run ratios, and per key
    how many rounds crashed in its test: {"median": {key: v|None}, "ratio": {...}, "crashed": {key: n},
    "why": {test: reason}, "rounds": n}."""
    out = {}
    for name, runs in rows.items():
        med, crashed, why = {}, {}, {}
        for t in TESTS:
            for k in KEYS[t]:
                vals = [r["values"][k] for r in runs if k in r["values"]]
                med[k] = statistics.median(vals) if vals else None
                n = sum(1 for r in runs if t in r["crashed"])
                if n:
                    crashed[k] = n
            reasons = sorted({r["crashed"][t] for r in runs if t in r["crashed"]})
            if reasons:
                why[t] = ", ".join(reasons)
        ratio = {}
        for s in SIZES:
            ratio[f"put_over_memcpy/{s}"] = _median_ratio(runs, f"put_bw/{s}", f"memcpy_bw/{s}")
        ratio["fence_over_barrier"] = _median_ratio(runs, "fence", "barrier")
        wrong = [f for r in runs for f in r.get("failures", [])]
        out[name] = {"median": med, "ratio": ratio, "crashed": crashed, "why": why, "rounds": len(runs),
                     "invalid_rounds": sum(1 for r in runs if r.get("failures")), "failures": wrong[:5]}
    return out


def _median_ratio(runs: list[dict], num: str, den: str) -> float | None:
    vals = [r["values"][num] / r["values"][den] for r in runs
            if r["values"].get(num) is not None and r["values"].get(den)]
    return statistics.median(vals) if vals else None


def best_peer(summary: dict[str, dict], key: str, lower: bool = True) -> tuple[str, float] | None:
    """The peer with the best median for `key` among those that never crashed in its test."""
    cands = [(n, s["median"][key]) for n, s in summary.items()
             if is_peer(n) and s["median"].get(key) is not None and key not in s["crashed"]]
    if not cands:
        return None
    return min(cands, key=lambda c: c[1]) if lower else max(cands, key=lambda c: c[1])


def verdicts(summary: dict[str, dict]) -> dict[str, dict]:
    """Per bobcat variant the issue's ratios: {"speedup": {key: (peer, peer/bobcat)},
    "same_mpi_default": {key: (variant, its/bobcat)}, "bw": {size: r}, "fence": r}; None where a number
    is missing (crashed or not run)."""
    out = {}
    for name, s in summary.items():
        if is_peer(name):
            continue
        speed = {}
        for k in LATENCIES:
            bp = best_peer(summary, k)
            b = s["median"].get(k)
            speed[k] = (bp[0], bp[1] / b) if bp and b and k not in s["crashed"] else (bp[0] if bp else None, None)
        # beside the best peer, the same MPI at its default (the setting a user gets)
        dflt = {"bobcat.openmpi": "ompi.default", "bobcat.mpich": "mpich.default"}.get(name)
        same = {}
        if dflt in summary:
            for k in LATENCIES:
                d, b = summary[dflt]["median"].get(k), s["median"].get(k)
                ok = d is not None and b and k not in s["crashed"] and k not in summary[dflt]["crashed"]
                same[k] = (dflt, d / b if ok else None)
        out[name] = {"speedup": speed, "same_mpi_default": same,
                     "bw": {sz: s["ratio"].get(f"put_over_memcpy/{sz}") for sz in SIZES},
                     "fence": s["ratio"].get("fence_over_barrier")}
    return out


def _cell(s: dict, key: str) -> str:
    v = s["median"].get(key)
    n = s["crashed"].get(key, 0)
    why = s["why"].get(_test_of(key), "")
    if v is None:
        return kind_of(why) if n else "-"
    text = f"{v:.3g}" if v < 100 else f"{v:.0f}"
    return text + (f" ({n}x {kind_of(why)})" if n else "")


def _test_of(key: str) -> str:
    return next(t for t in TESTS if key in KEYS[t])


def _aim(ok: bool | None) -> str:
    return "" if ok is None else ("  [aim met]" if ok else "  [aim not met]")


def report(summary: dict[str, dict], before: dict, after: dict, reps: int) -> str:
    names = list(summary)
    width = max(12, *(len(n) + 1 for n in names))
    lines = [f"probe before {before}, after {after}; medians of {reps} interleaved rounds "
             "(each a run's median of its repetitions)", ""]
    lines.append(f"{'metric':22s}" + "".join(f"{n:>{width}s}" for n in names))
    for k in ALL_KEYS:
        metric = k.split("/")[0]
        label = f"{k} ({UNITS.get(metric, 'ns')})"
        lines.append(f"{label:22s}" + "".join(f"{_cell(summary[n], k):>{width}s}" for n in names))
    for r in [f"put_over_memcpy/{s}" for s in SIZES] + ["fence_over_barrier"]:
        cells = []
        for n in names:
            v = summary[n]["ratio"].get(r)
            cells.append(f"{v:.3f}" if v is not None else "-")
        lines.append(f"{r:22s}" + "".join(f"{c:>{width}s}" for c in cells))
    for n, s in summary.items():
        for t, why in s["why"].items():
            lines.append(f"{kind_of(why)}: {n} in {t}: {why}")
        if s["invalid_rounds"]:
            lines.append(f"WRONG RESULTS: {n} in {s['invalid_rounds']} of {s['rounds']} rounds: "
                         + "; ".join(s["failures"]))
    for name, v in verdicts(summary).items():
        lines += ["", f"== {name}"]
        for k, (peer, r) in v["speedup"].items():
            aim = r >= AIM_SPEEDUP if r is not None and k != "compare_and_swap" else None
            if peer is None:
                lines.append(f"{k:18s}: no peer without a crash")
            else:
                pv = summary[peer]["median"][k]
                b = summary[name]["median"].get(k)
                lines.append(f"{k:18s}: bobcat " + (f"{b:.3g} ns" if b is not None else "crashed")
                             + f", best peer {peer} {pv:.3g} ns; peer / bobcat = "
                             + (f"{r:.3g}" if r is not None else "n/a")
                             + (f" (aim >= {AIM_SPEEDUP:g})" if k != "compare_and_swap" else "") + _aim(aim))
            if k in v["same_mpi_default"]:
                d, rd = v["same_mpi_default"][k]
                lines.append(f"{'':18s}  against {d}: " + (f"{summary[d]['median'][k]:.3g} ns, default / bobcat = {rd:.3g}"
                                                          if rd is not None else "n/a (crashed)"))
        for sz, r in v["bw"].items():
            lines.append(f"put_bw / memcpy {sz // 1024:5d} KiB: " + (f"{r:.3f}" if r is not None else "n/a")
                         + f" (aim >= {AIM_BW:g})" + _aim(r >= AIM_BW if r is not None else None))
        r = v["fence"]
        lines.append("fence / own barrier   : " + (f"{r:.3f}" if r is not None else "n/a")
                     + f" (aim <= {AIM_FENCE:g})" + _aim(r <= AIM_FENCE if r is not None else None))
    return "\n".join(lines)


def merge(parts: list[dict]) -> tuple[dict[str, list[dict]], list[dict]]:
    """The rounds of several --json files, per variant in file order, and their probes in order."""
    rows: dict[str, list[dict]] = {}
    probes = []
    for p in parts:
        probes += [p.get("probe_before", {}), p.get("probe_after", {})]
        for name, runs in p["rows"].items():
            rows.setdefault(name, []).extend(runs)
    return rows, probes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5, help="interleaved rounds (default 5)")
    ap.add_argument("--variants", help="comma-separated subset of: " + ", ".join(variants()))
    ap.add_argument("--win", default="allocate", choices=["allocate", "create", "dynamic"],
                    help="the window flavour the program uses (default allocate)")
    ap.add_argument("--time", type=float, default=0.2, help="the program's budget per test, s (default 0.2)")
    ap.add_argument("--json", help="write the raw results here")
    ap.add_argument("--merge", nargs="+", metavar="JSON",
                    help="run nothing: report the rounds of these --json files together (runs split into "
                         "short jobs on a shared machine)")
    a = ap.parse_args(argv)
    if a.merge:
        rows, probes = merge([json.load(open(f)) for f in a.merge])
        print(report(summarize(rows), probes[0], probes[-1], sum(len(r) for r in rows.values()) // max(1, len(rows))))
        if len(probes) > 2:
            print(f"probes of every part, before and after: {probes}")
        return 0
    chosen = variants()
    if a.variants:
        unknown = [v for v in a.variants.split(",") if v not in chosen]
        if unknown:
            ap.error(f"unknown variants {unknown}; known: {', '.join(chosen)}")
        chosen = {v: chosen[v] for v in a.variants.split(",")}
    args = ["--win", a.win, "--time", str(a.time)]
    before, after, rows = interleaved(chosen, lambda fl, cmd, extra: run_once(fl, cmd, extra, args), a.reps)
    summary = summarize(rows)
    print(report(summary, before, after, a.reps))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"probe_before": before, "probe_after": after, "win": a.win, "rows": rows,
                       "summary": summary}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
