"""One measured run: probe, benchmark, probe, parse, record.

The noisy-machine protocol lives here and in campaign.py: the two vCPUs of this kind of VM move
between physical placements (SMT siblings, separate cores, separate chips) for seconds at a time,
so every run is bracketed by the core-to-core cache-line probe and carries the placement it saw.
"""
from __future__ import annotations

import ctypes
import json
import os
import re
import selectors
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from . import configs, machine, parsers, shmem_run
from .. import paths
from .store import RunRecord

HPCC = "/usr/bin/hpcc"
HPCC_DEFAULTS = {"N": 2000, "NB": 128, "P": 1, "Q": 2}
PROBE_SECONDS = 0.3
KILL_GRACE_S = 5.0
# After a benchmark printed its closing {"done": true} line, how long its job may take to exit.
# MPICH 4.0's ch4/ucx (Debian 12) can hang in MPI_Finalize: one rank waits in the PMI barrier
# while its peer waits for a UCX disconnect that needs the first to progress (fixed upstream by
# pmodels/mpich#6596). Seen here in 2-6 of 12 small campaigns; every measurement is out by then.
DONE_GRACE_S = 5.0
_DONE_LINE = re.compile(rb'"done"\s*:\s*true')


@dataclass(frozen=True)
class Benchmark:
    name: str
    description: str
    # The MPIs every build provides it for (Debian's; `bobcat doctor` checks them installed).
    mpis: tuple[str, ...] = configs.VENDORS
    # True: it runs with `mpis` only (hpcc links Debian's Open MPI); False: with any MPI it is
    # built for, today's ones from scripts/peers.sh included (<name>.<mpi> in libexec/bench).
    only: bool = False


BENCHMARKS: dict[str, Benchmark] = {b.name: b for b in (
    Benchmark("probe", "core-to-core cache-line probe (no MPI; also brackets every run)"),
    Benchmark("selfish", "selfish detour: OS noise, detours per second and their lengths"),
    Benchmark("stream", "STREAM copy/scale/add/triad per rank"),
    Benchmark("gups", "RandomAccess, single and MPI (GUP/s)"),
    Benchmark("ring", "natural and random ring latency and bandwidth"),
    Benchmark("imb", "IMB-style tests, one per run (--test pingpong|sendrecv|barrier|...)"),
    Benchmark("ptrans", "parallel matrix transpose (GB/s)"),
    Benchmark("fft", "MPI-FFT (Gflop/s)"),
    Benchmark("io", "file I/O: file per process and shared file"),
    Benchmark("hpcc", "Debian's unmodified HPCC 1.5 (links Open MPI only)", ("openmpi",), only=True),
    Benchmark("shmem", "OpenSHMEM put/get latency, put bandwidth vs memcpy, fetch_add, "
              "barrier_all, 2 PEs on one node: bobcat's under lwk, Open MPI's oshmem otherwise"),
)}


# Benchmarks that are not MPI programs (the probe; OpenSHMEM's pair) never carry an account.
NOT_MPI = frozenset({"probe", "shmem"})

# RunSpec.pages: yod's default heap pages (2 MiB when it can get them) or 4 KiB.
PAGE_CHOICES = (None, "small")
# libbobcat's page kinds (@@bobcat@@ node ... pages=), from worst to best.
HEAP_KINDS = ("small", "thp", "huge")


class RunError(Exception):
    """A run cannot be started at all (bad input, missing program); exit status 2 material."""


def bench_path(name: str, vendor: str) -> Path:
    if name == "probe":
        return probe_path()
    return paths.libexec_dir() / "bench" / f"{name}.{vendor}"


def probe_path() -> Path:
    return paths.libexec_dir() / "bench" / "bobcat-probe"


def bench_available(name: str, vendor: str, config: configs.Config | None = None,
                    mode: str | None = None) -> tuple[bool, str]:
    """Whether benchmark `name` can run with this MPI (and, when given, under this
    configuration and mode), and why not."""
    b = BENCHMARKS.get(name)
    if b is None:
        return False, f"unknown benchmark {name!r}"
    if b.only and vendor not in b.mpis:
        return False, f"{name} runs only with mpi={'/'.join(b.mpis)}"
    if name == "shmem":
        return shmem_run.available(config, vendor, mode)
    path = Path(HPCC) if name == "hpcc" else bench_path(name, vendor)
    if not path.exists():
        hint = "apt-get install hpcc" if name == "hpcc" else \
            f"build and install the tree (cmake --install) or set BOBCAT_HOME (now {paths.home()})"
        return False, f"{path} not found ({hint})"
    return True, "ok"


