"""Which way on-node messages went, from BOBCAT_STATS: an unmodified IMB PingPong under yod (both
MPIs) receives its small messages, and the rendezvous headers of its large ones, straight from the
pair's fast-box cell in blocking receives, with every payload validated; without fast boxes
(BOBCAT_P2P_FASTBOX=0) nothing takes that way."""
import os
import re
import subprocess

import pytest

from bobcat import paths

YOD = paths.home() / "bin" / "yod"
BENCH = paths.home() / "libexec" / "bobcat" / "bench"
# The engine's row of BOBCAT_STATS (counters that are 0 are left out of the line).
LINE = re.compile(r"^bobcat: stats rank (\d+) node \d+: p2p engine (.*)$", re.M)


def _engine(line: str) -> tuple[int, ...]:
    kv = dict(f.split("=", 1) for f in line.split())
    return tuple(int(kv.get(k, 0)) for k in ("fbox.sent", "fbox.recv", "fbox.direct", "fbox.rndv"))


def _pingpong(mpi: str, sizes: str = "0,8,40,41,1000,2048", extra: tuple[str, ...] = (),
              **knobs: str) -> dict[int, tuple[int, ...]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BOBCAT_")}
    env.update(BOBCAT_HOME=str(paths.home()), BOBCAT_STATS="rank", **knobs)
    r = subprocess.run([str(YOD), "-VN2", "-np", "2", str(BENCH / f"imb.{mpi}"), "--test", "PingPong",
                        "--sizes", sizes, "--iters", "200", "--time", "0", "--validate", *extra],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert '"valid": true' in r.stdout, r.stdout
    return {int(m[1]): _engine(m[2]) for m in LINE.finditer(r.stderr)}


@pytest.mark.skipif(not YOD.exists(), reason="yod is not built (make build)")
@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_blocking_receives_take_cells_directly(mpi):
    stats = _pingpong(mpi)
    assert set(stats) == {0, 1}, stats
    for rank, (sent, recv, straight, _) in stats.items():
        # 6 sizes x (200 + warm-up) round trips: all but the first few messages use the box, and a
        # blocking receive that finds its message in the cell takes it without a request
        assert sent > 1000 and recv > 1000, (rank, stats)
        assert straight > recv // 2, (rank, stats)
    off = _pingpong(mpi, BOBCAT_P2P_FASTBOX="0")
    assert all(v == (0, 0, 0, 0) for v in off.values()) and set(off) == {0, 1}, off


@pytest.mark.skipif(not YOD.exists(), reason="yod is not built (make build)")
@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_blocking_receives_take_rendezvous_headers_directly(mpi):
    """Above the eager limit the header is in the cell: the blocking receive claims the sender's
    buffer and copies it without a request (payloads validated, the split copy from 64 KiB too, with
    the receive buffers 8 bytes off the send buffers' alignment: util_copy's loop)."""
    stats = _pingpong(mpi, sizes="2049,4096,65536,1048576", extra=("--offset", "8"))
    assert set(stats) == {0, 1}, stats
    for rank, (sent, recv, straight, rndv) in stats.items():
        assert rndv > 500 and recv > 500, (rank, stats)
        assert straight > recv // 2, (rank, stats)
