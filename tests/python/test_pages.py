"""Small vs large pages (issue 12, CNW §4.1.2): campaign `pages`, the hugetlb pool a campaign
reserves, the page kind each yod run records, and the report's table built only from runs whose
record says they got what they asked for.  One real campaign: stream under lwk on 4 KiB and on
yod's default pages."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bobcat import paths
from bobcat.evaluation import campaign, configs, hugepool, runner
from bobcat.report import data as report_data
from bobcat.report import tables as report_tables
from bobcat.evaluation.parsers import Metric
from bobcat.evaluation.store import RunRecord, Store

STREAM = paths.libexec_dir() / "bench" / "stream.openmpi"


pytestmark = pytest.mark.usefixtures("no_bobcat_knobs")


@pytest.fixture
def cs():
    return configs.load()


def load(tmp_path: Path, text: str, cs: configs.ConfigSet) -> campaign.Campaign:
    p = tmp_path / "c.toml"
    p.write_text(text)
    return campaign.load(p, cs)


# --- campaign ------------------------------------------------------------------------------------

PAIRS = """
[campaign]
name = "pages"
repetitions = 2
configs = ["linux-shm", "lwk"]
modes = ["SN"]
mpis = ["openmpi"]
[[bench]]
name = "gups"
pages = ["large", "small"]
"""


def test_pages_pairs_run_back_to_back_for_yod_configurations_only(tmp_path, cs):
    pts = campaign.expand(load(tmp_path, PAIRS, cs))
    got = [(p.repetition, p.spec.config, p.spec.pages) for p in pts if p.spec.timed]
    assert got == [(r, c, pg) for r in (0, 1)
                   for c, pg in (("linux-shm", None), ("lwk", None), ("lwk", "small"))]
    # No untimed run for the account after them: in SN no traffic stays on a node.
    assert len(pts) == len(got)
    small = [p for p in pts if p.spec.pages]
    assert small[0].spec.run_params()["pages"] == "small" and "pages=small" in small[0].label()
    # The default-page run stores no params.pages: it is the same measurement as any lwk run.
    assert "pages" not in pts[1].spec.run_params()
    # --resume rebuilds the same runs from the stored spec.
    again = campaign.from_spec(json.loads(json.dumps(load(tmp_path, PAIRS, cs).to_spec())), cs)
    assert [(p.seq, p.spec) for p in campaign.expand(again)] == [(p.seq, p.spec) for p in pts]


@pytest.mark.parametrize("entry, message", [
    ('pages = ["medium"]', "pages: a list of distinct page sizes from large, small"),
    ('pages = ["small", "small"]', "distinct"),
    ('pages = ["large", "small"]\nconfigs = ["linux-shm"]', "none of this entry's configurations"),
])
def test_bad_pages_are_named(tmp_path, cs, entry, message):
    text = PAIRS.replace('pages = ["large", "small"]', entry)
    with pytest.raises(campaign.CampaignError, match=message) as e:
        load(tmp_path, text, cs)
    assert "[[bench]] #1 (gups)" in str(e.value)


def test_default_campaign_pairs_hpcc_stream_gups_and_quick_says_it_skips(cs):
    default = campaign.load(campaign.resolve("default"), cs)
    pts = campaign.expand(default)
    small = {(p.spec.benchmark, p.spec.config, p.spec.mode) for p in pts if p.spec.pages}
    assert small == {(b, "lwk", "SN") for b in ("hpcc", "stream", "gups")}
    # Every small-page run directly follows the default-page run of the same point.
    for i, p in enumerate(pts):
        if p.spec.pages:
            prev = pts[i - 1].spec
            assert (prev.benchmark, prev.config, prev.mode, prev.args, prev.pages) == \
                (p.spec.benchmark, "lwk", p.spec.mode, p.spec.args, None)
    assert len(small) * default.repetitions == sum(1 for p in pts if p.spec.pages)
    quick = campaign.load(campaign.resolve("quick"), cs)
    note = campaign.pages_plan(quick, campaign.expand(quick))["note"]
    assert "runs no small-page pairs" in note and "default campaign" in note


# --- the hugetlb pool ----------------------------------------------------------------------------

def test_job_pages_follow_yods_heap_plan(tmp_path):
    # A fixed heap per node (yod's default depends on this node's free memory).
    user = tmp_path / "configs.toml"
    user.write_text('[configs.lwk]\nvia_yod = true\nyod_args = ["--heap-node", "1G"]\n')
    cs = configs.load(user)
    spec = runner.RunSpec("stream", "lwk", "openmpi", "SN", ranks=2)
    assert hugepool.job_pages(spec, cs) == 2 * 512        # 1 GiB per rank, one rank per node
    spec.mode = "VN2"
    assert hugepool.job_pages(spec, cs) == 2 * 256        # the node's 1 GiB shared by two ranks
    spec.pages = "small"
    assert hugepool.job_pages(spec, cs) == 0
    assert hugepool.job_pages(runner.RunSpec("stream", "linux-shm", "openmpi", "SN"), cs) == 0
    # The default heap: what yod itself plans for the job, whole 2 MiB pages per rank.
    from bobcat.launcher.yod import Yod
    from bobcat.launcher.plan import parse_args
    y = Yod(parse_args(["-VN2", "-np", "2", "--mpi", "openmpi", "/bin/true"]))
    y.prepare()
    spec = runner.RunSpec("gups", "lwk", "openmpi", "VN2", ranks=2)
    assert hugepool.job_pages(spec, configs.load()) == 2 * -(-y.heaps[0] // (2 << 20)) > 0


def test_job_pages_of_a_job_yod_refuses_is_an_error(tmp_path):
    """The pool is sized from yod's pure plan (yod_plan.plan_heaps); a plan yod refuses is an error
    with yod's message, not a silent 0 pages."""
    from bobcat.launcher.plan import UsageError
    user = tmp_path / "configs.toml"
    user.write_text('[configs.lwk]\nvia_yod = true\nyod_args = ["--heap-node", "4k"]\n')
    spec = runner.RunSpec("stream", "lwk", "openmpi", "VN2", ranks=2)
    with pytest.raises(UsageError, match="less than a 4 KiB page per rank"):
        hugepool.job_pages(spec, configs.load(user))


