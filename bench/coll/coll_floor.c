/* coll-floor: what the memory system alone allows for bobcat's on-node reductions of 2 ranks, with
 * no MPI, no bobcat synchronisation beyond one spin barrier per iteration: two threads pinned to
 * two CPUs run exactly the loads, stores and reduction loops (libbobcat's own coll_op functions,
 * MPI_FLOAT MPI_SUM as IMB uses) of the algorithms, on buffers in the same cache state as IMB's
 * repeated calls. A collective's time minus this floor is what bobcat's protocol costs; when the
 * floor itself is above an aim, the aim is out of reach on the machine (issue 9: "where an aim is
 * missed, say what limits it, measured").
 *   barrier          the spin barrier alone (sense reversal on one line), per iteration
 *   reduce_parallel  thread t folds slice t (half) of both inputs into thread 0's result
 *                    (coll_reduce's parallel algorithm, root 0)
 *   reduce_serial    thread 0 folds both whole inputs into its result; thread 1 waits
 *   allreduce_fused  thread t folds slice t of both inputs in 16 KiB chunks into its own result
 *                    and copies each chunk into the other's (coll_allreduce's fused algorithm)
 *   copy_half        thread t copies slice t of the other's input into its own result: the
 *                    cross-core traffic of a reduction without its arithmetic
 * Usage: coll-floor [--bytes 1M] [--reps 15] [--iters 200] [--cpus A,B]
 * Output: JSON lines (docs/design/contracts.md section 3), per test the median over reps of the
 * per-iteration time on thread 0, in µs. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../src/coll/coll.h"
#include "../../src/util/util.h"

#define CHUNK (16 * 1024)
#define MAX_REPS 101

enum test { T_BARRIER, T_COPY_HALF, T_REDUCE_PARALLEL, T_REDUCE_SERIAL, T_ALLREDUCE_FUSED, T_N };
static const char *names[T_N] = {"barrier", "copy_half", "reduce_parallel", "reduce_serial",
                                 "allreduce_fused"};

static size_t bytes = (size_t)1 << 20;
static int reps = 15, iters = 200, cpu[2] = {-1, -1};
static float *in[2], *out[2];
static coll_op_t op;
static double result[T_N][MAX_REPS];

/* A sense-reversal barrier for two threads, each word on its own pair of lines. */
static _Alignas(128) atomic_int arrived;
static _Alignas(128) atomic_int sense;

