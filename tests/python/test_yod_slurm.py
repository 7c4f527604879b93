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
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from test_yod_plan import _yod
from test_yod_run import Run, progs  # noqa: F401  (progs is a fixture)

SLURM_DIR = Path(__file__).resolve().parents[1] / "slurm"
NEEDED = ("slurmctld", "slurmd", "srun", "salloc", "sinfo", "scontrol")


START_TIMEOUT_S = 120     # start.sh waits at most 60 s for idle nodes and 30 s for a step
START_ATTEMPTS = 4        # a port taken between our check and the daemon's bind: new ports, again


def _ephemeral_range() -> tuple[int, int]:
    try:
        lo, hi = (int(x) for x in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
        return lo, hi
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


def _port_is_free(port: int) -> bool:
    # No SO_REUSEADDR: a port in any use (listening, connected, TIME_WAIT) counts as taken.
    with socket.socket() as s:
        try:
            s.bind(("0.0.0.0", port))
            return True
        except OSError:
            return False


def _free_port_block(n: int) -> int:
    """A port p such that p .. p+n are free, outside the kernel's ephemeral range (where any
    outgoing connection, mpirun's or another test's, could take them before slurmd binds) and
    random, so two runs of this suite on one machine rarely try the same ports."""
    lo, hi = _ephemeral_range()
    spans = [(a, b) for a, b in ((10000, lo - 1), (hi + 1, 65535)) if b - a > n]
    if not spans:
        raise RuntimeError(f"no ports outside the ephemeral range {lo}-{hi}")
    rng = random.SystemRandom()
    for _ in range(200):
        a, b = rng.choice(spans)
        base = rng.randint(a, b - n)
        if all(_port_is_free(base + i) for i in range(n + 1)):
            return base
    raise RuntimeError(f"no block of {n + 1} free ports outside the ephemeral range {lo}-{hi}")


def _start(d: Path, nodes: int, port: int, timeout: float = START_TIMEOUT_S) -> subprocess.CompletedProcess:
    """start.sh in its own process group, so a time-out ends its sinfo/srun children too (the
    daemons it started are stop.sh's business)."""
    p = subprocess.Popen([str(SLURM_DIR / "start.sh"), str(d), str(nodes), str(port)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        out, errs = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        try:
            out, errs = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:  # a pipe held by something outside the group
            out, errs = "", ""
        errs += f"\nstart.sh: timed out after {timeout} s"
        return subprocess.CompletedProcess(p.args, -1, out, errs)
    return subprocess.CompletedProcess(p.args, p.returncode, out, errs)


def _stop(d: Path) -> None:
    subprocess.run([str(SLURM_DIR / "stop.sh"), str(d)], capture_output=True, timeout=120)


def _start_cluster(top: Path, started: list[Path], nodes: int = 2) -> Path:
    """Start a cluster under top, with new ports after a bind failure; every attempt's directory
    goes into `started` before it starts, for the caller to stop whatever happens."""
    for attempt in range(1, START_ATTEMPTS + 1):
        d = top / f"try{attempt}"
        started.append(d)
        r = _start(d, nodes, _free_port_block(nodes))
        if r.returncode == 0:
            return d
        if r.returncode != 3:  # not a bind failure: new ports would not help
            pytest.fail(f"the private Slurm cluster did not start:\n{r.stderr}")
        _stop(d)
    pytest.fail(f"the private Slurm cluster could not bind its ports in {START_ATTEMPTS} "
                f"attempts:\n{r.stderr}")


def _need_slurm() -> None:
    if os.geteuid() != 0:
        pytest.skip("slurmd must run as root")
    missing = [b for b in NEEDED if shutil.which(b) is None]
    if missing:
        pytest.skip(f"Slurm is not installed ({', '.join(missing)} missing)")


@pytest.fixture(scope="module")
def cluster():
    _need_slurm()
    top = Path(tempfile.mkdtemp(prefix="bobcat-slurm-"))
    started: list[Path] = []
    try:
        # Stopped in the finally, whatever happened to each attempt (time-out, bind failure, an
        # exception, Ctrl-C).
        d = _start_cluster(top, started)
        yield {"SLURM_CONF": f"{d}/etc/slurm.conf"}
    finally:
        for d in started:
            _stop(d)
        shutil.rmtree(top, ignore_errors=True)


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


# --- the cluster's own start and stop --------------------------------------------------------------

def _cluster_processes(d: Path) -> list[str]:
    """Processes of the cluster in d: its configuration file on their command line."""
    conf = str(d.resolve() / "etc" / "slurm.conf")
    found = []
    for c in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = c.read_bytes().split(b"\0")
        except OSError:
            continue
        if conf.encode() in argv:
            found.append(f"{c.parent.name}: {b' '.join(argv).decode(errors='replace')}")
    return found


def test_ports_are_outside_the_ephemeral_range():
    lo, hi = _ephemeral_range()
    for _ in range(20):
        base = _free_port_block(2)
        assert all(not lo <= base + i <= hi for i in range(3)), (base, lo, hi)
        assert base >= 10000 and base + 2 <= 65535


@pytest.fixture
def slurm_installed():
    _need_slurm()


def test_a_taken_port_is_reported_as_such_and_stop_leaves_nothing(slurm_installed, tmp_path):
    port = _free_port_block(2)
    with socket.socket() as held:  # slurmd bc1's port, taken before the daemon starts
        held.bind(("0.0.0.0", port + 1))
        try:
            r = _start(tmp_path / "c", 2, port)
        finally:
            _stop(tmp_path / "c")
    assert r.returncode == 3, r.stderr
    assert f"({port + 1})" in r.stderr or "Address already in use" in r.stderr, r.stderr
    assert _cluster_processes(tmp_path / "c") == []


def test_a_taken_port_gets_new_ports(slurm_installed, tmp_path, monkeypatch):
    # The first ports picked are taken between the check and the daemons' bind (as an outgoing
    # connection could): the start is retried on new ports and the cluster runs a step.
    held = socket.socket()
    picks = iter([None])
    real = _free_port_block

    def first_taken(n):
        if next(picks, 1) is None:
            base = real(n)
            held.bind(("0.0.0.0", base))  # slurmctld's port, bound as an outgoing socket's
            return base
        return real(n)
    monkeypatch.setattr(sys.modules[__name__], "_free_port_block", first_taken)
    started: list[Path] = []
    try:
        d = _start_cluster(tmp_path, started)
        r = subprocess.run(["srun", "-N", "2", "-n", "2", "-t", "1", "true"], capture_output=True,
                           text=True, timeout=60, env={**os.environ, "SLURM_CONF": f"{d}/etc/slurm.conf"})
    finally:
        held.close()
        for s in started:
            _stop(s)
    assert len(started) == 2 and d == started[1], started
    assert r.returncode == 0, r.stderr
    assert all(_cluster_processes(s) == [] for s in started)


def test_stop_ends_a_start_cut_short(slurm_installed, tmp_path, monkeypatch):
    # The start hangs in its first step (an srun that never returns) and is cut short by its
    # time-out with both daemons running: stop.sh must end them all the same.
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "srun").write_text(f"#!/bin/sh\ntouch {tmp_path}/step\nexec sleep 600\n")
    (fake / "srun").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    try:
        r = _start(tmp_path / "c", 2, _free_port_block(2), timeout=6)
        up = _cluster_processes(tmp_path / "c")
    finally:
        _stop(tmp_path / "c")
    assert r.returncode == -1, r.stderr
    if (tmp_path / "step").exists():  # the start got as far as the step (unless very loaded)
        assert len(up) == 3, up
    assert _cluster_processes(tmp_path / "c") == []


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
