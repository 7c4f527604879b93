"""The `shmem` benchmark in the evaluation (issue 11): bench/shmem/shmem_bench.c under bobcat's
OpenSHMEM (lwk, through bobcat's oshrun) and under Debian's Open MPI oshmem (the peer), its
parsing, its place in the campaigns, `compare`'s headline rule and the report's SHMEM section.

The parser tests read output captured from real runs on this machine (tests/python/data/shmem_*);
the end-to-end tests run the real programs through `bobcat run` with a small time budget.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from bobcat import paths
from bobcat.evaluation import campaign, configs, parsers, runner, shmem_run, store
from bobcat.report.headline import is_headline
from bobcat.report.page import render

DATA = Path(__file__).parent / "data"
CAPTURED = {"bobcat": "shmem_bobcat_openmpi.jsonl", "oshmem": "shmem_oshmem.jsonl"}
METRICS = {"put_latency", "putmem_issue", "get_latency", "fetch_add", "fetch_add_contended",
           "barrier_all", "put_bw", "memcpy_bw"}
BW_SIZES = [64 << 10, 256 << 10, 1 << 20, 4 << 20]
BENCH = paths.libexec_dir() / "bench" / "shmem-bench.openmpi"
needs_bench = pytest.mark.skipif(not BENCH.exists(), reason=f"{BENCH} not installed (build the "
                                 "tree and set BOBCAT_HOME)")


pytestmark = pytest.mark.usefixtures("no_bobcat_knobs")


def bobcat(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = dict(os.environ, COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "bobcat.cli", *args], capture_output=True,
                          text=True, timeout=timeout, env=env)


def _objects(text: str) -> list[dict]:
    return [json.loads(ln) for ln in text.splitlines() if ln.strip()]


# --- parsing real output ---------------------------------------------------------------------

@pytest.mark.parametrize("impl", sorted(CAPTURED))
def test_parser_on_real_output(impl):
    text = (DATA / CAPTURED[impl]).read_text()
    p = parsers.parse_jsonl(text)
    assert not p.problems
    assert p.valid and p.done["impl"] == impl and p.done["pes"] == 2
    raw = [o for o in _objects(text) if "metric" in o]
    # Every line becomes one metric with its value, unit, direction and message size.
    assert [(m.bench, m.name, m.value, m.unit, m.better, m.size) for m in p.metrics] == \
        [("shmem", o["metric"], float(o["value"]), o["unit"], o["better"],
          o["params"].get("bytes")) for o in raw]
    assert {m.name for m in p.metrics} == METRICS
    for name in ("put_bw", "memcpy_bw"):
        got = [m for m in p.metrics if m.name == name]
        assert sorted(m.size for m in got) == BW_SIZES
        assert all(m.unit == "GB/s" and m.better == "higher" and m.value > 0 for m in got)
    lat = [m for m in p.metrics if m.name in METRICS - {"put_bw", "memcpy_bw"}]
    assert all(m.unit == "ns" and m.better == "lower" for m in lat)
    assert all(m.size == 8 for m in lat if m.name != "barrier_all")
    assert all(m.params["ranks"] == 2 for m in p.metrics)


def test_crash_record_from_real_oshmem_stderr():
    err = (DATA / "shmem_oshmem_stderr.txt").read_text()
    rec = shmem_run.crash_record(139, err, "known defect")
    assert rec["exit_code"] == 139 and rec["signal"] == "SIGSEGV" and rec["known"] == "known defect"
    assert any("Segmentation fault" in ln for ln in rec["stderr"])
    assert shmem_run.crash_record(-11, "", "x")["signal"] == "SIGSEGV"
    assert shmem_run.crash_record(3, "oops\n", "x") == {
        "exit_code": 3, "signal": None, "known": "x", "stderr": ["oops"]}


def test_headline_rule():
    for name, size in (("put_latency", 8), ("get_latency", 8), ("fetch_add", 8),
                       ("fetch_add_contended", 8),
                       ("barrier_all", None), ("put_bw", 64 << 10), ("put_bw", 4 << 20)):
        assert is_headline("shmem", "shmem", name, size, {}), name
    for name in ("memcpy_bw", "putmem_issue"):
        assert not is_headline("shmem", "shmem", name, 8, {}), name


# --- the runner's rule for a job that dies after its valid results ----------------------------

def _stand_in(monkeypatch, tmp_path, known: str | None) -> None:
    """shmem_run.launch replaced by a shell that prints the captured oshmem output and stderr and
    exits 139, as oshmem's oshrun does here: the runner's status rule without a real crash."""
    script = tmp_path / "crash.sh"
    script.write_text(f"#!/bin/sh\ncat {DATA / CAPTURED['oshmem']}\n"
                      f"cat {DATA / 'shmem_oshmem_stderr.txt'} >&2\nexit 139\n")
    script.chmod(0o755)

    def launch(cs, config, vendor, mode, ranks, args):
        detail = {"config": config.name, "via_yod": False, "env": {}, "shmem_impl": "oshmem"}
        if known:
            detail["known_crash_after_done"] = known
        return configs.Launch([str(script)], dict(os.environ), detail)

    monkeypatch.setattr(shmem_run, "launch", launch)


@pytest.mark.parametrize("known", ["Open MPI's oshmem crashes in shmem_finalize", None])
def test_crash_after_done_keeps_results_only_for_a_known_defect(monkeypatch, tmp_path, known):
    _stand_in(monkeypatch, tmp_path, known)
    cs = configs.load()
    spec = runner.RunSpec("shmem", "linux-shm", "openmpi", "VN2", timeout=60)
    rec = runner.run(spec, cs)
    assert rec.exit_code == 139
    assert [m.name for m in rec.metrics] == [o["metric"] for o in _objects(
        (DATA / CAPTURED["oshmem"]).read_text()) if "metric" in o]
    if known:
        assert rec.status == "ok"
        crash = rec.config_detail["crashed_after_done"]
        assert crash["exit_code"] == 139 and crash["signal"] == "SIGSEGV" and crash["known"] == known
        assert "exited 139 after its valid done line" in rec.raw_stderr
    else:   # bobcat's own library (or anything else) crashing is a failure, as before
        assert rec.status == "failed" and "crashed_after_done" not in rec.config_detail


# --- availability, campaigns -------------------------------------------------------------------

def test_unavailable_pairings_are_skips_with_reasons(monkeypatch, tmp_path):
    cs = configs.load()
    shm = cs.get("linux-shm")
    ok, why = runner.bench_available("shmem", "mpich", shm, "VN2")
    assert not ok and "MPICH ships no OpenSHMEM" in why
    ok, why = runner.bench_available("shmem", "openmpi", cs.get("lwk"), "SN")
    assert not ok and "2 PEs on one node" in why
    # No oshmem compiler: the peer is a Skip naming it (the cached build is looked up afresh).
    monkeypatch.setattr(shmem_run, "OSHMEM_CC", str(tmp_path / "no-oshcc"))
    shmem_run.oshmem_program.cache_clear()
    try:
        ok, why = runner.bench_available("shmem", "openmpi", shm, "VN2")
        assert not ok and "no-oshcc not found" in why
        camp = tmp_path / "s.toml"
        camp.write_text('[campaign]\nname = "s"\nrepetitions = 1\nconfigs = ["linux-shm"]\n'
                        'mpis = ["openmpi", "mpich"]\n[[bench]]\nname = "shmem"\n')
        runnable, skipped = campaign.plan(campaign.load(camp, cs), cs)
        assert not runnable
        reasons = {s.mpi: s.reason for s in skipped}
        assert "no-oshcc not found" in reasons["openmpi"] and "MPICH" in reasons["mpich"]
    finally:
        shmem_run.oshmem_program.cache_clear()


def test_peer_configurations_mean_their_ucx_transport_for_oshmem():
    """oshmem's data path is UCX, which `--mca btl` does not reach: each configuration gives the
    peer its UCX settings (named with -x on the command line), as MPICH's ch4:ucx gets them."""
    cs = configs.load()
    want = {"linux-shm": {}, "linux-shm-nocma": {"UCX_TLS": "sysv,posix,self"},
            "linux-nic": {"UCX_TLS": "tcp,self"}}
    for name, ucx in want.items():
        assert shmem_run.ucx_env(cs, cs.get(name), "VN2") == ucx, name
    ok, _ = runner.bench_available("shmem", "openmpi", cs.get("linux-nic"), "VN2")
    if ok:
        lc = shmem_run.launch(cs, cs.get("linux-nic"), "openmpi", "VN2", 2, [])
        assert lc.env["UCX_TLS"] == "tcp,self" and lc.detail["env"]["UCX_TLS"] == "tcp,self"
        i = lc.argv.index("UCX_TLS")
        assert lc.argv[i - 1] == "-x" and i < lc.argv.index("--impl")
        assert ["--mca", "btl", "tcp,self"] == lc.argv[lc.argv.index("--mca"):][:3]


