"""yod running real jobs: both MPIs, exit status, signals, kill -9, time limits, cleanup.

Every job gets a unique marker variable in its environment; after yod returns, no process may still
carry it, no 'bobcat' socket may be listed in /proc/net/unix and no new 'bobcat' entry may sit in
/dev/shm.  (Other jobs may run on the machine at the same time, so /dev/shm is compared by name.)
Most tests run with --no-preload so they exercise yod and the shim without libbobcat; the others
that do not run the real thing with libbobcat preloaded.
"""
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from bobcat import paths
from bobcat.elf import detect_mpi, needed

MPICC = {"openmpi": "mpicc.openmpi", "mpich": "mpicc.mpich"}
MPIS = ["openmpi", "mpich"]

PROG = r"""
/* test program: argv = <rank> <action> [dir]; the rank named does the action, others idle. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int r, n, sum = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Allreduce(&r, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (argc > 1 && strcmp(argv[1], "cpus") == 0) {   /* the CPUs this rank may run on */
        char line[256];
        FILE *f = fopen("/proc/self/status", "r");
        while (fgets(line, sizeof line, f))
            if (strncmp(line, "Cpus_allowed_list:", 18) == 0)
                printf("rank %d cpus %s", r, line + 19);
        fclose(f);
        MPI_Finalize();
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "poller") == 0) {  /* the library MPICH's progress polls reach */
        Dl_info info;
        void *f = dlsym(RTLD_DEFAULT, "ucp_worker_progress");
        const char *lib = f && dladdr(f, &info) && info.dli_fname ? strrchr(info.dli_fname, '/') : NULL;
        printf("rank %d sum %d poller %s\n", r, sum, lib ? lib + 1 : "none");
        MPI_Finalize();
        return 0;
    }
    printf("rank %d of %d sum %d\n", r, n, sum);
    fflush(stdout);
    if (argc > 3) {                      /* leave our pid for the test, then wait to be ended */
        char path[4096];
        snprintf(path, sizeof path, "%s/pid.%d", argv[3], r);
        FILE *f = fopen(path, "w");
        fprintf(f, "%d\n", (int)getpid());
        fclose(f);
    }
    if (argc > 2 && atoi(argv[1]) == r) {
        if (strcmp(argv[2], "segv") == 0) raise(SIGSEGV);
        if (strcmp(argv[2], "sleep") != 0) return atoi(argv[2]);
    }
    if (argc > 2 && strcmp(argv[2], "sleep") == 0) sleep(120);
    MPI_Finalize();
    return 0;
}
"""

CORES = __import__("bobcat.launcher.plan", fromlist=["host_cores"]).host_cores()


@pytest.fixture(scope="session")
def progs(tmp_path_factory):
    d = tmp_path_factory.mktemp("mpiprogs")
    src = d / "prog.c"
    src.write_text(PROG)
    out = {}
    for mpi, cc in MPICC.items():
        exe = d / f"prog.{mpi}"
        subprocess.run([cc, "-o", str(exe), str(src)], check=True)
        out[mpi] = str(exe)
    return out


@pytest.fixture(autouse=True)
def _require_shim():
    if not (paths.libexec_dir() / "bobcat-rank").exists():
        pytest.skip(f"bobcat-rank is not installed in {paths.libexec_dir()} (build and install first)")


def _bobcat_sockets(job: str) -> list[str]:
    with open("/proc/net/unix") as f:
        return [l for l in f if "bobcat" in l and job in l]


def _shm() -> set[str]:
    return {n for n in os.listdir("/dev/shm") if "bobcat" in n}