def _die_with_parent() -> None:
    """In the child before exec: get SIGTERM if bobcat dies, even by SIGKILL, so a killed
    campaign leaves no launcher (and through it no rank) behind."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _kill_group(proc: subprocess.Popen[str]) -> None:
    """SIGTERM the child's process group (launcher and anything it forked), then SIGKILL."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=KILL_GRACE_S)
            return
        except subprocess.TimeoutExpired:
            continue


@dataclass
class Completed:
    returncode: int | None  # None after a timeout, or when ended after its done line
    stdout: str
    stderr: str
    duration: float
    ended_after_done: bool = False  # still running DONE_GRACE_S after the done line: ended


def execute(argv: list[str], env: dict[str, str] | None, cwd: str | None, timeout: float,
            stop_after_done: bool = False) -> Completed:
    """Run a command in its own process group; kill the whole group on timeout or Ctrl-C, and
    with stop_after_done also DONE_GRACE_S after stdout carried the closing done line."""
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, preexec_fn=_die_with_parent)
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    bufs = {out_fd: bytearray(), err_fd: bytearray()}
    done_at = None
    ended = False
    try:
        with selectors.DefaultSelector() as sel:
            sel.register(out_fd, selectors.EVENT_READ)
            sel.register(err_fd, selectors.EVENT_READ)
            while sel.get_map() or proc.poll() is None:
                limit = t0 + timeout if done_at is None else min(t0 + timeout, done_at + DONE_GRACE_S)
                left = limit - time.monotonic()
                if left <= 0:
                    ended = True
                    _kill_group(proc)
                    break
                if not sel.get_map():
                    try:
                        proc.wait(timeout=left)
                    except subprocess.TimeoutExpired:
                        pass
                    continue
                for key, _ in sel.select(left):
                    data = os.read(key.fd, 65536)
                    if not data:
                        sel.unregister(key.fd)
                        continue
                    buf = bufs[key.fd]
                    buf += data
                    if stop_after_done and done_at is None and key.fd == out_fd \
                            and _DONE_LINE.search(buf, max(0, len(buf) - len(data) - 32)):
                        done_at = time.monotonic()
            # What the ended job had written but not yet been read.
            while ended and sel.get_map():
                ready = sel.select(0)
                if not ready:
                    break
                for key, _ in ready:
                    data = os.read(key.fd, 65536)
                    if data:
                        bufs[key.fd] += data
                    else:
                        sel.unregister(key.fd)
    except BaseException:
        _kill_group(proc)
        raise
    finally:
        proc.stdout.close()
        proc.stderr.close()
    return Completed(None if ended else proc.returncode, bufs[out_fd].decode(errors="replace"),
                     bufs[err_fd].decode(errors="replace"), time.monotonic() - t0,
                     ended_after_done=ended and done_at is not None)


def run_probe() -> dict[str, Any] | None:
    """The probe's JSON record, or a record saying why there is none."""
    exe = probe_path()
    if not exe.exists():
        return {"error": f"{exe} not found", "placement": "unknown"}
    c = execute([str(exe), "--seconds", str(PROBE_SECONDS)], None, None, 30)
    rec = parsers.parse_probe(c.stdout) if c.returncode == 0 else None
    if rec is None:
        return {"error": f"probe exited {c.returncode}: {c.stderr.strip()[-200:]}",
                "placement": "unknown"}
    return rec


def params_from_args(args: list[str]) -> dict[str, Any]:
    """`--test pingpong --max-size 1M --validate` -> {"test": "pingpong", "max-size": "1M",
    "validate": True}: the named parameters stored with the run, next to the literal args."""
    out: dict[str, Any] = {}
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("--"):
            key, eq, val = a[2:].partition("=")
            if eq:
                out[key] = val
            elif i + 1 < len(args) and not args[i + 1].startswith("--"):
                out[key] = args[i + 1]
                i += 1
            else:
                out[key] = True
        i += 1
    return out


@dataclass
class RunSpec:
    benchmark: str
    config: str
    mpi: str
    mode: str
    ranks: int = 2
    args: list[str] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)  # hpcc: N, NB, P, Q
    timeout: float = 300.0
    # Heap pages of a yod configuration: None = yod's default (2 MiB pages when it can get them,
    # Catamount's default), "small" = 4 KiB pages (yod --pages small, Catamount's -small_pages).
    pages: str | None = None
    # Record the account (yod --stats) of a yod configuration's run. timed=False: the run is there
    # for its account only and its metrics are not recorded, so numbers measured while every
    # call was counted never pool with the timed ones (docs/evaluation.md "The account").
    account: bool = False
    timed: bool = True

    def run_params(self) -> dict[str, Any]:
        extra = {"pages": self.pages} if self.pages else {}
        if self.benchmark == "hpcc":
            return {**HPCC_DEFAULTS, **self.params, **extra}
        return {**params_from_args(self.args), **self.params, **extra, "args": list(self.args)}


