"""The CLI's output where people keep it: through a pipe (not a terminal), never truncated;
`compare`'s headline metrics and formats; a campaign's progress, one line per run as it ends."""
import csv
import io
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from bobcat import paths
from bobcat.evaluation import configs, parsers, runner
from bobcat.report.headline import HPCC_RESULTS
from bobcat.evaluation.store import RunRecord, Store

DATA = Path(__file__).parent / "data"
SIZES = (0, 8, 1024, 64 << 10, 1 << 20)
HPCC_INPUTS = ("HPL_N", "HPL_NB", "HPL_nprow", "HPL_npcol", "PTRANS_n", "MPIFFT_N", "CommWorldProcs")
A, B = "linux-shm-with-a-long-name", "linux-nic-with-an-even-longer-name"


pytestmark = pytest.mark.usefixtures("no_bobcat_knobs")


def bobcat(*args, env=None, timeout=300):
    """The CLI with stdout and stderr pipes, as in `bobcat ... | less`; COLUMNS as a terminal
    would set it, which must not bring truncation back."""
    e = {k: v for k, v in os.environ.items() if k not in ("TTY_COMPATIBLE", "FORCE_COLOR")}
    e["COLUMNS"] = "40"
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "bobcat.cli", *args], capture_output=True,
                          text=True, timeout=timeout, env=e)


def _record(config, benchmark, metrics, rep):
    return RunRecord(benchmark=benchmark, config=config, mpi="openmpi", mode="VN2", ranks=2,
                     params={}, started=time.time(), duration=1.0, status="ok", exit_code=0,
                     machine={}, config_detail={}, probe_before=None, probe_after=None,
                     placement="core", git_rev=None, command=["x"], raw_stdout="", raw_stderr="",
                     metrics=metrics, campaign_id=None, seq=None, repetition=rep)


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    """Two configurations (B twice as slow, or half the rate), each with two runs of: IMB PingPong
    and Allreduce at 5 sizes, Barrier, and HPCC's captured summary (inputs and results)."""
    path = tmp_path_factory.mktemp("console") / "r.db"
    hpcc = parsers.parse_hpcc((DATA / "hpccoutf_openmpi_n2000_p1q2.txt").read_text()).metrics
    s = Store(path)
    for config, f in ((A, 1.0), (B, 2.0)):
        for rep in range(2):
            imb = []
            for test in ("pingpong", "allreduce"):
                for size in SIZES:
                    for name, v in (("t_min", 1.0), ("t_avg", 1.5), ("t_max", 2.0)):
                        imb.append(parsers.Metric(test, name, v * f * (1 + size / 1e4), "us",
                                                  "lower", {"ranks": 2, "bytes": size}))
                    if test == "pingpong":
                        imb.append(parsers.Metric(test, "bandwidth", size / f, "MB/s", "higher",
                                                  {"ranks": 2, "bytes": size}))
            imb.append(parsers.Metric("barrier", "t_avg", 3.0 * f, "us", "lower", {"ranks": 2}))
            s.add_run(_record(config, "imb", imb, rep))
            scaled = [parsers.Metric(m.bench, m.name, m.value / f if m.better == "higher" else
                                     m.value * f, m.unit, m.better, m.params) for m in hpcc]
            s.add_run(_record(config, "hpcc", scaled, rep))
    s.close()
    return path


def _assert_whole(text):
    assert "…" not in text, text  # rich's mark of a cut cell


def test_compare_through_a_pipe_shows_headline_metrics_whole(db):
    r = bobcat("compare", A, B, "--db", str(db))
    assert r.returncode == 0, r.stderr
    _assert_whole(r.stdout)
    lines = r.stdout.splitlines()
    # Full cells: the configurations' long names, in the header and in the verdict column.
    assert any(f"A {A}" in ln and f"B {B}" in ln for ln in lines), r.stdout
    rows = [[c.strip() for c in ln.split("│")[1:-1]] for ln in lines if ln.startswith("│")]
    body = [c for c in rows if c and c[0] not in ("bench", "")]
    got = {(c[0], c[1], c[2]) for c in body}
    assert got == {("imb/pingpong", "t_avg", "8"), ("imb/pingpong", "bandwidth", "65536"),
                   ("imb/pingpong", "bandwidth", "1048576"), ("imb/allreduce", "t_avg", "8"),
                   ("imb/allreduce", "t_avg", "65536"), ("imb/allreduce", "t_avg", "1048576"),
                   ("imb/barrier", "t_avg", "")} | {("hpcc", k, "") for k in HPCC_RESULTS}, got
    assert all(c[-1] == A for c in body), body  # B is twice as slow everywhere
    assert max(len(ln) for ln in lines) > 80  # laid out at full width, not cut to 80 or COLUMNS


