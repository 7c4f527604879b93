"""The report's data layer: read the results database (read-only) and compute its tables.

Everything here is plain data in, plain data out, so the numbers in the report (medians, ratios,
coefficients of variation, effective core utilization) can be tested without drawing anything.
The database layout is docs/design/contracts.md §4; metric records are §3.
"""
from __future__ import annotations

import json
import math
import os
import sqlite3
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

# The IMB tests the `imb` benchmark runs, by lower-case name, spelled as the IMB spells them.
IMB_TESTS = {t.lower(): t for t in (
    "PingPong", "PingPing", "Sendrecv", "Exchange", "Barrier", "Bcast", "Reduce", "Allreduce",
    "Allgather", "Alltoall", "Reduce_scatter", "msgrate")}

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


def _dict(text: str | None) -> dict[str, Any]:
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
    """Read a results database without ever writing to it."""
    uri = f"file:{os.fspath(db_path)}?mode=ro"
    con = sqlite3.connect(uri, uri=True)
    try:
        con.row_factory = sqlite3.Row
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        meta: dict[str, str] = {}
        if "meta" in tables:
            meta = {r["key"]: r["value"] for r in con.execute("SELECT key, value FROM meta")}
        campaigns: list[dict[str, Any]] = []
        if "campaigns" in tables:
            campaigns = [dict(r) for r in con.execute("SELECT * FROM campaigns ORDER BY id")]
        runs: dict[int, Run] = {}
        if "runs" in tables:
            for r in con.execute("SELECT * FROM runs ORDER BY id"):
                detail = _dict(r["config_detail"])
                runs[r["id"]] = Run(
                    id=r["id"], campaign_id=r["campaign_id"], benchmark=r["benchmark"] or "?",
                    config=r["config"] or "?", mpi=r["mpi"] or "?", mode=r["mode"] or "?",
                    ranks=int(r["ranks"] or 0), params=_dict(r["params"]),
                    repetition=int(r["repetition"] or 0), status=r["status"] or "?",
                    placement=r["placement"] or "unknown", machine=_dict(r["machine"]),
                    probe_before=_json(r["probe_before"]), probe_after=_json(r["probe_after"]),
                    heap_pages=_heap_pages(detail), shmem_impl=_shmem_impl(detail),
                    crash=detail.get("crashed_after_done")
                    if isinstance(detail.get("crashed_after_done"), dict) else None)
        samples: list[Sample] = []
        if "metrics" in tables:
            for m in con.execute("SELECT * FROM metrics"):
                run = runs.get(m["run_id"])
                value = m["value"]
                if run is None or value is None or not math.isfinite(float(value)):
                    continue
                mparams = _dict(m["params"])
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
    finally:
        con.close()
    return Dataset(list(runs.values()), samples, placements, meta, campaigns)


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


# ---- tables -----------------------------------------------------------------------------------

def _metric_label(s: Sample, with_pages: bool = True) -> str:
    if s.benchmark == "hpcc":
        return HPCC_KEYS.get(s.name, s.name)
    text = f"{s.benchmark}/{s.test + '/' if s.test else ''}{s.name}"
    extra = [f"{k}={v}" for k, v in sorted(s.params.items())
             if k not in NOISE_PARAMS and not isinstance(v, (dict, list))]
    if s.size is not None:
        extra.insert(0, f"{s.size} B")
    if with_pages and "pages" in s.run.params:
        extra.append(f"pages={s.run.params['pages']}")
    return text + (f" ({', '.join(extra)})" if extra else "")


def pages_of(s: Sample) -> str:
    """The page size a campaign asked for (run params), else the one the benchmark got."""
    return str(s.run.params.get("pages", s.params.get("pages", "")))


def _is_default_pages(s: Sample) -> bool:
    return pages_of(s).lower() in ("", "default", "auto")