def validate(spec: RunSpec, cs: configs.ConfigSet) -> None:
    """Everything that can be checked before anything runs; raises RunError/ConfigError."""
    if spec.benchmark not in BENCHMARKS:
        raise RunError(f"unknown benchmark {spec.benchmark!r} (known: {', '.join(BENCHMARKS)})")
    config = cs.get(spec.config)
    if spec.mode not in configs.MODES:
        raise RunError(f"unknown mode {spec.mode!r} (known: {', '.join(configs.MODES)})")
    if spec.mpi not in cs.vendors():
        raise RunError(f"unknown MPI {spec.mpi!r} (known: {', '.join(cs.vendors())})")
    if spec.ranks < 1:
        raise RunError(f"--ranks must be at least 1, not {spec.ranks}")
    if spec.pages not in PAGE_CHOICES:
        raise RunError(f"unknown page size {spec.pages!r} (known: small, large)")
    if spec.pages and not config.via_yod:
        raise RunError(f"--pages {spec.pages} sets the heap pages of a yod configuration; "
                       f"{spec.config} does not run under yod (use lwk, or the benchmark's own "
                       "--pages after --)")
    if spec.benchmark == "hpcc":
        p = spec.run_params()
        bad = [k for k in ("N", "NB", "P", "Q") if not isinstance(p[k], int) or p[k] < 1]
        if bad:
            raise RunError(f"hpcc params {', '.join(bad)} must be positive integers")
        if p["P"] * p["Q"] != spec.ranks:
            raise RunError(f"hpcc needs P x Q = ranks ({p['P']} x {p['Q']} != {spec.ranks})")
    ok, why = configs.availability(cs, config, spec.mpi)
    if not ok:
        raise RunError(f"{spec.config} with {spec.mpi} is not available: {why}")
    ok, why = bench_available(spec.benchmark, spec.mpi, config, spec.mode)
    if not ok:
        raise RunError(why)


def heap_pages(node_file: Path) -> dict[str, Any]:
    """What yod's --node-file says the job's heaps got: heap_pages = the worst page kind over the
    nodes (huge, thp or small; None when no node reported, e.g. a rank failed at start) and
    heap_nodes = every node's line."""
    from ..launcher.job import STATUS_PREFIX, parse_status
    nodes = []
    try:
        lines = node_file.read_bytes().splitlines()
    except OSError:
        lines = []
    for line in lines:
        if line.startswith(STATUS_PREFIX):
            kind, f = parse_status(line)
            if kind == "node":
                nodes.append(f)
    kinds = [f.get("pages") for f in nodes]
    known = [k for k in kinds if k in HEAP_KINDS]
    worst = min(known, key=HEAP_KINDS.index) if known and len(known) == len(kinds) else None
    return {"heap_pages": worst, "heap_nodes": nodes}


def counts_account(spec: RunSpec, config: configs.Config) -> bool:
    """Whether this run records yod's account: asked for, under yod, and an MPI program."""
    return spec.account and config.via_yod and spec.benchmark not in NOT_MPI


