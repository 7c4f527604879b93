"""Which MPI a program is linked with, read from its ELF dynamic section (no subprocess).

yod must launch a program through its own MPI's launcher and preload the matching libbobcat
flavour.  The DT_NEEDED entries of the executable answer that for every normally linked MPI
program; only when the program needs libraries we do not recognise (the MPI may come in
indirectly, through a library of the application) does yod ask `ldd`.
"""

import os
import struct

# sonames that identify an MPI ABI; prefixes so that Fortran/C++ bindings count too.
_SONAME_MPI = (
    ("libmpi.so.40", "openmpi"), ("libmpi.so.20", "openmpi"), ("libmpi_mpifh.so", "openmpi"),
    ("libmpi_usempi", "openmpi"), ("libmpi_cxx.so", "openmpi"), ("libopen-pal.so", "openmpi"),
    ("libopen-rte.so", "openmpi"),
    ("libmpich.so", "mpich"), ("libmpi.so.12", "mpich"), ("libmpifort.so.12", "mpich"),
    # The MPI 5.0 standard ABI (MPICH 5's mpicc_abi; Intel MPI ships the library too).
    ("libmpi_abi.so", "abi"),
    ("libmpicxx.so.12", "mpich"), ("libmpichfort.so", "mpich"),
    # bobcat's OpenSHMEM (oshcc) names its MPI: settled even if the program needs no libmpi itself.
    ("libbobcat-shmem-openmpi.so", "openmpi"), ("libbobcat-shmem-mpich.so", "mpich"),
)

# Libraries that never pull in an MPI: a program needing only these is settled without ldd.
_SYSTEM = frozenset((
    "libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1", "libutil.so.1",
    "libgcc_s.so.1", "libstdc++.so.6", "libz.so.1", "libresolv.so.2", "libcrypt.so.1",
    "libselinux.so.1", "libacl.so.1", "libattr.so.1", "libcap.so.2", "libpcre2-8.so.0",
    "libgomp.so.1", "libatomic.so.1", "libtinfo.so.6", "libmvec.so.1",
    "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1", "linux-vdso.so.1",
))

_PT_LOAD, _PT_DYNAMIC = 1, 2
_DT_NULL, _DT_NEEDED, _DT_STRTAB, _DT_STRSZ, _DT_RPATH, _DT_RUNPATH = 0, 1, 5, 10, 15, 29


def needed(path: str) -> list[str] | None:
    """DT_NEEDED sonames of an ELF file; [] for a static binary; None if it is not ELF."""
    d = dynamic(path)
    return None if d is None else d[0]


