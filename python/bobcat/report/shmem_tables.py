"""The report's OpenSHMEM table (issue 11): bobcat's library under lwk against Open MPI's oshmem
under the peer configurations, from the shmem benchmark's samples (data.py), with the skips the
campaigns recorded.
"""
from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

from .data import Dataset, Run, Sample, Table, at_default_pages, json_dict, medians, performance

# OpenSHMEM on one node (the shmem benchmark, bench/shmem/shmem_bench.c): the rows of the SHMEM
# table, in order, and issue 11's aims for bobcat's library (2 PEs, ~55 ns line transfer here).
SHMEM_LATENCIES = (
    ("put_latency", "put 8 B, one-way (p + wait_until, RTT / 2)", "≤ 60 ns"),
    ("putmem_issue", "putmem 8 B, issue rate (quiet at the end)", "≤ 60 ns"),
    ("get_latency", "get 8 B, one-way (store + getmem polls, RTT / 2)", "≤ 60 ns"),
    ("fetch_add", "atomic fetch_add 8 B (peer idle)", "≤ 100 ns"),
    ("fetch_add_contended", "atomic fetch_add 8 B, both PEs on one counter (the line moves)",
     "≤ 100 ns"),
    ("barrier_all", "barrier_all", "≤ 100 ns"),
)
SHMEM_BW_AIM = "≥ 90 %"


def shmem_series(ds: Dataset, run: Run) -> str:
    """`lwk openmpi VN2 (bobcat)`: the series and the OpenSHMEM it measured."""
    return f"{ds.label(run)} ({run.shmem_impl or 'implementation not recorded'})"


def _is_bobcat(series: str) -> bool:
    return series.endswith("(bobcat)")


def shmem_skips(ds: Dataset) -> list[str]:
    """Why shmem runs were not made, from the campaigns' summaries (Skip reasons)."""
    out = []
    for c in ds.campaigns:
        for sk in json_dict(c.get("summary")).get("skipped", []) or []:
            if isinstance(sk, dict) and sk.get("benchmark") == "shmem":
                out.append(f"{sk.get('config')}/{sk.get('mpi')}/{sk.get('mode')} in campaign "
                           f"{c.get('name')} #{c.get('id')}: {sk.get('reason')}")
    return sorted(set(out))


def shmem_samples(ds: Dataset) -> list[Sample]:
    return [s for s in ds.samples if s.benchmark == "shmem" and at_default_pages(s)]


