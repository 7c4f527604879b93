"""The report's figures: Larkin & Kuehn figures 1–13 and the extras, drawn with matplotlib (Agg).

Each function takes the Dataset and the figures folder, writes <key>.png and <key>.svg, and
returns a FigureResult; when the data for a figure is absent it writes nothing and returns the
reason instead, so the page can say "not measured" rather than draw an empty or faked plot.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display on compute nodes; must precede the pyplot import
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.colors import TwoSlopeNorm  # noqa: E402

from .data import Dataset, Sample, at_default_pages, medians  # noqa: E402
from .shmem_tables import shmem_samples, shmem_series, shmem_skips  # noqa: E402

plt.rcParams.update({"font.size": 9, "axes.grid": True, "grid.alpha": 0.3,
                     "svg.fonttype": "none", "figure.dpi": 100})


@dataclass
class FigureResult:
    number: str            # "1".."13" for the paper's figures, "S1".. for the extras
    title: str
    caption: str
    source: str            # which figure of which paper it reproduces
    png: str | None = None  # paths relative to the report folder
    svg: str | None = None
    missing: str | None = None


def _save(fig: plt.Figure, out: Path, key: str) -> tuple[str, str]:
    fig.tight_layout()
    fig.savefig(out / f"{key}.png", dpi=110)
    fig.savefig(out / f"{key}.svg")
    plt.close(fig)
    return f"{out.name}/{key}.png", f"{out.name}/{key}.svg"


def _palette(ds: Dataset) -> dict[str, tuple]:
    """One colour per series for the whole report, so a series looks the same in every panel
    (keyed by full label and, for the per-mode panels, by the label without the mode)."""
    cmap = plt.get_cmap("tab20")
    out: dict[str, tuple] = {}
    for names in ({ds.label(r) for r in ds.runs}, {_no_mode(ds, r) for r in ds.runs}):
        out.update({n: cmap(i % cmap.N) for i, n in enumerate(sorted(names))})
    return out


def _no_mode(ds: Dataset, run) -> str:
    return f"{run.config} {run.mpi}" + (f" [{run.placement}]" if ds.placements == "separate"
                                        else "")


def _errorbar(ax: plt.Axes, xs: list[float], stats: list, label: str, dodge: float = 1.0,
              color: tuple | None = None) -> None:
    """Median with min–max whiskers; `dodge` nudges x so coincident series stay visible."""
    x = [v * dodge for v in xs]
    y = [s.median for s in stats]
    lo = [s.median - s.lo for s in stats]
    hi = [s.hi - s.median for s in stats]
    ax.errorbar(x, y, yerr=[lo, hi], marker="o", ms=4, capsize=3, lw=1.2, label=label,
                color=color)


def _dodges(n: int) -> list[float]:
    return [2 ** (0.05 * (i - (n - 1) / 2)) for i in range(n)]


def _size_ticks(ax: plt.Axes, sizes: set[int]) -> None:
    """Label the measured message sizes (at most ~10 of them) instead of every power of two."""
    ticks = sorted(sizes)
    step = max(1, math.ceil(len(ticks) / 10))
    ticks = ticks[::step]
    ax.set_xticks(ticks, [_size_label(b) for b in ticks])
    ax.minorticks_off()


def _rank_ticks(ax: plt.Axes, ranks: set[int]) -> None:
    ax.set_xticks(sorted(ranks), [str(r) for r in sorted(ranks)])
    ax.minorticks_off()


def _legend(ax: plt.Axes) -> None:
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="best", framealpha=0.8)


# ---- figures 1–7: HPCC metrics against rank count ----------------------------------------------

def _order(s: Sample) -> str | None:
    text = str(s.params.get("order", "")).lower()
    return "random" if "rand" in text else "natural" if "nat" in text else None


@dataclass
class _LineSpec:
    number: str
    title: str
    better: str
    hpcc: str
    bench: str
    pick: Callable[[Sample], bool]
    size: str = "any"      # "min" or "max": which message size of a swept metric to show


def _named(*names: str) -> Callable[[Sample], bool]:
    return lambda s: s.name in names


_LINES = [
    _LineSpec("1", "HPCC PTRANS", "higher", "PTRANS_GBs", "ptrans", _named("bandwidth")),
    _LineSpec("2", "HPCC MPI RandomAccess", "higher", "MPIRandomAccess_GUPs", "gups",
              lambda s: s.name == "gups" and s.params.get("mode") == "mpi"),
    _LineSpec("3", "HPCC MPI-FFT", "higher", "MPIFFT_Gflops", "fft", _named("gflops")),
    _LineSpec("4", "HPCC Random Ring Latency", "lower", "RandomlyOrderedRingLatency_usec",
              "ring", lambda s: _order(s) == "random" and s.name == "lat_avg", "min"),
    _LineSpec("5", "HPCC Naturally Ordered Latency", "lower", "NaturallyOrderedRingLatency_usec",
              "ring", lambda s: _order(s) == "natural" and s.name == "lat_avg", "min"),
    _LineSpec("6", "HPCC Random Ring Bandwidth", "higher",
              "RandomlyOrderedRingBandwidth_GBytes", "ring",
              lambda s: _order(s) == "random" and s.name == "bw_avg", "max"),
    _LineSpec("7", "HPCC Naturally Ordered Bandwidth", "higher",
              "NaturallyOrderedRingBandwidth_GBytes", "ring",
              lambda s: _order(s) == "natural" and s.name == "bw_avg", "max"),
]


def _line_figure(ds: Dataset, out: Path, spec: _LineSpec) -> FigureResult:
    res = FigureResult(spec.number, spec.title,
                       f"{spec.title} against rank count, {spec.better} is better. Median over "
                       "repetitions, whiskers min–max; series are offset slightly along x so that "
                       "series at the same rank count stay visible.",
                       f"Larkin & Kuehn 2008, Figure {spec.number}")
    sources = []
    # Runs that asked for a page size (lwk on 4 KiB pages) belong to the pages table, not here.
    hp = ds.select(lambda s: s.benchmark == "hpcc" and s.name == spec.hpcc and s.ranks > 0
                   and at_default_pages(s))
    if hp:
        sources.append((f"HPCC {spec.hpcc}", hp))
    own = ds.select(lambda s: s.benchmark == spec.bench and s.test is None and s.ranks > 0
                    and spec.pick(s) and at_default_pages(s))
    if own and spec.size != "any" and any(s.size is not None for s in own):
        sizes = {s.size for s in own if s.size is not None}
        want = min(sizes) if spec.size == "min" else max(sizes)
        own = [s for s in own if s.size == want]
        sources.append((f"bobcat {spec.bench} ({want} B)", own))
    elif own:
        sources.append((f"bobcat {spec.bench}", own))
    if not sources:
        res.missing = (f"no runs of hpcc with metric {spec.hpcc} and no matching metric from "
                       f"benchmark {spec.bench}")
        return res
    colors = _palette(ds)
    fig, axes = plt.subplots(1, len(sources), figsize=(6.2 * len(sources), 3.8), squeeze=False)
    for ax, (title, samples) in zip(axes[0], sources):
        names = sorted({s.name for s in samples})
        stats = medians(samples, lambda s: (ds.label(s.run) + (f" {s.name}" if len(names) > 1
                                                                 else ""), s.ranks))
        labels = sorted({k[0] for k in stats})
        for lab, dodge in zip(labels, _dodges(len(labels))):
            xs = sorted(k[1] for k in stats if k[0] == lab)
            _errorbar(ax, xs, [stats[(lab, x)] for x in xs], lab, dodge,
                      None if len(names) > 1 else colors.get(lab))
        ax.set_xscale("log", base=2)
        _rank_ticks(ax, {k[1] for k in stats})
        ax.set_xlabel("MPI ranks (processor cores)")
        ax.set_ylabel(samples[0].unit or names[0])
        ax.set_title(f"{title} — {spec.better} is better")
        _legend(ax)
    res.png, res.svg = _save(fig, out, f"fig{int(spec.number):02d}")
    return res


# ---- figures 8–9: IMB PingPong and Barrier ---------------------------------------------------

def pingpong_figure(ds: Dataset, out: Path) -> FigureResult:
    res = FigureResult("8", "IMB Ping Pong latency, single core (SN) and dual core (VN2)",
                       "IMB PingPong t_avg (one-way time, µs) against message size, one panel "
                       "per mode (SN = one rank per node, the paper's single core; VN2 = two, "
                       "dual core); lower is better. Median over repetitions, whiskers min–max.",
                       "Larkin & Kuehn 2008, Figure 8")
    pp = ds.select(lambda s: s.test == "PingPong" and s.name == "t_avg" and s.size is not None)
    if not pp:
        res.missing = "no runs of imb PingPong with t_avg"
        return res
    colors = _palette(ds)
    modes = sorted({s.run.mode for s in pp})
    fig, axes = plt.subplots(1, len(modes), figsize=(5.6 * len(modes), 3.8), squeeze=False,
                             sharey=True)
    for ax, mode in zip(axes[0], modes):
        mine = [s for s in pp if s.run.mode == mode]
        np_min = min(s.ranks for s in mine)
        stats = medians([s for s in mine if s.ranks == np_min],
                        lambda s: (_no_mode(ds, s.run), s.size))
        for lab in sorted({k[0] for k in stats}):
            xs = sorted(k[1] for k in stats if k[0] == lab)
            _errorbar(ax, xs, [stats[(lab, x)] for x in xs], lab, color=colors.get(lab))
        ax.set_xscale("symlog", base=2, linthresh=1)
        _size_ticks(ax, {k[1] for k in stats})
        ax.set_yscale("log")
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("t_avg (µs)")
        ax.set_title(f"{mode}: {'single' if mode == 'SN' else 'multi'}-core per node, "
                     f"np {np_min} — lower is better")
        _legend(ax)
    res.png, res.svg = _save(fig, out, "fig08")
    return res


def barrier_figure(ds: Dataset, out: Path) -> FigureResult:
    res = FigureResult("9", "IMB Barrier, linear and log scale",
                       "IMB Barrier t_avg (µs) against rank count; left linear/linear, right "
                       "log/log as in the paper's top and bottom panels; lower is better. Median "
                       "over repetitions, whiskers min–max.", "Larkin & Kuehn 2008, Figure 9")
    bar = ds.select(lambda s: s.test == "Barrier" and s.name == "t_avg" and s.ranks > 0)
    if not bar:
        res.missing = "no runs of imb Barrier with t_avg"
        return res
    stats = medians(bar, lambda s: (ds.label(s.run), s.ranks))
    labels = sorted({k[0] for k in stats})
    colors = _palette(ds)
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for ax, log in zip(axes, (False, True)):
        for lab, dodge in zip(labels, _dodges(len(labels)) if log else [1.0] * len(labels)):
            xs = sorted(k[1] for k in stats if k[0] == lab)
            _errorbar(ax, xs, [stats[(lab, x)] for x in xs], lab, dodge, colors.get(lab))
        if log:
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
        _rank_ticks(ax, {k[1] for k in stats})
        ax.set_xlabel("MPI ranks (processor cores)")
        ax.set_ylabel("t_avg (µs)")
        ax.set_title(f"Barrier ({'log/log' if log else 'linear/linear'}) — lower is better")
        _legend(ax)
    res.png, res.svg = _save(fig, out, "fig09")
    return res


# ---- figures 10–13: ratio heat maps ---------------------------------------------------------

_HEAT = [("10", "Sendrecv", "IMB SendRecv"), ("11", "Bcast", "IMB Broadcast"),
         ("12", "Allreduce", "IMB Allreduce"), ("13", "Alltoall", "IMB AlltoAll")]


def ratio_grid(ds: Dataset, test: str, reference: str, other: str, mpi: str, mode: str
               ) -> tuple[list[int], list[int], np.ndarray]:
    """Performance of `other` over performance of `reference` = t(reference) / t(other), per
    (ranks, bytes) cell of IMB `test`; NaN where either side was not measured."""
    data = ds.select(lambda s: s.test == test and s.name == "t_avg" and s.size is not None
                     and s.run.mpi == mpi and s.run.mode == mode
                     and s.run.config in (reference, other))
    stats = medians(data, lambda s: (s.run.config, s.ranks, s.size))
    ranks = sorted({k[1] for k in stats})
    sizes = sorted({k[2] for k in stats})
    grid = np.full((len(ranks), len(sizes)), np.nan)
    for i, r in enumerate(ranks):
        for j, b in enumerate(sizes):
            a, o = stats.get((reference, r, b)), stats.get((other, r, b))
            if a and o and o.median > 0:
                grid[i, j] = a.median / o.median
    keep_r = [i for i in range(len(ranks)) if not np.all(np.isnan(grid[i]))]
    keep_s = [j for j in range(len(sizes)) if not np.all(np.isnan(grid[:, j]))]
    return ([ranks[i] for i in keep_r], [sizes[j] for j in keep_s],
            grid[np.ix_(keep_r, keep_s)] if keep_r and keep_s else np.empty((0, 0)))


def reference_config(ds: Dataset) -> str | None:
    configs = sorted({s.run.config for s in ds.samples})
    if not configs:
        return None
    return "lwk" if "lwk" in configs else configs[0]


def _size_label(b: int) -> str:
    for unit, shift in (("M", 20), ("K", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return f"{b >> shift}{unit}"
    return str(b)


def heatmap_figure(ds: Dataset, out: Path, number: str, test: str, title: str) -> FigureResult:
    ref = reference_config(ds)
    res = FigureResult(number, f"{title}: performance ratio, configuration B over A = {ref}",
                       f"{title}: performance of configuration B over performance of "
                       f"configuration A = {ref}, i.e. t_avg(A) / t_avg(B), over rank count × "
                       f"message size, from medians over repetitions. Above 1.0 (blue) B is "
                       f"faster — higher is better for B; below 1.0 (red) A = {ref} is faster. "
                       "The paper's surfaces are CLE over Catamount; here A plays Catamount.",
                       f"Larkin & Kuehn 2008, Figure {number}")
    data = ds.select(lambda s: s.test == test and s.name == "t_avg" and s.size is not None)
    if not data:
        res.missing = f"no runs of imb {test} with t_avg"
        return res
    panels = []
    for other in sorted({s.run.config for s in data} - {ref}):
        for mpi, mode in sorted({(s.run.mpi, s.run.mode) for s in data}):
            ranks, sizes, grid = ratio_grid(ds, test, ref, other, mpi, mode)
            if grid.size:
                panels.append((other, mpi, mode, ranks, sizes, grid))
    if not panels:
        res.missing = (f"imb {test} was not measured in two configurations with the same MPI, "
                       f"mode, rank count and message size (needs {ref} and another)")
        return res
    ncols = min(2, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(6.4 * ncols, 0.6 + 2.6 * nrows),
                             squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, (other, mpi, mode, ranks, sizes, grid) in zip(axes.flat, panels):
        logs = np.log2(grid)
        span = max(0.2, float(np.nanmax(np.abs(logs))))
        im = ax.imshow(logs, cmap="RdBu", aspect="auto", origin="lower",
                       norm=TwoSlopeNorm(vcenter=0.0, vmin=-span, vmax=span))
        ax.grid(False)
        ax.set_xticks(range(len(sizes)), [_size_label(b) for b in sizes], rotation=60,
                      fontsize=7)
        ax.set_yticks(range(len(ranks)), [str(r) for r in ranks])
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("MPI ranks")
        ax.set_title(f"{other} / {ref}  ({mpi}, {mode})", fontsize=9)
        if grid.size <= 160:
            for (i, j), v in np.ndenumerate(grid):
                if not np.isnan(v):
                    ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=6,
                            color="white" if abs(math.log2(v)) > 0.6 * span else "black")
        bar = fig.colorbar(im, ax=ax, fraction=0.05, pad=0.02)
        ticks = np.linspace(-span, span, 5)
        bar.set_ticks(ticks, labels=[f"{2 ** t:.2f}" for t in ticks])
        bar.set_label("t(A)/t(B)", fontsize=7)
    res.png, res.svg = _save(fig, out, f"fig{int(number):02d}")
    return res


# ---- extras ---------------------------------------------------------------------------------

def pingpong_bandwidth_figure(ds: Dataset, out: Path) -> FigureResult:
    res = FigureResult("S1", "IMB Ping Pong bandwidth",
                       "IMB PingPong bandwidth (MB/s = 10⁶ B/s) against message size, one panel "
                       "per mode; higher is better. Median over repetitions, whiskers min–max.",
                       "Larkin & Kuehn 2008 slides, slide 22 (not a figure of the paper)")
    bw = ds.select(lambda s: s.test == "PingPong" and s.name == "bandwidth"
                   and s.size is not None and s.size > 0)
    if not bw:
        res.missing = "no runs of imb PingPong with a bandwidth metric"
        return res
    colors = _palette(ds)
    modes = sorted({s.run.mode for s in bw})
    fig, axes = plt.subplots(1, len(modes), figsize=(5.6 * len(modes), 3.8), squeeze=False,
                             sharey=True)
    for ax, mode in zip(axes[0], modes):
        stats = medians([s for s in bw if s.run.mode == mode],
                        lambda s: (_no_mode(ds, s.run), s.size))
        for lab in sorted({k[0] for k in stats}):
            xs = sorted(k[1] for k in stats if k[0] == lab)
            _errorbar(ax, xs, [stats[(lab, x)] for x in xs], lab, color=colors.get(lab))
        ax.set_xscale("log", base=2)
        _size_ticks(ax, {k[1] for k in stats})
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel(bw[0].unit or "MB/s")
        ax.set_title(f"{mode} — higher is better")
        _legend(ax)
    res.png, res.svg = _save(fig, out, "figS1")
    return res


# selfish's histogram buckets are (lo_us, hi_us]; the report places each at its upper edge.
_BIN_KEYS = ("hi_us", "bin_us")


def _bin(s: Sample) -> float | None:
    for k in _BIN_KEYS:
        v = s.params.get(k)
        if isinstance(v, (int, float)):
            return float(v)
    return None


def noise_figure(ds: Dataset, out: Path) -> FigureResult:
    res = FigureResult("S2", "Selfish detour histogram",
                       "Number of detours (interruptions of a tight loop) by detour length, per "
                       "series: each bucket drawn up to its upper edge, a run's ranks pooled by "
                       "their median, median over repetitions; fewer and shorter is better.",
                       "Kelly et al. 2008 (CNW), §4.2.1 selfish figure")
    hist = ds.select(lambda s: s.benchmark == "selfish" and s.name.lower().startswith("hist")
                     and _bin(s) is not None)
    if not hist:
        res.missing = ("no runs of selfish" if not ds.select(lambda s: s.benchmark == "selfish")
                       else "the selfish runs carry no histogram metrics (hist with params.hi_us)")
        return res
    stats = medians(hist, lambda s: (ds.label(s.run) + (f" ({s.params['mode']})"
                                                        if "mode" in s.params else ""), _bin(s)))
    fig, ax = plt.subplots(figsize=(7, 3.8))
    for lab in sorted({k[0] for k in stats}):
        xs = sorted(k[1] for k in stats if k[0] == lab)
        ax.step(xs, [max(stats[(lab, x)].median, 0.5) for x in xs], where="pre", label=lab)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("detour length (µs)")
    ax.set_ylabel("detours per run")
    ax.set_title("Selfish detours — fewer and shorter is better")
    _legend(ax)
    res.png, res.svg = _save(fig, out, "figS2")
    return res


_SHMEM_LAT = (("put_latency", "put 8 B\none-way"), ("get_latency", "get 8 B\none-way"),
              ("fetch_add", "fetch_add"), ("fetch_add_contended", "fetch_add\ncontended"),
              ("barrier_all", "barrier_all"))


def shmem_figure(ds: Dataset, out: Path) -> FigureResult:
    res = FigureResult("S3", "OpenSHMEM on one node: bobcat over SMARTMAP vs Open MPI oshmem",
                       "Left: latency (ns, log scale) of an 8-byte put as seen by the other PE "
                       "(one-way), of an 8-byte store seen through blocking gets (one-way), "
                       "fetch_add (peer idle, and both PEs on one counter), barrier_all, "
                       "2 PEs; lower "
                       "is better. Right: shmem_putmem bandwidth (solid) against message size, "
                       "with memcpy of the same size on the same PE as the reference (dashed, "
                       "same colour); higher is better. Median over repetitions, whiskers "
                       "min–max. The slides plot Cray SHMEM put latency on "
                       "Catamount with SMARTMAP against the version without it; here bobcat's "
                       "OpenSHMEM over SMARTMAP (lwk) plays the first and Debian's Open MPI "
                       "oshmem (same source, /usr/bin/oshcc) the second.",
                       "Brightwell et al. 2009 (SMARTMAP slides), \"Cray SHMEM Put Latency\"")
    sh = shmem_samples(ds)
    if not sh:
        skips = shmem_skips(ds)
        res.missing = "no runs of shmem" + ("; skipped: " + "; ".join(skips) if skips else "")
        return res
    series = sorted({shmem_series(ds, s.run) for s in sh},
                    key=lambda x: (not x.endswith("(bobcat)"), x))
    cmap = plt.get_cmap("tab10")
    colors = {lab: cmap(i % cmap.N) for i, lab in enumerate(series)}
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11.5, 4.0))
    lat = medians([s for s in sh if s.name in dict(_SHMEM_LAT)],
                  lambda s: (shmem_series(ds, s.run), s.name))
    width = 0.8 / max(1, len(series))
    for i, lab in enumerate(series):
        xs, st = [], []
        for j, (name, _) in enumerate(_SHMEM_LAT):
            v = lat.get((lab, name))
            if v is not None and v.median > 0:
                xs.append(j + (i - (len(series) - 1) / 2) * width)
                st.append(v)
        if xs:
            ax1.errorbar(xs, [v.median for v in st],
                         yerr=[[v.median - max(v.lo, v.median * 1e-3) for v in st],
                               [v.hi - v.median for v in st]],
                         fmt="o", ms=5, capsize=3, color=colors[lab], label=lab)
    ax1.set_yscale("log")
    ax1.set_xticks(range(len(_SHMEM_LAT)), [t for _, t in _SHMEM_LAT])
    ax1.set_ylabel("ns")
    ax1.set_title("latency — lower is better")
    _legend(ax1)
    bw = medians([s for s in sh if s.name in ("put_bw", "memcpy_bw") and s.size],
                 lambda s: (shmem_series(ds, s.run), s.name, s.size))
    sizes: set[int] = set()
    for lab in series:
        for name, style, text in (("put_bw", "-", "put"), ("memcpy_bw", "--", "memcpy")):
            xs = sorted(k[2] for k in bw if k[0] == lab and k[1] == name)
            if not xs:
                continue
            sizes |= set(xs)
            st = [bw[(lab, name, x)] for x in xs]
            ax2.errorbar(xs, [v.median for v in st],
                         yerr=[[v.median - v.lo for v in st], [v.hi - v.median for v in st]],
                         marker="o" if name == "put_bw" else None, ms=4, capsize=3, lw=1.2,
                         ls=style, color=colors[lab], label=f"{lab} {text}")
    if sizes:
        ax2.set_xscale("log", base=2)
        _size_ticks(ax2, sizes)
    ax2.set_xlabel("message size (bytes)")
    ax2.set_ylabel("GB/s")
    ax2.set_title("put bandwidth, memcpy dashed — higher is better")
    _legend(ax2)
    res.png, res.svg = _save(fig, out, "figS3")
    return res


def all_figures(ds: Dataset, out: Path) -> list[FigureResult]:
    out.mkdir(parents=True, exist_ok=True)
    # A figure of an earlier rendering that is not measured now must not linger in the folder.
    for old in [*out.glob("fig*.png"), *out.glob("fig*.svg")]:
        old.unlink()
    figs = [_line_figure(ds, out, spec) for spec in _LINES]
    figs += [pingpong_figure(ds, out), barrier_figure(ds, out)]
    figs += [heatmap_figure(ds, out, n, test, title) for n, test, title in _HEAT]
    figs += [pingpong_bandwidth_figure(ds, out), noise_figure(ds, out), shmem_figure(ds, out)]
    return figs
