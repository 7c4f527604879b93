"""An unmodified MPI application (Debian's hpcc, linked to Open MPI) runs under yod with libbobcat
preloaded: all of HPCC's self-checks pass and the heap lived in the SMARTMAP segment."""
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from bobcat import paths

HPCC = shutil.which("hpcc")
YOD = paths.home() / "bin" / "yod"


def hpccinf(n: int, nb: int, p: int, q: int) -> str:
    # HPCC's input is HPL's, line by line; only N, NB and the grid change here.
    src = Path("/usr/share/doc/hpcc/examples/_hpccinf.txt").read_text().splitlines()
    out = list(src)
    out[5] = f"{n}         Ns"
    out[7] = f"{nb}           NBs"
    out[10] = f"{p}            Ps"
    out[11] = f"{q}            Qs"
    return "\n".join(out) + "\n"


@pytest.mark.skipif(HPCC is None, reason="Debian's hpcc is not installed (make test installs it)")
@pytest.mark.skipif(not YOD.exists(), reason="yod is not built (make build)")
def test_hpcc_runs_unmodified_under_yod(tmp_path):
    (tmp_path / "hpccinf.txt").write_text(hpccinf(600, 64, 1, 2))
    env = {k: v for k, v in os.environ.items() if not k.startswith("BOBCAT_")}
    env["BOBCAT_HOME"] = str(paths.home())
    r = subprocess.run([str(YOD), "-VN2", "-np", "2", "--heap", "512M", "--verbose", HPCC],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    # yod's plan summary names the page kind the ranks got.
    assert re.search(r"pages?\W", r.stderr), r.stderr
    out = (tmp_path / "hpccoutf.txt").read_text()
    assert "Begin of Summary section" in out
    summary = dict(line.split("=", 1) for line in out.split("Begin of Summary section.")[1].splitlines()
                   if "=" in line)
    assert int(summary["CommWorldProcs"]) == 2
    for check in ("HPL_Tflops", "PTRANS_GBs", "MPIRandomAccess_GUPs", "MPIFFT_Gflops"):
        assert float(summary[check]) > 0, check
    # HPCC reports every self-check as PASSED or FAILED in its log.
    assert "PASSED" in out and "FAILED" not in out
