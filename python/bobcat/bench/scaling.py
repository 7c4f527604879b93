"""The scaling benchmark (issue 8), one run: ranks per node 2..64 (oversubscribed, 128 MiB heaps)
for each page kind, recording the node's page tables, start-up time and bobcat's own memory per
rank, with fits (constant / linear / quadratic per rank) and a projection to 128 and 384 ranks of
4 GiB heaps.

Each point is one yod job of `smartmap-scale` ranks (bench/smartmap/smartmap_scale.c, not MPI:
64 ranks must start on 2 cores): every rank reports at main and waits at a counter in a shared
file; with all of them alive the harness samples /proc/meminfo's PageTables (the node's, against
the value just before the job) and every process of the job (yod, the launcher, the bobcat-rank
shims, the ranks): RSS, RssAnon, VmPTE. Then it releases them.

* page tables: node PageTables growth, and the job's own sum of VmPTE (immune to other work on the
  machine; it counts a hugetlb PMD page shared by k ranks k times). Share = growth / node heap.
* start-up: from just before yod starts to the last rank's main (yod, launcher, shims, heap
  population, node bootstrap, window mapping).
* own memory per rank: the rank's RssAnon (libbobcat's state, mimalloc's metadata outside the heap,
  libc, the stack: the heap and the windows are shmem/hugetlb and not in it) plus its shim's RSS;
  yod's and the launcher's RSS per job.

Variants interleave (for each rank count, every page kind in turn); the core-to-core probe runs
before and after. hugetlb points need 64 pool pages per rank: as root the pool is raised for the
run if short, and set back afterwards only if it was raised. Usage:
    python -m bobcat.bench.scaling [--ranks 2,4,..] [--kinds small,thp,huge,small-eager] [--json F]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..evaluation import hugepool
from .. import paths
from .common import probe
from ..launcher.plan import format_size, page_table_bytes

HUGE_SYSFS = Path("/proc/sys/vm/nr_hugepages")
RANKS = (2, 4, 8, 16, 32, 64)
KINDS = ("small", "thp", "huge", "small-eager")   # small-eager: the old eager windows, for contrast
HEAP = 128 << 20
PROJECT = ((128, 4 << 30), (384, 4 << 30))


def meminfo(key: str) -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


def _status(pid: int) -> dict:
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("Name", "PPid"):
                    out[k] = v.strip()
                elif k in ("VmRSS", "RssAnon", "RssFile", "VmPTE"):
                    out[k] = int(v.split()[0]) * 1024
    except (OSError, ValueError):
        pass
    return out


def job_processes(root: int) -> list[dict]:
    """yod (root) and every process descended from it, with their memory figures."""
    procs = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            st = _status(int(d))
            if "PPid" in st:
                st["pid"] = int(d)
                procs[int(d)] = st
    keep, frontier = [], [root]
    while frontier:
        pid = frontier.pop()
        if pid in procs:
            keep.append(procs[pid])
            frontier += [p for p, s in procs.items() if s.get("PPid") == str(pid)]
    return keep


class HugePool:
    """Make sure `pages` 2 MiB pages are free (root only); give back only the pages this added,
    from the pool as it is at the end (the rule of hugepool.Reservation: another job may have
    raised the pool meanwhile)."""

    def __init__(self) -> None:
        self.added = 0

    def ensure(self, pages: int) -> bool:
        total, free = hugepool.pool()
        if free >= pages:
            return True
        if os.geteuid() != 0:
            return False
        try:
            HUGE_SYSFS.write_text(str(total + pages - free))
        except OSError:
            return False
        got_total, free = hugepool.pool()
        self.added += max(got_total - total, 0)
        return free >= pages

    def restore(self) -> None:
        if self.added:
            try:
                HUGE_SYSFS.write_text(str(max(hugepool.pool()[0] - self.added, 0)))
                self.added = 0
            except OSError:
                pass


def run_point(kind: str, n: int, heap: int, sync_dir: str, nodes: int = 1, timeout: float = 600) -> dict:
    pages, windows = (kind.split("-") + ["auto"])[:2]
    yod = str(paths.home() / "bin" / "yod")
    prog = str(paths.home() / "libexec" / "bobcat" / "bench" / "smartmap-scale")
    with tempfile.NamedTemporaryFile(dir=sync_dir, prefix="scale-", delete=False) as f:
        f.write(b"\0" * 8)
        sync = f.name
    rpn = -(-n // nodes)
    argv = [yod, "--oversubscribe", f"-VN{rpn}", "-np", str(n), "--heap", str(heap), "--pages", pages,
            "--windows", windows] + (["--simulate-nodes"] if nodes > 1 else []) + [prog, sync]
    row: dict = {"kind": kind, "n": n, "nodes": nodes, "heap": heap}
    pt0 = meminfo("PageTables")
    t0 = time.time()
    # BOBCAT_VERBOSE: every rank says what its bootstrap cost (wall and CPU) on stderr.
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=dict(os.environ, BOBCAT_VERBOSE="1", BOBCAT_BOOT_TIMEOUT="600"))
    try:
        fd = os.open(sync, os.O_RDWR)
        arrived = 0
        while time.time() - t0 < timeout and p.poll() is None:
            arrived = int.from_bytes(os.pread(fd, 4, 0), "little")
            if arrived >= n:
                break
            time.sleep(0.005)
        row["ready_s"] = time.time() - t0
        row["pt_node"] = meminfo("PageTables") - pt0
        procs = job_processes(p.pid)
        os.pwrite(fd, (1).to_bytes(4, "little"), 4)
        os.close(fd)
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        try:
            os.unlink(sync)
        except FileNotFoundError:
            pass
    row["rc"] = p.returncode
    if arrived < n or p.returncode != 0:
        row["error"] = (err.strip().splitlines() or ["?"])[-1]
        return row
    ranks = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    rank_procs = [q for q in procs if q.get("Name") == "smartmap-scale"]
    shims = [q for q in procs if q.get("Name") == "bobcat-rank"]
    others = [q for q in procs if q not in rank_procs and q not in shims and q["pid"] != p.pid]
    yod_proc = next((q for q in procs if q["pid"] == p.pid), {})
    row.update(
        pages=sorted({r["pages"] for r in ranks}),
        startup_s=max(r["t_main"] for r in ranks) - t0,
        pt_job=sum(q.get("VmPTE", 0) for q in procs),
        pt_ranks=sum(q.get("VmPTE", 0) for q in rank_procs),
        rank_anon=sum(q.get("RssAnon", 0) for q in rank_procs) / max(1, len(rank_procs)),
        shim_rss=sum(q.get("VmRSS", 0) for q in shims) / max(1, len(shims)),
        launcher_rss=sum(q.get("VmRSS", 0) for q in others),
        yod_rss=yod_proc.get("VmRSS", 0),
        first_copy_us=max(r["first_copy_us"] for r in ranks),
        again_copy_us=max(r["again_copy_us"] for r in ranks),
        slot_shift=ranks[0]["slot_shift"],
        sampled=len(rank_procs))
    boots = [(float(m.group(1)), float(m.group(2))) for m in
             re.finditer(r"windows mapped \(.*?\) in ([0-9.]+) s, ([0-9.]+) s CPU", err)]
    if boots:
        row["boot_cpu_ms_mean"] = sum(c for _, c in boots) / len(boots) * 1e3
        row["boot_cpu_ms_max"] = max(c for _, c in boots) * 1e3
        row["boot_wall_s_max"] = max(w for w, _ in boots)
    heaps = [float(m.group(1)) for m in re.finditer(r"populated in [0-9.]+ s, made in ([0-9.]+) s CPU", err)]
    if heaps:
        row["heap_cpu_ms_mean"] = sum(heaps) / len(heaps) * 1e3
    row["own_per_rank"] = row["rank_anon"] + row["shim_rss"]
    row["pt_share"] = row["pt_node"] / (n * heap)
    return row


# --- fits ------------------------------------------------------------------------------------

def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    """Gaussian elimination with partial pivoting (tiny systems)."""
    m = len(b)
    a = [row[:] + [b[i]] for i, row in enumerate(a)]
    for c in range(m):
        piv = max(range(c, m), key=lambda r: abs(a[r][c]))
        a[c], a[piv] = a[piv], a[c]
        if abs(a[c][c]) < 1e-300:
            return [0.0] * m
        for r in range(m):
            if r != c:
                f = a[r][c] / a[c][c]
                a[r] = [x - f * y for x, y in zip(a[r], a[c])]
    return [a[i][m] / a[i][i] for i in range(m)]


def polyfit(xs: list[float], ys: list[float], degree: int) -> tuple[list[float], float]:
    """Least squares y = c0 + c1 x + ... ; returns coefficients and the RMS residual."""
    k = degree + 1
    ata = [[sum(x ** (i + j) for x in xs) for j in range(k)] for i in range(k)]
    aty = [sum(y * x ** i for x, y in zip(xs, ys)) for i in range(k)]
    c = _solve(ata, aty)
    res = [y - sum(ci * x ** i for i, ci in enumerate(c)) for x, y in zip(xs, ys)]
    return c, (sum(r * r for r in res) / len(res)) ** 0.5


def classify(xs: list[float], per_rank: list[float]) -> dict:
    """Fit the per-rank quantity q(n) with degrees 0, 1, 2 and name the growth: the lowest degree
    whose RMS residual is within 1.5x the quadratic's or under 10 % of q's mean (this machine's
    noise: two shared cores, other work running)."""
    fits = {d: polyfit(xs, per_rank, d) for d in (0, 1, 2)}
    mean = sum(per_rank) / len(per_rank) if per_rank else 0.0
    best = fits[2][1]
    for d in (0, 1, 2):
        if fits[d][1] <= max(best * 1.5, 0.1 * abs(mean)):
            break
    # A fit that does not rise from the smallest to the largest node (by more than 10 %) is not
    # growth, whatever its curvature (per-rank costs that fall as fixed costs are shared).
    at = lambda n: sum(c * n ** i for i, c in enumerate(fits[d][0]))
    if d and at(max(xs)) <= 1.1 * at(min(xs)):
        name = "not growing per rank"
    else:
        name = {0: "constant per rank", 1: "linear per rank", 2: "quadratic per rank"}[d]
    return {"growth": name, "degree": d, "coef": fits[d][0], "rms": fits[d][1],
            "all": {k: {"coef": v[0], "rms": v[1]} for k, v in fits.items()}}


def medians(rows: list[dict]) -> list[dict]:
    """One row per (kind, ranks, nodes): the median of every number over the repetitions that
    succeeded (failed_reps counts the others; a point that never succeeded keeps its error)."""
    import statistics
    groups: dict = {}
    for r in rows:
        groups.setdefault((r["kind"], r["n"], r["nodes"]), []).append(r)
    out = []
    for reps in groups.values():
        good = [r for r in reps if "error" not in r]
        if not good:
            out.append(dict(reps[0], reps=len(reps)))
            continue
        m = dict(good[0], reps=len(good), failed_reps=len(reps) - len(good))
        for k, v in good[0].items():
            if isinstance(v, (int, float)) and not isinstance(v, bool) and k not in ("n", "nodes", "heap"):
                m[k] = statistics.median(r[k] for r in good if k in r)
        out.append(m)
    return out


def analyse(rows: list[dict], heap: int) -> dict:
    out = {}
    for kind in dict.fromkeys(r["kind"] for r in rows):
        ok = [r for r in rows if r["kind"] == kind and "error" not in r and r["nodes"] == 1]
        if len(ok) < 3:
            continue
        xs = [float(r["n"]) for r in ok]
        has_boot = all("boot_cpu_ms_mean" in r for r in ok)
        pages, windows = (kind.split("-") + ["auto"])[:2]
        # The model (launcher.plan.page_table_bytes) plus a per-process constant (libraries, stack,
        # shim, launcher) fitted to the measurements.
        model = [page_table_bytes(heap, r["n"], pages, windows) for r in ok]
        base = sum((r["pt_job"] - m) / r["n"] for r, m in zip(ok, model)) / len(ok)
        a = {
            "pt": classify(xs, [r["pt_job"] / r["n"] for r in ok]),
            "startup": classify(xs, [r["startup_s"] / r["n"] for r in ok]),
            "boot_cpu": classify(xs, [r["boot_cpu_ms_mean"] / 1e3 for r in ok]) if has_boot else None,
            "heap_cpu": classify(xs, [r["heap_cpu_ms_mean"] / 1e3 for r in ok])
            if all("heap_cpu_ms_mean" in r for r in ok) else None,
            "own": classify(xs, [r["own_per_rank"] for r in ok]),
            "process_pt_base": base,
            "max_pt_share": max(r["pt_share"] for r in ok),
            "max_job_pt_share": max(r["pt_job"] / (r["n"] * heap) for r in ok),
            "projection": {},
        }
        for n, h in PROJECT:
            pt = base * n + page_table_bytes(h, n, pages, windows)
            eager = base * n + page_table_bytes(h, n, pages, "eager")
            a["projection"][f"{n}x{format_size(h)}"] = {
                "pt_node": pt, "share": pt / (n * h), "fully_touched": eager,
                "fully_touched_share": eager / (n * h),
                "own_per_rank": sum(c * n ** i for i, c in enumerate(a["own"]["coef"])),
                "startup_s_same_heap": sum(c * n ** i for i, c in enumerate(a["startup"]["coef"])) * n}
        out[kind] = a
    return out


def _mib(b: float) -> str:
    return f"{b / (1 << 20):.1f}"


def report(rows: list[dict], fits: dict, heap: int) -> str:
    reps = max((r.get("reps", 1) for r in rows), default=1)
    lines = [f"Ranks per node x {format_size(heap)} heaps (one node, oversubscribed on "
             f"{os.cpu_count()} CPUs); medians of {reps} repetitions (* some failed: medians of the rest).", "",
             "| pages | ranks | got | PageTables growth (MiB) | job VmPTE (MiB) | of node heap | start-up (s) "
             "| start-up / rank (ms) | heap CPU / rank (ms) | bootstrap CPU / rank, mean / max (ms) "
             "| own / rank (KiB): rank anon + shim "
             "| yod RSS (MiB) | launcher RSS (MiB) | 1st / 2nd 1 MiB peer copy (us) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["nodes"] != 1 or r["kind"] == "sim":
            continue
        if "error" in r:
            lines.append(f"| {r['kind']} | {r['n']} | failed: {r['error']} |||||||||||")
            continue
        lines.append(
            f"| {r['kind']} | {r['n']}{'*' if r.get('failed_reps') else ''} | {','.join(r['pages'])} | {_mib(r['pt_node'])} | {_mib(r['pt_job'])} "
            f"| {r['pt_share'] * 100:.2f} % | {r['startup_s']:.2f} | {r['startup_s'] / r['n'] * 1000:.0f} "
            f"| {r.get('heap_cpu_ms_mean', float('nan')):.0f} "
            f"| {r.get('boot_cpu_ms_mean', float('nan')):.2f} / {r.get('boot_cpu_ms_max', float('nan')):.2f} "
            f"| {r['own_per_rank'] / 1024:.0f}: {r['rank_anon'] / 1024:.0f} + {r['shim_rss'] / 1024:.0f} "
            f"| {_mib(r['yod_rss'])} | {_mib(r['launcher_rss'])} "
            f"| {r['first_copy_us']:.0f} / {r['again_copy_us']:.0f} |")
    sim = [r for r in rows if r["kind"] == "sim"]
    if sim:
        lines += ["", "Own memory against the number of (simulated) nodes, 8 ranks:", "",
                  "| nodes | ranks per node | own / rank (KiB) | yod RSS (MiB) | launcher RSS (MiB) |",
                  "|---|---|---|---|---|"]
        for r in sim:
            if "error" not in r:
                lines.append(f"| {r['nodes']} | {-(-r['n'] // r['nodes'])} | {r['own_per_rank'] / 1024:.0f} "
                             f"| {_mib(r['yod_rss'])} | {_mib(r['launcher_rss'])} |")
    lines += ["", "Fits of the per-rank quantity q(n) (coefficients of c0 + c1 n + c2 n^2):", "",
              "| pages | page tables / rank | start-up / rank | heap CPU / rank | bootstrap CPU / rank "
              "| own memory / rank | max share of heap |",
              "|---|---|---|---|---|---|---|"]
    for kind, a in fits.items():
        def f(x, scale, unit):
            c = ", ".join(f"{v / scale:.3g}" for v in x["coef"])
            return f"{x['growth']} ({c} {unit})"
        lines.append(f"| {kind} | {f(a['pt'], 1024, 'KiB')} | {f(a['startup'], 1e-3, 'ms')} "
                     f"| {f(a['heap_cpu'], 1e-3, 'ms') if a.get('heap_cpu') else '-'} "
                     f"| {f(a['boot_cpu'], 1e-3, 'ms') if a['boot_cpu'] else '-'} "
                     f"| {f(a['own'], 1024, 'KiB')} | {a['max_pt_share'] * 100:.2f} % (VmPTE sum "
                     f"{a['max_job_pt_share'] * 100:.2f} %) |")
    lines += ["", "Projection (model of launcher.plan.page_table_bytes + the fitted per-process constant):", "",
              "| pages | node | page tables at start | of node heap | every window fully touched | own / rank (KiB) |",
              "|---|---|---|---|---|---|"]
    for kind, a in fits.items():
        for where, p in a["projection"].items():
            lines.append(f"| {kind} | {where} | {format_size(int(p['pt_node']))} | {p['share'] * 100:.3f} % "
                         f"| {format_size(int(p['fully_touched']))} ({p['fully_touched_share'] * 100:.2f} %) "
                         f"| {p['own_per_rank'] / 1024:.0f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", default=",".join(map(str, RANKS)), help="ranks per node to sweep")
    ap.add_argument("--kinds", default=",".join(KINDS), help="page kinds (small, thp, huge, small-eager)")
    ap.add_argument("--heap", default="128M", help="heap per rank (default 128M)")
    ap.add_argument("--nodes-sweep", default="1,2,4,8", help="simulated nodes for 8 ranks (own memory)")
    ap.add_argument("--reps", type=int, default=3, help="repetitions of the sweep (default 3; medians)")
    ap.add_argument("--json", type=Path, help="write every result to this file")
    ap.add_argument("--from-json", type=Path, help="analyse and report a saved run instead of running")
    args = ap.parse_args(argv)
    if args.from_json:
        saved = json.loads(args.from_json.read_text())
        heap = saved["rows"][0]["heap"]
        med = medians(saved["rows"])
        print(report(med, analyse(med, heap), heap))
        print(f"probe before/after: {saved['probe_before']} / {saved['probe_after']}")
        return 0
    from ..launcher.plan import parse_size
    heap = parse_size(args.heap, "--heap")
    ranks = [int(x) for x in args.ranks.split(",") if x]
    kinds = [k for k in args.kinds.split(",") if k]
    os.environ.setdefault("BOBCAT_HOME", str(paths.home()))
    sync_dir = tempfile.mkdtemp(prefix="bobcat-scaling-")   # private: /dev/shm gets swept by cleaners
    result: dict = {"probe_before": probe(), "rows": []}
    pool = HugePool()
    def record(row: dict) -> None:
        result["rows"].append(row)
        print(json.dumps(row), flush=True)

    try:
        for _ in range(args.reps):
            for n in ranks:
                for kind in kinds:
                    if kind.startswith("huge") and not pool.ensure(n * (heap >> 21)):
                        record({"kind": kind, "n": n, "nodes": 1, "heap": heap,
                                "error": f"not {n * (heap >> 21)} free hugetlb pages (run as root to raise the pool)"})
                    else:
                        row = run_point(kind, n, heap, sync_dir)
                        if "error" in row and kind.startswith("huge") and pool.ensure(n * (heap >> 21)):
                            row = run_point(kind, n, heap, sync_dir)  # other jobs took pool pages meanwhile
                        record(row)
            for nodes in [int(x) for x in args.nodes_sweep.split(",") if x]:
                record(dict(run_point("small", 8, heap, sync_dir, nodes=nodes), kind="sim"))
    finally:
        pool.restore()
        os.rmdir(sync_dir)
    result["probe_after"] = probe()
    result["medians"] = medians(result["rows"])
    result["fits"] = analyse(result["medians"], heap)
    text = report(result["medians"], result["fits"], heap)
    print(text)
    print(f"probe before/after: {result['probe_before']} / {result['probe_after']}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
