"""The real MPI's own shared-memory windows over simulated nodes (yod --simulate-nodes): simulated
nodes share one host name, and Open MPI names a window's shared-memory file by host, job and
communicator id, so two simulated nodes' communicators with the same id collided in one file
(Open MPI: "A system call failed during shared memory initialization", open(2) or unlink(2) of
/dev/shm/osc_rdma.*). libbobcat gives each simulated node its own backing directory inside the
job's private session directory. tests/mp/mp_simshm.c checks its values itself."""
import os
import subprocess

import pytest

from bobcat import paths

YOD = paths.home() / "bin" / "yod"
SRC = os.path.join(os.path.dirname(__file__), "..", "mp", "mp_simshm.c")

pytestmark = pytest.mark.skipif(not YOD.exists(), reason="yod is not built (make build)")


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_shared_windows_over_simulated_nodes(tmp_path, mpi):
    exe = tmp_path / f"mp_simshm.{mpi}"
    subprocess.run([f"mpicc.{mpi}", "-O1", "-o", str(exe), SRC], check=True, capture_output=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("BOBCAT_")}
    env["BOBCAT_HOME"] = str(paths.home())
    r = subprocess.run([str(YOD), "--simulate-nodes", "--oversubscribe", "-VN2", "-np", "4", str(exe)], env=env,
                       cwd=tmp_path, capture_output=True, text=True, timeout=180)
    assert r.returncode == 0 and "mp_simshm: 4 ranks: ok" in r.stdout, r.stdout + r.stderr
    assert "shared memory initialization" not in r.stderr, r.stderr
    assert "osc_rdma" not in r.stderr and "osc_sm" not in r.stderr, r.stderr
