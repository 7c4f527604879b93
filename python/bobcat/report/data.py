"""The report's data layer: the results store's rows as runs and samples, and the statistics over them.

Everything here is plain data in, plain data out, so the numbers in the report (medians, ratios,
coefficients of variation, effective core utilization) can be tested without drawing anything.
The rows come from bobcat.evaluation.store (docs/design/contracts.md §4; metric records are §3);
the tables are in tables.py and shmem_tables.py.
"""
from __future__ import annotations

import json
import math
import os
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..evaluation.store import read_contents

# The IMB tests the `imb` benchmark runs, by lower-case name, spelled as the IMB spells them.
IMB_TESTS = {t.lower(): t for t in (
    "PingPong", "PingPing", "Sendrecv", "Exchange", "Barrier", "Bcast", "Reduce", "Allreduce",
    "Allgather", "Alltoall", "Reduce_scatter", "msgrate", "Iallreduce", "Ialltoall", "Ibarrier")}

# Parameters that describe how a number was measured, not what was measured: two repetitions that
# differ only in these are still repetitions of one measurement.
NOISE_PARAMS = frozenset({
    "iters", "iterations", "reps", "repetition", "repetitions", "seed", "seconds", "wall_s",
    "warmup", "time_s", "time", "cpus", "cpu", "ranks", "bytes", "test", "npmin", "root",
    "threshold_us", "trials", "rings", "args", "validate", "pages"})

# HPCC summary keys the report quotes, with a readable name. The parser stores them verbatim.
HPCC_KEYS = {
    "HPL_Tflops": "HPL",
    "PTRANS_GBs": "PTRANS",
    "MPIRandomAccess_GUPs": "MPI RandomAccess",
    "MPIFFT_Gflops": "MPI-FFT",
    "StarSTREAM_Triad": "STREAM triad (per process)",
    "SingleSTREAM_Triad": "STREAM triad (single)",
    "RandomlyOrderedRingLatency_usec": "Random ring latency",
    "NaturallyOrderedRingLatency_usec": "Natural ring latency",
    "RandomlyOrderedRingBandwidth_GBytes": "Random ring bandwidth",
    "NaturallyOrderedRingBandwidth_GBytes": "Natural ring bandwidth",
}

# Benchmarks whose numbers are communication times or diagnostics rather than "work done"; they
# are left out of the work-oriented tables (effective utilization, configuration ratios).
NOT_WORK = frozenset({"imb", "probe", "selfish", "shmem"})


@dataclass(frozen=True)
class Run:
    id: int
    campaign_id: int | None
    benchmark: str
    config: str
    mpi: str
    mode: str
    ranks: int
    params: dict[str, Any]
    repetition: int
    status: str
    placement: str
    machine: dict[str, Any]
    probe_before: dict[str, Any] | None
    probe_after: dict[str, Any] | None
    # The page kind yod says the run's heap got (huge, thp, small; runs.config_detail), None when
    # the run did not go through yod or predates the record.
    heap_pages: str | None = None
    # The OpenSHMEM implementation a shmem run measured (bobcat, oshmem), and how its job ended
    # when it died after printing valid results (runs.config_detail.crashed_after_done).
    shmem_impl: str | None = None
    crash: dict[str, Any] | None = None
    # yod's account of the run (the accounts table: on_node_calls, on_node_bytes, bobcat_calls,
    # bobcat_bytes, top_missed ...), None when the run recorded none (not under yod, or a database
    # from before schema 2).
    account: dict[str, Any] | None = None
    # The run went through yod (runs.config_detail.via_yod): not a peer.
    via_yod: bool = False


@dataclass(frozen=True)
class Sample:
    """One metric value of one run, with the run's identity folded in."""
    run: Run
    bench: str
    test: str | None          # IMB test name, None for other benchmarks
    name: str
    value: float
    unit: str
    better: str               # "higher" or "lower"
    size: int | None
    ranks: int
    params: dict[str, Any]    # run params overlaid with the metric's params
    # The page kind the benchmark says its own arrays got (its metric's params.pages), if any.
    own_pages: str | None = None

    @property
    def benchmark(self) -> str:
        return self.run.benchmark

    def what(self, pages: bool = True) -> tuple:
        """What was measured, independent of where (config, mpi, mode) and of repetitions.

        The page size a benchmark reports it got is an outcome of the configuration (lwk gets
        huge pages, Linux small ones), so it is not part of the key; the page size a campaign
        asked for (the run's params.pages) is, unless `pages` is False.
        """
        rest = tuple(sorted((k, json.dumps(v, sort_keys=True)) for k, v in self.params.items()
                            if k not in NOISE_PARAMS))
        asked = self.run.params.get("pages") if pages else None
        return (self.run.benchmark, self.test, self.name, self.size, self.ranks, rest,
                None if asked is None else str(asked))


