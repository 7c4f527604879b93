"""The evaluation's lwk configuration records that it runs bobcat's MPI layer (issues 9 and 10)."""
import shutil

import pytest

from bobcat import paths
from bobcat.evaluation import configs


@pytest.mark.skipif(not (paths.lib_dir() / "libbobcat-openmpi.so").exists(), reason="libbobcat not built")
@pytest.mark.skipif(shutil.which("nm") is None, reason="nm (binutils) not installed")
def test_lwk_config_detail_names_the_mpi_layer():
    cs = configs.load()
    launch = configs.build(cs, cs.get("lwk"), "openmpi", "VN2", 2, ["/bin/true"])
    assert launch.detail["mpi_layer"].startswith("libbobcat MPI layer"), launch.detail
    assert launch.detail["onnode_mpi"].startswith("libbobcat single-copy layer"), launch.detail
    # The real-MPI configurations do not claim it.
    other = configs.build(cs, cs.get("linux-shm"), "openmpi", "VN2", 2, ["/bin/true"])
    assert "mpi_layer" not in other.detail


def test_mpi_layer_without_the_library(monkeypatch, tmp_path):
    monkeypatch.setenv("BOBCAT_HOME", str(tmp_path))
    assert configs.mpi_layer("openmpi").startswith("real MPI only")
    assert configs.onnode_mpi("openmpi").startswith("real MPI")
