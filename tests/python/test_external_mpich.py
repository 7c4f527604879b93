"""The MPICH test-suite harness's pure parts (bobcat.external.mpich_tests, .mpich): testlist parsing, which
entries are skipped, pass/fail as MPICH's runtests decides, the launch commands and the comparison.
No MPI job runs here; `make test-external` runs the suite itself."""
from __future__ import annotations

import json

from bobcat.external import mpich as xm
from bobcat.external import mpich_tests as mt

# Lines as configure leaves them in pt2pt/testlist and datatype/testlist (MPICH 4.0.2).
TESTLIST = """\
sendself 1 test/mpi/pt2pt/sendself arg=-type=MPI_INT arg=-sendcnt=8192 arg=-seed=47
sendrecv2 2
sendrecv2 2 env=MPIR_CVAR_ASYNC_PROGRESS=1 env=MPIR_CVAR_NUM_CLIQUES=1
sendflood 8
issendselfcancel 1 xfail=ticket2276
# For testing, scancel will run with 1 process as well
scancel 2 xfail=ticket2266 xfail=ticket2270
bsend1 1
lbub_oldapi 1 strict=FALSE
#large_type_sendrec 2 arg=31 mem=4.3
large_vec 3 mem=9.8
bcast 4 arg=-count=1 timeLimit=420
bsend1 1
!util:libmtest.la
"""


def test_parse_testlist_fields():
    es = mt.parse_testlist(TESTLIST, "pt2pt")
    names = [e["name"] for e in es]
    assert names == ["sendself", "sendrecv2", "sendrecv2", "sendflood", "issendselfcancel",
                     "scancel", "bsend1", "lbub_oldapi", "large_vec", "bcast", "bsend1"]
    s = es[0]
    # a token without '=' (the path in sendself's line) is ignored, as runtests does
    assert s["np"] == 1 and s["args"] == ["-type=MPI_INT", "-sendcnt=8192", "-seed=47"]
    assert es[2]["env"] == ["MPIR_CVAR_ASYNC_PROGRESS=1", "MPIR_CVAR_NUM_CLIQUES=1"]
    assert es[5]["xfail"] == "ticket2270"  # the last one wins, as in runtests' hash
    assert es[8]["mem"] == "9.8" and es[9]["timeLimit"] == 420
    assert es[7]["strict"] == "FALSE"


def test_parse_testlist_ids_unique():
    es = mt.parse_testlist(TESTLIST, "pt2pt")
    ids = [e["id"] for e in es]
    assert len(set(ids)) == len(ids)
    assert ids[1] == "pt2pt/sendrecv2 2"
    assert ids[2] == "pt2pt/sendrecv2 2 [MPIR_CVAR_ASYNC_PROGRESS=1 MPIR_CVAR_NUM_CLIQUES=1]"
    assert ids[0] == "pt2pt/sendself 1 -type=MPI_INT -sendcnt=8192 -seed=47"
    assert ids[-1] == "pt2pt/bsend1 1 #2"


def test_parse_missing_np_defaults_to_one():
    (e,) = mt.parse_testlist("typename\n", "datatype")
    assert e["np"] == 1 and e["id"] == "datatype/typename 1"


def test_skip_reasons():
    es = {e["id"]: e for e in mt.parse_testlist(TESTLIST, "pt2pt")}
    assert "8 ranks" in mt.skip_reason(es["pt2pt/sendflood 8"], "mpich")
    assert mt.skip_reason(es["pt2pt/sendflood 8"], "mpich", max_np=8) is None  # (--max-np 8)
    assert "mem=" in mt.skip_reason(es["pt2pt/large_vec 3"], "mpich")
    assert "xfail" in mt.skip_reason(es["pt2pt/scancel 2"], "openmpi")
    # strict=FALSE: Open MPI's build is --enable-strictmpi, MPICH's is not
    assert "strict" in mt.skip_reason(es["pt2pt/lbub_oldapi 1"], "openmpi")
    assert mt.skip_reason(es["pt2pt/lbub_oldapi 1"], "mpich") is None
    assert mt.skip_reason(es["pt2pt/bcast 4 -count=1"], "mpich") is None