def shmem_table(ds: Dataset) -> Table:
    """OpenSHMEM micro-benchmarks per series (bobcat's under lwk, Open MPI's oshmem under the
    peer configurations): medians over repetitions, put bandwidth over memcpy from each run's
    own pair, the speed-up of bobcat over the peer of the same MPI and mode, issue 11's aims."""
    title = "OpenSHMEM on one node: bobcat vs Open MPI oshmem"
    sh = shmem_samples(ds)
    skips = shmem_skips(ds)
    failed = Counter(shmem_series(ds, r) for r in ds.runs
                     if r.benchmark == "shmem" and r.status != "ok")
    notes = [f"{n} run{'s' if n > 1 else ''} of {lab} failed or timed out (see Every run)"
             for lab, n in sorted(failed.items())]
    if not sh:
        why = "no runs of shmem" + (" (failed: " + "; ".join(notes) + ")" if notes else "") + \
            ("; skipped: " + "; ".join(skips) if skips else "")
        return Table("shmem", title, "", [], [], empty_reason=why)
    series_run = {shmem_series(ds, s.run): s.run for s in sh}
    series = sorted(series_run, key=lambda x: (not _is_bobcat(x), x))
    stats = medians(sh, lambda s: (s.name, s.size, shmem_series(ds, s.run)))
    # put / memcpy of each run (the two are measured back to back in the same run).
    per_run: dict[tuple, dict[str, float]] = defaultdict(dict)
    for s in sh:
        if s.name in ("put_bw", "memcpy_bw") and s.size:
            per_run[(s.run.id, s.size)][s.name] = s.value
    ratio: dict[tuple, list[float]] = defaultdict(list)
    for (rid, size), v in per_run.items():
        if v.get("memcpy_bw"):
            run = next(s.run for s in sh if s.run.id == rid)
            ratio[(size, shmem_series(ds, run))].append(100.0 * v["put_bw"] / v["memcpy_bw"])
    pairs = [(b, p) for b in series if _is_bobcat(b) for p in series if not _is_bobcat(p)
             and (series_run[b].mpi, series_run[b].mode) == (series_run[p].mpi,
                                                               series_run[p].mode)]

    def row(label: str, unit: str, better: str, key: Callable[[str], Any], aim: str,
            speedup: bool = True) -> list:
        vals = {lab: key(lab) for lab in series}
        ups = []
        for b, p in pairs:
            vb, vp = vals[b], vals[p]
            ups.append(performance(vb, better) / performance(vp, better)
                       if speedup and vb and vp and vb > 0 and vp > 0 else None)
        return [label, unit, better] + [vals[lab] for lab in series] + ups + [aim]

    def med(name: str, size: int | None) -> Callable[[str], Any]:
        return lambda lab: stats[(name, size, lab)].median if (name, size, lab) in stats else None

    # The latencies are one or two cache-line transfers, so they move with the VM's placement
    # (~55 ns "core", ~25 "smt", ~260 "chip"): the probe before each run says which one it met.
    probes: dict[str, list[float]] = defaultdict(list)
    for r in {s.run.id: s.run for s in sh}.values():
        pb = r.probe_before
        if isinstance(pb, dict) and isinstance(pb.get("value"), (int, float)):
            probes[shmem_series(ds, r)].append(float(pb["value"]))
    rows = []
    if probes:
        rows.append(row("core-to-core probe before the run, one-way (the placement it met)", "ns",
                        "lower", lambda lab: statistics.median(probes[lab]) if probes.get(lab)
                        else None, "~55 ns (core)", speedup=False))
    for name, text, aim in SHMEM_LATENCIES:
        if any(k[0] == name for k in stats):
            size = next(k[1] for k in stats if k[0] == name)
            rows.append(row(text, "ns", "lower", med(name, size), aim))
    for size in sorted({k[1] for k in stats if k[0] == "put_bw" and k[1]}):
        rows.append(row(f"put bandwidth {size} B", "GB/s", "higher", med("put_bw", size), ""))
        rows.append(row(f"memcpy {size} B on the same PE (reference)", "GB/s", "higher",
                        med("memcpy_bw", size), "", speedup=False))
        rows.append(row(f"put / memcpy {size} B", "%", "higher",
                        lambda lab, size=size: statistics.median(ratio[(size, lab)])
                        if ratio.get((size, lab)) else None, SHMEM_BW_AIM, speedup=False))
    crashes: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in {s.run.id: s.run for s in sh}.values():
        if r.crash:
            crashes[shmem_series(ds, r)].append(r.crash)
    for lab, cs in sorted(crashes.items()):
        n_runs = len({s.run.id for s in sh if shmem_series(ds, s.run) == lab})
        how = ", ".join(sorted({f"exit {c.get('exit_code')}" + (f" ({c['signal']})"
                                                                 if c.get("signal") else "")
                                for c in cs}))
        known = next((c.get("known") for c in cs if c.get("known")), "")
        notes.append(f"{lab}: {len(cs)} of {n_runs} runs printed valid results and then "
                     f"crashed ({how}){': ' + known if known else ''}. Their results are used; "
                     "the crash is in each run's config_detail.crashed_after_done.")
    if not any(_is_bobcat(x) for x in series):
        notes.append("bobcat's OpenSHMEM (lwk) not measured (why: "
                     + ("; ".join(x for x in skips if x.startswith("lwk")) or
                        "no shmem runs under a yod configuration in this database") + ")")
    if all(_is_bobcat(x) for x in series):
        notes.append("the Open MPI oshmem peer not measured (why: "
                     + ("; ".join(x for x in skips if not x.startswith("lwk")) or
                        "no shmem runs outside a yod configuration in this database") + ")")
    elif skips:
        notes.append("skipped: " + "; ".join(skips))
    headers = ["measurement", "unit", "better"] + series + \
        [f"speed-up {b.split(' (')[0]} over {p.split(' (')[0]} (oshmem) ×" for b, p in pairs] + \
        ["aim (issue 11)"]
    return Table("shmem", title,
                 "Medians over repetitions of each run's medians (the program repeats every "
                 "test --reps times). put / memcpy: each run's put bandwidth over its own memcpy "
                 "of the same size, median over runs. Speed-up = perf(bobcat) / perf(peer) of "
                 "the same MPI and mode (perf = 1/time, or the rate): above 1 bobcat is faster. "
                 "Aims: issue 11, for bobcat's library on this machine (a cache-line transfer "
                 "between the cores is ~55 ns). The latency aims hold for that placement: where the "
                 "probe row reads ~260 ns the vCPUs sat on different chips and every latency here is "
                 "that much longer.", headers, rows, notes)