def test_builtin_campaigns_interleave_the_shmem_pair_within_budget():
    cs = configs.load()
    for name, budget_min in (("default", 16.0), ("quick", 3.0)):
        c = campaign.load(campaign.resolve(name), cs)
        pts = [p for p in campaign.expand(c) if p.spec.benchmark == "shmem"]
        assert [(p.spec.config, p.spec.mpi, p.spec.mode) for p in pts] == \
            [("linux-shm", "openmpi", "VN2"), ("lwk", "openmpi", "VN2")] * c.repetitions
        # the pair runs back to back inside each repetition
        assert all(b.seq == a.seq + 1 for a, b in zip(pts[::2], pts[1::2]))
        assert campaign.estimate_s(campaign.expand(c)) <= budget_min * 60, name


# --- end to end on this machine -----------------------------------------------------------------

def _stored_run(db: Path) -> dict:
    r = bobcat("export", "--json", "--db", str(db))
    assert r.returncode == 0, r.stderr
    runs = json.loads(r.stdout)["runs"]
    assert len(runs) == 1
    return runs[0]


def _check_stored(run: dict, impl: str) -> None:
    assert run["status"] == "ok", run["raw_stderr"][-2000:]
    assert run["config_detail"]["shmem_impl"] == impl
    assert run["config_detail"]["done"]["impl"] == impl and run["config_detail"]["done"]["valid"]
    # The stored metrics are exactly the program's lines (read here from its raw stdout).
    raw = [o for o in _objects(run["raw_stdout"]) if "metric" in o]
    assert sorted((m["name"], m["size"], m["value"]) for m in run["metrics"]) == \
        sorted((o["metric"], o["params"].get("bytes"), float(o["value"])) for o in raw)
    assert {m["name"] for m in run["metrics"]} == METRICS
    assert sorted(m["size"] for m in run["metrics"] if m["name"] == "put_bw") == BW_SIZES


