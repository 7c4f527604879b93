"""The external conformance harness (bobcat.external.harness and .pysuites, `make test-external`).

The full run (mpi4py's ~1,900 tests, bare and under yod, both MPIs) takes 10-40 minutes here, so it
is its own make target. What runs in the normal suite:

* how the harness steps past a test that crashes or hangs a rank, with the real launchers and yod,
  on a small test module written here next to mpi4py's own runner;
* mpi4py's point-to-point and collective buffer tests under `yod -VN2 -np 2` on both MPIs, against
  the bare baseline: no test may fail only under yod.

Both need mpi4py built against the MPIs, which `make test-external` leaves in build/external (it
downloads the sdist with pip). Without that build the tests skip and say so; with
BOBCAT_EXTERNAL_FETCH=1 they download and build it themselves (~2 min of pip and two compilations on
a quiet node).
"""
from __future__ import annotations

import os
import shutil
import textwrap

import pytest

from bobcat.external import harness, pysuites

MPIS = ["openmpi", "mpich"]


def _built(mpi: str):
    work = harness.default_work()
    src = os.path.join(work, f"mpi4py-{harness.MPI4PY_VERSION}-{mpi}")
    if not os.path.isfile(os.path.join(src, ".bobcat-built")) and \
            os.environ.get("BOBCAT_EXTERNAL_FETCH") != "1":
        pytest.skip(f"mpi4py is not built against {mpi} in {work}: run `make test-external` once "
                    "(downloads mpi4py with pip) or set BOBCAT_EXTERNAL_FETCH=1")
    try:
        return work, harness.build(work, mpi, harness.fetch(work))
    except harness.Unavailable as e:
        pytest.skip(f"mpi4py unavailable: {e}")


FAKE = textwrap.dedent('''
    import os, signal, time, unittest
    from mpi4py import MPI

    class TestFake(unittest.TestCase):
        def test_a_ok(self):
            MPI.COMM_WORLD.Barrier()
        def test_b_fails(self):
            self.assertEqual(MPI.COMM_WORLD.allreduce(1), -1)
        def test_c_crashes(self):
            if MPI.COMM_WORLD.Get_rank() == 1:
                os.kill(os.getpid(), signal.SIGSEGV)
            MPI.COMM_WORLD.Barrier()
        def test_d_hangs(self):
            if MPI.COMM_WORLD.Get_rank() == 0:
                time.sleep(600)
        def test_e_ok(self):
            self.assertEqual(MPI.COMM_WORLD.allreduce(1), MPI.COMM_WORLD.Get_size())
''')


@pytest.mark.parametrize("mpi,cfg", [("openmpi", "yod2"), ("mpich", "yod2"), ("mpich", "bare2")])
def test_steps_past_crash_and_hang(tmp_path, mpi, cfg):
    work, (testdir, libdir) = _built(mpi)
    fake = tmp_path / "test"
    fake.mkdir()
    for f in ("runtests.py", "mpiunittest.py"):
        shutil.copy(os.path.join(testdir, f), fake / f)
    (fake / "test_fake.py").write_text(FAKE)
    run = harness.run_suite(str(tmp_path), mpi, cfg, str(fake), libdir, [], test_timeout=10,
                             job_timeout=240)
    got = {tid.rsplit(".", 1)[1]: r["outcome"] for tid, r in run["results"].items()}
    assert got == {"test_a_ok": "ok", "test_b_fails": "fail", "test_c_crashes": "crash",
                   "test_d_hangs": "hang", "test_e_ok": "ok"}, run["jobs"]
    assert len(run["jobs"]) == 3  # restarted after the crash and after the hang
    fail = run["results"]["test_fake.TestFake.test_b_fails"]
    assert "AssertionError" in fail["detail"]
    if cfg == "yod2":
        assert all(p.startswith("libbobcat") for j in run["jobs"] for p in j["preload"])


@pytest.mark.parametrize("mpi", MPIS)
def test_mpi4py_buffer_p2p_and_collectives_under_yod(tmp_path, mpi):
    _built(mpi)
    rc = pysuites.main(["--mpi", mpi, "--configs", "yod2", "--include", "^test_p2p_buf$",
                        "--include", "^test_cco_buf$", "--json", str(tmp_path / "r.json")])
    assert rc == 0, (tmp_path / "r.json").read_text()[:20000]


def test_compare_subtracts_baseline_failures_and_blames_with_control():
    def run(name, **outcomes):
        return {"name": name, "results": {t: {"outcome": o} for t, o in outcomes.items()}}
    base = run("bare", t_ok="ok", t_both="fail", t_fixed="error", t_skip="skip", t_p2p="ok")
    yod = run("yod", t_ok="crash", t_both="fail", t_fixed="ok", t_skip="skip", t_p2p="fail")
    off = run("off", t_ok="crash", t_both="fail", t_fixed="ok", t_skip="skip", t_p2p="ok")
    c = harness.compare(yod, base, off)
    regs = {e["test"]: e for e in c["regressions"]}
    assert set(regs) == {"t_ok", "t_p2p"}
    assert regs["t_ok"]["blame"].startswith("libbobcat without")
    assert regs["t_p2p"]["blame"] == "MPI layer"
    assert c["baseline_failures_subtracted"] == ["t_both"]
    assert c["pass_only_under_yod"] == ["t_fixed"]
    assert harness.area("test_cco_buf.TestCCOBufWorld.testAllreduce") == "collectives"
    assert harness.area("test_p2p_obj.TestP2PObjSelf.testProbe") == "p2p"
