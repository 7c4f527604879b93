"""yod inside a Slurm allocation: the srun launch path, for real.

The tests start a private Slurm cluster (tests/slurm/start.sh: slurmctld plus two slurmd, nodes
bc1 and bc2 emulated on this host, auth/none, every file in a temporary directory) and stop it at
the end. They need root and Debian's slurmctld/slurmd/slurm-client (scripts/setup.sh installs them
where no Slurm is on PATH); without them only the command-line tests run.

Emulated nodes share this host, so Open MPI runs only on one node here: Slurm's PMIx plugin gives
both slurmd the same per-step directory under TmpFS and the second one fails to start the step.
MPICH (PMI-2) has no such directory and runs across both.
"""
import os
import re
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

from test_yod_plan import _yod
from test_yod_run import Run, progs  # noqa: F401  (progs is a fixture)

SLURM_DIR = Path(__file__).resolve().parents[1] / "slurm"
NEEDED = ("slurmctld", "slurmd", "srun", "salloc", "sinfo", "scontrol")


def _free_port_block(n: int) -> int:
    """A port p such that p .. p+n look free (bound and released at once; good enough here)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + n > 65535:
            continue
        try:
            held = []
            for i in range(n + 1):
                t = socket.socket()
                held.append(t)
                t.bind(("127.0.0.1", base + i))
            return base
        except OSError:
            continue
        finally:
            for t in held:
                t.close()
    raise RuntimeError("no free block of ports")


@pytest.fixture(scope="module")
def cluster():
    if os.geteuid() != 0:
        pytest.skip("slurmd must run as root")
    missing = [b for b in NEEDED if shutil.which(b) is None]
    if missing:
        pytest.skip(f"Slurm is not installed ({', '.join(missing)} missing)")
    d = tempfile.mkdtemp(prefix="bobcat-slurm-")
    r = subprocess.run([str(SLURM_DIR / "start.sh"), d, "2", str(_free_port_block(3))],
                       capture_output=True, text=True, timeout=60)
    try:
        assert r.returncode == 0, r.stderr
        yield {"SLURM_CONF": f"{d}/etc/slurm.conf"}
    finally:
        subprocess.run([str(SLURM_DIR / "stop.sh"), d], capture_output=True, timeout=60)
        shutil.rmtree(d, ignore_errors=True)


def salloc(env, nodes, ranks, args, timeout=90) -> Run:
    r = Run(args, env, prefix=("salloc", "-Q", "-N", str(nodes), "-n", str(ranks))).wait(timeout)
    r.assert_clean()
    return r


WORLD2 = ["rank 0 of 2 sum 1", "rank 1 of 2 sum 1"]


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_one_node_job_runs_under_srun_with_the_right_pmi(cluster, progs, mpi):
    r = salloc(cluster, 1, 2, ["-VN2", "-np", "2", "--heap", "128M", progs[mpi]])
    assert r.rc == 0, r.err
    assert re.search(r"launcher \S*/srun\b", r.err), r.err
    assert sorted(r.out.splitlines()) == WORLD2, r.err
    assert re.search(r"node 0: 2 ranks, heap 128 MiB", r.err)


def test_two_node_job_runs_one_rank_per_node(cluster, progs):
    r = salloc(cluster, 2, 2, ["-SN", "-np", "2", "--heap", "128M", progs["mpich"]])
    assert r.rc == 0, r.err
    assert sorted(r.out.splitlines()) == WORLD2, r.err
    assert re.search(r"node 0: 1 ranks", r.err) and re.search(r"node 1: 1 ranks", r.err)


def test_loadfile_job_runs_its_groups_on_their_nodes(cluster, progs, tmp_path):
    lf = tmp_path / "job.load"
    lf.write_text(f"-np 1 -SN {progs['mpich']}\n-np 1 -SN {progs['mpich']}\n")
    r = salloc(cluster, 2, 2, ["-F", str(lf), "--heap", "128M"])
    assert r.rc == 0, r.err
    assert sorted(r.out.splitlines()) == WORLD2, r.err
    assert re.search(r"node 0: 1 ranks", r.err) and re.search(r"node 1: 1 ranks", r.err)


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_failing_rank_is_named_under_srun(cluster, progs, mpi):
    r = salloc(cluster, 1, 2, ["-VN2", "-np", "2", "--heap", "128M", progs[mpi], "1", "7"])
    assert r.rc == 1, r.err
    assert re.search(r"yod: rank 1 \(prog\.\w+\) exited with code 7", r.err), r.err


def test_time_limit_ends_the_job_under_srun(cluster, progs):
    r = salloc(cluster, 2, 2, ["-SN", "-np", "2", "--heap", "128M", "-tlimit", "2", progs["mpich"], "0", "sleep"])
    assert r.rc == 124, r.err
    assert r.elapsed < 2 + 10, r.elapsed
    assert "time limit of 2 s reached" in r.err


# --- the srun command line (a fake srun; no cluster needed) ---------------------------------------

@pytest.fixture
def fake_slurm(tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    for name in ("srun", "scontrol"):
        (fake / name).write_text("#!/bin/sh\necho bc1\n")
        (fake / name).chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env.update(PATH=f"{fake}:{env['PATH']}", SLURM_JOB_ID="42", SLURM_NNODES="1",
               SLURM_JOB_NODELIST="bc1")
    return env


def _dry(env, *args):
    r = _yod(["--dry-run", *args], env)
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()[-1]


@pytest.mark.parametrize("mpi, flag", [("openmpi", "--mpi=pmix"), ("mpich", "--mpi=pmi2")])
def test_srun_serves_the_pmi_of_the_programs_mpi(fake_slurm, mpi, flag):
    cmd = _dry(fake_slurm, "--mpi", mpi, "-np", "2", "--heap", "128M", "/bin/true")
    assert cmd.split()[:3] == [cmd.split()[0], "--cpu-bind=none", flag], cmd
    assert cmd.split()[0].endswith("/srun")


def test_srun_keeps_the_users_pmi_choice(fake_slurm):
    assert "--mpi=" not in _dry({**fake_slurm, "SLURM_MPI_TYPE": "pmi2"}, "--mpi", "openmpi", "-np", "2",
                                "--heap", "128M", "/bin/true")
    cmd = _dry(fake_slurm, "--mpi", "openmpi", "--launcher-arg=--mpi=pmi2", "-np", "2", "--heap", "128M",
               "/bin/true")
    assert cmd.count("--mpi=") == 1 and "--mpi=pmi2" in cmd


def test_srun_runs_non_mpi_programs_without_a_pmi(fake_slurm):
    assert "--mpi=" not in _dry(fake_slurm, "-np", "2", "--heap", "128M", "/bin/true")
