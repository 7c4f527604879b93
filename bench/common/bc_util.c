/* bench/common/bc_util.c — the MPI-free half of the benchmark utility: clock, option parsing,
 * validation patterns, page-policy allocation, affinity and the JSON-lines emitter (contracts §3). */
#include "bc.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

int bc_is_root = 1;
int bc_nranks = 1;
const char *bc_bench = "bench";

static double start_time;
static int local_valid = 1;

double bc_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int bc_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ---------------------------------------------------------------- options ---------------------- */

/* Before MPI_Init the rank is only known from the launcher's environment; use it so that a usage
 * error is printed once per job rather than once per rank. */
static int launcher_rank_is_zero(void)
{
    static const char *vars[] = {"BOBCAT_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK",
                                 "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v)
            return atoi(v) == 0;
    }
    return 1;
}

void bc_usage_error(const char *fmt, ...)
{
    if (launcher_rank_is_zero()) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "%s: ", bc_bench);
        vfprintf(stderr, fmt, ap);
        fprintf(stderr, " (see %s --help)\n", bc_bench);
        va_end(ap);
    }
    exit(2);
}

int bc_parse_size(const char *s, size_t *out_p)
{
    char *end;
    errno = 0;
    if (!s || !*s || *s == '-')
        return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return -1;
    unsigned shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: break;
    }
    if (shift && (*end == 'i' || *end == 'I'))
        end++;
    if (*end == 'b' || *end == 'B')
        end++;
    if (*end)
        return -1;
    if (shift && v > (~0ULL >> shift))
        return -1;
    *out_p = (size_t)(v << shift);
    return 0;
}

static int parse_long(const char *s, long *out_p)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end)
        return -1;
    *out_p = v;
    return 0;
}

static int parse_double(const char *s, double *out_p)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v))
        return -1;
    *out_p = v;
    return 0;
}

static void parse_size_list(const char *arg, bc_common_t *c)
{
    size_t n = 1;
    for (const char *p = arg; *p; p++)
        n += *p == ',';
    size_t *v = malloc(n * sizeof *v);
    char *copy = strdup(arg);
    if (!v || !copy)
        bc_usage_error("out of memory");
    int k = 0;
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (bc_parse_size(tok, &v[k]) != 0)
            bc_usage_error("--sizes: '%s' is not a size (examples: 0, 8, 64K, 4M)", tok);
        k++;
    }
    free(copy);
    if (k == 0)
        bc_usage_error("--sizes: empty list");
    free(c->sizes);
    c->sizes = v;
    c->nsizes = k;
}

static void powers_of_two(bc_common_t *c)
{
    int n = 1;
    for (size_t s = 1; s && s <= c->max_size; s <<= 1)
        n++;
    free(c->sizes);
    c->sizes = malloc((size_t)n * sizeof *c->sizes);
    if (!c->sizes)
        bc_usage_error("out of memory");
    c->sizes[0] = 0;
    int k = 1;
    for (size_t s = 1; s && s <= c->max_size; s <<= 1)
        c->sizes[k++] = s;
    c->nsizes = k;
}

int bc_thread_multiple;

