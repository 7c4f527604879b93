"""bobcat in the sandboxes containers make, built from the kernel's own tools (issue 27,
docs/containers.md): an unprivileged user, user and PID namespaces (`unshare`), a Docker-like seccomp
filter without process_vm_readv/writev and ptrace (`bobcat-nocma`), a 64 MB /dev/shm (a private
tmpfs in a mount namespace), no hugetlb pool / no shmem THP / `ulimit -l 0`, and ranks in different
network namespaces. In each, a job runs and maps its peers, and its large messages take bobcat's
single copy (BOBCAT_STATS: `alg.single-copy`), or yod or libbobcat stops it naming the cause and
the fix; and no process of another job, user or user namespace can attach to a job's heaps.

As root the tests create an unprivileged user (bobcat-sbx) and remove it afterwards if they made
it; not as root, they run as the calling user. Each test cleans up what it starts: yod ends its jobs,
the namespaces end with their processes, and the bootstrap-by-hand test kills what it spawned.
"""
import os
import re
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from bobcat import paths

HOME = paths.home()
YOD = HOME / "bin" / "yod"
OSHRUN = HOME / "bin" / "oshrun"
NOCMA = paths.libexec_dir() / "bobcat-nocma"
BENCH = paths.libexec_dir() / "bench"
LIBBOBCAT = paths.lib_dir() / "libbobcat.so"
USER = "bobcat-sbx"
ROOT = os.geteuid() == 0
HOST = os.uname().nodename
STATS = re.compile(r"^bobcat: stats rank (\d+) node \d+: p2p engine .*\bbytes\.single-copy=(\d+)", re.M)

pytestmark = pytest.mark.skipif(not (YOD.exists() and NOCMA.exists()),
                                reason=f"yod or bobcat-nocma not installed in {HOME} (make build)")


def _unshare_ok(*flags: str) -> bool:
    return subprocess.run(["unshare", *flags, "true"], capture_output=True).returncode == 0


@pytest.fixture(scope="module")
def user():
    """The unprivileged user the jobs run as: bobcat-sbx, created here if root and missing (and
    removed at the end, with the session directory Open MPI made for it); else the caller."""
    if not ROOT:
        yield None
        return
    made = subprocess.run(["id", USER], capture_output=True).returncode != 0
    if made:
        subprocess.run(["useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent",
                        "--shell", "/usr/sbin/nologin", USER], check=True)
    uid = int(subprocess.run(["id", "-u", USER], capture_output=True, text=True, check=True).stdout)
    try:
        r = subprocess.run(_as(USER, ["sh", "-c", f'test -r "{LIBBOBCAT}" && test -x "{YOD}" && test -r '
                                                  f'"{paths.repo_root() / "python" / "bobcat" / "__init__.py"}"']),
                           env=_env())
        assert r.returncode == 0, (f"the build tree ({HOME}, {paths.repo_root()}) must be readable by an "
                                   f"unprivileged user ({USER}) for these tests")
        yield USER
    finally:
        for pid in _marked():     # nothing should be left; if a failed test left something, end it
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        shutil.rmtree(f"/tmp/ompi.{HOST}.{uid}", ignore_errors=True)
        if made:
            subprocess.run(["userdel", USER], capture_output=True)


def _as(user: str | None, argv: list[str]) -> list[str]:
    if user is None:
        return argv
    return ["setpriv", "--reuid", user, "--regid", user, "--clear-groups", *argv]


MARK = f"BOBCAT_SANDBOX_TEST={uuid.uuid4().hex}"


def _marked() -> list[int]:
    """Processes this module started (they carry MARK in their environment)."""
    out = []
    for p in os.listdir("/proc"):
        if p.isdigit() and _env_has(int(p), MARK):
            out.append(int(p))
    return out


def _env(**extra: str) -> dict[str, str]:
    """A clean environment: no BOBCAT_* knob of the caller's, no OMPI_ALLOW_RUN_AS_ROOT (yod sets it
    when it needs to), HOME that every user can use, and this module's mark."""
    e = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/tmp", "LANG": "C.UTF-8",
         "BOBCAT_HOME": str(HOME), MARK.split("=")[0]: MARK.split("=")[1]}
    if "LEFTOVERS_MARK" in os.environ:      # the suite's own leftover check (tests/run_all.sh)
        e["LEFTOVERS_MARK"] = os.environ["LEFTOVERS_MARK"]
    e.update(extra)
    return e