def test_classify_like_runtests():
    assert mt.classify(0, " No Errors\n", False) == (mt.PASS, "")
    assert mt.classify(0, "No errors\n", False)[0] == mt.PASS
    assert mt.classify(0, "Test Passed\n No Errors\n", False)[0] == mt.PASS
    # exit status, missing No Errors, and any other output each fail the test
    assert mt.classify(1, " No Errors\n", False) == (mt.FAIL, "exit status 1")
    assert mt.classify(0, "", False) == (mt.FAIL, "no ' No Errors' line")
    out, why = mt.classify(0, "Found 3 errors\n No Errors\n", False)
    assert out == mt.FAIL and why.startswith("unexpected output: Found 3 errors")
    assert mt.classify(None, "", True)[0] == mt.TIMEOUT
    assert mt.classify(137, " No Errors\n", False)[0] == mt.FAIL


def test_classify_ignores_launcher_lines_only():
    out = "yod: note: 2 ranks on 2 cores\n No Errors\n\n"
    assert mt.classify(0, out, False)[0] == mt.PASS
    assert mt.classify(0, "bobcat[0]: warning\n No Errors\n", False)[0] == mt.PASS
    assert mt.classify(0, "rank 0: yod: x\n No Errors\n", False)[0] == mt.FAIL


def test_classify_result_test():
    assert mt.classify(0, "anything\n", False, "TestStatus")[0] == mt.PASS
    assert mt.classify(3, "", False, "TestStatus")[0] == mt.FAIL
    assert mt.classify(0, "noise\n No Errors\n", False, "TestStatusNoErrors")[0] == mt.PASS


def test_commands(monkeypatch):
    monkeypatch.setenv("BOBCAT_HOME", "/opt/bc")
    assert xm.command("openmpi", "bare", 2, ["./p", "-a"], 60) == \
        ["mpirun.openmpi", "--oversubscribe", "-np", "2", "./p", "-a"]
    assert xm.command("mpich", "bare", 4, ["./p"], 60) == ["mpiexec.mpich", "-n", "4", "./p"]
    assert xm.command("mpich", "yod", 3, ["./p"], 60) == \
        ["/opt/bc/bin/yod", "-VN3", "-np", "3", "--oversubscribe", "--heap", "1G",
         "-tlimit", "60", "./p"]
    assert xm.command("mpich", "sim", 4, ["./p"], 60)[:5] == \
        ["/opt/bc/bin/yod", "--simulate-nodes", "-VN2", "-np", "4"]
    # one rank: no nodes to simulate, run as yod
    assert xm.command("mpich", "sim", 1, ["./p"], 60) == xm.command("mpich", "yod", 1, ["./p"], 60)
    # the layer's state comes from yod's --stats file, right before the program
    assert xm.command("mpich", "yod", 2, ["./p", "-x"], 60, "1G", "/w/t.stats.json")[-4:] == \
        ["--stats", "/w/t.stats.json", "./p", "-x"]
    assert xm.command("mpich", "bare", 2, ["./p"], 60, "1G", "/w/t.stats.json") == ["mpiexec.mpich", "-n", "2", "./p"]


def test_retry_heap(monkeypatch):
    # room for 8 GiB in all (half of MemAvailable)
    monkeypatch.setattr(mt, "_fits", lambda heap, np_: np_ * mt._bytes(heap) <= 8 << 30)
    assert mt._retry_heap("1G", "", 4) is None  # --big-heap '': never (was a ValueError)
    assert mt._retry_heap("1G", "2G", 4) == "2G"
    assert mt._retry_heap("1G", "3G", 4) == "2G"  # the largest whole GiB that fits, >= twice the heap
    assert mt._retry_heap("1G", "3G", 8) is None  # 2G x 8 does not fit, 1G is not twice the heap


