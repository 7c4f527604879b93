/* bench/selfish/selfish.c — the selfish detour benchmark (OS noise), as in the CNW report §4.2.1.
 *
 * A rank pinned to its core reads the clock in a tight loop; whenever two consecutive readings are
 * further apart than a threshold (default 5x the minimal loop time, measured first), the gap is a
 * detour: the core was taken away (tick, interrupt, another task). Per rank: detours per second,
 * largest detour (µs), time lost (% of the run), and a histogram in log2 µs buckets
 * ([0,1), [1,2), [2,4) ... µs) as one line per non-empty bucket. All lower is better.
 *
 * Mode "alone" (default): only rank 0 loops; the others wait in a non-blocking barrier polled
 * every millisecond, so they leave their cores idle (a blocking MPI_Barrier would spin).
 * Mode "all" (--all): every rank loops at once, one per core. */
#include "bc.h"

#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NBUCKETS 32
/* The per-rank record gathered to rank 0, as doubles. */
enum { R_LOOPED, R_CPU, R_COUNT, R_LOST, R_MAX, R_DUR, R_MINLOOP, R_THR, R_HIST, R_LEN = R_HIST + NBUCKETS };

static int bucket_of(double us)
{
    if (us < 1)
        return 0;
    int b = 1 + (int)floor(log2(us));
    return b < NBUCKETS ? b : NBUCKETS - 1;
}

/* Smallest gap between consecutive clock readings over `secs` seconds. */
static double min_loop(double secs)
{
    double best = 1, prev = bc_now(), end = prev + secs;
    for (;;) {
        double t = bc_now();
        if (t - prev > 0 && t - prev < best)
            best = t - prev;
        prev = t;
        if (t >= end)
            return best;
    }
}

static void selfish_loop(double secs, double thr, double *rec)
{
    double start = bc_now(), prev = start, end = start + secs;
    double count = 0, lost = 0, mx = 0;
    for (;;) {
        double t = bc_now();
        double d = t - prev;
        if (d > thr) {
            count++;
            lost += d;
            mx = d > mx ? d : mx;
            rec[R_HIST + bucket_of(d * 1e6)]++;
        }
        prev = t;
        if (t >= end)
            break;
    }
    rec[R_LOOPED] = 1;
    rec[R_COUNT] = count;
    rec[R_LOST] = lost;
    rec[R_MAX] = mx;
    rec[R_DUR] = prev - start;
}

/* Waits for the others without spinning on the core. */
static void idle_barrier(void)
{
    MPI_Request req;
    int done = 0;
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    struct timespec ms = {0, 1000000};
    for (;;) {
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (done)
            break;
        nanosleep(&ms, NULL);
    }
}

int main(int argc, char **argv)
{
    double thr_us = 0;
    int all = 0, no_bind = 0;
    bc_common_t c = {.time_s = 1.0};
    bc_opt_t opts[] = {
        {"threshold-us", BC_OPT_DOUBLE, &thr_us, "detour threshold in us (0: 5x the minimal loop)"},
        {"all", BC_OPT_FLAG, &all, "every rank loops at once (default: rank 0 alone)"},
        {"no-bind", BC_OPT_FLAG, &no_bind, "leave the affinity the launcher gave"},
        {NULL, 0, NULL, NULL},
    };
    bc_parse(argc, argv, "selfish",
             "Selfish detour benchmark: a pinned clock-reading loop; gaps over a threshold are "
             "detours. --time is the loop duration in seconds.",
             BC_C_TIME, &c, opts);
    if (thr_us < 0)
        bc_usage_error("--threshold-us must be >= 0");
    if (c.time_s <= 0 || c.time_s > 3600)
        bc_usage_error("--time must be in (0, 3600] seconds");
    bc_init(&argc, &argv);

    int cpu = no_bind ? sched_getcpu() : bc_bind_index(bc_local_rank());
    double rec[R_LEN];
    memset(rec, 0, sizeof rec);
    rec[R_CPU] = cpu;
    int loops = all || bc_rank == 0;

    MPI_Barrier(MPI_COMM_WORLD);
    if (loops) {
        rec[R_MINLOOP] = min_loop(0.02);
        rec[R_THR] = thr_us > 0 ? thr_us * 1e-6 : 5 * rec[R_MINLOOP];
        if (all)
            MPI_Barrier(MPI_COMM_WORLD); /* start the loops together */
        selfish_loop(c.time_s, rec[R_THR], rec);
        if (all)
            MPI_Barrier(MPI_COMM_WORLD);
        else
            idle_barrier();
    } else {
        idle_barrier();
    }

    double *recs = bc_is_root ? malloc((size_t)bc_nranks * sizeof rec) : NULL;
    MPI_Gather(rec, R_LEN, MPI_DOUBLE, recs, R_LEN, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (bc_is_root) {
        const char *mode = all ? "all" : "alone";
        for (int r = 0; r < bc_nranks; r++) {
            double *q = recs + (size_t)r * R_LEN;
            if (!q[R_LOOPED])
                continue;
            if (c.validate && (q[R_DUR] <= 0 || q[R_LOST] > q[R_DUR] || q[R_MINLOOP] <= 0))
                bc_fail("selfish rank %d: inconsistent record (duration %g s, lost %g s)", r,
                        q[R_DUR], q[R_LOST]);
#define PFMT "\"mode\": \"%s\", \"rank\": %d, \"cpu\": %d, \"seconds\": %g, \"threshold_us\": %.4g"
#define PARGS mode, r, (int)q[R_CPU], q[R_DUR], q[R_THR] * 1e6
            bc_emit("detour_rate", q[R_COUNT] / q[R_DUR], "1/s", "lower", PFMT, PARGS);
            bc_emit("detour_max", q[R_MAX] * 1e6, "us", "lower", PFMT, PARGS);
            bc_emit("time_lost", 100 * q[R_LOST] / q[R_DUR], "%", "lower", PFMT, PARGS);
            bc_emit("detours", q[R_COUNT], "count", "lower", PFMT, PARGS);
            bc_emit("loop_min", q[R_MINLOOP] * 1e9, "ns", "lower", PFMT, PARGS);
            for (int b = 0; b < NBUCKETS; b++)
                if (q[R_HIST + b] > 0)
                    bc_emit("hist", q[R_HIST + b], "count", "lower",
                            PFMT ", \"lo_us\": %g, \"hi_us\": %g", PARGS,
                            b == 0 ? 0.0 : ldexp(1, b - 1), ldexp(1, b));
        }
        free(recs);
    }
    return bc_finish();
}
