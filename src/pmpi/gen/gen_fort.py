#!/usr/bin/env python3
"""Generate the Fortran entry points of the MPI layer for Open MPI (pmpi_fort_openmpi.c).

Open MPI's `mpif.h` and `use mpi` bindings (mpi_send_, MPI_SEND, ...: weak aliases of one function,
ompi_send_f) and its `use mpi_f08` ones (mpi_send_f08_, which call ompi_send_f) convert their
arguments and call the C PMPI_Send directly, so a C interposer never sees them. For every routine the
layer handles, this defines all five names (ompi_x_f, mpi_x, mpi_x_, mpi_x__, MPI_X) as one function
that converts the Fortran arguments and calls the layer's own MPI_X, so Fortran takes bobcat's path
exactly as C does. Two other kinds:

* a routine the layer defines but whose arguments this cannot convert generically (strings,
  callbacks, arrays of handles, attribute and base pointers) and every blocking routine of pass.list
  the layer only passes through: a forwarder to the MPI's own Fortran profiling entry (pmpi_x_),
  inside the progress rule (bobcat_msg_away_begin/end), so the MPI's Fortran behaviour and its
  sentinels are kept and a rank inside it still serves its node mates;
* Init, Init_thread, the Wait/Test families over arrays, Startall, Buffer_detach and Win_get_attr: written by hand
  in lang/pmpi_fort.c (1-based indices, arrays of requests and statuses).

Only routines the MPI's Fortran library exports (nm -D of libmpi_mpifh) are emitted. Usage:

    gen_fort.py --cc CC --include DIR[;DIR...] --fortlib LIB --list pass.list --out FILE SOURCE...
"""
import argparse
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_pass import PROTO, QUALIFIERS, bytes_expr, defined_in, names_of, shape  # noqa: E402

# The C handle type's name in MPI_X_f2c / MPI_X_c2f.
def f2c(base):
    return "MPI_Type" if base == "MPI_Datatype" else base


HANDLES = {"Comm", "Datatype", "Op", "Group", "Info", "Win", "File", "Request", "Message", "Errhandler"}
BUFFERS = {"buf", "ibuf", "buffer", "sendbuf", "recvbuf", "inbuf", "outbuf", "inoutbuf"}
# One-sided communication's choice buffers (the origin's, a fetch's result, a compare-and-swap's
# value, a window's memory) are buffers too.
RMA_BUFFERS = {"origin_addr", "result_addr", "compare_addr", "base"}
# The `use mpi` module's forms with a TYPE(C_PTR) base pointer (mpi_win_allocate_cptr_ ...): the
# same function as the plain one in the MPI's library, so the same entry point here.
CPTR = {"Win_allocate", "Win_allocate_shared", "Win_shared_query"}
WIDE = {"MPI_Aint", "MPI_Offset", "MPI_Count"}
# Written by hand in lang/pmpi_fort.c.
BY_HAND = {"Init", "Init_thread", "Waitall", "Waitany", "Waitsome", "Testall", "Testany", "Testsome",
           "Startall", "Buffer_detach", "Win_get_attr"}
# Routines whose handle arguments are read as well as written (the rest only write theirs).
INOUT = {"Wait", "Test", "Request_free", "Cancel", "Start", "Mrecv", "Imrecv", "File_close",
         "Comm_disconnect"}


# The handle conversions that look predefined handles up in pmpi_fort.h's table first.
FAST = {"MPI_Comm": "fort_comm", "MPI_Datatype": "fort_type", "MPI_Op": "fort_op"}
PREDEFINED = re.compile(r"^#define (MPI_\w+) OMPI_PREDEFINED_GLOBAL\(\s*(MPI_Datatype|MPI_Op)\s*,", re.M)


def predefined(cc, incs):
    """C text: the predefined datatypes and ops mpi.h names, for pmpi_fort.h's handle table."""
    pre = subprocess.run([cc, "-E", "-dM", *incs, "-x", "c", "-"], input="#include <mpi.h>\n",
                         capture_output=True, text=True)
    kinds = {"MPI_Datatype": [], "MPI_Op": []}
    for m in PREDEFINED.finditer(pre.stdout):
        kinds[m.group(2)].append(m.group(1))
    t, o = sorted(set(kinds["MPI_Datatype"])), sorted(set(kinds["MPI_Op"]))
    return (f"const MPI_Datatype fort_predef_type[] = {{{', '.join(t)}}};\n"
            f"const int fort_predef_ntype = {len(t)};\n"
            f"const MPI_Op fort_predef_op[] = {{{', '.join(o)}}};\n"
            f"const int fort_predef_nop = {len(o)};\n")