def _run(argv: list[str], timeout: float = 90, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(argv, env=_env(**env), capture_output=True, text=True, timeout=timeout, cwd="/tmp")


def _pingpong(mpi: str, prefix: list[str], user: str | None, sizes: str = "1048576") -> list[str]:
    """yod -VN2 -np 2 IMB PingPong (validated) under `prefix`; the command line."""
    return _as(user, [*prefix, str(YOD), "-VN2", "-np", "2", "--heap", "128M", str(BENCH / f"imb.{mpi}"),
                      "--test", "PingPong", "--sizes", sizes, "--iters", "20", "--validate"])


def _single_copy(r: subprocess.CompletedProcess) -> dict[int, int]:
    """Bytes each rank moved by bobcat's single copy, from BOBCAT_STATS=rank."""
    assert r.returncode == 0, r.stderr
    assert '"valid": true' in r.stdout, r.stdout
    return {int(m[1]): int(m[2]) for m in STATS.finditer(r.stderr)}


def _assert_single_copy(r: subprocess.CompletedProcess) -> None:
    got = _single_copy(r)
    assert set(got) == {0, 1} and all(b >= 20 * (1 << 20) for b in got.values()), (got, r.stderr)


# --- an unprivileged user ---------------------------------------------------------------------------

@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_unprivileged_user_maps_its_peers_and_copies_once(user, mpi):
    r = _run(_pingpong(mpi, [], user), BOBCAT_STATS="rank")
    _assert_single_copy(r)


# --- user and PID namespaces ------------------------------------------------------------------------

@pytest.fixture
def root_session_dir():
    """The state of a host where root has run Open MPI: /tmp/ompi.<host>.0 is the real root's. In a
    user namespace the user is root too, and Open MPI wants that very directory (yod gives it a
    private one). Made here if missing, and removed again if it is still empty."""
    d = Path(f"/tmp/ompi.{HOST}.0")
    made = False
    if ROOT and not d.exists():
        d.mkdir(mode=0o700)
        made = True
    yield
    if made:
        try:
            d.rmdir()
        except OSError:
            pass


USERNS = ["unshare", "--user", "--map-root-user"]
USERNS_PID = [*USERNS, "--pid", "--mount", "--fork", "--mount-proc"]


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
@pytest.mark.parametrize("ns", [USERNS, USERNS_PID], ids=["userns", "userns-pid-mount"])
def test_user_namespace(user, mpi, ns, root_session_dir):
    if not _unshare_ok(*ns[1:]):
        pytest.skip("this kernel does not let an unprivileged user make a user namespace "
                    "(kernel.unprivileged_userns_clone / user.max_user_namespaces)")
    before = set(os.listdir("/tmp"))
    r = _run(_pingpong(mpi, ns, user), BOBCAT_STATS="rank")
    _assert_single_copy(r)
    assert not {n for n in set(os.listdir("/tmp")) - before if n.startswith("yod-ompi-")}


def test_pid_namespace_with_the_hosts_proc(user):
    """`unshare --pid --fork` without --mount-proc leaves the host's /proc: libbobcat and yod cope
    (a non-MPI job forms its node), but the MPIs find their peers through /proc/<pid> and fail, so
    yod stops an MPI job before launch, naming --mount-proc."""
    ns = [*USERNS, "--pid", "--mount", "--fork"]
    if not _unshare_ok(*ns[1:]):
        pytest.skip("no unprivileged user namespaces on this kernel")
    r = _run(_as(user, [*ns, str(YOD), "-v", "-VN2", "-np", "2", "--heap", "128M", "/bin/true"]))
    assert r.returncode == 0, r.stderr
    assert re.search(r"node 0: 2 ranks, heap 128 MiB", r.stderr), r.stderr
    r = _run(_pingpong("mpich", ns, user))
    assert r.returncode == 2, r.stderr
    assert "--mount-proc" in r.stderr and "PID namespace" in r.stderr, r.stderr


# --- nobody else attaches ---------------------------------------------------------------------------

def _unix_names() -> str:
    with open("/proc/net/unix") as f:
        return f.read()


def _rank(rank: int, job: str, token: str, prefix: list[str] = (), **env: str) -> subprocess.Popen:
    """A rank of a 2-rank node started by hand (what yod's shim would start): /bin/true with
    libbobcat preloaded, telling how its node formed (BOBCAT_VERBOSE)."""
    e = _env(BOBCAT_JOB_ID=job, BOBCAT_JOB_TOKEN=token, BOBCAT_PLAN="2:2", BOBCAT_RANK=str(rank),
             BOBCAT_HEAP="128M", BOBCAT_BIND="none", BOBCAT_PAGES="small", BOBCAT_VERBOSE="1",
             BOBCAT_BOOT_TIMEOUT="30", **env)
    # LD_PRELOAD set by the last wrapper: setpriv and unshare must not become ranks themselves.
    return subprocess.Popen([*prefix, "env", f"LD_PRELOAD={LIBBOBCAT}", "/bin/true"], env=e,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd="/tmp")


def test_intruders_cannot_attach(user):
    """While local rank 0 of a job waits at its bootstrap socket: a process of the same user with
    another job's token, a process of another user with the right token, and another user who is
    root of its own user namespace, each get nothing (libbobcat refuses, exit 3); the real rank 1
    then joins and the node forms."""
    job, token = uuid.uuid4().hex[:16], uuid.uuid4().hex
    procs = []
    try:
        rank0 = _rank(0, job, token)
        procs.append(rank0)
        end = time.monotonic() + 20
        while f"@bobcat-{job}-0" not in _unix_names():
            assert rank0.poll() is None and time.monotonic() < end, "rank 0 never opened its socket"
            time.sleep(0.01)
        intruders = {"same user, other token": _rank(1, job, uuid.uuid4().hex)}
        if user is not None:
            intruders["other user"] = _rank(1, job, token, prefix=_as(user, []))
            if _unshare_ok("--user", "--map-root-user"):
                intruders["other user, root of a user namespace"] = _rank(1, job, token,
                                                                          prefix=_as(user, USERNS))
        procs += intruders.values()
        for what, p in intruders.items():
            out, err = p.communicate(timeout=40)
            assert p.returncode == 3, (what, err)
            assert ("refused this rank" in err or "belongs to another user" in err), (what, err)
            assert "node of 2 ranks formed" not in err, (what, err)
        real = _rank(1, job, token)
        procs.append(real)
        _, err1 = real.communicate(timeout=40)
        _, err0 = rank0.communicate(timeout=40)
        assert real.returncode == 0 and "node of 2 ranks formed" in err1, err1
        assert rank0.returncode == 0 and "node of 2 ranks formed" in err0, err0
        assert f"bobcat-{job}" not in _unix_names()
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


# --- a Docker-like seccomp profile ------------------------------------------------------------------

def test_nocma_denies_cross_memory_calls():
    """The sandbox itself: process_vm_readv and ptrace fail with EPERM inside, work outside."""
    probe = ("import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); "
             "b = ctypes.create_string_buffer(8); s = ctypes.create_string_buffer(b'payload'); "
             "iov = lambda p: (ctypes.c_void_p * 2)(ctypes.cast(p, ctypes.c_void_p), 7); "
             "n = libc.process_vm_readv(os.getpid(), iov(b), 1, iov(s), 1, 0); "
             "print(n, ctypes.get_errno(), libc.ptrace(3, os.getppid(), 0, 0), ctypes.get_errno())")
    plain = _run(["python3", "-c", probe]).stdout.split()
    boxed = _run([str(NOCMA), "python3", "-c", probe]).stdout.split()
    assert plain[:1] == ["7"], plain
    assert boxed == ["-1", "1", "-1", "1"], boxed


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_seccomp_keeps_single_copy(user, mpi):
    r = _run(_pingpong(mpi, [str(NOCMA)], user), BOBCAT_STATS="rank")
    _assert_single_copy(r)


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
@pytest.mark.parametrize("sandbox", ["seccomp", "userns"])
def test_shmem_in_the_sandbox(user, mpi, sandbox, root_session_dir):
    """OpenSHMEM put/get (loads and stores through the windows), validated, under the seccomp
    filter and in a user namespace, as the unprivileged user."""
    if sandbox == "userns" and not _unshare_ok("--user", "--map-root-user"):
        pytest.skip("no unprivileged user namespaces on this kernel")
    prefix = [str(NOCMA)] if sandbox == "seccomp" else USERNS
    r = _run(_as(user, [*prefix, str(OSHRUN), "-np", "2", "--heap", "128M", str(BENCH / f"shmem-bench.{mpi}"),
                        "--reps", "3", "--time", "0.05"]))
    assert r.returncode == 0, r.stderr
    assert '"valid":true' in r.stdout.replace(" ", ""), r.stdout
    assert re.search(r'"metric":\s*"put_bw"', r.stdout), r.stdout


def test_seccomp_open_mpi_default_loses_cma():
    """What the stock MPI does in the same sandbox: Open MPI's default single copy (CMA) fails on
    every large message ("Read -1, expected ..., errno = 1") and ob1 falls back to copying twice;
    the data still arrives."""
    cmd = ["mpirun.openmpi", "-np", "2", str(BENCH / "imb.openmpi"), "--test", "PingPong", "--sizes", "1048576",
           "--iters", "5", "--validate"]
    extra = dict(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1") if ROOT else {}
    r = _run([str(NOCMA), *cmd], **extra)
    assert r.returncode == 0 and '"valid": true' in r.stdout, r.stderr
    assert re.search(r"Read -1, expected 1048576, errno = 1", r.stderr), r.stderr[-2000:]


# --- a 64 MB /dev/shm -------------------------------------------------------------------------------

def _small_shm(inner: list[str]) -> list[str]:
    """inner in a mount namespace whose /dev/shm is a private 64 MB tmpfs (as root a mount namespace
    alone; otherwise inside a user namespace, where the user may mount a tmpfs)."""
    ns = ["unshare", "--mount", "--propagation", "private"] if ROOT else [*USERNS, "--mount"]
    script = 'mount -t tmpfs -o size=64m,mode=1777 bobcat-shm64 /dev/shm && df -k /dev/shm | tail -1 && exec "$@"'
    return [*ns, "sh", "-c", script, "sh", *inner]


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_8_ranks_of_1g_heaps_with_a_64m_dev_shm(mpi):
    """The heaps are memfds, not /dev/shm files: 8 GiB of heap beside a 64 MB /dev/shm. (The heap
    knob used: --heap 1G per rank; the job is oversubscribed on this host's cores.)"""
    if not ROOT and not _unshare_ok("--user", "--map-root-user", "--mount"):
        pytest.skip("no unprivileged user namespaces on this kernel: cannot mount a private /dev/shm")
    r = _run(_small_shm([str(YOD), "-v", "--oversubscribe", "-VN8", "-np", "8", "--heap", "1G",
                         str(BENCH / f"imb.{mpi}"), "--test", "Allreduce", "--sizes", "1048576", "--iters", "10",
                         "--validate"]), timeout=110)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n", 1)[0].split()[1] == "65536", r.stdout  # df: 64 MiB in 1K blocks
    assert '"valid": true' in r.stdout, r.stdout
    assert "node 0: 8 ranks, heap 1 GiB per rank" in r.stderr, r.stderr


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_stock_mpis_with_a_64m_dev_shm(mpi, tmp_path):
    """The stock MPIs at 8 ranks in the same mount namespace (what they put in /dev/shm is small and
    sparse at this size: both run). Not as root, the namespace is a user namespace, where bare Open
    MPI needs a session directory of its own (what yod does for it)."""
    cmd = (["mpirun.openmpi", "--oversubscribe", "-np", "8"] if mpi == "openmpi" else ["mpiexec.mpich", "-n", "8"])
    extra = dict(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                 OMPI_MCA_orte_tmpdir_base=str(tmp_path))
    r = _run(_small_shm([*cmd, str(BENCH / f"imb.{mpi}"), "--test", "Allreduce", "--sizes", "1048576",
                         "--iters", "5", "--validate"]), **extra)
    assert r.returncode == 0 and '"valid": true' in r.stdout, r.stderr[-2000:]


# --- no hugetlb pool, no shmem THP, no locked memory ------------------------------------------------

def _pool_free() -> int:
    with open("/proc/meminfo") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("HugePages_Free:"))


def _shmem_thp() -> str:
    with open("/sys/kernel/mm/transparent_hugepage/shmem_enabled") as f:
        return f.read().split("[", 1)[1].split("]", 1)[0]


def test_heap_without_locked_memory_on_small_pages(user):
    """ulimit -l 0: the heap is a memfd populated with MADV_POPULATE_WRITE, never mlocked; with no
    2 MiB pages to be had it comes up on 4 KiB pages and yod says why."""
    r = _run(["prlimit", "--memlock=0:0", *_pingpong("mpich", [], user)], BOBCAT_STATS="rank")
    _assert_single_copy(r)
    if _pool_free() == 0 and _shmem_thp() in ("never", "deny"):
        assert "heap on 4 KiB pages: no hugetlb pages reserved, shmem THP disabled" in r.stderr, r.stderr


@pytest.mark.parametrize("pages,knob", [("huge", "/proc/sys/vm/nr_hugepages"),
                                        ("thp", "/sys/kernel/mm/transparent_hugepage/shmem_enabled")])
def test_forced_page_kind_that_cannot_be_had_names_the_knob(user, pages, knob):
    if pages == "huge" and _pool_free() > 0 or pages == "thp" and _shmem_thp() not in ("never", "deny"):
        pytest.skip(f"this host can give {pages} pages now: nothing to refuse")
    r = _run(["prlimit", "--memlock=0:0", *_as(user, [str(YOD), "--pages", pages, "-VN2", "-np", "2", "--heap",
                                                       "128M", "/bin/true"])])
    assert r.returncode == 3, r.stderr
    assert f"--pages={pages} cannot be honoured" in r.stderr and knob in r.stderr, r.stderr


# --- ranks in different network namespaces ----------------------------------------------------------

def _netns_per_rank() -> list[str]:
    """A wrapper that puts each rank in a network namespace of its own, then preloads libbobcat (yod
    runs with --no-preload: the wrapper itself must not become a rank)."""
    ns = ["unshare", "--net"] if ROOT else [*USERNS, "--net"]
    return [*ns, "env", f"LD_PRELOAD={LIBBOBCAT}", "/bin/true"]


def test_ranks_in_different_network_namespaces(tmp_path):
    if not (ROOT or _unshare_ok("--user", "--map-root-user", "--net")):
        pytest.skip("cannot make network namespaces here (not root, no unprivileged user namespaces)")
    node = tmp_path / "node"
    # Abstract sockets are per network namespace: the ranks never meet, and both say what to do.
    r = _run([str(YOD), "--no-preload", "-VN2", "-np", "2", "--heap", "128M", *_netns_per_rank()],
             BOBCAT_BOOT_TIMEOUT="2")
    assert r.returncode == 3, r.stderr
    assert "different network namespaces" in r.stderr and "--boot-dir" in r.stderr, r.stderr
    # A directory whose socket names would not fit sun_path is refused before launch.
    deep = tmp_path / ("d" * 64)
    deep.mkdir()
    r = _run([str(YOD), "--boot-dir", str(deep), "-VN2", "-np", "2", "--heap", "128M", "/bin/true"])
    assert r.returncode == 2 and "characters" in r.stderr, r.stderr
    # Through a socket file in a directory they share, the node forms; the file is gone after.
    d = Path(tempfile.mkdtemp(prefix="bobcat-boot-", dir="/tmp"))
    try:
        r = _run([str(YOD), "--no-preload", "--boot-dir", str(d), "--node-file", str(node), "-VN2", "-np", "2",
                  "--heap", "128M", *_netns_per_rank()])
        assert r.returncode == 0, r.stderr
        assert "ranks=2" in node.read_text(), node.read_text()
        assert list(d.iterdir()) == []
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_kill_9_during_a_file_bootstrap_leaves_nothing(tmp_path):
    """Local rank 0 killed with SIGKILL while it waits at its socket file (rank 1 held back by a
    fifo), in the seccomp sandbox: yod ends the job, removes the stale file and leaves no process;
    the next job bootstraps in the same directory."""
    fifo = tmp_path / "hold"
    os.mkfifo(fifo)
    d = Path(tempfile.mkdtemp(prefix="bobcat-boot-", dir="/tmp"))
    wrapper = ['sh', '-c', f'[ "$PMI_RANK" = 1 ] && read x < {fifo}; exec env LD_PRELOAD={LIBBOBCAT} /bin/true']
    cmd = [str(NOCMA), str(YOD), "-v", "--no-preload", "--mpi", "mpich", "--boot-dir", str(d), "-VN2", "-np", "2",
           "--heap", "128M", *wrapper]
    job = subprocess.Popen(cmd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           cwd="/tmp")
    try:
        end = time.monotonic() + 30
        while not list(d.iterdir()):
            assert job.poll() is None and time.monotonic() < end, "rank 0 never made its socket file"
            time.sleep(0.01)
        sock = next(d.iterdir())
        job_id = sock.name.split("-")[1]
        holder = [int(p) for p in os.listdir("/proc") if p.isdigit() and _holds(int(p), sock)]
        assert len(holder) == 1, holder
        os.kill(holder[0], 9)
        _, err = job.communicate(timeout=30)
        assert job.returncode == 1, err
        assert "signal 9" in err, err
        assert list(d.iterdir()) == [], "the killed rank's socket file was left behind"
        assert not [p for p in os.listdir("/proc") if p.isdigit() and _env_has(int(p), f"BOBCAT_JOB_ID={job_id}")]
        r = _run([str(YOD), "--no-preload", "--mpi", "mpich", "--boot-dir", str(d), "-VN2", "-np", "2",
                  "--heap", "128M", "env", f"LD_PRELOAD={LIBBOBCAT}", "/bin/true"])
        assert r.returncode == 0 and list(d.iterdir()) == [], r.stderr
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
        shutil.rmtree(d, ignore_errors=True)


def _holds(pid: int, sock: Path) -> bool:
    """Whether pid has a socket bound at path `sock` open (by inode, from /proc/net/unix)."""
    try:
        inode = next(l.split()[6] for l in _unix_names().splitlines()[1:] if l.split()[-1] == str(sock))
        return any(os.readlink(f"/proc/{pid}/fd/{fd}") == f"socket:[{inode}]" for fd in os.listdir(f"/proc/{pid}/fd"))
    except (OSError, StopIteration, IndexError):
        return False


def _env_has(pid: int, entry: str) -> bool:
    try:
        return entry.encode() in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False


def test_shmem_ranks_in_different_network_namespaces():
    """An OpenSHMEM program on MPICH, one network namespace per PE, through --boot-dir: the heap's
    and the static data's bootstraps both go through socket files, removed after. (Open MPI cannot
    start ranks in network namespaces of their own at all, bare or not: its PMIx client reaches the
    local daemon over TCP and finds no interface — docs/containers.md.)"""
    if not (ROOT or _unshare_ok("--user", "--map-root-user", "--net")):
        pytest.skip("cannot make network namespaces here (not root, no unprivileged user namespaces)")
    ns = ["unshare", "--net"] if ROOT else [*USERNS, "--net"]
    d = Path(tempfile.mkdtemp(prefix="bobcat-boot-", dir="/tmp"))
    try:
        r = _run([str(YOD), "--no-preload", "--mpi", "mpich", "--boot-dir", str(d), "-VN2", "-np", "2", "--heap",
                  "128M", *ns, "env", f"LD_PRELOAD={LIBBOBCAT}", str(BENCH / "shmem-bench.mpich"), "--reps", "3",
                  "--time", "0.05"])
        assert r.returncode == 0, r.stderr
        assert '"valid":true' in r.stdout.replace(" ", ""), r.stdout
        assert list(d.iterdir()) == []
    finally:
        shutil.rmtree(d, ignore_errors=True)
