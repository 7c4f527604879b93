"""Tests of `bobcat.report.page.render`: a fixture database written per contracts.md §4 is rendered,
then the page is checked as files, as computed numbers, and as a browser (headless Chromium)
sees it.

The fixture's numbers follow this machine's measured shape (docs MACHINE.md: ~0.1 µs on-node
latency, 13 GB/s CMA-bound bandwidth, TCP-loopback-like linux-nic), with known per-repetition
values so the tests can recompute medians, ratios, CoV and utilization independently.
"""
from __future__ import annotations

import hashlib
import html
import json
import math
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from bobcat import paths
from bobcat.evaluation import store
from bobcat.report import data as report_data
from bobcat.report.plots import ratio_grid
from bobcat.report.page import render

# The report reads what the store writes: the fixture uses the store's own schema.
SCHEMA = store.SCHEMA

MACHINE = {"cpu": "AMD EPYC (Zen 5)", "cores": 2, "kernel": "6.18.0", "mpi_version":
           "Open MPI 4.1.4", "thp": "madvise"}

# Transport model per configuration: (latency µs, bandwidth B/µs). lwk = single copy, shm = CMA
# bound, nic = through the network stack.
TRANSPORT = {"lwk": (0.08, 30000.0), "linux-shm": (0.11, 13000.0), "linux-nic": (5.0, 1000.0)}
SIZES = [0, 8, 64, 1024, 8192, 65536, 1 << 20]
REP_FACTORS = [1.0, 1.1, 0.95]      # per-repetition multipliers: known spread
SMT_SLOWDOWN = 2.0                  # the smt outlier run is twice as slow


class Fixture:
    def __init__(self, path: Path):
        self.path = path
        self.con = sqlite3.connect(path)
        self.con.executescript(SCHEMA)
        self.con.execute("INSERT INTO meta VALUES ('schema_version', '1')")
        self.con.execute("INSERT INTO campaigns (id, name, spec, started, finished, status) "
                         "VALUES (1, 'default', '{}', 0, 1, 'done')")
        self.seq = 0

    def run(self, benchmark: str, config: str, mode: str, ranks: int, rep: int,
            metrics: list[dict], params: dict | None = None, placement: str = "core",
            status: str = "ok", mpi: str = "openmpi") -> int:
        self.seq += 1
        ns = {"core": 55.0, "smt": 25.0, "chip": 260.0}[placement]
        probe = json.dumps({"value": ns, "placement": placement})
        cur = self.con.execute(
            "INSERT INTO runs (campaign_id, seq, benchmark, config, mpi, mode, ranks, params, "
            "repetition, started, duration, status, exit_code, machine, config_detail, "
            "probe_before, probe_after, placement, git_rev, command, raw_stdout, raw_stderr) "
            "VALUES (1,?,?,?,?,?,?,?,?,?,1.0,?,0,?,'{}',?,?,?,'abc','cmd','','')",
            (self.seq, benchmark, config, mpi, mode, ranks, json.dumps(params or {}), rep,
             float(self.seq), status, json.dumps(MACHINE), probe, probe, placement))
        rid = cur.lastrowid
        for m in metrics:
            mp = m.get("params", {})
            self.con.execute("INSERT INTO metrics VALUES (?,?,?,?,?,?,?,?)",
                             (rid, m.get("bench", benchmark), m["name"], m["value"],
                              m.get("unit", ""), m.get("better", "higher"), mp.get("bytes"),
                              json.dumps(mp)))
        return rid

    def close(self) -> None:
        self.con.commit()
        self.con.close()


def imb_time(test: str, config: str, ranks: int, size: int) -> float:
    lat, bw = TRANSPORT[config]
    steps = {"PingPong": 1, "Sendrecv": 1, "Barrier": 2, "Bcast": 1.5, "Allreduce": 2.5,
             "Alltoall": 2}[test] * max(1.0, math.log2(ranks))
    return steps * (lat + size / bw)


def _ms(rows: list[tuple], **common) -> list[dict]:
    """Metric dicts from (name, value, unit, better, params) tuples."""
    return [{"name": n, "value": v, "unit": u, "better": b, "params": {**common, **p}}
            for n, v, u, b, p in rows]


