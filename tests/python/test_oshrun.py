"""OpenSHMEM tooling: oshrun's translation of mpirun-style options into yod's, and oshcc's output
(the program records libbobcat-shmem-<mpi>, from which yod reads the MPI)."""
import os
import shutil
import subprocess

import pytest

from bobcat import paths
from bobcat.launcher.oshrun import OshrunError, translate
from bobcat.elf import detect_mpi, needed


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for k in list(os.environ):
        if k.startswith("BOBCAT_") and k != "BOBCAT_HOME" or k.startswith("SLURM_"):
            monkeypatch.delenv(k)


def test_np_alone_puts_every_pe_on_this_node():
    assert translate(["-np", "6", "./a.out", "x"]) == ["--oversubscribe", "-np", "6", "-VN", "6", "./a.out", "x"]


def test_mpirun_spellings_map_to_yod():
    assert translate(["-n", "4", "-N", "2", "--simulate-nodes", "prog"]) == \
        ["--oversubscribe", "-np", "4", "-VN", "2", "--simulate-nodes", "prog"]
    assert translate(["--np=4", "--map-by", "ppr:2:node", "--hostfile", "h", "prog"]) == \
        ["--oversubscribe", "-np", "4", "-VN", "2", "--hostfile", "h", "prog"]


def test_ignored_options_consume_their_values_and_program_args_stay():
    out = translate(["-np", "2", "--bind-to", "core", "--mca", "btl", "self", "-q", "prog", "-np", "9"])
    assert out == ["--oversubscribe", "-np", "2", "-VN", "2", "prog", "-np", "9"]


def test_yod_options_pass_through():
    out = translate(["-np", "8", "-VN4", "--heap", "256M", "-tlimit", "30", "prog"])
    assert out == ["--oversubscribe", "-np", "8", "-VN4", "--heap", "256M", "-tlimit", "30", "prog"]


def test_x_exports(monkeypatch):
    monkeypatch.delenv("OSHRUN_TEST_VAR", raising=False)
    translate(["-np", "1", "-x", "OSHRUN_TEST_VAR=7", "prog"])
    assert os.environ["OSHRUN_TEST_VAR"] == "7"
    monkeypatch.delenv("OSHRUN_TEST_VAR")


@pytest.mark.parametrize("argv", [["-np"], ["-np", "2"], ["--frobnicate", "prog"], ["-x", "NOT_SET_ANYWHERE_X"]])
def test_bad_command_lines(argv, monkeypatch):
    monkeypatch.delenv("NOT_SET_ANYWHERE_X", raising=False)
    with pytest.raises(OshrunError):
        translate(argv + (["prog"] if argv[0] == "-x" else []))


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_oshcc_links_the_flavour_yod_detects(tmp_path, mpi):
    oshcc = os.path.join(paths.home_dir(), "bin", "oshcc")
    if not os.access(oshcc, os.X_OK) or not shutil.which(f"mpicc.{mpi}"):
        pytest.skip("oshcc not installed (make build) or no mpicc for this MPI")
    src = tmp_path / "hello.c"
    src.write_text('#include <shmem.h>\nint main(void){shmem_init();int r=shmem_my_pe();'
                   'shmem_finalize();return r<0;}\n')
    exe = tmp_path / "hello"
    subprocess.run([oshcc, f"--mpi={mpi}", str(src), "-o", str(exe)], check=True)
    assert f"libbobcat-shmem-{mpi}.so" in needed(str(exe))
    assert detect_mpi(str(exe)) == mpi
    # yod settles the flavour from the OpenSHMEM library alone: the program runs without --mpi
    # (a SHMEM program's "MPI library" was once taken to be libbobcat-shmem itself and refused).
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    oshrun = os.path.join(paths.home_dir(), "bin", "oshrun")
    r = subprocess.run([oshrun, "-np", "2", str(exe)], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr
