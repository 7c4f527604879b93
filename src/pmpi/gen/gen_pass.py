#!/usr/bin/env python3
"""Generate the MPI layer's pass-through entry points (pmpi_pass_<flavour>.c): the account.

Every routine of the MPI's C API (each int-returning MPI_X its mpi.h declares and its C library
exports, `_c` forms included) that the layer's sources do not define gets

    BOBCAT_EXPORT int MPI_X(<the MPI's own parameter list>)
    {
        if (pmpi_stats_on)                          -- counted only while BOBCAT_STATS is on
            pmpi_pass_count(PASS_X, comm, bytes);   -- calls, bytes, on-node or off-node
        return PMPI_X(<names>);                     -- PMPI_AWAY(...) for the routines of pass.list
    }

so BOBCAT_STATS accounts for every call a program makes, not only those bobcat handles (docs/mpi.md,
"The account"). The routines of pass.list are those that may block waiting for other ranks: they
run inside PMPI_AWAY, so a rank sitting in one still serves its node mates (docs/mpi.md,
"Progress"). Excluded: handle conversions (_c2f/_f2c...), varargs, and names mpi.h defines as macros
(the removed MPI-1 routines). The parameter lists come from the preprocessed header of that very
MPI, so the definitions agree with its declarations exactly. Usage:

    gen_pass.py --cc CC --include DIR[;DIR|-DFLAG...] [--mpilib LIB] --list pass.list --out FILE SOURCE...
"""
import argparse
import os
import re
import subprocess
import sys

PROTO = re.compile(r"\bint\s+PMPI_(\w+)\s*\(([^()]*)\)")
# MPI_X, SFX(MPI_X) (and MPI_X_c), or PCOLL(X) (MPI_X_init, coll/pmpi_coll.h)
DEFINED = re.compile(r"BOBCAT_EXPORT\s+int\s+(?:(SFX\(\s*)?MPI_(\w+)\s*\)?|PCOLL\(\s*(\w+)\s*\))\s*\(")
CONVERSION = re.compile(r"_(c2f|f2c|f082c|c2f08|f082f|f2f08)$")
COUNTS = {"int", "MPI_Count"}
# Nonblocking and request-based communication (for the account's "moves data" flag) ...
STARTS = re.compile(r"(I(all|barrier|bcast|exscan|gather|neighbor|reduce|scan|scatter|m?probe|mrecv|b?send|r?send"
                    r"|s?send|recv|sendrecv)|R(put|get|accumulate|send)|Put|Get|Accumulate|Fetch_and_op|"
                    r"Compare_and_swap)")
# ... and routines with a buffer argument that still move nothing between ranks.
LOCAL = re.compile(r"^(Pack|Unpack|Type_|Get_|Status_|Buffer_|Op_|Reduce_local)|errhandler|_keyval|_attr$")


def names_of(listfile):
    out = []
    for line in open(listfile):
        line = line.split("#", 1)[0]
        out += line.split()
    return out


def defined_in(sources):
    done = set()
    for path in sources:
        for m in DEFINED.finditer(open(path).read()):
            if m.group(3):
                done.add(m.group(3) + "_init")
                continue
            done.add(m.group(2))
            if m.group(1):  # SFX(MPI_X): also MPI_X_c (the count-typed twin)
                done.add(m.group(2) + "_c")
    return done


QUALIFIERS = {"const", "volatile", "restrict", "__restrict", "struct", "enum"}


def named(param, i):
    """(the parameter with a name, its name): the header's name, or a0, a1... where it has none."""
    head, brackets = re.match(r"([^\[]*)(.*)$", param.strip()).groups()
    ids = [t for t in re.findall(r"\w+", head) if t not in QUALIFIERS]
    if len(ids) >= 2:
        return param.strip(), ids[-1]
    name = f"a{i}"
    return f"{head.rstrip()} {name}{brackets}", name


def shape(param):
    """(base type, pointers + brackets) of one parameter."""
    head, brackets = re.match(r"([^\[]*)(.*)$", param.strip()).groups()
    ids = [t for t in re.findall(r"\w+", head) if t not in QUALIFIERS]
    return ids[0], head.count("*") + brackets.count("[")


def preprocess(cc, incs, flags=()):
    pre = subprocess.run([cc, "-E", *flags, *incs, "-x", "c", "-"], input="#include <mpi.h>\n",
                         capture_output=True, text=True)
    if pre.returncode != 0:
        sys.exit(f"gen_pass: cannot preprocess mpi.h: {pre.stderr.strip()}")
    return pre.stdout


def triples(name, params):
    """The (buffer, count, datatype) argument runs of a call, as (buffer, count, datatype, vector)."""
    out = []
    shapes = [shape(p) for p in params]
    for i in range(len(params) - 2):
        (b0, s0), (b1, s1), (b2, s2) = shapes[i:i + 3]
        if b0 != "void" or s0 != 1 or b1 not in COUNTS:
            continue
        if b2 == "MPI_Datatype" and s2 == 0:
            out.append((i, i + 1, i + 2, s1 == 1))
        elif s1 == 1 and s2 == 1 and i + 3 < len(params) and shapes[i + 3] == ("MPI_Datatype", 0):
            out.append((i, i + 1, i + 3, True))  # counts[], displacements[], datatype
    return out