def headline(ds: Dataset) -> Table:
    """Key results per series: the numbers a reader wants before any figure."""
    cols: list[tuple[str, Callable[[Sample], bool], str]] = [
        ("PingPong 8 B t_avg", lambda s: s.test == "PingPong" and s.name == "t_avg"
         and s.size == 8, "min-ranks"),
        ("PingPong 1 MiB bandwidth", lambda s: s.test == "PingPong" and s.name == "bandwidth"
         and s.size == 1 << 20, "min-ranks"),
        ("Allreduce 8 B t_avg", lambda s: s.test == "Allreduce" and s.name == "t_avg"
         and s.size == 8, "max-ranks"),
        ("Barrier t_avg", lambda s: s.test == "Barrier" and s.name == "t_avg", "max-ranks"),
        ("STREAM triad (all ranks)", lambda s: s.benchmark == "stream"
         and "triad" in s.name.lower() and s.params.get("phase", "all") == "all", "max-ranks"),
    ] + [(HPCC_KEYS[k], (lambda s, k=k: s.benchmark == "hpcc" and s.name == k), "max-ranks")
         for k in ("HPL_Tflops", "PTRANS_GBs", "MPIRandomAccess_GUPs", "MPIFFT_Gflops")]
    series = sorted({ds.label(s.run) for s in ds.samples})
    headers = ["series"]
    cells: dict[tuple[str, int], str] = {}
    present = []
    for ci, (title, pred, pick) in enumerate(cols):
        chosen = [s for s in ds.samples if pred(s)]
        if not chosen:
            continue
        unit = chosen[0].unit
        headers.append(f"{title} ({unit}, {chosen[0].better} is better)")
        present.append(ci)
        for lab in series:
            mine = [s for s in chosen if ds.label(s.run) == lab]
            if any(_is_default_pages(s) for s in mine):
                mine = [s for s in mine if _is_default_pages(s)]
            if not mine:
                continue
            ranks = {s.ranks for s in mine}
            want = max(ranks) if pick == "max-ranks" else min(ranks)
            mine = [s for s in mine if s.ranks == want]
            # Runs that set the page size explicitly are quoted once per page size, never
            # pooled: small and large pages are different measurements.
            parts = []
            for pages in sorted({pages_of(s) for s in mine}):
                st = summarize(per_run_values(
                    [s for s in mine if pages_of(s) == pages],
                    lambda s: 0)[0])
                parts.append((f"{pages}: " if pages else "") + f"{fmt(st.median)}"
                             + ("" if pages else f" (n={st.n})"))
            cells[(lab, ci)] = "; ".join(parts) + f" [np {want}]"
    rows = [[lab] + [cells.get((lab, ci), "—") for ci in present] for lab in series]
    missing = [t for i, (t, _, _) in enumerate(cols) if i not in present]
    notes = [f"not measured: {', '.join(missing)} (why: no runs of them in this database)"] \
        if missing else []
    return Table("headline", "Headline numbers",
                 "Median over repetitions for each configuration, MPI and mode; np is the rank "
                 "count the number comes from, n the number of repetitions; a benchmark run with "
                 "an explicit page size is quoted per page size.",
                 headers, rows if present else [], notes,
                 None if present else "no key metric was measured")


def matrix(samples: list[Sample], row: Callable[[Sample], Any],
           row_title: list[str], col: Callable[[Sample], str]) -> tuple[list[str], list[list]]:
    """A table of medians: one row per `row` key, one column per `col` key."""
    stats = medians(samples, lambda s: (row(s), col(s)))
    rows_k = sorted({k[0] for k in stats}, key=_sort_key)
    cols_k = sorted({k[1] for k in stats})
    body = []
    for rk in rows_k:
        rk_t = rk if isinstance(rk, tuple) else (rk,)
        body.append(list(rk_t) + [stats[(rk, c)].median if (rk, c) in stats else None
                                  for c in cols_k])
    return row_title + cols_k, body


def _sort_key(k: Any) -> tuple:
    items = k if isinstance(k, tuple) else (k,)
    return tuple((0, x, "") if isinstance(x, (int, float)) else (1, 0, str(x)) for x in items)


def pallas_tables(ds: Dataset) -> list[Table]:
    """CNW §5.2.1 "Selected tabular results from Pallas": t_avg per test and message size."""
    imb = [s for s in ds.samples if s.test and s.name == "t_avg"]
    tables = []
    for test in sorted({s.test for s in imb}):
        mine = [s for s in imb if s.test == test]
        many = len({s.ranks for s in mine}) > 1
        headers, rows = matrix(mine, lambda s: s.size if s.size is not None else "—",
                               ["bytes"],
                               lambda s: ds.label(s.run) + (f" np{s.ranks}" if many else ""))
        tables.append(Table(f"pallas-{test.lower()}", f"IMB {test}: t_avg (µs), lower is better",
                            "Median over repetitions.", headers, rows))
    return tables


