"""An unmodified MPI application (Debian's hpcc, linked to Open MPI) runs under yod with libbobcat
preloaded: all of HPCC's self-checks pass and the heap lived in the SMARTMAP segment."""
import os
import re
import shutil
import subprocess

import pytest

from bobcat import parsers, paths

HPCC = shutil.which("hpcc")
YOD = paths.home() / "bin" / "yod"


@pytest.mark.skipif(HPCC is None, reason="Debian's hpcc is not installed (make test installs it)")
@pytest.mark.skipif(not YOD.exists(), reason="yod is not built (make build)")
def test_hpcc_runs_unmodified_under_yod(tmp_path):
    (tmp_path / "hpccinf.txt").write_text(parsers.hpcc_input(600, 64, 1, 2))
    env = {k: v for k, v in os.environ.items() if not k.startswith("BOBCAT_")}
    env["BOBCAT_HOME"] = str(paths.home())
    r = subprocess.run([str(YOD), "-VN2", "-np", "2", "--heap", "512M", "--verbose", HPCC],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    # yod's plan summary names the page kind the ranks got.
    assert re.search(r"pages?\W", r.stderr), r.stderr
    out = (tmp_path / "hpccoutf.txt").read_text()
    parsed = parsers.parse_hpcc(out)
    assert not parsed.problems, parsed.problems
    summary = {m.name: m.value for m in parsed.metrics}
    assert int(summary["CommWorldProcs"]) == 2
    for check in ("HPL_Tflops", "PTRANS_GBs", "MPIRandomAccess_GUPs", "MPIFFT_Gflops"):
        assert summary[check] > 0, check
    # HPCC reports every self-check as PASSED or FAILED in its log.
    assert "PASSED" in out and "FAILED" not in out
