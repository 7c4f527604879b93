"""The benchmark programs (bench/): every one runs at 2 ranks under both MPIs with --validate and
tiny sizes, and its stdout must follow contracts.md §3 line by line; bad arguments exit 2.

The binaries are found in bobcat.paths.home()/libexec/bobcat/bench (set BOBCAT_HOME to a stage
directory while developing). Timing values are only checked for consistency, never for speed.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

from bobcat import paths

BENCH_DIR = paths.home() / "libexec" / "bobcat" / "bench"
pytestmark = pytest.mark.skipif(
    not BENCH_DIR.is_dir(), reason=f"benchmarks not installed: {BENCH_DIR} does not exist"
)

FLAVOURS = {
    "openmpi": ["mpirun.openmpi", "--oversubscribe", "-n", "2"],
    "mpich": ["mpiexec.mpich", "-n", "2"],
}
IMB_TESTS = {
    "pingpong", "pingping", "sendrecv", "exchange", "barrier", "bcast", "reduce", "allreduce",
    "allgather", "alltoall", "alltoallv", "reduce_scatter", "msgrate", "testany",
    "iallreduce", "ialltoall", "ialltoallv", "ibcast", "ibarrier",
}
TIMEOUT = 90


def clean_env(**extra: str) -> dict[str, str]:
    """The environment of a run: no BOBCAT_* knobs from the caller, Open MPI allowed as root."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BOBCAT_")}
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    env.update(extra)
    return env


def binary(name: str, flavour: str | None) -> Path:
    path = BENCH_DIR / (f"{name}.{flavour}" if flavour else name)
    if not path.exists():
        pytest.skip(f"{path} not built")
    return path


def launcher(flavour: str) -> list[str]:
    cmd = FLAVOURS[flavour]
    if shutil.which(cmd[0]) is None:
        pytest.skip(f"{cmd[0]} not installed")
    return cmd


def run_json(cmd: list[str], env: dict[str, str] | None = None) -> list[dict]:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT,
                          env=env or clean_env())
    assert proc.returncode == 0, f"{cmd} exited {proc.returncode}\n{proc.stderr}"
    lines = proc.stdout.splitlines()
    assert lines, f"{cmd} printed nothing\n{proc.stderr}"
    return [json.loads(line) for line in lines]


def check_schema(records: list[dict], ranks: int | None) -> list[dict]:
    """Asserts contracts §3 on every line; returns the metric lines."""
    *metrics, done = records
    assert done.get("done") is True, f"last line is not the done line: {done}"
    assert done["valid"] is True
    assert isinstance(done["bench"], str) and done["bench"]
    assert isinstance(done["wall_s"], (int, float)) and done["wall_s"] >= 0
    assert metrics, "no metric lines"
    for rec in metrics:
        assert "done" not in rec, f"done line before the end: {rec}"
        for key in ("bench", "metric", "value", "unit", "better", "params"):
            assert key in rec, f"missing {key!r}: {rec}"
        assert isinstance(rec["bench"], str) and rec["bench"]
        assert isinstance(rec["metric"], str) and rec["metric"]
        assert isinstance(rec["value"], (int, float)) and not isinstance(rec["value"], bool)
        assert math.isfinite(rec["value"])
        assert isinstance(rec["unit"], str) and rec["unit"]
        assert rec["better"] in ("higher", "lower")
        assert isinstance(rec["params"], dict)
        if ranks is not None:
            assert rec["params"]["ranks"] == ranks
        if "bytes" in rec["params"]:
            assert isinstance(rec["params"]["bytes"], int) and rec["params"]["bytes"] >= 0
    return metrics


