"""An unmodified MPI application (Debian's hpcc, linked to Open MPI) runs under yod with libbobcat
preloaded: all of HPCC's self-checks pass, the heap lived in the SMARTMAP segment, and
BOBCAT_STATS shows its collectives ran in place through bobcat's MPI layer — on one node and on
two simulated nodes (node phase in shared memory, leaders through the real MPI)."""
import os
import re
import shutil
import subprocess

import pytest

from bobcat import paths
from bobcat.evaluation import parsers

HPCC = shutil.which("hpcc")
YOD = paths.home() / "bin" / "yod"


STATS = re.compile(r"^bobcat: stats node (\d+) ranks=(\d+): (\w+) calls=(\d+) inplace=(\d+) staged=(\d+) "
                   r"mpi=(\d+)(.*)$", re.M)


def collective_stats(stderr: str) -> dict[tuple[int, str], dict[str, int]]:
    """(node, collective) -> calls by path, from BOBCAT_STATS=node lines."""
    out = {}
    for m in STATS.finditer(stderr):
        out[(int(m[1]), m[3])] = {"calls": int(m[4]), "inplace": int(m[5]), "staged": int(m[6]),
                                   "mpi": int(m[7])}
    return out


@pytest.mark.skipif(HPCC is None, reason="Debian's hpcc is not installed (make test installs it)")
@pytest.mark.skipif(not YOD.exists(), reason="yod is not built (make build)")
@pytest.mark.parametrize("layout", [["-VN2", "-np", "2"],
                                    ["-VN2", "-np", "4", "--simulate-nodes", "--oversubscribe"]],
                         ids=["np2", "np4-2nodes"])
def test_hpcc_runs_unmodified_under_yod(tmp_path, layout):
    nranks = int(layout[2])
    (tmp_path / "hpccinf.txt").write_text(parsers.hpcc_input(600, 64, 1, nranks))
    env = {k: v for k, v in os.environ.items() if not k.startswith("BOBCAT_")}
    env["BOBCAT_HOME"] = str(paths.home())
    env["BOBCAT_STATS"] = "node"
    r = subprocess.run([str(YOD), *layout, "--heap", "512M", "--verbose", HPCC],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    # The MPI layer was on, and HPCC's collectives ran through SMARTMAP on every node.
    assert "layer=on" in r.stderr, r.stderr[-3000:]
    stats = collective_stats(r.stderr)
    for node in range(nranks // 2):
        for coll in ("Barrier", "Allreduce", "Bcast"):
            s = stats.get((node, coll))
            assert s and s["inplace"] + s["staged"] > 0, (node, coll, s, r.stderr[-3000:])
    # Every Alltoall of PTRANS/FFT/RandomAccess runs through SMARTMAP: in place on one node, and
    # hierarchically (node phase + leaders' PMPI_Alltoallv) across the two simulated nodes.
    for node in range(nranks // 2):
        s = stats.get((node, "Alltoall"))
        assert s and s["inplace"] + s["staged"] > 0 and s["mpi"] == 0, (node, s)
    # yod's plan summary names the page kind the ranks got.
    assert re.search(r"pages?\W", r.stderr), r.stderr
    out = (tmp_path / "hpccoutf.txt").read_text()
    parsed = parsers.parse_hpcc(out)
    assert not parsed.problems, parsed.problems
    summary = {m.name: m.value for m in parsed.metrics}
    assert int(summary["CommWorldProcs"]) == nranks
    for check in ("HPL_Tflops", "PTRANS_GBs", "MPIRandomAccess_GUPs", "MPIFFT_Gflops"):
        assert summary[check] > 0, check
    # HPCC reports every self-check as PASSED or FAILED in its log.
    assert "PASSED" in out and "FAILED" not in out