def dynamic(path: str) -> tuple[list[str], str | None, str | None] | None:
    """(DT_NEEDED sonames, DT_RPATH, DT_RUNPATH) of an ELF file; None if it is not ELF."""
    try:
        with open(path, "rb") as f:
            ident = f.read(64)
            if len(ident) < 52 or ident[:4] != b"\x7fELF":
                return None
            is64 = ident[4] == 2
            end = "<" if ident[5] == 1 else ">"
            if is64:
                phoff, = struct.unpack_from(end + "Q", ident, 32)
                phentsize, phnum = struct.unpack_from(end + "HH", ident, 54)
                ph_fmt = end + "IIQQQQQQ"      # type flags offset vaddr paddr filesz memsz align
            else:
                phoff, = struct.unpack_from(end + "I", ident, 28)
                phentsize, phnum = struct.unpack_from(end + "HH", ident, 42)
                ph_fmt = end + "IIIIIIII"      # type offset vaddr paddr filesz memsz flags align
            f.seek(phoff)
            table = f.read(phentsize * phnum)
            loads = []
            dyn = None
            for i in range(phnum):
                ent = struct.unpack_from(ph_fmt, table, i * phentsize)
                if is64:
                    ptype, _, off, vaddr, _, filesz = ent[:6]
                else:
                    ptype, off, vaddr, _, filesz = ent[:5]
                if ptype == _PT_LOAD:
                    loads.append((vaddr, off, filesz))
                elif ptype == _PT_DYNAMIC:
                    dyn = (off, filesz)
            if dyn is None:
                return [], None, None
            f.seek(dyn[0])
            raw = f.read(dyn[1])
            dfmt = end + ("qQ" if is64 else "iI")
            dsize = struct.calcsize(dfmt)
            names, strtab, strsz, paths = [], None, 0, {}
            for i in range(len(raw) // dsize):
                tag, val = struct.unpack_from(dfmt, raw, i * dsize)
                if tag == _DT_NULL:
                    break
                if tag == _DT_NEEDED:
                    names.append(val)
                elif tag == _DT_STRTAB:
                    strtab = val
                elif tag == _DT_STRSZ:
                    strsz = val
                elif tag in (_DT_RPATH, _DT_RUNPATH):
                    paths[tag] = val
            if strtab is None:
                return [], None, None
            # DT_STRTAB is a run-time address; the PT_LOAD that covers it says where it sits in the file.
            for vaddr, off, filesz in loads:
                if vaddr <= strtab < vaddr + filesz:
                    f.seek(off + strtab - vaddr)
                    break
            else:
                return [], None, None
            strings = f.read(strsz)
    except (OSError, struct.error):
        return None

    def at(o: int) -> str:
        stop = strings.find(b"\0", o)
        return strings[o:stop if stop >= 0 else None].decode("utf-8", "replace")
    rp, rup = paths.get(_DT_RPATH), paths.get(_DT_RUNPATH)
    return [at(o) for o in names], None if rp is None else at(rp), None if rup is None else at(rup)


def mpi_of_sonames(sonames: list[str]) -> str | None:
    for so in sonames:
        for prefix, mpi in _SONAME_MPI:
            if so.startswith(prefix):
                return mpi
    return None


def _ldd(path: str) -> dict[str, str]:
    """soname -> the file ldd resolves it to ('' where it finds none)."""
    import subprocess
    try:
        out = subprocess.run(["ldd", path], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    res = {}
    for line in out.splitlines():
        if "=>" in line:
            so, _, rest = line.partition("=>")
            target = rest.split()[0] if rest.split() else ""
            res[so.strip()] = target if target.startswith("/") else ""
    return res


def _search(soname: str, dirs: list[str]) -> str | None:
    for d in dirs:
        p = os.path.join(d, soname)
        if os.path.isfile(p):
            return os.path.realpath(p)
    return None


def _expand(spec: str | None, origin: str) -> list[str]:
    if not spec:
        return []
    return [d.replace("$ORIGIN", origin).replace("${ORIGIN}", origin) for d in spec.split(":") if d]


def detect(path: str) -> tuple[str, str | None] | None:
    """(family, library) of an MPI program: family 'openmpi', 'mpich' or 'abi' (the MPI 5.0
    standard ABI), library the file its MPI soname resolves to as the dynamic loader would find it
    (RPATH, LD_LIBRARY_PATH, RUNPATH), or None when it is the system's (the loader's cache).
    None if it is not an MPI program (or not ELF: use --mpi to say otherwise)."""
    d = dynamic(path)
    if not d or not d[0]:
        return None
    sonames, rpath, runpath = d
    mpi = mpi_of_sonames(sonames)
    if mpi is None:
        if all(so in _SYSTEM for so in sonames):
            return None
        # The MPI comes in through a library of the application: ldd resolves the whole tree.
        resolved = _ldd(path)
        mpi = mpi_of_sonames(list(resolved))
        if mpi is None:
            return None
        so = next(s for s in resolved if mpi_of_sonames([s]) == mpi)
        return mpi, (os.path.realpath(resolved[so]) if resolved.get(so) else None)
    so = next(s for s in sonames if mpi_of_sonames([s]) == mpi)
    if so.startswith("libbobcat-shmem-"):
        # bobcat's OpenSHMEM names its flavour, which is built for the system's MPIs only.
        return mpi, None
    origin = os.path.dirname(os.path.realpath(path))
    dirs = [] if runpath else _expand(rpath, origin)
    dirs += [x for x in os.environ.get("LD_LIBRARY_PATH", "").split(":") if x]
    dirs += _expand(runpath, origin)
    return mpi, _search(so, dirs)


def detect_mpi(path: str) -> str | None:
    """'openmpi', 'mpich', 'abi' or None (not an MPI program, or not ELF)."""
    d = detect(path)
    return d[0] if d else None
