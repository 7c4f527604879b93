"""Several jobs start at once in a memory cgroup that cannot hold them all (issue 27, "Memory"):
the ranks take their heaps in steps, each checked against the room the cgroup leaves under a
node-wide lock, so every job either runs or stops with an error naming the heap, the limit and the
knob (exit 3; or exit 2 when yod already sees the room gone before launch). None is killed by the
OOM killer (the cgroup's own memory.events says so) and nothing is left in the cgroup."""
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from bobcat import paths
from test_yod_memory import _memory_cgroup

YOD = paths.home() / "bin" / "yod"
M = 1 << 20


def _oom_kills(d: Path) -> int | None:
    """The cgroup's own count of OOM kills: v2's memory.events, v1's memory.oom_control."""
    for name in ("memory.events", "memory.oom_control"):
        try:
            m = re.search(r"^oom_kill (\d+)", (d / name).read_text(), re.M)
        except OSError:
            continue
        if m:
            return int(m[1])
    return None


@pytest.mark.skipif(not YOD.exists(), reason="yod is not built (make build)")
def test_concurrent_jobs_in_a_small_cgroup_run_or_fail_clearly(tmp_path):
    d = _memory_cgroup()
    if d is None:
        pytest.skip("no memory cgroup this test may make (needs root and a memory controller)")
    procs = []
    try:
        limit = "memory.limit_in_bytes" if (d / "memory.limit_in_bytes").exists() else "memory.max"
        (d / limit).write_text(str(1024 * M))
        if (d / "memory.swap.max").exists():
            (d / "memory.swap.max").write_text("0")      # heaps cannot go to swap: the limit is hard
        enter = ["sh", "-c", f'echo $$ > {d}/cgroup.procs && exec "$@"', "sh"]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("BOBCAT_", "SLURM_"))}
        env["BOBCAT_HOME"] = str(paths.home())
        # 4 jobs x 2 ranks x 256 MiB = 2 GiB of heaps asked of a 1 GiB cgroup; each alone fits.
        # Each rank says it runs, then holds its heap until the test has seen every job run or end,
        # so the jobs' heaps are all wanted at once.
        go = tmp_path / "go"
        procs = []
        for i in range(4):
            rank = f'echo x >> {tmp_path}/ran-{i}; while [ ! -e {go} ]; do sleep 0.02; done'
            cmd = [*enter, str(YOD), "-VN2", "-np", "2", "--heap", "256M", "--pages", "small", "-tlimit", "100",
                   "/bin/sh", "-c", rank]
            procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))

        def settled(i):
            f = tmp_path / f"ran-{i}"
            return procs[i].poll() is not None or (f.exists() and len(f.read_text().split()) == 2)

        deadline = time.monotonic() + 100
        while not all(settled(i) for i in range(4)) and time.monotonic() < deadline:
            time.sleep(0.02)
        go.touch()
        outs = [(p.wait(timeout=120), p.communicate()[1]) for p in procs]
        codes = sorted(c for c, _ in outs)
        print(f"exit codes of the four jobs: {codes}")
        for code, err in outs:
            assert code in (0, 2, 3), err
            assert "killed by signal" not in err and "OOM killer:" not in err, err
            if code == 3:
                assert re.search(r"not enough memory for the 256 MiB heap: \d+ MiB of it taken when the cgroup's "
                                 rf"{limit} \(1024 MiB", err), err
                assert "BOBCAT_HEAP" in err and "--heap" in err, err
            if code == 2:
                assert f"cgroup's {limit}" in err, err
        assert codes[0] == 0, f"no job ran: {outs}"
        assert codes[-1] != 0, f"all four jobs ran in 1 GiB: the test did not stress the limit: {outs}"
        kills = _oom_kills(d)
        assert kills in (None, 0), f"the OOM killer killed {kills} processes in the job's cgroup"
        assert (d / "cgroup.procs").read_text().strip() == "", "processes left in the cgroup"
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        d.rmdir()
