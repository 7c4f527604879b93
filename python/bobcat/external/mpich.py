"""External conformance: MPICH's own test suite (test/mpi) run bare and under yod, per MPI.

The reviewers of our users run MPICH's `test/mpi` against bobcat, so we run it first. For each MPI
(Debian's Open MPI 4.1 and MPICH 4.0) this module

1. gets the suite from Debian's mpich source package (`apt-get source --download-only`, with a
   private sources list and lists directory: the system's apt configuration is not touched), cached
   in build/external/dl; BOBCAT_EXTERNAL_MPICH_SRC names a local tarball or directory instead;
2. configures it with that MPI's mpicc and mpifort (C and Fortran, MPI_THREAD_MULTIPLE; no C++,
   ROMIO, spawn) into
   build/external/mpich-tests-<mpi> and builds, per directory, only the programs its testlists name;
   a program that does not compile (MPICH-only tests against Open MPI) is `build-failed`;
3. runs every testlist entry one MPI job at a time: bare (`mpirun.openmpi` / `mpiexec.mpich`), under
   yod on one node (`yod`) and on two simulated nodes (`sim`), optionally with BOBCAT_MPI=off (the
   control). A test passes the way MPICH's runtests decides: exit 0, a " No Errors" line, and no
   other output;
4. reports every test that fails under yod but passes bare (build/external/mpich-report.md and
   mpich-results.json, with the failing output's tail).

Bare results are cached per test (they do not depend on bobcat). With --lock (default
/tmp/bobcat-heavy.lock, when it exists) the build and the runs hold that lock in chunks of at most
--lock-hold seconds, so other users of a shared node get their turn.
Exit status: 0 no regression, 1 regressions found, 2 the suite could not be had or built.
The testlists and the pass/fail rule are in mpich_tests.py.

    python -m bobcat.external.mpich --mpi openmpi --dirs pt2pt,datatype --configs yod
"""
from __future__ import annotations

import argparse
import contextlib
import fcntl
import glob
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time

from .. import paths
from .harness import use_env
from .mpich_tests import (BAD, CONFIGURE_COMMON, DEFAULT_TIMEOUT, FAIL, FFLAGS, HEAP_EXHAUSTED, MAX_NP, MPIS,
                          NOT_RUN, PASS, TIMEOUT, _retry_heap, classify, command, layer_states, read_entries,
                          skip_reason, tail)

MPICH_VERSION = "4.0.2"
# Bump when a change to the harness changes what a bare run records (the cache key).
BASELINE_REV = 1
# errors/coll: the collectives' error checks (aliased buffers, mismatched counts), which a layer that
# takes calls over must not lose.
# threads/*: MPI_THREAD_MULTIPLE (the layer stays on at that level); f77, f90, f08: the three Fortran
# bindings (mpif.h, `use mpi`, `use mpi_f08`), whose entry points the layer defines too.
DIRS = (["pt2pt", "datatype", "comm", "coll", "rma", "errors/coll", "threads/pt2pt", "threads/comm", "threads/coll"]
        + [f"{lang}/{d}" for lang in ("f77", "f90", "f08") for d in ("pt2pt", "coll", "datatype", "comm")])
# testlist: MPI-standard tests; testlist.dtp: the generated datatype-pool sweeps (pt2pt, coll);
# testlist.cvar (MPICH's per-algorithm CVAR runs) only with --lists.
LISTS = ["testlist", "testlist.dtp"]
CONFIGS = ["yod", "sim"]



class Unavailable(RuntimeError):
    """The suite could not be had or built (exit 2)."""


def _say(msg: str) -> None:
    print(f"external-mpich: {msg}", file=sys.stderr, flush=True)


def default_work() -> str:
    return os.path.join(str(paths.repo_root()), "build", "external")


# ---- the heavy-work lock ------------------------------------------------------------------------

class Lock:
    """flock on a shared file, held in chunks: `turn()` releases and re-takes it once the current
    hold is older than `hold` seconds, so a long run lets others in between tests."""

    def __init__(self, path: str | None, hold: float):
        self.path, self.hold, self.fd, self.since = path, hold, None, 0.0

    def take(self) -> None:
        if self.path and self.fd is None:
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
            fcntl.flock(self.fd, fcntl.LOCK_EX)
            self.since = time.monotonic()

    def release(self) -> None:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None

    def turn(self) -> None:
        if self.fd is not None and time.monotonic() - self.since > self.hold:
            self.release()
            time.sleep(0.5)  # long enough for a waiter's flock to win
        self.take()

    @contextlib.contextmanager
    def held(self):
        self.take()
        try:
            yield
        finally:
            self.release()


