"""External conformance, MPICH's test/mpi: what a test is and whether it passed, without running
anything (the pure parts the tests check on captured text). mpich.py is the command that gets,
builds and runs the suite.

A testlist line names a program, its rank count and options; the MPIs differ in what they accept
(Open MPI builds with --enable-strictmpi, so MPICH-only tests are skipped there). A test passes the
way MPICH's runtests decides: exit 0, a " No Errors" line, and no other output.
"""
from __future__ import annotations

import json
import os
import re

from .. import paths
from .harness import with_peers

MAX_NP = 4
DEFAULT_TIMEOUT = 120  # runtests' default per test when the entry has no timeLimit

MPIS = with_peers({
    # Open MPI 4.1 hides the MPI-1 functions MPI-3 removed (MPI_Type_hvector...) behind a static
    # assert unless asked; dtpools still calls them, and libmpi still has them. --enable-strictmpi
    # leaves out the MPICH extensions (MPIX_*) and the tests marked strict=FALSE.
    "openmpi": {"mpicc": "mpicc.openmpi", "mpifort": "mpifort.openmpi", "launcher": "mpirun.openmpi",
                "np_flag": "-np",
                "launcher_args": ["--oversubscribe"], "strict": True,
                "configure": ["--enable-strictmpi"], "cppflags": "-DOMPI_OMIT_MPI1_COMPAT_DECLS=0"},
    "mpich": {"mpicc": "mpicc.mpich", "mpifort": "mpifort.mpich", "launcher": "mpiexec.mpich", "np_flag": "-n",
              "launcher_args": [], "strict": False, "configure": [], "cppflags": ""},
})
# Both MPIs: C; Fortran (mpif.h, `use mpi`, `use mpi_f08`: the f77, f90 and f08 directories) when
# the MPI has an mpifort; MPI_THREAD_MULTIPLE (the threads directory); none of C++, ROMIO, spawn,
# partitioned, perf, FT (not our dirs). --disable-rma only drops rma from the suite's own SUBDIRS:
# configure still writes rma/Makefile and rma/testlist, and the programs of the directories run are
# built per directory (mpich.build()), rma's included. The Fortran language dirs are left out of
# SUBDIRS by this configure too (f08 always: it is built only inside MPICH's tree), and built the
# same way. gfortran 12 rejects mpif.h calls passing different buffer types to one routine unless
# -fallow-argument-mismatch (as MPICH's own build sets it).
CONFIGURE_COMMON = ["--disable-cxx", "--disable-romio", "--disable-spawn", "--disable-rma", "--disable-part",
                    "--disable-perftest", "--disable-ft-tests", "--enable-threads=multiple"]
FFLAGS = "-O1 -g0 -fallow-argument-mismatch"
PASS, FAIL, TIMEOUT = "pass", "fail", "timeout"
NOT_RUN = ("skipped", "build-failed")
BAD = (FAIL, TIMEOUT)

# ---- testlists ----------------------------------------------------------------------------------

def parse_testlist(text: str, directory: str = "", listname: str = "testlist") -> list[dict]:
    """The entries of one configured testlist, as runtests reads them: `prog [np [key=value...]]`,
    `#` comments, `!dir:target` build hooks ignored; tokens without `=` are ignored as runtests
    does. Each entry gets an `id` unique in the directory: `dir/program np [args] [env]`."""
    out, seen = [], {}
    for raw in text.splitlines():
        line = re.sub(r"#.*", "", raw).strip()
        if not line or line.startswith("!"):
            continue
        tok = line.split()
        e = {"dir": directory, "list": listname, "name": tok[0], "np": 1, "args": [], "env": [],
             "timeLimit": None, "xfail": None, "mem": None, "strict": None, "mpix": None,
             "resultTest": None, "line": line}
        if len(tok) > 1:
            try:
                e["np"] = int(tok[1])
            except ValueError:
                e["np"] = None  # runtests passes it on as is; we cannot plan such a run
        for t in tok[2:]:
            if "=" not in t:
                continue
            k, v = t.split("=", 1)
            if k == "arg":
                e["args"].append(v)
            elif k == "env":
                e["env"].append(v)
            elif k == "timeLimit":
                e["timeLimit"] = int(v) if v.isdigit() else None
            elif k in ("xfail", "mem", "strict", "mpix", "resultTest"):
                e[k] = v
        tid = f"{directory}/{e['name']} {e['np']}"
        if e["args"]:
            tid += " " + " ".join(e["args"])
        if e["env"]:
            tid += " [" + " ".join(e["env"]) + "]"
        seen[tid] = seen.get(tid, 0) + 1
        e["id"] = tid if seen[tid] == 1 else f"{tid} #{seen[tid]}"
        out.append(e)
    return out


