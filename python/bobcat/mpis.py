"""The MPI installations this bobcat serves, and which one a program runs on (issue 29).

The build writes share/bobcat/mpis.conf: one line per flavour of the MPI layer it built
(libbobcat-<flavour>.so), with the installation it belongs to:

    flavour family version library launcher prefix

Debian's Open MPI and MPICH are `openmpi` and `mpich`; today's MPIs installed by scripts/peers.sh
are `openmpi5`, `mpich5` and `impi`; `abi` is the layer built against the MPI 5.0 standard ABI
(mpi_abi.h), which serves a program linked with libmpi_abi.so.1 on whichever MPI provides it.

yod reads the program's MPI soname and resolves it as the dynamic loader would (elf.detect): the
file it lands on names the installation, and the installation's own launcher starts the job (never
one found on PATH by luck: Debian's Open MPI 4.1 and the Open MPI 5 wheel share the soname
libmpi.so.40). A program of an MPI bobcat was not built for runs with its own launcher and
without the MPI layer, and yod says so.
"""
from __future__ import annotations

import os

from . import paths

FAMILIES = ("openmpi", "mpich")
# The system flavours when no mpis.conf is installed (a build older than issue 29).
_DEFAULT = (("openmpi", "openmpi", "", "", "mpirun.openmpi", "/usr"),
            ("mpich", "mpich", "", "", "mpiexec.mpich", "/usr"))


class Mpi:
    """One installation.  flavour: the layer serving it (None: none built); family: openmpi or
    mpich (how its launcher is driven); launcher: a path or a name to look up on PATH."""
    __slots__ = ("flavour", "family", "version", "lib", "launcher", "prefix")

    def __init__(self, flavour: str | None, family: str, version: str, lib: str, launcher: str,
                 prefix: str):
        self.flavour, self.family, self.version = flavour, family, version
        self.lib, self.launcher, self.prefix = lib, launcher, prefix

    @property
    def system(self) -> bool:
        return self.flavour in FAMILIES

    @property
    def product(self) -> str:
        """What users call it: Open MPI, MPICH, Intel MPI."""
        if os.path.exists(os.path.join(self.prefix, "bin", "impi_info")):
            return "Intel MPI"
        return {"openmpi": "Open MPI", "mpich": "MPICH"}.get(self.family, self.family)

    def describe(self) -> str:
        what = f"{self.product} {self.version}".strip()
        return what if self.system else f"{what} ({self.prefix})"


def table() -> dict[str, Mpi]:
    """flavour -> Mpi, in the order of mpis.conf (the system ones first)."""
    rows = []
    try:
        with open(os.path.join(paths.home_dir(), "share", "bobcat", "mpis.conf")) as f:
            rows = [tuple(line.split()) for line in f if line.strip() and not line.startswith("#")]
    except OSError:
        rows = list(_DEFAULT)
    return {r[0]: Mpi(*r[:6]) for r in rows if len(r) >= 6}


def _launcher_in(prefix: str, family: str) -> str | None:
    names = ("prterun", "mpirun", "mpiexec") if family == "openmpi" else ("mpiexec.hydra", "mpiexec", "mpirun")
    for n in names:
        p = os.path.join(prefix, "bin", n)
        if os.access(p, os.X_OK):
            return p
    return None


def _prefix_of(lib: str) -> str:
    d = os.path.dirname(lib)
    while os.path.basename(d) in ("lib", "lib64", "release", "x86_64-linux-gnu", "openmpi"):
        d = os.path.dirname(d)
    return d


class Unserved(Exception):
    """The program's MPI was found but no launcher for it."""


def for_program(family: str, lib: str | None) -> tuple[Mpi, str | None]:
    """The installation a program whose MPI soname is of `family` (openmpi, mpich, abi) and
    resolves to `lib` (None: the loader's cache, i.e. the system's) runs on, and a note for the
    user when it gets no layer."""
    t = table()
    real = os.path.realpath(lib) if lib else None
    if family == "abi":
        if real is None:
            raise Unserved("the program needs libmpi_abi.so.1 (the MPI 5.0 standard ABI) but the dynamic "
                           "loader finds none; set LD_LIBRARY_PATH to the lib directory of an MPI that "
                           "provides it (MPICH 5, Intel MPI 2021.14+)")
        owner = next((m for m in t.values() if m.family != "abi"
                      and os.path.dirname(m.lib) == os.path.dirname(real)), None)
        prefix = owner.prefix if owner else _prefix_of(real)
        fam = owner.family if owner else "mpich"
        launcher = owner.launcher if owner else _launcher_in(prefix, fam)
        if launcher is None:
            raise Unserved(f"no launcher (mpiexec) beside {real}; run yod with the bin directory of that "
                           "MPI first on PATH and --mpi abi, or link the program with a native MPI")
        abi = t.get("abi")
        version = owner.version if owner else ""
        m = Mpi("abi" if abi else None, fam, version, real, launcher, prefix)
        note = None if abi else ("bobcat was built without the standard-ABI layer (scripts/peers.sh install "
                                 "and rebuild): the program runs on its MPI without bobcat's MPI layer")
        return m, note
    if real is not None:
        for m in t.values():
            if m.family == family and m.lib and os.path.realpath(m.lib) == real:
                return m, None
        for m in t.values():
            if m.family == family and m.lib and os.path.dirname(os.path.realpath(m.lib)) == os.path.dirname(real):
                return m, None
        sysm = t.get(family)
        # The system's library under another name (Debian: /usr/lib/x86_64-linux-gnu/libmpi.so.40
        # and .../openmpi/lib/libmpi.so.40 are one file): the system flavour.
        if sysm is None or not real.startswith("/usr/"):
            prefix = _prefix_of(real)
            launcher = _launcher_in(prefix, family)
            if launcher is None:
                raise Unserved(f"the program runs on {real}, an MPI bobcat was not built for, and no launcher is "
                               f"beside it in {prefix}/bin; put that MPI's bin first on PATH and use --mpi")
            return (Mpi(None, family, "", real, launcher, prefix),
                    f"{real} is an MPI bobcat has no layer for: the program runs on it with its own launcher "
                    f"({launcher}) and without bobcat's MPI layer; to serve it, install it as a peer "
                    "(scripts/peers.sh) or build bobcat against it")
    sysm = t.get(family)
    if sysm is None:
        raise Unserved(f"the program needs {family}, which this bobcat was built without "
                       f"(BOBCAT_WITH_{family.upper()}=OFF); rebuild with it")
    return sysm, None


def by_flavour(name: str) -> Mpi | None:
    return table().get(name)