def build_full(path: Path, configs=("lwk", "linux-shm", "linux-nic")) -> Fixture:
    """Every benchmark in the shapes bench/*.c and the HPCC parser emit them."""
    fx = Fixture(path)
    for config in configs:
        scale = {"lwk": 1.0, "linux-shm": 0.8, "linux-nic": 0.3}[config]
        kind = "hugetlb" if config == "lwk" else "small"
        for mode in ("SN", "VN2"):
            vn = 0.9 if mode == "VN2" else 1.0   # VN2 does the same work at 90 % of SN's rate
            for rep, f in enumerate(REP_FACTORS):
                for test in ("PingPong", "Barrier", "Sendrecv", "Bcast", "Allreduce",
                             "Alltoall"):
                    for ranks in ((2,) if test == "PingPong" else (2, 4)):
                        ms = []
                        for size in ((None,) if test == "Barrier" else SIZES):
                            t = imb_time(test, config, ranks, size or 0) * f
                            p = {"ranks": ranks, "iters": 1000}
                            if size is not None:
                                p["bytes"] = size
                            rows = [("t_min", 0.9 * t), ("t_avg", t), ("t_max", 1.2 * t)]
                            if test == "PingPong" and size:
                                rows.append(("bandwidth", size / t))
                            ms += [{"bench": test.lower(), "name": n, "value": v,
                                    "unit": "MB/s" if n == "bandwidth" else "us",
                                    "better": "higher" if n == "bandwidth" else "lower",
                                    "params": p} for n, v in rows]
                        fx.run("imb", config, mode, ranks, rep, ms,
                               {"test": test.lower(), "max-size": "1M",
                                "args": ["--test", test.lower()]})
                hp = [("HPL_Tflops", 0.010 * scale * vn * f, "Tflop/s", "higher"),
                      ("PTRANS_GBs", 2.5 * scale * vn * f, "GB/s", "higher"),
                      ("MPIRandomAccess_GUPs", 0.025 * scale * vn * f, "GUP/s", "higher"),
                      ("MPIFFT_Gflops", 6.5 * scale * vn * f, "Gflop/s", "higher"),
                      ("RandomlyOrderedRingLatency_usec", 0.1 / scale * f, "us", "lower"),
                      ("NaturallyOrderedRingLatency_usec", 0.09 / scale * f, "us", "lower"),
                      ("RandomlyOrderedRingBandwidth_GBytes", 14 * scale * f, "GB/s", "higher"),
                      ("NaturallyOrderedRingBandwidth_GBytes", 15 * scale * f, "GB/s",
                       "higher"),
                      ("CommWorldProcs", 2, "", "")]
                fx.run("hpcc", config, mode, 2, rep,
                       _ms([(n, v, u, b, {}) for n, v, u, b in hp], ranks=2),
                       {"N": 2000, "NB": 128, "P": 1, "Q": 2})
                for pages, pf in (("small", 0.95), ("large", 1.0)):
                    got = "small" if pages == "small" else "thp" if kind == "small" else kind
                    fx.run("stream", config, mode, 2, rep, _ms(
                        [("triad", 20.0 * pf * f, "GB/s", "higher",
                          {"phase": "single", "rank": r}) for r in (0, 1)]
                        + [("triad", 40.0 * pf * f, "GB/s", "higher", {"phase": "all"})],
                        ranks=2, pages=got, array_bytes=1 << 27), {"pages": pages})
                fx.run("gups", config, mode, 2, rep, _ms(
                    [("gups", 0.02 * scale * vn * f, "GUP/s", "higher", {"mode": "mpi"}),
                     ("gups_sum", 0.1 * vn * f, "GUP/s", "higher", {"mode": "single"})],
                    ranks=2, pages=kind, log2_table=24))
                fx.run("ptrans", config, mode, 2, rep, _ms(
                    [("bandwidth", 3.0 * scale * vn * f, "GB/s", "higher", {}),
                     ("bandwidth_avg", 2.8 * scale * vn * f, "GB/s", "higher", {})],
                    ranks=2, n=2048, nb=64, p=1, q=2, iters=5))
                fx.run("fft", config, mode, 2, rep, _ms(
                    [("gflops", 7.0 * scale * vn * f, "Gflop/s", "higher", {})],
                    ranks=2, n=1 << 20, log2n=20, iters=5, impl="fftw"))
                if mode == "VN2":      # as in the default campaign: ring runs in VN2 only
                    fx.run("ring", config, mode, 2, rep, _ms(
                        [(f"{w}_{s}", v * k, u, b, {"order": o, "bytes": size})
                         for o in ("natural", "random")
                         for w, v, u, b, size in (("lat", 0.1 / scale * f, "us", "lower", 8),
                                                  ("bw", 14 * scale * f, "GB/s", "higher",
                                                   2000000))
                         for s, k in (("min", 0.8), ("avg", 1.0), ("max", 1.3))],
                        ranks=2, iters=100, rings=5))
                fx.run("selfish", config, mode, 2, rep, _ms(
                    [(n, v, u, "lower", {"rank": r, "cpu": r})
                     for r in (0, 1)
                     for n, v, u in (("detour_rate", 550.0 * f, "1/s"),
                                     ("detour_max", 200.0 * f, "us"),
                                     ("time_lost", 0.7 * f, "%"),
                                     ("detours", 1650 * f, "count"))]
                    + [("hist", c * f, "count", "lower",
                        {"rank": r, "cpu": r, "lo_us": b / 2 if b > 1 else 0, "hi_us": b})
                       for r in (0, 1)
                       for b, c in ((1, 10), (2, 50), (4, 300), (8, 2000), (16, 700),
                                    (32, 40), (64, 3))],
                    mode="all", seconds=3.0, threshold_us=round(0.1 * (1 + rep), 2)))
    return fx