def parse(param):
    """(base type, pointer depth, is array, name) of one C parameter."""
    head, brackets = re.match(r"([^\[]*)(.*)$", param.strip()).groups()
    stars = head.count("*")
    ids = [t for t in re.findall(r"\w+", head) if t not in QUALIFIERS]
    return ids[0], stars, bool(brackets), ids[-1] if len(ids) >= 2 else None


def converter(name, params):
    """C text of a converting entry point, or None when the arguments are not all convertible."""
    fparams, locs, args, after = [], [], [], []
    for p in params:
        base, stars, arr, pname = parse(p)
        if pname is None or "weights" in pname:
            return None  # MPI_UNWEIGHTED / MPI_WEIGHTS_EMPTY are Fortran sentinels too: leave to the MPI
        if base == "void" and stars == 1 and not arr and pname in C_PTRS:
            fparams.append(f"void *{pname}")  # an address-sized integer the routine stores a pointer in
            args.append(pname)
        elif base == "void" and stars == 1 and not arr:
            if pname not in BUFFERS | RMA_BUFFERS:
                return None  # attribute values: Fortran integers, not buffers
            fparams.append(f"void *{pname}")
            args.append(f"fort_buf({pname})")
        elif base == "int" and stars == 0 and not arr:
            fparams.append(f"MPI_Fint *{pname}")
            args.append(f"*{pname}")
        elif base == "int" and stars + arr == 1:
            fparams.append(f"MPI_Fint *{pname}")
            args.append(pname)
        elif base in WIDE and stars == 0 and not arr:
            fparams.append(f"{base} *{pname}")
            args.append(f"*{pname}")
        elif base in WIDE and stars + arr == 1:
            fparams.append(f"{base} *{pname}")
            args.append(pname)
        elif base in FAST and stars == 0 and not arr:
            fparams.append(f"MPI_Fint *{pname}")
            args.append(f"{FAST[base]}(*{pname})")  # predefined handles from a table (pmpi_fort.h)
        elif base.startswith("MPI_") and base[4:] in HANDLES and stars == 0 and not arr:
            fparams.append(f"MPI_Fint *{pname}")
            args.append(f"{f2c(base)}_f2c(*{pname})")
        elif base.startswith("MPI_") and base[4:] in HANDLES and stars == 1 and not arr:
            fparams.append(f"MPI_Fint *{pname}")
            inout = name in INOUT or name.endswith("_free")
            locs.append(f"    {base} h_{pname}" + (f" = {f2c(base)}_f2c(*{pname});" if inout else ";"))
            args.append(f"&h_{pname}")
            after.append(f"        *{pname} = {f2c(base)}_c2f(h_{pname});")
        elif base == "MPI_Status" and stars == 1 and not arr:
            fparams.append(f"MPI_Fint *{pname}")
            locs.append(f"    MPI_Status s_{pname};")
            locs.append(f"    int ign_{pname} = fort_status_ignore({pname});")
            args.append(f"ign_{pname} ? MPI_STATUS_IGNORE : &s_{pname}")
            after.append(f"        if (!ign_{pname})\n            fort_status_put(&s_{pname}, {pname});")
        else:
            return None
    fparams.append("MPI_Fint *ierr")
    body = "\n".join(locs + [f"    int rc = MPI_{name}({', '.join(args)});"])
    if after:
        body += "\n    if (rc == MPI_SUCCESS) {\n" + "\n".join(after) + "\n    }"
    body += "\n    if (ierr)\n        *ierr = rc;"
    sig = ", ".join(fparams)
    return sig, f"static void fort_{name.lower()}({sig})\n{{\n{body}\n}}\n"


