#!/usr/bin/env python3
"""pshmem_gen: the OpenSHMEM profiling interface, generated from shmem.h so that it can never
drift from it.

  pshmem_gen.py CC SHMEM_H PSHMEM_H PSHMEM_LD

* PSHMEM_LD, a linker script of assignments `pshmem_X = shmem_X;`, one per routine shmem.h declares
  (taken from the preprocessed header): linked into libbobcat-shmem-<mpi>.so, it gives every
  shmem_X a second, name-shifted entry point at the same code. A tool defines shmem_X in the
  program (the dynamic linker prefers the program's definition) and calls pshmem_X, which still
  reaches the library. A routine declared but not defined fails the link, naming it.
* PSHMEM_H, the declarations of those entry points: the declaration part of shmem.h with every
  routine name shifted (`shmem_` before a parameter list becomes `pshmem_`, which covers the
  X-macro bodies like `shmem_##N##_put(`) and the X-macros renamed so both headers can be included.
"""
import re
import subprocess
import sys

BEGIN = "/* --- library setup"
END = "#ifdef __cplusplus\n}"
ROUTINE = re.compile(r"\bshmem_(?=[\w#]*\s*\()")


def routine_names(cc: str, header: str) -> list[str]:
    pre = subprocess.run([cc, "-E", "-P", "-DSHMEMI_NO_GENERIC", "-x", "c", header], check=True,
                         capture_output=True, text=True).stdout
    return sorted(set(re.findall(r"\b(shmem_\w+)\s*\(", pre)))


def pshmem_header(text: str) -> str:
    try:
        start = text.index(BEGIN)
        body = text[start:text.index(END, start)]
    except ValueError:
        sys.exit(f"pshmem_gen: shmem.h no longer has the markers {BEGIN!r} ... {END!r} around its "
                 "declarations: update BEGIN/END in src/shmem/pshmem_gen.py")
    body = ROUTINE.sub("pshmem_", body).replace("SHMEMI_DECL_", "PSHMEMI_DECL_")
    return ("/* pshmem.h: the OpenSHMEM profiling interface of bobcat's libbobcat-shmem-<mpi>.so — every\n"
            " * shmem_X routine of shmem.h also as pshmem_X, the same code. A tool defines shmem_X, does its\n"
            " * work and calls pshmem_X. GENERATED from shmem.h by src/shmem/pshmem_gen.py: do not edit. */\n"
            "#ifndef BOBCAT_PSHMEM_H\n#define BOBCAT_PSHMEM_H\n\n#include \"shmem.h\"\n\n"
            "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n" + body +
            "#ifdef __cplusplus\n}\n#endif\n\n#endif\n")


def main(argv: list[str]) -> int:
    if len(argv) != 5:
        sys.exit(__doc__)
    cc, header, out_h, out_ld = argv[1:]
    names = routine_names(cc, header)
    if not names:
        sys.exit(f"pshmem_gen: no shmem_* routine found in {header}")
    with open(header) as f:
        text = f.read()
    with open(out_h, "w") as f:
        f.write(pshmem_header(text))
    with open(out_ld, "w") as f:
        f.write("/* pshmem_X = shmem_X for every routine of shmem.h (src/shmem/pshmem_gen.py). */\n")
        f.writelines(f"pshmem{n[5:]} = {n};\n" for n in names)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
