"""The account (issue 28): `yod --stats FILE` counts every MPI routine a program calls, whether
bobcat carries it or passes it on, merges every rank's record into FILE and prints the share of
on-node traffic on bobcat's path. tests/mp/mp_account.c makes calls whose numbers are known; the
totals must match them exactly, on one node and across simulated nodes, on both MPIs."""
import json
import os
import subprocess

import pytest

from bobcat import paths

YOD = paths.home() / "bin" / "yod"
SRC = os.path.join(os.path.dirname(__file__), "..", "mp", "mp_account.c")

pytestmark = pytest.mark.skipif(not YOD.exists(), reason="yod is not built (make build)")


def build(tmp_path, mpi):
    exe = tmp_path / f"mp_account.{mpi}"
    subprocess.run([f"mpicc.{mpi}", "-O1", "-o", str(exe), SRC], check=True, capture_output=True)
    return exe


def run(tmp_path, exe, layout, **knobs):
    env = {k: v for k, v in os.environ.items() if not k.startswith("BOBCAT_")}
    env.update(BOBCAT_HOME=str(paths.home()), **knobs)
    out = tmp_path / "acct.json"
    r = subprocess.run([str(YOD), *layout, "--stats", str(out), str(exe)], env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "mp_account: ok" in r.stdout, r.stdout + r.stderr
    # yod's private directory beside FILE is gone
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".yod-stats")] == []
    return json.loads(out.read_text()), r.stderr


def calls(t):
    return sum(t["calls"].values())


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
@pytest.mark.parametrize("layout", [["-VN2", "-np", "2"], ["--simulate-nodes", "--oversubscribe", "-VN2", "-np", "4"]],
                         ids=["np2", "np4-2nodes"])
def test_account_matches_known_calls(tmp_path, mpi, layout):
    n = int(layout[-1])
    acct, err = run(tmp_path, build(tmp_path, mpi), layout)
    t = acct["totals"]
    assert acct["ranks"] == n and acct["missing_ranks"] == [] and acct["layer"]["on"] == n
    assert len(acct["per_rank"]) == n
    # pass-throughs: counted exactly, bytes from the arguments
    assert calls(t["MPI_Comm_rank"]) == 5 * n and not t["MPI_Comm_rank"]["moves"]
    assert calls(t["MPI_Iallgatherv"]) == 3 * n
    # bobcat's own routines: on its path (Alltoallv, Iallgatherv: issue 30; across nodes hierarchical)
    assert calls(t["MPI_Allreduce"]) == 7 * n and t["MPI_Allreduce"]["calls"]["bobcat"] > 0
    assert calls(t["MPI_Alltoallv"]) == 3 * n and t["MPI_Alltoallv"]["calls"]["bobcat"] == 3 * n
    assert sum(t["MPI_Alltoallv"]["bytes"].values()) == 3 * n * (16 * n)
    assert calls(t["p2p send"]) == 4 * n and calls(t["p2p recv"]) == 4 * n
    assert sum(t["p2p send"]["bytes"].values()) == 4 * n * 32
    # a window the real MPI keeps for itself (bobcat_rma=mpi): its puts and fences on its path, forced
    assert t["MPI_Put"]["calls"]["bobcat"] == 0 and calls(t["MPI_Put"]) == 3 * n
    assert sum(t["MPI_Put"]["bytes"].values()) == 3 * n * 8 and t["MPI_Put"]["why"] == {"forced": 3 * n}
    assert calls(t["MPI_RMA_sync"]) == 2 * n and t["MPI_RMA_sync"]["why"] == {"forced": 2 * n}
    if n == 2:
        # one node: every call is on-node; WORLD's Iallgatherv bobcat's, MPI_COMM_SELF's (one rank)
        # the real MPI's, with its reason
        assert t["MPI_Iallgatherv"]["calls"]["bobcat"] == 2 * n
        assert t["MPI_Iallgatherv"]["calls"]["mpi-node"] == n
        assert t["MPI_Iallgatherv"]["why"] == {"setup-failed": n}
        assert t["p2p send"]["calls"]["bobcat"] == 4 * n
        s = acct["summary"]
        # Alltoallv, Iallgatherv, Allreduce, p2p, Put, the fences
        assert s["on_node_calls"] == 3 * n + 3 * n + 7 * n + 8 * n + 3 * n + 2 * n
        assert s["bobcat_calls"] == 3 * n + 2 * n + 7 * n + 8 * n
        assert {m["routine"] for m in s["top_missed"]} == {"MPI_Iallgatherv", "MPI_Put", "MPI_RMA_sync"}
    else:
        # two simulated nodes: WORLD spans them; its Iallgatherv is bobcat's still (hierarchical:
        # every rank knows every count), MPI_COMM_SELF's the real MPI's ...
        assert t["MPI_Iallgatherv"]["calls"]["bobcat"] == 2 * n
        assert t["MPI_Iallgatherv"]["calls"]["mpi-node"] == n
        assert t["MPI_Iallgatherv"]["calls"]["off-node"] == 0
        # ... and half of the ring's sends cross to the other node
        assert t["p2p send"]["calls"]["off-node"] == 2 * n
    assert "on-node traffic on bobcat's path" in err


def test_account_is_off_without_asking(tmp_path):
    """Without --stats or BOBCAT_STATS nothing is counted or written."""
    exe = build(tmp_path, "openmpi")
    env = {k: v for k, v in os.environ.items() if not k.startswith("BOBCAT_")}
    env["BOBCAT_HOME"] = str(paths.home())
    r = subprocess.run([str(YOD), "-VN2", "-np", "2", str(exe)], env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "bobcat: stats" not in r.stderr and "yod: stats" not in r.stderr, r.stderr
    assert list(tmp_path.glob("rank-*.json")) == []


def test_stats_file_in_a_missing_directory_is_a_usage_error(tmp_path):
    r = subprocess.run([str(YOD), "-np", "2", "--stats", str(tmp_path / "no" / "acct.json"), "/bin/true"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--stats" in r.stderr and "does not exist" in r.stderr
