/* bench/common/bc.h — the one shared utility of bobcat's benchmark programs.
 *
 * Two halves:
 *  - bc_util.c (no MPI; also used by bobcat-probe): clock, size parsing, the option parser with the
 *    common options, data patterns for validation, page-policy allocation, the JSON-lines emitter
 *    of contracts.md §3.
 *  - bc_mpi.c (compiled once per MPI flavour): start-up/finish, iteration control that all ranks
 *    agree on, reductions of per-rank timings, local rank and core binding.
 *
 * Everything is prefixed bc_. Output goes to stdout from rank 0 only; diagnostics go to stderr.
 */
#ifndef BOBCAT_BENCH_BC_H
#define BOBCAT_BENCH_BC_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------------- clock ------------------------ */

/* Monotonic seconds (clock_gettime through the vDSO: no syscall, ~20 ns). */
double bc_now(void);
/* qsort comparison of doubles, ascending (medians and quartiles of timed slices). */
int bc_cmp_double(const void *a, const void *b);

/* ---------------------------------------------------------------- options ---------------------- */

/* Which common options a program accepts; --validate and --help are always accepted. */
enum {
    BC_C_ITERS = 1 << 0,
    BC_C_WARMUP = 1 << 1,
    BC_C_TIME = 1 << 2,
    BC_C_SIZES = 1 << 3, /* --sizes and --max-size */
    BC_C_PAGES = 1 << 4,
};

typedef struct {
    long iters;        /* --iters: maximum timed iterations (per size) */
    long warmup;       /* --warmup: untimed iterations before timing */
    double time_s;     /* --time: budget in seconds per size; 0 = always run --iters */
    size_t *sizes;     /* the size list (from --sizes or --max-size) */
    int nsizes;
    size_t max_size;   /* --max-size: powers of two 0,1,2,4..max */
    int validate;      /* --validate */
    const char *pages; /* --pages: NULL (malloc, system default), "small" or "large" */
} bc_common_t;

typedef enum { BC_OPT_LONG, BC_OPT_SIZE, BC_OPT_DOUBLE, BC_OPT_STR, BC_OPT_FLAG } bc_opt_type_t;

/* A program-specific option: --name VALUE (or --name for a flag), stored into *dst. */
typedef struct {
    const char *name;
    bc_opt_type_t type;
    void *dst; /* long*, size_t*, double*, const char**, int* */
    const char *help;
} bc_opt_t;

/* Parses argv before MPI_Init, so that a bad argument can exit(2) without starting the MPI and
 * --help works without a launcher. `c` holds the defaults on entry. `opts` ends with a NULL name.
 * Exits 0 after --help and 2 (with a message on stderr from one rank only) on a bad argument. */
void bc_parse(int argc, char **argv, const char *bench, const char *summary, unsigned common_mask,
              bc_common_t *c, const bc_opt_t *opts);
/* --thread-level multiple (every program takes it): bc_init starts MPI at MPI_THREAD_MULTIPLE, one
 * thread still doing all the work: what a hybrid or mpi4py program's communicating thread pays. */
extern int bc_thread_multiple;

/* Parses "64", "4K", "2M", "1G" (powers of 1024, optional trailing B/iB). Returns 0 or -1. */
int bc_parse_size(const char *s, size_t *out_p);

/* Prints a usage error (once per job) and exits with status 2. */
void bc_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* ---------------------------------------------------------------- validation ------------------- */

/* A seed for a buffer's pattern, derived from (a, b, bytes) — typically (sender, receiver, size). */
uint64_t bc_seed(uint64_t a, uint64_t b, uint64_t bytes);
/* Fills n bytes with the pattern of `seed`; byte k depends on (seed, k) only. */
void bc_fill(void *buf, size_t n, uint64_t seed);
/* Number of bytes of buf that differ from the pattern of `seed`. */
size_t bc_check(const void *buf, size_t n, uint64_t seed);

/* Records a validation failure on this rank (message on stderr); bc_finish() reports it. */
void bc_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int bc_local_valid(void);

/* ---------------------------------------------------------------- memory ----------------------- */

typedef struct {
    void *p;
    size_t bytes;
    size_t map_bytes; /* 0 when from posix_memalign */
    const char *kind; /* "default", "small", "thp", "hugetlb" */
} bc_buf_t;

/* Allocates `bytes` aligned to 4 KiB, touched (written) once so that timing never sees first-touch
 * faults. pages NULL: posix_memalign (lands in libbobcat's segment when preloaded); "small": mmap +
 * MADV_NOHUGEPAGE; "large": hugetlb 2 MiB when the pool has pages, else mmap + MADV_HUGEPAGE.
 * Exits with a message on failure (a benchmark cannot run without its arrays). */
bc_buf_t bc_alloc(size_t bytes, const char *pages);
void bc_release(bc_buf_t *b);

/* ---------------------------------------------------------------- affinity --------------------- */

/* Binds the calling thread to the (idx % n)-th cpu of its allowed set when that set has more than
 * one cpu (a launcher that already bound the rank to one core is respected); returns the cpu the
 * thread runs on afterwards, or -1 on error. */
int bc_bind_index(int idx);
/* Binds the calling thread to exactly `cpu`; 0 or -1 (errno set). */
int bc_bind_cpu(int cpu);
/* Two cpus for a two-thread probe: from --cpus "A,B" (a usage error if malformed) or the first two
 * this process may run on; binds the calling thread to A (the partner thread binds itself to B).
 * 0, or an exit code after a message on stderr (prefixed `who`). */
