"""bench.rma's pure logic on captured outputs: a job that dies in one test is blamed on that test and
the tests after it run again; best peers skip variants that crashed; ratios are formed per round."""
import subprocess

import pytest

from bobcat.bench import rma


def line(metric: str, value: float, nbytes: int | None = None) -> str:
    unit = "GB/s" if metric in rma.UNITS else "ns"
    b = f', "bytes": {nbytes}' if nbytes is not None else ""
    return (f'{{"bench": "rma", "metric": "{metric}", "value": {value}, "unit": "{unit}", '
            f'"better": "lower", "params": {{"ranks": 2{b}, "iters": 10, "reps": 3}}}}')


def job(values: dict[str, float], done: bool | None = True) -> str:
    out = []
    for k, v in values.items():
        m, _, s = k.partition("/")
        out.append(line(m, v, int(s) if s else None))
    if done is not None:
        out.append(f'{{"bench": "rma", "done": true, "valid": {"true" if done else "false"}, "wall_s": 1.0}}')
    return "\n".join(out) + "\n"


FULL = {k: 1.0 for k in rma.ALL_KEYS}
BEFORE_CAS = {k: 1.0 for t in rma.TESTS[:-1] for k in rma.KEYS[t]}
# What mpirun.openmpi printed when Open MPI's default osc died in MPI_Compare_and_swap (trimmed).
OMPI_CAS_DEATH = ("rma: test put (win allocate)\nrma: test get (win allocate)\n"
                  "rma: test compare_and_swap (win allocate)\n"
                  "[vm:18299] *** Process received signal ***\n[vm:18299] Signal: Segmentation fault (11)\n"
                  "mpirun.openmpi noticed that process rank 1 with PID 0 on node vm exited on signal 11 "
                  "(Segmentation fault).\n")
YOD_GET_DEATH = ("rma: test put (win allocate)\nrma: test get (win allocate)\n"
                 "yod: rank 1 (rma.openmpi) was killed by signal 11 (SIGSEGV); 1 other rank stopped\n")


def test_a_whole_job() -> None:
    values, crashed, rest, bad = rma.outcome(rma.TESTS, job(FULL), "", 0)
    assert values == FULL and crashed == {} and rest == [] and bad == []


def test_a_death_in_the_last_test_costs_that_test() -> None:
    values, crashed, rest, bad = rma.outcome(rma.TESTS, job(BEFORE_CAS, done=None), OMPI_CAS_DEATH, 139)
    assert crashed == {"compare_and_swap": "signal 11 Segmentation fault"}
    assert rest == [] and bad == [] and set(values) == set(BEFORE_CAS)


def test_a_death_early_leaves_the_later_tests_to_run() -> None:
    values, crashed, rest, _ = rma.outcome(rma.TESTS, job({"put_latency": 30.0}, done=None), YOD_GET_DEATH, 1)
    assert crashed == {"get": "signal 11 SIGSEGV"}
    assert rest == ["fetch_and_op", "put_bw", "fence", "compare_and_swap"]
    assert values == {"put_latency": 30.0}
    # the second job runs only those; a death that names no test after some numbers is blamed on
    # the first missing one
    values, crashed, rest, _ = rma.outcome(rest, job({"fetch_and_op": 9.0}, done=None), "", None)
    assert crashed == {"put_bw": "timeout"} and rest == ["fence", "compare_and_swap"]


def test_a_failed_validation_is_not_a_crash() -> None:
    err = "rma: validation failed: fetch_and_op: rank 1's counter holds 5 after 6 adds of 1 (last fetched 4)\n"
    values, crashed, rest, bad = rma.outcome(rma.TESTS, job(FULL, done=False), err, 1)
    assert crashed == {} and rest == [] and values == FULL
    assert bad == ["fetch_and_op: rank 1's counter holds 5 after 6 adds of 1 (last fetched 4)"]
    # told before a later crash: still reported
    _, crashed, _, bad = rma.outcome(rma.TESTS, job(BEFORE_CAS, done=None), err + OMPI_CAS_DEATH, 139)
    assert crashed and len(bad) == 1


def test_a_death_after_every_number_is_blamed_on_the_end() -> None:
    _, crashed, rest, _ = rma.outcome(rma.TESTS, job(FULL, done=None), "yod: rank 0 exited 134\n", 134)
    assert crashed == {"finalize": "exit 134"} and rest == []


def test_run_once_reruns_after_a_crash(monkeypatch) -> None:
    calls = []

    def fake_run(cmd, **kw):
        tests = cmd[cmd.index("--test") + 1].split(",")
        calls.append(tests)
        if "get" in tests:  # the first job dies in get
            return subprocess.CompletedProcess(cmd, 1, job({"put_latency": 30.0}, done=None), YOD_GET_DEATH)
        return subprocess.CompletedProcess(cmd, 0, job({k: 2.0 for t in tests for k in rma.KEYS[t]}), "")

    monkeypatch.setattr(rma.subprocess, "run", fake_run)
    out = rma.run_once("openmpi", ["yod"], {})
    assert calls == [rma.TESTS, rma.TESTS[2:]]
    assert out["crashed"] == {"get": "signal 11 SIGSEGV"}
    assert "get_latency" not in out["values"] and out["values"]["put_latency"] == 30.0
    assert out["values"]["compare_and_swap"] == 2.0


def run(values: dict[str, float], crashed: dict[str, str] | None = None) -> dict:
    return {"values": values, "crashed": crashed or {}, "failures": []}


