"""Tests of `bobcat.report.render`: a fixture database written per contracts.md §4 is rendered,
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

from bobcat import report_tables
from bobcat.plots import ratio_grid
from bobcat.report import render

SCHEMA = """
CREATE TABLE meta      (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE campaigns (id INTEGER PRIMARY KEY, name TEXT, spec TEXT, started REAL,
                        finished REAL, status TEXT);
CREATE TABLE runs      (id INTEGER PRIMARY KEY, campaign_id INTEGER, seq INTEGER,
                        benchmark TEXT, config TEXT, mpi TEXT, mode TEXT, ranks INTEGER,
                        params TEXT, repetition INTEGER, started REAL, duration REAL,
                        status TEXT, exit_code INTEGER,
                        machine TEXT, config_detail TEXT,
                        probe_before TEXT, probe_after TEXT,
                        placement TEXT, git_rev TEXT,
                        command TEXT, raw_stdout TEXT, raw_stderr TEXT);
CREATE TABLE metrics   (run_id INTEGER REFERENCES runs(id), bench TEXT, name TEXT, value REAL,
                        unit TEXT, better TEXT, size INTEGER, params TEXT);
"""

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
        self.con.execute("INSERT INTO campaigns VALUES (1, 'default', '{}', 0, 1, 'done')")
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


def build_full(path: Path, configs=("lwk", "linux-shm", "linux-nic")) -> Fixture:
    fx = Fixture(path)
    for config in configs:
        for mode in ("SN", "VN2"):
            for rep, f in enumerate(REP_FACTORS):
                for test in ("PingPong", "Barrier", "Sendrecv", "Bcast", "Allreduce",
                             "Alltoall"):
                    ms = []
                    for ranks in ((2,) if test == "PingPong" else (2, 4)):
                        for size in ((None,) if test == "Barrier" else SIZES):
                            t = imb_time(test, config, ranks, size or 0) * f
                            p = {"ranks": ranks, "test": test}
                            if size is not None:
                                p["bytes"] = size
                            for name, v in (("t_min", 0.9 * t), ("t_avg", t),
                                            ("t_max", 1.2 * t)):
                                ms.append({"name": name, "value": v, "unit": "us",
                                           "better": "lower", "params": p})
                            if test == "PingPong" and size:
                                ms.append({"name": "bandwidth", "value": size / t,
                                           "unit": "MB/s", "params": p})
                    fx.run("imb", config, mode, 4, rep, ms, {"test": test})
                # HPCC: VN2 does the same work at 90 % of SN's rate; linux-nic a third of lwk.
                scale = {"lwk": 1.0, "linux-shm": 0.8, "linux-nic": 0.3}[config]
                vn = 0.9 if mode == "VN2" else 1.0
                hp = [("HPL_Tflops", 0.010 * scale * vn * f, "Tflop/s", "higher"),
                      ("PTRANS_GBs", 2.5 * scale * vn * f, "GB/s", "higher"),
                      ("MPIRandomAccess_GUPs", 0.025 * scale * vn * f, "GUP/s", "higher"),
                      ("MPIFFT_Gflops", 6.5 * scale * vn * f, "Gflop/s", "higher"),
                      ("RandomlyOrderedRingLatency_usec", 0.1 / scale * f, "usec", "lower"),
                      ("NaturallyOrderedRingLatency_usec", 0.09 / scale * f, "usec", "lower"),
                      ("RandomlyOrderedRingBandwidth_GBytes", 14 * scale * f, "GB/s", "higher"),
                      ("NaturallyOrderedRingBandwidth_GBytes", 15 * scale * f, "GB/s",
                       "higher")]
                fx.run("hpcc", config, mode, 2, rep,
                       [{"name": n, "value": v, "unit": u, "better": b} for n, v, u, b in hp])
                for pages, pf in (("small", 0.95), ("large", 1.0)):
                    fx.run("stream", config, mode, 2, rep,
                           [{"name": "triad", "value": 40.0 * pf * f, "unit": "GB/s",
                             "params": {"pages": pages}}], {"pages": pages})
                fx.run("selfish", config, mode, 1, rep,
                       [{"name": "detours_per_s", "value": 550.0 * f, "unit": "1/s",
                         "better": "lower"},
                        {"name": "median_us", "value": 14.5, "unit": "us", "better": "lower"},
                        {"name": "lost_pct", "value": 0.7 * f, "unit": "%", "better": "lower"}]
                       + [{"name": "hist", "value": c * f, "unit": "count", "better": "lower",
                           "params": {"bin_us": b}}
                          for b, c in ((1, 10), (2, 50), (4, 300), (8, 2000), (16, 700),
                                       (32, 40), (64, 3))])
    return fx


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
    return path


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


def test_render_never_writes_the_database(full_db, tmp_path):
    before = hashlib.sha256(full_db.read_bytes()).hexdigest()
    render(full_db, tmp_path / "r")
    assert hashlib.sha256(full_db.read_bytes()).hexdigest() == before


def test_ratio_surface_is_reference_time_over_other_time(full_db):
    ds = report_tables.load(full_db)
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
        report_tables.fmt(want))
    # STREAM ran with explicit page sizes: quoted per page size, not pooled.
    col = [h for h in page.tables["headline"][0] if h.startswith("STREAM triad")][0]
    assert _cell(page, "headline", "lwk openmpi SN", col) == (
        f"large: {report_tables.fmt(40.0)}; small: {report_tables.fmt(38.0)} [np 2]")

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

    # Small vs large pages: triad 0.95 × → 95 %.
    pages = page.tables["pages"]
    assert len(pages) == 1 + 3 * 2     # every config × mode
    assert all(float(r[-1]) == pytest.approx(95.0, rel=1e-3) for r in pages[1:])

    # SN vs VN2 HPCC table holds both modes.
    assert page.tables["hpcc-sn-vn"][0][-2:] == ["SN mode", "VN2 mode"]
    # Pallas tables: one per IMB test, rows per size.
    assert {t for t in page.tables if t.startswith("pallas-")} == {
        "pallas-pingpong", "pallas-barrier", "pallas-sendrecv", "pallas-bcast",
        "pallas-allreduce", "pallas-alltoall"}
    assert [r[0] for r in page.tables["pallas-bcast"][1:]] == [str(s) for s in SIZES]
    # Selfish: scalar metrics per series.
    sel = page.tables["selfish"]
    assert sel[0][1].startswith("detours_per_s") and len(sel) == 1 + 6


def test_coefficient_of_variation(full_report):
    page = parse(full_report)
    vals = [0.1 * f for f in REP_FACTORS]    # lwk ring latency, one value per repetition
    want = 100 * statistics.stdev(vals) / statistics.fmean(vals)
    rows = [r for r in page.tables["cov-detail"] if r[0] == "lwk openmpi SN"]
    # Every lwk SN measurement has the same relative spread, so all CoVs equal the computed one.
    assert rows and all(float(r[3]) == pytest.approx(want, rel=1e-3) for r in rows)
    assert report_tables.cov([1.0]) is None


def test_placement_policies(full_db, tmp_path):
    shown = parse(render(full_db, tmp_path / "all"))
    assert any(r[8] == "smt" and r[-1] == "yes" for r in shown.tables["runs"][1:])
    assert any(r[7] == "failed" and r[-1] == "no" for r in shown.tables["runs"][1:])

    # The smt outlier pulls lwk VN2 PTRANS into four values; excluding it leaves three.
    ex = report_tables.load(full_db, "exclude-outliers")
    assert ex.dominant_placement == "core"
    vals = report_tables.per_run_values(
        ex.select(lambda s: s.name == "PTRANS_GBs" and s.run.config == "lwk"
                  and s.run.mode == "VN2"), lambda s: 0)[0]
    assert sorted(vals) == pytest.approx(sorted(2.5 * 0.9 * f for f in REP_FACTORS))
    page = parse(render(full_db, tmp_path / "ex", placements="exclude-outliers"))
    assert any(r[8] == "smt" and r[-1] == "no" for r in page.tables["runs"][1:])

    # Separate: the smt run becomes its own series; the core series' median excludes it.
    sep = parse(render(full_db, tmp_path / "sep", placements="separate"))
    col = [h for h in sep.tables["headline"][0] if h.startswith("PTRANS")][0]
    core = statistics.median(2.5 * 0.9 * f for f in REP_FACTORS)
    assert _cell(sep, "headline", "lwk openmpi VN2 [core]", col).startswith(
        report_tables.fmt(core) + " ")
    assert _cell(sep, "headline", "lwk openmpi VN2 [smt]", col).startswith(
        report_tables.fmt(2.5 * 0.9 / SMT_SLOWDOWN) + " ")
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
    assert sum("not measured" in c for c in page.captions) == 15


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