def sn_vs_vn(ds: Dataset) -> Table:
    """CNW §4.1.3 HPCC table: the same HPCC metrics in SN and VN modes, per configuration."""
    hp = [s for s in ds.samples if s.benchmark == "hpcc" and s.name in HPCC_KEYS
          and at_default_pages(s)]
    modes = sorted({s.run.mode for s in hp}, key=lambda m: (per_node(m) or 99, m))
    if len(modes) < 2:
        why = "no HPCC runs" if not hp else f"HPCC ran only in mode {modes[0]}"
        return Table("hpcc-sn-vn", "HPCC, SN vs VN", "", [], [], empty_reason=why)
    stats = medians(hp, lambda s: (s.name, s.run.config, s.run.mpi, s.ranks, s.run.mode))
    rows = []
    for name in HPCC_KEYS:
        for (n, cfg, mpi, ranks) in sorted({k[:4] for k in stats if k[0] == name}):
            rows.append([HPCC_KEYS[name], cfg, mpi, ranks] +
                        [stats[(n, cfg, mpi, ranks, m)].median
                         if (n, cfg, mpi, ranks, m) in stats else None for m in modes])
    return Table("hpcc-sn-vn", "HPCC, SN vs VN (CNW §4.1.3)",
                 "Medians over repetitions; the same rank count in each mode, so the same work.",
                 ["HPCC test", "config", "mpi", "np"] + [f"{m} mode" for m in modes], rows)


# Metrics that validate a result rather than measure performance.
VALIDATION = frozenset({"errors", "error", "residual"})


def _work_samples(ds: Dataset) -> list[Sample]:
    """Performance numbers of work benchmarks: of HPCC only the keys the report quotes (its
    summary has some sixty, most of them counts and timings of phases)."""
    return [s for s in ds.samples if s.benchmark not in NOT_WORK and s.test is None
            and s.name not in VALIDATION and not s.name.lower().startswith("hist")
            and (s.benchmark != "hpcc" or s.name in HPCC_KEYS)]


def config_ratios(ds: Dataset, reference: str = "lwk") -> list[Table]:
    """CNW §4.1.4 "CNW vs CNL": every other configuration against the reference one."""
    work = _work_samples(ds)
    configs = sorted({s.run.config for s in work})
    if reference not in configs or len(configs) < 2:
        why = (f"no work-benchmark runs of configuration {reference}" if reference not in configs
               else "only one configuration measured")
        return [Table("ratios", f"Configuration ratios against {reference}", "", [], [],
                      empty_reason=why)]
    stats = medians(work, lambda s: (s.what(), s.run.mpi, s.run.mode, s.run.config))
    label = {s.what(): (_metric_label(s), s.better, s.unit) for s in work}
    tables = []
    for other in configs:
        if other == reference:
            continue
        rows = []
        for (what, mpi, mode, cfg) in sorted(stats, key=lambda k: (str(k[0]), k[1], k[2])):
            if cfg != other or (what, mpi, mode, reference) not in stats:
                continue
            base, new = stats[(what, mpi, mode, other)].median, \
                stats[(what, mpi, mode, reference)].median
            text, better, unit = label[what]
            rows.append([text, unit, better, mpi, mode, what[4], base, new,
                         new / base if base else None, improvement_pct(new, base, better)])
        tables.append(Table(
            f"ratio-{other}", f"{reference} vs {other} (CNW vs CNL style)",
            f"Medians over repetitions. {reference}/{other} is the plain ratio of the values; "
            f"improvement % = (perf({reference}) / perf({other}) − 1) × 100, where perf is the "
            "value when higher is better and 1/value when lower is better — for times this is "
            "the paper's (CNL/CNW − 1) × 100 %.",
            ["metric", "unit", "better", "mpi", "mode", "np", other, reference,
             f"{reference}/{other}", "improvement %"], rows,
            empty_reason=None if rows else f"no measurement common to {reference} and {other}"))
    return tables


# CNW §4.1.2 (SAND2008-4039), "Performance of small pages relative to large pages", HPCC in SN
# mode on four quad-core Budapest Opterons (4 ranks): yod -small_pages against Catamount's default
# 2 MiB pages.  "STREAMS" is HPCC's per-process (Star) STREAM, as in the paper's §4.1.4 table.
CNW_SMALL_OVER_LARGE = {"PTRANS_GBs": 36.2, "HPL_Tflops": 98.5, "StarSTREAM_Triad": 98.1,
                        "MPIRandomAccess_GUPs": 87.9, "MPIFFT_Gflops": 97.6}
_SMALL = frozenset({"small", "4k", "4kib"})
_LARGE = frozenset({"large", "huge", "hugetlb", "2m", "2mib", "thp"})