def forwarder(name, params, f08_sym=None, ts=False, blocking=True):
    """C text of an entry point that hands the call to the MPI's own Fortran profiling entry
    (pmpi_x_, Open MPI), or with f08_sym to MPICH's own mpi_f08 procedure of that name (the next
    definition after the layer's: RTLD_NEXT), whose choice buffers are descriptors when ts. A
    blocking routine runs inside the progress rule (and without the layer's lock at
    MPI_THREAD_MULTIPLE: pmpi_away_begin/end, PMPI_AWAY's halves); the others are only counted."""
    n = len(params)
    lens = sum(1 for p in params if parse(p)[0] == "char")  # a hidden length per CHARACTER argument
    # The account's view of the arguments, as C values (only evaluated while counting).
    views = []
    for i, p in enumerate(params):
        base, ptr = shape(p)
        if base == "void" and ptr == 1 and f08_sym:
            views.append(f"f08_addr(((f08_desc_t *)a{i})->base)" if ts else f"a{i}")
        elif base == "void" and ptr == 1:
            views.append(f"fort_buf(a{i})")
        elif base in ("int", "MPI_Count") and ptr == 0:
            views.append(f"*({'MPI_Fint' if base == 'int' else base} *)a{i}")
        elif base == "MPI_Datatype" and ptr == 0:
            views.append(f"MPI_Type_f2c(*(MPI_Fint *)a{i})")
        elif base == "MPI_Comm" and ptr == 0:
            views.append(f"MPI_Comm_f2c(*(MPI_Fint *)a{i})")
        else:
            views.append(f"a{i}")
    comm = next((v for p, v in zip(params, views) if shape(p) == ("MPI_Comm", 0)), None)
    count = f"pmpi_pass_count(idx, {comm or 'MPI_COMM_NULL'}, {bytes_expr(name, params, views, comm)})"
    fparams = [f"void *a{i}" for i in range(n)] + ["MPI_Fint *ierr"] + [f"size_t l{i}" for i in range(lens)]
    fargs = [f"a{i}" for i in range(n)] + ["ierr"] + [f"l{i}" for i in range(lens)]
    sig = ", ".join(fparams)
    lower = name.lower()
    pre, entry = ("f08", f08_sym) if f08_sym else ("fort", f"pmpi_{lower}_")
    entry = f"fort_profiling_entry(\"{entry}\")"
    text = (f"static void {pre}_{lower}({sig})\n{{\n"
            f"    static void (*fn)({sig});\n"
            f"    if (!fn)\n        fn = (void (*)({sig})){entry};\n"
            f"    static int idx = -2; /* its row in the account, when a pass-through */\n"
            f"    if (__builtin_expect(pmpi_stats_on, 0)) {{\n"
            f"        if (idx == -2)\n            idx = pmpi_pass_index(\"{name}\");\n"
            f"        if (idx >= 0)\n            {count};\n    }}\n"
            + (f"    pmpi_away_t away = pmpi_away_begin();\n"
               f"    fn({', '.join(fargs)});\n"
               f"    pmpi_away_end(away);\n}}\n"
               if blocking else f"    fn({', '.join(fargs)});\n}}\n"))
    return sig, text


# ---- MPICH's `use mpi_f08` binding (lang/pmpi_f08.h describes its ABI) ---------------------------

# The blocking collectives: a non-contiguous buffer goes through a contiguous temporary (their
# counts describe pieces of the whole, which one derived datatype cannot); point-to-point takes
# the section's derived datatype instead, which a pending request may keep.
COLLECTIVES = {"Allgather", "Allgatherv", "Allreduce", "Alltoall", "Bcast", "Exscan", "Gather", "Gatherv",
               "Reduce", "Reduce_scatter", "Reduce_scatter_block", "Scan", "Scatter", "Scatterv"}
OUT_BUFFERS = {"recvbuf", "buffer", "buf", "inoutbuf"}
# TYPE(C_PTR), INTENT(OUT) arguments: C's `void *` that is really a `void **`, passed as it is.
C_PTRS = {"baseptr", "buffer_addr"}
# Written by hand in lang/pmpi_f08.c.
BY_HAND_F08 = {"Init", "Init_thread", "Waitany", "Testany", "Waitsome", "Testsome", "Win_get_attr"}