def test_best_peer_and_the_aims() -> None:
    def vals(lat: float, put: float, memcpy: float, fence: float, barrier: float) -> dict:
        v = {"put_latency": lat, "get_latency": lat, "fetch_and_op": lat, "compare_and_swap": lat,
             "fence": fence, "barrier": barrier}
        for s in rma.SIZES:
            v[f"put_bw/{s}"], v[f"memcpy_bw/{s}"] = put, memcpy
        return v

    fast_but_crashing = vals(1.0, 10, 10, 1, 1)
    del fast_but_crashing["compare_and_swap"]
    rows = {
        "bobcat.openmpi": [run(vals(4.0, 9.5, 10.0, 300, 100)), run(vals(6.0, 9.0, 10.0, 100, 100)),
                           run(vals(5.0, 9.0, 9.0, 150, 100))],
        "ompi.default": [run(fast_but_crashing, {"compare_and_swap": "signal 11"})] * 3,
        "ompi.osc-sm": [run(vals(25.0, 30, 30, 1, 1))] * 3,
    }
    s = rma.summarize(rows)
    assert s["bobcat.openmpi"]["median"]["put_latency"] == 5.0
    # ratios per round, then the median: put/memcpy 0.95, 0.9, 1.0 -> 0.95; fence/barrier 3, 1, 1.5
    assert s["bobcat.openmpi"]["ratio"][f"put_over_memcpy/{rma.SIZES[0]}"] == pytest.approx(0.95)
    assert s["bobcat.openmpi"]["ratio"]["fence_over_barrier"] == pytest.approx(1.5)
    assert s["ompi.default"]["crashed"] == {"compare_and_swap": 3}
    assert s["ompi.default"]["median"]["compare_and_swap"] is None
    # the best peer of compare_and_swap is the one that did not crash
    assert rma.best_peer(s, "compare_and_swap") == ("ompi.osc-sm", 25.0)
    assert rma.best_peer(s, "put_latency") == ("ompi.default", 1.0)
    v = rma.verdicts(s)["bobcat.openmpi"]
    assert v["speedup"]["compare_and_swap"] == ("ompi.osc-sm", 5.0)
    assert v["speedup"]["put_latency"] == ("ompi.default", 0.2)
    assert v["fence"] == pytest.approx(1.5)
    text = rma.report(s, {}, {}, 3)
    assert "crashed: ompi.default in compare_and_swap: signal 11" in text
    assert "[aim met]" in text and "[aim not met]" in text


def test_a_crashed_bobcat_has_no_ratio() -> None:
    rows = {"bobcat.mpich": [run({"put_latency": 5.0}, {"get": "signal 11"})],
            "mpich.default": [run({"put_latency": 800.0, "get_latency": 800.0})]}
    v = rma.verdicts(rma.summarize(rows))["bobcat.mpich"]
    assert v["speedup"]["put_latency"] == ("mpich.default", 160.0)
    assert v["speedup"]["get_latency"] == ("mpich.default", None)
    assert v["bw"] == {s: None for s in rma.SIZES} and v["fence"] is None


def test_merge_keeps_every_round_in_order() -> None:
    a = {"probe_before": {"placement": "core"}, "probe_after": {"placement": "chip"},
         "rows": {"bobcat.mpich": [run({"put_latency": 1.0})], "mpich.default": [run({"put_latency": 9.0})]}}
    b = {"probe_before": {"placement": "core"}, "probe_after": {"placement": "core"},
         "rows": {"bobcat.mpich": [run({"put_latency": 3.0})], "mpich.default": [run({"put_latency": 7.0})]}}
    rows, probes = rma.merge([a, b])
    assert [r["values"]["put_latency"] for r in rows["bobcat.mpich"]] == [1.0, 3.0]
    assert [p["placement"] for p in probes] == ["core", "chip", "core", "core"]
    assert rma.summarize(rows)["mpich.default"]["median"]["put_latency"] == 8.0


def test_against_the_same_mpis_default_too() -> None:
    rows = {"bobcat.openmpi": [run({"put_latency": 10.0, "compare_and_swap": 20.0})],
            "ompi.default": [run({"put_latency": 30.0}, {"compare_and_swap": "signal 11"})],
            "ompi.osc-sm": [run({"put_latency": 15.0, "compare_and_swap": 25.0})]}
    v = rma.verdicts(rma.summarize(rows))["bobcat.openmpi"]
    assert v["speedup"]["put_latency"] == ("ompi.osc-sm", 1.5)
    assert v["same_mpi_default"]["put_latency"] == ("ompi.default", 3.0)
    assert v["same_mpi_default"]["compare_and_swap"] == ("ompi.default", None)


def test_a_job_that_cannot_make_its_window_fails_every_test_once() -> None:
    err = ("[vm:03033] *** An error occurred in MPI_Win_create\n[vm:03033] *** MPI_ERR_WIN: invalid window\n")
    values, crashed, rest, _ = rma.outcome(rma.TESTS, "", err, 53)
    assert rest == [] and values == {}
    assert crashed == {t: "exit 53 (error in MPI_Win_create)" for t in rma.TESTS}
    s = rma.summarize({"ompi.osc-sm": [run({}, crashed)]})
    assert rma._cell(s["ompi.osc-sm"], "put_latency") == "failed"
    assert rma.kind_of("signal 11 SIGSEGV") == "crashed" and rma.kind_of("timeout") == "timeout"
