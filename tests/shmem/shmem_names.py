#!/usr/bin/env python3
"""shmem_names: every routine name of the OpenSHMEM 1.5 C API (written out here from the standard's
tables, independently of include/bobcat/shmem.h) must be exported by the library, and every constant
and handle the standard names must be defined by shmem.h. External conformance (shmem4py) found the
sized put-with-signal routines spelled differently and shmem_pcontrol missing: this catches a name the
test programs never call. Each shmem_ routine must also be exported as pshmem_ (profiling interface),
and shmem.h and pshmem.h must compile together.

usage: shmem_names.py LIBRARY.so OSHCC
"""
import os
import subprocess
import sys
import tempfile

RMA = ("float double longdouble char schar short int long longlong uchar ushort uint ulong ulonglong "
       "int8 int16 int32 int64 uint8 uint16 uint32 uint64 size ptrdiff").split()        # table 5
AMO_STD = "int long longlong uint ulong ulonglong int32 int64 uint32 uint64 size ptrdiff".split()
AMO_EXT = AMO_STD + ["float", "double"]                                                  # table 6
AMO_BIT = "uint ulong ulonglong int32 int64 uint32 uint64".split()
SYNC = ("short int long longlong ushort uint ulong ulonglong int32 int64 uint32 uint64 size "
        "ptrdiff").split()                                                               # table 8
RED_BIT = ("uchar ushort uint ulong ulonglong int8 int16 int32 int64 uint8 uint16 uint32 uint64 "
           "size").split()                                                               # table 10
RED_MINMAX = ("char schar short int long longlong ptrdiff uchar ushort uint ulong ulonglong int8 "
              "int16 int32 int64 uint8 uint16 uint32 uint64 size float double longdouble").split()
RED_ARITH = RED_MINMAX + ["complexd", "complexf"]
SIZES = "8 16 32 64 128".split()


def with_ctx(names):
    return names + [n.replace("shmem_", "shmem_ctx_", 1) for n in names]


def standard_names():
    n = ("init finalize my_pe n_pes pe_accessible addr_accessible ptr team_ptr info_get_version "
         "info_get_name global_exit init_thread query_thread pcontrol malloc free realloc align "
         "malloc_with_hints calloc team_my_pe team_n_pes team_get_config team_translate_pe "
         "team_split_strided team_split_2d team_destroy team_sync ctx_create team_create_ctx "
         "ctx_destroy ctx_get_team signal_fetch signal_wait_until barrier_all barrier sync sync_all "
         "set_lock clear_lock test_lock wait wait_until broadcastmem collectmem fcollectmem "
         "alltoallmem alltoallsmem clear_cache_inv set_cache_inv clear_cache_line_inv "
         "set_cache_line_inv udcflush udcflush_line").split()
    names = [f"shmem_{x}" for x in n]
    names += with_ctx(["shmem_fence", "shmem_quiet"])
    rma_ops = "put get p g iput iget put_nbi get_nbi put_signal put_signal_nbi".split()
    names += with_ctx([f"shmem_{t}_{op}" for t in RMA for op in rma_ops])
    names += with_ctx([f"shmem_{op}{s}{suf}" for s in SIZES
                       for op, suf in [("put", ""), ("get", ""), ("iput", ""), ("iget", ""),
                                       ("put", "_nbi"), ("get", "_nbi"), ("put", "_signal"),
                                       ("put", "_signal_nbi")]])
    names += with_ctx([f"shmem_{op}" for op in "putmem getmem putmem_nbi getmem_nbi putmem_signal "
                       "putmem_signal_nbi".split()])
    amo = lambda types, ops: with_ctx([f"shmem_{t}_atomic_{op}" for t in types for op in ops])
    names += amo(AMO_EXT, "fetch set swap fetch_nbi swap_nbi".split())
    names += amo(AMO_STD, "compare_swap fetch_inc inc fetch_add add compare_swap_nbi fetch_inc_nbi "
                 "fetch_add_nbi".split())
    names += amo(AMO_BIT, [f"{f}{o}{nb}" for o in ("and", "or", "xor")
                           for f, nb in [("fetch_", ""), ("", ""), ("fetch_", "_nbi")]])
    waits = [f"{w}{s}" for w in ("wait_until", "test") for s in
             ("", "_all", "_any", "_some", "_all_vector", "_any_vector", "_some_vector")]
    names += [f"shmem_{t}_{w}" for t in SYNC for w in waits]
    names += [f"shmem_{t}_wait" for t in "short int long longlong".split()]             # deprecated
    names += [f"shmem_{t}_{c}" for t in RMA
              for c in "broadcast collect fcollect alltoall alltoalls".split()]
    names += [f"shmem_{t}_{o}_reduce" for t in RED_BIT for o in ("and", "or", "xor")]
    names += [f"shmem_{t}_{o}_reduce" for t in RED_MINMAX for o in ("max", "min")]
    names += [f"shmem_{t}_{o}_reduce" for t in RED_ARITH for o in ("sum", "prod")]
    names += [f"shmem_{c}{b}" for b in ("32", "64")
              for c in "broadcast collect fcollect alltoall alltoalls".split()]         # deprecated
    toall_bit = "short int long longlong".split()
    toall_mm = toall_bit + "float double longdouble".split()
    names += [f"shmem_{t}_{o}_to_all" for t in toall_bit for o in ("and", "or", "xor")]
    names += [f"shmem_{t}_{o}_to_all" for t in toall_mm for o in ("max", "min")]
    names += [f"shmem_{t}_{o}_to_all" for t in toall_mm + ["complexd", "complexf"]
              for o in ("sum", "prod")]
    names += ["start_pes", "_my_pe", "_num_pes", "shmalloc", "shfree", "shmemalign", "shrealloc"]
    return sorted(set(names))


