"""Campaigns: benchmarks x points x configurations x modes x MPIs x repetitions, as data files.

Expansion order is the protocol: for each repetition, for each benchmark and parameter point,
every (configuration, mode, MPI) being compared runs once, back to back (ABCABC...), so slow
drifts of this VM's placement hit every variant alike.  A run's position in the full expansion
(`seq`) names it, which is what `--resume` uses to skip completed runs.
"""
from __future__ import annotations

import tomllib
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Callable

from . import configs, hugepool, runner
from ..launcher.plan import UsageError
from .store import RunRecord, Store

BUILTIN = ("default", "quick")


class CampaignError(Exception):
    """The campaign file is malformed; the message names the file and the line or key."""


@dataclass
class BenchEntry:
    name: str
    args: list[str] = field(default_factory=list)
    points: list[list[str]] = field(default_factory=lambda: [[]])
    params: dict[str, Any] = field(default_factory=dict)
    configs: list[str] | None = None
    modes: list[str] | None = None
    mpis: list[str] | None = None
    ranks: int | None = None
    timeout_s: float | None = None
    pages: list[str] | None = None   # "large", "small": heap pages of the yod configurations


@dataclass
class Campaign:
    name: str
    description: str
    repetitions: int
    ranks: int
    timeout_s: float
    configs: list[str]
    modes: list[str]
    mpis: list[str]
    benches: list[BenchEntry]
    source: str = ""
    # Which runs record yod's account (ACCOUNT_CHOICES): "separate" = one extra, untimed run per
    # measurement of a yod configuration after the timed repetitions; "every" = every yod run
    # counts; "none".
    account: str = "separate"
    # The configurations that run under yod (a bench entry's `pages` applies to them only);
    # derived from the configuration set, not read from the file.
    yod_configs: list[str] = field(default_factory=list)

    def to_spec(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Point:
    seq: int
    repetition: int
    spec: runner.RunSpec

    def label(self) -> str:
        s = self.spec
        what = s.benchmark + (f" {' '.join(s.args)}" if s.args else "") + \
            (f" pages={s.pages}" if s.pages else "")
        which = "account" if not s.timed else f"rep {self.repetition + 1}"
        return f"{what[:40]} {s.config}/{s.mpi}/{s.mode} {which}"


@dataclass
class Skip:
    benchmark: str
    config: str
    mpi: str
    mode: str
    reason: str
    runs: int = 0


# --- loading and validation -------------------------------------------------------------------

_TOP_KEYS = {"name", "description", "repetitions", "ranks", "timeout_s", "configs", "modes", "mpis",
             "account"}
_BENCH_KEYS = {"name", "args", "points", "sizes", "size_arg", "params", "configs", "modes", "mpis",
               "ranks", "timeout_s", "pages"}
PAGE_SIZES = ("large", "small")
ACCOUNT_CHOICES = ("separate", "every", "none")


def _strlist(v: Any, where: str) -> list[str]:
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v) or not v:
        raise CampaignError(f"{where}: must be a non-empty list of strings")
    return list(v)