# Read before the autouse fixture clears BOBCAT_*: where the benchmark programs are installed.
BENCH_DIR = paths.home() / "libexec" / "bobcat" / "bench"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for k in list(os.environ):
        if k.startswith("BOBCAT_"):
            monkeypatch.delenv(k)


@pytest.fixture(scope="module")
def full_db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("db") / "results.db"
    fx = build_full(path)
    # One extra repetition of lwk VN2 HPCC caught in the smt state: an outlier at half speed.
    fx.run("hpcc", "lwk", "VN2", 2, 3,
           [{"name": "PTRANS_GBs", "value": 2.5 * 0.9 / SMT_SLOWDOWN, "unit": "GB/s"}],
           placement="smt")
    fx.run("hpcc", "lwk", "VN2", 2, 4, [], status="failed")
    fx.close()
    FULL_DB_DIGEST.append(hashlib.sha256(path.read_bytes()).hexdigest())
    return path


FULL_DB_DIGEST: list[str] = []   # the fixture database's hash before anything rendered it


@pytest.fixture(scope="module")
def full_report(full_db, tmp_path_factory) -> Path:
    return render(full_db, tmp_path_factory.mktemp("report"))


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.imgs: list[str] = []
        self.links: list[str] = []
        self.captions: list[str] = []
        self._in_cap = 0
        self.tables: dict[str, list[list[str]]] = {}
        self._table_id: str | None = None
        self._last_id: str | None = None
        self._row: list[str] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self._last_id = a["id"]
        if tag == "img":
            self.imgs.append(a["src"])
        elif tag == "a" and a.get("href", "").startswith("figures/"):
            self.links.append(a["href"])
        elif tag == "figcaption":
            self._in_cap += 1
            self.captions.append("")
        elif tag == "table":
            self._table_id = self._last_id
            self.tables[self._table_id] = []
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "figcaption":
            self._in_cap -= 1
        elif tag in ("td", "th") and self._row is not None and self._cell is not None:
            self._row.append("".join(self._cell))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.tables[self._table_id].append(self._row)
            self._row = None

    def handle_data(self, data):
        if self._in_cap:
            self.captions[-1] += data
        if self._cell is not None:
            self._cell.append(data)


