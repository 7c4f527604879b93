"""The report's tables: the paper's (headline, Pallas, SN vs VN, configuration ratios, small vs
large pages, effective core utilization, variability, noise) and the placement record, each a
Table computed from a Dataset (data.py) and nothing else.
"""
from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

from ..launcher.stats import fmt_bytes
from . import best
from .headline import is_headline
from .data import (HPCC_KEYS, LARGE_PAGES, NOISE_PARAMS, NOT_WORK, SMALL_PAGES, Dataset, Sample, Table,
                   asked_pages, at_default_pages, cov, effective_utilization, fmt, improvement_pct,
                   json_dict, medians, per_node, per_run_values, performance, summarize)

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


def best_peer_table(ds: Dataset, reference: str = "lwk") -> Table:
    """Issue 29: per headline metric, `reference` at its best over the MPIs against the best peer
    across every installed MPI (which configuration and MPI won) and the best of Debian's two."""
    heads = [s for s in ds.samples if is_headline(s.benchmark, s.bench, s.name, s.size, s.params)]
    runs: dict[tuple, dict[tuple[str, str], dict[tuple, list[float]]]] = \
        defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    first: dict[tuple, Sample] = {}
    for s in heads:
        key = (s.what(), s.run.mode)
        first.setdefault(key, s)
        runs[key][(s.run.config, s.run.mpi)][(s.run.campaign_id, s.run.repetition, s.run.id)].append(s.value)
    under_yod = {r.config for r in ds.runs if r.via_yod}
    rows = []
    order = (lambda k: (first[k].benchmark, first[k].test or "", first[k].name,
                        first[k].size if first[k].size is not None else -1, _metric_label(first[k]), k[1]))
    for key in sorted(runs, key=order):
        if not any(c == reference for c, _ in runs[key]):
            continue
        s = first[key]
        per_run = {ser: {k: statistics.median(v) for k, v in vals.items()}
                   for ser, vals in runs[key].items()}
        b = best.pick(per_run, s.better, reference, lambda c: c not in under_yod)
        if b.reference is None or b.peer is None:
            continue
        winner = {"reference": reference, "peer": b.peer.name, "same": "same", "?": "?"}[b.verdict]
        rng = b.reference_range
        rows.append([_metric_label(s), key[1], s.unit, s.better, b.reference.mpi, b.reference.median,
                     f"{fmt(rng[0])}–{fmt(rng[1])}" if rng and rng[0] != rng[1] else "—",
                     b.debian.name if b.debian else "—", b.debian.median if b.debian else None,
                     b.peer.name, b.peer.median, b.ratio,
                     f"{fmt(b.ratio_min)}–{fmt(b.ratio_max)}" if b.ratio_min is not None else "—",
                     f"{b.reference.n}/{b.peer.n}", winner])
    mpis = sorted({r.mpi for r in ds.runs if r.status == "ok" and not r.via_yod})
    notes = [f"peer MPIs measured: {', '.join(mpis) or 'none'}; peer configurations: "
             f"{', '.join(sorted({r.config for r in ds.runs if not r.via_yod})) or 'none'}"]
    return Table("best-peer", f"{reference} against the best peer across every installed MPI",
                 best.CAPTION.format(ref=reference),
                 ["metric", "mode", "unit", "better", f"{reference} MPI", reference,
                  f"{reference} over its MPIs", "best Debian peer", "Debian value", "best peer (all MPIs)", "peer value",
                  f"{reference}/best", "spread", "n", "winner"], rows, notes,
                 None if rows else f"no headline metric measured by both {reference} and a peer")


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


def nbc_overlap_table(ds: Dataset) -> Table:
    """IMB-NBC's overlap of the nonblocking collectives (imb --overlap), beside their t_avg in the
    Pallas tables: how much of the call's time rank 0 spends computing, per configuration."""
    ov = [s for s in ds.samples if s.test and s.name == "overlap"]
    if not ov:
        return Table("nbc-overlap", "IMB-NBC overlap", "", [], [],
                     empty_reason="no runs of imb Iallreduce/Ialltoall with --overlap")
    headers, rows = matrix(ov, lambda s: (s.test, s.size if s.size is not None else "—",
                                          str(s.params.get("computing", "?"))),
                           ["test", "bytes", "computing"], lambda s: ds.label(s.run))
    return Table("nbc-overlap", "IMB-NBC overlap (%), higher is better",
                 "Medians over repetitions. Rank 0 computes for the call's own time (t_pure) between the "
                 "start and the wait; `one`: only rank 0 computes and its node mates wait (they may do its "
                 "share), `all`: every rank computes (IMB-NBC's setting).", headers, rows)


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
def _got_pages(s: Sample) -> str | None:
    """The page kind the measured memory really got: the benchmark's own arrays when it
    allocated them itself (its metric's params.pages), else the run's yod heap; None if no
    record says."""
    own = (s.own_pages or "").lower()
    if own in SMALL_PAGES or own in LARGE_PAGES:
        return own
    return s.run.heap_pages