static void barrier(int *local_sense)
{
    *local_sense = !*local_sense;
    if (atomic_fetch_add(&arrived, 1) == 1) {
        atomic_store_explicit(&arrived, 0, memory_order_relaxed);
        atomic_store(&sense, *local_sense);
    } else {
        while (atomic_load(&sense) != *local_sense)
            __builtin_ia32_pause();
    }
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void one(enum test t, int me)
{
    size_t n = bytes / sizeof(float), half = n / 2;
    size_t lo = me ? half : 0, cnt = me ? n - half : half;
    switch (t) {
    case T_BARRIER:
        break;
    case T_REDUCE_PARALLEL:
        op.fn3(in[0] + lo, in[1] + lo, out[0] + lo, cnt, &op);
        break;
    case T_REDUCE_SERIAL:
        if (me == 0)
            op.fn3(in[0], in[1], out[0], n, &op);
        break;
    case T_ALLREDUCE_FUSED: {
        size_t ce = CHUNK / sizeof(float);
        for (size_t c = lo; c < lo + cnt; c += ce) {
            size_t k = lo + cnt - c < ce ? lo + cnt - c : ce;
            op.fn3(in[0] + c, in[1] + c, out[me] + c, k, &op);
            memcpy(out[!me] + c, out[me] + c, k * sizeof(float));
        }
        break;
    }
    case T_COPY_HALF:
        memcpy(out[me] + lo, in[!me] + lo, cnt * sizeof(float));
        break;
    default:
        break;
    }
}

static void *worker(void *arg)
{
    int me = (int)(intptr_t)arg, s = 0;
    if (cpu[me] >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu[me], &set);
        if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0)
            fprintf(stderr, "coll-floor: cannot pin thread %d to CPU %d\n", me, cpu[me]);
    }
    /* Each thread first-touches its own buffers, as each rank does with its heap. */
    size_t n = bytes / sizeof(float);
    for (size_t i = 0; i < n; i++) {
        in[me][i] = (float)(i % 1000) * (me ? 0.5f : 1.0f);
        out[me][i] = 0;
    }
    /* Interleaved: every repetition runs every test, so placement drift hits them alike. */
    for (int r = 0; r < reps; r++)
        for (int t = 0; t < T_N; t++) {
            for (int w = 0; w < 3; w++) { /* warm-up: the steady cache state of repeated calls */
                barrier(&s);
                one((enum test)t, me);
            }
            barrier(&s);
            double t0 = now();
            for (int i = 0; i < iters; i++) {
                one((enum test)t, me);
                barrier(&s);
            }
            if (me == 0)
                result[t][r] = (now() - t0) / iters * 1e6;
        }
    return NULL;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int usage(void)
{
    fprintf(stderr, "usage: coll-floor [--bytes 1M] [--reps N (1..%d)] [--iters N] [--cpus A,B]\n", MAX_REPS);
    return 2;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--bytes") && v && util_parse_size(v, &bytes) == BOBCAT_OK && bytes >= 64)
            i++;
        else if (!strcmp(argv[i], "--reps") && v && (reps = atoi(v)) > 0 && reps <= MAX_REPS)
            i++;
        else if (!strcmp(argv[i], "--iters") && v && (iters = atoi(v)) > 0)
            i++;
        else if (!strcmp(argv[i], "--cpus") && v && sscanf(v, "%d,%d", &cpu[0], &cpu[1]) == 2)
            i++;
        else
            return usage();
    }
    if (cpu[0] < 0) { /* the first two CPUs this process may run on */
        cpu_set_t set;
        sched_getaffinity(0, sizeof set, &set);
        for (int c = 0, k = 0; c < CPU_SETSIZE && k < 2; c++)
            if (CPU_ISSET(c, &set))
                cpu[k++] = c;
    }
    if (coll_op_builtin(COLL_OP_SUM, COLL_T_F32, &op) != BOBCAT_OK || !op.fn3) {
        fprintf(stderr, "coll-floor: no float sum in coll_op\n");
        return 1;
    }
    for (int k = 0; k < 2; k++)
        if (posix_memalign((void **)&in[k], 2u << 20, bytes) || posix_memalign((void **)&out[k], 2u << 20, bytes)) {
            fprintf(stderr, "coll-floor: no memory for 4 x %zu bytes\n", bytes);
            return 1;
        }
    pthread_t th;
    double t0 = now();
    if (pthread_create(&th, NULL, worker, (void *)(intptr_t)1) != 0) {
        fprintf(stderr, "coll-floor: cannot start the second thread\n");
        return 1;
    }
    worker((void *)(intptr_t)0);
    pthread_join(th, NULL);
    /* Validation: thread 0's result holds the sum of both inputs (the last test to write it,
     * allreduce_fused, wrote every slice of out[0]). */
    int valid = 1;
    for (size_t i = 0; i < bytes / sizeof(float); i++)
        if (out[0][i] != in[0][i] + in[1][i]) {
            valid = 0;
            break;
        }
    for (int t = 0; t < T_N; t++) {
        qsort(result[t], (size_t)reps, sizeof(double), cmp_d);
        printf("{\"bench\":\"coll_floor\",\"metric\":\"%s\",\"value\":%.4g,\"unit\":\"us\",\"better\":\"lower\","
               "\"params\":{\"bytes\":%zu,\"threads\":2,\"cpus\":[%d,%d],\"reps\":%d,\"iters\":%d,"
               "\"min\":%.4g,\"max\":%.4g}}\n",
               names[t], result[t][reps / 2], bytes, cpu[0], cpu[1], reps, iters, result[t][0],
               result[t][reps - 1]);
    }
    printf("{\"bench\":\"coll_floor\",\"done\":true,\"valid\":%s,\"wall_s\":%.3f}\n", valid ? "true" : "false",
           now() - t0);
    return valid ? 0 : 1;
}
