/* bench/probe/cellring.c — bobcat-cellring: what a stream of one-line messages costs between two
 * cores, and what each extra store of the sender adds to it.
 *
 * A producer thread writes messages into a ring of 64 one-line cells (payload words, then the
 * sequence word with release), as bobcat's fast boxes do; a consumer thread on another cpu polls
 * the next cell's sequence word, reads the payload and acknowledges. The producer also makes
 * `stores` extra stores per message to a private line (what a send path's saved registers,
 * counters and request fields are). x86 commits stores in order, so each of them waits behind the
 * cell's store, whose line the consumer holds: the time per message against `stores` shows how
 * much a store of a send path costs on this machine (docs/mpi.md, "Message rate").
 *
 * The counts given are interleaved in 10 ms slices, so a change of the VM's placement meanwhile
 * hits every count alike; per count the median slice is reported. Not an MPI program. */
#include "bc.h"

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define CELLS 64
#define MAXCOUNTS 16
#define STOP UINT64_MAX

typedef struct {
    alignas(64) _Atomic uint64_t seq; /* message number + 1 */
    uint64_t data[7];
} cell_t;

static cell_t ring[CELLS];
static alignas(128) _Atomic uint64_t acked; /* messages the consumer has taken */
static alignas(128) volatile uint64_t priv[64]; /* the producer's extra stores */
static int cpu_cons, cons_bound;
static uint64_t cons_sum;

static void *consumer(void *arg)
{
    (void)arg;
    cons_bound = bc_bind_cpu(cpu_cons) == 0;
    uint64_t expect = 0, sum = 0;
    for (;;) {
        cell_t *c = &ring[expect % CELLS];
        uint64_t s = atomic_load_explicit(&c->seq, memory_order_acquire);
        if (s == STOP)
            break;
        if (s != expect + 1)
            continue;
        sum += c->data[0] ^ c->data[1];
        expect++;
        atomic_store_explicit(&acked, expect, memory_order_release);
    }
    cons_sum = sum;
    return NULL;
}

/* `n` messages with `extra` private stores each; returns seconds. */
static double produce(uint64_t *q, long n, int extra)
{
    uint64_t known = atomic_load_explicit(&acked, memory_order_acquire);
    double t0 = bc_now();
    for (long m = 0; m < n; m++, (*q)++) {
        while (*q - known >= CELLS)
            known = atomic_load_explicit(&acked, memory_order_acquire);
        cell_t *c = &ring[*q % CELLS];
        c->data[0] = *q;
        c->data[1] = ~*q;
        for (int e = 0; e < extra; e++)
            priv[e] = *q;
        atomic_store_explicit(&c->seq, *q + 1, memory_order_release);
    }
    return bc_now() - t0;
}

int main(int argc, char **argv)
{
    double seconds = 1.0;
    const char *cpus = NULL, *stores = "0,10,30";
    bc_opt_t opts[] = {
        {"seconds", BC_OPT_DOUBLE, &seconds, "measuring time in seconds (all counts together)"},
        {"stores", BC_OPT_STR, &stores, "comma-separated extra stores per message, 0-64 (default 0,10,30)"},
        {"cpus", BC_OPT_STR, &cpus, "producer and consumer cpus A,B (default: the first two allowed)"},
        {NULL, 0, NULL, NULL},
    };
    bc_common_t c = {0};
    bc_parse(argc, argv, "cellring",
             "One-line messages through a ring of 64 cells between two pinned threads: ns per message "
             "for each count of extra producer stores per message.",
             0, &c, opts);
    bc_nranks = 0;
    if (seconds <= 0 || seconds > 60)
        bc_usage_error("--seconds must be in (0, 60]");
    int counts[MAXCOUNTS], ncounts = 0;
    for (const char *s = stores; *s;) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 0 || v > 64 || (*end && *end != ',') || ncounts == MAXCOUNTS)
            bc_usage_error("--stores: '%s' is not a list of up to %d counts in 0-64", stores, MAXCOUNTS);
        counts[ncounts++] = (int)v;
        s = *end ? end + 1 : end;
    }
    if (!ncounts)
        bc_usage_error("--stores: no count given");
    int cpu_prod = -1, rc = bc_cpu_pair(cpus, "cellring", &cpu_prod, &cpu_cons);
    if (rc)
        return rc;
    pthread_t th;
    if (pthread_create(&th, NULL, consumer, NULL) != 0) {
        fprintf(stderr, "cellring: pthread_create failed\n");
        return 3;
    }
    uint64_t q = 0;
    /* Messages per 10 ms slice, from a warm-up at the largest count (the slowest). */
    int most = 0;
    for (int i = 0; i < ncounts; i++)
        most = counts[i] > most ? counts[i] : most;
    long per = 1000;
    double w = produce(&q, per, most);
    for (int i = 0; i < 6 && w < 0.005; i++) {
        per *= 2;
        w = produce(&q, per, most);
    }
    per = w > 0 ? (long)((double)per * 0.01 / w) + 1 : per;
    int rounds = (int)(seconds / 0.01 / ncounts);
    rounds = rounds < 1 ? 1 : rounds;
    double *ns = malloc(sizeof(double) * (size_t)rounds * (size_t)ncounts);
    if (!ns) {
        fprintf(stderr, "cellring: out of memory\n");
        return 3;
    }
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < ncounts; i++)
            ns[(size_t)i * (size_t)rounds + (size_t)r] = produce(&q, per, counts[i]) * 1e9 / (double)per;
    while (q - atomic_load_explicit(&acked, memory_order_acquire) >= CELLS)
        ;
    atomic_store_explicit(&ring[q % CELLS].seq, STOP, memory_order_release);
    pthread_join(th, NULL);
    if (!cons_bound) {
        fprintf(stderr, "cellring: cannot bind to cpu %d (give --cpus with allowed cpus)\n", cpu_cons);
        return 2;
    }
    /* The consumer took every message in order, or the producer would have stopped on a full ring;
     * each one's two payload words xor to all ones (-1), so they sum to -q. */
    if (c.validate && (atomic_load(&acked) != q || cons_sum != (uint64_t)0 - q))
        bc_fail("consumer took %llu of %llu messages, checksum %llx", (unsigned long long)atomic_load(&acked),
                (unsigned long long)q, (unsigned long long)cons_sum);
    for (int i = 0; i < ncounts; i++) {
        double *v = &ns[(size_t)i * (size_t)rounds];
        qsort(v, (size_t)rounds, sizeof *v, bc_cmp_double);
        bc_emit("ns_per_msg", v[rounds / 2], "ns", "lower",
                "\"stores\": %d, \"cpus\": [%d, %d], \"slices\": %d, \"p25\": %.9g, \"p75\": %.9g", counts[i],
                cpu_prod, cpu_cons, rounds, v[rounds / 4], v[(3 * rounds) / 4]);
    }
    free(ns);
    bc_emit_done(bc_local_valid());
    return bc_local_valid() ? 0 : 1;
}