def _posint(v: Any, where: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise CampaignError(f"{where}: must be a positive integer, not {v!r}")
    return v


def _posnum(v: Any, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
        raise CampaignError(f"{where}: must be a positive number, not {v!r}")
    return float(v)


def _unknown(t: dict[str, Any], allowed: set[str], where: str) -> None:
    bad = sorted(set(t) - allowed)
    if bad:
        raise CampaignError(f"{where}: unknown key(s) {', '.join(bad)} (allowed: "
                            f"{', '.join(sorted(allowed))})")


def _check_names(names: list[str], known: Any, what: str, where: str) -> None:
    for n in names:
        if n not in known:
            raise CampaignError(f"{where}: unknown {what} {n!r} (known: {', '.join(known)})")


def from_doc(doc: dict[str, Any], source: str, cs: configs.ConfigSet) -> Campaign:
    """Validate a parsed campaign document (a TOML file, or a stored spec on --resume)."""
    _unknown(doc, {"campaign", "bench", "benches", "source"}, source)
    top = doc.get("campaign")
    if not isinstance(top, dict):
        raise CampaignError(f"{source}: missing [campaign] table")
    where = f"{source}: [campaign]"
    _unknown(top, _TOP_KEYS, where)
    c = Campaign(
        name=str(top.get("name", Path(source).stem)),
        description=str(top.get("description", "")),
        repetitions=_posint(top.get("repetitions", 3), f"{where} repetitions"),
        ranks=_posint(top.get("ranks", 2), f"{where} ranks"),
        timeout_s=_posnum(top.get("timeout_s", 300), f"{where} timeout_s"),
        configs=_strlist(top.get("configs", ["linux-shm", "linux-nic"]), f"{where} configs"),
        modes=_strlist(top.get("modes", ["VN2"]), f"{where} modes"),
        mpis=_strlist(top.get("mpis", list(cs.vendors())), f"{where} mpis"),
        benches=[], source=source, account=top.get("account", "separate"),
        yod_configs=[n for n, cfg in cs.configs.items() if cfg.via_yod])
    if c.account not in ACCOUNT_CHOICES:
        raise CampaignError(f"{where} account: one of {', '.join(ACCOUNT_CHOICES)}, not {c.account!r}")
    _check_names(c.configs, cs.configs, "configuration", f"{where} configs")
    _check_names(c.modes, configs.MODES, "mode", f"{where} modes")
    # An MPI the configurations know but this machine lacks is valid here: plan() skips its runs.
    _check_names(c.mpis, cs.vendors(), "MPI", f"{where} mpis")
    # A stored spec (--resume) spells the benchmark list "benches"; a file uses [[bench]].
    entries = doc.get("bench", doc.get("benches"))
    if not isinstance(entries, list) or not entries:
        raise CampaignError(f"{source}: needs at least one [[bench]] table")
    for i, t in enumerate(entries, 1):
        bw = f"{source}: [[bench]] #{i}"
        if not isinstance(t, dict):
            raise CampaignError(f"{bw}: must be a table")
        _unknown(t, _BENCH_KEYS, bw)
        name = t.get("name")
        if name not in runner.BENCHMARKS:
            raise CampaignError(f"{bw} name: unknown benchmark {name!r} (known: "
                                f"{', '.join(runner.BENCHMARKS)})")
        bw = f"{source}: [[bench]] #{i} ({name})"
        e = BenchEntry(name=name)
        if "args" in t:
            e.args = _strlist(t["args"], f"{bw} args") if t["args"] else []
        if "points" in t:
            pts = t["points"]
            if not isinstance(pts, list) or not pts:
                raise CampaignError(f"{bw} points: must be a non-empty list of argument lists")
            e.points = [_strlist(p, f"{bw} points[{j}]") if p else [] for j, p in enumerate(pts)]
        if "sizes" in t:
            sizes = t["sizes"]
            if not isinstance(sizes, list) or not sizes:
                raise CampaignError(f"{bw} sizes: must be a non-empty list")
            arg = t.get("size_arg", "--sizes")
            if not isinstance(arg, str):
                raise CampaignError(f"{bw} size_arg: must be a string")
            e.points = [p + [arg, str(s)] for p in e.points for s in sizes]
        if "params" in t:
            if not isinstance(t["params"], dict):
                raise CampaignError(f"{bw} params: must be a table")
            e.params = dict(t["params"])
        for key, known, what in (("configs", cs.configs, "configuration"),
                                 ("modes", configs.MODES, "mode"), ("mpis", cs.vendors(), "MPI")):
            if key in t:
                vals = _strlist(t[key], f"{bw} {key}")
                _check_names(vals, known, what, f"{bw} {key}")
                setattr(e, key, vals)
        if "ranks" in t:
            e.ranks = _posint(t["ranks"], f"{bw} ranks")
        if "timeout_s" in t:
            e.timeout_s = _posnum(t["timeout_s"], f"{bw} timeout_s")
        if "pages" in t:
            pages = _strlist(t["pages"], f"{bw} pages")
            bad = [x for x in pages if x not in PAGE_SIZES]
            if bad or len(set(pages)) != len(pages):
                raise CampaignError(f"{bw} pages: a list of distinct page sizes from "
                                    f"{', '.join(PAGE_SIZES)}, not {pages!r}")
            if not set(e.configs or c.configs) & set(c.yod_configs):
                raise CampaignError(f"{bw} pages: sets the heap pages of yod configurations "
                                    f"({', '.join(c.yod_configs) or 'none defined'}), and none of "
                                    f"this entry's configurations runs under yod")
            e.pages = pages
        if name == "hpcc":
            p = {**runner.HPCC_DEFAULTS, **e.params}
            bad = [k for k in p if k not in runner.HPCC_DEFAULTS or isinstance(p[k], bool)
                   or not isinstance(p[k], int) or p[k] < 1]
            if bad:
                raise CampaignError(f"{bw} params: {', '.join(bad)}: hpcc takes positive integers "
                                    f"N, NB, P, Q only")
            if p["P"] * p["Q"] != (e.ranks or c.ranks):
                raise CampaignError(f"{bw} params: P x Q = {p['P'] * p['Q']} must equal ranks "
                                    f"({e.ranks or c.ranks})")
        c.benches.append(e)
    return c


def load(path: Path, cs: configs.ConfigSet) -> Campaign:
    try:
        with open(path, "rb") as f:
            doc = tomllib.load(f)
    except tomllib.TOMLDecodeError as e:  # carries "(at line N, column M)"
        raise CampaignError(f"{path}: {e}") from None
    except OSError as e:
        raise CampaignError(f"{path}: cannot read: {e.strerror}") from None
    return from_doc(doc, str(path), cs)


def resolve(name_or_path: str) -> Path:
    """A built-in campaign name ('default', 'quick') or a file path."""
    if name_or_path in BUILTIN:
        return Path(str(resources.files("bobcat") / "data" / "campaigns" / f"{name_or_path}.toml"))
    p = Path(name_or_path)
    if not p.exists():
        raise CampaignError(f"{p}: no such campaign file (built-ins: {', '.join(BUILTIN)})")
    return p


def from_spec(spec: dict[str, Any], cs: configs.ConfigSet) -> Campaign:
    """The campaign stored with a campaign row, for --resume."""
    top = {k: spec[k] for k in _TOP_KEYS if k in spec}
    benches = [{k: v for k, v in b.items() if v is not None} for b in spec.get("benches", [])]
    return from_doc({"campaign": top, "benches": benches}, spec.get("source") or "stored spec", cs)


# --- expansion --------------------------------------------------------------------------------

def expand(c: Campaign) -> list[Point]:
    """Every run of the campaign, in execution order; seq is the index in this list.

    The account runs (account = "separate") come after every timed repetition, so they neither
    change the timed runs' seqs (a campaign stored before them resumes the same) nor sit between
    the variants being compared."""
    out: list[Point] = []
    for rep in range(c.repetitions):
        for b in c.benches:
            for point in b.points:
                for cfg in b.configs or c.configs:
                    # Page sizes innermost: a yod configuration's large- and small-page runs of a
                    # point go back to back, like the configurations they are compared with.
                    pages = b.pages if b.pages and cfg in c.yod_configs else ["large"]
                    for mode in b.modes or c.modes:
                        for mpi in b.mpis or c.mpis:
                            for pg in pages:
                                spec = runner.RunSpec(
                                    benchmark=b.name, config=cfg, mpi=mpi, mode=mode,
                                    ranks=b.ranks or c.ranks, args=[*b.args, *point],
                                    params=dict(b.params), timeout=b.timeout_s or c.timeout_s,
                                    pages=None if pg == "large" else pg,
                                    account=c.account == "every" and cfg in c.yod_configs)
                                out.append(Point(len(out), rep, spec))
    if c.account != "separate":
        return out
    # One run per measurement is enough: which path a call takes does not depend on the
    # repetition, nor on the heap's page size.
    for b in c.benches:
        if b.name in runner.NOT_MPI:
            continue
        for point in b.points:
            for cfg in b.configs or c.configs:
                if cfg not in c.yod_configs:
                    continue
                # SN puts every rank on a node of its own: no on-node traffic to account for.
                for mode in [m for m in b.modes or c.modes if m != "SN"]:
                    for mpi in b.mpis or c.mpis:
                        spec = runner.RunSpec(
                            benchmark=b.name, config=cfg, mpi=mpi, mode=mode,
                            ranks=b.ranks or c.ranks, args=[*b.args, *point],
                            params=dict(b.params), timeout=b.timeout_s or c.timeout_s,
                            account=True, timed=False)
                        out.append(Point(len(out), c.repetitions, spec))
    return out


def absent_mpis(c: Campaign, cs: configs.ConfigSet) -> dict[str, str]:
    """The MPIs the campaign names that this machine lacks (a peer scripts/peers.sh did not
    install), each with the reason: their runs are skipped, and said once per MPI."""
    named = dict.fromkeys([*c.mpis, *(m for b in c.benches for m in b.mpis or [])])
    return {m: why for m in named for ok, why in [configs.installed(cs, m)] if not ok}


def plan(c: Campaign, cs: configs.ConfigSet) -> tuple[list[Point], list[Skip]]:
    """Split the expansion into runnable points and skipped ones (with the reason).  An
    unavailable configuration or benchmark is reported, never faked."""
    runnable: list[Point] = []
    skips: dict[tuple[str, str, str, str], Skip] = {}
    cache: dict[tuple[str, str, str, str], tuple[bool, str]] = {}
    for p in expand(c):
        s = p.spec
        key = (s.benchmark, s.config, s.mpi, s.mode)
        if key not in cache:
            config = cs.get(s.config)
            ok, why = configs.availability(cs, config, s.mpi)
            if ok:
                ok, why = runner.bench_available(s.benchmark, s.mpi, config, s.mode)
            cache[key] = (ok, why)
        ok, why = cache[key]
        if ok:
            runnable.append(p)
        else:
            sk = skips.setdefault(key, Skip(s.benchmark, s.config, s.mpi, s.mode, why))
            sk.runs += 1
    return runnable, list(skips.values())


# --- running ----------------------------------------------------------------------------------

@dataclass
class Outcome:
    campaign_id: int
    counts: dict[str, int]
    skipped: list[Skip]
    resumed_past: int
    status: str
    notes: list[str] = field(default_factory=list)


def summary_of(counts: dict[str, int], skipped: list[Skip], resumed_past: int,
               pages: dict[str, Any] | None = None,
               absent: dict[str, str] | None = None) -> dict[str, Any]:
    out = {"runs": counts, "skipped": [asdict(s) for s in skipped], "resumed_past": resumed_past}
    if absent:
        out["absent_mpis"] = absent
    if pages is not None:
        out["pages"] = pages
    return out


def pages_plan(c: Campaign, runnable: list[Point]) -> dict[str, Any]:
    """What the campaign does for the small-vs-large pages table (CNW §4.1.2), for its summary:
    which benchmarks run on 4 KiB pages beside the yod default, or that it runs none."""
    small = sorted({p.spec.benchmark for p in runnable if p.spec.pages == "small"})
    asked = sorted({b.name for b in c.benches if b.pages and "small" in b.pages})
    if small:
        note = (f"small vs large pages: {', '.join(small)} run on 4 KiB pages beside yod's default "
                "2 MiB pages, back to back")
    elif asked:
        note = (f"small vs large pages: the small-page runs of {', '.join(asked)} were skipped "
                "(their yod configuration is unavailable; see the skipped runs)")
    else:
        note = (f"small vs large pages: campaign {c.name} runs no small-page pairs (no [[bench]] "
                "sets pages); the default campaign (`bobcat evaluate`) runs them")
    return {"small_page_benchmarks": small, "note": note}


def execute(store: Store, c: Campaign, cs: configs.ConfigSet, resume_id: int | None = None,
            on_start: Callable[[int, int], None] | None = None,
            on_run: Callable[[Point, str], None] | None = None,
            on_done: Callable[[Point, RunRecord], None] | None = None) -> Outcome:
    """Run the campaign (or continue campaign `resume_id`), storing each run as it completes.
    Callbacks let the CLI draw progress: on_start(total, already_done), on_run(point, phase),
    on_done(point, record) once the run is stored."""
    runnable, skipped = plan(c, cs)
    absent = absent_mpis(c, cs)
    if resume_id is None:
        cid = store.start_campaign(c.name, c.to_spec())
        done: set[int] = set()
    else:
        cid = resume_id
        done = store.completed_seqs(cid)
        store.set_campaign_status(cid, "running")
    todo = [p for p in runnable if p.seq not in done]
    counts = {"ok": 0, "failed": 0, "timeout": 0}
    pages = pages_plan(c, runnable)
    if on_start:
        on_start(len(runnable), len(runnable) - len(todo))
    # The hugetlb pool for the largest yod job on 2 MiB pages (jobs run one at a time). A job yod
    # would refuse is the campaign's error, before anything runs.
    try:
        need = max((hugepool.job_pages(p.spec, cs) for p in todo), default=0)
    except UsageError as e:
        store.set_campaign_status(cid, "interrupted", summary_of(counts, skipped, len(done), pages, absent))
        raise CampaignError(f"yod would refuse a run of this campaign: {e}; fix the configuration's yod_args "
                            "or the campaign's ranks") from e
    reservation = hugepool.Reservation(need)
    pages["hugetlb"] = reservation.record
    try:
        with reservation:
            for p in todo:
                rec = runner.run(p.spec, cs, (lambda ph, p=p: on_run(p, ph)) if on_run else None)
                rec.campaign_id, rec.seq, rec.repetition = cid, p.seq, p.repetition
                store.add_run(rec)
                counts[rec.status] = counts.get(rec.status, 0) + 1
                if on_done:
                    on_done(p, rec)
    except BaseException:
        store.set_campaign_status(cid, "interrupted", summary_of(counts, skipped, len(done), pages, absent))
        raise
    store.set_campaign_status(cid, "done", summary_of(counts, skipped, len(done), pages, absent))
    notes = [pages["note"]] + ([reservation.record["note"]] if need else []) + \
        [f"{m}: skipped, {why}" for m, why in absent.items()]
    return Outcome(cid, counts, skipped, len(done), "done", notes)


def estimate_s(points: list[Point]) -> float:
    """A rough duration: each run's wall time plus two probes (timed runs only) and bookkeeping.

    The run times are the means of the default campaign of 2026-11-26 on this 2-vCPU node with
    the heavy-work lock held (load ~2; docs/evaluation.md): 531 runs in 882 s, 527 s of it in the
    runs. The earlier table (imb 1.3 s, hpcc 8 s, ...) was measured at a load of 4-9 and put that
    campaign at 26 min."""
    # imb: the mean over its five MPIs (Open MPI 5's PRRTE start-up 1.4 s, Intel MPI 1.0,
    # Debian's Open MPI 0.85, both MPICHs 0.6); hpcc at N = 1000, SN and VN2; shmem: its pair
    # (lwk and oshmem) with the default campaign's --time 0.05 --reps 7.
    typical = {"hpcc": 1.4, "ring": 3.2, "gups": 0.5, "stream": 1.9, "fft": 0.5, "ptrans": 0.5,
               "selfish": 1.4, "imb": 0.9, "io": 0.4, "shmem": 1.8}
    # A heap on 4 KiB pages takes longer to populate: +0.3-0.6 s a run here (gups, hpcc, stream).
    return sum(typical.get(p.spec.benchmark, 2.0) + 0.1
               + (2 * runner.PROBE_SECONDS if p.spec.timed else 0.0)
               + (0.6 if p.spec.pages == "small" else 0.0) for p in points)