def _marked(*needles: str) -> list[int]:
    found = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                env = p.joinpath("environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if any(n.encode() in env for n in needles):
                found.append(int(p.name))
    return found


class Run:
    """A yod job started in the background with a unique marker in its environment.  --verbose
    makes yod name the job id, which the cleanup checks look for (other people's jobs may hold
    bobcat sockets at the same time)."""

    def __init__(self, args, env=None, prefix=()):
        self.mark = uuid.uuid4().hex
        e = {k: v for k, v in os.environ.items()
             if not k.startswith(("BOBCAT_", "OMPI_ALLOW_")) or k == "BOBCAT_HOME"}
        e.pop("YOD_TIME_LIMIT", None)
        e.update(env or {})
        e["YOD_TEST_MARK"] = self.mark
        self.shm_before = _shm()
        self.t0 = time.monotonic()
        self.p = subprocess.Popen([*prefix, sys.executable, "-m", "bobcat.launcher.yod", "--verbose", *args], env=e,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def wait(self, timeout=60):
        self.out, self.err = self.p.communicate(timeout=timeout)
        self.elapsed = time.monotonic() - self.t0
        self.rc = self.p.returncode
        return self

    def assert_clean(self):
        m = re.search(r"^yod: job ([0-9a-f]{16}):", self.err, re.M)
        assert m, self.err
        job = m.group(1)
        assert _marked(f"YOD_TEST_MARK={self.mark}", f"BOBCAT_JOB_ID={job}") == [], \
            "processes of the job are still alive"
        assert _bobcat_sockets(job) == []
        assert _shm() - self.shm_before == set()
        assert "@@bobcat@@" not in self.err


def yod(args, env=None, timeout=60) -> Run:
    r = Run(args, env).wait(timeout)
    r.assert_clean()
    return r


def _wait_for(path: Path, timeout=30.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if path.exists() and path.read_text().strip():
            return int(path.read_text())
        time.sleep(0.02)
    raise AssertionError(f"{path} never appeared")


# --- detection ------------------------------------------------------------------------------------

def test_detects_the_mpi_of_real_binaries(progs, tmp_path):
    assert "libmpi.so.40" in needed(progs["openmpi"])
    assert detect_mpi(progs["openmpi"]) == "openmpi"
    assert detect_mpi(progs["mpich"]) == "mpich"
    assert detect_mpi("/bin/true") is None
    assert needed(__file__) is None                      # not ELF
    if Path("/usr/bin/hpcc").exists():
        assert detect_mpi("/usr/bin/hpcc") == "openmpi"


def test_detects_indirect_linkage_through_ldd(tmp_path):
    # The program needs only libwrap.so, which is the one linked with MPICH.
    (tmp_path / "wrap.c").write_text("#include <mpi.h>\nint wrap_init(void) { return MPI_Init(0, 0); }\n")
    (tmp_path / "main.c").write_text("int wrap_init(void);\nint main(void) { return wrap_init(); }\n")
    subprocess.run(["mpicc.mpich", "-shared", "-fPIC", "-o", tmp_path / "libwrap.so", tmp_path / "wrap.c"],
                   check=True)
    subprocess.run(["cc", "-o", tmp_path / "main", tmp_path / "main.c", f"-L{tmp_path}", "-lwrap",
                    f"-Wl,-rpath,{tmp_path}"], check=True)
    assert not any("mpi" in so for so in needed(str(tmp_path / "main")))
    assert detect_mpi(str(tmp_path / "main")) == "mpich"


# --- real launches --------------------------------------------------------------------------------

@pytest.mark.parametrize("mpi", MPIS)
def test_two_ranks(progs, mpi):
    r = yod(["-np", "2", "--no-preload", progs[mpi]])
    assert r.rc == 0, r.err
    assert sorted(r.out.splitlines()) == ["rank 0 of 2 sum 1", "rank 1 of 2 sum 1"]


@pytest.mark.parametrize("mpi", MPIS)
def test_oversubscribed(progs, mpi):
    r = yod(["-VN", "6", "-np", "6", "--oversubscribe", "--no-preload", progs[mpi]])
    assert r.rc == 0, r.err
    assert sorted(r.out.splitlines()) == [f"rank {i} of 6 sum 15" for i in range(6)]


def test_oversubscribed_mpich_polls_yield(progs):
    """MPICH's progress loop never yields; oversubscribed, yod preloads libbobcat-yield.so, whose
    ucp_worker_progress is the one MPICH's polls reach (launcher/bobcat_yield.c). With a core per
    rank UCX's own answers them."""
    r = yod(["-VN", "4", "-np", "4", "--oversubscribe", "--heap", "128M", progs["mpich"], "poller"])
    assert r.rc == 0, r.err
    assert sorted(r.out.splitlines()) == [f"rank {i} sum 6 poller libbobcat-yield.so" for i in range(4)]
    r = yod(["-VN", "2", "-np", "2", "--heap", "128M", progs["mpich"], "poller"])
    assert r.rc == 0, r.err
    polled = {line.split()[-1] for line in r.out.splitlines()}
    assert len(r.out.splitlines()) == 2 and len(polled) == 1 and polled.pop().startswith("libucp.so")


@pytest.mark.parametrize("mpi", MPIS)
def test_simulated_nodes_8_ranks(progs, mpi):
    r = yod(["-VN2", "-np", "8", "--simulate-nodes", "--oversubscribe", "--no-preload", progs[mpi]])
    assert r.rc == 0, r.err
    assert len(r.out.splitlines()) == 8


@pytest.mark.parametrize("mpi", MPIS)
def test_environment_reaches_every_rank(mpi):
    r = yod(["--mpi", mpi, "-SN", "-np", "2", "--simulate-nodes", "--heap", "8M", "--pages", "small",
             "--no-preload", "/bin/sh", "-c",
             "echo $BOBCAT_JOB_ID $BOBCAT_JOB_TOKEN $BOBCAT_PLAN $BOBCAT_SIMULATE_NODES $BOBCAT_HEAP "
             "$BOBCAT_PAGES $BOBCAT_BIND ${BOBCAT_PRELOAD:-nopreload} $UCX_YOD_TEST $OMPI_MCA_yod_test"],
            env={"UCX_YOD_TEST": "ucx", "OMPI_MCA_yod_test": "mca"})
    assert r.rc == 0, r.err
    lines = r.out.splitlines()
    assert len(lines) == 2 and lines[0] == lines[1]
    job, token, *rest = lines[0].split()
    assert re.fullmatch(r"[0-9a-f]{16}", job) and re.fullmatch(r"[0-9a-f]{32}", token)
    assert rest == ["2:1", "1", str(8 << 20), "small", "core", "nopreload", "ucx", "mca"]


def test_loadfile_job_runs_each_group_with_its_heap(tmp_path):
    f = tmp_path / "job.load"
    f.write_text("# two programs\n-np 2 -VN2 /bin/sh -c 'echo A $BOBCAT_HEAP'\n"
                 "-np 1 -SN /bin/sh -c 'echo B $BOBCAT_HEAP'\n")
    r = yod(["-F", str(f), "--heap-node", "1G", "--simulate-nodes", "--oversubscribe", "--no-preload"])
    assert r.rc == 0, r.err
    assert sorted(r.out.splitlines()) == ["A 536870912", "A 536870912", "B 1073741824"]


def test_stderr_relayed_status_lines_consumed():
    r = yod(["-np", "2", "--no-preload", "/bin/sh", "-c", "printf 'partial'>&2; echo ' line' >&2"])
    assert r.rc == 0
    assert r.err.count("partial line\n") + r.err.count("partial") >= 2
    assert "@@bobcat@@" not in r.err


def test_runs_as_root_without_extra_flags(progs):
    if os.geteuid() != 0:
        pytest.skip("only meaningful as root")
    r = yod(["-np", "2", "--no-preload", progs["openmpi"]])   # Run() strips OMPI_ALLOW_*
    assert r.rc == 0, r.err


# --- exit status ----------------------------------------------------------------------------------

@pytest.mark.parametrize("mpi", MPIS)
def test_exit_code_names_the_rank(progs, mpi):
    r = yod(["-np", "2", "--no-preload", progs[mpi], "1", "5"])
    assert r.rc == 1
    assert "yod: rank 1 (prog." in r.err and "exited with code 5" in r.err


@pytest.mark.parametrize("mpi", MPIS)
def test_signal_names_the_rank(progs, mpi):
    r = yod(["-np", "2", "--no-preload", progs[mpi], "0", "segv"])
    assert r.rc == 1
    assert "rank 0" in r.err and "signal 11 (SIGSEGV)" in r.err


def test_non_mpi_exit_code():
    r = yod(["-np", "2", "--no-preload", "/bin/sh", "-c", "exit 0"])
    assert r.rc == 0
    r = yod(["-np", "1", "--no-preload", "/bin/sh", "-c", "exit 3"])
    assert r.rc == 3 and "exited with code 3" in r.err


# --- ending a job ---------------------------------------------------------------------------------

@pytest.mark.parametrize("mpi", MPIS)
def test_kill_9_of_a_rank_ends_the_job(progs, mpi, tmp_path):
    run = Run(["-np", "2", "--no-preload", progs[mpi], "1", "sleep", str(tmp_path)])
    pid = _wait_for(tmp_path / "pid.1")
    _wait_for(tmp_path / "pid.0")
    t = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    run.wait(30)
    assert time.monotonic() - t <= 5
    assert run.rc == 1
    assert "rank 1" in run.err and "SIGKILL" in run.err
    run.assert_clean()


def test_kill_9_of_the_shim_ends_the_job(progs, tmp_path):
    run = Run(["-np", "2", "--no-preload", progs["mpich"], "1", "sleep", str(tmp_path)])
    pid = _wait_for(tmp_path / "pid.1")
    _wait_for(tmp_path / "pid.0")
    shim = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    t = time.monotonic()
    os.kill(shim, signal.SIGKILL)
    run.wait(30)
    assert time.monotonic() - t <= 5
    assert run.rc != 0
    run.assert_clean()


@pytest.mark.parametrize("mpi", MPIS)
def test_time_limit(progs, mpi, tmp_path):
    run = Run(["-np", "2", "-tlimit", "1", "--no-preload", progs[mpi], "0", "sleep"]).wait(30)
    assert run.rc == 124
    assert "time limit of 1 s" in run.err
    assert run.elapsed < 1 + 5
    run.assert_clean()


def test_time_limit_from_environment():
    run = Run(["-np", "2", "--no-preload", "/bin/sleep", "60"], env={"YOD_TIME_LIMIT": "0.5"}).wait(30)
    assert run.rc == 124 and run.elapsed < 5.5
    run.assert_clean()


@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
@pytest.mark.parametrize("mpi", MPIS)
def test_signal_to_yod_stops_the_job(progs, mpi, sig, code, tmp_path):
    run = Run(["-np", "2", "--no-preload", progs[mpi], "0", "sleep", str(tmp_path)])
    _wait_for(tmp_path / "pid.0")
    _wait_for(tmp_path / "pid.1")
    t = time.monotonic()
    run.p.send_signal(sig)
    run.wait(30)
    assert time.monotonic() - t <= 5
    assert run.rc == code
    run.assert_clean()


def test_orphans_are_reaped_after_success():
    # A rank leaves a detached grandchild behind; yod must end it before returning.
    run = Run(["-np", "1", "--no-preload", "/bin/sh", "-c", "(setsid sleep 60 &) ; exit 0"]).wait(30)
    assert run.rc == 0
    run.assert_clean()


# --- with libbobcat ---------------------------------------------------------------------------------

@pytest.mark.parametrize("mpi", MPIS)
def test_with_libbobcat(progs, mpi):
    r = yod(["-np", "2", "--heap", "128M", "--verbose", progs[mpi]])
    assert r.rc == 0, r.err
    assert sorted(r.out.splitlines()) == ["rank 0 of 2 sum 1", "rank 1 of 2 sum 1"]
    assert re.search(r"yod: node 0: 2 ranks, heap 128 MiB per rank on \S+ \S+ pages", r.err)


@pytest.mark.skipif(CORES < 2, reason="needs two cores")
@pytest.mark.parametrize("mpi", MPIS)
def test_with_libbobcat_each_rank_is_bound_to_its_own_cpu(progs, mpi):
    """Open MPI binds through mpirun (yod asks it to), MPICH through libbobcat's hwloc call: either
    way each rank ends on one CPU of its own."""
    r = yod(["-VN2", "-np", "2", "--heap", "128M", progs[mpi], "cpus"])
    assert r.rc == 0, r.err
    cpus = dict(re.findall(r"^rank (\d) cpus (\S+)$", r.out, re.M))
    assert sorted(cpus) == ["0", "1"], r.out
    assert all(c.isdigit() for c in cpus.values()), f"a rank may run on more than one CPU: {cpus}"
    assert cpus["0"] != cpus["1"], cpus


@pytest.mark.parametrize("mpi, line", [("openmpi", "localhost slots=2"), ("mpich", "localhost:2")])
def test_hostfile_passes_through(progs, mpi, line, tmp_path):
    """A hostfile in the MPI's own format naming this host runs the job there (one node)."""
    hf = tmp_path / "hosts"
    hf.write_text(f"# this host\n{line}\n")
    r = yod(["-VN2", "-np", "2", "--hostfile", str(hf), "--heap", "128M", progs[mpi]])
    assert r.rc == 0, r.err
    assert sorted(r.out.splitlines()) == ["rank 0 of 2 sum 1", "rank 1 of 2 sum 1"]


def test_with_libbobcat_non_mpi_simulated_nodes():
    r = yod(["-SN", "-np", "2", "--simulate-nodes", "--heap", "128M", "/bin/true"])
    assert r.rc == 0, r.err