@pytest.fixture
def fake_pool(tmp_path, monkeypatch):
    """/proc/meminfo and nr_hugepages as files: writing nr_hugepages 'reserves' the pages."""
    meminfo, nr = tmp_path / "meminfo", tmp_path / "nr_hugepages"

    def set_pool(total: int, free: int) -> None:
        meminfo.write_text(f"MemTotal: 1 kB\nHugePages_Total:  {total}\nHugePages_Free:  {free}\n")
        nr.write_text(f"{total}\n")

    monkeypatch.setattr(hugepool, "MEMINFO", meminfo)
    monkeypatch.setattr(hugepool, "NR_HUGEPAGES", nr)
    return set_pool, nr


def test_reservation_raises_the_pool_as_root_and_gives_back_only_what_it_added(fake_pool,
                                                                               monkeypatch):
    set_pool, nr = fake_pool
    set_pool(100, 40)                                     # 60 pages in use by someone else
    real_pool = hugepool.pool

    def kernel_pool():                                    # the kernel fills what was written
        total, free = real_pool()
        want = int(nr.read_text())
        return want, free + max(0, want - total)

    monkeypatch.setattr(hugepool, "pool", kernel_pool)
    with hugepool.Reservation(1024, is_root=True) as r:
        assert int(nr.read_text()) == 100 + 1024 - 40
        assert not r.short and "given back" in r.record["note"]
    assert int(nr.read_text()) == 100

    set_pool(3072, 3072)                                  # enough already: never touched
    nr.write_text("3072\n")
    with hugepool.Reservation(1024, is_root=True) as r:
        assert "cover" in r.record["note"]
    assert nr.read_text() == "3072\n" and r.raised_from is None