static void print_help(const char *summary, unsigned mask, const bc_common_t *c,
                       const bc_opt_t *opts)
{
    printf("usage: %s [options]\n%s\n\nOutput: JSON lines on stdout (rank 0), diagnostics on "
           "stderr.\n\nOptions:\n",
           bc_bench, summary);
    for (const bc_opt_t *o = opts; o && o->name; o++) {
        char def[64] = "";
        switch (o->type) {
        case BC_OPT_LONG: snprintf(def, sizeof def, "%ld", *(long *)o->dst); break;
        case BC_OPT_SIZE: snprintf(def, sizeof def, "%zu", *(size_t *)o->dst); break;
        case BC_OPT_DOUBLE: snprintf(def, sizeof def, "%g", *(double *)o->dst); break;
        case BC_OPT_STR:
            snprintf(def, sizeof def, "%s", *(const char **)o->dst ? *(const char **)o->dst : "-");
            break;
        case BC_OPT_FLAG: snprintf(def, sizeof def, "off"); break;
        }
        printf("  --%-14s %s (default %s)\n", o->name, o->help, def);
    }
    if (mask & BC_C_ITERS)
        printf("  --%-14s maximum timed iterations (default %ld)\n", "iters N", c->iters);
    if (mask & BC_C_WARMUP)
        printf("  --%-14s untimed warm-up iterations (default %ld)\n", "warmup N", c->warmup);
    if (mask & BC_C_TIME)
        printf("  --%-14s time budget per size in seconds, 0 = exactly --iters (default %g)\n",
               "time S", c->time_s);
    if (mask & BC_C_SIZES) {
        printf("  --%-14s comma-separated sizes, suffixes K M G (e.g. 0,1,8,1K,64K,1M)\n",
               "sizes LIST");
        printf("  --%-14s sizes 0,1,2,4..MAX (default %zu)\n", "max-size MAX", c->max_size);
    }
    if (mask & BC_C_PAGES)
        printf("  --%-14s small: MADV_NOHUGEPAGE; large: hugetlb 2 MiB or MADV_HUGEPAGE "
               "(default: malloc)\n",
               "pages P");
    printf("  --%-14s check every result, report valid in the done line\n", "validate");
    printf("  --%-14s MPI programs: start MPI at MPI_THREAD_MULTIPLE or not (default single)\n", "thread-level L");
    printf("  --%-14s this text\n", "help");
}

void bc_parse(int argc, char **argv, const char *bench, const char *summary, unsigned mask,
              bc_common_t *c, const bc_opt_t *opts)
{
    bc_bench = bench;
    start_time = bc_now();
    int sizes_given = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            if (launcher_rank_is_zero())
                print_help(summary, mask, c, opts);
            exit(0);
        }
        if (strncmp(a, "--", 2) != 0)
            bc_usage_error("unexpected argument '%s'", a);
        const char *name = a + 2;
        const char *val = NULL;
        char namebuf[64];
        const char *eq = strchr(name, '=');
        if (eq) { /* --name=value */
            size_t len = (size_t)(eq - name);
            if (len >= sizeof namebuf)
                bc_usage_error("unknown option '%s'", a);
            memcpy(namebuf, name, len);
            namebuf[len] = 0;
            name = namebuf;
            val = eq + 1;
        }
        if (strcmp(name, "validate") == 0) {
            if (val)
                bc_usage_error("--validate takes no value");
            c->validate = 1;
            continue;
        }
        if (strcmp(name, "thread-level") == 0) {
            if (!val && i + 1 < argc)
                val = argv[++i];
            if (!val || (strcmp(val, "single") && strcmp(val, "multiple")))
                bc_usage_error("--thread-level: '%s' is neither 'single' nor 'multiple'", val ? val : "");
            bc_thread_multiple = strcmp(val, "multiple") == 0;
            continue;
        }
        /* Every other option: find its kind first, then take the value. */
        int is_common = 0;
        const bc_opt_t *opt = NULL;
        if (((mask & BC_C_ITERS) && strcmp(name, "iters") == 0) ||
            ((mask & BC_C_WARMUP) && strcmp(name, "warmup") == 0) ||
            ((mask & BC_C_TIME) && strcmp(name, "time") == 0) ||
            ((mask & BC_C_SIZES) && (strcmp(name, "sizes") == 0 || strcmp(name, "max-size") == 0)) ||
            ((mask & BC_C_PAGES) && strcmp(name, "pages") == 0))
            is_common = 1;
        for (const bc_opt_t *o = opts; !is_common && o && o->name; o++)
            if (strcmp(o->name, name) == 0)
                opt = o;
        if (!is_common && !opt)
            bc_usage_error("unknown option '--%s'", name);
        if (opt && opt->type == BC_OPT_FLAG) {
            if (val)
                bc_usage_error("--%s takes no value", name);
            *(int *)opt->dst = 1;
            continue;
        }
        if (!val) {
            if (i + 1 >= argc)
                bc_usage_error("--%s needs a value", name);
            val = argv[++i];
        }
        if (is_common) {
            if (strcmp(name, "iters") == 0) {
                if (parse_long(val, &c->iters) || c->iters < 1)
                    bc_usage_error("--iters: '%s' is not a count >= 1", val);
            } else if (strcmp(name, "warmup") == 0) {
                if (parse_long(val, &c->warmup) || c->warmup < 0)
                    bc_usage_error("--warmup: '%s' is not a count >= 0", val);
            } else if (strcmp(name, "time") == 0) {
                if (parse_double(val, &c->time_s) || c->time_s < 0)
                    bc_usage_error("--time: '%s' is not a number of seconds >= 0", val);
            } else if (strcmp(name, "sizes") == 0) {
                parse_size_list(val, c);
                sizes_given = 1;
            } else if (strcmp(name, "max-size") == 0) {
                if (bc_parse_size(val, &c->max_size))
                    bc_usage_error("--max-size: '%s' is not a size (examples: 64K, 4M)", val);
                if (sizes_given)
                    bc_usage_error("give either --sizes or --max-size, not both");
                sizes_given = 2;
            } else if (strcmp(name, "pages") == 0) {
                if (strcmp(val, "small") != 0 && strcmp(val, "large") != 0)
                    bc_usage_error("--pages: '%s' is neither 'small' nor 'large'", val);
                c->pages = val;
            }
            continue;
        }
        switch (opt->type) {
        case BC_OPT_LONG:
            if (parse_long(val, (long *)opt->dst))
                bc_usage_error("--%s: '%s' is not an integer", name, val);
            break;
        case BC_OPT_SIZE:
            if (bc_parse_size(val, (size_t *)opt->dst))
                bc_usage_error("--%s: '%s' is not a size (examples: 64K, 4M)", name, val);
            break;
        case BC_OPT_DOUBLE:
            if (parse_double(val, (double *)opt->dst))
                bc_usage_error("--%s: '%s' is not a number", name, val);
            break;
        case BC_OPT_STR: *(const char **)opt->dst = val; break;
        case BC_OPT_FLAG: break;
        }
    }
    if ((mask & BC_C_SIZES) && sizes_given != 1)
        powers_of_two(c);
}