def parse(index: Path) -> _Page:
    p = _Page()
    p.feed(index.read_text(encoding="utf-8"))
    return p


def _check_images(index: Path, page: _Page) -> None:
    assert page.imgs, "no figures"
    for src in page.imgs:
        data = (index.parent / src).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n", src
    for href in page.links:
        text = (index.parent / href).read_text(encoding="utf-8")
        assert "<svg" in text and text.rstrip().endswith("</svg>"), href


def _cell(page: _Page, table: str, row_first: str, column: str) -> str:
    rows = page.tables[table]
    col = rows[0].index(column)
    matches = [r for r in rows[1:] if r[0] == row_first]
    assert matches, (table, row_first)
    return matches[0][col]


def test_every_paper_figure_is_drawn(full_report):
    page = parse(full_report)
    _check_images(full_report, page)
    for n in range(1, 14):
        caps = [c for c in page.captions if c.startswith(f"Figure {n}.")]
        assert caps, f"Figure {n} missing"
        assert "not measured" not in caps[0], caps[0]
        assert ("higher is better" in caps[0]) or ("lower is better" in caps[0]), caps[0]
        assert f"Figure {n}" in caps[0].split("Reproduces")[1]
    assert (full_report.parent / "figures" / "figS2.png").is_file()  # noise histogram
    for fmt in ("png", "svg"):
        assert len(list((full_report.parent / "figures").glob(f"*.{fmt}"))) == 15


def test_render_never_writes_the_database(full_db, full_report):
    assert hashlib.sha256(full_db.read_bytes()).hexdigest() == FULL_DB_DIGEST[0]


def test_ratio_surface_is_reference_time_over_other_time(full_db):
    ds = report_data.load(full_db)
    ranks, sizes, grid = ratio_grid(ds, "Allreduce", "lwk", "linux-shm", "openmpi", "VN2")
    assert ranks == [2, 4] and sizes == SIZES
    for i, r in enumerate(ranks):
        for j, b in enumerate(sizes):
            # Every repetition scales both sides alike, so the median ratio is the model ratio.
            want = imb_time("Allreduce", "lwk", r, b) / imb_time("Allreduce", "linux-shm", r, b)
            assert grid[i, j] == pytest.approx(want, rel=1e-9)


