"""Parsers on outputs captured from the real programs (tests/python/data/)."""
from pathlib import Path

from bobcat.evaluation import parsers

DATA = Path(__file__).parent / "data"


def test_hpcc_summary_keeps_every_numeric_key_with_units():
    p = parsers.parse_hpcc((DATA / "hpccoutf_openmpi_n2000_p1q2.txt").read_text())
    by = {m.name: m for m in p.metrics}
    assert p.valid and not p.problems
    assert by["HPL_Tflops"].value == 0.00520085
    assert (by["HPL_Tflops"].unit, by["HPL_Tflops"].better) == ("Tflop/s", "higher")
    assert (by["PTRANS_GBs"].unit, by["PTRANS_GBs"].better) == ("GB/s", "higher")
    assert by["MPIRandomAccess_GUPs"].value == 0.0184501
    assert by["MPIFFT_Gflops"].better == "higher"
    assert by["StarSTREAM_Triad"].unit == "GB/s"
    lat = by["RandomlyOrderedRingLatency_usec"]
    assert (lat.value, lat.unit, lat.better) == (0.373256, "us", "lower")
    assert by["NaturallyOrderedRingBandwidth_GBytes"].better == "higher"
    # labels are not numbers; numbers without a known meaning are kept without a direction
    assert "VersionRelease" not in by and "HPL_cpfact" not in by
    assert by["HPL_N"].value == 2000 and by["HPL_N"].better == ""
    assert all(m.params == {"ranks": 2} for m in p.metrics)
    assert len(p.metrics) > 100


def test_hpcc_uses_the_last_summary_and_flags_failure():
    text = (DATA / "hpccoutf_openmpi_n2000_p1q2.txt").read_text()
    second = text.replace("Success=1", "Success=0").replace("HPL_Tflops=0.00520085", "HPL_Tflops=0.5")
    p = parsers.parse_hpcc(text + second)
    assert not p.valid
    assert {m.name: m.value for m in p.metrics}["HPL_Tflops"] == 0.5
    truncated = parsers.parse_hpcc(text[: text.find("End of Summary")])
    assert truncated.metrics == [] and truncated.done is None and truncated.problems


def test_hpcc_input_has_the_grid_on_the_lines_hpl_reads():
    lines = parsers.hpcc_input(3000, 96, 1, 2).splitlines()
    assert lines[5].split()[0] == "3000" and lines[7].split()[0] == "96"
    assert lines[10].split()[0] == "1" and lines[11].split()[0] == "2"
    assert lines[31].startswith("#####") and len(lines) == 36


def test_imb_pingpong_jsonl():
    p = parsers.parse_jsonl((DATA / "imb_pingpong_openmpi.jsonl").read_text())
    assert p.valid and not p.problems
    sizes = sorted({m.size for m in p.metrics})
    assert sizes[0] == 0 and sizes[-1] == 4096
    t8 = [m for m in p.metrics if m.name == "t_avg" and m.size == 8][0]
    assert t8.bench == "pingpong" and t8.unit == "us" and t8.better == "lower" and t8.value > 0
    bw = [m for m in p.metrics if m.name == "bandwidth"]
    assert bw and all(m.better == "higher" and m.unit == "MB/s" for m in bw)


def test_imb_two_tests_and_barrier_without_size():
    p = parsers.parse_jsonl((DATA / "imb_allreduce_barrier_mpich.jsonl").read_text())
    assert {m.bench for m in p.metrics} == {"allreduce", "barrier"}
    assert all(m.size is None for m in p.metrics if m.bench == "barrier")
    assert p.done is not None and p.done["bench"] == "imb"


def test_ring_jsonl_keeps_params():
    p = parsers.parse_jsonl((DATA / "ring_openmpi.jsonl").read_text())
    orders = {m.params.get("order") for m in p.metrics}
    assert "natural" in orders and p.valid


def test_jsonl_tolerates_noise_and_rejects_bad_records():
    text = ("banner from a launcher\n"
            '{"bench": "x", "metric": "m", "value": "fast", "unit": "", "better": "lower"}\n'
            '{"bench": "x", "metric": "m", "value": 1.5, "unit": "s", "better": "lower"}\n'
            '{"bench": "x", "metric": "n", "unit": "s", "better": "lower"}\n'
            '[1, 2]\n')
    p = parsers.parse_jsonl(text)
    assert [(m.name, m.value) for m in p.metrics] == [("m", 1.5)]
    assert len(p.problems) == 4 and not p.valid  # no done line


def test_probe_and_placement():
    rec = parsers.parse_probe((DATA / "probe.jsonl").read_text())
    assert rec is not None and rec["metric"] == "oneway_ns" and rec["placement"] in parsers.PLACEMENTS
    assert parsers.classify_placement(25) == "smt"
    assert parsers.classify_placement(55) == "core"
    assert parsers.classify_placement(260) == "chip"
    core, chip = {"placement": "core"}, {"placement": "chip"}
    assert parsers.run_placement(core, core) == "core"
    assert parsers.run_placement(core, chip) == "mixed"
    assert parsers.run_placement(None, core) == "unknown"
    assert parsers.run_placement({"error": "x", "placement": "unknown"}, core) == "unknown"
