"""`bobcat`: the evaluation CLI (evaluate, run, list, compare, report, export, doctor).

Exit status: 0 success; 1 a run or campaign ran but something failed; 2 bad input (unknown
benchmark, configuration, mode or MPI, a malformed campaign or configuration file, a missing
MPI), reported before the database is opened for writing; 130 interrupted.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any, NoReturn

from rich.table import Table

from . import __version__, doctor, paths
from .console import FORMATS, CampaignProgress, Column, Output, crash_note, emit, plain_line
from .evaluation import campaign, configs, machine, runner
from .evaluation.store import DEFAULT_DB, Store, StoreError
from .report import export
from .report.compare import best_peers, compare
from .report.headline import is_headline

DEFAULT_OUT = Path("results") / "report"
# Full width, never truncated, when not writing to a terminal (console.py).
out = Output()
err = Output(stderr=True)


class UsageError(Exception):
    """Bad input: exit status 2."""


def _fail(msg: str) -> NoReturn:
    raise UsageError(msg)


def _load_configs(args: argparse.Namespace) -> configs.ConfigSet:
    return configs.load(Path(args.configs) if args.configs else None)


def _fmt(v: float | None) -> str:
    if v is None:
        return "-"
    if v == 0:
        return "0"
    a = abs(v)
    return f"{v:.4g}" if 1e-3 <= a < 1e6 else f"{v:.3e}"


# --- run ----------------------------------------------------------------------------------------

def cmd_run(args: argparse.Namespace) -> int:
    cs = _load_configs(args)
    spec = runner.RunSpec(benchmark=args.benchmark, config=args.config, mpi=args.mpi,
                          mode=args.mode, ranks=args.ranks, args=list(args.bench_args),
                          params=dict(args.param or {}), timeout=args.timeout,
                          pages="small" if args.pages == "small" else None)
    runner.validate(spec, cs)
    store = Store(Path(args.db))
    what = f"{args.benchmark} ({args.config}/{args.mpi}/{args.mode})"
    if err.is_terminal:
        with err.status(f"running {what}") as st:
            rec = runner.run(spec, cs, lambda ph: st.update(f"{ph}: {what}"))
    else:
        rec = runner.run(spec, cs, lambda ph: plain_line(err, f"{ph}: {what}"))
    run_id = store.add_run(rec)
    store.close()
    t = Table(title=f"run {run_id}: {args.benchmark} {args.config}/{args.mpi}/{args.mode} "
                    f"ranks={args.ranks} — {rec.status}, placement {rec.placement}, "
                    f"{rec.duration:.1f} s")
    for col in ("bench", "metric", "bytes", "value", "unit", "better"):
        t.add_column(col, justify="right" if col in ("bytes", "value") else "left")
    for m in rec.metrics:
        t.add_row(m.bench, m.name, "" if m.size is None else str(m.size), _fmt(m.value), m.unit,
                  m.better)
    out.print(t)
    if rec.config_detail.get("via_yod"):
        out.print(f"heap pages: asked {args.pages}, got "
                  f"{rec.config_detail.get('heap_pages') or 'unknown (no node reported)'}",
                  highlight=False)
    out.print(f"stored in {args.db} (run {run_id}); command: {' '.join(rec.command)}")
    crash = rec.config_detail.get("crashed_after_done")
    if crash:
        err.print(f"note: the results above are kept, and after printing them the job "
                  f"{crash_note(crash)}: {crash.get('known')}; recorded in the run's "
                  "config_detail.crashed_after_done", highlight=False, markup=False)
    if rec.status != "ok":
        err.print(f"[red]run {rec.status}[/red] (exit {rec.exit_code}); stderr tail:\n"
                  + rec.raw_stderr[-2000:], markup=True, highlight=False)
        return 1
    return 0


# --- evaluate -----------------------------------------------------------------------------------

def _campaign_for(args: argparse.Namespace, cs: configs.ConfigSet) -> campaign.Campaign:
    name = "quick" if args.quick else (args.campaign or "default")
    return campaign.load(campaign.resolve(name), cs)


def cmd_evaluate(args: argparse.Namespace) -> int:
    cs = _load_configs(args)
    resume_id: int | None = None
    if args.resume:
        db = Path(args.db)
        if not db.exists():
            _fail(f"--resume: no database at {db}")
        ro = Store(db, read_only=True)
        wanted = None
        if args.campaign or args.quick:
            wanted = _campaign_for(args, cs).name
        row = ro.unfinished_campaign(wanted)
        ro.close()
        if row is None:
            _fail(f"--resume: no unfinished campaign{f' named {wanted!r}' if wanted else ''} in {db}")
        c = campaign.from_spec(json.loads(row["spec"]), cs)
        resume_id = int(row["id"])
    else:
        c = _campaign_for(args, cs)
    runnable, skipped = campaign.plan(c, cs)
    err.print(f"campaign [bold]{c.name}[/bold]{f' (resuming #{resume_id})' if resume_id else ''}: "
              f"{len(runnable)} runs, {c.repetitions} repetitions, interleaved"
              + (f", {sum(1 for p in runnable if not p.spec.timed)} of them untimed for the account"
                 if any(not p.spec.timed for p in runnable) else "") + "; "
              f"estimate ~{campaign.estimate_s(runnable) / 60:.1f} min", highlight=False)
    absent = campaign.absent_mpis(c, cs)
    for m, why in absent.items():
        n = sum(s.runs for s in skipped if s.mpi == m)
        err.print(f"  skipped MPI {m} ({n} runs): {why}", highlight=False, markup=False)
    for s in skipped:
        if s.mpi not in absent:
            err.print(f"  skipped {s.benchmark} {s.config}/{s.mpi}/{s.mode} ({s.runs} runs): {s.reason}",
                      highlight=False, markup=False)
    store = Store(Path(args.db))
    with CampaignProgress(err, c.name) as prog:
        outcome = campaign.execute(store, c, cs, resume_id, prog.on_start, prog.on_run, prog.on_done)
    store.close()
    counts = ", ".join(f"{v} {k}" for k, v in outcome.counts.items() if v)
    err.print(f"campaign #{outcome.campaign_id} done: {counts or 'nothing to run'}"
              f"{f'; {outcome.resumed_past} already done before resume' if outcome.resumed_past else ''}"
              f"; {sum(s.runs for s in skipped)} skipped; results in {args.db}", highlight=False)
    for note in outcome.notes:
        err.print(f"  {note}", highlight=False, markup=False)
    rc = 0 if args.no_report else _render(args)
    return 1 if outcome.counts.get("failed") or outcome.counts.get("timeout") or rc else 0


def _render(args: argparse.Namespace) -> int:
    from .report.page import render
    try:
        path = render(Path(args.db), Path(args.out), placements=getattr(args, "placements", "all"))
    except Exception as e:  # the results are safe in the database whatever the report does
        err.print(f"bobcat: the report failed ({type(e).__name__}: {e}); the results are in "
                  f"{args.db}; retry with `bobcat report`", highlight=False, markup=False)
        return 1
    out.print(f"report: {path}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    if not Path(args.db).exists():
        _fail(f"no results database at {args.db} (run `bobcat evaluate` first, or pass --db)")
    return _render(args)


# --- list, compare, export, doctor ----------------------------------------------------------------

def cmd_list(args: argparse.Namespace) -> int:
    cs = _load_configs(args)
    t = Table(title=f"benchmarks (from {paths.libexec_dir() / 'bench'})")
    vendors = configs.installed_vendors(cs)
    absent = {v: configs.installed(cs, v)[1] for v in cs.vendors() if v not in vendors}
    for col in ("benchmark", *vendors, "description"):
        t.add_column(col)
    missing = False
    for b in runner.BENCHMARKS.values():
        cells = []
        for v in vendors:
            ok, why = runner.bench_available(b.name, v)
            missing |= "not found" in why
            cells.append("yes" if ok else "not installed" if "not found" in why else f"no: {why}")
        t.add_row(b.name, *cells, b.description)
    out.print(t)
    if missing:
        out.print(f"not installed: build and install the tree (cmake --install BUILD), or point "
                  f"BOBCAT_HOME at an install prefix (now {paths.home()})", highlight=False)
    t = Table(title="configurations")
    for col in ("config", *vendors, "description"):
        t.add_column(col)
    for c in cs.configs.values():
        cells = []
        for v in vendors:
            ok, why = configs.availability(cs, c, v)
            cells.append(f"yes ({c.vendor[v].single_copy or 'single copy: n/a'})" if ok
                         else f"no: {why}")
        t.add_row(c.name, *cells, c.description)
    out.print(t)
    t = Table(title="campaigns (bobcat evaluate --campaign NAME|FILE)")
    for col in ("campaign", "runs", "estimate", "description"):
        t.add_column(col)
    for name in campaign.BUILTIN:
        c = campaign.load(campaign.resolve(name), cs)
        runnable, skipped = campaign.plan(c, cs)
        t.add_row(name, f"{len(runnable)} (+{sum(s.runs for s in skipped)} unavailable)",
                  f"~{campaign.estimate_s(runnable) / 60:.1f} min", c.description)
    out.print(t)
    out.print(f"modes: {', '.join(configs.MODES)}; MPIs: "
              + ", ".join(f"{v} ({machine.mpi_version(v) or '?'})" for v in vendors), highlight=False)
    for v, why in absent.items():
        out.print(f"MPI {v}: {why}", highlight=False, markup=False)
    return 0


BEST_PEER = "best-peer"


def _shown_rows(rows: list, args: argparse.Namespace, present: list[str], who: str) -> list:
    """The headline rows (all of them with --all, or every size of an explicit --metric); when none
    is left, says why on stderr and returns []."""
    measured = len(rows)
    if not (args.all or args.metric):
        rows = [r for r in rows if is_headline(r.benchmark, r.bench, r.metric, r.size,
                                               json.loads(r.point))]
    if not rows:
        why = (f" ({measured} non-headline metrics: see them with --all)" if measured else
               f" (configurations in {args.db}: {', '.join(present) or 'none'})")
        err.print(f"no {'' if args.all or args.metric else 'headline '}metric measured by both "
                  f"{who} with these filters{why}", highlight=False, markup=False)
    return rows


def cmd_compare_best(args: argparse.Namespace) -> int:
    """`bobcat compare best-peer REF`: REF against the best peer across every installed MPI."""
    ref = args.b
    store = Store(Path(args.db), read_only=True)
    rows = best_peers(store, ref, args.bench, args.test, args.mpi, args.mode, args.metric,
                      args.placement)
    present = store.configs_present()
    store.close()
    rows = _shown_rows(rows, args, present, f"{ref} and a peer")
    if not rows:
        return 1
    columns = [Column("bench"), Column("metric"), Column("bytes", True), Column("mode"),
               Column(ref), Column(f"{ref} value", True), Column(f"{ref} over MPIs", True),
               Column("best Debian peer"),
               Column("Debian value", True), Column("best peer (all MPIs)"), Column("peer value", True),
               Column("unit"), Column(f"{ref}/best", True), Column("spread", True), Column("n", True),
               Column("better")]
    shown, records = [], []
    for r in rows:
        b = r.best
        name = r.bench if r.bench == r.benchmark else f"{r.benchmark}/{r.bench}"
        spread = f"{_fmt(b.ratio_min)}–{_fmt(b.ratio_max)}" if b.ratio_min is not None else "-"
        better = {"reference": ref, "peer": b.peer.name, "same": "same", "?": "?"}[b.verdict]
        deb = b.debian
        rng = b.reference_range
        shown.append([name, r.metric, "" if r.size is None else str(r.size), r.mode,
                      b.reference.mpi, _fmt(b.reference.median),
                      f"{_fmt(rng[0])}–{_fmt(rng[1])}" if rng and rng[0] != rng[1] else "-",
                      deb.name if deb else "-",
                      _fmt(deb.median) if deb else "-", b.peer.name, _fmt(b.peer.median), r.unit,
                      _fmt(b.ratio), spread, f"{b.reference.n}/{b.peer.n}", better])
        records.append({"reference": ref, "benchmark": r.benchmark, "bench": r.bench,
                        "metric": r.metric, "bytes": r.size, "mode": r.mode,
                        "params": json.loads(r.point), "unit": r.unit,
                        "reference_mpi": b.reference.mpi, "reference_median": b.reference.median,
                        "reference_min": rng[0] if rng else None,
                        "reference_max": rng[1] if rng else None,
                        "debian_config": deb.config if deb else None,
                        "debian_mpi": deb.mpi if deb else None,
                        "debian_median": deb.median if deb else None,
                        "peer_config": b.peer.config, "peer_mpi": b.peer.mpi,
                        "peer_median": b.peer.median, "peers": b.peers, "ratio": b.ratio,
                        "ratio_min": b.ratio_min, "ratio_max": b.ratio_max,
                        "n_reference": b.reference.n, "n_peer": b.peer.n,
                        "direction": r.better, "better": better})
    what = "all metrics" if args.all or args.metric else "headline metrics (--all: every metric)"
    scope = f"{ref} with {args.mpi}" if args.mpi else f"{ref} at its best over the MPIs"
    emit(out, args.format, f"{scope} against the best peer across every MPI measured, {what} "
         "(ratio of medians; spread = min–max of per-repetition ratios)", columns, shown, records)
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    if args.a == BEST_PEER:
        return cmd_compare_best(args)
    store = Store(Path(args.db), read_only=True)
    rows = compare(store, args.a, args.b, args.bench, args.test, args.mpi, args.mode, args.metric,
                   args.placement)
    present = store.configs_present()
    store.close()
    rows = _shown_rows(rows, args, present, f"{args.a} and {args.b}")
    if not rows:
        return 1
    columns = [Column("bench"), Column("metric"), Column("bytes", True), Column("mpi"),
               Column("mode"), Column(f"A {args.a}", True), Column(f"B {args.b}", True),
               Column("unit"), Column("B/A", True), Column("spread", True), Column("n", True),
               Column("better")]
    shown, records = [], []
    for r in rows:
        name = r.bench if r.bench == r.benchmark else f"{r.benchmark}/{r.bench}"
        spread = f"{_fmt(r.ratio_min)}–{_fmt(r.ratio_max)}" if r.ratio_min is not None else "-"
        better = {"A": args.a, "B": args.b, "=": "same", "?": "?"}[r.verdict]
        shown.append([name, r.metric, "" if r.size is None else str(r.size), r.mpi, r.mode,
                      _fmt(r.median_a), _fmt(r.median_b), r.unit, _fmt(r.ratio), spread,
                      f"{r.n_a}/{r.n_b}", better])
        # The raw numbers, with what the table packs into one cell (name, spread, n) apart.
        records.append({"a": args.a, "b": args.b, "benchmark": r.benchmark, "bench": r.bench,
                        "metric": r.metric, "bytes": r.size, "mpi": r.mpi, "mode": r.mode,
                        "params": json.loads(r.point), "unit": r.unit, "median_a": r.median_a,
                        "median_b": r.median_b, "ratio": r.ratio, "ratio_min": r.ratio_min,
                        "ratio_max": r.ratio_max, "n_a": r.n_a, "n_b": r.n_b,
                        "direction": r.better, "better": better})
    what = "all metrics" if args.all or args.metric else "headline metrics (--all: every metric)"
    emit(out, args.format, f"{args.b} / {args.a}, {what} (ratio of medians; spread = min–max of "
         "per-repetition ratios)", columns, shown, records)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    store = Store(Path(args.db), read_only=True)
    fmt = "json" if args.json else "csv"
    if args.out:
        with open(args.out, "w", newline="") as f:
            n = export.write_json(store, f) if fmt == "json" else export.write_csv(store, f)
        err.print(f"wrote {n} {'runs' if fmt == 'json' else 'metric rows'} to {args.out}")
    else:
        export.write_json(store, sys.stdout) if fmt == "json" else export.write_csv(store, sys.stdout)
    store.close()
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    if args.install_peers:
        rc = doctor.install_peers()
        if rc:
            return rc
    worst = 0
    colour = {"OK": "green", "WARN": "yellow", "FAIL": "red"}
    for c in doctor.checks():
        out.print(f"[{colour[c.status]}]{c.status:4}[/] {c.name:16} {c.detail}", highlight=False)
        if c.fix:
            out.print(f"     {'':16} fix: {c.fix}", highlight=False, markup=False)
        worst = max(worst, {"OK": 0, "WARN": 0, "FAIL": 1}[c.status])
    f = machine.facts()
    cpu = f["cpu_model"] + (f" ({f['cpu_id']}; L2 {f['caches']['L2']})" if f.get("cpu_id") and
                            f.get("caches", {}).get("L2") else "")
    out.print(f"     {'machine':16} {cpu}, {f['cores']} cores, kernel {f['kernel']}", highlight=False)
    return worst


# --- argument parsing -----------------------------------------------------------------------------

def _param(s: str) -> tuple[str, Any]:
    k, eq, v = s.partition("=")
    if not eq:
        raise argparse.ArgumentTypeError(f"--param wants KEY=VALUE, not {s!r}")
    try:
        return k, int(v)
    except ValueError:
        return k, v


class _Params(argparse.Action):
    def __call__(self, parser: Any, ns: argparse.Namespace, value: Any, option: Any = None) -> None:
        d = dict(getattr(ns, self.dest) or {})
        d[value[0]] = value[1]
        setattr(ns, self.dest, d)


def parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", default=str(DEFAULT_DB),
                        help=f"results database (default: ./{DEFAULT_DB})")
    common.add_argument("--configs", metavar="FILE",
                        help=f"extra configurations (default: {configs.USER_FILE} if it exists)")
    p = argparse.ArgumentParser(prog="bobcat", description="bobcat evaluation: campaigns of "
                                "benchmarks across configurations and modes, stored in SQLite.")
    p.add_argument("--version", action="version", version=f"bobcat {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    e = sub.add_parser("evaluate", parents=[common], help="run a campaign, then write the report")
    e.add_argument("--campaign", help="built-in name (default, quick) or a campaign TOML file")
    e.add_argument("--quick", action="store_true", help="the quick campaign (<= 3 minutes)")
    e.add_argument("--resume", action="store_true",
                   help="continue the newest unfinished campaign (of --campaign's name if given)")
    e.add_argument("--out", default=str(DEFAULT_OUT), help=f"report folder (default: ./{DEFAULT_OUT})")
    e.add_argument("--no-report", action="store_true", help="run the campaign only")
    e.set_defaults(fn=cmd_evaluate)

    r = sub.add_parser("run", parents=[common], help="one measured run, stored; metrics printed",
                       usage="bobcat run BENCHMARK --config C --mode M [--mpi M] [--ranks N] "
                             "[-- benchmark args]")
    r.add_argument("benchmark", help=", ".join(runner.BENCHMARKS))
    r.add_argument("--config", required=True)
    r.add_argument("--mode", required=True, help=" or ".join(configs.MODES))
    r.add_argument("--mpi", default="openmpi", help="openmpi (default), mpich, or one of today's MPIs "
                   "installed by scripts/peers.sh (openmpi5, mpich5, impi): `bobcat list`")
    r.add_argument("--ranks", type=int, default=2)
    r.add_argument("--timeout", type=float, default=300.0, help="seconds (default 300)")
    r.add_argument("--pages", choices=["large", "small"], default="large",
                   help="heap pages of a yod configuration (lwk): large = yod's default (2 MiB "
                        "when it can get them; the run records what it got), small = 4 KiB")
    r.add_argument("--param", type=_param, action=_Params, metavar="KEY=VALUE",
                   help="hpcc: N, NB, P, Q (default N=2000 NB=128 P=1 Q=2)")
    r.set_defaults(fn=cmd_run)

    sub.add_parser("list", parents=[common], help="benchmarks, configurations (availability), "
                   "campaigns").set_defaults(fn=cmd_list)

    c = sub.add_parser("compare", parents=[common], help="configuration B relative to A; A = "
                       "best-peer: B against the best peer across every installed MPI")
    c.add_argument("a", metavar="A", help="a configuration, or best-peer: per metric the best "
                   "(configuration, MPI) not under yod, and the best of Debian's MPIs")
    c.add_argument("b", metavar="B")
    c.add_argument("--bench", help="benchmark program (imb, ring, hpcc, ...)")
    c.add_argument("--test", help="metric group within it (imb: pingpong, barrier, ...)")
    c.add_argument("--mpi", help="only this MPI's runs (with best-peer: of B only; the peers are "
                   "always every MPI)")
    c.add_argument("--mode")
    c.add_argument("--metric", help="one metric name (t_avg, bandwidth, HPL_Tflops, ...)")
    c.add_argument("--placement", help="only runs whose probes saw this placement (core, smt, chip)")
    c.add_argument("--all", action="store_true",
                   help="every metric, not only the headline ones (docs/evaluation.md)")
    c.add_argument("--format", choices=FORMATS, default="table",
                   help="table (default), csv, json or markdown")
    c.set_defaults(fn=cmd_compare)

    rp = sub.add_parser("report", parents=[common], help="write the HTML report")
    rp.add_argument("--out", default=str(DEFAULT_OUT), help=f"report folder (default: ./{DEFAULT_OUT})")
    rp.add_argument("--placements", choices=["all", "exclude-outliers", "separate"], default="all",
                    help="runs whose core placement differs: keep them (all), drop the non-dominant ones, "
                         "or report each placement separately")
    rp.set_defaults(fn=cmd_report)

    x = sub.add_parser("export", parents=[common], help="the database as CSV or JSON")
    g = x.add_mutually_exclusive_group(required=True)
    g.add_argument("--csv", action="store_true", help="one row per metric")
    g.add_argument("--json", action="store_true", help="one object per run, everything stored")
    x.add_argument("--out", help="file (default: stdout)")
    x.set_defaults(fn=cmd_export)

    d = sub.add_parser("doctor", parents=[common], help="is this node ready to measure?")
    d.add_argument("--install-peers", action="store_true",
                   help="first install today's MPIs (Open MPI 5, MPICH 5, Intel MPI wheels) into .peers/")
    d.set_defaults(fn=cmd_doctor)
    return p


def _sigterm(_sig: int, _frame: Any) -> None:
    # Make SIGTERM unwind like Ctrl-C: the running benchmark is killed and the campaign is
    # marked interrupted (completed runs are already stored).
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    bench_args: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, bench_args = argv[:i], argv[i + 1:]
    args = parser().parse_args(argv)
    args.bench_args = bench_args
    if bench_args and args.command != "run":
        parser().error("arguments after -- are only for `bobcat run`")
    signal.signal(signal.SIGTERM, _sigterm)
    try:
        return int(args.fn(args))
    except (UsageError, configs.ConfigError, campaign.CampaignError, runner.RunError,
            StoreError) as e:
        err.print(f"bobcat: error: {e}", highlight=False, markup=False)
        return 2
    except KeyboardInterrupt:
        err.print("bobcat: interrupted; completed runs are stored (continue with "
                  "`bobcat evaluate --resume`)")
        return 130
    except BrokenPipeError:  # `bobcat compare | head`: the reader has all it wants
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 128 + signal.SIGPIPE


if __name__ == "__main__":
    sys.exit(main())