@needs_bench
def test_bobcat_run_shmem_under_lwk(tmp_path):
    cs = configs.load()
    ok, why = configs.availability(cs, cs.get("lwk"), "openmpi")
    if not ok:
        pytest.skip(f"lwk unavailable: {why}")
    db = tmp_path / "r.db"
    r = bobcat("run", "shmem", "--config", "lwk", "--mode", "VN2", "--mpi", "openmpi", "--db",
               str(db), "--timeout", "240", "--", "--time", "0.02", "--reps", "3")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "put_latency" in r.stdout and "heap pages:" in r.stdout
    run = _stored_run(db)
    _check_stored(run, "bobcat")
    assert Path(run["command"][0]).name == "oshrun" and "--node-file" in run["command"]
    assert run["command"][-2:] == ["--impl", "bobcat"]
    assert run["config_detail"]["env"]["SHMEM_SYMMETRIC_SIZE"] == shmem_run.SYMMETRIC_SIZE
    assert run["config_detail"]["heap_pages"] in ("huge", "thp", "small")
    # bobcat's own library never counts as crashed; under a heavy load tearing down the job's
    # 4 KiB-page heaps can outlast the runner's grace after the done line (then it is ended).
    assert "crashed_after_done" not in run["config_detail"]
    assert run["exit_code"] == 0 or (run["exit_code"] is None
                                     and run["config_detail"].get("ended_after_done_s"))


