"""Issue 29, the evaluation part: configurations over every MPI in mpis.conf, absent peers skipped
with the reason, and the best peer per metric across MPIs (compare best-peer and the report).

The parsing and planning tests use a temporary BOBCAT_HOME whose mpis.conf is fabricated (and
whose launchers are stub scripts): pure logic, nothing runs. The best-peer tests build a results
database through the store with known values. No timing is asserted.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bobcat.evaluation import campaign, configs
from bobcat.evaluation.parsers import Metric
from bobcat.evaluation.store import RunRecord, Store
from bobcat.report import best
from bobcat.report import data as report_data
from bobcat.report.compare import best_peers
from bobcat.report.tables import best_peer_table

pytestmark = pytest.mark.usefixtures("no_bobcat_knobs")


def _stub(path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A BOBCAT_HOME with Debian's two, Open MPI 5 and the ABI layer; no MPICH 5, no Intel MPI."""
    h = tmp_path / "stage"
    o5 = tmp_path / "peers" / "openmpi5"
    lines = [
        "# flavour family version library launcher prefix",
        f"openmpi openmpi 4.1.4 /usr/lib/libmpi.so.40 {_stub(tmp_path / 'bin' / 'mpirun.openmpi')} /usr",
        f"mpich mpich 4.0.2 /usr/lib/libmpich.so.12 {_stub(tmp_path / 'bin' / 'mpiexec.mpich')} /usr",
        f"openmpi5 openmpi 5.0.11 {o5}/lib/libmpi.so.40 {_stub(o5 / 'bin' / 'mpirun')} {o5}",
        f"abi abi 5.0 {tmp_path}/peers/mpich5/lib/libmpi_abi.so.1 - {tmp_path}/peers/mpich5",
    ]
    (h / "share" / "bobcat").mkdir(parents=True)
    (h / "share" / "bobcat" / "mpis.conf").write_text("\n".join(lines) + "\n")
    monkeypatch.setenv("BOBCAT_HOME", str(h))
    # The built-in [mpi.openmpi] names mpirun.openmpi: find the stub, not the system's.
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    monkeypatch.setattr(configs, "USER_FILE", tmp_path / "no-user-configs.toml")
    return tmp_path


def test_configs_cover_every_mpi_with_launcher_and_prefix_from_mpis_conf(home):
    cs = configs.load()
    assert cs.vendors()[:2] == ("openmpi", "mpich")
    assert {"openmpi5", "mpich5", "impi"} <= set(cs.vendors())
    assert "abi" not in cs.vendors()
    o5 = cs.mpi["openmpi5"]
    assert o5.launcher == str(home / "peers" / "openmpi5" / "bin" / "mpirun")
    assert (o5.family, o5.prefix) == ("openmpi", str(home / "peers" / "openmpi5"))
    # Not installed here: known to the data, without a launcher, and said so.
    assert cs.mpi["impi"].launcher == "" and cs.mpi["impi"].family == "mpich"
    ok, why = configs.installed(cs, "impi")
    assert not ok and "not installed" in why and "mpis.conf" in why and "peers.sh" in why
    assert configs.installed_vendors(cs) == ["openmpi", "mpich", "openmpi5"]
    for name in ("linux-shm", "linux-shm-nocma", "linux-nic", "lwk"):
        assert {"openmpi5", "mpich5", "impi"} <= set(cs.get(name).mpis)
        assert configs.availability(cs, cs.get("linux-shm"), "mpich5")[0] is False


def test_launch_of_a_peer_uses_its_family_and_prefix(home):
    cs = configs.load()
    o5 = configs.build(cs, cs.get("linux-shm-nocma"), "openmpi5", "VN2", 2, ["prog"])
    assert o5.argv[0].endswith("openmpi5/bin/mpirun")
    assert "--mca" in o5.argv and "smsc" in o5.argv
    nic = configs.build(cs, cs.get("linux-shm"), "openmpi5", "SN", 2, ["prog"])
    i = nic.argv.index("btl")
    assert nic.argv[i + 1] == "tcp,self" and "ob1" in nic.argv
    assert nic.detail["transport"].startswith("network stack")
    # {prefix} in an [mpi.*] env value is the installation's prefix (Intel MPI's I_MPI_ROOT).
    user = home / "c.toml"
    user.write_text('[mpi.openmpi5]\nenv = { MY_ROOT = "{prefix}/x" }\n')
    cs2 = configs.load(user)
    run = configs.build(cs2, cs2.get("linux-shm"), "openmpi5", "VN2", 2, ["prog"])
    assert run.env["MY_ROOT"] == str(home / "peers" / "openmpi5") + "/x"