# ---- getting the suite --------------------------------------------------------------------------

def _apt_source(dl: str) -> None:
    """`apt-get source --download-only mpich` from Debian bookworm into dl, with a private sources
    list, lists and cache directory: nothing of the system's apt state is read or written."""
    key = "/usr/share/keyrings/debian-archive-keyring.gpg"
    if not os.path.exists(key):
        raise Unavailable(f"{key} missing (package debian-archive-keyring): cannot verify the "
                          "source package; or set BOBCAT_EXTERNAL_MPICH_SRC to a local copy")
    tmp = tempfile.mkdtemp(prefix="bobcat-apt-")
    try:
        src_list = os.path.join(tmp, "src.list")
        with open(src_list, "w") as f:
            f.write(f"deb-src [signed-by={key}] http://deb.debian.org/debian bookworm main\n")
        for d in ("lists/partial", "cache/archives/partial"):
            os.makedirs(os.path.join(tmp, d))
        opts = ["-o", f"Dir::Etc::SourceList={src_list}", "-o", "Dir::Etc::SourceParts=/dev/null",
                "-o", f"Dir::State::Lists={tmp}/lists", "-o", f"Dir::Cache={tmp}/cache",
                "-o", "Debug::NoLocking=1", "-o", "APT::Sandbox::User=root", "-q"]
        for step in (["update"], ["source", "--download-only", "mpich"]):
            try:
                p = subprocess.run(["apt-get", *opts, *step], cwd=dl, capture_output=True,
                                   text=True, timeout=900)
            except (OSError, subprocess.TimeoutExpired) as e:
                raise Unavailable(f"apt-get {step[0]} failed ({e}); or set "
                                  "BOBCAT_EXTERNAL_MPICH_SRC to a local copy")
            if p.returncode != 0:
                tail = " | ".join((p.stderr or p.stdout).strip().splitlines()[-3:])
                raise Unavailable(f"apt-get {step[0]} (Debian bookworm's mpich source) failed: "
                                  f"{tail}; or set BOBCAT_EXTERNAL_MPICH_SRC to a local copy")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def fetch(work: str) -> str:
    """The directory holding MPICH's test/mpi sources (extracted once into <work>)."""
    local = os.environ.get("BOBCAT_EXTERNAL_MPICH_SRC")
    if local:
        for cand in (local, os.path.join(local, "test", "mpi")):
            if os.path.isfile(os.path.join(cand, "configure")) and \
                    os.path.isdir(os.path.join(cand, "pt2pt")):
                return os.path.abspath(cand)
        if not os.path.isfile(local):
            raise Unavailable(f"BOBCAT_EXTERNAL_MPICH_SRC={local} is neither MPICH's source tree, "
                              "its test/mpi, nor a tarball")
        tarball = local
    else:
        dl = os.path.join(work, "dl")
        os.makedirs(dl, exist_ok=True)
        found = glob.glob(os.path.join(dl, f"mpich_{MPICH_VERSION}.orig.tar.*"))
        if not found:
            _say(f"downloading Debian bookworm's mpich {MPICH_VERSION} source package into {dl}")
            _apt_source(dl)
            found = glob.glob(os.path.join(dl, f"mpich_{MPICH_VERSION}.orig.tar.*"))
            if not found:
                raise Unavailable(f"apt-get source left no mpich_{MPICH_VERSION}.orig.tar.* "
                                  f"in {dl}")
        tarball = found[0]
    dest = os.path.join(work, f"mpich-{MPICH_VERSION}-testsuite")
    stamp = os.path.join(dest, ".bobcat-extracted")
    if os.path.isfile(stamp) and open(stamp).read() == os.path.abspath(tarball):
        return dest
    _say(f"extracting test/mpi from {tarball}")
    shutil.rmtree(dest, ignore_errors=True)
    tmp = dest + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    try:
        with tarfile.open(tarball) as tf:
            members = [m for m in tf.getmembers() if re.match(r"[^/]+/test/mpi/", m.name)]
            if not members:
                raise Unavailable(f"{tarball} has no */test/mpi")
            kw = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
            tf.extractall(tmp, members=members, **kw)
    except (tarfile.TarError, OSError) as e:
        raise Unavailable(f"cannot extract {tarball}: {e}")
    top = members[0].name.split("/")[0]
    os.rename(os.path.join(tmp, top, "test", "mpi"), dest)
    shutil.rmtree(tmp, ignore_errors=True)
    with open(stamp, "w") as f:
        f.write(os.path.abspath(tarball))
    return dest