@dataclass
class Stat:
    median: float
    lo: float
    hi: float
    n: int


@dataclass
class Table:
    id: str
    title: str
    caption: str
    headers: list[str]
    rows: list[list[Any]]
    notes: list[str] = field(default_factory=list)
    empty_reason: str | None = None   # set when the table could not be computed, and why


def _json(text: str | None) -> Any:
    if not text:
        return None
    try:
        return json.loads(text)
    except (ValueError, TypeError):
        return None


def json_dict(text: str | None) -> dict[str, Any]:
    value = _json(text)
    return value if isinstance(value, dict) else {}


def per_node(mode: str) -> int | None:
    """Ranks per node of a yod mode: SN → 1, VN → 2, VN<n> → n; None if unrecognised."""
    m = (mode or "").upper()
    if m == "SN":
        return 1
    if m == "VN":
        return 2
    if m.startswith("VN") and m[2:].isdigit():
        return int(m[2:])
    return None


def imb_test(benchmark: str, bench: str, run_params: dict, metric_params: dict) -> str | None:
    """The IMB test a metric belongs to: the metric's params.test, else its "bench" (imb prints
    the lower-case test name there), else the run's params.test (a run may name several tests,
    "pingpong,allreduce", so that is the last resort)."""
    for name in (metric_params.get("test"), bench, run_params.get("test")):
        if name is not None and str(name).lower() in IMB_TESTS:
            return IMB_TESTS[str(name).lower()]
    return None


def _better(better: str | None, name: str, unit: str) -> str:
    if better in ("higher", "lower"):
        return better
    text = f"{name} {unit}".lower()
    return "lower" if any(w in text for w in ("lat", "usec", "time", "_us", " us", " s", "ns")) \
        else "higher"


class Dataset:
    """All runs of a database, and the metric samples of the runs the placement policy keeps."""

    def __init__(self, runs: list[Run], samples: list[Sample], placements: str,
                 meta: dict[str, str], campaigns: list[dict[str, Any]]):
        if placements not in ("all", "exclude-outliers", "separate"):
            raise ValueError(f"placements must be all, exclude-outliers or separate, "
                             f"not {placements!r}")
        self.runs = runs
        self.placements = placements
        self.meta = meta
        self.campaigns = campaigns
        ok = [r for r in runs if r.status == "ok"]
        counts = Counter(r.placement for r in ok)
        self.dominant_placement = counts.most_common(1)[0][0] if counts else None
        if placements == "exclude-outliers":
            self.kept = {r.id for r in ok if r.placement == self.dominant_placement}
        else:
            self.kept = {r.id for r in ok}
        self.samples = [s for s in samples if s.run.id in self.kept]

    def label(self, run: Run) -> str:
        """The series a run belongs to: configuration, MPI and mode (and placement if separate)."""
        text = f"{run.config} {run.mpi} {run.mode}"
        if self.placements == "separate":
            text += f" [{run.placement}]"
        return text

    def select(self, pred: Callable[[Sample], bool]) -> list[Sample]:
        return [s for s in self.samples if pred(s)]


def _heap_pages(detail: dict[str, Any]) -> str | None:
    kind = detail.get("heap_pages") if detail.get("via_yod") else None
    return kind if isinstance(kind, str) else None


def _shmem_impl(detail: dict[str, Any]) -> str | None:
    done = detail.get("done") if isinstance(detail.get("done"), dict) else {}
    impl = detail.get("shmem_impl") or done.get("impl")
    return str(impl) if impl else None


def load(db_path: str | os.PathLike, placements: str = "all") -> Dataset:
    """Read a results database (through the store, which never writes to it here)."""
    db = read_contents(db_path)
    accounts = {a["run_id"]: dict(a, top_missed=_json(a["top_missed"]) or []) for a in db.accounts}
    runs: dict[int, Run] = {}
    for r in db.runs:
        detail = json_dict(r["config_detail"])
        runs[r["id"]] = Run(
            id=r["id"], campaign_id=r["campaign_id"], benchmark=r["benchmark"] or "?",
            config=r["config"] or "?", mpi=r["mpi"] or "?", mode=r["mode"] or "?",
            ranks=int(r["ranks"] or 0), params=json_dict(r["params"]),
            repetition=int(r["repetition"] or 0), status=r["status"] or "?",
            placement=r["placement"] or "unknown", machine=json_dict(r["machine"]),
            probe_before=_json(r["probe_before"]), probe_after=_json(r["probe_after"]),
            heap_pages=_heap_pages(detail), shmem_impl=_shmem_impl(detail),
            crash=detail.get("crashed_after_done")
            if isinstance(detail.get("crashed_after_done"), dict) else None,
            account=accounts.get(r["id"]), via_yod=bool(detail.get("via_yod")))
    samples: list[Sample] = []
    for m in db.metrics:
        run = runs.get(m["run_id"])
        value = m["value"]
        if run is None or value is None or not math.isfinite(float(value)):
            continue
        mparams = json_dict(m["params"])
        params = {**run.params, **mparams}
        size = m["size"] if m["size"] is not None else params.get("bytes")
        ranks = mparams.get("ranks", run.ranks)
        name = m["name"] or "?"
        unit = m["unit"] or ""
        samples.append(Sample(
            run=run, bench=m["bench"] or run.benchmark,
            test=imb_test(run.benchmark, m["bench"] or "", run.params, mparams),
            name=name, value=float(value), unit=unit,
            better=_better(m["better"], name, unit),
            size=int(size) if isinstance(size, (int, float)) else None,
            ranks=int(ranks) if isinstance(ranks, (int, float)) else run.ranks,
            params=params, own_pages=str(mparams["pages"]) if "pages" in mparams
            else None))
    return Dataset(list(runs.values()), samples, placements, db.meta, db.campaigns)