def test_headline_and_cnw_tables_from_known_inputs(full_report):
    page = parse(full_report)
    # PingPong 8 B median over the three repetitions.
    want = statistics.median(imb_time("PingPong", "linux-shm", 2, 8) * f for f in REP_FACTORS)
    head = [h for h in page.tables["headline"][0] if h.startswith("PingPong 8 B")][0]
    assert _cell(page, "headline", "linux-shm openmpi SN", head).startswith(
        report_data.fmt(want))
    # STREAM ran with explicit page sizes: quoted per page size, not pooled.
    col = [h for h in page.tables["headline"][0] if h.startswith("STREAM triad")][0]
    assert _cell(page, "headline", "lwk openmpi SN", col) == (
        f"large: {report_data.fmt(40.0)}; small: {report_data.fmt(38.0)} [np 2]")

    # Effective utilization: VN2 runs HPL at 0.9 × SN's rate → u = 90 %, 1.8 cores.
    util = [r for r in page.tables["utilization"] if r[0] == "HPL"
            and r[2] == "linux-nic"]
    assert len(util) == 1
    assert float(util[0][-2]) == pytest.approx(90.0, rel=1e-3)
    assert float(util[0][-1]) == pytest.approx(1.8, rel=1e-3)
    # ... and for a time metric the ratio inverts: ring latency is equal in SN and VN2, so u=1.
    lat = [r for r in page.tables["utilization"] if r[0] == "Random ring latency"
           and r[2] == "lwk"]
    assert float(lat[0][-1]) == pytest.approx(2.0, rel=1e-3)

    # CNW-vs-CNL style: lwk against linux-nic, HPL is 1/0.3 as fast → +233 % improvement.
    rows = [r for r in page.tables["ratio-linux-nic"] if r[0] == "HPL" and r[4] == "SN"]
    assert float(rows[0][8]) == pytest.approx(1 / 0.3, rel=1e-3)
    assert float(rows[0][9]) == pytest.approx(100 * (1 / 0.3 - 1), rel=1e-3)
    # For a time (ring latency = 0.1/scale) the improvement is (t_other/t_lwk − 1) × 100.
    rows = [r for r in page.tables["ratio-linux-nic"] if r[0] == "Random ring latency"
            and r[4] == "SN"]
    assert float(rows[0][9]) == pytest.approx(100 * (1 / 0.3 - 1), rel=1e-3)

    # Small vs large pages: triad 0.95 × → 95 %, for the two single-rank and the all-rank
    # figures of every config × mode.
    pages = page.tables["pages"]
    assert len(pages) == 1 + 3 * 3 * 2
    ratio, spread = pages[0].index("small/large %"), pages[0].index("spread %")
    assert all(float(r[ratio]) == pytest.approx(95.0, rel=1e-3) for r in pages[1:])
    # Each repetition's small run against its own large run: the same factor, no spread.
    assert all(r[spread] == "95–95" for r in pages[1:])

    # SN vs VN2 HPCC table holds both modes.
    assert page.tables["hpcc-sn-vn"][0][-2:] == ["SN mode", "VN2 mode"]
    # Pallas tables: one per IMB test, rows per size.
    assert {t for t in page.tables if t.startswith("pallas-")} == {
        "pallas-pingpong", "pallas-barrier", "pallas-sendrecv", "pallas-bcast",
        "pallas-allreduce", "pallas-alltoall"}
    assert [r[0] for r in page.tables["pallas-bcast"][1:]] == [str(s) for s in SIZES]
    # Selfish: scalar metrics per series.
    # Selfish: scalar metrics per series and loop mode; threshold_us differs per repetition
    # but does not split the repetitions apart.
    sel = page.tables["selfish"]
    assert sel[0][2].startswith("detour_rate") and len(sel) == 1 + 6
    assert float(_cell(page, "selfish", "lwk openmpi SN", sel[0][2])) == pytest.approx(550.0)


def test_coefficient_of_variation(full_report):
    page = parse(full_report)
    vals = [0.1 * f for f in REP_FACTORS]    # lwk ring latency, one value per repetition
    want = 100 * statistics.stdev(vals) / statistics.fmean(vals)
    rows = [r for r in page.tables["cov-detail"] if r[0] == "lwk openmpi SN"]
    # Every lwk SN measurement has the same relative spread, so all CoVs equal the computed one.
    assert rows and all(float(r[3]) == pytest.approx(want, rel=1e-3) for r in rows)
    assert report_data.cov([1.0]) is None


def test_placement_policies(full_db, full_report, tmp_path):
    shown = parse(full_report)
    assert any(r[8] == "smt" and r[-1] == "yes" for r in shown.tables["runs"][1:])
    assert any(r[7] == "failed" and r[-1] == "no" for r in shown.tables["runs"][1:])

    # The smt outlier pulls lwk VN2 PTRANS into four values; excluding it leaves three.
    ex = report_data.load(full_db, "exclude-outliers")
    assert ex.dominant_placement == "core"
    vals = report_data.per_run_values(
        ex.select(lambda s: s.name == "PTRANS_GBs" and s.run.config == "lwk"
                  and s.run.mode == "VN2"), lambda s: 0)[0]
    assert sorted(vals) == pytest.approx(sorted(2.5 * 0.9 * f for f in REP_FACTORS))
    smt = [r.id for r in ex.runs if r.placement == "smt"]
    assert smt and not set(smt) & ex.kept

    # Separate: the smt run becomes its own series; the core series' median excludes it.
    sep = parse(render(full_db, tmp_path / "sep", placements="separate"))
    col = [h for h in sep.tables["headline"][0] if h.startswith("PTRANS")][0]
    core = statistics.median(2.5 * 0.9 * f for f in REP_FACTORS)
    assert _cell(sep, "headline", "lwk openmpi VN2 [core]", col).startswith(
        report_data.fmt(core) + " ")
    assert _cell(sep, "headline", "lwk openmpi VN2 [smt]", col).startswith(
        report_data.fmt(2.5 * 0.9 / SMT_SLOWDOWN) + " ")
    with pytest.raises(ValueError):
        render(full_db, tmp_path / "bad", placements="some")