# ---- building -----------------------------------------------------------------------------------

def _make(args: list[str], cwd: str, log: str, timeout: int = 1800) -> int:
    with open(log, "a") as f:
        f.write(f"\n$ {' '.join(args)}\n")
        f.flush()
        try:
            return subprocess.run(args, cwd=cwd, stdout=f, stderr=subprocess.STDOUT,
                                  timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            return 124


def build(work: str, mpi: str, src: str, dirs: list[str], lists: list[str], lock: Lock
          ) -> tuple[str, set[str]]:
    """Configure (once) and build the programs the testlists of `dirs` name; returns the build
    directory and the names of the programs that did not build, per `dir/name`."""
    m = MPIS[mpi]
    mpicc = shutil.which(m["mpicc"])
    if not mpicc:
        raise Unavailable(f"{m['mpicc']} not found: install the MPI (scripts/setup.sh)")
    bdir = os.path.join(work, f"mpich-tests-{mpi}")
    fort = shutil.which(m.get("mpifort") or "") or ""
    conf = [os.path.join(src, "configure"), *CONFIGURE_COMMON,
            "--enable-fortran=all" if fort else "--disable-fortran", *m["configure"]]
    env = dict(os.environ, MPICC=mpicc, MPIEXEC=shutil.which(m["launcher"]) or m["launcher"],
               CFLAGS="-O1 -g0", CPPFLAGS=m["cppflags"])
    if fort:
        env.update(MPIF77=fort, MPIFC=fort, FFLAGS=FFLAGS, FCFLAGS=FFLAGS)
    key = json.dumps([conf, mpicc, fort, env["CFLAGS"], env["CPPFLAGS"], FFLAGS])
    stamp = os.path.join(bdir, ".bobcat-configured")
    log = os.path.join(work, f"mpich-build-{mpi}.log")
    if not (os.path.isfile(stamp) and open(stamp).read() == key):
        shutil.rmtree(bdir, ignore_errors=True)
        os.makedirs(bdir)
        open(log, "w").close()
        _say(f"configuring MPICH's test suite against {mpi} in {bdir} (1-3 min)")
        with lock.held():
            with open(log, "a") as f:
                p = subprocess.run(conf, cwd=bdir, env=env, stdout=f, stderr=subprocess.STDOUT)
        if p.returncode != 0:
            raise Unavailable(f"configuring MPICH's test suite against {mpi} failed: see {log}")
        with open(stamp, "w") as f:
            f.write(key)
    # The support libraries every directory links: util (mtest) and dtpools.
    for sub in ("util", "dtpools"):
        if not os.path.isfile(os.path.join(bdir, sub, ".bobcat-built")):
            _say(f"{mpi}: building {sub}")
            with lock.held():
                rc = _make(["make", "-j2", "-C", sub], bdir, log)
            if rc != 0:
                raise Unavailable(f"building the suite's {sub} against {mpi} failed: see {log}")
            open(os.path.join(bdir, sub, ".bobcat-built"), "w").close()
    # f08's test library: configured outside MPICH's tree, the suite leaves its one object out
    # (f08dir="#"), so every f08 program failed to link (mtest_init_ undefined). Made here.
    f08 = fort and any(d.startswith("f08/") for d in dirs)
    if f08 and not os.path.isfile(os.path.join(bdir, "util", "mtest_f08.lo")):
        for old in ("libmtest_f08.la", ".libs/libmtest_f08.a"):  # (the empty one: newer than its no objects)
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(bdir, "util", old))
        with lock.held():
            rc = _make(["make", "-C", "util", "libmtest_f08.la", "am_libmtest_f08_la_OBJECTS=mtest_f08.lo"], bdir, log)
        if rc != 0:
            raise Unavailable(f"building the suite's Fortran 2008 test library against {mpi} failed: see {log}")
    failed = set()
    for d in dirs:
        progs = sorted({e["name"] for e in read_entries(bdir, d, lists, src)})
        dstamp = os.path.join(bdir, d, ".bobcat-built")
        want = json.dumps(progs)
        if not (os.path.isfile(dstamp) and open(dstamp).read() == want):
            _say(f"{mpi}: building {len(progs)} programs of {d}")
            t0 = time.monotonic()
            with lock.held():
                _make(["make", "-k", "-j2", "-C", d, *progs], bdir, log)
            _say(f"{mpi}: {d} built in {time.monotonic() - t0:.0f} s")
            with open(dstamp, "w") as f:
                f.write(want)
        failed |= {f"{d}/{p}" for p in progs if not os.access(os.path.join(bdir, d, p), os.X_OK)}
    return bdir, failed