# ---- statistics -------------------------------------------------------------------------------

def summarize(values: Iterable[float]) -> Stat:
    vals = sorted(values)
    return Stat(statistics.median(vals), vals[0], vals[-1], len(vals))


def cov(values: Iterable[float]) -> float | None:
    """Coefficient of variation: sample standard deviation over mean; None below 2 values."""
    vals = list(values)
    if len(vals) < 2 or not all(math.isfinite(v) for v in vals):
        return None
    # Scale first: HPCC reports constants like HPL_dMACH_RMAX = 1.8e308 whose squares overflow.
    scale = max(abs(v) for v in vals)
    if scale == 0:
        return None
    scaled = [v / scale for v in vals]
    mean = statistics.fmean(scaled)
    if mean == 0:
        return None
    return statistics.stdev(scaled) / abs(mean)


def performance(value: float, better: str) -> float:
    """A number where bigger is always better: rates as they are, times inverted."""
    if better == "lower":
        return 1.0 / value if value else math.inf
    return value


def effective_utilization(sn: float, vn: float, better: str, ranks_per_node: int
                          ) -> tuple[float, float]:
    """CNW §4.1.3: the same work on the same ranks, one per node (SN) and n per node (VN).

    For times, utilization of each core u = T_SN / T_VN (the paper's ".85 Q = S"); for rates
    u = R_VN / R_SN. Cores effectively used = u × n. Returns (u, cores).
    """
    u = performance(vn, better) / performance(sn, better)
    return u, u * ranks_per_node


def improvement_pct(new: float, base: float, better: str) -> float:
    """CNW's "(CNL/CNW − 1) × 100 %" for times, generalised: how much better `new` is than
    `base`, in percent."""
    return (performance(new, better) / performance(base, better) - 1.0) * 100.0


def per_run_values(samples: Iterable[Sample], key: Callable[[Sample], Any]
                   ) -> dict[Any, list[float]]:
    """Group samples by `key`, one value per run (a run's repeated values collapse to their
    median), so the lists hold one number per repetition."""
    by_run: dict[Any, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for s in samples:
        by_run[key(s)][s.run.id].append(s.value)
    return {k: [statistics.median(v) for v in runs.values()] for k, runs in by_run.items()}


def medians(samples: Iterable[Sample], key: Callable[[Sample], Any]) -> dict[Any, Stat]:
    return {k: summarize(v) for k, v in per_run_values(samples, key).items()}


# ---- page kinds ----------------------------------------------------------------------------

SMALL_PAGES = frozenset({"small", "4k", "4kib"})
LARGE_PAGES = frozenset({"large", "huge", "hugetlb", "2m", "2mib", "thp"})


def asked_pages(s: Sample) -> str:
    """small, large, or default: the page size the run asked for (runs.params.pages)."""
    p = str(s.run.params.get("pages", "")).lower()
    return "small" if p in SMALL_PAGES else "large" if p in LARGE_PAGES else "default"


def at_default_pages(s: Sample) -> bool:
    """The run did not ask for a page size: the configuration's own memory behaviour.  Figures
    and tables that compare configurations use only these, so the small-page runs of the
    pages table never pool with them."""
    return asked_pages(s) == "default"


def fmt(v: Any) -> str:
    """Four significant digits, no exponent for ordinary magnitudes."""
    if v is None:
        return "—"
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, int):
        return str(v)
    if not math.isfinite(v):
        return str(v)
    a = abs(v)
    if a != 0 and (a >= 1e7 or a < 1e-4):
        return f"{v:.3e}"
    return f"{v:.0f}" if a >= 1e4 else f"{v:.4g}"