def test_compare_all_includes_what_the_headline_leaves_out(db):
    r = bobcat("compare", A, B, "--db", str(db), "--all", "--format", "csv")
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    names = {(x["benchmark"], x["bench"], x["metric"], x["bytes"]) for x in rows}
    for key in HPCC_INPUTS:
        assert ("hpcc", "hpcc", key, "") in names
    assert ("imb", "pingpong", "t_min", "0") in names and ("imb", "allreduce", "t_max", "1024") in names
    head = bobcat("compare", A, B, "--db", str(db), "--format", "csv")
    hnames = {x["metric"] for x in csv.DictReader(io.StringIO(head.stdout))}
    assert not hnames & set(HPCC_INPUTS) and set(HPCC_RESULTS) <= hnames
    assert len(rows) > 3 * len(list(csv.DictReader(io.StringIO(head.stdout))))


def test_compare_formats_parse(db):
    j = bobcat("compare", A, B, "--db", str(db), "--format", "json")
    assert j.returncode == 0, j.stderr
    objs = json.loads(j.stdout)
    c = list(csv.DictReader(io.StringIO(bobcat("compare", A, B, "--db", str(db), "--format",
                                               "csv").stdout)))
    assert len(objs) == len(c) == 15
    hpl = next(o for o in objs if o["metric"] == "HPL_Tflops")
    assert hpl["a"] == A and hpl["b"] == B and hpl["better"] == A and hpl["direction"] == "higher"
    assert hpl["ratio"] == pytest.approx(0.5) and hpl["n_a"] == hpl["n_b"] == 2
    assert isinstance(hpl["median_a"], float) and isinstance(hpl["params"], dict)
    assert float(next(x for x in c if x["metric"] == "HPL_Tflops")["ratio"]) == pytest.approx(0.5)
    md = bobcat("compare", A, B, "--db", str(db), "--format", "markdown").stdout
    _assert_whole(md)
    table = [ln for ln in md.splitlines() if ln.startswith("|")]
    assert set(table[1]) <= set("|-:"), table[1]
    assert len(table) == 2 + 15
    assert all(ln.count("|") == table[0].count("|") for ln in table)
    assert f"A {A}" in table[0]


def test_compare_explicit_metric_is_shown_at_every_size(db):
    r = bobcat("compare", A, B, "--db", str(db), "--test", "pingpong", "--metric", "t_min",
               "--format", "json")
    assert sorted(o["bytes"] for o in json.loads(r.stdout)) == list(SIZES)


def test_compare_without_headline_metrics_says_how_to_see_the_rest(db):
    r = bobcat("compare", A, B, "--db", str(db), "--bench", "hpcc", "--metric", "HPL_N")
    assert r.returncode == 0 and "HPL_N" in r.stdout
    r = bobcat("compare", A, B, "--db", str(db), "--mode", "SN")
    assert r.returncode == 1 and "no headline metric" in r.stderr, r.stderr


@pytest.mark.parametrize("env", [{}, {"FORCE_COLOR": "1"}])
def test_list_through_a_pipe_is_whole(env):
    r = bobcat("list", env=env)
    assert r.returncode == 0, r.stderr
    _assert_whole(r.stdout)
    lines = r.stdout.splitlines()
    for b in runner.BENCHMARKS.values():
        assert any(b.description in ln for ln in lines), b.description
    for c in configs.load(None).configs.values():
        assert any(c.description in ln for ln in lines), c.description


def test_doctor_through_a_pipe_wraps_nothing():
    r = bobcat("doctor")
    assert r.returncode in (0, 1), r.stderr
    _assert_whole(r.stdout)
    for ln in r.stdout.splitlines():
        # a check, its fix, or the machine line: a wrapped line would be none of them
        assert re.match(r"(OK  |WARN|FAIL) \S| {20,24}fix: | {5,9}machine ", ln), ln


def test_report_prints_its_whole_path(db, tmp_path):
    out = tmp_path / ("a-report-folder-with-a-long-name-" * 3) / "report"
    r = bobcat("report", "--db", str(db), "--out", str(out), timeout=300)
    assert r.returncode == 0, r.stderr
    assert f"report: {out}" in r.stdout.splitlines()[-1], r.stdout


# --- progress of a campaign through a pipe -----------------------------------------------------------