def test_overlapping_reservations_give_back_only_their_own_pages(fake_pool, monkeypatch):
    """Two campaigns (or a campaign and a test) reserving at once, ending in either order: each
    gives back what it added, so the pool ends where it started, never with orphan pages and
    never below what the other still holds."""
    set_pool, nr = fake_pool
    real_pool = hugepool.pool
    state = {"used": 0}

    def kernel_pool():                                    # every page reserved is free but `used`
        want = int(nr.read_text())
        return want, max(0, want - state["used"])

    monkeypatch.setattr(hugepool, "pool", kernel_pool)
    for first_out in ("a", "b"):
        set_pool(0, 0)
        state["used"] = 0
        a = hugepool.Reservation(300, is_root=True).__enter__()
        assert int(nr.read_text()) == 300
        state["used"] = 300                               # a's runs hold its pages
        b = hugepool.Reservation(200, is_root=True).__enter__()
        assert int(nr.read_text()) == 500 and b.raised_from == 300
        one, two = (a, b) if first_out == "a" else (b, a)
        one.__exit__(None, None, None)
        assert int(nr.read_text()) == (200 if first_out == "a" else 300)   # the other's stay
        two.__exit__(None, None, None)
        assert int(nr.read_text()) == 0, first_out
    assert real_pool is not kernel_pool


def test_scaling_benchmark_pool_gives_back_only_what_it_added(fake_pool, monkeypatch):
    """bench_scaling raises the pool step by step for growing jobs and follows the same rule."""
    from bobcat.bench import scaling as bench_scaling
    set_pool, nr = fake_pool
    monkeypatch.setattr(bench_scaling, "HUGE_SYSFS", nr)
    monkeypatch.setattr(bench_scaling.os, "geteuid", lambda: 0)
    state = {"used": 0}

    def kernel_pool():
        want = int(nr.read_text())
        return want, max(0, want - state["used"])

    monkeypatch.setattr(hugepool, "pool", kernel_pool)
    set_pool(100, 100)
    state["used"] = 100                                   # someone else's pages, in use
    hp = bench_scaling.HugePool()
    assert hp.ensure(50) and int(nr.read_text()) == 150
    assert hp.ensure(80) and int(nr.read_text()) == 180   # 30 more
    nr.write_text("230\n")                                # another job adds 50 meanwhile
    hp.restore()
    assert int(nr.read_text()) == 150                     # its 50 stay, our 80 go
    hp.restore()
    assert int(nr.read_text()) == 150                     # nothing given back twice


def test_reservation_says_why_it_cannot(fake_pool):
    set_pool, nr = fake_pool
    set_pool(0, 0)
    with hugepool.Reservation(1024, is_root=False) as r:
        assert r.short and "not root" in r.record["note"] and "1024" in r.record["note"]
        assert "not counted as large" in r.record["note"]
    assert nr.read_text() == "0\n"
    # Root, but the kernel finds no memory in 2 MiB pieces: the pool stays short, and is reset.
    with hugepool.Reservation(1024, is_root=True) as r:
        assert r.short and "only 0 are free" in r.record["note"]
    assert nr.read_text() == "0\n"


# --- the report's table, from stored records -----------------------------------------------------

def _record(store: Store, cid: int, rep: int, config: str, pages: str | None, got: str | None,
            ptrans: float, triad: float, mode: str = "SN") -> None:
    params = {"N": 1000, "NB": 128, "P": 1, "Q": 2, **({"pages": pages} if pages else {})}
    detail = {"via_yod": config == "lwk", **({"heap_pages": got} if got else {})}
    store.add_run(RunRecord(
        benchmark="hpcc", config=config, mpi="openmpi", mode=mode, ranks=2, params=params,
        started=0.0, duration=1.0, status="ok", exit_code=0, machine={}, config_detail=detail,
        probe_before=None, probe_after=None, placement="core", git_rev=None, command=[],
        raw_stdout="", raw_stderr="", campaign_id=cid, seq=rep, repetition=rep,
        metrics=[Metric("hpcc", "PTRANS_GBs", ptrans, "GB/s", "higher"),
                 Metric("hpcc", "StarSTREAM_Triad", triad, "GB/s", "higher"),
                 Metric("hpcc", "HPL_Tflops", 0.01, "Tflop/s", "higher")]))


