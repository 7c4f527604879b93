"""External conformance, the OpenSHMEM side: shmem4py's unittest suite against bobcat's OpenSHMEM.

shmem4py (mpi4py's sibling, PyPI) has a unittest suite over the OpenSHMEM 1.5 API. It is built
with an `oshcc` through cffi: once with Debian's Open MPI oshmem (the reference, run by Open MPI's
`oshrun`) and once with bobcat's `oshcc` (run by bobcat's `oshrun`, i.e. yod). The two libraries are
different implementations, so the comparison says which tests fail only with bobcat's. Run by
`python -m bobcat.external.pysuites --suite shmem4py`; the jobs go through harness.py.
"""
from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile

from .. import paths
from .harness import RANK_DRIVER, Unavailable, libdir_of, say, compare, report_markdown, run_suite

SHMEM4PY_VERSION = "1.0.0"
SHMEM_CONFIGS = {  # name: (oshcc, oshrun argv before the program, ranks, runs under yod)
    "oshmem2": ("/usr/bin/oshcc", ["/usr/bin/oshrun", "-np", "2"], 2, False),
    # python3 is no MPI program to yod: --mpi names the MPI bobcat's oshcc builds for by default.
    "osh2": ("bobcat", ["-np", "2", "--mpi", "openmpi"], 2, True),
    "osh4sim": ("bobcat", ["-np", "4", "-N", "2", "--simulate-nodes", "--oversubscribe", "--mpi",
                           "openmpi"], 4, True),
}


def _fetch_pkg(work: str, name: str, version: str) -> str:
    dl = os.path.join(work, "dl")
    want = os.path.join(dl, f"{name}-{version}.tar.gz")
    if os.path.isfile(want):
        return want
    os.makedirs(dl, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-binary", name, "--no-deps",
           f"{name}=={version}", "-d", dl]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if p.returncode != 0 or not os.path.isfile(want):
        raise Unavailable(f"pip could not download the {name} sdist: "
                          + " | ".join((p.stderr or p.stdout).strip().splitlines()[-3:]))
    return want


def _pylib(work: str) -> str:
    """cffi, which shmem4py builds and loads with, and the NumPy 1.x its 1.0.0 tests were written for
    (under NumPy 2 a fifth of them fail on `copy=False` and uint8 overflow, whatever the library), in a
    directory of its own that the ranks put before the venv's site-packages."""
    lib = os.path.join(work, "pylib")
    if not os.path.isfile(os.path.join(lib, ".bobcat-pylib-2")):
        p = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--upgrade", "--target",
                            lib, "cffi", "numpy<2"],
                           capture_output=True, text=True, timeout=900)
        if p.returncode != 0:
            raise Unavailable("pip could not install cffi and numpy<2: " + p.stderr.strip()[-300:])
        open(os.path.join(lib, ".bobcat-pylib-2"), "w").close()
    return lib


def build_shmem4py(work: str, oshcc: str) -> tuple[str, str]:
    sdist = _fetch_pkg(work, "shmem4py", SHMEM4PY_VERSION)
    pylib = _pylib(work)
    tagname = hashlib.sha256(oshcc.encode()).hexdigest()[:8]
    src = os.path.join(work, f"shmem4py-{SHMEM4PY_VERSION}-{tagname}")
    stamp = os.path.join(src, ".bobcat-built")
    key = f"{oshcc} {sys.executable}"
    if not (os.path.isfile(stamp) and open(stamp).read() == key):
        shutil.rmtree(src, ignore_errors=True)
        tmp = src + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        with tarfile.open(sdist) as tf:
            tf.extractall(tmp)
        os.rename(glob.glob(os.path.join(tmp, "shmem4py-*"))[0], src)
        shutil.rmtree(tmp, ignore_errors=True)
        say(f"building shmem4py {SHMEM4PY_VERSION} with {oshcc}")
        env = dict(os.environ, OSHCC=oshcc, PYTHONPATH=pylib)
        if not oshcc.startswith("/usr/"):
            # shmem4py knows the 1.5 features of the libraries it recognises by their macros
            # (src/libshmem/config/*.h); any other library gets its pre-1.5 fallbacks, which clash
            # with a complete 1.5 shmem.h. bobcat's is complete: declare it so, as for OSHMPI.
            with open(os.path.join(src, "src", "libshmem", "config", "oshmpi.h")) as f:
                have = re.findall(r"^#define (PySHMEM_HAVE_\w+) 1", f.read(), re.M)
            env["CFLAGS"] = " ".join(f"-D{h}=1" for h in have)
        with open(os.path.join(src, "build.log"), "w") as f:
            p = subprocess.run([sys.executable, "setup.py", "build"], cwd=src, stdout=f,
                               stderr=subprocess.STDOUT, env=env)
        if p.returncode != 0:
            raise Unavailable(f"building shmem4py with {oshcc} failed: see {src}/build.log")
        if not oshcc.startswith("/usr/") and not _links(oshcc, src, "shmem_put64_signal"):
            say("this OpenSHMEM lacks the sized put-with-signal routines: shmem4py gets "
                 "data/shmem_sized_signal_shim.c (over putmem_signal) to load")
            shim_c = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data",
                                  "shmem_sized_signal_shim.c")
            p = subprocess.run([oshcc, "-shared", "-fPIC", "-O1", "-o",
                                os.path.join(src, "shim.so"), shim_c],
                               capture_output=True, text=True)
            if p.returncode != 0:
                raise Unavailable("building the put-signal shim failed: " + p.stderr[-300:])
        with open(stamp, "w") as f:
            f.write(key)
    return os.path.join(src, "test"), libdir_of(src)