def f08_symbol(name, syms):
    """The name MPICH's mpi_f08 module calls for C routine `name`, or None: mpi_x_f08ts_ (choice
    buffers as descriptors) or mpi_x_f08_, with _large_ for the MPI_Count forms (MPI_X_c)."""
    large = name.endswith("_c")
    lower = (name[:-2] if large else name).lower()
    for kind in ("f08ts", "f08"):
        sym = f"mpi_{lower}_{kind}_" + ("large_" if large else "")
        if sym in syms:
            return sym, kind == "f08ts"
    return None, False


def converter_f08(name, params, ts):
    """C text of an mpi_f08 entry point for MPICH that calls the layer's MPI_X, or None."""
    from gen_pass import triples
    coll = name.removesuffix("_c") in COLLECTIVES
    runs = {b: (c, d) for b, c, d, vec in triples(name, params) if not vec}
    fparams, locs, args, after, preps = [], [], [], [], []
    skip = {}  # argument index -> C text, filled by a buffer for its count and datatype
    for i, p in enumerate(params):
        base, stars, arr, pname = parse(p)
        if pname is None or "weights" in pname:
            return None
        if i in skip:
            fparams.append(f"{'MPI_Fint' if base in ('int', 'MPI_Datatype') else base} *{pname}")
            args.append(skip[i])
            continue
        if base == "void" and stars == 1 and not arr and pname in C_PTRS:
            fparams.append(f"void *{pname}")
            args.append(pname)
        elif base == "void" and stars == 1 and not arr:
            if not ts or pname not in BUFFERS | {"base"}:
                return None  # attribute values: left to MPICH
            fparams.append(f"f08_desc_t *{pname}")
            if coll:
                out = int(pname in OUT_BUFFERS)
                locs.append(f"    f08_tmp_t t_{pname};")
                preps.append((f"f08_tmp({pname}, &t_{pname})", f"f08_tmp_done(&t_{pname}, {out}, rc);"))
                args.append(f"t_{pname}.buf")
            elif i in runs:
                c, d = runs[i]
                cbase, _, _, cname = parse(params[c])
                dname = parse(params[d])[3]
                locs.append(f"    f08_buf_t b_{pname};")
                preps.append((f"f08_buf({pname}, *{cname}, MPI_Type_f2c(*{dname}), &b_{pname})",
                              f"f08_buf_done(&b_{pname});"))
                args.append(f"b_{pname}.buf")
                skip[c] = f"({cbase})b_{pname}.count"
                skip[d] = f"b_{pname}.type"
            else:
                args.append(f"f08_addr({pname}->base)")  # MPICH's own rule: no sub-array here
        elif base == "int" and stars == 0 and not arr:
            fparams.append(f"MPI_Fint *{pname}")
            args.append(f"*{pname}")
        elif base == "int" and stars + arr == 1 and pname == "flag":
            fparams.append(f"MPI_Fint *{pname}")  # LOGICAL: gfortran's .TRUE. is 1
            locs.append(f"    int l_{pname} = 0;")
            args.append(f"&l_{pname}")
            after.append(f"*{pname} = l_{pname} != 0;")
        elif base == "int" and stars + arr == 1:
            fparams.append(f"MPI_Fint *{pname}")  # LOGICAL inputs (periods, reorder) read as C ints
            args.append(pname)
        elif base in WIDE and stars + arr <= 1:
            fparams.append(f"{base} *{pname}")
            args.append(pname if stars + arr else f"*{pname}")
        elif base.startswith("MPI_") and base[4:] in HANDLES - {"File"} and stars + arr == 0:
            fparams.append(f"MPI_Fint *{pname}")
            args.append(f"{f2c(base)}_f2c(*{pname})")
        elif base.startswith("MPI_") and base[4:] in HANDLES - {"File"} and stars + arr == 1:
            fparams.append(f"{base} *{pname}")  # MPICH's Fortran handles are its C handles
            args.append(pname)
        elif base == "MPI_Status" and stars + arr == 1:
            fparams.append(f"MPI_Status *{pname}")
            args.append(f"f08_statuses({pname})" if arr or "statuses" in pname else f"f08_status({pname})")
        else:
            return None
    fparams.append("MPI_Fint *ierr")
    call = f"rc = MPI_{name}({', '.join(args)});"
    if after:
        call += "\nif (rc == MPI_SUCCESS) {\n" + "\n".join(f"    {a}" for a in after) + "\n}"
    # Each buffer's preparation wraps the call; its undoing follows it, innermost first.
    for prep, done in reversed(preps):
        inner = "\n".join("    " + l for l in call.split("\n"))
        call = f"rc = {prep};\nif (rc == MPI_SUCCESS) {{\n{inner}\n    {done}\n}}"
    body = "\n".join(locs + ["    int rc;"] + ["    " + l for l in call.split("\n")])
    body += "\n    if (ierr)\n        *ierr = rc;"
    sig = ", ".join(fparams)
    return sig, f"static void f08_{name.lower()}({sig})\n{{\n{body}\n}}\n"