def test_table_counts_only_verified_page_kinds(tmp_path):
    db = tmp_path / "r.db"
    st = Store(db)
    cid = st.start_campaign("default", {})
    # Three repetitions of lwk large (huge, thp, and one that fell back to 4 KiB) and small.
    for rep, (got, large, small) in enumerate([("huge", 2.0, 1.0), ("thp", 2.5, 1.5),
                                               ("small", 9.0, 1.2)]):
        _record(st, cid, rep, "lwk", None, got, large, 20.0)
        _record(st, cid, rep, "lwk", "small", "small", small, 19.0)
        _record(st, cid, rep, "linux-shm", None, None, 1.0, 18.0)
    # A small-page run with no record of what it got is not counted either.
    _record(st, cid, 3, "lwk", "small", None, 0.1, 1.0)
    st.set_campaign_status(cid, "done", {"pages": {"note": "n", "hugetlb": {
        "need_pages": 1024, "note": "not root: the hugetlb pool has 0 free 2 MiB pages"}}})
    st.close()
    t = report_tables.pages_table(report_data.load(db))
    assert t.empty_reason is None
    head = t.headers
    rows = {r[0]: dict(zip(head, r)) for r in t.rows}
    assert list(rows) == ["PTRANS", "HPL", "STREAM triad (per process)"]   # the paper's order
    p = rows["PTRANS"]
    # Repetition 2's small run counts; its large partner (4 KiB after all) does not.
    assert (p["config"], p["mode"], p["runs small/large"]) == ("lwk", "SN", "3/2")
    assert p["small"] == pytest.approx(1.2) and p["large"] == pytest.approx(2.25)
    assert p["small/large %"] == pytest.approx(100 * 1.2 / 2.25)
    assert p["spread %"] == "50–60"                       # 1/2 and 1.5/2.5: the paired repetitions
    assert p["large pages got"] == "huge ×1, thp ×1"
    assert p["CNW small/large"] == "36.2 % (SN)"
    assert rows["HPL"]["small/large %"] == pytest.approx(100.0)
    notes = " | ".join(t.notes)
    assert "not counted: 1 run of hpcc lwk/openmpi/SN ran at yod's default pages and got small" \
        in notes
    assert "asked for small pages, page kind not recorded" in notes
    assert "not root" in notes


def test_small_page_runs_stay_out_of_the_sn_vn_table(tmp_path):
    db = tmp_path / "r.db"
    st = Store(db)
    cid = st.start_campaign("default", {})
    _record(st, cid, 0, "lwk", None, "huge", 2.0, 20.0)
    _record(st, cid, 0, "lwk", "small", "small", 0.5, 19.0)
    _record(st, cid, 0, "lwk", None, "huge", 1.5, 10.0, mode="VN2")
    st.close()
    t = report_tables.sn_vs_vn(report_data.load(db))
    row = [r for r in t.rows if r[0] == "PTRANS"]
    assert len(row) == 1 and row[0][-2:] == [2.0, 1.5]


def test_small_page_runs_get_their_own_row_in_other_measurements(tmp_path):
    from bobcat.report.page import _other_measurements
    db = tmp_path / "r.db"
    st = Store(db)
    cid = st.start_campaign("default", {})
    _record(st, cid, 0, "lwk", None, "huge", 2.0, 20.0)
    _record(st, cid, 0, "lwk", "small", "small", 0.5, 19.0)
    st.close()
    text = _other_measurements(report_data.load(db), set())
    assert "Q=2</td>" in text and "Q=2, pages=small</td>" in text


def test_empty_table_says_why(tmp_path):
    db = tmp_path / "r.db"
    st = Store(db)
    cid = st.start_campaign("quick", {})
    _record(st, cid, 0, "lwk", None, "huge", 2.0, 20.0)
    st.set_campaign_status(cid, "done", {"pages": {"note": "small vs large pages: campaign quick "
                                                           "runs no small-page pairs"}})
    st.close()
    t = report_tables.pages_table(report_data.load(db))
    assert not t.rows and "campaign quick #1" in t.empty_reason
    assert "runs no small-page pairs" in t.empty_reason


# --- one real campaign ---------------------------------------------------------------------------