def test_absent_data_is_reported_not_faked(tmp_path):
    fx = Fixture(tmp_path / "small.db")
    for rep, f in enumerate(REP_FACTORS):
        fx.run("imb", "linux-shm", "VN2", 2, rep,
               [{"name": "t_avg", "value": imb_time("PingPong", "linux-shm", 2, b) * f,
                 "unit": "us", "better": "lower",
                 "params": {"bytes": b, "ranks": 2, "test": "PingPong"}} for b in SIZES],
               {"test": "PingPong"})
    fx.close()
    index = render(tmp_path / "small.db", tmp_path / "out")
    page = parse(index)
    _check_images(index, page)
    caps = {c.split(".")[0]: c for c in page.captions}
    assert "not measured" not in caps["Figure 8"]
    for n in [1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13]:
        assert "not measured (why: " in caps[f"Figure {n}"], n
    assert "no runs of hpcc" in caps["Figure 1"]
    assert "no runs of imb Barrier" in caps["Figure 9"]
    assert "no runs of imb Sendrecv" in caps["Figure 10"]
    assert len(page.imgs) == 1
    text = index.read_text()
    assert "not measured (why: no work benchmark ran in both SN" in text
    assert "not measured (why: no runs of selfish" in text

    # A database with the schema and nothing else still renders, every figure "not measured".
    empty = Fixture(tmp_path / "empty.db")
    empty.close()
    page = parse(render(tmp_path / "empty.db", tmp_path / "empty"))
    assert not page.imgs
    assert sum("not measured" in c for c in page.captions) == 16   # 1-13, S1, S2, S3 (SHMEM)
    assert "not measured (why: no runs of shmem" in [c for c in page.captions
                                                      if c.startswith("Figure S3.")][0]


def _chromium(args: list[str], tmp: Path) -> subprocess.CompletedProcess:
    exe = shutil.which("chromium") or "/usr/bin/chromium"
    if not os.path.exists(exe):
        pytest.skip("chromium is not installed")
    return subprocess.run(
        [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp / 'chrome-profile'}", *args],
        capture_output=True, text=True, timeout=90)


def test_browser_renders_page(full_report, tmp_path):
    url = full_report.resolve().as_uri()
    dom = _chromium(["--dump-dom", url], tmp_path)
    assert dom.returncode == 0, dom.stderr[-2000:]
    page = _Page()
    page.feed(dom.stdout)
    _check_images(full_report, page)
    for n in range(1, 14):
        assert any(c.startswith(f"Figure {n}.") for c in page.captions), n
    assert "bobcat evaluation report" in html.unescape(dom.stdout)
    shot = tmp_path / "shot.png"
    res = _chromium([f"--screenshot={shot}", "--window-size=1280,2400", url], tmp_path)
    assert res.returncode == 0 and shot.read_bytes()[:4] == b"\x89PNG"
    if os.environ.get("REPORT_SCREENSHOT"):     # to look at the page by eye
        shutil.copy(shot, os.environ["REPORT_SCREENSHOT"])
    assert re.search(r"<img [^>]*src=\"figures/fig01.png\"", dom.stdout)


def _imb(cmd: list[str]) -> list[dict]:
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
    assert res.returncode == 0, res.stderr[-2000:]
    lines = [json.loads(line) for line in res.stdout.splitlines() if line.strip()]
    assert lines[-1].get("done") is True
    return [m for m in lines if "metric" in m]