/* ---------------------------------------------------------------- validation ------------------- */

/* splitmix64's finaliser: a cheap bijective mix, so neighbouring (seed, index) pairs give
 * unrelated words and a shifted or stale buffer never passes for the right one. */
static inline uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

uint64_t bc_seed(uint64_t a, uint64_t b, uint64_t bytes)
{
    return mix64(mix64(mix64(a + 0x9e3779b97f4a7c15ULL) ^ b) ^ bytes);
}

static inline uint64_t pattern_word(uint64_t seed, size_t k)
{
    return mix64(seed + 0x9e3779b97f4a7c15ULL * (uint64_t)(k + 1));
}

void bc_fill(void *buf, size_t n, uint64_t seed)
{
    unsigned char *p = buf;
    size_t words = n / 8;
    for (size_t k = 0; k < words; k++) {
        uint64_t w = pattern_word(seed, k);
        memcpy(p + 8 * k, &w, 8);
    }
    if (n % 8) {
        uint64_t w = pattern_word(seed, words);
        memcpy(p + 8 * words, &w, n % 8);
    }
}

size_t bc_check(const void *buf, size_t n, uint64_t seed)
{
    const unsigned char *p = buf;
    size_t bad = 0;
    for (size_t k = 0; 8 * k < n; k++) {
        uint64_t w = pattern_word(seed, k);
        size_t len = n - 8 * k < 8 ? n - 8 * k : 8;
        const unsigned char *e = (const unsigned char *)&w;
        for (size_t j = 0; j < len; j++)
            bad += p[8 * k + j] != e[j];
    }
    return bad;
}

void bc_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: validation failed: ", bc_bench);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    local_valid = 0;
}

int bc_local_valid(void)
{
    return local_valid;
}

/* ---------------------------------------------------------------- memory ----------------------- */

#define HUGE_2M (2UL << 20)

