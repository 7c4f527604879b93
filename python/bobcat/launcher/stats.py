"""yod --stats FILE: the job's account in one file, and its summary on one screen.

Every rank writes rank-<r>.json at MPI_Finalize into the private directory yod gave it
(BOBCAT_STATS_DIR; src/pmpi/base/pmpi_stats.c writes them). This merges them into FILE (JSON: the
ranks' own records, totals per routine, and the summary) and says what share of the on-node traffic
took bobcat's path, and which routines did not. A routine's calls and bytes fall into one of:

  bobcat    on-node calls bobcat carried (its rows' inplace + staged)
  mpi-node  on-node calls the real MPI carried: routines bobcat passes on, and calls of routines
            bobcat implements that it handed over (with the reason: datatype, op, forced ...)
  off-node  calls whose peer or communicator reaches another node (the real MPI's by design)
  unknown   pass-through calls whose communicator bobcat never saw (counted against bobcat)

Only routines that move data or synchronise ranks count in the shares; local calls (queries,
constructors, attributes) are listed in FILE but do not dilute them.
"""
import json
import os

OFFNODE_WHY = {"off-node", "multinode", "multinode-threads", "root-not-leader", "one-per-node"}  # calls on communicators that span nodes


def _routine(totals: dict, name: str) -> dict:
    return totals.setdefault(name, {"calls": {"bobcat": 0, "mpi-node": 0, "off-node": 0, "unknown": 0},
                                    "bytes": {"bobcat": 0, "mpi-node": 0, "off-node": 0, "unknown": 0},
                                    "why": {}, "moves": True})


def _add_row(totals: dict, row: dict) -> None:
    calls, nbytes, why = row.get("calls", {}), row.get("bytes", {}), row.get("why", {})
    if not any(calls.values()):
        return  # counters of a part (the engine's): no calls of its own
    # bobcat's rows are named for their routine ("Allreduce") or their family ("p2p send").
    name = row["name"] if " " in row["name"] else "MPI_" + row["name"]
    t = _routine(totals, name)
    here = calls.get("inplace", 0) + calls.get("staged", 0)
    t["calls"]["bobcat"] += here
    t["bytes"]["bobcat"] += nbytes.get("inplace", 0) + nbytes.get("staged", 0)
    mpi, mpi_bytes = calls.get("mpi", 0), nbytes.get("mpi", 0)
    if mpi:
        off = sum(v for k, v in why.items() if k in OFFNODE_WHY)
        off_bytes = mpi_bytes * off // mpi
        t["calls"]["off-node"] += off
        t["bytes"]["off-node"] += off_bytes
        t["calls"]["mpi-node"] += mpi - off
        t["bytes"]["mpi-node"] += mpi_bytes - off_bytes
    for k, v in why.items():
        if k not in OFFNODE_WHY:
            t["why"][k] = t["why"].get(k, 0) + v


def _add_pass(totals: dict, row: dict) -> None:
    t = _routine(totals, "MPI_" + row["name"])
    t["moves"] = bool(row.get("moves", True))
    for key, into in (("node", "mpi-node"), ("off-node", "off-node"), ("unknown", "unknown")):
        t["calls"][into] += row.get("calls", {}).get(key, 0)
        t["bytes"][into] += row.get("bytes", {}).get(key, 0)


def merge(directory: str, nranks: int) -> dict:
    """The ranks' files in `directory` as one account (ranks that wrote none are listed)."""
    ranks, missing = [], []
    for r in range(nranks):
        path = os.path.join(directory, f"rank-{r}.json")
        try:
            with open(path, encoding="utf-8") as f:
                ranks.append(json.load(f))
        except (OSError, ValueError):
            missing.append(r)
    totals: dict = {}
    for rec in ranks:
        for row in rec.get("rows", []):
            _add_row(totals, row)
        for row in rec.get("pass", []):
            _add_pass(totals, row)
    return {"version": 1, "ranks": nranks, "missing_ranks": missing,
            "layer": {state: sum(1 for r in ranks if r.get("layer") == state) for state in ("on", "off")},
            "off_reasons": sorted({r["reason"] for r in ranks if r.get("reason")}),
            "totals": totals, "summary": summarize(totals), "per_rank": ranks}


def summarize(totals: dict) -> dict:
    on_calls = on_bytes = bob_calls = bob_bytes = 0
    missed = []
    for name, t in totals.items():
        if not t["moves"]:
            continue
        c, b = t["calls"], t["bytes"]
        node_c = c["bobcat"] + c["mpi-node"] + c["unknown"]
        node_b = b["bobcat"] + b["mpi-node"] + b["unknown"]
        on_calls += node_c
        on_bytes += node_b
        bob_calls += c["bobcat"]
        bob_bytes += b["bobcat"]
        if node_c > c["bobcat"]:
            missed.append({"routine": name, "calls": node_c - c["bobcat"], "bytes": node_b - b["bobcat"],
                           "why": t["why"]})
    missed.sort(key=lambda m: (m["bytes"], m["calls"]), reverse=True)
    return {"on_node_calls": on_calls, "on_node_bytes": on_bytes, "bobcat_calls": bob_calls,
            "bobcat_bytes": bob_bytes,
            "bobcat_call_share": bob_calls / on_calls if on_calls else None,
            "bobcat_byte_share": bob_bytes / on_bytes if on_bytes else None,
            "top_missed": missed[:8]}


def fmt_bytes(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.1f} {unit}"
    return f"{n} B"


def _pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.1f} %"


def report_lines(acct: dict, path: str) -> list[str]:
    s = acct["summary"]
    lay = acct["layer"]
    out = [f"stats: {acct['ranks']} ranks (layer on {lay['on']}, off {lay['off']}"
           + (f": {', '.join(acct['off_reasons'])}" if acct["off_reasons"] else "") + f"); account in {path}"]
    if acct["missing_ranks"]:
        out.append(f"stats: no account from rank(s) {acct['missing_ranks']} (ended before MPI_Finalize?)")
    out.append(f"stats: on-node traffic on bobcat's path: {_pct(s['bobcat_call_share'])} of "
               f"{s['on_node_calls']} calls, {_pct(s['bobcat_byte_share'])} of {fmt_bytes(s['on_node_bytes'])}")
    for m in s["top_missed"]:
        why = ", ".join(f"{k} {v}" for k, v in sorted(m["why"].items(), key=lambda kv: -kv[1]))
        out.append(f"stats:   to the real MPI: {m['routine']:<24} {m['calls']:>9} calls {fmt_bytes(m['bytes']):>10}"
                   + (f"  ({why})" if why else ""))
    return out


def collect(directory: str, nranks: int, path: str) -> list[str]:
    """Merge the ranks' files into `path`; the summary lines (or why not)."""
    acct = merge(directory, nranks)
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(acct, f, indent=1)
            f.write("\n")
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return [f"stats: cannot write {path}: {e.strerror}"]
    if len(acct["missing_ranks"]) == nranks:
        return [f"stats: no rank wrote an account (not an MPI program, or none reached MPI_Finalize); "
                f"{path} lists none"]
    return report_lines(acct, path)
