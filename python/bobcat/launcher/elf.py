"""Which MPI a program is linked with, read from its ELF dynamic section (no subprocess).

yod must launch a program through its own MPI's launcher and preload the matching libbobcat
flavour.  The DT_NEEDED entries of the executable answer that for every normally linked MPI
program; only when the program needs libraries we do not recognise (the MPI may come in
indirectly, through a library of the application) does yod ask `ldd`.
"""

import struct

# sonames that identify an MPI ABI; prefixes so that Fortran/C++ bindings count too.
_SONAME_MPI = (
    ("libmpi.so.40", "openmpi"), ("libmpi.so.20", "openmpi"), ("libmpi_mpifh.so", "openmpi"),
    ("libmpi_usempi", "openmpi"), ("libmpi_cxx.so", "openmpi"), ("libopen-pal.so", "openmpi"),
    ("libopen-rte.so", "openmpi"),
    ("libmpich.so", "mpich"), ("libmpi.so.12", "mpich"), ("libmpifort.so.12", "mpich"),
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
_DT_NULL, _DT_NEEDED, _DT_STRTAB, _DT_STRSZ = 0, 1, 5, 10


def needed(path: str) -> list[str] | None:
    """DT_NEEDED sonames of an ELF file; [] for a static binary; None if it is not ELF."""
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
                return []
            f.seek(dyn[0])
            raw = f.read(dyn[1])
            dfmt = end + ("qQ" if is64 else "iI")
            dsize = struct.calcsize(dfmt)
            names, strtab, strsz = [], None, 0
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
            if strtab is None:
                return []
            # DT_STRTAB is a run-time address; the PT_LOAD that covers it says where it sits in the file.
            for vaddr, off, filesz in loads:
                if vaddr <= strtab < vaddr + filesz:
                    f.seek(off + strtab - vaddr)
                    break
            else:
                return []
            strings = f.read(strsz)
    except (OSError, struct.error):
        return None
    out = []
    for o in names:
        stop = strings.find(b"\0", o)
        out.append(strings[o:stop if stop >= 0 else None].decode("utf-8", "replace"))
    return out


def mpi_of_sonames(sonames: list[str]) -> str | None:
    for so in sonames:
        for prefix, mpi in _SONAME_MPI:
            if so.startswith(prefix):
                return mpi
    return None


def _ldd_sonames(path: str) -> list[str]:
    import subprocess
    try:
        out = subprocess.run(["ldd", path], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.split()[0] for line in out.splitlines() if "=>" in line]


def detect_mpi(path: str) -> str | None:
    """'openmpi', 'mpich' or None (not an MPI program, or not ELF: use --mpi to say otherwise)."""
    sonames = needed(path)
    if not sonames:
        return None
    mpi = mpi_of_sonames(sonames)
    if mpi is None and any(so not in _SYSTEM for so in sonames):
        mpi = mpi_of_sonames(_ldd_sonames(path))
    return mpi