def main_f08(a, protos, done):
    """pmpi_fort_mpich.c: the mpi_f08 entry points of MPICH: converting ones for the routines the
    layer defines (where the arguments allow), and forwarders to MPICH's own for every other
    mpi_x_f08_ (which would call PMPI_X: counted here; the blocking ones inside the progress rule)."""
    lines = ["/* Generated by src/pmpi/gen/gen_fort.py --binding mpich-f08 from MPICH's mpi.h, the symbols of",
             " * its Fortran library and the layer's sources: do not edit. The hand-written part is",
             " * lang/pmpi_f08.c; the ABI is described in lang/pmpi_f08.h. */",
             '#include "lang/pmpi_f08.h"', "", "#if defined(MPICH)", ""]
    syms = symbols(a.fortlib, "--defined-only")
    blocking = set()
    for n in names_of(a.list):
        blocking |= {n, n + "_c"}
    made, fwd = [], []
    for name in sorted(set(protos) - BY_HAND_F08):
        sym, ts = f08_symbol(name, syms)
        if sym is None or "..." in protos[name]:
            continue
        proto = protos[name]
        params = [] if proto in ("", "void") else [p.strip() for p in proto.split(",")]
        conv = converter_f08(name, params, ts) if name in done else None
        if conv:
            made.append(name)
        elif ts:
            continue  # MPICH's mpi_x_f08ts_ calls the C MPI_X, the layer's pass-through: counted there
        else:
            # Every mpi_x_f08_ calls PMPI_X, past the layer: MPICH's own procedure, counted (strings,
            # callbacks, attribute values, graph weights, and every routine the layer only passes
            # through), the blocking ones and the layer's own inside the progress rule.
            conv = forwarder(name, params, sym, ts, blocking=name in blocking or name in done)
            fwd.append(name)
        sig, text = conv
        lines.append(text)
        lines.append(f"F08_NAME({sym}, f08_{name.lower()}, ({sig}))")
        lines.append("")
    lines.append("#endif /* MPICH */")
    return "\n".join(lines) + "\n", f"{len(made)} converting and {len(fwd)} forwarding mpi_f08 entry points"


def plain_f08(lib):
    """The routines (lower case) whose `use mpi_f08` procedure in Open MPI's library, mpi_x_f08_, only
    passes its arguments on to ompi_x_f (the handles' MPI_VAL is the derived type's address, an
    absent optional ierror a null pointer): the C ABI of ompi_x_f, so the layer's converting entry
    can take that name too and spare the f08 program a call. Read from the library's code: a short
    function whose only calls are ompi_x_f (and the stack protector's). Empty without objdump."""
    try:
        out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", lib], capture_output=True, text=True)
    except OSError:
        return set()
    if out.returncode != 0:
        return set()
    plain = set()
    for body in re.split(r"\n(?=[0-9a-f]+ <)", out.stdout):
        m = re.match(r"[0-9a-f]+ <mpi_(\w+)_f08_(?:@@Base)?>:", body)
        if not m:
            continue
        calls = {c for c in re.findall(r"call\s+[0-9a-f]+ <([^@>]+)@plt>", body) if c != "__stack_chk_fail"}
        if calls == {f"ompi_{m.group(1)}_f"} and len(body.splitlines()) <= 40:
            plain.add(m.group(1))
    return plain


def symbols(lib, *flags):
    out = subprocess.run(["nm", "-D", *flags, lib], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"gen_fort: cannot read the symbols of {lib}: {out.stderr.strip()}")
    return {line.split()[-1] for line in out.stdout.splitlines() if line.strip()}