def _links(cc: str, tmpdir: str, fn: str) -> bool:
    """Whether a program calling `fn` (as a plain void function) links with this compiler."""
    c = os.path.join(tmpdir, "links.c")
    with open(c, "w") as f:
        f.write(f"void {fn}(void);\nint main(void) {{ {fn}(); return 0; }}\n")
    p = subprocess.run([cc, c, "-o", os.path.join(tmpdir, "links.out")], capture_output=True)
    return p.returncode == 0


def main_shmem(args) -> int:
    home = paths.home_dir()
    bobcat_oshcc = os.path.join(home, "bin", "oshcc")
    bobcat_oshrun = os.path.join(home, "bin", "oshrun")
    if not os.access(bobcat_oshcc, os.X_OK) or not os.access(bobcat_oshrun, os.X_OK):
        print(f"external: {bobcat_oshcc} / oshrun not found: this build has no OpenSHMEM",
              file=sys.stderr)
        return 2
    select = []
    for x in args.include:
        select += ["--include", x]
    for x in args.exclude:
        select += ["--exclude", x]
    runs, notes = {}, []
    for name in ["oshmem2"] + [c for c in args.configs.split(",") if c in SHMEM_CONFIGS]:
        if name in runs:
            continue
        oshcc, argv, np_, under_yod = SHMEM_CONFIGS[name]
        oshcc = bobcat_oshcc if oshcc == "bobcat" else oshcc
        try:
            testdir, libdir = build_shmem4py(args.work, oshcc)
        except Unavailable as e:
            print(f"external: {e}", file=sys.stderr)
            return 2
        if under_yod:
            argv = [bobcat_oshrun, *argv]
        else:
            argv = [*argv, "--oversubscribe"] if np_ > (os.cpu_count() or 1) else argv
        pylib = _pylib(args.work)

        shim = os.path.join(os.path.dirname(libdir), "..", "shim.so")
        shim_args = ["--preload", os.path.abspath(shim)] if os.path.exists(shim) else []
        if shim_args:
            notes.append(f"{name}: the sized put-with-signal routines came from the harness shim "
                         "(the library lacks them)")

        def launch(dargs, argv=argv, pylib=pylib, shim_args=shim_args):
            return [*argv, sys.executable, RANK_DRIVER, "--suite", "shmem4py", *dargs,
                    "--libdir", pylib, *shim_args]

        say(f"shmem4py {name}: {' '.join(argv)}")
        runs[name] = run_suite(args.work, "shmem", name, testdir, libdir, select,
                               test_timeout=args.test_timeout, job_timeout=args.job_timeout,
                               tag=args.tag, launch=launch, np_=np_, yod_run=under_yod)
    comps = [compare(runs[n], runs["oshmem2"], None) for n in runs if n != "oshmem2"]
    md = report_markdown(list(runs.values()), comps, {}, title=f"shmem4py {SHMEM4PY_VERSION} test "
                         "suite, Open MPI oshmem vs bobcat's OpenSHMEM")
    if notes:
        md += "\n" + "\n".join(f"Note: {n}" for n in notes) + "\n"
    rep = os.path.join(args.work, f"report-shmem{'-' + args.tag if args.tag else ''}.md")
    with open(rep, "w") as f:
        f.write(md)
    with open(args.json or rep[:-3] + ".json", "w") as f:
        json.dump({"shmem4py": SHMEM4PY_VERSION, "runs": list(runs.values()),
                   "comparisons": comps}, f, indent=1)
    print(md)
    n = sum(len(c["regressions"]) for c in comps)
    print(f"external: {n} test(s) failing with bobcat's OpenSHMEM only; report {rep}")
    return 1 if n else 0
