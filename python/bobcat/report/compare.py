"""`bobcat compare A B`: configuration B relative to configuration A, metric by metric.

For every metric both configurations measured at the same point (benchmark, test, metric, message
size, MPI, mode, other parameters), the ratio of medians B/A, its spread over repetitions, and
which side is better by the metric's own direction.  Repetitions are paired by (campaign,
repetition), which the interleaved protocol ran back to back; unpaired runs fall back to all pairs.
"""
from __future__ import annotations

import json
import statistics
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from ..evaluation.store import Store
from . import best

# Parameters that say how long or how often something was measured, not what was measured.
_HOW_PARAMS = {"iters", "warmup", "time", "time_s", "wall_s", "seconds", "reps", "args",
               "repetitions", "cpus", "placement", "validate"}


@dataclass
class Row:
    benchmark: str
    bench: str
    metric: str
    size: int | None
    mpi: str
    mode: str
    ranks: int
    unit: str
    better: str
    point: str
    median_a: float
    median_b: float
    n_a: int
    n_b: int
    ratio: float | None
    ratio_min: float | None
    ratio_max: float | None

    @property
    def verdict(self) -> str:
        if self.ratio is None or self.better not in ("higher", "lower") or self.ratio == 1.0:
            return "?" if self.better not in ("higher", "lower") else "="
        b_wins = (self.ratio > 1) == (self.better == "higher")
        return "B" if b_wins else "A"


def _point(run_params: dict[str, Any], metric_params: dict[str, Any]) -> str:
    keep = {k: v for k, v in {**run_params, **metric_params}.items()
            if k not in _HOW_PARAMS and k not in ("bytes", "ranks")}
    # The page size a run asked for (a campaign's small-page runs) is part of the measurement; a
    # benchmark's own "pages" (what its arrays got) would otherwise overwrite it and pool the
    # small-page runs with the default ones.
    if "pages" in run_params:
        keep["asked_pages"] = run_params["pages"]
    return json.dumps(keep, sort_keys=True)


def _ratio(b: float, a: float) -> float | None:
    return b / a if a != 0 else None


def _runs_by_point(store: Store, configs: list[str] | None, benchmark: str | None,
                   test: str | None, mpi: str | None, mode: str | None, metric: str | None,
                   placement: str | None) -> dict[tuple[Any, ...], dict[tuple[str, str], dict]]:
    """{(benchmark, bench, metric, size, mode, ranks, unit, better, point): {(config, mpi):
    {(campaign, repetition, run): [values]}}}: every run's values of one measurement, by series."""
    groups: dict[tuple[Any, ...], dict[tuple[str, str], dict]] = \
        defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for r in store.metric_rows(configs, benchmark, test):
        if (mpi and r["mpi"] != mpi) or (mode and r["mode"] != mode) or \
                (metric and r["name"] != metric) or (placement and r["placement"] != placement):
            continue
        mp = json.loads(r["params"] or "{}")
        rp = json.loads(r["run_params"] or "{}")
        key = (r["benchmark"], r["bench"], r["name"], r["size"], r["mode"],
               int(mp.get("ranks", r["ranks"]) or 0), r["unit"], r["better"], _point(rp, mp))
        groups[key][(r["config"], r["mpi"])][(r["campaign_id"], r["repetition"], r["run_id"])].append(r["value"])
    return groups


def _per_run(runs: dict[tuple[Any, ...], list[float]]) -> dict[tuple[Any, ...], float]:
    """One number per run (a run may report a metric more than once, e.g. per rank)."""
    return {k: statistics.median(v) for k, v in runs.items()}


def compare(store: Store, a: str, b: str, benchmark: str | None = None, test: str | None = None,
            mpi: str | None = None, mode: str | None = None, metric: str | None = None,
            placement: str | None = None) -> list[Row]:
    # group (with the MPI) -> side -> (campaign, repetition, run) -> values
    groups: dict[tuple[Any, ...], dict[str, dict[tuple[Any, ...], list[float]]]] = \
        defaultdict(lambda: {a: {}, b: {}})
    for key, by_series in _runs_by_point(store, [a, b], benchmark, test, mpi, mode, metric,
                                         placement).items():
        bm, bench, name, size, md, ranks, unit, better, point = key
        for (config, m), runs in by_series.items():
            groups[(bm, bench, name, size, m, md, ranks, unit, better, point)][config] = runs
    rows: list[Row] = []
    for key, sides in groups.items():
        if not sides[a] or not sides[b]:
            continue
        per_a, per_b = _per_run(sides[a]), _per_run(sides[b])
        med_a, med_b = statistics.median(per_a.values()), statistics.median(per_b.values())
        by_rep_a = {k[:2]: v for k, v in per_a.items() if k[0] is not None}
        by_rep_b = {k[:2]: v for k, v in per_b.items() if k[0] is not None}
        shared = sorted(set(by_rep_a) & set(by_rep_b), key=str)
        if shared:
            ratios = [_ratio(by_rep_b[k], by_rep_a[k]) for k in shared]
        else:
            ratios = [_ratio(vb, va) for va in per_a.values() for vb in per_b.values()]
        finite = [x for x in ratios if x is not None]
        rows.append(Row(*key[:9], point=key[9], median_a=med_a, median_b=med_b, n_a=len(per_a),
                        n_b=len(per_b), ratio=_ratio(med_b, med_a),
                        ratio_min=min(finite) if finite else None,
                        ratio_max=max(finite) if finite else None))
    rows.sort(key=lambda r: (r.benchmark, r.bench, r.mpi, r.mode, r.metric, r.point,
                             r.size if r.size is not None else -1))
    return rows


@dataclass
class BestRow:
    benchmark: str
    bench: str
    metric: str
    size: int | None
    mode: str
    ranks: int
    unit: str
    better: str
    point: str
    best: best.Best


def best_peers(store: Store, reference: str, benchmark: str | None = None, test: str | None = None,
               mpi: str | None = None, mode: str | None = None, metric: str | None = None,
               placement: str | None = None) -> list[BestRow]:
    """`bobcat compare best-peer REF`: per measurement, REF (its best over the MPIs, or only
    `mpi`'s) against the best peer across every MPI in the database and the best of Debian's.
    Peers are the configurations whose runs did not go through yod."""
    under_yod = set(store.yod_configs())
    rows = []
    for key, by_series in _runs_by_point(store, None, benchmark, test, None, mode, metric,
                                         placement).items():
        runs = {s: _per_run(v) for s, v in by_series.items()}
        if not any(c == reference for c, _ in runs):
            continue
        b = best.pick(runs, key[7], reference, lambda c: c not in under_yod, mpi)
        if b.reference is None or b.peer is None:
            continue
        rows.append(BestRow(*key, best=b))
    rows.sort(key=lambda r: (r.benchmark, r.bench, r.mode, r.metric, r.point,
                             r.size if r.size is not None else -1))
    return rows