def mpi_protos(a):
    """The include flags and {routine: parameter list} of the MPI's C API, from its mpi.h."""
    incs = [f"-I{d}" for d in a.include.split(";") if d]
    pre = subprocess.run([a.cc, "-E", "-P", *incs, "-x", "c", "-"], input="#include <mpi.h>\n",
                         capture_output=True, text=True)
    if pre.returncode != 0:
        sys.exit(f"gen_fort: cannot preprocess mpi.h: {pre.stderr.strip()}")
    return incs, {m.group(1): " ".join(m.group(2).split()) for m in PROTO.finditer(pre.stdout)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cc", required=True)
    ap.add_argument("--include", default="")
    ap.add_argument("--fortlib", default="")
    ap.add_argument("--f08lib", default="")
    ap.add_argument("--list", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--binding", default="openmpi", choices=["openmpi", "mpich-f08"])
    ap.add_argument("sources", nargs="*")
    a = ap.parse_args()
    if a.binding == "mpich-f08":
        incs, protos = mpi_protos(a)
        text, what = main_f08(a, protos, defined_in(a.sources))
        if not os.path.exists(a.out) or open(a.out).read() != text:
            with open(a.out, "w") as f:
                f.write(text)
        print(f"gen_fort: {what} in {os.path.basename(a.out)}")
        return
    lines = ["/* Generated by src/pmpi/gen/gen_fort.py from Open MPI's mpi.h, its Fortran library and",
             " * the layer's sources: do not edit. The hand-written part is lang/pmpi_fort.c. */",
             '#include "lang/pmpi_fort.h"', ""]
    conv = fwd = f08 = 0
    syms = symbols(a.fortlib, "--defined-only") if a.fortlib and os.path.exists(a.fortlib) else set()
    # The mpi_f08 wrappers of routines with LOGICAL arguments call the profiling entry (pmpi_test_)
    # rather than ompi_test_f: those names are defined too (the forwarders reach the MPI's own
    # through RTLD_NEXT, so this does not loop).
    via_pmpi = symbols(a.f08lib, "--undefined-only") if a.f08lib and os.path.exists(a.f08lib) else set()
    direct_f08 = plain_f08(a.f08lib) if a.f08lib and os.path.exists(a.f08lib) else set()
    if syms:
        incs, protos = mpi_protos(a)
        lines.append(predefined(a.cc, incs))
        done = defined_in(a.sources)
        blocking = set(names_of(a.list))
        # Every routine of the MPI's Fortran library: the layer's own converted, the rest forwarded
        # to the MPI's Fortran (counted in the account; the blocking ones inside the progress rule).
        for name in sorted(set(protos) - BY_HAND):
            lower = name.lower()
            if name.endswith("_c") or "..." in protos[name] or f"ompi_{lower}_f" not in syms \
                    or f"pmpi_{lower}_" not in syms:
                continue
            proto = protos[name]
            params = [] if proto in ("", "void") else [p.strip() for p in proto.split(",")]
            made = converter(name, params) if name in done else None
            converting = made is not None
            if made:
                conv += 1
            else:
                made = forwarder(name, params, blocking=name in blocking or name in done)
                fwd += 1
            sig, text = made
            lines.append(text)
            lines.append(f"FORT_NAMES({lower}, {name.upper()}, fort_{lower}, ({sig}))")
            if name in CPTR and name in done and f"ompi_{lower}_cptr_f" in syms:
                lines.append(f"FORT_NAMES({lower}_cptr, {name.upper()}_CPTR, fort_{lower}, ({sig}))")
            if f"pmpi_{lower}_" in via_pmpi:
                lines.append(f"FORT_PMPI({lower}, fort_{lower}, ({sig}))")
            if converting and lower in direct_f08:
                lines.append(f"FORT_F08({lower}, fort_{lower}, ({sig}))")
                f08 += 1
            lines.append("")
    text = "\n".join(lines)
    if not os.path.exists(a.out) or open(a.out).read() != text:
        with open(a.out, "w") as f:
            f.write(text)
    print(f"gen_fort: {conv} converting (mpi_f08 names of {f08} of them too) and {fwd} forwarding Fortran entry "
          f"points in {os.path.basename(a.out)}")


if __name__ == "__main__":
    main()
