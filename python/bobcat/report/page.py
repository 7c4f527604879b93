"""`bobcat report`: render the results database as one static HTML page with figures.

render() reads the database (never writes it), draws the figures into out_dir/figures (PNG and
SVG) and writes out_dir/index.html: inline CSS, no scripts, no external resources, so the page
opens on a machine without network. What each part shows is described in docs/report.md.
"""
from __future__ import annotations

import datetime as _dt
import html
import json
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

from . import plots
from .data import NOISE_PARAMS, Dataset, Table, at_default_pages, fmt, load
from .shmem_tables import shmem_table
from .tables import (account_table, best_peer_table, config_ratios, headline, matrix, nbc_overlap_table, pages_table, pallas_tables,
                     placement_tables, selfish_table, sn_vs_vn, utilization_table, variability)

_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 1200px; padding: 1em 2em;
       color: #1b1b1b; }
h1 { font-size: 1.6em; margin-bottom: .2em; } h2 { border-bottom: 2px solid #ccd; margin-top: 2em; }
h3 { margin-top: 1.4em; }
table { border-collapse: collapse; margin: .5em 0 1em; font-size: 12.5px; }
th, td { border: 1px solid #ccd; padding: 2px 7px; text-align: right; vertical-align: top; }
th { background: #eef0f6; } td:first-child, th:first-child { text-align: left; }
tr:nth-child(even) td { background: #fafafc; }
figure { margin: 1em 0 2em; } figure img { max-width: 100%; border: 1px solid #dde; }
figcaption { font-size: 13px; color: #333; margin-top: .3em; }
.missing { color: #8a4b00; } .note { color: #555; font-size: 12.5px; }
.formula { font-family: ui-monospace, monospace; background: #f4f4f8; padding: .4em .8em;
           display: inline-block; }
nav ol { columns: 2; } details { margin: .5em 0 1em; } summary { cursor: pointer; }
"""


def _esc(v: Any) -> str:
    return html.escape(fmt(v) if not isinstance(v, str) else v)


def _table(t: Table, level: int = 3) -> str:
    parts = [f'<h{level} id="{t.id}">{_esc(t.title)}</h{level}>']
    if t.empty_reason:
        parts.append(f'<p class="missing">not measured (why: {_esc(t.empty_reason)})</p>')
        return "\n".join(parts)
    if t.caption:
        parts.append(f'<p class="note">{_esc(t.caption)}</p>')
    parts.append('<table><thead><tr>' + "".join(f"<th>{_esc(h)}</th>" for h in t.headers)
                 + "</tr></thead><tbody>")
    for row in t.rows:
        parts.append("<tr>" + "".join(f"<td>{_esc(c)}</td>" for c in row) + "</tr>")
    parts.append("</tbody></table>")
    parts += [f'<p class="note">{_esc(n)}</p>' for n in t.notes]
    return "\n".join(parts)


def _figure(f: plots.FigureResult) -> str:
    head = f"Figure {f.number}"
    if f.missing:
        return (f'<figure id="fig{f.number}"><figcaption><b>{head}. {_esc(f.title)}</b> '
                f'({_esc(f.source)}): <span class="missing">not measured (why: '
                f'{_esc(f.missing)})</span></figcaption></figure>')
    svg, png = _esc(f.svg or ""), _esc(f.png or "")
    return (f'<figure id="fig{f.number}"><a href="{svg}"><img src="{png}"'
            f' alt="{head}: {_esc(f.title)}"></a><figcaption><b>{head}. {_esc(f.title)}.</b> '
            f'{_esc(f.caption)} <i>Reproduces {_esc(f.source)}.</i> '
            f'<a href="{svg}">SVG</a></figcaption></figure>')


def _machine(ds: Dataset) -> str:
    machines = [json.dumps(r.machine, sort_keys=True) for r in ds.runs if r.machine]
    if not machines:
        return '<p class="missing">not recorded (why: no run carries machine facts)</p>'
    common = json.loads(Counter(machines).most_common(1)[0][0])
    rows = [[k, v if isinstance(v, str) else json.dumps(v)] for k, v in sorted(common.items())]
    out = [_table(Table("machine-facts", "Facts of the machine most runs ran on",
                        f"{len(set(machines))} distinct fact sets over {len(machines)} runs.",
                        ["fact", "value"], rows), 3)]
    varying = []
    for key in sorted({k for m in machines for k in json.loads(m)}):
        values = sorted({json.dumps(json.loads(m).get(key)) for m in machines})
        if len(values) > 1:
            varying.append([key, ", ".join(values)])
    if varying:
        out.append(_table(Table("machine-varying", "Facts that differ between runs", "",
                                ["fact", "values seen"], varying), 3))
    return "\n".join(out)


def _overview(ds: Dataset, db_path: Path) -> str:
    status = Counter(r.status for r in ds.runs)
    policy = {"all": "every run is used; each run's placement is listed below",
              "exclude-outliers": f"only runs in the most common placement "
                                  f"({ds.dominant_placement}) are used",
              "separate": "medians are computed per placement state (series carry [placement])"
              }[ds.placements]
    rows = [["database", str(db_path)],
            ["schema version", ds.meta.get("schema_version", "—")],
            ["generated", _dt.datetime.now().isoformat(timespec="seconds")],
            ["campaigns", ", ".join(f"{c.get('name')} ({c.get('status')})"
                                    for c in ds.campaigns) or "—"],
            ["runs", ", ".join(f"{n} {s}" for s, n in sorted(status.items())) or "none"],
            ["runs used", f"{len(ds.kept)} (status ok"
                          + (", dominant placement" if ds.placements == "exclude-outliers" else "")
                          + ")"],
            ["metric values used", str(len(ds.samples))],
            ["placement policy", f"{ds.placements}: {policy}"],
            ["statistics", "medians over repetitions; figure whiskers are min–max"]]
    return _table(Table("overview", "This report", "", ["", ""], rows), 2)


def _other_measurements(ds: Dataset, shown: set[str]) -> str:
    """Medians of every benchmark the figures and tables above do not already cover, so that no
    measured number is hidden from the reader."""
    rest = [s for s in ds.samples if s.benchmark not in shown and s.test is None]
    if not rest:
        return '<p class="note">every measured benchmark is shown above.</p>'
    out = []
    for bench in sorted({s.benchmark for s in rest}):
        mine = [s for s in rest if s.benchmark == bench]

        def row(s: Any) -> tuple:
            extra = ", ".join(f"{k}={v}" for k, v in sorted(s.params.items())
                              if k not in NOISE_PARAMS and not isinstance(v, (dict, list)))
            if not at_default_pages(s):   # a page size the run asked for: its own row
                extra = ", ".join(x for x in (extra, f"pages={s.run.params['pages']}") if x)
            return (s.name, s.unit, s.better, s.size if s.size is not None else "—", s.ranks,
                    extra or "—")

        headers, body = matrix(mine, row, ["metric", "unit", "better", "bytes", "np",
                                               "params"], lambda s: ds.label(s.run))
        out.append(_table(Table(f"other-{bench}", f"{bench}", "Medians over repetitions.",
                                headers, body), 3))
    return "\n".join(out)


def render(db_path: str | os.PathLike, out_dir: str | os.PathLike, *,
           placements: str = "all") -> Path:
    """Render the report of the database at db_path into out_dir; returns out_dir/index.html.

    placements: "all" (every ok run, placement shown), "exclude-outliers" (only runs in the most
    common placement state) or "separate" (medians per placement state).
    """
    t0 = time.monotonic()
    db = Path(db_path)
    if not db.is_file():
        raise FileNotFoundError(f"results database {db} does not exist (run a campaign first)")
    ds = load(db, placements)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    figs = plots.all_figures(ds, out / "figures")
    by_num = {f.number: f for f in figs}

    ref = plots.reference_config(ds) or "lwk"
    cov_summary, cov_detail = variability(ds)
    place_summary, every_run = placement_tables(ds)
    pallas = pallas_tables(ds)

    body: list[str] = [
        "<h1>bobcat evaluation report</h1>",
        '<p class="note">Catamount lightweight-kernel model (lwk) against stock Linux MPI '
        "configurations on this machine, after Larkin &amp; Kuehn (CUG 2008) and Kelly et al. "
        "(SAND2008-4039).</p>",
        '<nav><ol><li><a href="#headline">Headline numbers</a></li>'
        '<li><a href="#best-peer">Best peer across MPIs</a></li>'
        '<li><a href="#machine">Machine</a></li><li><a href="#figures">Figures 1–13</a></li>'
        '<li><a href="#shmem-sec">OpenSHMEM</a></li>'
        '<li><a href="#account">bobcat\'s share of on-node traffic</a></li>'
        '<li><a href="#cnw">CNW tables</a></li><li><a href="#variability">Variability</a></li>'
        '<li><a href="#placement-sec">Placement</a></li>'
        '<li><a href="#other">Other measurements</a></li></ol></nav>',
        _overview(ds, db),
        _table(headline(ds), 2),
        _table(best_peer_table(ds, ref), 2),
        '<h2 id="machine">Machine</h2>', _machine(ds),
        '<h2 id="figures">Figures of Larkin &amp; Kuehn</h2>',
        '<p class="note">Series are configuration, MPI and mode (SN one rank per node, VN2 two). '
        f'Ratio maps compare every configuration B against A = {_esc(ref)}.</p>',
    ]
    body += [_figure(by_num[str(n)]) for n in range(1, 14)]
    body += ["<h3>Extra figures</h3>", _figure(by_num["S1"])]
    body += ['<h3 id="shmem-sec">OpenSHMEM on one node (SMARTMAP slides: "Implementing Cray '
             'SHMEM", "Cray SHMEM Put Latency")</h3>',
             '<p class="note">On a node, SMARTMAP makes <code>shmem_putmem</code> a memcpy to '
             'the other PE\'s address (the slides\' <code>remote_address(core, target)</code>). '
             "bobcat's OpenSHMEM does that under lwk; the peer is Debian's Open MPI oshmem running "
             "the same benchmark source (bench/shmem/shmem_bench.c).</p>",
             _figure(by_num["S3"]), _table(shmem_table(ds), 4)]

    body += ['<h2 id="account-sec">Which path the on-node traffic took</h2>', _table(account_table(ds))]
    body += ['<h2 id="cnw">Tables of the CNW report</h2>', _table(sn_vs_vn(ds))]
    body += [_table(t) for t in config_ratios(ds, ref)]
    body.append(_table(pages_table(ds)))
    body.append('<h3 id="pallas">Pallas (IMB) tables (CNW §5.2.1)</h3>')
    body += [_table(t, 4) for t in pallas] or [
        '<p class="missing">not measured (why: no runs of imb)</p>']
    body.append(_table(nbc_overlap_table(ds), 1))
    body += [_table(selfish_table(ds)), _figure(by_num["S2"])]
    body.append('<h3 id="util-formula">Effective core utilization</h3>'
                '<p><span class="formula">u = T<sub>SN</sub> / T<sub>VNn</sub> (times) or '
                'R<sub>VNn</sub> / R<sub>SN</sub> (rates); cores effectively used = n × u'
                '</span></p><p class="note">CNW §4.1.3: "a test case runs in one hour on all '
                'four cores … in .85 hours on a single core of four Opterons (.85Q=S) … the '
                'quad-core test case is effectively using 3.4 of the 4 processors (.85 × 4 = '
                '3.4)".</p>')
    body.append(_table(utilization_table(ds), 4))
    body += ['<h2 id="variability">Run-to-run variability</h2>', _table(cov_summary),
             _table(cov_detail)]
    body += ['<h2 id="placement-sec">Placement of the runs</h2>',
             f'<p class="note">Most common placement: {_esc(ds.dominant_placement or "—")}. '
             "smt: both vCPUs on one core's SMT siblings (compute at half speed); core: separate "
             "cores; chip: different chips; mixed: the probe disagreed before and after.</p>",
             _table(place_summary),
             "<details><summary>Every run (" + str(len(ds.runs)) + ")</summary>"
             + _table(every_run) + "</details>"]
    shown = {"imb", "selfish", "shmem"}
    body += ['<h2 id="other">Other measurements</h2>',
             "<details open><summary>Medians of the benchmarks not shown above</summary>"
             + _other_measurements(ds, shown) + "</details>",
             f'<p class="note">Rendered in {time.monotonic() - t0:.1f} s.</p>']

    page = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<title>bobcat evaluation report</title>"
            f"<style>{_CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")
    index = out / "index.html"
    index.write_text(page, encoding="utf-8")
    return index
