"""bench_mpi's medians: every sample, or only those taken in one placement state."""
import pytest

from bobcat.bench import mpi as bench_mpi


def test_medians_by_placement() -> None:
    samples = {"lwk.openmpi": {"pingpong:8": [0.10, 0.30, 0.12, 0.50, 0.11]},
               "best.openmpi": {"pingpong:8": [0.20, 0.22, 0.60]}}
    states = {"lwk.openmpi": {"pingpong:8": ["core", "chip", "core", "mixed", "core"]},
              "best.openmpi": {"pingpong:8": ["chip", "chip", "chip"]}}
    every = bench_mpi.medians(samples, states)
    assert every == {"lwk.openmpi": {"pingpong:8": 0.12}, "best.openmpi": {"pingpong:8": 0.22}}
    core = bench_mpi.medians(samples, states, "core")
    # best ran no turn on "core": it has no median there, so no ratio is formed against it
    assert core == {"lwk.openmpi": {"pingpong:8": 0.11}}
    assert bench_mpi.ratios(core, ["openmpi"])["openmpi"]["pingpong:8"]["lwk_over_best_same"] is None
    chip = bench_mpi.medians(samples, states, "chip")
    assert chip["lwk.openmpi"]["pingpong:8"] == 0.30 and chip["best.openmpi"]["pingpong:8"] == 0.22


def test_imb_gets_slices_only_when_asked() -> None:
    one, = bench_mpi.imb_args({"pingpong": [0, 8]}, 100, 0.05)
    assert "--slices" not in one and one[one.index("--sizes") + 1] == "0,8"
    sliced = bench_mpi.imb_args({"pingpong": [8], "msgrate": [8]}, 100, 0.05, 4)
    assert len(sliced) == 1 and sliced[0][-2:] == ["--slices", "4"]
    assert sliced[0][sliced[0].index("--test") + 1] == "pingpong,msgrate"


def test_imb_gets_offset_only_when_asked() -> None:
    plain, = bench_mpi.imb_args({"pingpong": [4096]}, 100, 0.05, 4)
    assert "--offset" not in plain
    moved, = bench_mpi.imb_args({"pingpong": [4096]}, 100, 0.05, 4, 8)
    assert moved[-2:] == ["--offset", "8"]
    with pytest.raises(SystemExit):
        bench_mpi.run(["--offset", "4096"])


def test_copy_ceiling_at_the_pingpong_sizes_where_a_copy_decides() -> None:
    import os
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("bobcat-copyrate needs two cpus")
    assert bench_mpi.copy_ceiling([0, 8, 4096]) == {}
    cc = bench_mpi.copy_ceiling([8, 65536, 1 << 20, 64 << 20])
    assert sorted(cc) == ["1048576", "65536"]   # 8 B is a latency, 64 MiB beyond the range
    for size, c in cc.items():
        assert c["gbps"] > 0 and c["method"] in ("libc", "avx2", "prefetch", "stream", "movsb")
        assert c["us"] == pytest.approx(int(size) / c["gbps"] / 1e3)


# --- issue 29: every MPI of mpis.conf, the best of all of them -------------------------------------

from bobcat.mpis import Mpi  # noqa: E402

P = "/opt/peers"
TABLE = {
    "openmpi": Mpi("openmpi", "openmpi", "4.1.4", "system", "mpirun.openmpi", "/usr"),
    "mpich": Mpi("mpich", "mpich", "4.0.2", "system", "mpiexec.mpich", "/usr"),
    "impi": Mpi("impi", "mpich", "2021.19.0", f"{P}/impi/lib/libmpi.so.12", f"{P}/impi/bin/mpiexec.hydra",
                f"{P}/impi"),
    "mpich5": Mpi("mpich5", "mpich", "5.0.2", f"{P}/mpich5/lib/libmpi.so.12", f"{P}/mpich5/bin/mpiexec.hydra",
                  f"{P}/mpich5"),
    "openmpi5": Mpi("openmpi5", "openmpi", "5.0.11", f"{P}/openmpi5/lib/libmpi.so.40", f"{P}/openmpi5/bin/mpirun",
                    f"{P}/openmpi5"),
    "abi": Mpi("abi", "abi", "5.0", f"{P}/mpich5/lib/libmpi_abi.so.1", "-", f"{P}/mpich5"),
}


def test_variants_launch_each_mpi_with_its_own_launcher(tmp_path, monkeypatch) -> None:
    # Intel's hydra is told by an impi_info beside it: give the fake impi prefix one
    table = dict(TABLE)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "impi_info").write_text("")
    table["impi"] = Mpi("impi", "mpich", "2021.19.0", str(tmp_path / "lib/libmpi.so.12"),
                        str(tmp_path / "bin/mpiexec.hydra"), str(tmp_path))
    vs = bench_mpi.variants(list(table), "512M", False, False, table)
    assert vs["default.openmpi5"] == ([f"{P}/openmpi5/bin/mpirun", "-np", "2", "--bind-to", "core"], {})
    assert vs["default.mpich5"][0] == [f"{P}/mpich5/bin/mpiexec.hydra", "-n", "2", "-bind-to", "core"]
    assert vs["default.impi"] == ([str(tmp_path / "bin/mpiexec.hydra"), "-n", "2", "-bind-to", "core"],
                                  {"I_MPI_ROOT": str(tmp_path)})
    # the standard ABI's programs run on the MPI that owns its libmpi_abi.so.1, with that one's launcher
    assert vs["default.abi"][0] == [f"{P}/mpich5/bin/mpiexec.hydra", "-n", "2", "-bind-to", "core"]
    assert vs["default.openmpi"][0][0] == "mpirun.openmpi"
    # a best variant only where BEST has settings; it is the default launcher plus them
    for fl in table:
        assert (f"best.{fl}" in vs) == (fl in bench_mpi.BEST)
    args, env = bench_mpi.BEST["mpich5"]
    assert vs["best.mpich5"] == (vs["default.mpich5"][0] + args, env)
    assert vs["lwk.impi"][0][1:4] == ["-VN2", "-np", "2"] and "lwk-off.impi" not in vs
    assert bench_mpi.abi_native(table) == "mpich5"