def read_account(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """yod --stats FILE's account without its per-rank records (the totals hold what the report
    needs), or None and why there is none."""
    try:
        acct = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, f"yod wrote no account to {path.name} (the job ended before yod merged it)"
    except (OSError, ValueError) as e:
        return None, f"cannot read yod's account {path.name}: {e}"
    if not isinstance(acct, dict) or not isinstance(acct.get("summary"), dict):
        return None, f"yod's account {path.name} has no summary"
    if len(acct.get("missing_ranks") or []) >= int(acct.get("ranks") or 0):
        return None, "no rank wrote an account (none reached MPI_Finalize?)"
    acct.pop("per_rank", None)
    return acct, None


def run(spec: RunSpec, cs: configs.ConfigSet,
        on_phase: Callable[[str], None] | None = None) -> RunRecord:
    """Probe, run the benchmark, probe; return the record (not yet stored)."""
    phase = on_phase or (lambda _s: None)
    config = cs.get(spec.config)
    params = spec.run_params()
    # The probes qualify timings with the placement they ran in; an untimed run has none.
    if spec.timed:
        phase("probe")
    before = run_probe() if spec.timed else None
    with tempfile.TemporaryDirectory(prefix=f"bobcat-{spec.benchmark}-") as tmp:
        if spec.benchmark == "hpcc":
            # HPCC reads hpccinf.txt from its cwd and appends to hpccoutf.txt there.
            Path(tmp, "hpccinf.txt").write_text(
                parsers.hpcc_input(params["N"], params["NB"], params["P"], params["Q"]))
            program = [HPCC]
        else:
            program = [str(bench_path(spec.benchmark, spec.mpi)), *spec.args]
        if spec.benchmark == "shmem":
            launch = shmem_run.launch(cs, config, spec.mpi, spec.mode, spec.ranks, spec.args)
        else:
            launch = configs.build(cs, config, spec.mpi, spec.mode, spec.ranks, program)
        node_file = Path(tmp, "yod-nodes.txt")
        if config.via_yod:
            # yod writes libbobcat's node lines there: the page kind each heap really got.
            launch.argv[1:1] = ["--node-file", str(node_file)] + \
                (["--pages", spec.pages] if spec.pages else [])
            launch.detail["pages_policy"] = spec.pages or "auto"
        stats_file = Path(tmp, "yod-stats.json")
        counted = counts_account(spec, config)
        if counted:
            # Every rank counts every MPI call and yod merges the counts into stats_file.
            launch.argv[1:1] = ["--stats", str(stats_file)]
            launch.detail["account"] = "recorded" if spec.timed else "recorded; metrics not kept (untimed)"
        if spec.benchmark == "probe":
            # The probe is not an MPI program: it pins its own two threads, so no launcher.
            launch.argv = program
            launch.detail["launcher"] = "none (bobcat-probe pins its own threads)"
        phase("run")
        started = time.time()
        c = execute(launch.argv, launch.env, tmp, spec.timeout, stop_after_done=True)
        stdout = c.stdout
        if spec.benchmark == "hpcc":
            out = Path(tmp, "hpccoutf.txt")
            hpcc_out = out.read_text(errors="replace") if out.exists() else ""
            parsed = parsers.parse_hpcc(hpcc_out)
            stdout = hpcc_out + ("\n--- hpcc stdout ---\n" + c.stdout if c.stdout.strip() else "")
        else:
            parsed = parsers.parse_jsonl(c.stdout)
        if config.via_yod:
            launch.detail.update(heap_pages(node_file))
        account, no_account = read_account(stats_file) if counted else (None, None)
    if spec.timed:
        phase("probe")
    after = run_probe() if spec.timed else None
    # A peer with a known defect after its results (oshmem's crash in shmem_finalize): the
    # results count, and the record says how the job ended.
    known = launch.detail.get("known_crash_after_done")
    crashed = bool(known and c.returncode and parsed.valid)
    if c.ended_after_done or crashed:
        status = "ok" if parsed.valid else "failed"
    elif c.returncode is None:
        status = "timeout"
    elif c.returncode != 0 or not parsed.valid:
        status = "failed"
    else:
        status = "ok"
    stderr = c.stderr
    if parsed.problems:
        stderr += "\n--- bobcat: output problems ---\n" + "\n".join(parsed.problems[:50])
    if c.ended_after_done:
        stderr += (f"\n--- bobcat: the job was still running {DONE_GRACE_S:g} s after its done line "
                   "and was ended (MPI_Finalize hang?) ---\n")
    if c.returncode == 0 and parsed.done is None:
        stderr += "\n--- bobcat: no closing {\"done\": true} line ---\n"
    detail = dict(launch.detail, timeout_s=spec.timeout)
    if crashed:
        detail["crashed_after_done"] = shmem_run.crash_record(c.returncode, c.stderr, known)
        stderr += (f"\n--- bobcat: the job exited {c.returncode} after its valid done line "
                   f"({known}); its results are kept ---\n")
    if c.ended_after_done:
        detail["ended_after_done_s"] = DONE_GRACE_S
    if parsed.done is not None:
        detail["done"] = parsed.done
    if no_account:
        detail["account"] = f"none: {no_account}"
        stderr += f"\n--- bobcat: no account: {no_account} ---\n"
    return RunRecord(
        benchmark=spec.benchmark, config=spec.config, mpi=spec.mpi, mode=spec.mode,
        ranks=spec.ranks, params=params, started=started, duration=c.duration, status=status,
        exit_code=c.returncode, machine=machine.facts(), config_detail=detail,
        probe_before=before, probe_after=after,
        placement=parsers.run_placement(before, after), git_rev=machine.git_rev(),
        command=launch.argv, raw_stdout=stdout, raw_stderr=stderr,
        metrics=parsed.metrics if spec.timed else [], account=account)
