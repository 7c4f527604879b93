"""The `bobcat` CLI end to end with real MPI runs: bad input, run, compare, export, list, doctor."""
import csv
import hashlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bobcat import paths

IMB = paths.libexec_dir() / "bench" / "imb.openmpi"
needs_imb = pytest.mark.skipif(not (IMB.exists() and (paths.libexec_dir() / "bench" / "imb.mpich").exists()),
                               reason=f"benchmark binaries not installed under {paths.libexec_dir()} "
                                      "(build the tree and set BOBCAT_HOME)")


pytestmark = pytest.mark.usefixtures("no_bobcat_knobs")


def bobcat(*args: str, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "bobcat.cli", *args], capture_output=True,
                          text=True, timeout=timeout, env=env, cwd=cwd)


def digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """One small interleaved campaign: PingPong, linux-shm vs linux-nic, both MPIs."""
    if not IMB.exists():
        pytest.skip(f"benchmark binaries not installed under {paths.libexec_dir()}")
    d = tmp_path_factory.mktemp("cli")
    camp = d / "pp.toml"
    camp.write_text("""
[campaign]
name = "pp"
repetitions = 2
configs = ["linux-shm", "linux-nic"]
mpis = ["openmpi", "mpich"]
[[bench]]
name = "imb"
args = ["--test", "pingpong", "--sizes", "8,1K", "--time", "0.02"]
""")
    r = bobcat("evaluate", "--campaign", str(camp), "--db", str(d / "r.db"), "--no-report", timeout=600)
    assert r.returncode == 0, r.stderr
    return d / "r.db"