@needs_bench
def test_bobcat_run_shmem_oshmem_peer(tmp_path):
    cs = configs.load()
    ok, why = runner.bench_available("shmem", "openmpi", cs.get("linux-shm"), "VN2")
    if not ok:
        pytest.skip(f"the oshmem peer is unavailable here: {why}")
    db = tmp_path / "r.db"
    r = bobcat("run", "shmem", "--config", "linux-shm", "--mode", "VN2", "--mpi", "openmpi",
               "--db", str(db), "--timeout", "240", "--", "--time", "0.02", "--reps", "3")
    assert r.returncode == 0, r.stderr[-3000:]
    run = _stored_run(db)
    _check_stored(run, "oshmem")
    assert run["command"][0] == shmem_run.OSHMEM_RUN and "--bind-to" in run["command"]
    crash = run["config_detail"].get("crashed_after_done")
    if run["exit_code"]:          # oshmem's crash in shmem_finalize: recorded, never silent
        assert crash and crash["exit_code"] == run["exit_code"]
        assert "results above are kept" in r.stderr
    else:                         # an oshmem that finalizes cleanly leaves no crash record
        assert crash is None


@pytest.mark.parametrize("args, message", [
    (["--config", "linux-shm", "--mpi", "mpich", "--mode", "VN2"], "MPICH ships no OpenSHMEM"),
    (["--config", "lwk", "--mpi", "openmpi", "--mode", "SN"], "2 PEs on one node"),
])
def test_unavailable_runs_are_bad_input(tmp_path, args, message):
    r = bobcat("run", "shmem", *args, "--db", str(tmp_path / "r.db"))
    assert r.returncode == 2 and message in r.stderr, r.stderr
    assert not (tmp_path / "r.db").exists()


# --- the report ---------------------------------------------------------------------------------

REP_FACTORS = (1.0, 1.2, 0.9)


# The probe before each fixture run (ns), per implementation and repetition.
PROBES = {"bobcat": [50.0, 58.0, 270.0], "oshmem": [55.0, 61.0, 49.0]}


def _fixture_db(path: Path, impls: tuple[str, ...] = ("bobcat", "oshmem"),
                skipped: list[dict] | None = None) -> dict:
    """Three repetitions of the captured real runs (values scaled by REP_FACTORS), stored through
    the store; returns {(impl, metric, size): [values]} for independent medians."""
    st = store.Store(path)
    cid = st.start_campaign("default", {})
    values: dict[tuple, list[float]] = {}
    for rep, f in enumerate(REP_FACTORS):
        for impl in impls:
            config = "lwk" if impl == "bobcat" else "linux-shm"
            p = parsers.parse_jsonl((DATA / CAPTURED[impl]).read_text())
            for m in p.metrics:
                m.value *= f
                values.setdefault((impl, m.name, m.size), []).append(m.value)
            detail = {"via_yod": impl == "bobcat", "shmem_impl": impl, "done": p.done}
            if impl == "oshmem":
                detail["crashed_after_done"] = shmem_run.crash_record(
                    139, (DATA / "shmem_oshmem_stderr.txt").read_text(), shmem_run.OSHMEM_DEFECT)
            rec = store.RunRecord(
                benchmark="shmem", config=config, mpi="openmpi", mode="VN2", ranks=2,
                params={"time": "0.05", "reps": "7", "args": ["--time", "0.05"]}, started=rep,
                duration=1.0, status="ok", exit_code=139 if impl == "oshmem" else 0, machine={},
                config_detail=detail, probe_after=None, placement="core",
                probe_before={"bench": "probe", "metric": "oneway_ns", "value": PROBES[impl][rep],
                              "placement": "core"},
                git_rev=None, command=["x"], raw_stdout="", raw_stderr="", metrics=p.metrics,
                campaign_id=cid, seq=rep, repetition=rep)
            st.add_run(rec)
    st.set_campaign_status(cid, "done", campaign.summary_of({}, [campaign.Skip(**s) for s in
                                                                 skipped or []], 0))
    st.close()
    return values