def skip_reason(e: dict, mpi: str, max_np: int = MAX_NP) -> str | None:
    """Why an entry is not run here (recorded as `skipped`), or None."""
    if e["np"] is None:
        return "no numeric process count"
    if e["np"] > max_np:
        return f"needs {e['np']} ranks (> {max_np})"
    if e["mem"]:
        return f"needs {e['mem']} GB per process (mem=)"
    if e["xfail"]:
        return f"expected to fail (xfail={e['xfail']}); runtests skips these by default"
    if MPIS[mpi]["strict"] and (e["strict"] or "").lower() == "false":
        return "uses non-standard extensions (strict=FALSE); built with --enable-strictmpi"
    if MPIS[mpi]["strict"] and (e["mpix"] or "").lower() == "true":
        return "MPIX extension (mpix=true); built with --enable-strictmpi"
    return None


def read_entries(builddir: str, directory: str, lists: list[str], srcdir: str = "") -> list[dict]:
    """The entries of a directory's lists: as configure wrote them into the build tree, else (a list
    with no testlist.in, which configure does not copy: errors/coll's) the source tree's own."""
    entries = []
    for ln in lists:
        path = os.path.join(builddir, directory, ln)
        if not os.path.isfile(path) and srcdir:
            path = os.path.join(srcdir, directory, ln)
        if os.path.isfile(path):
            entries += parse_testlist(open(path).read(), directory, ln)
    # ids unique across the directory's lists too
    seen: dict[str, int] = {}
    for e in entries:
        seen[e["id"]] = seen.get(e["id"], 0) + 1
        if seen[e["id"]] > 1:
            e["id"] += f" ({e['list']})"
    return entries


# ---- pass / fail --------------------------------------------------------------------------------

# Lines the launchers and yod may add around a passing program (warnings about a busy node, Open
# MPI's help banners): runtests run by our users sees the bare launcher only, so these are not held
# against the program. Anything else beside " No Errors" fails the test, as in runtests.
_NOISE = re.compile(r"^(yod|bobcat|libbobcat)[:\[ ]|^\s*$|^-{20,}$")
_OK = re.compile(r"^\s*(No [Ee]rrors|Test Passed|.*requesting checkpoint|.*checkpoint completed)"
                 r"\s*$")


def classify(rc: int | None, output: str, timed_out: bool, result_test: str | None = None
             ) -> tuple[str, str]:
    """(pass|fail|timeout, why) the way MPICH's runtests decides: exit status 0 and a " No Errors"
    line and no unexpected output (resultTest=TestStatus: exit status only)."""
    if timed_out:
        return TIMEOUT, "time limit reached"
    lines = output.splitlines()
    if result_test == "TestStatus":
        return (PASS, "") if rc == 0 else (FAIL, f"exit status {rc}")
    no_errors = any(re.match(r"^\s*No [Ee]rrors\s*$", ln) for ln in lines)
    unexpected = [ln for ln in lines if not _OK.match(ln) and not _NOISE.match(ln)]
    if rc != 0:
        return FAIL, f"exit status {rc}"
    if not no_errors:
        return FAIL, "no ' No Errors' line"
    if unexpected and result_test != "TestStatusNoErrors":
        return FAIL, f"unexpected output: {unexpected[0][:200]}"
    return PASS, ""


