"""The evaluation records yod's account (yod --stats) per run, the store keeps it (schema 2, older
databases still read), and the report shows bobcat's share of the on-node traffic (issue 28).

The runs here are real: bobcat's imb and Debian's hpcc under yod (lwk) and under a bare mpirun
(linux-shm), with Open MPI."""
from __future__ import annotations

import json
import sqlite3
import time

import pytest

from bobcat.evaluation import campaign, configs, parsers, runner
from bobcat.evaluation.store import SCHEMA, RunRecord, Store, read_contents
from bobcat.report import data as report_data
from bobcat.report.page import render
from bobcat.report.tables import account_table

pytestmark = pytest.mark.usefixtures("no_bobcat_knobs")

ACCOUNT = {"version": 1, "ranks": 2, "missing_ranks": [], "layer": {"on": 2, "off": 0},
           "off_reasons": [],
           "totals": {"MPI_Alltoallv": {"calls": {"bobcat": 0, "mpi-node": 56, "off-node": 0,
                                                  "unknown": 0},
                                        "bytes": {"bobcat": 0, "mpi-node": 4928, "off-node": 0,
                                                  "unknown": 0}, "why": {}, "moves": True}},
           "summary": {"on_node_calls": 15456, "on_node_bytes": 347_000_000,
                       "bobcat_calls": 15400, "bobcat_bytes": 342_000_000,
                       "bobcat_call_share": 15400 / 15456, "bobcat_byte_share": 342 / 347,
                       "top_missed": [{"routine": "MPI_Alltoallv", "calls": 56, "bytes": 4928,
                                       "why": {}}]}}


def record(**kw) -> RunRecord:
    base = dict(benchmark="imb", config="lwk", mpi="openmpi", mode="VN2", ranks=2,
                params={"test": "pingpong"}, started=time.time(), duration=1.0, status="ok",
                exit_code=0, machine={"cores": 2}, config_detail={"via_yod": True},
                probe_before=None, probe_after=None, placement="core", git_rev="abc",
                command=["yod"], raw_stdout="", raw_stderr="",
                metrics=[parsers.Metric("pingpong", "t_avg", 0.2, "us", "lower", {"bytes": 8})])
    base.update(kw)
    return RunRecord(**base)


# --- the store ---------------------------------------------------------------------------------

def test_account_round_trips_and_a_run_without_one_has_no_row(tmp_path):
    s = Store(tmp_path / "r.db")
    with_acct = s.add_run(record(account=ACCOUNT))
    without = s.add_run(record(config="linux-shm", config_detail={"via_yod": False}))
    row = s.account_of(with_acct)
    assert (row["on_node_calls"], row["bobcat_calls"], row["ranks"]) == (15456, 15400, 2)
    assert row["bobcat_byte_share"] == pytest.approx(342 / 347)
    assert json.loads(row["top_missed"])[0]["routine"] == "MPI_Alltoallv"
    assert json.loads(row["totals"]) == ACCOUNT["totals"]
    assert s.account_of(without) is None
    s.close()
    assert [a["run_id"] for a in read_contents(tmp_path / "r.db").accounts] == [with_acct]


def _v1_database(path):
    """A database as schema 1 wrote it: no accounts table, version '1'."""
    con = sqlite3.connect(path)
    con.executescript(SCHEMA)
    con.execute("DROP TABLE accounts")
    con.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    con.commit()
    con.close()


def test_a_schema_1_database_reads_and_is_brought_to_2_when_written(tmp_path):
    db = tmp_path / "old.db"
    _v1_database(db)
    ro = Store(db, read_only=True)   # read as it is
    assert ro.runs() == []
    ro.close()
    assert read_contents(db).accounts == [] and read_contents(db).meta["schema_version"] == "1"
    s = Store(db)
    assert s.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == "2"
    rid = s.add_run(record(account=ACCOUNT))
    assert s.account_of(rid)["bobcat_calls"] == 15400
    s.close()


# --- the campaign: which runs count ------------------------------------------------------------

CAMPAIGN = """
[campaign]
name = "acct"
repetitions = 2
configs = ["linux-shm", "lwk"]
modes = ["VN2"]
mpis = ["openmpi"]
{account}
[[bench]]
name = "imb"
points = [["--test", "pingpong"], ["--test", "allreduce"]]
[[bench]]
name = "shmem"
configs = ["lwk"]
"""


def _load(tmp_path, account_line=""):
    p = tmp_path / "c.toml"
    p.write_text(CAMPAIGN.format(account=account_line))
    return campaign.load(p, configs.load())