def test_inherited_fabric_variables_are_cleared(home, monkeypatch):
    monkeypatch.setenv("FI_PROVIDER", "shm")
    monkeypatch.setenv("I_MPI_FABRICS", "shm")
    cs = configs.load()
    run = configs.build(cs, cs.get("linux-shm"), "mpich", "VN2", 2, ["prog"])
    assert "FI_PROVIDER" not in run.env and "I_MPI_FABRICS" not in run.env
    assert {"FI_PROVIDER", "I_MPI_FABRICS"} <= set(run.detail["env_cleared"])


def test_abi_and_unknown_network_tables_are_errors(home):
    bad = home / "bad.toml"
    bad.write_text("[mpi.abi]\nargs = []\n")
    with pytest.raises(configs.ConfigError, match="standard-ABI"):
        configs.load(bad)
    bad.write_text("[network.cray]\nenv = {}\n")
    with pytest.raises(configs.ConfigError, match=r"\[network.cray\].*add \[mpi.cray\]"):
        configs.load(bad)
    bad.write_text('[mpi.cray]\nfamily = "mpich"\nlauncher = "srun"\n')
    with pytest.raises(configs.ConfigError, match=r"\[mpi.cray\] but no \[network.cray\]"):
        configs.load(bad)


CAMPAIGN = """
[campaign]
name = "peers"
repetitions = 2
configs = ["linux-shm", "linux-nic"]
mpis = ["openmpi", "openmpi5", "mpich5", "impi"]

[[bench]]
name = "imb"
args = ["--test", "pingpong"]
"""


def test_absent_peers_are_skipped_once_with_the_reason(home):
    cs = configs.load()
    p = home / "c.toml"
    p.write_text(CAMPAIGN)
    c = campaign.load(p, cs)   # naming an MPI this machine lacks is not an error
    absent = campaign.absent_mpis(c, cs)
    assert list(absent) == ["mpich5", "impi"]
    assert all("not installed" in why for why in absent.values())
    runnable, skipped = campaign.plan(c, cs)
    # imb.<mpi> does not exist in the fabricated home either: openmpi and openmpi5 are skipped
    # for that reason, the absent MPIs for theirs.
    by_mpi = {s.mpi: s for s in skipped}
    assert "not installed" in by_mpi["impi"].reason and "not installed" in by_mpi["mpich5"].reason
    assert "not found" in by_mpi["openmpi5"].reason
    assert sum(s.runs for s in skipped if s.mpi == "impi") == 2 * 2
    assert not runnable


def test_unknown_mpi_in_a_campaign_is_still_an_error(home):
    cs = configs.load()
    p = home / "c.toml"
    p.write_text(CAMPAIGN.replace('"impi"]', '"cray"]'))
    with pytest.raises(campaign.CampaignError, match="unknown MPI 'cray'"):
        campaign.load(p, cs)


# --- best peer --------------------------------------------------------------------------------

def _series(values):
    return {(1, rep, 100 * rep + i): v for i, (rep, v) in enumerate(values)}