int bc_cpu_pair(const char *cpus, const char *who, int *a_p, int *b_p);

/* ---------------------------------------------------------------- line ping-pong --------------- */

/* bobcat-probe's cache-line ping-pong, between two pinned threads or two processes that share the
 * two lines (keep them 128 bytes apart, so the adjacent-line prefetcher does not couple them): the
 * pinger writes n into a and waits for n in b, the ponger echoes a into b. Waits pause, and yield
 * after a few thousand polls (a partner sharing the core must get to run). */
#define BC_LINE_STOP UINT64_MAX
/* 0 (default): the waits pause between polls; 1: they poll in a tight loop (bobcat-probe
 * --compare-polling measures what that costs a transfer). Read by both sides at every poll. */
extern _Atomic int bc_line_tight;
/* The ponger: echoes each new value of *a (the first one other than `last`) into *b, until
 * BC_LINE_STOP, which it echoes too before it returns. */
void bc_line_pong(_Atomic uint64_t *a, _Atomic uint64_t *b, uint64_t last);
/* The pinger: rounds numbered on from *seq until `seconds` have passed, the clock read every `batch`
 * rounds (a clock read costs about a round). Returns the rounds; *secs_p the time they took. */
uint64_t bc_line_ping(_Atomic uint64_t *a, _Atomic uint64_t *b, uint64_t *seq, double seconds, unsigned batch,
                      double *secs_p);
/* Stops the ponger and returns once it has echoed the stop. */
void bc_line_stop(_Atomic uint64_t *a, _Atomic uint64_t *b);

/* ---------------------------------------------------------------- output ----------------------- */

/* Set by bc_init (bc_mpi.c) or by a non-MPI program: only the root prints JSON. */
extern int bc_is_root;
extern int bc_nranks;
extern const char *bc_bench;

/* One JSON line: {"bench","metric","value","unit","better","params":{"ranks":N, <params_fmt>}}.
 * params_fmt is printf-formatted JSON members without braces ("\"bytes\":%zu"), or "". */
void bc_emit(const char *metric, double value, const char *unit, const char *better,
             const char *params_fmt, ...) __attribute__((format(printf, 5, 6)));
/* As bc_emit with extra top-level members (`extra`, e.g. "\"placement\":\"core\""). */
void bc_emit_extra(const char *metric, double value, const char *unit, const char *better,
                   const char *extra, const char *params_fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* The final line {"bench","done":true,"valid":..,"wall_s":..}. */
void bc_emit_done(int valid);

/* ---------------------------------------------------------------- MPI side (bc_mpi.c) ---------- */
#ifdef BC_WITH_MPI
#include <mpi.h>

extern int bc_rank;

/* MPI_Init and globals; call right after bc_parse. */
void bc_init(int *argc, char ***argv);
/* Combines validity over ranks, prints the done line, MPI_Finalize. Returns the exit status
 * (0 valid, 1 invalid). */
int bc_finish(void);

/* The iteration count all ranks of comm use: min(c->iters, c->time_s / est) with the largest
 * per-iteration estimate over ranks, at least 1. est_s is this rank's seconds per iteration. */
long bc_iters_for(MPI_Comm comm, double est_s, const bc_common_t *c);

/* Warms up and sizes a timed loop: run(arg, n) runs n iterations and returns this rank's seconds.
 * Runs c->warmup iterations, then 1, 2, 4 ... iterations until the slowest rank spent a tenth of
 * the budget (noise in one short sample cannot then decide the count), and returns the count for
 * the timed loop, identical on all ranks of comm. */
long bc_calibrate(MPI_Comm comm, const bc_common_t *c, double (*run)(void *arg, long n),
                  void *arg);

/* min/avg/max of a per-rank value over comm (result valid on every rank). */
void bc_minavgmax(MPI_Comm comm, double v, double *min_p, double *avg_p, double *max_p);

/* Index of this rank among the ranks of its host (MPI_COMM_TYPE_SHARED). */
int bc_local_rank(void);

/* The placement probe inside a job: ranks 0 and 1 of a communicator, when on one host, play
 * bobcat-probe's cache-line ping-pong over a page they share, so that a benchmark can tell the
 * placement state each of its timed slices ran in (on a VM whose vCPUs move, a probe before and
 * after the whole job misses state changes within it). */
typedef struct {
    void *page;    /* the shared page (NULL: no probe) */
    int role;      /* 0 pinger, 1 ponger, -1 neither */
    uint64_t seq;
} bc_pprobe_t;
/* Collective over comm. 1 if ranks 0 and 1 share a page now (also 1 on every other rank), else 0
 * (fewer than two ranks, different hosts, no /dev/shm): then bc_pair_probe returns -1. */
int bc_pair_probe_open(MPI_Comm comm, bc_pprobe_t *p);
/* Collective over comm (others only wait in a barrier): the one-way latency in ns between ranks 0
 * and 1, the best of a few slices within `seconds`, valid on rank 0 (and -1 elsewhere). */
double bc_pair_probe(MPI_Comm comm, bc_pprobe_t *p, double seconds);
void bc_pair_probe_close(bc_pprobe_t *p);
#endif

/* The placement a probe's one-way latency implies: "smt" (< 40 ns), "core" (40-150 ns), "chip"
 * (> 150 ns), or "unknown" for a negative value. */
const char *bc_placement_of(double oneway_ns);

#endif
