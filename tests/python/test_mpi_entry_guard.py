"""Every MPI_* entry point of the MPI layer holds the layer's lock under MPI_THREAD_MULTIPLE (issue
28, src/pmpi/base/pmpi_lock.h): its first statement is PMPI_GUARD(). An entry point without it would
run bobcat's engine from two threads at once; this finds one the day it is added, read from the
source (the multi-threaded tests, tests/mp/mp_threads.c, find it only if they happen to call it).
"""
from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "pmpi"
# MPI_Init* start the layer (nothing to guard yet); the Fortran entry points call these C ones.
# MPI_Abort must end the job whatever another thread holds (it touches no state of the layer).
EXEMPT = {"MPI_Init", "MPI_Init_thread", "MPI_Abort"}
# MPI_X, SFX(MPI_X), or PCOLL(X): the persistent collectives, MPI_X_init or MPIX_X_init (pmpi_coll.h)
DEF = re.compile(r"^BOBCAT_EXPORT\s+[\w ]+?\**\s*(?:(?:SFX\()?(MPI_\w+)\)?|PCOLL\((\w+)\))\s*\(", re.M)


def _entry_points():
    for f in sorted(SRC.rglob("*.[ch]")):
        if f.parent.name in ("lang", "gen") or f.name == "pmpi_shmem.c":
            continue
        text = f.read_text()
        for m in DEF.finditer(text):
            name = m.group(1) or f"MPI_{m.group(2)}_init"
            if name in EXEMPT:
                continue
            brace = text.index("{", m.end())
            body = text[brace + 1:].lstrip()
            yield f.relative_to(SRC.parent.parent), name, body


def test_entry_points_found():
    names = {n for _, n, _ in _entry_points()}
    # the scan sees the layer's routines of every room (a broken pattern would pass vacuously)
    for must in ("MPI_Send", "MPI_Waitall", "MPI_Allreduce", "MPI_Comm_split", "MPI_Finalize",
                 "MPI_Win_allocate_shared", "MPI_Type_free", "MPI_Allreduce_init", "MPI_Neighbor_alltoallw_init"):
        assert must in names, f"{must} not found by the scan"
    assert len(names) > 60


def test_every_entry_point_starts_with_the_guard():
    missing = [f"{f}: {n}" for f, n, body in _entry_points()
               if not body.startswith("PMPI_GUARD();") and not (n == "MPI_Finalize" and "PMPI_GUARD();" in body)]
    assert not missing, "entry points without PMPI_GUARD() as first statement:\n" + "\n".join(missing)
