"""tests/leftovers.py, the suite's check for daemons and launchers left running."""
import importlib.util
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "leftovers.py"
spec = importlib.util.spec_from_file_location("leftovers", SCRIPT)
leftovers = importlib.util.module_from_spec(spec)
spec.loader.exec_module(leftovers)


@pytest.fixture
def named(tmp_path):
    """Start a sleeping process under a given command name (a copy of sleep); all are ended."""
    started = []

    def start(name):
        exe = tmp_path / name
        shutil.copy(shutil.which("sleep"), exe)
        p = subprocess.Popen([str(exe), "300"])
        started.append(p)
        # The kernel names the process a moment after exec's close-on-exec pipe (which Popen
        # waits for) has closed.
        comm, deadline = Path(f"/proc/{p.pid}/comm"), time.monotonic() + 30
        while comm.read_text().strip() != name[:15]:
            assert time.monotonic() < deadline, f"{exe} never ran as {name}"
            time.sleep(0.01)
        return p
    yield start
    for p in started:
        p.kill()
        p.wait()


def test_reports_new_daemons_only_and_waits_for_them(named, tmp_path):
    # Other workloads on this machine start and stop launchers meanwhile: look at ours only.
    old = named("slurmd")                      # running before the suite: someone else's
    snap = tmp_path / "before"
    subprocess.run([sys.executable, str(SCRIPT), "snapshot", str(snap)], check=True, timeout=60)
    before = set(snap.read_text().split())
    assert any(k.startswith(f"{old.pid}:") for k in before)
    new = named("orted")
    ours = {str(old.pid), str(new.pid)}

    def mine(key):
        return key.split(":")[0] in ours
    left = leftovers.left_after(before, 0.5, mine)
    assert [v.split(":")[0] for v in left.values()] == [f"{new.pid} orted"]
    # A leftover that ends within the grace period is not one.
    subprocess.Popen(["sh", "-c", f"sleep 0.5; kill {new.pid}"])
    assert leftovers.left_after(before, 30, mine) == {}


def test_check_fails_the_suite_and_names_the_process(named, tmp_path, monkeypatch):
    snap = tmp_path / "before"
    snap.write_text("")
    monkeypatch.setenv("LEFTOVERS_MARK", "test-mark-1")
    monkeypatch.delenv("BOBCAT_SUITE_PRIVATE_SHM", raising=False)  # the mark decides, not the namespace
    p = named("hydra_pmi_proxy")
    r = subprocess.run([sys.executable, str(SCRIPT), "check", str(snap), "0.3"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    line = next(ln for ln in r.stdout.splitlines() if f" {p.pid} hydra_pmi_proxy:" in ln)
    assert line.startswith("leftover") and line.endswith("[started by this suite]"), line
    # Another workload's launcher running beside the suite (not its mark) is named, never counted.
    r = subprocess.run([sys.executable, str(SCRIPT), "check", str(snap), "0.3"], capture_output=True,
                       text=True, timeout=60, env={**os.environ, "LEFTOVERS_MARK": "another-suite"})
    line = next(ln for ln in r.stdout.splitlines() if f" {p.pid} hydra_pmi_proxy:" in ln)
    assert line.startswith("note: not the suite's") and r.returncode == 0, r.stdout


def test_in_its_own_mount_namespace_the_suite_counts_what_runs_there(named, tmp_path, monkeypatch):
    """run_all.sh's namespace: a process in this mount namespace is the suite's even without the
    mark (a test may clear the environment); the rule compares /proc/PID/ns/mnt."""
    monkeypatch.setenv("BOBCAT_SUITE_PRIVATE_SHM", "1")
    monkeypatch.setenv("LEFTOVERS_MARK", "test-mark-2")
    p = named("orted")
    assert leftovers.ours(f"{p.pid}:0")
    assert not leftovers.ours("999999999:0")  # no such process: no namespace to share


@pytest.mark.parametrize("comm, argv, seen", [
    ("mpirun.openmpi", ["mpirun.openmpi", "-np", "2", "a.out"], True),
    ("hydra_pmi_proxy", ["/usr/bin/hydra_pmi_proxy", "--control-port", "x"], True),
    ("yod", ["/opt/bobcat/bin/yod", "-np", "2", "a.out"], True),
    ("python", ["/x/.venv/bin/python", "-m", "bobcat.launcher.yod", "--verbose", "-np", "2"], True),
    ("python3", ["python3", "-S", "/opt/bobcat/bin/yod", "-np", "2"], True),
    ("python", ["python", "-m", "pytest", "tests/python"], False),
    ("bash", ["bash", "tests/run_all.sh"], False),
])
def test_recognises_the_daemons_and_launchers_tests_start(comm, argv, seen):
    assert leftovers.watched(comm, argv) is seen