class _Rows(HTMLParser):
    """The cells of the table that follows the element with id="shmem"."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self._armed = self._in = False
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if dict(attrs).get("id") == "shmem":
            self._armed = True
        elif tag == "table" and self._armed:
            self._in, self._armed = True, False
        elif tag == "tr" and self._in:
            self.rows.append([])
        elif tag in ("td", "th") and self._in:
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "table":
            self._in = False
        elif tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def _shmem_rows(index: Path) -> dict[str, list[str]]:
    p = _Rows()
    p.feed(index.read_text(encoding="utf-8"))
    return {"header": p.rows[0], **{r[0]: r for r in p.rows[1:]}}


def test_report_shmem_section(tmp_path):
    values = _fixture_db(tmp_path / "r.db")
    index = render(tmp_path / "r.db", tmp_path / "out")
    text = index.read_text()
    assert 'id="shmem-sec"' in text and "Cray SHMEM Put Latency" in text
    assert (tmp_path / "out" / "figures" / "figS3.png").read_bytes()[:4] == b"\x89PNG"
    rows = _shmem_rows(index)
    head = rows["header"]
    lwk, osh = head.index("lwk openmpi VN2 (bobcat)"), head.index("linux-shm openmpi VN2 (oshmem)")
    def num(cell: str, want: float) -> bool:     # the page prints 4 significant digits
        return float(cell) == pytest.approx(want, rel=1e-3)

    for name, text_ in (("put_latency", "put 8 B"), ("fetch_add", "atomic fetch_add"),
                        ("barrier_all", "barrier_all")):
        row = next(r for k, r in rows.items() if k.startswith(text_))
        size = None if name == "barrier_all" else 8
        want_l = statistics.median(values[("bobcat", name, size)])
        want_o = statistics.median(values[("oshmem", name, size)])
        assert num(row[lwk], want_l) and num(row[osh], want_o), row
        assert num(row[-2], want_o / want_l), row      # speed-up of times: peer / bobcat
    # The placement each series met: the median of its runs' probes, no speed-up.
    row = next(r for k, r in rows.items() if k.startswith("core-to-core probe"))
    assert num(row[lwk], statistics.median(PROBES["bobcat"])) and row[-2] == "—"
    assert num(row[osh], statistics.median(PROBES["oshmem"]))
    row = rows["put bandwidth 1048576 B"]
    want_l = statistics.median(values[("bobcat", "put_bw", 1 << 20)])
    want_o = statistics.median(values[("oshmem", "put_bw", 1 << 20)])
    assert num(row[-2], want_l / want_o)               # of rates: bobcat / peer
    # put / memcpy from each run's own pair: the repetition factor cancels.
    for size in BW_SIZES:
        row = rows[f"put / memcpy {size} B"]
        want = 100 * values[("bobcat", "put_bw", size)][0] / values[("bobcat", "memcpy_bw", size)][0]
        assert num(row[lwk], want) and row[-2] == "—" and row[-1] == "≥ 90 %"
    assert "3 of 3 runs printed valid results and then crashed (exit 139 (SIGSEGV))" in text
    # The SHMEM runs are not "other measurements" and not work for the lwk-vs-X tables.
    assert 'id="other-shmem"' not in text


def test_report_says_which_side_was_not_measured(tmp_path):
    skip = {"benchmark": "shmem", "config": "linux-shm", "mpi": "openmpi", "mode": "VN2",
            "reason": "Open MPI's OpenSHMEM compiler /usr/bin/oshcc not found", "runs": 3}
    _fixture_db(tmp_path / "r.db", ("bobcat",), [skip])
    text = render(tmp_path / "r.db", tmp_path / "out").read_text()
    assert "the Open MPI oshmem peer not measured (why: linux-shm/openmpi/VN2 in campaign " \
           "default #1: Open MPI&#x27;s OpenSHMEM compiler /usr/bin/oshcc not found)" in text
    assert (tmp_path / "out" / "figures" / "figS3.png").exists()
