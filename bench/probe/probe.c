/* bench/probe/probe.c — bobcat-probe: which physical placement do two cpus have right now?
 *
 * Two threads pinned to two cpus play ping-pong with sequence numbers in two 64-byte cache lines:
 * the pinger writes n into line A and waits for n in line B; the ponger waits for n in A and writes
 * it into B. Each round moves a line twice between the cores, so one-way = time / (2 * rounds).
 * The run is cut into 10 ms slices and the best slice counts (see main). On this kind of VM the
 * value tells SMT siblings (< 40 ns), separate cores (40–150 ns) and
 * separate chips (> 150 ns) apart (docs/benchmarks.md, MACHINE.md). Not an MPI program. */
#include "bc.h"

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

/* Each line on its own 128-byte pair so the adjacent-line prefetcher does not couple them. */
static struct {
    alignas(128) _Atomic uint64_t a;
    alignas(128) _Atomic uint64_t b;
} lines;

static int cpu_pong;
static int pong_bound;

static void *pong(void *arg)
{
    (void)arg;
    pong_bound = bc_bind_cpu(cpu_pong) == 0;
    bc_line_pong(&lines.a, &lines.b, 0);
    return NULL;
}

/* Runs rounds until `seconds` have passed; returns rounds done, elapsed time in *secs_p. The clock
 * is read every 256 rounds: reading it costs about one round. */
static uint64_t ping(uint64_t *seq, double seconds, double *secs_p)
{
    return bc_line_ping(&lines.a, &lines.b, seq, seconds, 256, secs_p);
}

int main(int argc, char **argv)
{
    double seconds = 0.3;
    const char *cpus = NULL;
    int compare = 0;
    bc_opt_t opts[] = {
        {"seconds", BC_OPT_DOUBLE, &seconds, "measuring time in seconds"},
        {"compare-polling", BC_OPT_FLAG, &compare,
         "then as long again in 10 ms slices alternating waits that pause between polls and waits that "
         "poll in a tight loop: one oneway_poll_ns record (median slice) for each"},
        {"cpus", BC_OPT_STR, &cpus, "the two cpus A,B (default: the first two allowed)"},
        {NULL, 0, NULL, NULL},
    };
    bc_common_t c = {0};
    bc_parse(argc, argv, "probe",
             "Core-to-core cache-line ping-pong between two pinned threads: one-way latency in ns "
             "and the placement it implies (smt < 40 ns, core 40-150 ns, chip > 150 ns).",
             0, &c, opts);
    bc_nranks = 0; /* not an MPI job: params carry cpus and seconds only */
    if (seconds <= 0 || seconds > 60)
        bc_usage_error("--seconds must be in (0, 60]");

    int cpu_ping = -1, rc = bc_cpu_pair(cpus, "probe", &cpu_ping, &cpu_pong);
    if (rc)
        return rc;

    pthread_t th;
    if (pthread_create(&th, NULL, pong, NULL) != 0) {
        fprintf(stderr, "probe: pthread_create failed\n");
        return 3;
    }
    uint64_t seq = 0;
    double warm_s, secs;
    ping(&seq, 0.02, &warm_s); /* both threads spinning and the lines hot before timing */
    /* Slices of 10 ms; the best one is the placement's latency. A whole-run average would also
     * count every time another task preempted one of the two threads on a loaded machine. */
    double ns = 0;
    int nslices = seconds >= 0.02 ? (int)(seconds / 0.01) : 1;
    for (int i = 0; i < nslices; i++) {
        uint64_t rounds = ping(&seq, seconds / nslices, &secs);
        double v = secs * 1e9 / (2.0 * (double)rounds);
        ns = i == 0 || v < ns ? v : ns;
    }
    /* Polling with or without pause, interleaved: what a tight poll loop costs each transfer (both
     * sides poll the line the other writes next, as a message's receiver does; docs/mpi.md). */
    int nalt = compare ? (nslices + 1) / 2 : 0;
    double *alt = compare ? calloc(2 * (size_t)(nalt ? nalt : 1), sizeof *alt) : NULL;
    if (compare && !alt) {
        fprintf(stderr, "probe: out of memory\n");
        return 3;
    }
    for (int i = 0; i < nalt; i++)
        for (int k = 0; k < 2; k++) {
            int tight = (i + k) % 2; /* alternate which mode goes first */
            atomic_store(&bc_line_tight, tight);
            uint64_t rounds = ping(&seq, 0.01, &secs);
            alt[(size_t)tight * (size_t)nalt + (size_t)i] = secs * 1e9 / (2.0 * (double)rounds);
        }
    atomic_store(&bc_line_tight, 0);
    /* The ponger echoed every sequence number in order, or ping() would never have returned. */
    uint64_t echo = atomic_load(&lines.b);
    bc_line_stop(&lines.a, &lines.b);
    pthread_join(th, NULL);
    if (!pong_bound) {
        fprintf(stderr, "probe: cannot bind to cpu %d (give --cpus with allowed cpus)\n", cpu_pong);
        return 2;
    }
    if (c.validate && echo != seq)
        bc_fail("last echo %llu, expected %llu", (unsigned long long)echo, (unsigned long long)seq);

    char extra[64];
    snprintf(extra, sizeof extra, "\"placement\": \"%s\"", bc_placement_of(ns));
    bc_emit_extra("oneway_ns", ns, "ns", "lower", extra, "\"cpus\": [%d, %d], \"seconds\": %g",
                  cpu_ping, cpu_pong, seconds);
    for (int tight = 0; compare && tight < 2; tight++) {
        double *v = &alt[(size_t)tight * (size_t)nalt];
        qsort(v, (size_t)nalt, sizeof *v, bc_cmp_double);
        bc_emit("oneway_poll_ns", v[nalt / 2], "ns", "lower", "\"poll\": \"%s\", \"slices\": %d, \"cpus\": [%d, %d]",
                tight ? "tight" : "pause", nalt, cpu_ping, cpu_pong);
    }
    free(alt);
    bc_emit_done(bc_local_valid());
    return bc_local_valid() ? 0 : 1;
}