# ---- running ------------------------------------------------------------------------------------

def stage_stamp() -> str:
    """When the libbobcat under test was built (the newest lib/libbobcat*.so): the stage may be
    rebuilt while a long run goes on, and a regression list should say which build it is about."""
    libs = glob.glob(os.path.join(paths.home_dir(), "lib", "libbobcat*.so"))
    if not libs:
        return "?"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(max(os.path.getmtime(x) for x in libs)))


def _session(sid: int) -> list[int]:
    """The processes of one session. mpirun puts each rank in a process group of its own, so
    killing the launcher's group would leave the ranks of a job it gave up on behind."""
    pids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = open(f"/proc/{d}/stat").read()
            except OSError:
                continue
            # fields after the ")" closing the command name: state ppid pgrp session ...
            if int(stat.rsplit(")", 1)[1].split()[3]) == sid:
                pids.append(int(d))
    return pids


def _kill_session(sid: int, sig: int) -> None:
    for pid in _session(sid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def _run_one(cmd: list[str], cwd: str, env: dict, timeout: int, out_path: str
             ) -> tuple[int | None, bool, str, str, float]:
    """Run one job; (exit status, timed out, stdout, stderr, seconds). The two streams go to
    separate files (<out_path> and its .err): ranks and launchers write them concurrently, and one
    rank's stderr line landed inside another's " No Errors" line when they shared a file."""
    t0 = time.monotonic()
    with open(out_path, "w") as f, open(out_path[:-4] + ".err", "w") as ferr:
        p = subprocess.Popen(cmd, cwd=cwd, stdout=f, stderr=ferr, env=env,
                             stdin=subprocess.DEVNULL, start_new_session=True)
        timed_out, rc = False, None
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            # A job still running (out of time, or the harness is being stopped) is ended as yod and
            # both launchers end one on TERM, cleaning up after it; a SIGKILL first, when the
            # harness was stopped, left Open MPI's vader segments in /dev/shm and yod's directories
            # in /tmp. Whatever is left in the launcher's session then goes.
            if p.poll() is None:
                _kill_session(p.pid, signal.SIGTERM)
                with contextlib.suppress(subprocess.TimeoutExpired, KeyboardInterrupt):
                    p.wait(timeout=15)
            _kill_session(p.pid, signal.SIGKILL)
            p.wait()
    return (rc, timed_out, open(out_path, errors="replace").read(),
            open(out_path[:-4] + ".err", errors="replace").read(), time.monotonic() - t0)


def run_entries(work: str, bdir: str, mpi: str, cfg: str, entries: list[dict], lock: Lock,
                off: bool = False, default_timeout: int = DEFAULT_TIMEOUT, tag: str = "",
                heap: str = "1G", big_heap: str = "", on_result=None) -> dict[str, dict]:
    """Run each (runnable) entry once in one configuration; {id: result}. on_result(id, result), if
    given, is called after each test (the bare cache keeps what a stopped run finished)."""
    name = f"{mpi}-{cfg}" + ("-off" if off else "")
    root = os.path.join(work, "mpich-runs", tag, name) if tag else \
        os.path.join(work, "mpich-runs", name)
    # The harness's own settings are no libbobcat knobs (it warns about unknown BOBCAT_* ones).
    env = {k: v for k, v in os.environ.items() if not k.startswith("BOBCAT_EXTERNAL")}
    env["BOBCAT_HOME"] = paths.home_dir()
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    env.pop("BOBCAT_MPI", None)
    if off:
        env["BOBCAT_MPI"] = "off"
    # Under yod each rank says at MPI_Finalize whether the MPI layer was on (a test that passes with
    # it off or unused, a thread level it leaves to the real MPI, did not test it), in yod's --stats
    # file: printed statistics (BOBCAT_STATS) would be part of the test's output, and Open MPI's
    # forwarding cuts a rank's lines past 4 KiB and interleaves ranks, so a fragment of one failed
    # a passing test as unexpected output.
    results = {}
    try:
        for e in entries:
            lock.turn()
            tlimit = e["timeLimit"] or default_timeout
            # MPIEXEC_TIMEOUT, as runtests sets it, bounds MPICH's hydra itself.
            tenv = dict(env, MPIEXEC_TIMEOUT=str(tlimit))
            for kv in e["env"]:
                if "=" in kv:
                    k, v = kv.split("=", 1)
                    tenv[k] = v
            d = os.path.join(root, e["dir"])
            os.makedirs(d, exist_ok=True)
            out_path = os.path.join(d, re.sub(r"[^\w.=,+-]+", "_", e["id"].split("/", 1)[1])[:150]
                                    + ".out")
            prog = [os.path.join(bdir, e["dir"], e["name"]), *e["args"]]
            heaps = [heap] + ([big_heap] if big_heap and cfg != "bare" else [])
            for h in heaps:
                stats = out_path[:-len(".out")] + ".stats.json" if cfg != "bare" else None
                with contextlib.suppress(FileNotFoundError):  # not a previous run's account
                    if stats:
                        os.unlink(stats)
                cmd = command(mpi, cfg, e["np"], prog, tlimit, h, stats)
                rc, timed_out, out, err, secs = _run_one(cmd, os.path.join(bdir, e["dir"]),
                                                         tenv, tlimit + 30, out_path)
                output = out.rstrip("\n") + "\n" + err if out.strip() else err
                if cfg != "bare" and rc == 124:
                    timed_out = True  # yod's -tlimit ended the job
                outcome, why = classify(rc, output, timed_out, e["resultTest"])
                # yod's heap is fixed where the bare run's malloc is not: a test that allocates
                # more than it holds is run once more with a bigger one, if the node has room.
                if outcome == PASS or HEAP_EXHAUSTED not in output or h != heap:
                    break
                again = _retry_heap(heap, big_heap, e["np"])
                if again is None:
                    why = (f"{why}; {HEAP_EXHAUSTED} at --heap {h}, "
                           + (f"no room for {big_heap}" if big_heap else "no retry (--big-heap '')"))
                    break
                heaps[1] = again
                _say(f"{name}: {e['id']}: {HEAP_EXHAUSTED} at --heap {h}; again at {again}")
            if outcome != PASS and HEAP_EXHAUSTED in output:
                why = f"{why}; {HEAP_EXHAUSTED} (yod --heap {h})"
            layer = layer_states(stats, output) if cfg != "bare" else ""
            results[e["id"]] = {"outcome": outcome, "why": why, "rc": rc, "heap": h,
                                "layer": layer, "stage": stage_stamp() if cfg != "bare" else "",
                                "seconds": round(secs, 1), "cmd": " ".join(cmd),
                                "env": e["env"], "out": out_path, "tail": tail(output)}
            if on_result:
                on_result(e["id"], results[e["id"]])
            if outcome != PASS:
                _say(f"{name}: {e['id']}: {outcome} ({why})")
    finally:
        lock.release()
    return results


# ---- baselines, comparison, report --------------------------------------------------------------

def _baseline_path(work: str, mpi: str, bdir: str) -> str:
    stamp = open(os.path.join(bdir, ".bobcat-configured")).read()
    key = hashlib.sha256(json.dumps([MPICH_VERSION, mpi, stamp, BASELINE_REV]).encode()
                         ).hexdigest()[:16]
    return os.path.join(work, "mpich-baseline", f"{mpi}-bare-{key}.json")


def baseline(work, bdir, mpi, entries, lock, args) -> dict[str, dict]:
    """Bare results for `entries`, from the per-test cache where it has them."""
    path = _baseline_path(work, mpi, bdir)
    cached = {} if args.fresh_baseline or not os.path.exists(path) else json.load(open(path))
    todo = [e for e in entries if e["id"] not in cached]
    if todo:
        _say(f"{mpi} bare: running {len(todo)} test(s) ({len(entries) - len(todo)} cached)")
        os.makedirs(os.path.dirname(path), exist_ok=True)

        def keep(tid: str, result: dict) -> None:
            # after every test, so a long bare pass that is stopped keeps what it finished
            cached[tid] = result
            with open(path + ".tmp", "w") as f:
                json.dump(cached, f)
            os.replace(path + ".tmp", path)

        run_entries(work, bdir, mpi, "bare", todo, lock, default_timeout=args.timeout, tag=args.tag,
                    on_result=keep)
    return {e["id"]: cached[e["id"]] for e in entries}


def compare(mpi: str, cfg: str, run: dict, base: dict, control: dict | None) -> dict:
    regressions, also_bare, only_yod = [], [], []
    for tid, res in sorted(run.items()):
        b = base.get(tid, {}).get("outcome")
        if res["outcome"] in BAD:
            if b in BAD:
                also_bare.append(tid)
                continue
            entry = {"test": tid, "mpi": mpi, "config": cfg, "outcome": res["outcome"],
                     "why": res["why"], "bare": b or "not run", "cmd": res["cmd"],
                     "env": res["env"], "out": res["out"], "tail": res["tail"]}
            if control is not None:
                co = control.get(tid, {}).get("outcome", "not run")
                entry["control"] = co
                entry["blame"] = ("libbobcat without the MPI layer (fails with BOBCAT_MPI=off "
                                  "too)" if co in BAD else "MPI layer")
            regressions.append(entry)
        elif b in BAD:
            only_yod.append(tid)
    return {"mpi": mpi, "config": cfg, "regressions": regressions,
            "baseline_failures_subtracted": also_bare, "pass_only_under_yod": only_yod}


def _counts(res: dict) -> str:
    n: dict[str, int] = {}
    for r in res.values():
        n[r["outcome"]] = n.get(r["outcome"], 0) + 1
    return ", ".join(f"{k} {n[k]}" for k in (PASS, FAIL, TIMEOUT, *NOT_RUN) if k in n)


def report_markdown(runs: list[dict], comps: list[dict], heap: str = "1G") -> str:
    lines = [f"# External conformance: MPICH {MPICH_VERSION} test/mpi, bare vs yod", "",
             "| run | tests by outcome | seconds | libbobcat built (UTC) |", "|---|---|---|---|"]
    for r in runs:
        built = sorted({x.get("stage") for x in r["results"].values() if x.get("stage")})
        lines.append(f"| {r['name']} | {_counts(r['results'])} | {r['seconds']} | "
                     f"{', '.join(built)} |")
    for r in runs:
        if r["config"] == "bare":
            by_why: dict[str, list[str]] = {}
            for t, x in sorted(r["results"].items()):
                if x["outcome"] in NOT_RUN:
                    by_why.setdefault(f"{x['outcome']}: {x['why']}", []).append(f"`{t}`")
            if by_why:
                lines += ["", f"Not run for {r['mpi']}:", ""]
                lines += [f"* {why}: " + ", ".join(ts) for why, ts in sorted(by_why.items())]
    for r in runs:
        big = sorted(t for t, x in r["results"].items() if x.get("heap") not in (None, heap))
        if big and r["config"] != "bare":
            lines += ["", f"{r['name']}: exhausted `--heap {heap}`, run again with a bigger heap: "
                      + ", ".join(f"`{t}` ({r['results'][t]['heap']}: "
                                  f"{r['results'][t]['outcome']})" for t in big)]
    for r in runs:
        if r["config"] != "bare" and not r["off"]:
            nolayer = sorted(t for t, x in r["results"].items()
                             if x["outcome"] == PASS and x.get("layer", "on") != "on")
            if nolayer:
                lines += ["", f"{r['name']}: passed, but libbobcat's MPI layer was not on in every "
                          "rank (yod --stats: layer=), so these did not test it: "
                          + ", ".join(f"`{t}` ({r['results'][t]['layer'] or 'no stats'})"
                                      for t in nolayer)]
    for c in comps:
        regs = c["regressions"]
        off = " (BOBCAT_MPI=off)" if c.get("off") else ""
        lines += ["", f"## {c['mpi']} {c['config']}{off} against bare: {len(regs)} regression(s)",
                  ""]
        if c["baseline_failures_subtracted"]:
            lines.append("Failing bare too (subtracted): "
                         + ", ".join(f"`{t}`" for t in c["baseline_failures_subtracted"]))
        if c["pass_only_under_yod"]:
            lines.append("Pass only under yod: "
                         + ", ".join(f"`{t}`" for t in c["pass_only_under_yod"]))
        for e in regs:
            ctl = f"; BOBCAT_MPI=off: {e['control']} → {e['blame']}" if "control" in e else ""
            lines.append(f"* `{e['test']}` {e['outcome']}: {e['why']} (bare: {e['bare']}){ctl}")
            t = tail(e["tail"], 6)
            if t:
                lines += ["  ```", *("  " + ln for ln in t.splitlines()), "  ```"]
    return "\n".join(lines) + "\n"


# ---- main ---------------------------------------------------------------------------------------

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bobcat.external.mpich",
                                 description="Run MPICH's test/mpi bare and under yod; report the "
                                             "tests that fail only under yod.")
    ap.add_argument("--mpi", default=",".join(MPIS),
                    help=f"comma list of: {', '.join(MPIS)} (default: all this bobcat has a layer for)")
    ap.add_argument("--dirs", default=",".join(DIRS), help="comma list of test/mpi directories")
    ap.add_argument("--configs", default=",".join(CONFIGS),
                    help="comma list of: yod (yod -VN<np> -np <np>, one node), sim (yod "
                         "--simulate-nodes -VN2 -np <np>: two ranks per simulated node)")
    ap.add_argument("--lists", default=",".join(LISTS),
                    help="testlists per directory (testlist.cvar: MPICH's per-algorithm runs)")
    ap.add_argument("--include", action="append", default=[],
                    help="regex on the test id (`dir/program np args`) to keep")
    ap.add_argument("--exclude", action="append", default=[], help="regex on the test id to drop")
    ap.add_argument("--control", action="store_true",
                    help="also run each yod configuration with BOBCAT_MPI=off")
    ap.add_argument("--max-np", type=int, default=MAX_NP, help="run entries of up to this many ranks "
                    f"(default {MAX_NP}: the 2-core VM; more run oversubscribed, slowly)")
    ap.add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT,
                    help="seconds per test without a timeLimit in its testlist")
    ap.add_argument("--heap", default="1G",
                    help="yod --heap per rank (1G: sendself, manylmt, huge_* allocate 256-320 MiB "
                         "buffers, more than a 256M heap holds)")
    ap.add_argument("--big-heap", default="3G",
                    help="a test that exhausts --heap is run once more with this heap per rank "
                         "when the ranks' heaps fit in half of MemAvailable ('' for never)")
    ap.add_argument("--fresh-baseline", action="store_true", help="ignore cached bare results")
    ap.add_argument("--lock", default="/tmp/bobcat-heavy.lock" if os.path.exists(
                        "/tmp/bobcat-heavy.lock") else "",
                    help="flock file the build and the runs hold in turns ('' for none)")
    ap.add_argument("--lock-hold", type=float, default=240,
                    help="seconds the lock is held before it is let go between two tests")
    ap.add_argument("--work", default=default_work(), help="cache and results (build/external)")
    ap.add_argument("--tag", default="", help="name of this run: mpich-report-<tag>.md")
    ap.add_argument("--json", help="results file (default <work>/mpich-results[-<tag>].json)")
    args = ap.parse_args(argv)

    mpis = [m for m in args.mpi.split(",") if m]
    cfgs = [c for c in args.configs.split(",") if c]
    dirs = [d for d in args.dirs.split(",") if d]
    lists = [x for x in args.lists.split(",") if x]
    for m in mpis:
        if m not in MPIS:
            ap.error(f"unknown MPI {m!r}: {', '.join(MPIS)}")
    use_env(mpis, MPIS)
    for c in cfgs:
        if c not in CONFIGS:
            ap.error(f"unknown configuration {c!r}: yod or sim")
    yod = os.path.join(paths.home_dir(), "bin", "yod")
    if not os.access(yod, os.X_OK):
        print(f"external-mpich: {yod} not found: run `make build` first (or set BOBCAT_HOME)",
              file=sys.stderr)
        return 2
    lock = Lock(args.lock or None, args.lock_hold)
    os.makedirs(args.work, exist_ok=True)
    try:
        src = fetch(args.work)
        for d in dirs:
            if not os.path.isfile(os.path.join(src, d, "testlist.in")) and \
                    not os.path.isfile(os.path.join(src, d, "testlist")):
                raise Unavailable(f"{src} has no directory {d} with a testlist")
        built = {m: build(args.work, m, src, dirs, lists, lock) for m in mpis}
    except Unavailable as e:
        print(f"external-mpich: {e}", file=sys.stderr)
        return 2

    def keep(e):
        return (not args.include or any(re.search(x, e["id"]) for x in args.include)) and \
            not any(re.search(x, e["id"]) for x in args.exclude)

    runs, comps = [], []
    # SIGTERM (make, a CI runner) ends the harness like ^C: the running job's session is killed.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    for m in mpis:
        bdir, failed = built[m]
        entries = [e for d in dirs for e in read_entries(bdir, d, lists, src) if keep(e)]
        not_run, runnable = {}, []
        for e in entries:
            why = skip_reason(e, m, args.max_np)
            if why:
                not_run[e["id"]] = {"outcome": "skipped", "why": why}
            elif f"{e['dir']}/{e['name']}" in failed:
                not_run[e["id"]] = {"outcome": "build-failed",
                                    "why": f"did not compile against {m} (see "
                                           f"mpich-build-{m}.log)"}
            else:
                runnable.append(e)
        # One directory at a time through every configuration: a first answer for pt2pt comes
        # before datatype's runs start.
        per_cfg: dict[str, dict] = {}
        secs: dict[str, float] = {}
        for d in dirs:
            de = [e for e in runnable if e["dir"] == d]
            if not de:
                continue
            t0 = time.monotonic()
            base = baseline(args.work, bdir, m, de, lock, args)
            per_cfg.setdefault("bare", {}).update(base)
            secs["bare"] = secs.get("bare", 0) + time.monotonic() - t0
            for c in cfgs:
                for off in ([False, True] if args.control else [False]):
                    name = c + ("-off" if off else "")
                    # One rank has no nodes to simulate: sim runs it as yod, the same command,
                    # so a yod result of this invocation stands for it.
                    yod_res = per_cfg.get("yod" + ("-off" if off else ""), {}) \
                        if c == "sim" else {}
                    same = {e["id"]: yod_res[e["id"]] for e in de
                            if e["np"] == 1 and e["id"] in yod_res}
                    todo = [e for e in de if e["id"] not in same]
                    _say(f"{m} {name}: {d}: running {len(todo)} test(s) under yod"
                         + (f" ({len(same)} one-rank results from yod)" if same else ""))
                    t0 = time.monotonic()
                    res = dict(same, **run_entries(args.work, bdir, m, c, todo, lock, off=off,
                                                   default_timeout=args.timeout, tag=args.tag,
                                                   heap=args.heap, big_heap=args.big_heap))
                    per_cfg.setdefault(name, {}).update(res)
                    secs[name] = secs.get(name, 0) + time.monotonic() - t0
                    if not off:
                        part = compare(m, c, res, base, None)
                        _say(f"{m} {c}: {d}: {len(part['regressions'])} regression(s): "
                             + ", ".join(e["test"] for e in part["regressions"]))
        for name, res in per_cfg.items():
            cfg = name.replace("-off", "")
            full = dict(res, **not_run) if cfg == "bare" else res
            runs.append({"name": f"{m}-{name}", "mpi": m, "config": cfg, "off": name != cfg,
                         "seconds": round(secs.get(name, 0), 1), "results": full})
        for c in cfgs:
            if c in per_cfg:
                comps.append(compare(m, c, per_cfg[c], per_cfg["bare"],
                                     per_cfg.get(c + "-off") if args.control else None))
            if args.control and c + "-off" in per_cfg:
                comps.append(dict(compare(m, c, per_cfg[c + "-off"], per_cfg["bare"], None),
                                  off=True))
    md = report_markdown(runs, comps, args.heap)
    sfx = f"-{args.tag}" if args.tag else ""
    rep = os.path.join(args.work, f"mpich-report{sfx}.md")
    with open(rep, "w") as f:
        f.write(md)
    with open(args.json or os.path.join(args.work, f"mpich-results{sfx}.json"), "w") as f:
        json.dump({"mpich": MPICH_VERSION, "stage": paths.home_dir(), "runs": runs,
                   "comparisons": comps}, f, indent=1)
    print(md)
    n = sum(len(c["regressions"]) for c in comps if not c.get("off"))
    print(f"external-mpich: {n} regression(s); report {rep}")
    return 1 if n else 0


if __name__ == "__main__":
    sys.exit(main())
