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