bc_buf_t bc_alloc(size_t bytes, const char *pages)
{
    bc_buf_t b = {.p = NULL, .bytes = bytes, .map_bytes = 0, .kind = "default"};
    size_t want = bytes ? bytes : 1;
    if (!pages) {
        if (posix_memalign(&b.p, 4096, want) != 0) {
            fprintf(stderr, "%s: cannot allocate %zu bytes\n", bc_bench, bytes);
            exit(3);
        }
    } else {
        int large = strcmp(pages, "large") == 0;
        size_t len = (want + HUGE_2M - 1) & ~(HUGE_2M - 1);
        void *p = MAP_FAILED;
        if (large) {
            /* hugetlb only succeeds when root reserved a pool (vm.nr_hugepages); otherwise THP. */
            p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_POPULATE, -1, 0);
            if (p != MAP_FAILED)
                b.kind = "hugetlb";
        }
        if (p == MAP_FAILED) {
            p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (p == MAP_FAILED) {
                fprintf(stderr, "%s: mmap of %zu bytes failed: %s\n", bc_bench, len,
                        strerror(errno));
                exit(3);
            }
            if (madvise(p, len, large ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) != 0)
                fprintf(stderr, "%s: madvise(%s) failed: %s; page size is the system's\n",
                        bc_bench, large ? "MADV_HUGEPAGE" : "MADV_NOHUGEPAGE", strerror(errno));
            b.kind = large ? "thp" : "small";
        }
        b.p = p;
        b.map_bytes = len;
    }
    memset(b.p, 0, want);
    return b;
}

void bc_release(bc_buf_t *b)
{
    if (!b->p)
        return;
    if (b->map_bytes)
        munmap(b->p, b->map_bytes);
    else
        free(b->p);
    b->p = NULL;
}

/* ---------------------------------------------------------------- affinity --------------------- */

int bc_bind_cpu(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set);
}

static int cpu_pair(const char *cpus, const char *who, int *a_p, int *b_p)
{
    if (cpus) {
        char *end;
        long a = strtol(cpus, &end, 10);
        if (end == cpus || *end != ',')
            bc_usage_error("--cpus: '%s' is not two cpu numbers 'A,B'", cpus);
        char *s = end + 1;
        long b = strtol(s, &end, 10);
        if (end == s || *end || a < 0 || b < 0 || a >= CPU_SETSIZE || b >= CPU_SETSIZE || a == b)
            bc_usage_error("--cpus: '%s' is not two different cpu numbers 'A,B'", cpus);
        *a_p = (int)a;
        *b_p = (int)b;
        return 0;
    }
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) {
        fprintf(stderr, "%s: sched_getaffinity: %s\n", who, strerror(errno));
        return 3;
    }
    *a_p = *b_p = -1;
    for (int cpu = 0; cpu < CPU_SETSIZE && *b_p < 0; cpu++) {
        if (!CPU_ISSET(cpu, &set))
            continue;
        if (*a_p < 0)
            *a_p = cpu;
        else
            *b_p = cpu;
    }
    if (*b_p < 0) {
        fprintf(stderr, "%s: needs two allowed cpus, this process may run on one only "
                        "(run it outside the job's cpuset or give --cpus A,B)\n", who);
        return 2;
    }
    return 0;
}

int bc_cpu_pair(const char *cpus, const char *who, int *a_p, int *b_p)
{
    int rc = cpu_pair(cpus, who, a_p, b_p);
    if (rc)
        return rc;
    if (bc_bind_cpu(*a_p) != 0) {
        fprintf(stderr, "%s: cannot bind to cpu %d: %s (give --cpus with allowed cpus)\n", who, *a_p,
                strerror(errno));
        return 2;
    }
    return 0;
}

int bc_bind_index(int idx)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return -1;
    int n = CPU_COUNT(&set);
    if (n <= 1)
        return sched_getcpu();
    int want = idx % n;
    for (int cpu = 0, seen = 0; cpu < CPU_SETSIZE; cpu++) {
        if (!CPU_ISSET(cpu, &set))
            continue;
        if (seen++ == want)
            return bc_bind_cpu(cpu) == 0 ? cpu : -1;
    }
    return -1;
}

/* ---------------------------------------------------------------- output ----------------------- */