def test_best_of_follows_the_direction_and_names_the_winner():
    runs = {("linux-shm", "openmpi"): _series([(0, 0.30), (1, 0.32), (2, 0.31)]),
            ("linux-shm-nocma", "mpich"): _series([(0, 0.25), (1, 0.27), (2, 0.26)]),
            ("linux-shm", "impi"): _series([(0, 0.20), (1, 0.22), (2, 0.21)]),
            ("linux-nic", "openmpi5"): _series([(0, 4.0), (1, 4.1), (2, 3.9)]),
            ("lwk", "openmpi"): _series([(0, 0.14), (1, 0.15), (2, 0.16)]),
            ("lwk", "impi"): _series([(0, 0.13), (1, 0.11), (2, 0.12)])}
    b = best.pick(runs, "lower", "lwk", lambda c: c != "lwk")
    assert b.peer.name == "linux-shm/impi" and b.peer.median == 0.21
    assert b.debian.name == "linux-shm-nocma/mpich" and b.debian.median == 0.26
    assert b.reference.name == "lwk/impi" and b.reference.median == 0.12
    assert b.reference_range == (0.12, 0.15)
    assert b.peers == 4
    assert b.ratio == pytest.approx(0.12 / 0.21)
    # per-repetition ratios of the two winners, paired by (campaign, repetition)
    assert b.ratio_min == pytest.approx(0.11 / 0.22) and b.ratio_max == pytest.approx(0.13 / 0.20)
    assert b.verdict == "reference"
    # the reference restricted to one MPI
    b2 = best.pick(runs, "lower", "lwk", lambda c: c != "lwk", reference_mpi="openmpi")
    assert b2.reference.name == "lwk/openmpi"
    # bandwidth: higher is better, the peer wins
    hi = best.pick({("linux-shm", "openmpi5"): _series([(0, 20.0)]), ("lwk", "mpich"): _series([(0, 10.0)]),
                    ("linux-shm", "mpich"): _series([(0, 12.0)])}, "higher", "lwk", lambda c: c != "lwk")
    assert (hi.peer.name, hi.debian.name, hi.verdict) == ("linux-shm/openmpi5", "linux-shm/mpich", "peer")


def test_best_without_a_debian_peer_or_a_direction():
    b = best.pick({("linux-shm", "openmpi5"): _series([(0, 2.0)]), ("lwk", "openmpi5"): _series([(0, 1.0)])},
                  "", "lwk", lambda c: c != "lwk")
    assert b.debian is None and b.peer.mpi == "openmpi5" and b.verdict == "?"


def _record(config, mpi, rep, metrics, via_yod):
    return RunRecord(
        benchmark="imb", config=config, mpi=mpi, mode="VN2", ranks=2,
        params={"test": "pingpong", "args": ["--test", "pingpong"]}, started=0.0, duration=1.0,
        status="ok", exit_code=0, machine={}, config_detail={"via_yod": via_yod, "config": config},
        probe_before=None, probe_after=None, placement="core", git_rev=None, command=["x"],
        raw_stdout="", raw_stderr="", metrics=metrics, repetition=rep)


# (config, mpi) -> 8 B latency (us), 1 MiB bandwidth (MB/s); lwk under yod
VALUES = {("lwk", "openmpi"): (0.14, 60000.0), ("lwk", "openmpi5"): (0.13, 61000.0),
          ("linux-shm", "openmpi"): (0.12, 13000.0), ("linux-shm-nocma", "openmpi"): (0.13, 40000.0),
          ("linux-shm", "openmpi5"): (0.23, 21000.0), ("linux-shm", "impi"): (0.20, 15000.0),
          ("linux-nic", "openmpi5"): (3.9, 7000.0)}


@pytest.fixture
def peers_db(tmp_path):
    path = tmp_path / "r.db"
    st = Store(path)
    cid = st.start_campaign("default", {})
    seq = 0
    for rep, f in enumerate((1.0, 1.1, 0.9)):
        for (config, mpi), (lat, bw) in VALUES.items():
            rec = _record(config, mpi, rep, [
                Metric("pingpong", "t_avg", lat * f, "us", "lower", {"bytes": 8, "ranks": 2}),
                Metric("pingpong", "bandwidth", bw * f, "MB/s", "higher", {"bytes": 1 << 20, "ranks": 2})],
                config == "lwk")
            rec.campaign_id, rec.seq = cid, seq
            seq += 1
            st.add_run(rec)
    st.set_campaign_status(cid, "done", {})
    st.close()
    return path