def test_ratios_against_the_best_of_all_mpis() -> None:
    med = {"lwk.openmpi5": {"pingpong:8": 0.15, "msgrate:8": 2e7, "pingpong:1048576": 30.0,
                            "shmem_put:8": 12.0},
           "default.openmpi5": {"pingpong:8": 0.25, "msgrate:8": 1.3e7, "pingpong:1048576": 48.0},
           "default.impi": {"pingpong:8": 0.20, "msgrate:8": 9e6, "pingpong:1048576": 70.0,
                            "rma_put:8": 600.0},
           "best.mpich5": {"pingpong:8": 0.60, "msgrate:8": 3.6e6, "rma_put:8": 45.0}}
    r = bench_mpi.ratios(med, ["openmpi5", "impi", "mpich5"], {"1048576": 25.0})["openmpi5"]
    assert r["pingpong:8"]["best_same_mpi_variant"] == "default.openmpi5"
    assert r["pingpong:8"]["best_any_variant"] == "default.impi"
    assert r["pingpong:8"]["lwk_over_best_any"] == pytest.approx(0.75)
    assert r["pingpong:8"]["lwk_over_best_same"] == pytest.approx(0.6)
    # a rate: the best is the highest, and the ratio is inverted (< 1: lwk faster)
    assert r["msgrate:8"]["best_any_variant"] == "default.openmpi5"
    assert r["msgrate:8"]["lwk_over_best_any"] == pytest.approx(1.3e7 / 2e7)
    # against the one-core copy ceiling, pingpong only
    assert r["pingpong:1048576"]["lwk_over_ceiling"] == pytest.approx(1.2)
    assert r["pingpong:8"]["lwk_over_ceiling"] is None
    # bobcat's SHMEM put against the peers' MPI_Put + flush, their nearest operation
    assert r["shmem_put:8"]["best_any_variant"] == "best.mpich5"
    assert r["shmem_put:8"]["lwk_over_best_any"] == pytest.approx(12 / 45)
    table = bench_mpi.best_of_all({"ratios": {"openmpi5": r}})
    assert table["pingpong:8"]["peer"] == "default.impi" 
    assert table["pingpong:8"]["lwk"]["openmpi5"] == pytest.approx(0.75)


def test_abi_cost_on_the_same_mpi() -> None:
    med = {"lwk.abi": {"pingpong:8": 0.21, "msgrate:8": 9e6}, "lwk.mpich5": {"pingpong:8": 0.20, "msgrate:8": 1e7},
           "default.abi": {"pingpong:8": 0.60}, "default.mpich5": {"pingpong:8": 0.60}}
    c = bench_mpi.abi_cost(med, "mpich5")
    assert c["pingpong:8"] == {"lwk": pytest.approx(1.05), "default": pytest.approx(1.0)}
    assert c["msgrate:8"] == {"lwk": pytest.approx(1e7 / 9e6)}


def test_ceiling_takes_the_faster_of_before_and_after() -> None:
    assert bench_mpi.ceiling_us({"65536": {"us": 2.0}}, {"65536": {"us": 1.5}, "1048576": {"us": 30.0}},
                                {"error": "x"}) == {"65536": 1.5, "1048576": 30.0}


def test_unknown_mpi_is_refused() -> None:
    with pytest.raises(SystemExit):
        bench_mpi.run(["--mpi", "lam"])



def test_a_tiny_real_run_of_a_modern_mpi_and_its_shmem(tmp_path) -> None:
    """One round, pingpong 8 B and the one-sided 8 B numbers, bobcat under yod against Open MPI 5 (or
    whichever today's MPI this build has) and Debian's Open MPI: every variant gives its numbers.
    No timing is asserted."""
    import os
    from bobcat import mpis
    from bobcat.bench.common import bench_dir
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two cpus")
    have = bench_mpi.found_mpis(mpis.table())
    modern = next((m for m in ("openmpi5", "mpich5", "impi") if m in have), None)
    if modern is None or "openmpi" not in have or not (bench_dir() / "shmem-bench.openmpi").exists():
        pytest.skip("needs a peer MPI (scripts/peers.sh install) and Debian's Open MPI")
    out = tmp_path / "r.json"
    res = bench_mpi.run(["--reps", "1", "--mpi", f"openmpi,{modern}", "--tests", "pingpong,shmem", "--sizes", "8",
                         "--slices", "1", "--no-old", "--no-off", "--json", str(out)])
    assert res["failures"] == []
    assert set(res["ratios"]) == {"openmpi", modern}
    for fl in ("openmpi", modern):
        assert res["ratios"][fl]["pingpong:8"]["lwk_over_best_any"] > 0
        assert res["ratios"][fl]["rma_put:8"]["best_any"] > 0
    assert res["ratios"]["openmpi"]["shmem_put:8"]["best_any_variant"].split(".")[0] in ("default", "best")
    assert out.exists()