def tail(output: str, n: int = 30) -> str:
    """The last n lines, after the first lines that say what went wrong (an assertion, a
    libbobcat message, the test's own error lines): a crash's backtrace would push them out."""
    # BOBCAT_STATS's per-call counts would fill the tail; its layer= line stays.
    lines = [ln for ln in output.rstrip().splitlines()
             if not ln.startswith("bobcat: stats ") or "layer=" in ln]
    if len(lines) <= n:
        return "\n".join(lines)
    first = [ln for ln in lines[:-n] if not _BORING.search(ln)][:8]
    return "\n".join(first + ["[...]"] + lines[-n:])


HEAP_EXHAUSTED = "heap segment exhausted"
LAYER_LINE = re.compile(r"^bobcat: stats rank \d+ node \d+: layer=(\S+)", re.M)
_BORING = re.compile(r"^\[[\w.-]+:\d+\] \[ ?\d+\]|unknown setting|heap on 4 KiB pages|^-+$|"
                     r"^\s*$")


# ---- heaps ------------------------------------------------------------------------------------

def _bytes(size: str) -> int:
    m = re.fullmatch(r"(\d+)([kKmMgGtT]?)", size.strip())
    if not m:
        raise ValueError(f"bad size {size!r} (e.g. 256M, 1G)")
    return int(m.group(1)) << (10 * " kmgt".index(m.group(2).lower() or " "))


def _fits(heap: str, np_: int) -> bool:
    """Whether np heaps of this size fit in half of MemAvailable (yod populates them in full)."""
    try:
        with open("/proc/meminfo") as f:
            avail = int(re.search(r"^MemAvailable:\s+(\d+) kB", f.read(), re.M).group(1)) << 10
    except (OSError, AttributeError):
        return False
    return np_ * _bytes(heap) <= avail // 2


def _retry_heap(heap: str, big_heap: str, np_: int) -> str | None:
    """The heap to run a test again with after it exhausted `heap`: big_heap if np of them fit,
    else the largest whole GiB (at least twice `heap`) that does; None if none does. (MPICH's
    datatype-pool tests allocate 1 GiB per rank at 4 ranks: 3G each does not fit half of 21 GiB,
    2G does.) '' (--big-heap ''): never."""
    if not big_heap:
        return None
    if _fits(big_heap, np_):
        return big_heap
    for g in range(_bytes(big_heap) >> 30, 0, -1):
        if (g << 30) >= 2 * _bytes(heap) and _fits(f"{g}G", np_):
            return f"{g}G"
    return None


# ---- launch commands and the layer's state -------------------------------------------------------

def command(mpi: str, cfg: str, np_: int, prog: list[str], tlimit: int, heap: str = "1G",
            stats: str | None = None) -> list[str]:
    """The launch command of one test in one configuration (bare, yod, sim); with `stats`, yod
    collects the ranks' accounts there (yod --stats)."""
    if cfg == "bare":
        m = MPIS[mpi]
        return [m["launcher"], *m["launcher_args"], m["np_flag"], str(np_), *prog]
    yod = os.path.join(paths.home_dir(), "bin", "yod")
    extra = ["--stats", stats] if stats else []
    if cfg == "sim" and np_ >= 2:
        return [yod, "--simulate-nodes", "-VN2", "-np", str(np_), "--oversubscribe",
                "--heap", heap, "-tlimit", str(tlimit), *extra, *prog]
    return [yod, f"-VN{np_}", "-np", str(np_), "--oversubscribe", "--heap", heap,
            "-tlimit", str(tlimit), *extra, *prog]


def layer_states(stats_path: str | None, output: str = "") -> str:
    """The layer= states the ranks reported ("on", "off", ...; comma-joined, sorted): from yod's
    --stats account, and from printed statistics lines if the caller's BOBCAT_STATS made some.
    '' when no rank reported one (none reached MPI_Finalize through the layer)."""
    states = set(LAYER_LINE.findall(output))
    if stats_path:
        try:
            with open(stats_path, encoding="utf-8") as f:
                acct = json.load(f)
            states |= {r["layer"] for r in acct.get("per_rank", []) if r.get("layer")}
        except (OSError, ValueError, TypeError, KeyError):
            pass
    return ",".join(sorted(states))