@pytest.mark.skipif(not STREAM.exists(), reason=f"{STREAM} not installed (build the tree and set "
                    "BOBCAT_HOME)")
def test_real_lwk_runs_record_the_page_kind_their_heap_got(tmp_path):
    camp = tmp_path / "pages.toml"
    camp.write_text("""
[campaign]
name = "pages"
repetitions = 1
configs = ["lwk"]
modes = ["VN2"]
mpis = ["openmpi"]
timeout_s = 120
[[bench]]
name = "stream"
args = ["--array-size", "1M", "--iters", "2"]
pages = ["large", "small"]
""")
    # lwk with yod's smallest heap (128 MiB a rank): populating 4 KiB pages stays quick on a
    # loaded node.
    cfg = tmp_path / "configs.toml"
    cfg.write_text('[configs.lwk]\nvia_yod = true\nyod_args = ["--heap", "128M"]\n')
    db = tmp_path / "r.db"
    r = subprocess.run([sys.executable, "-m", "bobcat.cli", "evaluate", "--campaign", str(camp),
                        "--configs", str(cfg), "--db", str(db), "--no-report"],
                       capture_output=True, text=True, timeout=400,
                       env=dict(os.environ, COLUMNS="200"))
    assert r.returncode == 0, r.stderr
    assert "small vs large pages: stream run on 4 KiB pages" in r.stderr
    assert "hugetlb pool" in r.stderr or "hugetlb pages" in r.stderr
    st = Store(db, read_only=True)
    rows = st.db.execute("SELECT id, params, config_detail, command FROM runs ORDER BY seq").fetchall()
    runs = [(json.loads(x["params"]), json.loads(x["config_detail"]), json.loads(x["command"]))
            for x in rows]
    # The third run is the campaign's untimed one for the account, at yod's default pages.
    (p_large, d_large, c_large), (p_small, d_small, c_small), (p_acct, d_acct, c_acct) = runs
    assert "pages" not in p_acct and "--pages" not in c_acct and "--stats" in c_acct
    assert "untimed" in d_acct["account"] and not st.metrics_of(rows[2]["id"])
    assert st.account_of(rows[2]["id"])["on_node_calls"] >= 0
    assert st.account_of(rows[0]["id"]) is None and "--stats" not in c_large
    st.close()
    assert "pages" not in p_large and p_small["pages"] == "small"
    assert "--pages" not in c_large and c_small[c_small.index("--pages") + 1] == "small"
    # What yod's node line said, per node and as the run's kind.
    assert d_small["heap_pages"] == "small"
    assert [n["pages"] for n in d_small["heap_nodes"]] == ["small"]
    assert d_large["heap_pages"] in runner.HEAP_KINDS
    assert [n["pages"] for n in d_large["heap_nodes"]] == [d_large["heap_pages"]]
    assert int(d_large["heap_nodes"][0]["page_size"]) == \
        (4096 if d_large["heap_pages"] == "small" else 2 << 20)
    # The report pairs them when the default run got 2 MiB pages, and says why not otherwise.
    t = report_tables.pages_table(report_data.load(db))
    if d_large["heap_pages"] == "small":
        assert "ran at yod's default pages and got small" in (t.empty_reason or "")
    else:
        triad = [r for r in t.rows if r[0].startswith("stream/triad") and "phase=all" in r[0]]
        row = dict(zip(t.headers, triad[0])) if triad else {}
        assert row.get("runs small/large") == "1/1"
        assert row.get("large pages got") == f"{d_large['heap_pages']} ×1"


def test_yod_node_file_option():
    from bobcat.launcher.plan import parse_args
    assert parse_args(["-np", "1", "--node-file", "/tmp/x", "/bin/true"]).node_file == "/tmp/x"
    assert parse_args(["-np", "1", "--node-file=/tmp/y", "/bin/true"]).node_file == "/tmp/y"
    yod = paths.home() / "bin" / "yod"
    if not yod.exists():
        pytest.skip(f"{yod} not installed")
    r = subprocess.run([str(yod), "-np", "1", "--no-preload", "--node-file", "/nonexistent/dir/f",
                        "/bin/true"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--node-file /nonexistent/dir/f: cannot write it" in r.stderr