def test_compare_best_peer_across_mpis(peers_db):
    st = Store(peers_db, read_only=True)
    rows = {(r.metric, r.size): r.best for r in best_peers(st, "lwk")}
    st.close()
    lat, bw = rows[("t_avg", 8)], rows[("bandwidth", 1 << 20)]
    assert lat.peer.name == "linux-shm/openmpi" and lat.debian.name == "linux-shm/openmpi"
    assert lat.reference.name == "lwk/openmpi5" and lat.verdict == "peer"
    assert bw.peer.name == "linux-shm-nocma/openmpi" and bw.reference.name == "lwk/openmpi5"
    assert bw.ratio == pytest.approx(61000 / 40000) and bw.verdict == "reference"
    assert bw.ratio_min == pytest.approx(bw.ratio) == pytest.approx(bw.ratio_max)
    assert lat.peers == 5   # every non-yod series, linux-nic included


def test_compare_best_peer_winner_from_a_modern_mpi(peers_db, tmp_path):
    # Without Debian's no-CMA setting, Open MPI 5's CMA is the best bandwidth of the peers.
    st = Store(peers_db)
    st.db.execute("DELETE FROM metrics WHERE run_id IN (SELECT id FROM runs WHERE config='linux-shm-nocma')")
    st.db.commit()
    rows = {(r.metric, r.size): r.best for r in best_peers(st, "lwk")}
    st.close()
    bw = rows[("bandwidth", 1 << 20)]
    assert bw.peer.name == "linux-shm/openmpi5" and bw.debian.name == "linux-shm/openmpi"


def test_report_table_best_peer(peers_db):
    ds = report_data.load(peers_db)
    t = best_peer_table(ds)
    assert t.empty_reason is None
    h = t.headers
    by = {r[0].split(" (")[0]: dict(zip(h, r)) for r in t.rows}
    lat = by["imb/PingPong/t_avg"]
    assert lat["best peer (all MPIs)"] == "linux-shm/openmpi" and lat["winner"] == "linux-shm/openmpi"
    bw = by["imb/PingPong/bandwidth"]
    assert bw["best peer (all MPIs)"] == "linux-shm-nocma/openmpi" and bw["lwk MPI"] == "openmpi5"
    assert bw["lwk/best"] == pytest.approx(61000 / 40000) and bw["winner"] == "lwk"
    assert bw["lwk over its MPIs"] == "60000–61000"
    assert any("impi" in n and "openmpi5" in n for n in t.notes)


def test_cli_compare_best_peer_json(peers_db, capsys):
    from bobcat import cli
    rc = cli.main(["compare", "best-peer", "lwk", "--db", str(peers_db), "--format", "json"])
    assert rc == 0
    recs = json.loads(capsys.readouterr().out)
    bw = next(r for r in recs if r["metric"] == "bandwidth")
    assert (bw["peer_config"], bw["peer_mpi"], bw["reference_mpi"]) == ("linux-shm-nocma", "openmpi", "openmpi5")
    assert bw["debian_mpi"] == "openmpi" and bw["better"] == "lwk"
    assert (bw["reference_min"], bw["reference_max"]) == (60000.0, 61000.0)


def test_small_page_runs_are_not_pooled_with_default_ones(tmp_path):
    """A benchmark's own `pages` (what its arrays got) must not hide the page size its run asked
    for: lwk's small-page stream runs are a measurement of their own, with no peer."""
    st = Store(tmp_path / "p.db")
    cid = st.start_campaign("default", {})
    for seq, (config, asked, triad) in enumerate([("lwk", None, 34.0), ("lwk", "small", 20.0),
                                                  ("linux-shm", None, 30.0)]):
        params = {"args": []} | ({"pages": asked} if asked else {})
        rec = RunRecord(
            benchmark="stream", config=config, mpi="openmpi", mode="SN", ranks=2, params=params,
            started=0.0, duration=1.0, status="ok", exit_code=0, machine={},
            config_detail={"via_yod": config == "lwk"}, probe_before=None, probe_after=None,
            placement="core", git_rev=None, command=["x"], raw_stdout="", raw_stderr="",
            metrics=[Metric("stream", "triad", triad, "GB/s", "higher", {"phase": "all", "pages": "small"})],
            campaign_id=cid, seq=seq, repetition=0)
        st.add_run(rec)
    rows = best_peers(st, "lwk")
    st.close()
    assert len(rows) == 1
    b = rows[0].best
    assert b.reference.n == 1 and b.reference.median == 34.0 and b.ratio == pytest.approx(34 / 30)
