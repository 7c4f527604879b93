"""On-node MPI against the peers, one run: bobcat's MPI layer under yod (`lwk`) and the stock MPIs
at their default AND best settings, 2 ranks on one node, IMB-style timings.

Protocol for a noisy machine (the one every bobcat performance claim follows): every variant runs
once per round and the rounds interleave them (the starting variant rotates, so no variant always
follows the same neighbour); the figure of merit is the median over rounds; the core-to-core probe
runs before and after the whole run and around every variant's turn, and imb times each size in
--slices slices with an in-job probe between the two ranks around each slice, so each sample carries
the placement state it ran in ("core", "smt", "chip", or "mixed" when the two probes disagree). The
vCPUs change placement within a job and a one-way latency follows the line transfer time (slow turns
of pingpong were in the chip state, not in the code), so the ratios per state (@smt, @core, @chip)
compare variants under the same conditions; the overall ratio also depends on which state each
variant's turns drew.
`--placement core` takes the medians over the samples of that state only (this VM's vCPUs move
between placements for seconds at a time: a variant whose turns fell on "chip" reads slow for
reasons of its own). A ratio is lwk's median over the best peer's median, per test and size.

The MPIs are the flavours of share/bobcat/mpis.conf (Debian's openmpi and mpich; openmpi5, mpich5,
impi from scripts/peers.sh; abi, the layer built against the MPI 5.0 standard ABI, whose programs
run on MPICH 5's libmpi_abi.so.1), each started by its own installation's launcher. The ratio is
lwk's median over the best of all the MPIs' default and best variants (and, per MPI, over its own);
--short runs issue 29's list, where SHMEM put/get (bobcat's OpenSHMEM, shmem_putmem + shmem_quiet and
blocking shmem_getmem of 8 B) is set against each MPI's nearest operation, passive-target MPI_Put /
MPI_Get of 8 B + MPI_Win_flush (bench/rma), the same one-sided operations and completion. With abi,
lwk.abi over lwk.mpich5 is what the standard-ABI layer costs against the native one.

Variants (per MPI):
  lwk      yod -VN2 -np 2: libbobcat's MPI layer on the real MPI
  lwk-off  the same with BOBCAT_MPI=off (the real MPI under yod: what the layer itself buys)
  lwk-old  lwk with the knobs that restore the algorithms before the two-core copies and fast boxes
           (OLD_KNOBS: no fast boxes, receiver-only rendezvous copy, Bcast inplace, two-round
           parallel Allreduce, folds that copy first), so one run compares old and new interleaved
  default  the bare launcher, ranks bound to cores (what a user gets)
  best     the bare launcher with the MPI's best on-node settings (BEST; only where some beat the
           default), found by measuring: docs/benchmarks.md, "Today's MPIs (issue 29)"

Usage: python -m bobcat.bench.mpi [--reps N] [--mpi openmpi,mpich,openmpi5,mpich5,impi,abi]
       [--tests ... | --short] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from ..evaluation import machine, parsers
from .. import paths
from .. import mpis as installations
from .common import NodeSettings, bench_dir, probe

# test -> sizes (bytes; None for Barrier); the sizes the issues' aims name, and the range between.
DEFAULT_TESTS = {
    "pingpong": [0, 1, 8, 1024, 4096, 65536, 1 << 20, 4 << 20, 16 << 20, 64 << 20],
    "barrier": [None],
    "allreduce": [8, 1024, 65536, 1 << 20],
    "bcast": [8, 65536, 1 << 20],
    "reduce": [8, 1 << 20],
    "alltoall": [8, 65536, 1 << 20],
    "alltoallv": [8, 65536, 1 << 20],
    "allgather": [8, 1 << 20],
    "msgrate": [8],
    "testany": [None],
}
# Issue 29's list (--short): bobcat against every MPI at its best, and SHMEM put/get ("shmem").
SHORT_TESTS = {
    "pingpong": [8, 4096, 65536, 1 << 20],
    "msgrate": [8],
    "barrier": [None],
    "allreduce": [8, 1 << 20],
    "alltoall": [1 << 20],
    "shmem": [8],
}
# The one-sided 8 B metrics (ns) of each program and their keys: bench/rma's MPI_Put/MPI_Get +
# MPI_Win_flush on every variant, shmem-bench's shmem_putmem + shmem_quiet and blocking shmem_getmem
# on bobcat's (its own put_latency is a put ping-pong, another measure: per program, not per name).
ONE_SIDED_METRICS = {"rma": {"put_latency": "rma_put:8", "get_latency": "rma_get:8"},
                     "shmem": {"put_quiet": "shmem_put:8", "get_blocking": "shmem_get:8"}}
# What a peer is measured by where bobcat's key has no twin in an MPI: its nearest operation.
NEAREST = {"shmem_put:8": "rma_put:8", "shmem_get:8": "rma_get:8"}
# bobcat-copyrate's sizes (the pingpong sizes in this range): where a copy's rate, not a latency, decides.
CEILING_MIN, CEILING_MAX = 64 << 10, 16 << 20
# The metric that is the figure of merit for each test (contracts §3 names).
MERIT = {"pingpong": "t_avg", "msgrate": "msgrate"}

# How each launcher family is told "2 ranks, each bound to a core" (Open MPI's mpirun/prterun and
# Hydra's mpiexec, which Debian's MPICH, MPICH 5 and Intel MPI all use).
NP = {"openmpi": ["-np", "2", "--bind-to", "core"], "mpich": ["-n", "2", "-bind-to", "core"]}
# Each MPI's best on-node settings, found by measuring (docs/benchmarks.md, "Today's MPIs (issue 29)"):
# flavour -> (launcher arguments, environment). A flavour without an entry has none better than its
# default, and gets no best variant. Per metric the peer is the faster of default and best, so a
# setting that helps one test and hurts another (MPICH 5's Allreduce) still counts where it helps.
BEST = {
    # no CMA: the pipelined double copy through vader's fragments; osc sm for one-sided
    "openmpi": (["--mca", "btl_vader_single_copy_mechanism", "none", "--mca", "osc", "sm"], {}),
    "mpich": ([], {"UCX_TLS": "sysv,posix,self"}),
    # MPICH 5's shared-memory Allreduce (posix release_gather) is fast at 8 B and 2.7x slower at 1 MiB
    # than MPIR's algorithms over ch4's point-to-point: the best setting turns it off for Allreduce.
    "mpich5": ([], {"MPIR_CVAR_ALLREDUCE_DEVICE_COLLECTIVE": "0"}),
}
# The algorithms of before (src/util/options.def): what lwk-old runs.
OLD_KNOBS = {"BOBCAT_P2P_FASTBOX": "0", "BOBCAT_P2P_SPLIT_MIN": "0", "BOBCAT_COLL_BCAST": "inplace",
             "BOBCAT_COLL_ALLREDUCE": "auto-parallel", "BOBCAT_COLL_FUSED_FOLD": "0"}


def runs_on(flavour: str, table: dict) -> str:
    """The flavour whose installation runs `flavour`'s programs: itself, but for the standard ABI
    the installation that owns the libmpi_abi.so.1 of its mpis.conf line (MPICH 5's by default)."""
    m = table[flavour]
    if m.family != "abi":
        return flavour
    owner = next((o.flavour for o in table.values() if o.family != "abi" and o.lib
                  and os.path.dirname(o.lib) == os.path.dirname(m.lib)), None)
    if owner is None:
        raise ValueError(f"no MPI of mpis.conf owns {m.lib}, the standard-ABI library")
    return owner


def launch(flavour: str, table: dict) -> tuple[list[str], dict[str, str]]:
    """The bare launcher of the installation `flavour`'s programs run on (mpis.conf), 2 ranks bound
    to cores, and the environment it needs."""
    m = table[runs_on(flavour, table)]
    env = {}
    if os.path.exists(os.path.join(m.prefix, "bin", "impi_info")):
        env["I_MPI_ROOT"] = m.prefix   # Intel's mpiexec.hydra finds its proxies through it
    return [m.launcher] + NP[m.family], env


def variants(mpis: list[str], heap: str, with_off: bool, with_old: bool = True,
             table: dict | None = None) -> dict[str, tuple[list[str], dict[str, str]]]:
    """name -> (argv prefix before the program, extra environment); the name is
    `<kind>.<flavour>` and the program `imb.<flavour>`. `table` is mpis.table() (flavour -> Mpi)."""
    table = installations.table() if table is None else table
    yod = str(paths.home() / "bin" / "yod")
    out: dict[str, tuple[list[str], dict[str, str]]] = {}
    for mpi in mpis:
        out[f"lwk.{mpi}"] = ([yod, "-VN2", "-np", "2", "--heap", heap], {})
        if with_old:
            out[f"lwk-old.{mpi}"] = ([yod, "-VN2", "-np", "2", "--heap", heap], dict(OLD_KNOBS))
        if with_off:
            out[f"lwk-off.{mpi}"] = ([yod, "-VN2", "-np", "2", "--heap", heap], {"BOBCAT_MPI": "off"})
        argv, env = launch(mpi, table)
        out[f"default.{mpi}"] = (argv, env)
        if mpi in BEST:
            args, extra = BEST[mpi]
            out[f"best.{mpi}"] = (argv + args, {**env, **extra})
    return out


def imb_args(tests: dict[str, list[int | None]], iters: int, time_s: float, slices: int = 1,
             offset: int | None = None) -> list[list[str]]:
    """One imb invocation per distinct size list (imb sweeps one list for all its tests)."""
    by_sizes: dict[tuple, list[str]] = {}
    for test, sizes in tests.items():
        key = tuple(s for s in sizes if s is not None) or (8,)
        by_sizes.setdefault(key, []).append(test)
    return [["--test", ",".join(names), "--sizes", ",".join(str(s) for s in sizes), "--iters", str(iters),
             "--time", str(time_s)] + (["--slices", str(slices)] if slices > 1 else [])
            + (["--offset", str(offset)] if offset is not None else [])
            for sizes, names in by_sizes.items()]


def copy_ceiling(sizes: list[int]) -> dict:
    """bobcat-copyrate at the pingpong sizes from 64 KiB to 16 MiB: per size, the fastest one-core copy
    of another core's buffer (GB/s, its method, and the one-way time it implies in µs): what a
    receiver-only single copy cannot beat on this machine (docs/benchmarks.md, "Copy ceiling")."""
    sizes = sorted({s for s in sizes if s and CEILING_MIN <= s <= CEILING_MAX})
    if not sizes:
        return {}
    r = subprocess.run([str(bench_dir() / "bobcat-copyrate"), "--seconds", "1.5", "--pages", "large",
                        "--sizes", ",".join(str(s) for s in sizes)], capture_output=True, text=True, timeout=120)
    out: dict = {}
    for row in parsers.parse_jsonl(r.stdout).metrics:
        if row.name == "ceiling_gbps":
            out[str(row.size)] = {"gbps": row.value, "method": row.params.get("method"),
                                  "us": row.size / row.value / 1e3, "pages": row.params.get("pages")}
    return out if out else {"error": r.stderr.strip()[-300:] or f"exit {r.returncode}"}


def merit_of(row: parsers.Metric) -> str:
    return MERIT.get(row.bench, "t_avg")


def one_sided(name: str, prefix: list[str], env: dict[str, str]) -> tuple[list[tuple[str, float, None]], list[str]]:
    """The one-sided 8 B numbers of one variant's turn (ns): `rma_put:8`/`rma_get:8` from bench/rma's
    program (MPI_Put/MPI_Get + MPI_Win_flush, passive target, every variant); for bobcat's variants
    of a flavour that has shmem-bench also `shmem_put:8`/`shmem_get:8` (shmem_putmem + shmem_quiet,
    blocking shmem_getmem: the same operations in OpenSHMEM's words). (rows, failures)."""
    kind, flavour = name.split(".", 1)
    jobs = [("rma", [str(bench_dir() / f"rma.{flavour}"), "--test", "put,get", "--time", "0.1", "--reps", "5"])]
    shmem = bench_dir() / f"shmem-bench.{flavour}"
    if kind.startswith("lwk") and shmem.exists():
        # yod takes the program's libbobcat-shmem for its MPI library and refuses it: name the MPI.
        jobs.append(("shmem", ["--mpi", flavour, str(shmem), "--rma-twins", "--reps", "5", "--time", "0.1"]))
    rows, failed = [], []
    for what, cmd in jobs:
        if cmd[0] == "--mpi":
            cmd = prefix[:1] + cmd[:2] + prefix[1:] + cmd[2:]
        else:
            cmd = prefix + cmd
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
        if r.returncode != 0:
            failed.append(f"{name} {what}: exit {r.returncode}: {r.stderr.strip()[-300:]}")
            continue
        for row in parsers.parse_jsonl(r.stdout).metrics:
            key = ONE_SIDED_METRICS[what].get(row.name)
            if key:
                rows.append((key, row.value, None))
    return rows, failed


def found_mpis(table: dict) -> list[str]:
    """The flavours of mpis.conf whose imb program is installed, in mpis.conf's order."""
    return [fl for fl in table if (bench_dir() / f"imb.{fl}").exists()]


def run(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5, help="rounds (each runs every variant once; default 5)")
    ap.add_argument("--mpi", help="MPIs to compare, flavours of share/bobcat/mpis.conf (openmpi, mpich, "
                    "openmpi5, mpich5, impi, abi; default: every one whose programs are installed)")
    ap.add_argument("--tests", default=",".join(DEFAULT_TESTS),
                    help=f"tests (default {','.join(DEFAULT_TESTS)}; also shmem: SHMEM put/get 8 B against "
                    "each MPI's MPI_Put/MPI_Get + flush)")
    ap.add_argument("--short", action="store_true",
                    help="issue 29's list instead of --tests: " + ", ".join(
                        f"{t} {','.join(str(x) for x in s if x is not None)}".strip() for t, s in SHORT_TESTS.items()))
    ap.add_argument("--sizes", help="override the size list of every sized test (bytes, comma-separated)")
    ap.add_argument("--iters", type=int, default=2000, help="imb --iters (default 2000)")
    ap.add_argument("--time", type=float, default=0.05, help="imb --time per size, seconds (default 0.05)")
    ap.add_argument("--slices", type=int, default=4,
                    help="imb times each size in this many slices, each with the placement state an in-job "
                    "probe between the two ranks measured around it (default 4; 1: one loop per size, "
                    "the turn's probes decide its state)")
    ap.add_argument("--offset", type=int,
                    help="imb --offset: send buffers on a 4 KiB boundary, receive buffers this many bytes "
                    "(0-4095) past one (default: where malloc puts them)")
    ap.add_argument("--heap", default="512M", help="yod --heap for the lwk variants (default 512M)")
    ap.add_argument("--no-off", action="store_true", help="leave out the lwk-off variants")
    ap.add_argument("--no-old", action="store_true", help="leave out the lwk-old variants (OLD_KNOBS)")
    ap.add_argument("--placement", choices=[*parsers.PLACEMENTS, "mixed"],
                    help="medians over the samples taken in this placement state only (a turn whose two "
                    "probes disagree is 'mixed'); default: every sample")
    ap.add_argument("--json", type=Path, help="write every sample and median to this file")
    args = ap.parse_args(argv)
    if not 1 <= args.slices <= 1000:
        ap.error("--slices must be in 1..1000")
    if args.offset is not None and not 0 <= args.offset <= 4095:
        ap.error("--offset must be in 0..4095")
    table = installations.table()
    known = found_mpis(table)
    mpis = [m for m in args.mpi.split(",") if m] if args.mpi else known
    for m in mpis:
        if m not in known:
            ap.error(f"--mpi: unknown MPI '{m}' (this build has: {', '.join(known) or 'none'}; "
                     "share/bobcat/mpis.conf lists what it was built for)")
    tests: dict[str, list[int | None]] = {}
    if args.short:
        tests = dict(SHORT_TESTS)
    else:
        for t in args.tests.split(","):
            if t not in DEFAULT_TESTS and t != "shmem":
                ap.error(f"--tests: unknown test '{t}' ({', '.join(DEFAULT_TESTS)}, shmem)")
            sizes = DEFAULT_TESTS.get(t, [8])
            if args.sizes and sizes != [None] and t != "shmem":
                sizes = [int(s) for s in args.sizes.split(",")]
            tests[t] = sizes
    with_shmem = tests.pop("shmem", None) is not None

    env = {k: v for k, v in os.environ.items() if not k.startswith("BOBCAT_")}
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", BOBCAT_HOME=str(paths.home()))
    vs = variants(mpis, args.heap, not args.no_off, not args.no_old, table)
    invocations = imb_args(tests, args.iters, args.time, args.slices, args.offset) if tests else []
    samples: dict[str, dict[str, list[float]]] = {v: {} for v in vs}
    states: dict[str, dict[str, list[str]]] = {v: {} for v in vs}  # placement of each sample
    failures: list[str] = []
    result: dict = {"protocol": "interleaved rounds, rotating start, medians", "probe_before": probe(),
                    "machine": {k: v for k, v in machine.facts().items() if k in ("cpu_model", "cpu_id", "caches",
                                                                                 "cores", "kernel", "mpi")},
                    "mpis": {fl: f"{table[fl].family} {table[fl].version} {table[fl].prefix}" for fl in mpis},
                    "variants": {n: {"argv": p, "env": e} for n, (p, e) in vs.items()}}
    pp_sizes = [s for s in tests.get("pingpong", []) if s is not None]
    with NodeSettings(pages=600):
        result["copy_ceiling_before"] = copy_ceiling(pp_sizes)
        names = list(vs)
        for rnd in range(args.reps):
            order = names[rnd % len(names):] + names[:rnd % len(names)]
            for name in order:
                prefix, extra = vs[name]
                mpi = name.split(".")[1]
                before = probe().get("placement")
                turn: list[tuple[str, float, str | None]] = []
                for inv in invocations:
                    cmd = prefix + [str(bench_dir() / f"imb.{mpi}")] + inv
                    r = subprocess.run(cmd, capture_output=True, text=True, env={**env, **extra}, timeout=600)
                    if r.returncode != 0:
                        failures.append(f"{name} round {rnd}: exit {r.returncode}: {r.stderr.strip()[-300:]}")
                        continue
                    for row in parsers.parse_jsonl(r.stdout).metrics:
                        if row.name != merit_of(row):
                            continue
                        key = f"{row.bench}:{row.size if row.size is not None else '-'}"
                        turn.append((key, row.value, row.params.get("placement")))
                if with_shmem:
                    rows, failed = one_sided(name, prefix, {**env, **extra})
                    turn += rows
                    failures += [f"round {rnd}: {f}" for f in failed]
                after = probe().get("placement")
                state = before if before == after and before else "mixed"
                for key, value, inner in turn:
                    samples[name].setdefault(key, []).append(value)
                    # A slice's own probes are closer to it than the turn's.
                    states[name].setdefault(key, []).append(inner if inner in (*parsers.PLACEMENTS, "mixed")
                                                             else state)
            print(f"round {rnd + 1}/{args.reps} done", file=sys.stderr, flush=True)
        result["copy_ceiling_after"] = copy_ceiling(pp_sizes)
    result["probe_after"] = probe()
    ceiling = ceiling_us(result["copy_ceiling_before"], result["copy_ceiling_after"])
    med = medians(samples, states, args.placement)
    by_state = {st: ratios(medians(samples, states, st), mpis) for st in parsers.PLACEMENTS}
    native = abi_native(table) if "abi" in mpis else None
    result.update(samples=samples, states=states, placement=args.placement, median=med, failures=failures,
                  ratios=ratios(med, mpis, ceiling), slices=args.slices, ratios_by_state=by_state,
                  ceiling_us=ceiling,
                  abi_cost=abi_cost(med, native) if native in mpis else {}, abi_native=native)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return result


def ceiling_us(*runs: dict) -> dict[str, float]:
    """Per pingpong size, the faster of the copy ceilings measured before and after the run (µs)."""
    out: dict[str, float] = {}
    for cc in runs:
        for size, c in (cc or {}).items():
            if isinstance(c, dict) and c.get("us"):
                out[size] = min(out.get(size, c["us"]), c["us"])
    return out


def abi_native(table: dict) -> str | None:
    """The native flavour of the installation the standard-ABI programs run on (MPICH 5's: mpich5)."""
    return runs_on("abi", table) if "abi" in table else None


def abi_cost(med: dict[str, dict[str, float]], native: str) -> dict[str, dict]:
    """Per key what the standard ABI costs on the same MPI: lwk.abi over lwk.<native> (the layer built
    against mpi_abi.h against the one built against the MPI's own mpi.h) and default.abi over
    default.<native> (the MPI's own libmpi_abi.so against its libmpi.so, no layer). Time ratios,
    rates inverted: > 1 means the ABI build is slower."""
    out: dict[str, dict] = {}
    for kind in ("lwk", "default"):
        a, n = med.get(f"{kind}.abi", {}), med.get(f"{kind}.{native}", {})
        for key in a:
            if n.get(key) and a[key]:
                higher = key.startswith("msgrate")
                out.setdefault(key, {})[kind] = n[key] / a[key] if higher else a[key] / n[key]
    return out


def medians(samples: dict[str, dict[str, list[float]]], states: dict[str, dict[str, list[str]]],
            placement: str | None = None) -> dict[str, dict[str, float]]:
    """Per variant and key, the median of its samples; with `placement`, of those taken in that state
    only (a key with none left is absent, so no ratio is formed from it)."""
    out: dict[str, dict[str, float]] = {}
    for v, per_key in samples.items():
        for key, xs in per_key.items():
            st = states.get(v, {}).get(key, [])
            kept = [x for x, s in zip(xs, st) if s == placement] if placement else xs
            if kept:
                out.setdefault(v, {})[key] = statistics.median(kept)
    return out


def ratios(med: dict[str, dict[str, float]], mpis: list[str],
           ceiling: dict[str, float] | None = None) -> dict[str, dict[str, dict]]:
    """Per MPI and key: lwk's median, the best peer (fastest of default/best of the same MPI, and of
    every MPI compared: the best of all), lwk over each (time ratio; < 1 means lwk is faster; for
    msgrate inverted), and for pingpong sizes with a copy ceiling (µs, per size) lwk over it (>= 1:
    the ceiling is what a one-core single copy cannot beat). bobcat's SHMEM keys are set against
    the peers' nearest MPI operation (NEAREST)."""
    out: dict[str, dict[str, dict]] = {}
    peers_all = [f"{k}.{m}" for m in mpis for k in ("default", "best")]
    for mpi in mpis:
        lwk = med.get(f"lwk.{mpi}", {})
        for key, t in lwk.items():
            higher = key.startswith("msgrate")
            peer_key = NEAREST.get(key, key)

            def best_of(names: list[str]) -> tuple[str | None, float | None]:
                vals = [(n, med[n][peer_key]) for n in names if peer_key in med.get(n, {})]
                if not vals:
                    return None, None
                return (max if higher else min)(vals, key=lambda nv: nv[1])
            own_name, own = best_of([f"default.{mpi}", f"best.{mpi}"])
            any_name, anyv = best_of(peers_all)

            def ratio(v: float | None) -> float | None:
                if not v or not t:
                    return None
                return v / t if higher else t / v
            size = key.split(":")[1]
            cu = (ceiling or {}).get(size) if key.startswith("pingpong:") else None
            out.setdefault(mpi, {})[key] = {
                "lwk": t, "lwk_off": med.get(f"lwk-off.{mpi}", {}).get(key),
                "lwk_old": med.get(f"lwk-old.{mpi}", {}).get(key),
                "best_same_mpi": own, "best_same_mpi_variant": own_name, "lwk_over_best_same": ratio(own),
                "best_any": anyv, "best_any_variant": any_name, "lwk_over_best_any": ratio(anyv),
                "ceiling_us": cu, "lwk_over_ceiling": t / cu if cu else None}
    return out


def best_of_all(res: dict) -> dict[str, dict]:
    """Per key, the best of all MPIs (variant and median) and each lwk flavour's ratio against it:
    {key: {"peer": variant, "value": v, "lwk": {flavour: ratio}, "ceiling": lwk.<fl> / ceiling}}."""
    out: dict[str, dict] = {}
    for mpi, rows in res["ratios"].items():
        for key, r in rows.items():
            row = out.setdefault(key, {"peer": r["best_any_variant"], "value": r["best_any"], "lwk": {},
                                       "ceiling": {}})
            row["lwk"][mpi] = r["lwk_over_best_any"]
            if r.get("lwk_over_ceiling"):
                row["ceiling"][mpi] = r["lwk_over_ceiling"]
    return out


def _order(key: str) -> tuple:
    test, size = key.split(":")
    return (test, int(size) if size != "-" else -1)


def _fmt(v: float | None, key: str) -> str:
    if v is None:
        return "-"
    return f"{v / 1e6:.2f}M" if key.startswith("msgrate") else f"{v:.3f}"


def main(argv: list[str] | None = None) -> int:
    res = run(argv)
    pb, pa = res["probe_before"], res["probe_after"]
    m = res["machine"]
    print(f"machine: {m['cpu_model']} ({m['cpu_id']}), caches {m['caches']}, {m['cores']} cpus, kernel {m['kernel']}")
    print(f"probe before/after: {pb.get('oneway_ns')} ns ({pb.get('placement')}) / "
          f"{pa.get('oneway_ns')} ns ({pa.get('placement')})")
    for when in ("before", "after"):
        cc = res.get(f"copy_ceiling_{when}") or {}
        if "error" in cc:
            print(f"one-core copy ceiling {when}: bobcat-copyrate failed: {cc['error']}")
        elif cc:
            print(f"one-core copy ceiling {when} (bobcat-copyrate, fastest method): " + ", ".join(
                f"{int(k)} B {c['gbps']:.1f} GB/s = {c['us']:.3f} µs ({c['method']})" for k, c in cc.items()))
    for v, per_key in res["states"].items():
        counts: dict[str, int] = {}
        for sts in per_key.values():
            for st in sts:
                counts[st] = counts.get(st, 0) + 1
        print(f"  placement of {v}'s samples: " + ", ".join(f"{k} {n}" for k, n in sorted(counts.items())))
    if res["placement"]:
        print(f"medians over the samples taken in placement '{res['placement']}' only")
    print("times are µs (pingpong: one-way t_avg; collectives: t_avg), msgrate is messages/s; "
          "ratio = lwk / best peer (time; < 1 is faster) or best / lwk (rate); @smt/@core/@chip: the "
          "ratio to the best peer of any MPI over the samples of that placement state only")
    by_state = res.get("ratios_by_state", {})
    for mpi, rows in res["ratios"].items():
        print(f"\n{mpi}: {'test:bytes':<22} {'lwk':>10} {'lwk-old':>10} {'lwk-off':>10} {'best same':>10} {'ratio':>6} "
              f"{'best any':>10} {'ratio':>6} {'@smt':>5} {'@core':>5} {'@chip':>5}  best-any variant")
        for key in sorted(rows, key=_order):
            r = rows[key]
            rs = f"{r['lwk_over_best_same']:.2f}" if r["lwk_over_best_same"] else "-"
            ra = f"{r['lwk_over_best_any']:.2f}" if r["lwk_over_best_any"] else "-"
            per_state = []
            for st in parsers.PLACEMENTS:
                x = by_state.get(st, {}).get(mpi, {}).get(key, {}).get("lwk_over_best_any")
                per_state.append(f"{x:.2f}" if x else "-")
            print(f"{'':5} {key:<22} {_fmt(r['lwk'], key):>10} {_fmt(r.get('lwk_old'), key):>10} "
                  f"{_fmt(r['lwk_off'], key):>10} "
                  f"{_fmt(r['best_same_mpi'], key):>10} {rs:>6} {_fmt(r['best_any'], key):>10} {ra:>6} "
                  f"{per_state[0]:>5} {per_state[1]:>5} {per_state[2]:>5}  {r['best_any_variant']}")
    table = best_of_all(res)
    if table:
        fls = list(res["ratios"])
        print("\nlwk over the best of all MPIs (µs; rma/shmem ns; msgrate msg/s: best / lwk), "
              "and lwk over the one-core copy ceiling:")
        print(f"{'test:bytes':<18} {'best of all':>10}  {'variant':<16}" + "".join(f"{f:>9}" for f in fls)
              + "  ceiling")
        for key in sorted(table, key=_order):
            row = table[key]
            cells = "".join(f"{row['lwk'][f]:>9.2f}" if row["lwk"].get(f) else f"{'-':>9}" for f in fls)
            ceil = " ".join(f"{f} {v:.2f}" for f, v in row["ceiling"].items())
            print(f"{key:<18} {_fmt(row['value'], key):>10}  {row['peer'] or '-':<16}{cells}  {ceil}")
    if res.get("abi_cost"):
        print(f"\nstandard ABI against native on the same MPI ({res['abi_native']}): lwk.abi / "
              f"lwk.{res['abi_native']} and default.abi / default.{res['abi_native']} (> 1: the ABI build is slower)")
        for key in sorted(res["abi_cost"], key=_order):
            c = res["abi_cost"][key]
            print(f"  {key:<18} layer {c.get('lwk', 0):.3f}   bare {c.get('default', 0):.3f}")
    for f in res["failures"]:
        print("FAILED:", f)
    return 1 if res["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