static void emit_line(const char *metric, double value, const char *unit, const char *better,
                      const char *extra, const char *params_fmt, va_list ap)
{
    if (!bc_is_root)
        return;
    if (!isfinite(value)) {
        /* JSON has no NaN/Inf; a metric that could not be measured is a failed run. */
        fprintf(stderr, "%s: metric %s is not finite (%g); not reported\n", bc_bench, metric,
                value);
        local_valid = 0;
        return;
    }
    char params[2048], ranks[32] = "";
    vsnprintf(params, sizeof params, params_fmt, ap);
    /* bc_nranks 0 marks a program that is not an MPI job (the probe): no "ranks" member. */
    if (bc_nranks > 0)
        snprintf(ranks, sizeof ranks, "\"ranks\": %d%s", bc_nranks, *params ? ", " : "");
    printf("{\"bench\": \"%s\", \"metric\": \"%s\", \"value\": %.9g, \"unit\": \"%s\", "
           "\"better\": \"%s\", \"params\": {%s%s}%s%s}\n",
           bc_bench, metric, value, unit, better, ranks, params, extra ? ", " : "",
           extra ? extra : "");
    fflush(stdout);
}

void bc_emit(const char *metric, double value, const char *unit, const char *better,
             const char *params_fmt, ...)
{
    va_list ap;
    va_start(ap, params_fmt);
    emit_line(metric, value, unit, better, NULL, params_fmt, ap);
    va_end(ap);
}

void bc_emit_extra(const char *metric, double value, const char *unit, const char *better,
                   const char *extra, const char *params_fmt, ...)
{
    va_list ap;
    va_start(ap, params_fmt);
    emit_line(metric, value, unit, better, extra, params_fmt, ap);
    va_end(ap);
}

void bc_emit_done(int valid)
{
    if (!bc_is_root)
        return;
    printf("{\"bench\": \"%s\", \"done\": true, \"valid\": %s, \"wall_s\": %.3f}\n", bc_bench,
           valid ? "true" : "false", bc_now() - start_time);
    fflush(stdout);
}

const char *bc_placement_of(double oneway_ns)
{
    if (oneway_ns < 0)
        return "unknown";
    return oneway_ns < 40 ? "smt" : oneway_ns <= 150 ? "core" : "chip";
}

/* ---- line ping-pong (bc.h) ---- */

_Atomic int bc_line_tight;

static inline void line_relax(unsigned *spins)
{
    if (++*spins >= 4096) {
        *spins = 0;
        sched_yield();
    }
#if defined(__x86_64__) || defined(__i386__)
    if (!atomic_load_explicit(&bc_line_tight, memory_order_relaxed))
        __builtin_ia32_pause();
#endif
}

void bc_line_pong(_Atomic uint64_t *a, _Atomic uint64_t *b, uint64_t last)
{
    unsigned spins = 0;
    for (;;) {
        uint64_t v;
        while ((v = atomic_load_explicit(a, memory_order_acquire)) == last)
            line_relax(&spins);
        atomic_store_explicit(b, v, memory_order_release);
        if (v == BC_LINE_STOP)
            return;
        last = v;
    }
}

uint64_t bc_line_ping(_Atomic uint64_t *a, _Atomic uint64_t *b, uint64_t *seq, double seconds, unsigned batch,
                      double *secs_p)
{
    unsigned spins = 0;
    uint64_t rounds = 0;
    double t0 = bc_now(), t = t0;
    while (t - t0 < seconds) {
        for (unsigned i = 0; i < batch; i++) {
            uint64_t n = ++*seq;
            atomic_store_explicit(a, n, memory_order_release);
            while (atomic_load_explicit(b, memory_order_acquire) != n)
                line_relax(&spins);
        }
        rounds += batch;
        t = bc_now();
    }
    *secs_p = t - t0;
    return rounds;
}

void bc_line_stop(_Atomic uint64_t *a, _Atomic uint64_t *b)
{
    unsigned spins = 0;
    atomic_store_explicit(a, BC_LINE_STOP, memory_order_release);
    while (atomic_load_explicit(b, memory_order_acquire) != BC_LINE_STOP)
        line_relax(&spins);
}