def test_real_imb_runs(tmp_path):
    """Real IMB runs of bobcat's imb benchmark under Open MPI with and without CMA single copy
    (the linux-shm and linux-shm-nocma configurations), stored per contracts.md §3/§4."""
    exe = BENCH_DIR / "imb.openmpi"
    if not exe.exists():
        pytest.skip(f"{exe} not built (set BOBCAT_HOME to an install prefix)")
    base = ["mpirun.openmpi", "-np", "2", "--bind-to", "core"]
    args = [str(exe), "--test", "pingpong,allreduce", "--sizes", "0,8,1K,64K", "--time", "0.02"]
    configs = {"linux-shm": [], "linux-shm-nocma": ["--mca", "btl_vader_single_copy_mechanism",
                                                    "none"]}
    fx = Fixture(tmp_path / "real.db")
    raw: dict[tuple[str, int], list[float]] = {}
    for rep in range(2):
        for config, extra in configs.items():
            metrics = _imb(base + extra + args)
            for m in metrics:
                if m["bench"] == "allreduce" and m["metric"] == "t_avg":
                    raw.setdefault((config, m["params"]["bytes"]), []).append(m["value"])
            fx.run("imb", config, "VN2", 2, rep,
                   [{"bench": m["bench"], "name": m["metric"], "value": m["value"],
                     "unit": m["unit"], "better": m["better"], "params": m["params"]}
                    for m in metrics], {"test": "pingpong,allreduce"})
    fx.close()
    index = render(tmp_path / "real.db", tmp_path / "out")
    page = parse(index)
    _check_images(index, page)
    caps = {c.split(".")[0]: c for c in page.captions}
    for n in (8, 12):
        assert "not measured" not in caps[f"Figure {n}"]
    assert "not measured (why: no runs of imb Barrier" in caps["Figure 9"]
    # Figure 12's surface: reference = linux-shm (no lwk measured), cells from the raw medians.
    ds = report_data.load(tmp_path / "real.db")
    ranks, sizes, grid = ratio_grid(ds, "Allreduce", "linux-shm", "linux-shm-nocma", "openmpi",
                                    "VN2")
    assert ranks == [2] and sizes == [0, 8, 1024, 65536]
    for j, b in enumerate(sizes):
        want = statistics.median(raw[("linux-shm", b)]) / statistics.median(
            raw[("linux-shm-nocma", b)])
        assert grid[0, j] == pytest.approx(want, rel=1e-9)


def test_nonblocking_collectives_beside_blocking(tmp_path):
    """imb's IMB-NBC tests (Iallreduce with --overlap) get a Pallas table of their own next to the
    blocking Allreduce's, and the overlap table shows the median overlap per configuration."""
    fx = Fixture(tmp_path / "nbc.db")
    overlap = {"lwk": [90.0, 85.0, 95.0], "linux-shm": [10.0, 0.0, 20.0]}
    for cfg in overlap:
        for rep in range(3):
            ms = [{"bench": "allreduce", "name": "t_avg", "value": 1.0 + rep, "unit": "us", "better": "lower",
                   "params": {"bytes": 8, "ranks": 2}},
                  {"bench": "iallreduce", "name": "t_avg", "value": 2.0 + rep, "unit": "us", "better": "lower",
                   "params": {"bytes": 8, "ranks": 2}},
                  {"bench": "iallreduce", "name": "overlap", "value": overlap[cfg][rep], "unit": "%",
                   "better": "higher", "params": {"bytes": 1 << 20, "ranks": 2, "computing": "one"}}]
            fx.run("imb", cfg, "VN2", 2, rep, ms, {"test": "iallreduce"})
    fx.close()
    page = parse(render(tmp_path / "nbc.db", tmp_path / "out"))
    assert "pallas-iallreduce" in page.tables and "pallas-allreduce" in page.tables
    rows = page.tables["nbc-overlap"]
    assert rows[0][:3] == ["test", "bytes", "computing"]
    row = [r for r in rows[1:] if r[0] == "Iallreduce"][0]
    assert row[1] == str(1 << 20) and row[2] == "one"
    cols = {h: i for i, h in enumerate(rows[0])}
    lwk = [h for h in cols if h.startswith("lwk")][0]
    shm = [h for h in cols if h.startswith("linux-shm")][0]
    assert float(row[cols[lwk]]) == 90.0 and float(row[cols[shm]]) == 10.0
