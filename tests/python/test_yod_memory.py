"""The default heap honours the job's own limits (issue 27, "Memory"): the cgroup's memory.max and
memory.high (v2) or memory.limit_in_bytes (v1), Slurm's SLURM_MEM_PER_NODE and `ulimit -v`, as well
as MemAvailable; yod's plan says which bound it used, and an explicit heap that does not fit them
is refused before launch (exit 2) rather than populated into the OOM killer."""
import os
import re
import subprocess
from pathlib import Path

import pytest

from bobcat import paths
from bobcat.launcher.plan import (AS_RESERVE, as_heap_cap, cgroup_room, heap_per_rank, memory_bound,
                                  parse_args)

YOD = paths.home() / "bin" / "yod"
G, M = 1 << 30, 1 << 20


def _tree(root: Path, cgroup: str, files: dict[str, str]) -> None:
    (root / "proc" / "self").mkdir(parents=True, exist_ok=True)
    (root / "proc" / "self" / "cgroup").write_text(cgroup)
    for rel, text in files.items():
        p = root / "sys" / "fs" / "cgroup" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def test_cgroup_v2_least_room_over_the_ancestors(tmp_path):
    _tree(tmp_path, "0::/job/step\n", {
        "memory.current": "9999999999",                      # the root has no limit files
        "job/memory.max": str(2 * G), "job/memory.high": "max", "job/memory.current": str(512 * M),
        "job/step/memory.max": "max", "job/step/memory.high": str(4 * G), "job/step/memory.current": str(100 * M),
    })
    room, what = cgroup_room(str(tmp_path))
    assert room == 2 * G - 512 * M
    assert "memory.max" in what and "/job" in what and "/job/step" not in what
    # memory.high below max is the tighter bound
    (tmp_path / "sys/fs/cgroup/job/step/memory.high").write_text(str(1 * G))
    room, what = cgroup_room(str(tmp_path))
    assert room == 1 * G - 100 * M and "memory.high" in what and "/job/step" in what