def _pages(s: Sample) -> tuple[str | None, str]:
    """(small | large | None, why not counted): a sample counts as small or large only when the
    record of what it got agrees with what it asked for.  A yod run at its default policy counts
    as large when its heap got 2 MiB pages (Catamount's default, the paper's "large")."""
    asked, got = asked_pages(s), _got_pages(s)
    kind = None if got is None else "small" if got in SMALL_PAGES else "large"
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
            rejected[key(s)][s.run.id] = (asked_pages(s) != "default",
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
        summary = json_dict(c.get("summary")).get("pages")
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


# Benchmarks that are real applications rather than bobcat's own small programs.
APPLICATIONS = frozenset({"hpcc"})


def account_table(ds: Dataset, top: int = 3) -> Table:
    """How much of each benchmark's on-node MPI traffic bobcat carried (yod --stats, per run in
    the accounts table), and what went to the real MPI instead."""
    groups: dict[tuple, list] = defaultdict(list)
    for r in ds.runs:
        if r.status == "ok" and r.account is not None:
            what = r.benchmark + (f"/{r.params['test']}" if "test" in r.params else "") + \
                (" (application)" if r.benchmark in APPLICATIONS else "")
            groups[(what, r.config, r.mpi, r.mode)].append(r.account)

    def share(part: int, whole: int) -> str:
        # Rounded down, so 100.0 % means every call, not 99.97 %.
        return f"{math.floor(1000 * part / whole) / 10:.1f} %" if whole else "—"

    rows = []
    for key in sorted(groups):
        accts = groups[key]
        total = {k: sum(int(a.get(k) or 0) for a in accts)
                 for k in ("on_node_calls", "on_node_bytes", "bobcat_calls", "bobcat_bytes")}
        missed: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        why: dict[str, Counter] = defaultdict(Counter)
        for a in accts:
            for m in a.get("top_missed") or []:
                if isinstance(m, dict) and m.get("routine"):
                    missed[m["routine"]][0] += int(m.get("calls") or 0)
                    missed[m["routine"]][1] += int(m.get("bytes") or 0)
                    why[m["routine"]].update({k: int(v) for k, v in (m.get("why") or {}).items()})
        worst = sorted(missed.items(), key=lambda kv: (kv[1][1], kv[1][0]), reverse=True)[:top]

        def reasons(name: str) -> str:
            text = ", ".join(f"{k} {v}" for k, v in why[name].most_common(2))
            return f" ({text})" if text else ""
        rows.append([*key, len(accts), total["on_node_calls"],
                     share(total["bobcat_calls"], total["on_node_calls"]),
                     fmt_bytes(total["on_node_bytes"]),
                     share(total["bobcat_bytes"], total["on_node_bytes"]),
                     "; ".join(f"{name} {c} calls, {fmt_bytes(b)}{reasons(name)}"
                               for name, (c, b) in worst)
                     or "none"])
    why = None if rows else (
        "no run recorded an account: runs under yod record one (campaign key account), runs of "
        "bare MPI peers never do, and databases before schema version 2 hold none")
    return Table(
        "account", "bobcat's share of on-node MPI traffic (yod --stats)",
        "Per benchmark and configuration: the MPI calls and bytes between ranks of one node that "
        "moved data or synchronised ranks, the share of them bobcat's own paths carried, and the "
        "routines that most went to the real MPI (by bytes; summed over the counted runs) with "
        "bobcat's main reasons for handing them over. Shares are rounded down. "
        "Counted in runs recorded for the account (docs/evaluation.md), whose timings are not "
        "used elsewhere when the campaign runs them separately; only yod configurations have one.",
        ["benchmark", "config", "mpi", "mode", "runs", "on-node calls", "on bobcat's path (calls)",
         "on-node bytes", "on bobcat's path (bytes)", f"to the real MPI (top {top})"],
        rows, empty_reason=why)