def _asked_pages(s: Sample) -> str:
    """small, large, or default: the page size the run asked for (runs.params.pages)."""
    p = str(s.run.params.get("pages", "")).lower()
    return "small" if p in _SMALL else "large" if p in _LARGE else "default"


def _got_pages(s: Sample) -> str | None:
    """The page kind the measured memory really got: the benchmark's own arrays when it
    allocated them itself (its metric's params.pages), else the run's yod heap; None if no
    record says."""
    own = (s.own_pages or "").lower()
    if own in _SMALL or own in _LARGE:
        return own
    return s.run.heap_pages


def _pages(s: Sample) -> tuple[str | None, str]:
    """(small | large | None, why not counted): a sample counts as small or large only when the
    record of what it got agrees with what it asked for.  A yod run at its default policy counts
    as large when its heap got 2 MiB pages (Catamount's default, the paper's "large")."""
    asked, got = _asked_pages(s), _got_pages(s)
    kind = None if got is None else "small" if got in _SMALL else "large"
    if asked == "default":
        if not s.run.heap_pages:
            return None, ""         # not a yod run, or no record: not part of the comparison
        if kind != "large":
            return None, f"ran at yod's default pages and got {got}"
        return "large", ""
    if kind is None:
        return None, f"asked for {asked} pages, page kind not recorded"
    if kind != asked:
        return None, f"asked for {asked} pages, got {got}"
    return kind, ""


def at_default_pages(s: Sample) -> bool:
    """The run did not ask for a page size: the configuration's own memory behaviour.  Figures
    and tables that compare configurations use only these, so the small-page runs of the
    pages table never pool with them."""
    return _asked_pages(s) == "default"


def pages_table(ds: Dataset) -> Table:
    """CNW §4.1.2: performance with small pages relative to large pages, the spread over the
    repetitions, and the paper's figure for the same HPCC test."""
    def key(s: Sample) -> tuple:
        return (s.what(pages=False), s.run.config, s.run.mpi, s.run.mode)

    paged: list[tuple[Sample, str]] = []
    rejected: dict[tuple, dict[int, tuple[bool, str]]] = defaultdict(dict)
    for s in _work_samples(ds):
        kind, why = _pages(s)
        if kind:
            paged.append((s, kind))
        elif why:
            rejected[key(s)][s.run.id] = (_asked_pages(s) != "default",
                                          f"{s.run.benchmark} {s.run.config}/{s.run.mpi}/"
                                          f"{s.run.mode} {why}")
    with_small = {key(s) for s, kind in paged if kind == "small"}

    # One value per run; runs of one repetition of one campaign ran back to back.
    per_run: dict[tuple, dict[str, dict[tuple, list[float]]]] = defaultdict(
        lambda: {"small": defaultdict(list), "large": defaultdict(list)})
    got: dict[tuple, dict[int, str]] = defaultdict(dict)   # large runs: run id -> kind got
    info: dict[tuple, tuple[str, str, str, str]] = {}
    for s, kind in paged:
        k = key(s)
        per_run[k][kind][(s.run.campaign_id, s.run.repetition, s.run.id)].append(s.value)
        if kind == "large":
            got[k][s.run.id] = str(_got_pages(s))
        info[k] = (_metric_label(s, with_pages=False), s.better, s.unit,
                   s.name if s.benchmark == "hpcc" else "")
    rows = []
    for k, sides in per_run.items():
        if not sides["small"] or not sides["large"]:
            continue
        text, better, unit, hpcc_key = info[k]
        small = {r: statistics.median(v) for r, v in sides["small"].items()}
        large = {r: statistics.median(v) for r, v in sides["large"].items()}

        def pct(a: float, b: float) -> float:
            return 100.0 * performance(a, better) / performance(b, better)

        med_s, med_l = statistics.median(small.values()), statistics.median(large.values())
        by_rep_s = {r[:2]: v for r, v in small.items()}
        by_rep_l = {r[:2]: v for r, v in large.items()}
        shared = set(by_rep_s) & set(by_rep_l)
        ratios = [pct(by_rep_s[r], by_rep_l[r]) for r in shared] if shared else \
            [pct(a, b) for a in small.values() for b in large.values()]
        kinds = Counter(got[k].values())
        cnw = CNW_SMALL_OVER_LARGE.get(hpcc_key)
        rows.append([text, unit, k[1], k[2], k[3], f"{len(small)}/{len(large)}", med_s, med_l,
                     ", ".join(f"{g} ×{n}" for g, n in sorted(kinds.items())), pct(med_s, med_l),
                     f"{fmt(min(ratios))}–{fmt(max(ratios))}",
                     f"{cnw:g} % (SN)" if cnw is not None else "—", hpcc_key])
    # The paper's HPCC tests first, in its order; then the rest by name.
    order = {name: i for i, name in enumerate(CNW_SMALL_OVER_LARGE)}
    rows.sort(key=lambda r: (order.get(r[-1], len(order)), r[0], r[2], r[3], r[4]))
    # Runs left out: those that asked for a page size, and default-page yod runs of a measurement
    # that also ran on small pages (the lwk runs the campaign pairs with the small-page ones).
    left_out = Counter(why for rid, why in {
        (rid, why) for k, runs in rejected.items() for rid, (explicit, why) in runs.items()
        if explicit or k in with_small})
    notes = [f"not counted: {n} run{'s' if n > 1 else ''} of {why}"
             for why, n in sorted(left_out.items())]
    for c in ds.campaigns:
        summary = _dict(c.get("summary")).get("pages")
        if not isinstance(summary, dict):
            continue
        hug = summary.get("hugetlb") if isinstance(summary.get("hugetlb"), dict) else {}
        said = [summary.get("note")] if not rows else []   # what the campaign ran, or why not
        for note in said + [hug.get("note") if hug.get("need_pages") else None]:
            if isinstance(note, str) and note:
                notes.append(f"campaign {c.get('name')} #{c.get('id')}: {note}")
    caption = ("Performance of small (4 KiB) pages relative to large (2 MiB) pages = "
               "perf(small) / perf(large) × 100 % (perf = value, or 1/value for times), from the "
               "medians over repetitions; spread = lowest–highest of the repetitions' own ratios "
               "(each small run against the large run of its repetition). Large = the heap got "
               "2 MiB pages (huge: hugetlb pool, thp: shmem THP), as each run's record says; a run "
               "that asked for 2 MiB pages and got 4 KiB is not counted. CNW = the paper's table "
               "(XT4, four quad-core Budapest Opterons, SN, 4 ranks, yod -small_pages vs "
               "Catamount's default pages).")
    why = None
    if not rows:
        why = "no benchmark ran on both small and large pages with the page kind on record"
        if notes:
            why += " — " + "; ".join(notes)
    for r in rows:
        del r[-1]     # the sort key
    return Table("pages", "Small vs large pages (CNW §4.1.2)", caption,
                 ["measurement", "unit", "config", "mpi", "mode", "runs small/large", "small",
                  "large",
                  "large pages got", "small/large %", "spread %", "CNW small/large"],
                 rows, notes if rows else [], why)