@pytest.mark.parametrize("args, message", [
    (["run", "nosuch", "--config", "linux-shm", "--mode", "VN2"], "unknown benchmark 'nosuch'"),
    (["run", "imb", "--config", "nosuch", "--mode", "VN2"], "unknown configuration 'nosuch'"),
    (["run", "imb", "--config", "linux-shm", "--mode", "VN8"], "unknown mode 'VN8'"),
    (["run", "imb", "--config", "linux-shm", "--mode", "VN2", "--mpi", "lam"], "unknown MPI 'lam'"),
    (["run", "hpcc", "--config", "linux-shm", "--mode", "VN2", "--mpi", "mpich"], "only with mpi=openmpi"),
    (["evaluate", "--campaign", "BAD"], "line 3"),
    (["evaluate", "--campaign", "nosuch.toml"], "no such campaign file"),
])
def test_bad_input_exits_2_and_leaves_the_db_untouched(tmp_path, args, message):
    db = tmp_path / "r.db"
    bad = tmp_path / "bad.toml"
    bad.write_text('[campaign]\nname = "x"\nrepetitions = = 3\n')
    args = [str(bad) if a == "BAD" else a for a in args]
    # A database with a stored run: bad input must not change a byte of it.
    seed = bobcat("run", "probe", "--config", "linux-shm", "--mode", "VN2", "--db", str(db))
    before = digest(db) if db.exists() else None
    r = bobcat(*args, "--db", str(db), cwd=tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert message in r.stderr
    assert "Traceback" not in r.stderr
    assert (digest(db) if db.exists() else None) == before
    assert seed.returncode in (0, 1, 2)


def test_missing_mpi_is_bad_input(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('[mpi.mpich]\nlauncher = "mpiexec.nosuch"\n')
    r = bobcat("run", "imb", "--config", "linux-shm", "--mode", "VN2", "--mpi", "mpich",
               "--configs", str(cfg), "--db", str(tmp_path / "r.db"))
    assert r.returncode == 2 and "mpiexec.nosuch not found" in r.stderr
    assert not (tmp_path / "r.db").exists()


@needs_imb
def test_run_stores_one_measured_run(tmp_path):
    db = tmp_path / "r.db"
    r = bobcat("run", "imb", "--config", "linux-shm", "--mode", "SN", "--mpi", "mpich", "--db",
               str(db), "--", "--test", "pingpong", "--sizes", "8", "--time", "0.02")
    assert r.returncode == 0, r.stderr
    assert "t_avg" in r.stdout
    out = bobcat("export", "--json", "--db", str(db))
    run = json.loads(out.stdout)["runs"][0]
    assert run["status"] == "ok" and run["mode"] == "SN" and run["mpi"] == "mpich"
    # SN on one node: simulated nodes talk through the network stack, recorded as such
    assert run["config_detail"]["env"]["UCX_TLS"] == "tcp,self"
    assert run["config_detail"]["transport"].startswith("network stack")
    assert run["params"]["test"] == "pingpong"
    assert run["machine"]["cores"] and run["machine"]["mpi"]["mpich"].startswith("MPICH")
    assert run["probe_before"]["metric"] == "oneway_ns" and run["placement"] in \
        ("smt", "core", "chip", "mixed")
    assert any(m["name"] == "t_avg" and m["size"] == 8 for m in run["metrics"])


@needs_imb
def test_compare_ratio_and_verdict_follow_the_stored_medians(measured):
    """compare's B/A is the ratio of the two configurations' medians over repetitions, and its last
    column names the better one: both recomputed here from the database itself. (Which one is
    faster is the machine's business -- under heavy load TCP and shared memory can come close --
    so the test checks the arithmetic and the verdict, not a speed.)"""
    import sqlite3
    import statistics
    r = bobcat("compare", "linux-shm", "linux-nic", "--db", str(measured), "--bench", "imb",
               "--test", "pingpong", "--metric", "t_avg")
    assert r.returncode == 0, r.stderr
    rows = [line for line in r.stdout.splitlines() if "t_avg" in line]
    assert len(rows) == 4  # 2 sizes x 2 MPIs
    c = sqlite3.connect(measured)
    for line in rows:
        cells = [c_.strip() for c_ in line.split("│") if c_.strip()]
        size, mpi, ratio = int(cells[2]), cells[3], float(cells[8])

        def median(config):
            return statistics.median(v for (v,) in c.execute(
                "SELECT m.value FROM metrics m JOIN runs r ON r.id = m.run_id WHERE r.config = ? AND r.mpi = ? "
                "AND m.bench = 'pingpong' AND m.name = 't_avg' AND m.size = ?", (config, mpi, size)))
        a, b = median("linux-shm"), median("linux-nic")
        assert ratio == pytest.approx(b / a, rel=2e-3, abs=6e-4), line
        assert cells[-1] == ("linux-shm" if a < b else "linux-nic"), line
    c.close()


@needs_imb
def test_export_csv_and_json_agree(measured, tmp_path):
    out = tmp_path / "m.csv"
    r = bobcat("export", "--csv", "--out", str(out), "--db", str(measured))
    assert r.returncode == 0
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    runs = json.loads(bobcat("export", "--json", "--db", str(measured)).stdout)["runs"]
    assert len(runs) == 8 and len(rows) == sum(len(x["metrics"]) for x in runs)
    assert {r["config"] for r in rows} == {"linux-shm", "linux-nic"}
    # interleaved: consecutive runs alternate configurations within a repetition
    assert [x["config"] for x in runs[:4]] == ["linux-shm", "linux-shm", "linux-nic", "linux-nic"]
    assert sorted(x["seq"] for x in runs) == list(range(8))


def test_list_and_doctor(tmp_path):
    r = bobcat("list")
    assert r.returncode == 0, r.stderr
    for word in ("linux-shm-nocma", "linux-nic", "lwk", "hpcc", "quick", "default"):
        assert word in r.stdout
    d = bobcat("doctor")
    assert d.returncode in (0, 1)
    for name in ("mpi openmpi", "mpi mpich", "hwloc", "huge pages", "THP", "CMA", "timer tick",
                 "placement probe"):
        assert name in d.stdout
    assert all(line[:4].strip() in ("OK", "WARN", "FAIL") for line in d.stdout.splitlines()
               if line.strip() and not line.startswith(" "))


def test_compare_and_report_on_missing_db(tmp_path):
    r = bobcat("compare", "a", "b", "--db", str(tmp_path / "none.db"))
    assert r.returncode == 2 and "no results database" in r.stderr
    assert not (tmp_path / "none.db").exists()