@pytest.fixture
def blocked_campaign(tmp_path):
    """A campaign of three runs: the probe (ok), then IMB under MPICH whose launcher is a
    stand-in that waits for the file `go` (at most 120 s) and fails with a message, then one it
    never lets finish (a 2 s time-out)."""
    if not runner.bench_available("probe", "openmpi")[0]:
        pytest.skip(f"benchmark binaries not installed under {paths.libexec_dir()}")
    fake = tmp_path / "fake-mpiexec"
    fake.write_text("#!/bin/sh\n"
                    'case "$*" in *"--sizes 16"*) exec sleep 120 ;; esac\n'
                    f"for i in $(seq 1200); do [ -e {tmp_path}/go ] && break; sleep 0.1; done\n"
                    "echo 'fake-mpiexec: refused to start the job' >&2\nexit 3\n")
    fake.chmod(0o755)
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[mpi.mpich]\nlauncher = "{fake}"\n')
    camp = tmp_path / "tiny.toml"
    camp.write_text("""
[campaign]
name = "tiny"
repetitions = 1
configs = ["linux-shm"]
mpis = ["openmpi"]
timeout_s = 150
[[bench]]
name = "probe"
[[bench]]
name = "imb"
args = ["--test", "pingpong", "--sizes", "8", "--time", "0.02"]
mpis = ["mpich"]
[[bench]]
name = "imb"
args = ["--test", "pingpong", "--sizes", "16"]
mpis = ["mpich"]
timeout_s = 2
""")
    return tmp_path, ["evaluate", "--campaign", str(camp), "--configs", str(cfg), "--db",
                      str(tmp_path / "r.db"), "--no-report"]


def _lines(stream, q):
    for line in stream:
        q.put(line)
    q.put(None)


def test_campaign_progress_through_a_pipe_is_a_line_per_run_as_it_ends(blocked_campaign):
    d, args = blocked_campaign
    env = {k: v for k, v in os.environ.items() if k not in ("TTY_COMPATIBLE", "FORCE_COLOR")}
    p = subprocess.Popen([sys.executable, "-m", "bobcat.cli", *args], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    q: queue.Queue = queue.Queue()
    threading.Thread(target=_lines, args=(p.stderr, q), daemon=True).start()
    seen = []
    try:
        # The first run's line must arrive while the second run is still held by its launcher:
        # printed and flushed as the run ends, not at exit.
        while not any(ln.startswith("[1/3]") for ln in seen):
            line = q.get(timeout=300)  # generous: a loaded 2-core machine
            assert line is not None, "".join(seen)
            seen.append(line)
        assert p.poll() is None
        (d / "go").touch()
        p.wait(timeout=300)
    finally:
        (d / "go").touch()
        if p.poll() is None:
            p.kill()
            p.wait()
    while (line := q.get(timeout=30)) is not None:
        seen.append(line)
    text = "".join(seen)
    assert re.search(r"^\[1/3\] probe linux-shm openmpi VN2 rep 1: ok \d+\.\d s$", text, re.M), text
    assert re.search(r"^\[2/3\] imb pingpong --sizes 8 linux-shm mpich VN2 rep 1: failed \d+\.\d s "
                     r"\(exit 3: fake-mpiexec: refused to start the job\)$", text, re.M), text
    assert re.search(r"^\[3/3\] imb pingpong --sizes 16 linux-shm mpich VN2 rep 1: timeout \d+\.\d s "
                     r"\(killed at its 2 s limit\)$", text, re.M), text
    assert p.returncode == 1


def test_campaign_progress_on_a_terminal_is_a_bar_with_eta(blocked_campaign):
    d, args = blocked_campaign
    (d / "go").touch()
    # rich's own switch makes it draw its live display into the pipe (still at full width).
    r = bobcat(*args, env={"TTY_COMPATIBLE": "1"}, timeout=300)
    assert r.returncode == 1
    assert "ETA" in r.stderr and "3/3" in r.stderr
    assert "imb pingpong --sizes 8 linux-shm mpich VN2 rep 1: failed" in r.stderr
    assert "exit 3: fake-mpiexec: refused to start the job" in r.stderr


def test_run_through_a_pipe_prints_its_phases(tmp_path):
    if not runner.bench_available("probe", "openmpi")[0]:
        pytest.skip(f"benchmark binaries not installed under {paths.libexec_dir()}")
    r = bobcat("run", "probe", "--config", "linux-shm", "--mode", "VN2", "--db",
               str(tmp_path / "r.db"), timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines()[:3] == [f"{ph}: probe (linux-shm/openmpi/VN2)"
                                         for ph in ("probe", "run", "probe")], r.stderr
    _assert_whole(r.stdout)
