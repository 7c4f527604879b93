"""The results database: contracts §4 schema, one transaction per run, resume after SIGKILL."""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bobcat.evaluation import parsers
from bobcat.evaluation.store import SCHEMA_VERSION, RunRecord, Store, StoreError

CONTRACT_COLUMNS = {
    "meta": ["key", "value"],
    "campaigns": ["id", "name", "spec", "started", "finished", "status"],
    "runs": ["id", "campaign_id", "seq", "benchmark", "config", "mpi", "mode", "ranks", "params",
             "repetition", "started", "duration", "status", "exit_code", "machine",
             "config_detail", "probe_before", "probe_after", "placement", "git_rev", "command",
             "raw_stdout", "raw_stderr"],
    "metrics": ["run_id", "bench", "name", "value", "unit", "better", "size", "params"],
}


pytestmark = pytest.mark.usefixtures("no_bobcat_knobs")


def record(**kw) -> RunRecord:
    base = dict(benchmark="imb", config="linux-shm", mpi="openmpi", mode="VN2", ranks=2,
                params={"test": "pingpong"}, started=time.time(), duration=1.0, status="ok",
                exit_code=0, machine={"cores": 2}, config_detail={"transport": "shared memory"},
                probe_before={"placement": "core"}, probe_after={"placement": "core"},
                placement="core", git_rev="abc", command=["mpirun", "x"], raw_stdout="{}",
                raw_stderr="", metrics=[parsers.Metric("pingpong", "t_avg", 0.2, "us", "lower",
                                                       {"bytes": 8})])
    base.update(kw)
    return RunRecord(**base)


def test_schema_matches_the_contract(tmp_path):
    s = Store(tmp_path / "r.db")
    for table, cols in CONTRACT_COLUMNS.items():
        have = [r[1] for r in s.db.execute(f"PRAGMA table_info({table})")]
        assert have[: len(cols)] == cols
    assert s.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == SCHEMA_VERSION
    assert s.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_run_and_metrics_round_trip(tmp_path):
    s = Store(tmp_path / "r.db")
    rid = s.add_run(record())
    row = s.runs()[0]
    assert row["id"] == rid and json.loads(row["probe_before"]) == {"placement": "core"}
    m = s.metrics_of(rid)[0]
    assert (m["bench"], m["name"], m["size"], m["better"]) == ("pingpong", "t_avg", 8, "lower")


def test_a_failing_insert_leaves_no_half_run(tmp_path):
    s = Store(tmp_path / "r.db")
    bad = record(metrics=[parsers.Metric("b", "m", object(), "", "", {})])  # not bindable
    with pytest.raises(sqlite3.Error):
        s.add_run(bad)
    assert s.runs() == [] and s.db.execute("SELECT COUNT(*) FROM metrics").fetchone()[0] == 0


def test_read_only_open_of_a_missing_or_foreign_db(tmp_path):
    with pytest.raises(StoreError, match="no results database"):
        Store(tmp_path / "absent.db", read_only=True)
    assert not (tmp_path / "absent.db").exists()
    other = sqlite3.connect(tmp_path / "v9.db")
    other.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    other.execute("INSERT INTO meta VALUES ('schema_version', '9')")
    other.commit()
    with pytest.raises(StoreError, match="schema version 9"):
        Store(tmp_path / "v9.db")


def _processes_under(path: Path) -> list[int]:
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if Path(os.readlink(f"/proc/{pid}/cwd")).is_relative_to(path):
                    out.append(int(pid))
            except OSError:
                continue
    return out


@pytest.mark.skipif(not Path("/usr/bin/hpcc").exists(), reason="Debian's hpcc is not installed")
def test_resume_after_sigkill_loses_nothing_and_duplicates_nothing(tmp_path):
    camp = tmp_path / "c.toml"
    camp.write_text("""
[campaign]
name = "killme"
repetitions = 2
configs = ["linux-shm", "linux-shm-nocma"]
modes = ["VN2"]
mpis = ["openmpi"]
timeout_s = 60
[[bench]]
name = "hpcc"
params = { N = 400, NB = 64 }
""")
    db = tmp_path / "r.db"
    runs_tmp = tmp_path / "tmp"
    runs_tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(runs_tmp), COLUMNS="100")
    cmd = [sys.executable, "-m", "bobcat.cli", "evaluate", "--campaign", str(camp), "--db", str(db),
           "--no-report"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300  # a hang guard: the first run takes 10-30 s, minutes under heavy load
    done_before: list[tuple] = []
    while time.time() < deadline:
        time.sleep(0.3)
        if db.exists():
            try:
                c = sqlite3.connect(db)
                done_before = c.execute("SELECT id, seq, status FROM runs ORDER BY id").fetchall()
                c.close()
            except sqlite3.Error:
                continue
            if len(done_before) >= 1:
                break
    assert proc.poll() is None, "campaign ended before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    c = sqlite3.connect(db)
    before = c.execute("SELECT id, seq, status, raw_stdout FROM runs ORDER BY id").fetchall()
    status = c.execute("SELECT status FROM campaigns").fetchone()[0]
    c.close()
    assert 1 <= len(before) < 4 and status == "running"
    # The launcher dies with bobcat (parent-death signal); give it time to take its ranks along.
    for _ in range(50):
        if not _processes_under(runs_tmp):
            break
        time.sleep(0.2)
    assert _processes_under(runs_tmp) == [], "killed campaign left processes behind"

    r = subprocess.run([*cmd, "--resume"], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    c = sqlite3.connect(db)
    after = c.execute("SELECT id, seq, status, raw_stdout FROM runs ORDER BY id").fetchall()
    camps = c.execute("SELECT id, status, summary FROM campaigns").fetchall()
    c.close()
    assert len(camps) == 1 and camps[0][1] == "done"
    assert json.loads(camps[0][2])["resumed_past"] == len(before)
    assert after[: len(before)] == before                       # nothing lost or rewritten
    seqs = [row[1] for row in after]
    assert sorted(seqs) == list(range(4)) and len(set(seqs)) == 4  # complete, no duplicate
    assert all(row[2] == "ok" for row in after)
