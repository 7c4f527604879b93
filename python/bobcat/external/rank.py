"""One rank of an external conformance run: mpi4py's own unittest suite, test by test, with a log
that survives the rank's death.

Run by every rank as a script (`python rank.py --testdir ... --out ...`), never imported by
bobcat. mpi4py's `runtests.py` prints a text report per rank to stderr; interleaved across ranks
and cut short by a crash or a hang, that report cannot say which test broke the job. This driver
loads the same tests the same way (runtests' own option parser, loader and skip rules), runs them in
one fixed order on every rank, and appends to `<out>/rank-<r>.log`, flushed line by line:

    start <test id>
    end <test id> <ok|fail|error|skip|xfail|xpass> <one-line reason>

A `start` without its `end` is the test the rank was in when it died. A watchdog thread ends the
rank (exit 3, after writing `hang <test id>`) when one test runs longer than --test-timeout: the
launcher then ends the whole job, and the harness (bobcat.external.pysuites) restarts the suite after that
test. Tests named in --skip-file (one id a line) are left out, identically on every rank.
"""
from __future__ import annotations

import argparse
import os
import sys
import threading
import time
import traceback
import unittest


def _flatten(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from _flatten(t)
        else:
            yield t


class _Log:
    def __init__(self, path: str):
        self.f = open(path, "a", buffering=1)
        self.lock = threading.Lock()

    def line(self, *words: str) -> None:
        text = " ".join(w.replace("\n", " ").replace("\0", "") for w in words)
        with self.lock:
            self.f.write(text + "\n")
            self.f.flush()


class _Result(unittest.TestResult):
    """Records one outcome per test id (a test's first bad outcome wins over a later ok)."""

    def __init__(self, log: _Log, details):
        super().__init__()
        self.log, self.details = log, details
        self.outcome: dict[str, tuple[str, str]] = {}
        self.current: str | None = None
        self.started_at = 0.0

    def _set(self, test, kind: str, reason: str = "") -> None:
        tid = test.id()
        if tid not in self.outcome or self.outcome[tid][0] == "ok":
            self.outcome[tid] = (kind, reason)

    def startTest(self, test):
        super().startTest(test)
        self.current, self.started_at = test.id(), time.monotonic()
        self.log.line("start", test.id())

    def stopTest(self, test):
        super().stopTest(test)
        kind, reason = self.outcome.get(test.id(), ("ok", ""))
        self.log.line("end", test.id(), kind, reason[:300])
        self.current = None

    def _bad(self, kind, test, err):
        text = "".join(traceback.format_exception(*err))
        last = [ln for ln in text.strip().splitlines() if ln.strip()][-1:] or [kind]
        self._set(test, kind, last[0].strip())
        self.details.write(f"==== {kind} {test.id()}\n{text}\n")
        self.details.flush()

    def addSuccess(self, test):
        self._set(test, "ok")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._bad("fail", test, err)

    def addError(self, test, err):
        super().addError(test, err)
        self._bad("error", test, err)

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            kind = "fail" if issubclass(err[0], test.failureException) else "error"
            self._bad(kind, test, err)

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._set(test, "skip", str(reason))

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._set(test, "xfail")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._set(test, "xpass")


def _bobcat_loaded() -> str:
    """The libbobcat this rank has mapped ("none" when it runs without bobcat)."""
    with open("/proc/self/maps") as f:
        libs = {ln.split()[-1] for ln in f if "libbobcat" in ln}
    return ",".join(sorted(os.path.basename(x) for x in libs)) or "none"


def _rank_from_env() -> str:
    for var in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"):
        if os.environ.get(var):
            return os.environ[var]
    return "x"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", default="mpi4py", choices=["mpi4py", "shmem4py"])
    ap.add_argument("--preload", action="append", default=[],
                    help="shared library to load RTLD_GLOBAL before the suite's module")
    ap.add_argument("--testdir", required=True, help="the suite's test/ directory")
    ap.add_argument("--libdir", required=True, action="append",
                    help="directory holding the built package (repeatable: its dependencies)")
    ap.add_argument("--out", required=True, help="directory for rank-<r>.log and rank-<r>.details")
    ap.add_argument("--skip-file", help="test ids to leave out, one a line")
    ap.add_argument("--exclude", action="append", default=[], help="test module regex to leave out")
    ap.add_argument("--include", action="append", default=[], help="test module regex to keep")
    ap.add_argument("--pattern", action="append", default=[], help="test name substring (runtests -k)")
    ap.add_argument("--numpy", action="store_true", help="also run the NumPy variants")
    ap.add_argument("--test-timeout", type=float, default=120.0)
    ap.add_argument("--thread-level", default="multiple",
                    choices=["single", "funneled", "serialized", "multiple"],
                    help="what mpi4py asks MPI_Init_thread for (mpi4py's own default is multiple)")
    a = ap.parse_args(argv)

    sys.dont_write_bytecode = True
    sys.path.insert(0, a.testdir)
    if a.suite == "shmem4py":
        return _run_shmem4py(a)
    import runtests  # mpi4py's own runner: its options, loader and known-failure skips

    opts = ["--no-builddir", "--path", a.libdir[0], "--no-cupy", "--no-numba",
            "--thread-level", a.thread_level]
    if not a.numpy:
        opts.append("--no-numpy")
    for x in a.exclude:
        opts += ["-e", x]
    for x in a.include:
        opts += ["-i", x]
    for x in a.pattern:
        opts += ["-k", x]
    options, args = runtests.getoptionparser().parse_args(opts)
    runtests.setup_python(options)
    pre = _Log(os.path.join(a.out, f"rank-env{_rank_from_env()}.log"))
    pre.line("init")  # a rank that dies in MPI_Init leaves only this
    runtests.import_package(options, "mpi4py")
    from mpi4py import MPI

    rank = MPI.COMM_WORLD.Get_rank()
    log = _Log(os.path.join(a.out, f"rank-{rank}.log"))
    details = open(os.path.join(a.out, f"rank-{rank}.details"), "a", buffering=1)
    log.line("mpi", MPI.Get_library_version().splitlines()[0].strip(), f"size={MPI.COMM_WORLD.Get_size()}")
    log.line("preload", _bobcat_loaded())
    log.line("thread", {MPI.THREAD_SINGLE: "single", MPI.THREAD_FUNNELED: "funneled",
                        MPI.THREAD_SERIALIZED: "serialized",
                        MPI.THREAD_MULTIPLE: "multiple"}.get(MPI.Query_thread(), "?"))
    pre.line("initialized", str(rank))

    skip = _read_skip(a)
    tests = [t for t in _flatten(runtests.load_tests(options, args)) if t.id() not in skip]
    return _run(a, tests, log, details)


def _read_skip(a) -> set:
    if a.skip_file and os.path.exists(a.skip_file):
        with open(a.skip_file) as f:
            return {ln.strip() for ln in f if ln.strip()}
    return set()


def _run_shmem4py(a) -> int:
    """shmem4py's suite has no runner of its own: unittest discovery, modules by regex."""
    import re
    sys.path[:0] = a.libdir
    pre = _Log(os.path.join(a.out, f"rank-env{_rank_from_env()}.log"))
    pre.line("init")
    import ctypes
    for lib in a.preload:
        ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
    from shmem4py import shmem  # initializes OpenSHMEM

    rank = shmem.my_pe()
    log = _Log(os.path.join(a.out, f"rank-{rank}.log"))
    details = open(os.path.join(a.out, f"rank-{rank}.details"), "a", buffering=1)
    log.line("mpi", str(shmem.info_get_name()), f"size={shmem.n_pes()}")
    log.line("preload", _bobcat_loaded())
    pre.line("initialized", str(rank))
    skip = _read_skip(a)
    suite = unittest.TestLoader().discover(a.testdir, pattern="test_*.py", top_level_dir=a.testdir)
    keep = []
    for t in _flatten(suite):
        mod = t.id().split(".")[0]
        if any(re.search(x, mod) for x in a.exclude):
            continue
        if a.include and not any(re.search(x, mod) for x in a.include):
            continue
        if t.id() not in skip:
            keep.append(t)
    return _run(a, keep, log, details)


def _run(a, tests, log, details) -> int:
    import faulthandler
    # A fatal signal writes "Fatal Python error: ..." into this rank's log: the harness then knows
    # which rank died, and in which test (its last `start`), not just which test some rank left open.
    faulthandler.enable(file=log.f, all_threads=False)
    result = _Result(log, details)

    def watchdog():
        while True:
            time.sleep(1.0)
            cur = result.current
            if cur is not None and time.monotonic() - result.started_at > a.test_timeout:
                log.line("hang", cur)
                os._exit(3)

    threading.Thread(target=watchdog, daemon=True).start()
    unittest.TestSuite(tests).run(result)  # a suite, so class and module fixtures run too
    log.line("done", str(len(tests)))
    details.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