def utilization_table(ds: Dataset) -> Table:
    """CNW §4.1.3 effective core utilization, for every work measurement run in SN and VN."""
    work = _work_samples(ds)
    stats = medians(work, lambda s: (s.what(), s.run.config, s.run.mpi, s.run.mode))
    label = {s.what(): (_metric_label(s), s.better) for s in work}
    rows = []
    for (what, cfg, mpi, mode) in sorted(stats, key=lambda k: (str(k[0]), k[1], k[2], k[3])):
        n = per_node(mode)
        if not n or n < 2 or (what, cfg, mpi, "SN") not in stats:
            continue
        sn, vn = stats[(what, cfg, mpi, "SN")].median, stats[(what, cfg, mpi, mode)].median
        text, better = label[what]
        u, cores = effective_utilization(sn, vn, better, n)
        rows.append([text, better, cfg, mpi, what[4], mode, sn, vn, 100.0 * u, cores])
    return Table(
        "utilization", "Effective core utilization (CNW §4.1.3)",
        "The same work on the same number of ranks, once with one rank per node (SN) and once "
        "with n ranks per node (VNn). Utilization of each core u = T_SN / T_VN for times "
        "(the paper's 0.85·Q = S) and R_VN / R_SN for rates; cores effectively used = n × u "
        "(the paper's 0.85 × 4 = 3.4).",
        ["measurement", "better", "config", "mpi", "np", "VN mode", "SN", "VN",
         "utilization of each core %", "cores effectively used"], rows,
        empty_reason=None if rows else "no work benchmark ran in both SN and a VN mode "
        "with the same configuration, MPI and rank count")