def bytes_expr(name, params, names, comm):
    """C expression for the bytes a call moves (this rank's side), evaluated only when counting.
    Send side first, the receive side where this rank's send side is MPI_IN_PLACE (Scatter
    families: the other way round, since only the root's send side is significant). Vector counts
    are summed over the communicator only where every rank's are significant (Alltoallv, Reduce_
    scatter); neighbourhood collectives and Alltoallw are not sized (0)."""
    low = name.lower()
    if "neighbor" in low:
        return "0"
    runs = triples(name, params)
    if not runs:
        return "0"
    if "scatter" in low and "reduce" not in low:
        runs = runs[::-1]

    def one(run):
        b, c, d, vec = run
        if not vec:
            return f"pmpi_pass_bytes({names[c]}, {names[d]})"
        if comm and ("alltoallv" in low or "reduce_scatter" in low):
            return f"pmpi_pass_vbytes({names[c]}, {'1' if shape(params[c])[0] == 'MPI_Count' else '0'}, {names[d]}, {comm})"
        return None

    first = one(runs[0])
    if len(runs) > 1:
        other = one(runs[1])
        if first and other:
            return f"({names[runs[0][0]]} == MPI_IN_PLACE ? {other} : {first})"
        return first or other or "0"
    return first or "0"


def symbols(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"gen_pass: cannot read the symbols of {lib}: {out.stderr.strip()}")
    return {line.split()[-1] for line in out.stdout.splitlines() if line.strip()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cc", required=True)
    ap.add_argument("--include", default="")
    ap.add_argument("--mpilib", default="")
    ap.add_argument("--list", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("sources", nargs="*")
    a = ap.parse_args()
    # Directories, or preprocessor flags as they are (the standard ABI's -DMPI_ABI selects mpi_abi.h).
    incs = [d if d.startswith("-") else f"-I{d}" for d in a.include.split(";") if d]
    protos = {m.group(1): " ".join(m.group(2).split()) for m in PROTO.finditer(preprocess(a.cc, incs, ["-P"]))}
    macros = set(re.findall(r"^#define (MPI_\w+)\(", preprocess(a.cc, incs, ["-dM"]), re.M))
    exported = symbols(a.mpilib) if a.mpilib and os.path.exists(a.mpilib) else None
    done = defined_in(a.sources)
    blocking = set()
    for n in names_of(a.list):
        blocking |= {n, n + "_c"}
    lines = ["/* Generated by src/pmpi/gen/gen_pass.py from this MPI's mpi.h and pass.list: do not edit. */",
             '#include "base/pmpi_comm.h"',
             "/* Deprecated routines are passed on as they are: the program chose them. */",
             '#pragma GCC diagnostic ignored "-Wdeprecated-declarations"', ""]
    table, moves = [], []
    for n in sorted(protos):
        params = protos[n]
        if n in done or "..." in params or CONVERSION.search(n) or f"MPI_{n}" in macros:
            continue
        if exported is not None and f"PMPI_{n}" not in exported:
            continue
        plist = [] if params in ("", "void") else params.split(",")
        pairs = [named(p, i) for i, p in enumerate(plist)]
        names = [nm for _, nm in pairs]
        decl = ", ".join(d for d, _ in pairs) or "void"
        args = ", ".join(names)
        comm = next((nm for p, nm in zip(plist, names) if shape(p) == ("MPI_Comm", 0)), None)
        size = bytes_expr(n, plist, names, comm)
        count = f"pmpi_pass_count({len(table)}, {comm or 'MPI_COMM_NULL'}, {size})"
        call = f"PMPI_AWAY(PMPI_{n}({args}))" if n in blocking else f"PMPI_{n}({args})"
        # A routine that hands out a request of the real MPI's (a nonblocking collective, MPI_Comm_idup,
        # a request-based RMA call...): from then on bobcat's waits drive the real MPI's progress too.
        note = "    pmpi_real_requests = 1;\n" if any(shape(p) == ("MPI_Request", 1) for p in plist) else ""
        lines.append(f"BOBCAT_EXPORT int MPI_{n}({decl})\n{{\n{note}    if (__builtin_expect(pmpi_stats_on, 0))\n"
                     f"        {count};\n    return {call};\n}}\n")
        table.append(n)
        # Does it move data or synchronise ranks (what the account's shares count), or is it local
        # (a query, a constructor, an attribute)?
        moves.append(not LOCAL.search(n) and (size != "0" or n in blocking or bool(STARTS.match(n))))
    lines.append(f"const int pmpi_pass_n = {len(table)};")
    lines.append("const unsigned char pmpi_pass_moves[] = {" + ", ".join(str(int(m)) for m in moves) + "};")
    lines.append("const char *const pmpi_pass_names[] = {\n" +
                 "".join(f'    "{n}",\n' for n in table) + "};")
    lines.append(f"uint64_t pmpi_pass_acct[{max(len(table), 1)}][PMPI_PASS_WORDS];\n")
    text = "\n".join(lines)
    if not os.path.exists(a.out) or open(a.out).read() != text:
        with open(a.out, "w") as f:
            f.write(text)
    nblock = sum(1 for n in table if n in blocking)
    print(f"gen_pass: {len(table)} pass-through entry points ({nblock} blocking) in {os.path.basename(a.out)}")


if __name__ == "__main__":
    main()
