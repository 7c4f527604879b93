"""A real Fortran application on Open MPI (Debian's Quantum ESPRESSO pw.x, issue 28) runs under yod
with its communication on bobcat's path: an 8-atom silicon SCF gives the same total energy as the
bare MPI run, and BOBCAT_STATS shows the layer on and its collectives and point-to-point in place.
Until the layer defined Open MPI's Fortran entry points, pw.x ran with `layer=unused`.

The pseudopotential is made on the spot by QE's own atomic code (ld1.x, Troullier-Martins, LDA),
so the test needs nothing from the network (data/qe/)."""
import os
import re
import shutil
import subprocess

import pytest

from bobcat import paths

PW = shutil.which("pw.x")
LD1 = shutil.which("ld1.x")
YOD = paths.home() / "bin" / "yod"
DATA = os.path.join(os.path.dirname(__file__), "data", "qe")
ENERGY = re.compile(r"^!\s+total energy\s+=\s+(\S+) Ry", re.M)
ROW = re.compile(r"^bobcat: stats rank 0 node 0: (.+?) calls=(\d+) inplace=(\d+) staged=(\d+) mpi=(\d+)", re.M)

pytestmark = [
    pytest.mark.skipif(PW is None or LD1 is None, reason="Quantum ESPRESSO is not installed (make test installs it)"),
    pytest.mark.skipif(not YOD.exists(), reason="yod is not built (make build)"),
]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("qe")
    shutil.copy(os.path.join(DATA, "si8.in"), d)
    with open(os.path.join(DATA, "si_ld1.in")) as f:
        r = subprocess.run([LD1], stdin=f, cwd=d, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and (d / "Si.pz-tm.UPF").exists(), r.stdout[-2000:] + r.stderr[-2000:]
    return d


def clean_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith("BOBCAT_")}
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="1")
    return env


def energy(out):
    m = ENERGY.search(out)
    assert m, out[-3000:]
    return m[1]


@pytest.fixture(scope="module")
def bare_energy(workdir):
    r = subprocess.run(["mpirun.openmpi", "-np", "2", PW, "-in", "si8.in"], cwd=workdir, env=clean_env(),
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return energy(r.stdout)


@pytest.mark.parametrize("layout", [["-VN2", "-np", "2"],
                                    ["-VN2", "-np", "4", "--simulate-nodes", "--oversubscribe"]],
                         ids=["np2", "np4-2nodes"])
def test_pw_x_takes_bobcats_path_with_the_same_energy(workdir, bare_energy, layout):
    env = clean_env()
    env["BOBCAT_HOME"] = str(paths.home())
    env["BOBCAT_STATS"] = "1"
    r = subprocess.run([str(YOD), *layout, "--heap", "512M", PW, "-in", "si8.in"], cwd=workdir, env=env,
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert energy(r.stdout) == bare_energy
    assert "stats rank 0 node 0: layer=on" in r.stderr, r.stderr[-3000:]
    rows = {m[1]: [int(x) for x in m.groups()[1:]] for m in ROW.finditer(r.stderr)}
    # pw.x's FFTs are Alltoalls, its sums Allreduces: on bobcat's path, none left to the real MPI
    # on a node of its own (across simulated nodes the leaders' phase is the real MPI's by design).
    for coll in ("Alltoall", "Allreduce", "Bcast"):
        calls, inplace, staged, mpi = rows.get(coll, [0, 0, 0, 0])
        assert calls > 0 and inplace + staged > 0, (coll, rows)
        if layout[2] == "2":
            assert mpi == 0, (coll, rows)


def test_pw_x_account_puts_its_on_node_bytes_on_bobcats_path(workdir, bare_energy, tmp_path):
    """The full account (yod --stats): of pw.x's on-node traffic on one node, at least 90 % of the
    bytes took bobcat's path (issue 28), and the energy is still the bare run's."""
    import json
    env = clean_env()
    env["BOBCAT_HOME"] = str(paths.home())
    account = tmp_path / "account.json"
    r = subprocess.run([str(YOD), "-VN2", "-np", "2", "--heap", "512M", "--stats", str(account), PW, "-in", "si8.in"],
                       cwd=workdir, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert energy(r.stdout) == bare_energy
    acct = json.loads(account.read_text())
    s = acct["summary"]
    assert acct["layer"]["on"] == 2 and s["on_node_bytes"] > 0, acct["layer"]
    assert s["bobcat_byte_share"] >= 0.9, (s["bobcat_byte_share"], s["top_missed"])