def variability(ds: Dataset) -> tuple[Table, Table]:
    """Run-to-run variability: coefficient of variation over repetitions (Underwood's
    determinism argument), summarised per series, then the most variable measurements."""
    groups = per_run_values(ds.samples, lambda s: (ds.label(s.run), s.what()))
    label = {s.what(): _metric_label(s) for s in ds.samples}
    per_series: dict[str, list[tuple[float, Any, int]]] = defaultdict(list)
    for (lab, what), vals in groups.items():
        c = cov(vals)
        if c is not None:
            per_series[lab].append((c, what, len(vals)))
    summary = []
    detail = []
    for lab in sorted(per_series):
        covs = sorted(per_series[lab], key=lambda t: t[0])
        worst = covs[-1]
        summary.append([lab, len(covs), 100 * statistics.median(c for c, _, _ in covs),
                        100 * worst[0], label[worst[1]]])
        for c, what, n in sorted(covs, key=lambda t: -t[0])[:8]:
            detail.append([lab, label[what], n, 100 * c])
    cap = ("CoV = sample standard deviation / mean of one measurement's repetitions (one value "
           "per run); only measurements repeated at least twice count.")
    why = None if summary else "no measurement was repeated"
    return (Table("cov", "Run-to-run variability per configuration", cap,
                  ["series", "measurements", "median CoV %", "max CoV %", "most variable"],
                  summary, empty_reason=why),
            Table("cov-detail", "Most variable measurements", cap,
                  ["series", "measurement", "repetitions", "CoV %"], detail, empty_reason=why))


_SELFISH_ORDER = ("rate", "per_s", "detours", "count", "median", "mean", "max", "lost", "pct")


def selfish_table(ds: Dataset) -> Table:
    """CNW §4.2.1 selfish detour: every scalar selfish metric per series."""
    sel = [s for s in ds.samples if s.benchmark == "selfish"
           and not s.name.lower().startswith("hist")]

    def order(name: str) -> tuple:
        low = name.lower()
        return (next((i for i, w in enumerate(_SELFISH_ORDER) if w in low), 99), name)

    names = sorted({s.name for s in sel}, key=order)
    units = {s.name: s.unit for s in sel}
    # selfish's params.mode says whether one rank looped alone or all ranks at once.
    stats = medians(sel, lambda s: ((ds.label(s.run), str(s.params.get("mode", "—"))), s.name))
    rows = [list(row) + [stats[(row, n)].median if (row, n) in stats else None for n in names]
            for row in sorted({k[0] for k in stats})]
    return Table("selfish", "OS noise, selfish detour (CNW §4.2.1)",
                 "Medians over repetitions of each run's figures (a run's ranks pooled by "
                 "their median).",
                 ["series", "loop"] + [f"{n} ({units[n]})" if units[n] else n for n in names],
                 rows, empty_reason=None if rows else "no runs of selfish")


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
        for sk in _dict(c.get("summary")).get("skipped", []) or []:
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


def placement_tables(ds: Dataset) -> tuple[Table, Table]:
    """Where the two vCPUs sat during each run (MACHINE.md: the placement problem)."""
    counts: dict[str, Counter] = defaultdict(Counter)
    for r in ds.runs:
        counts[f"{r.config} {r.mpi} {r.mode}"][r.placement] += 1
    states = sorted({p for c in counts.values() for p in c})
    summary = [[lab] + [counts[lab].get(p, 0) for p in states] for lab in sorted(counts)]

    def probe(p: Any) -> str:
        if not isinstance(p, dict):
            return "—"
        v = p.get("value")
        return f"{fmt(v)} ns {p.get('placement', '?')}" if isinstance(v, (int, float)) \
            else str(p.get("placement", "—"))

    runs = [[r.id, r.benchmark + (f"/{r.params['test']}" if "test" in r.params else ""),
             r.config, r.mpi, r.mode, r.ranks, r.repetition, r.status, r.placement,
             probe(r.probe_before), probe(r.probe_after),
             "yes" if r.id in ds.kept else "no"] for r in ds.runs]
    return (Table("placement", "Runs per placement state",
                  "Count of runs (all statuses) by the placement the core-to-core probe saw "
                  "around them.", ["series"] + states, summary,
                  empty_reason=None if summary else "no runs"),
            Table("runs", "Every run", "probe = one-way cache-line transfer between the two "
                  "cores before and after the run; 'used' says whether the placement policy and "
                  "status kept the run.",
                  ["run", "benchmark", "config", "mpi", "mode", "np", "rep", "status",
                   "placement", "probe before", "probe after", "used"], runs))


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