def by_metric(metrics: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = defaultdict(list)
    for rec in metrics:
        out[rec["metric"]].append(rec)
    return out


def check_tminmax(metrics: list[dict]) -> None:
    """t_min <= t_avg <= t_max for every (bench, size); rates positive."""
    groups: dict[tuple, dict[str, float]] = defaultdict(dict)
    for rec in metrics:
        if rec["metric"] in ("t_min", "t_avg", "t_max"):
            groups[(rec["bench"], rec["params"].get("bytes"))][rec["metric"]] = rec["value"]
        if rec["metric"] == "msgrate" or (rec["metric"] == "bandwidth" and rec["params"]["bytes"]):
            assert rec["value"] > 0, rec
        if rec["metric"] == "bandwidth" and not rec["params"]["bytes"]:
            assert rec["value"] == 0, rec  # IMB reports 0 MB/s for empty messages
    assert groups
    for key, g in groups.items():
        assert set(g) == {"t_min", "t_avg", "t_max"}, key
        assert 0 <= g["t_min"] <= g["t_avg"] * (1 + 1e-9) <= g["t_max"] * (1 + 1e-9), (key, g)


def run_mpi(flavour: str, name: str, *args: str, env: dict[str, str] | None = None) -> list[dict]:
    cmd = launcher(flavour) + [str(binary(name, flavour)), "--validate", *args]
    return check_schema(run_json(cmd, env), ranks=2)


# ------------------------------------------------------------------------------ imb


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_imb_all_tests(flavour: str) -> None:
    metrics = run_mpi(flavour, "imb", "--test", "all", "--max-size", "1K", "--time", "0.005")
    assert {m["bench"] for m in metrics} == IMB_TESTS
    check_tminmax(metrics)
    sizes = {m["params"]["bytes"] for m in metrics if m["bench"] == "alltoall"}
    assert sizes == {0} | {1 << k for k in range(11)}
    # Bandwidth exactly where IMB defines it.
    with_bw = {m["bench"] for m in metrics if m["metric"] == "bandwidth"}
    assert with_bw == {"pingpong", "pingping", "sendrecv", "exchange"}
    for unsized in ("barrier", "testany", "ibarrier"):
        rows = [m for m in metrics if m["bench"] == unsized]
        assert rows and all("bytes" not in m["params"] for m in rows), unsized
    for m in metrics:
        if m["metric"].startswith("t_"):
            assert m["unit"] == "us" and m["better"] == "lower"
        if m["metric"] == "bandwidth":
            assert m["unit"] == "MB/s" and m["better"] == "higher"


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_imb_odd_sizes_fixed_iterations(flavour: str) -> None:
    metrics = run_mpi(flavour, "imb", "--test", "PingPong,Reduce_scatter,msgrate",
                      "--sizes", "0,3,4K,65K", "--iters", "7", "--time", "0", "--window", "4")
    check_tminmax(metrics)
    for m in metrics:
        assert m["params"]["bytes"] in (0, 3, 4096, 65 * 1024)
        assert m["params"]["iters"] == 7
    rates = [m for m in metrics if m["metric"] == "msgrate"]
    assert len(rates) == 4 and all(m["unit"] == "msg/s" for m in rates)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_imb_slices_carry_their_placement(flavour: str) -> None:
    """--slices: every size timed in N loops, each line with its slice number and the placement the
    in-job probe between ranks 0 and 1 measured around it; the probe's page leaves nothing behind."""
    before = set(os.listdir("/dev/shm"))
    metrics = run_mpi(flavour, "imb", "--test", "PingPong,msgrate,Barrier", "--sizes", "8,4K",
                      "--iters", "50", "--time", "0", "--slices", "3")
    check_tminmax([m for m in metrics if m["params"]["slice"] == 0])
    per_key: dict[tuple, list[int]] = defaultdict(list)
    for m in metrics:
        per_key[(m["bench"], m["metric"], m["params"].get("bytes"))].append(m["params"]["slice"])
        assert m["params"]["iters"] == 50 // 3
        a, b = m["probe_ns"]
        assert 0 < a < 1e6 and 0 < b < 1e6, m     # the two ranks share this host's /dev/shm
        both = {"smt" if x < 40 else "core" if x <= 150 else "chip" for x in (a, b)}
        assert m["placement"] == (both.pop() if len(both) == 1 else "mixed"), m
    assert ("barrier", "t_avg", None) in per_key and ("msgrate", "msgrate", 4096) in per_key
    assert all(sorted(v) == [0, 1, 2] for v in per_key.values()), per_key
    # Only the probe's own page is this job's to clean up: other MPI jobs on the machine may add
    # their segments to /dev/shm meanwhile.
    left = {e for e in set(os.listdir("/dev/shm")) - before if e.startswith("bobcat-bench-probe-")}
    assert left == set()


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_imb_touch_keeps_the_data_valid(flavour: str) -> None:
    """--touch rewrites every line of the send buffers before each send; --validate still finds the
    patterns it expects (the bytes stored are the ones there)."""
    metrics = run_mpi(flavour, "imb", "--test", "PingPong,PingPing,Sendrecv,Exchange,msgrate",
                      "--sizes", "0,1,100,4K,65K", "--iters", "5", "--time", "0", "--touch")
    assert {m["bench"] for m in metrics} == {"pingpong", "pingping", "sendrecv", "exchange", "msgrate"}
    check_tminmax(metrics)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_imb_offset_keeps_the_data_valid(flavour: str) -> None:
    """--offset moves the receive buffers against the send buffers' alignment (8: the relative
    alignment where glibc's copy of this CPU is slowest); --validate checks every payload."""
    metrics = run_mpi(flavour, "imb", "--test", "PingPong,Exchange,msgrate", "--sizes", "0,1,4K,65K,1M",
                      "--iters", "5", "--time", "0", "--offset", "8")
    assert {m["bench"] for m in metrics} == {"pingpong", "exchange", "msgrate"}
    check_tminmax(metrics)


# ------------------------------------------------------------------------------ the others


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_stream(flavour: str) -> None:
    metrics = run_mpi(flavour, "stream", "--array-size", "1M", "--iters", "3", "--pages", "small")
    m = by_metric(metrics)
    for kernel in ("copy", "scale", "add", "triad"):
        phases = sorted(r["params"]["phase"] for r in m[kernel])
        assert phases == ["all", "single", "single"]
        assert all(r["value"] > 0 and r["unit"] == "GB/s" for r in m[kernel])
    assert {r["params"]["pages"] for r in metrics} == {"small"}


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("single", [False, True])
def test_gups(flavour: str, single: bool) -> None:
    args = ["--log2-table", "14"] + (["--single"] if single else [])
    m = by_metric(run_mpi(flavour, "gups", *args))
    assert m["errors"][0]["value"] == 0
    assert all(r["value"] > 0 and r["unit"] == "GUP/s" for r in m["gups"])
    if single:
        assert sorted(r["params"]["rank"] for r in m["gups"]) == [0, 1]
        total = sum(r["value"] for r in m["gups"])
        assert m["gups_sum"][0]["value"] == pytest.approx(total, rel=1e-6)
    else:
        assert m["gups"][0]["params"]["global_words"] == 2 * 2**14


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_ring(flavour: str) -> None:
    metrics = run_mpi(flavour, "ring", "--bw-bytes", "64K", "--time", "0.02", "--rings", "2")
    for order in ("natural", "random"):
        for what, unit in (("lat", "us"), ("bw", "GB/s")):
            v = {r["metric"]: r["value"] for r in metrics
                 if r["params"]["order"] == order and r["metric"].startswith(what + "_")}
            assert set(v) == {f"{what}_min", f"{what}_avg", f"{what}_max"}
            assert 0 < v[f"{what}_min"] <= v[f"{what}_avg"] * (1 + 1e-9)
            assert v[f"{what}_avg"] <= v[f"{what}_max"] * (1 + 1e-9)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_ptrans_partial_blocks(flavour: str) -> None:
    m = by_metric(run_mpi(flavour, "ptrans", "--n", "300", "--nb", "32", "--iters", "2"))
    assert m["residual"][0]["value"] == 0
    assert m["bandwidth"][0]["value"] > 0
    assert (m["bandwidth"][0]["params"]["p"], m["bandwidth"][0]["params"]["q"]) == (1, 2)


@pytest.mark.parametrize("flavour,impl", [("openmpi", "fftw-mpi"), ("openmpi", "fftw+alltoall"),
                                          ("mpich", "fftw+alltoall")])
def test_fft(flavour: str, impl: str) -> None:
    m = by_metric(run_mpi(flavour, "fft", "--log2n", "12", "--iters", "2", "--impl", impl))
    assert m["gflops"][0]["value"] > 0
    assert m["gflops"][0]["params"]["impl"] == impl
    assert m["error"][0]["value"] < 1e-12


def test_fft_mpich_refuses_fftw_mpi() -> None:
    proc = subprocess.run([str(binary("fft", "mpich")), "--impl", "fftw-mpi"],
                          capture_output=True, text=True, timeout=TIMEOUT, env=clean_env())
    assert proc.returncode == 2 and "fftw+alltoall" in proc.stderr


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("args", [["--mode", "fpp", "--direct"],
                                  ["--mode", "shared", "--reorder"]])
def test_io_leaves_nothing(flavour: str, args: list[str], tmp_path: Path) -> None:
    env = clean_env(TMPDIR=str(tmp_path))
    m = by_metric(run_mpi(flavour, "io", "--block", "512K", "--transfer", "64K", *args, env=env))
    for name in ("write_bw", "read_bw"):
        assert m[name][0]["value"] > 0 and m[name][0]["unit"] == "GB/s"
        assert m[name][0]["params"]["mode"] == args[1]
        assert isinstance(m[name][0]["params"]["direct"], bool)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("all_busy", [False, True])
def test_selfish(flavour: str, all_busy: bool) -> None:
    args = ["--time", "0.1"] + (["--all"] if all_busy else [])
    m = by_metric(run_mpi(flavour, "selfish", *args))
    ranks = sorted(r["params"]["rank"] for r in m["detour_rate"])
    assert ranks == ([0, 1] if all_busy else [0])
    for r in m["time_lost"]:
        assert 0 <= r["value"] <= 100 and r["unit"] == "%"
    for r in m["hist"]:
        assert r["params"]["lo_us"] < r["params"]["hi_us"] and r["value"] >= 1
    for rank in ranks:
        count = sum(r["value"] for r in m["detours"] if r["params"]["rank"] == rank)
        hist = sum(r["value"] for r in m["hist"] if r["params"]["rank"] == rank)
        assert hist == count


def test_probe() -> None:
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("the probe needs two cpus")
    records = run_json([str(binary("bobcat-probe", None)), "--seconds", "0.05", "--validate"])
    (probe,) = check_schema(records, ranks=None)
    assert probe["bench"] == "probe" and probe["metric"] == "oneway_ns"
    assert probe["unit"] == "ns" and probe["better"] == "lower" and probe["value"] > 0
    assert probe["params"] == {"cpus": probe["params"]["cpus"], "seconds": 0.05}
    assert len(probe["params"]["cpus"]) == 2
    ns = probe["value"]
    assert probe["placement"] == ("smt" if ns < 40 else "core" if ns <= 150 else "chip")


def test_probe_compares_polling() -> None:
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("the probe needs two cpus")
    records = run_json([str(binary("bobcat-probe", None)), "--seconds", "0.1", "--compare-polling", "--validate"])
    first, *polls = check_schema(records, ranks=None)
    assert first["metric"] == "oneway_ns"   # what every reader of the probe takes stays first
    assert [p["params"]["poll"] for p in polls] == ["pause", "tight"]
    for p in polls:
        assert p["metric"] == "oneway_poll_ns" and p["unit"] == "ns" and p["value"] > 0
        assert p["params"]["slices"] == 5 and p["params"]["cpus"] == first["params"]["cpus"]


def test_cellring() -> None:
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("the probe needs two cpus")
    records = run_json([str(binary("bobcat-cellring", None)), "--seconds", "0.1", "--stores", "0,7",
                        "--validate"])
    recs = check_schema(records, ranks=None)
    assert [r["params"]["stores"] for r in recs] == [0, 7]
    for r in recs:
        assert r["bench"] == "cellring" and r["metric"] == "ns_per_msg" and r["unit"] == "ns"
        assert 0 < r["params"]["p25"] <= r["value"] <= r["params"]["p75"]
        assert r["params"]["slices"] >= 1 and len(r["params"]["cpus"]) == 2


def test_cellring_bad_arguments() -> None:
    prog = binary("bobcat-cellring", None)
    for args in (["--stores", "65"], ["--stores", "1,,2"], ["--stores", "x"], ["--cpus", "2,2"],
                 ["--seconds", "0"], ["--bogus"]):
        proc = subprocess.run([str(prog), *args], capture_output=True, text=True,
                              timeout=TIMEOUT, env=clean_env())
        assert proc.returncode == 2, (args, proc.stderr)
        assert "cellring: " in proc.stderr


def test_copyrate() -> None:
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("the probe needs two cpus")
    records = run_json([str(binary("bobcat-copyrate", None)), "--seconds", "0.3", "--sizes", "4K,100000",
                        "--methods", "libc,movsb,read", "--pages", "small", "--validate"])
    recs = check_schema(records, ranks=None)
    rates = [r for r in recs if r["metric"] == "gbps"]
    assert [(r["params"]["bytes"], r["params"]["method"]) for r in rates] == [
        (4096, "libc"), (4096, "movsb"), (4096, "read"), (100000, "libc"), (100000, "movsb"), (100000, "read")]
    for r in rates:
        p = r["params"]
        assert r["bench"] == "copyrate" and r["unit"] == "GB/s" and r["better"] == "higher"
        assert 0 < p["p25_gbps"] <= r["value"] <= p["p75_gbps"]
        # the rate is the size over the median copy's time
        assert r["value"] == pytest.approx(p["bytes"] / (p["us"] * 1e3), rel=2e-3)
        assert p["pages"] == "small" and p["slices"] >= 1 and len(p["cpus"]) == 2
    # the ceiling is the best copy (read is half a copy, not a copy)
    ceil = {r["params"]["bytes"]: r for r in recs if r["metric"] == "ceiling_gbps"}
    for size in (4096, 100000):
        copies = [r for r in rates if r["params"]["bytes"] == size and r["params"]["method"] != "read"]
        best = max(copies, key=lambda r: r["value"])
        assert ceil[size]["value"] == best["value"] and ceil[size]["params"]["method"] == best["params"]["method"]


def test_copyrate_bad_arguments() -> None:
    prog = binary("bobcat-copyrate", None)
    for args in (["--sizes", "0"], ["--sizes", "1,,x"], ["--methods", "memmove"], ["--cpus", "2,2"],
                 ["--seconds", "0"], ["--pages", "huge"], ["--bogus"]):
        proc = subprocess.run([str(prog), *args], capture_output=True, text=True,
                              timeout=TIMEOUT, env=clean_env())
        assert proc.returncode == 2, (args, proc.stderr)
        assert "copyrate: " in proc.stderr and not proc.stdout


# ------------------------------------------------------------------------------ bad arguments

PROGRAMS = ["imb", "stream", "gups", "ring", "ptrans", "fft", "io", "selfish"]
BAD_ARGS = [
    ("imb", ["--test", "NoSuchTest"]),
    ("imb", ["--max-size", "4Q"]),
    ("imb", ["--sizes", "1,,x"]),
    ("imb", ["--iters", "0"]),
    ("imb", ["--sizes", "8", "--max-size", "4K"]),
    ("imb", ["--slices", "0"]),
    ("imb", ["--offset", "4096"]),
    ("stream", ["--pages", "medium"]),
    ("stream", ["--sizes", "8"]),  # not an option of stream
    ("gups", ["--log2-table", "2"]),
    ("ring", ["--rings", "0"]),
    ("ptrans", ["--nb", "0"]),
    ("fft", ["--log2n"]),
    ("io", ["--mode", "striped"]),
    ("io", ["--direct", "--transfer", "1000", "--block", "2000"]),
    ("selfish", ["--threshold-us", "-1"]),
    ("selfish", ["extra-argument"]),
]


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("name,args", BAD_ARGS)
def test_bad_arguments_exit_2(flavour: str, name: str, args: list[str]) -> None:
    proc = subprocess.run([str(binary(name, flavour)), *args], capture_output=True, text=True,
                          timeout=TIMEOUT, env=clean_env())
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    assert f"{name}: " in proc.stderr and "--help" in proc.stderr


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_bad_argument_through_launcher(flavour: str) -> None:
    cmd = launcher(flavour) + [str(binary("imb", flavour)), "--no-such-option"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, env=clean_env())
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "unknown option '--no-such-option'" in proc.stderr


@pytest.mark.parametrize("name", PROGRAMS)
def test_help(name: str) -> None:
    proc = subprocess.run([str(binary(name, "openmpi")), "--help"], capture_output=True,
                          text=True, timeout=TIMEOUT, env=clean_env())
    assert proc.returncode == 0
    assert proc.stdout.startswith(f"usage: {name} ") and "--validate" in proc.stdout


def test_probe_bad_arguments() -> None:
    probe = binary("bobcat-probe", None)
    for args in (["--cpus", "0"], ["--cpus", "1,1"], ["--seconds", "-1"], ["--bogus"]):
        proc = subprocess.run([str(probe), *args], capture_output=True, text=True,
                              timeout=TIMEOUT, env=clean_env())
        assert proc.returncode == 2, (args, proc.stderr)


# ------------------------------------------------------------------------------ coll-floor


def test_coll_floor() -> None:
    """The reduction floor (no MPI): every test reported, min <= median <= max, and the result it
    validates (thread 0 holds the sum of both inputs) is right."""
    records = run_json([str(binary("coll-floor", None)), "--bytes", "64K", "--reps", "3",
                        "--iters", "5"])
    metrics = check_schema(records, ranks=None)
    assert {m["metric"] for m in metrics} == {"barrier", "copy_half", "reduce_parallel",
                                              "reduce_serial", "allreduce_fused"}
    for m in metrics:
        assert m["unit"] == "us" and m["better"] == "lower" and m["value"] > 0, m
        assert m["params"]["bytes"] == 64 << 10 and m["params"]["reps"] == 3
        assert m["params"]["min"] <= m["value"] <= m["params"]["max"], m


@pytest.mark.parametrize("args", [["--bytes", "12"], ["--reps", "0"], ["--reps", "500"],
                                  ["--cpus", "x"], ["--iters"], ["--bogus"]])
def test_coll_floor_bad_arguments(args: list[str]) -> None:
    proc = subprocess.run([str(binary("coll-floor", None)), *args], capture_output=True,
                          text=True, timeout=TIMEOUT, env=clean_env())
    assert proc.returncode == 2, (args, proc.stderr)
    assert proc.stdout == "" and proc.stderr.startswith("usage: coll-floor")