def test_cgroup_v2_in_the_hybrid_layout(tmp_path):
    _tree(tmp_path, "1:cpu:/\n0::/job\n", {
        "unified/cgroup.controllers": "memory pids", "unified/job/memory.max": str(G),
        "unified/job/memory.current": str(G // 4), "cpu/cpu.shares": "1024"})
    room, what = cgroup_room(str(tmp_path))
    assert room == G - G // 4 and "memory.max" in what


def test_cgroup_v1_memory_controller(tmp_path):
    _tree(tmp_path, "4:memory:/slurm/uid_0/job_7\n1:cpu:/\n0::/\n", {
        "memory/slurm/uid_0/job_7/memory.limit_in_bytes": str(3 * G),
        "memory/slurm/uid_0/job_7/memory.usage_in_bytes": str(G),
        "memory/slurm/memory.limit_in_bytes": "9223372036854771712",   # v1's "no limit"
        "memory/memory.limit_in_bytes": "9223372036854771712",
    })
    room, what = cgroup_room(str(tmp_path))
    assert room == 2 * G and "memory.limit_in_bytes" in what and "job_7" in what


def test_no_limit_no_cgroup(tmp_path):
    _tree(tmp_path, "0::/\n", {"memory.current": "1"})
    assert cgroup_room(str(tmp_path)) is None
    assert cgroup_room(str(tmp_path / "nowhere")) is None


def test_memory_bound_takes_the_least(tmp_path, monkeypatch):
    monkeypatch.delenv("SLURM_MEM_PER_NODE", raising=False)
    monkeypatch.delenv("SLURM_MEM_PER_CPU", raising=False)
    _tree(tmp_path, "0::/job\n", {"job/memory.max": str(4 * G), "job/memory.current": "0"})
    room, what, _ = memory_bound(16 * G, str(tmp_path))
    assert room == 4 * G and "cgroup's memory.max" in what
    assert memory_bound(2 * G, str(tmp_path))[:2] == (2 * G, "MemAvailable")
    monkeypatch.setenv("SLURM_MEM_PER_NODE", "1024")
    room, what, _ = memory_bound(16 * G, str(tmp_path))
    assert room == G and "SLURM_MEM_PER_NODE" in what
    monkeypatch.delenv("SLURM_MEM_PER_NODE")
    monkeypatch.setenv("SLURM_MEM_PER_CPU", "300")  # --mem-per-cpu=300M on 2 CPUs of this node
    monkeypatch.setenv("SLURM_CPUS_ON_NODE", "2")
    room, what, _ = memory_bound(16 * G, str(tmp_path))
    assert room == 600 * M and "SLURM_MEM_PER_CPU" in what
    monkeypatch.setenv("SLURM_CPUS_ON_NODE", "")  # unknown CPU count: not a bound
    assert memory_bound(16 * G, str(tmp_path))[0] == 4 * G


def test_default_heap_under_the_bounds():
    o = parse_args(["-VN4", "-np", "4", "/bin/true"])
    assert heap_per_rank(o, 4, 4, 2 * G) == 256 * M                # half of 2 GiB over 4 ranks
    cap = as_heap_cap(4 * G, 4)                                    # own heap + 4 windows in 3 GiB
    assert cap == (4 * G - AS_RESERVE) // 5
    assert heap_per_rank(o, 4, 4, 64 * G, cap) == cap & ~(2 * M - 1)
    assert heap_per_rank(parse_args(["--heap", "1G", "-np", "1", "/bin/true"]), 1, 1, 64 * G, cap) == G


def _yod(args, prefix=(), **env):
    e = {k: v for k, v in os.environ.items() if not k.startswith(("BOBCAT_", "SLURM_"))}
    e.update(BOBCAT_HOME=str(paths.home()), **env)
    return subprocess.run([*prefix, str(YOD), *args], env=e, capture_output=True, text=True, timeout=60)


@pytest.mark.skipif(not YOD.exists(), reason="yod is not built (make build)")
def test_ulimit_v_bounds_the_default_heap_and_refuses_one_that_cannot_map():
    r = _yod(["-v", "-VN2", "-np", "2", "/bin/true"], prefix=["prlimit", f"--as={3 * G}"])
    assert r.returncode == 0, r.stderr
    heap = int(re.search(r"heap (\d+) MiB per rank", r.stderr)[1])
    assert heap * M * 3 <= 3 * G - AS_RESERVE and heap >= 128, r.stderr
    assert "under ulimit -v" in r.stderr, r.stderr
    r = _yod(["-VN2", "-np", "2", "--heap", "1G", "/bin/true"], prefix=["prlimit", f"--as={2 * G}"])
    assert r.returncode == 2 and "ulimit -v" in r.stderr, r.stderr


def _memory_cgroup() -> Path | None:
    """A new child of this process's memory cgroup (v1's controller, or v2 with memory enabled
    for children), or None when there is none we may make."""
    if os.geteuid() != 0:
        return None
    lines = Path("/proc/self/cgroup").read_text().splitlines()
    v1 = next((l.split(":", 2)[2] for l in lines if "memory" in l.split(":")[1].split(",")), None)
    if v1 is not None:
        parent = Path("/sys/fs/cgroup/memory" + v1)
    else:
        v2 = next((l.split(":", 2)[2] for l in lines if l.startswith("0::")), None)
        parent = Path("/sys/fs/cgroup" + (v2 or "/"))
        try:
            if "memory" not in (parent / "cgroup.subtree_control").read_text().split():
                return None
        except OSError:
            return None
    d = parent / f"bobcat-test-{os.getpid()}"
    try:
        d.mkdir()
    except OSError:
        return None
    return d


@pytest.mark.skipif(not YOD.exists(), reason="yod is not built (make build)")
def test_cgroup_limit_bounds_the_default_heap():
    d = _memory_cgroup()
    if d is None:
        pytest.skip("no memory cgroup this test may make (needs root and a memory controller)")
    try:
        limit = "memory.limit_in_bytes" if (d / "memory.limit_in_bytes").exists() else "memory.max"
        (d / limit).write_text(str(G))
        enter = ["sh", "-c", f'echo $$ > {d}/cgroup.procs && exec "$@"', "sh"]
        r = _yod(["-v", "--dry-run", "-VN2", "-np", "2", "/bin/true"], prefix=enter)
        assert r.returncode == 0, r.stderr
        assert f"half of the cgroup's {limit} (1 GiB" in r.stdout, r.stdout
        heap = int(re.search(r"heap (\d+) MiB per rank", r.stdout)[1])
        assert 128 <= heap <= 256, r.stdout
        r = _yod(["-VN2", "-np", "2", "/bin/true"], prefix=enter)       # runs in its limit
        assert r.returncode == 0, r.stderr
        r = _yod(["-VN2", "-np", "2", "--heap", "1G", "/bin/true"], prefix=enter)
        assert r.returncode == 2 and f"cgroup's {limit}" in r.stderr, r.stderr
    finally:
        d.rmdir()   # every process that entered it has exited


@pytest.mark.skipif(not YOD.exists(), reason="yod is not built (make build)")
def test_a_rank_the_oom_killer_killed_is_named_as_such():
    """A rank that outgrows the job's memory cgroup is killed by the kernel (SIGKILL); yod says it
    was the OOM killer, from the kernel's record (/proc/vmstat's oom_kill, /dev/kmsg), and names
    the knobs. The cgroup is removable afterwards: nothing of the job is left in it."""
    d = _memory_cgroup()
    if d is None:
        pytest.skip("no memory cgroup this test may make (needs root and a memory controller)")
    try:
        limit = "memory.limit_in_bytes" if (d / "memory.limit_in_bytes").exists() else "memory.max"
        (d / limit).write_text(str(256 * M))
        enter = ["sh", "-c", f'echo $$ > {d}/cgroup.procs && exec "$@"', "sh"]
        # --no-preload: the program's memory is its own, outside any heap yod sized to the limit
        r = _yod(["--no-preload", "-np", "1", "python3", "-c", "x = b'\\1' * (600 << 20)"], prefix=enter)
        assert r.returncode == 1, r.stderr
        assert re.search(r"rank 0 \(python3\) was killed by signal 9 \(SIGKILL\)( \(probably\))? by the kernel's "
                         r"OOM killer", r.stderr), r.stderr
        assert "--heap" in r.stderr, r.stderr
    finally:
        d.rmdir()