def test_separate_account_runs_follow_the_timed_ones(tmp_path):
    c = _load(tmp_path)
    assert c.account == "separate"
    pts = campaign.expand(c)
    timed = [p for p in pts if p.spec.timed]
    # 2 reps x (2 imb points x 2 configs + 1 shmem): timed and not counted.
    assert len(timed) == 2 * 5 and not any(p.spec.account for p in timed)
    extra = pts[len(timed):]
    # One untimed, counted run per imb point under yod; none for linux-shm, none for shmem.
    assert [(p.spec.benchmark, p.spec.config, p.spec.args, p.spec.account, p.spec.timed)
            for p in extra] == [("imb", "lwk", ["--test", t], True, False)
                                for t in ("pingpong", "allreduce")]
    assert all(p.repetition == c.repetitions for p in extra)
    # --resume rebuilds the same runs from the stored spec.
    again = campaign.from_spec(json.loads(json.dumps(c.to_spec())), configs.load())
    assert [(p.seq, p.spec) for p in campaign.expand(again)] == [(p.seq, p.spec) for p in pts]


def test_every_and_none(tmp_path):
    every = campaign.expand(_load(tmp_path, 'account = "every"'))
    assert len(every) == 10 and all(p.spec.timed for p in every)
    assert {p.spec.config for p in every if p.spec.account} == {"lwk"}
    none = campaign.expand(_load(tmp_path, 'account = "none"'))
    assert len(none) == 10 and not any(p.spec.account for p in none)
    with pytest.raises(campaign.CampaignError, match=r"\[campaign\] account: one of separate, every, none"):
        _load(tmp_path, 'account = "sometimes"')


# --- real runs ---------------------------------------------------------------------------------

def _real_run(spec: runner.RunSpec) -> RunRecord:
    cs = configs.load()
    ok, why = configs.availability(cs, cs.get(spec.config), spec.mpi)
    if ok:
        ok, why = runner.bench_available(spec.benchmark, spec.mpi, cs.get(spec.config), spec.mode)
    if not ok:
        pytest.skip(f"{spec.benchmark} under {spec.config}/{spec.mpi} unavailable: {why}")
    runner.validate(spec, cs)
    rec = runner.run(spec, cs)
    assert rec.status == "ok", rec.raw_stderr[-3000:]
    return rec


IMB = ["--test", "pingpong", "--max-size", "64K", "--time", "0.02"]


def test_real_runs_record_the_account_under_yod_and_none_bare(tmp_path):
    counted = _real_run(runner.RunSpec("imb", "lwk", "openmpi", "VN2", 2, args=IMB,
                                       account=True, timed=False))
    assert "--stats" in counted.command and counted.config_detail["account"].startswith("recorded")
    s = counted.account["summary"]
    # PingPong is all on one node: bobcat carries its sends and receives.
    assert s["on_node_calls"] > 100 and s["bobcat_calls"] > 0.9 * s["on_node_calls"]
    assert 0.9 < s["bobcat_call_share"] <= 1.0 and s["on_node_bytes"] > 0
    assert counted.account["missing_ranks"] == [] and "per_rank" not in counted.account
    assert counted.metrics == []    # untimed: measured while counting, so not kept
    timed = _real_run(runner.RunSpec("imb", "lwk", "openmpi", "VN2", 2, args=IMB, account=True))
    assert timed.account is not None and timed.metrics
    bare = _real_run(runner.RunSpec("imb", "linux-shm", "openmpi", "VN2", 2, args=IMB,
                                    account=True))
    assert bare.account is None and "--stats" not in bare.command and bare.metrics
    hpcc = _real_run(runner.RunSpec("hpcc", "lwk", "openmpi", "VN2", 2,
                                    params={"N": 400, "NB": 64}, account=True, timed=False))
    assert hpcc.account["summary"]["on_node_calls"] > 0

    st = Store(tmp_path / "r.db")
    for r in (counted, timed, bare, hpcc):
        st.add_run(r)
    st.close()
    ds = report_data.load(tmp_path / "r.db")
    t = account_table(ds)
    assert t.empty_reason is None
    rows = {(r[0], r[1]): dict(zip(t.headers, r)) for r in t.rows}
    assert set(rows) == {("imb/pingpong", "lwk"), ("hpcc (application)", "lwk")}
    ping = rows[("imb/pingpong", "lwk")]
    assert ping["runs"] == 2
    assert ping["on-node calls"] == counted.account["summary"]["on_node_calls"] + \
        timed.account["summary"]["on_node_calls"]
    assert ping["on bobcat's path (calls)"].endswith(" %")
    page = render(tmp_path / "r.db", tmp_path / "out").read_text()
    assert "bobcat&#x27;s share of on-node MPI traffic" in page and "hpcc (application)" in page


def test_report_without_accounts_says_why(tmp_path):
    db = tmp_path / "old.db"
    _v1_database(db)
    con = sqlite3.connect(db)
    con.execute("INSERT INTO runs (benchmark, config, mpi, mode, ranks, params, status, placement)"
                " VALUES ('imb', 'lwk', 'openmpi', 'VN2', 2, '{}', 'ok', 'core')")
    con.commit()
    con.close()
    t = account_table(report_data.load(db))
    assert t.rows == [] and "databases before schema version 2" in t.empty_reason
    page = render(db, tmp_path / "out").read_text()
    assert "not measured (why: no run recorded an account" in page