def test_layer_states_from_the_account_and_printed_lines(tmp_path):
    """yod --stats's account gives every rank's layer= state; a cut statistics line in the output
    (Open MPI's forwarding) adds nothing, a whole printed one does."""
    acct = tmp_path / "t.stats.json"
    acct.write_text(json.dumps({"per_rank": [{"layer": "on"}, {"layer": "on"}, {"layer": "off"}]}))
    assert xm.layer_states(str(acct)) == "off,on"
    assert xm.layer_states(str(acct), "0 mpi=0 bytes.smartmap=0 bytes.mpi=0\n") == "off,on"
    assert xm.layer_states(None, "bobcat: stats rank 1 node 0: layer=unused thread=single\n") == "unused"
    # no account (no rank reached MPI_Finalize through the layer), or a broken one: no state
    assert xm.layer_states(str(tmp_path / "none.json")) == ""
    (tmp_path / "bad.json").write_text("{")
    assert xm.layer_states(str(tmp_path / "bad.json")) == ""


def _r(outcome):
    return {"outcome": outcome, "why": "", "cmd": "c", "env": [], "out": "o", "tail": "t"}


def test_compare():
    run = {"a": _r("fail"), "b": _r("fail"), "c": _r("pass"), "d": _r("timeout")}
    base = {"a": _r("pass"), "b": _r("fail"), "c": _r("fail"), "d": _r("pass")}
    ctl = {"a": _r("pass"), "d": _r("timeout")}
    c = xm.compare("mpich", "yod", run, base, ctl)
    assert [e["test"] for e in c["regressions"]] == ["a", "d"]
    assert c["regressions"][0]["blame"] == "MPI layer"
    assert c["regressions"][1]["blame"].startswith("libbobcat without")
    assert c["baseline_failures_subtracted"] == ["b"] and c["pass_only_under_yod"] == ["c"]
    assert "control" not in xm.compare("mpich", "yod", run, base, None)["regressions"][0]


def test_tail_keeps_the_cause_and_the_layer_line():
    out = "\n".join(["bobcat: rank 0: heap segment exhausted: ...", "x: Assertion `a' failed."]
                    + [f"[vm:1] [ {i}] /lib/libc.so.6(+0x1)" for i in range(40)]
                    + ["bobcat: stats rank 0 node 0: layer=on thread=single",
                       "bobcat: stats rank 0 node 0: p2p send calls=1 inplace=1",
                       "yod: rank 0 (x) was killed by signal 6 (SIGABRT)"])
    t = mt.tail(out, 5).splitlines()
    assert t[:3] == ["bobcat: rank 0: heap segment exhausted: ...", "x: Assertion `a' failed.",
                     "[...]"]
    assert t[-2:] == ["bobcat: stats rank 0 node 0: layer=on thread=single",
                      "yod: rank 0 (x) was killed by signal 6 (SIGABRT)"]
    assert mt.LAYER_LINE.findall(out) == ["on"]


def test_bare_cache_keeps_what_a_stopped_pass_finished(tmp_path, monkeypatch):
    """The bare pass saves each result as it comes: stopped after the first of two tests, the cache
    holds that one, and the next pass runs only the other."""
    import argparse
    import json

    import pytest

    entries = [{"id": "rma/a 2"}, {"id": "rma/b 2"}]
    ran = []

    def stopped(work, bdir, mpi, cfg, todo, lock, on_result=None, **kw):
        ran.append([e["id"] for e in todo])
        on_result(todo[0]["id"], {"outcome": "pass"})
        raise KeyboardInterrupt

    monkeypatch.setattr(xm, "run_entries", stopped)
    monkeypatch.setattr(xm, "_baseline_path", lambda work, mpi, bdir: str(tmp_path / "bare.json"))
    args = argparse.Namespace(fresh_baseline=False, timeout=60, tag="")
    with pytest.raises(KeyboardInterrupt):
        xm.baseline(str(tmp_path), "bdir", "mpich", entries, None, args)
    assert json.loads((tmp_path / "bare.json").read_text()) == {"rma/a 2": {"outcome": "pass"}}

    def rest(work, bdir, mpi, cfg, todo, lock, on_result=None, **kw):
        ran.append([e["id"] for e in todo])
        for e in todo:
            on_result(e["id"], {"outcome": "fail"})

    monkeypatch.setattr(xm, "run_entries", rest)
    got = xm.baseline(str(tmp_path), "bdir", "mpich", entries, None, args)
    assert ran == [["rma/a 2", "rma/b 2"], ["rma/b 2"]]
    assert got == {"rma/a 2": {"outcome": "pass"}, "rma/b 2": {"outcome": "fail"}}