CONSTANTS = ("SHMEM_MAJOR_VERSION SHMEM_MINOR_VERSION SHMEM_MAX_NAME_LEN SHMEM_VENDOR_STRING "
             "SHMEM_THREAD_SINGLE SHMEM_THREAD_FUNNELED SHMEM_THREAD_SERIALIZED SHMEM_THREAD_MULTIPLE "
             "SHMEM_CMP_EQ SHMEM_CMP_NE SHMEM_CMP_GT SHMEM_CMP_GE SHMEM_CMP_LT SHMEM_CMP_LE "
             "SHMEM_SIGNAL_SET SHMEM_SIGNAL_ADD SHMEM_MALLOC_ATOMICS_REMOTE SHMEM_MALLOC_SIGNAL_REMOTE "
             "SHMEM_CTX_PRIVATE SHMEM_CTX_SERIALIZED SHMEM_CTX_NOSTORE SHMEM_CTX_INVALID "
             "SHMEM_TEAM_INVALID SHMEM_TEAM_NUM_CONTEXTS SHMEM_SYNC_VALUE SHMEM_SYNC_SIZE "
             "SHMEM_BCAST_SYNC_SIZE SHMEM_COLLECT_SYNC_SIZE SHMEM_REDUCE_SYNC_SIZE "
             "SHMEM_BARRIER_SYNC_SIZE SHMEM_ALLTOALL_SYNC_SIZE SHMEM_ALLTOALLS_SYNC_SIZE "
             "SHMEM_REDUCE_MIN_WRKDATA_SIZE").split()


def main():
    lib, oshcc = sys.argv[1], sys.argv[2]
    out = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True,
                         check=True).stdout
    exported = {ln.split()[-1] for ln in out.splitlines() if ln.strip()}
    missing = [n for n in standard_names() if n not in exported]
    # The profiling interface: every shmem_ routine also as pshmem_ (the legacy names without the
    # shmem_ prefix have none), plus the 1.5 name of the deprecated active-set sync.
    missing += [f"p{n}" for n in standard_names() + ["shmem_sync_deprecated"]
                if n.startswith("shmem_") and f"p{n}" not in exported]
    missing += [n for n in ["shmem_sync_deprecated"] if n not in exported]
    with tempfile.TemporaryDirectory() as d:
        c = os.path.join(d, "consts.c")
        with open(c, "w") as f:
            f.write("#include <shmem.h>\n#include <pshmem.h>\n")
            for k in CONSTANTS:
                f.write(f"#ifndef {k}\n#error missing macro {k}\n#endif\n")
            f.write("int main(void) { shmem_team_t t[2] = {SHMEM_TEAM_WORLD, SHMEM_TEAM_SHARED};\n"
                    "  shmem_ctx_t c = SHMEM_CTX_DEFAULT; shmem_team_config_t cf = {0};\n"
                    "  return (t[0] == t[1]) + (c == 0) + cf.num_contexts; }\n")
        p = subprocess.run([oshcc, "-c", c, "-o", os.path.join(d, "consts.o")],
                           capture_output=True, text=True)
    print(f"shmem_names: {len(standard_names())} standard names, {len(missing)} not exported")
    for n in missing:
        print(f"  missing: {n}")
    if p.returncode != 0:
        print("shmem_names: shmem.h lacks constants/handles:\n" + p.stderr)
    return 1 if missing or p.returncode != 0 else 0


if __name__ == "__main__":
    sys.exit(main())
