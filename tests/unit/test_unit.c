/* test_unit: single-process tests of libbobcat's internals: sizes, booleans, enum knobs, the node
 * plan, the SMARTMAP layout arithmetic, the bulk copy. */
#include <stdlib.h>
#include <string.h>

#include <bobcat/smartmap.h>

#include "../../src/boot/boot.h"
#include "../mp/mp_util.h"

static void sizes(void)
{
    size_t v = 0;
    CHECK(util_parse_size("512M", &v) == BOBCAT_OK && v == (size_t)512 << 20, "512M");
    CHECK(util_parse_size("4k", &v) == BOBCAT_OK && v == 4096, "4k");
    CHECK(util_parse_size("2GiB", &v) == BOBCAT_OK && v == (size_t)2 << 30, "2GiB");
    CHECK(util_parse_size("123", &v) == BOBCAT_OK && v == 123, "123");
    const char *bad[] = {"", "M", "-1", "1X", "12 M", "99999999999999999999", "17179869184G"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(util_parse_size(bad[i], &v) == BOBCAT_ERR_INVAL, "accepted '%s'", bad[i]);
    int b = -1;
    CHECK(util_parse_bool("yes", &b) == BOBCAT_OK && b == 1, "yes");
    CHECK(util_parse_bool("off", &b) == BOBCAT_OK && b == 0, "off");
    CHECK(util_parse_bool("maybe", &b) == BOBCAT_ERR_INVAL, "maybe");
}

/* Enum knobs (options.def): a listed word or alias gives its constant, defaults hold, any other
 * word, or one another knob takes, is refused. */
static void enums(void)
{
    util_options_t o;
    setenv("BOBCAT_COLL_BARRIER", "counter", 1);
    setenv("BOBCAT_STATS", "1", 1);
    setenv("BOBCAT_COLL_ALLREDUCE", "auto-parallel", 1);
    CHECK(util_options_load(&o) == BOBCAT_OK, "load");
    CHECK(o.COLL_BARRIER == UTIL_V_COUNTER && o.STATS == UTIL_V_RANK && o.COLL_ALLREDUCE == UTIL_V_AUTO_PARALLEL,
          "barrier %d stats %d allreduce %d", o.COLL_BARRIER, o.STATS, o.COLL_ALLREDUCE);
    CHECK(o.PAGES == UTIL_V_AUTO && o.BIND == UTIL_V_CORE && o.COLL_BCAST == UTIL_V_AUTO, "defaults");
    CHECK(!strcmp(util_word_name(UTIL_V_OFF), "off|0"), "spelling %s", util_word_name(UTIL_V_OFF));
    setenv("BOBCAT_STATS", "0", 1);
    CHECK(util_options_load(&o) == BOBCAT_OK && o.STATS == UTIL_V_OFF, "alias 0");
    static const char *const bad[][2] = {{"COLL_BARRIER", "inplace"}, {"PAGES", "lazy"}, {"STATS", "2"},
                                         {"BIND", "Core"}, {"COLL_BCAST", ""}};
    unsetenv("BOBCAT_COLL_BARRIER");
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char name[64];
        snprintf(name, sizeof name, "BOBCAT_%s", bad[i][0]);
        setenv(name, bad[i][1], 1);
        CHECK(util_options_load(&o) == BOBCAT_ERR_INVAL, "accepted %s='%s'", name, bad[i][1]);
        unsetenv(name);
    }
    unsetenv("BOBCAT_STATS");
    unsetenv("BOBCAT_COLL_ALLREDUCE");
}

static void plan(void)
{
    boot_place_t p;
    /* -F job: 8 ranks at 4 per node (nodes 0,1), then 3 at 2 per node (nodes 2,3; node 3 holds 1). */
    const char *plan = "8:4;3:2";
    CHECK(boot_plan_place(plan, 0, &p) == BOBCAT_OK && p.node == 0 && p.local_rank == 0 && p.local_size == 4, "r0");
    CHECK(boot_plan_place(plan, 5, &p) == BOBCAT_OK && p.node == 1 && p.local_rank == 1 && p.node_first_rank == 4,
          "r5");
    CHECK(boot_plan_place(plan, 9, &p) == BOBCAT_OK && p.node == 2 && p.local_rank == 1 && p.local_size == 2, "r9");
    CHECK(boot_plan_place(plan, 10, &p) == BOBCAT_OK && p.node == 3 && p.local_rank == 0 && p.local_size == 1 &&
              p.world_size == 11, "r10");
    CHECK(boot_plan_place("3:2", 2, &p) == BOBCAT_OK && p.node == 1 && p.local_size == 1, "last node fewer");
    const char *bad[] = {"", "x", "4", "4:", "4:0", "0:2", "4:2;", "4:2;x:1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(boot_plan_place(bad[i], 0, &p) != BOBCAT_OK, "accepted plan '%s'", bad[i]);
    CHECK(boot_plan_place("4:2", 4, &p) != BOBCAT_OK, "rank outside the plan");
}

/* The layout rule and its bound, up to SMAP_MAX_LOCAL_RANKS: every window of every rank of the
 * largest node a heap allows lies below 64 TiB, starts slot-aligned (1 GiB-aligned for heaps of
 * 1 GiB and more, which hugetlb PMD sharing needs), and does not overlap its neighbour. */
static void layout(void)
{
    const size_t M = (size_t)1 << 20, G = (size_t)1 << 30;
    struct { size_t heap; int shift, max_ranks; } cases[] = {
        {128 * M, 27, 1024},            /* the minimum heap */
        {128 * M + 4096, 28, 1024},     /* just over a power of two: the next */
        {1, 21, 1024},                  /* never below 2 MiB */
        {G, 30, 1024},
        {3 * G, 32, 1024},              /* 4 GiB slots: 16 367 would fit, the tables hold 1024 */
        {32 * G, 35, 1024},             /* 64 GiB + 1025 * 32 GiB <= 64 TiB */
        {64 * G, 36, 1022},             /* (64 TiB - 64 GiB) / 64 GiB - 1 */
        {448 * G, 39, 126},             /* the old fixed layout's numbers: 512 GiB slots */
        {(size_t)16 << 40, 44, 2},      /* SMAP_MAX_HEAP */
        {((size_t)16 << 40) + 1, 45, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECK(smap_layout_shift(cases[i].heap) == cases[i].shift, "heap %zu: shift %d, expected %d", cases[i].heap,
              smap_layout_shift(cases[i].heap), cases[i].shift);
        CHECK(smap_layout_max_ranks(cases[i].heap) == cases[i].max_ranks, "heap %zu: %d ranks, expected %d",
              cases[i].heap, smap_layout_max_ranks(cases[i].heap), cases[i].max_ranks);
    }
    /* Every heap from 128 MiB to 16 TiB in steps of powers of two and odd sizes. */
    for (size_t heap = 128 * M; heap <= SMAP_MAX_HEAP; heap = heap * 3 / 2 + 4096) {
        int shift = smap_layout_shift(heap), n = smap_layout_max_ranks(heap);
        uintptr_t slot = (uintptr_t)1 << shift;
        CHECK(slot >= heap && slot / 2 < heap, "heap %zu: slot %zu is not the smallest power of two above", heap,
              (size_t)slot);
        CHECK(n >= 1 && n <= SMAP_MAX_LOCAL_RANKS, "heap %zu: bound %d", heap, n);
        uintptr_t last_end = SMAP_HEAP_BASE + ((uintptr_t)n << shift) + slot; /* window of rank n - 1, end */
        CHECK(last_end <= SMAP_LAYOUT_TOP, "heap %zu: %d ranks end at %#lx, past 64 TiB", heap, n,
              (unsigned long)last_end);
        CHECK(n == SMAP_MAX_LOCAL_RANKS || last_end + slot > SMAP_LAYOUT_TOP, "heap %zu: bound %d is not tight", heap,
              n);
        if (heap >= G)
            CHECK((SMAP_HEAP_BASE + slot) % G == 0, "heap %zu: windows not 1 GiB-aligned", heap);
    }
    CHECK(smap_layout_max_ranks(128 * M) >= 1024 && SMAP_MAX_LOCAL_RANKS >= 1024, "fewer than 1024 ranks per node");
    /* Outside yod: no layout. */
    CHECK(smap_slot_shift() == 0 && smap_remote_address(0, (void *)SMAP_HEAP_BASE) == NULL, "layout outside yod");
}

/* util_copy against a byte loop: every size around its thresholds and every relative alignment
 * of the two buffers in a 64-byte span, nothing written outside the destination. */
static void copies(void)
{
    enum { SPAN = 64, MAXN = (256 << 10) + 300 };
    unsigned char *src = malloc(MAXN + 2 * SPAN), *dst = malloc(MAXN + 2 * SPAN);
    for (size_t i = 0; i < MAXN + 2 * SPAN; i++)
        src[i] = (unsigned char)(i * 131 + (i >> 9));
    const size_t sizes[] = {0, 1, 31, 32, 127, 128, 129, 2047, 2048, 2049, 2050, 2079, 2080, 2175, 4096, 4097,
                            65535, 65536, 65537, 65600, 256u << 10, (256u << 10) + 300};
    int bad = 0;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0] && !bad; k++)
        for (unsigned so = 0; so < SPAN && !bad; so += (sizes[k] > 70000 ? 8 : 1))
            for (unsigned d0 = 0; d0 < SPAN && !bad; d0 += (sizes[k] > 70000 ? 8 : 3)) {
                size_t n = sizes[k];
                memset(dst, 0xa5, MAXN + 2 * SPAN);
                util_copy(dst + d0, src + so, n);
                size_t at = (size_t)-1;
                for (size_t i = 0; i < n && at == (size_t)-1; i++)
                    if (dst[d0 + i] != src[so + i])
                        at = i;
                int outside = 0;
                for (size_t i = 0; i < d0; i++)
                    outside |= dst[i] != 0xa5;
                for (size_t i = d0 + n; i < d0 + n + SPAN; i++)
                    outside |= dst[i] != 0xa5;
                if (at != (size_t)-1 || outside) {
                    CHECK(0, "util_copy %zu bytes, src +%u dst +%u: first wrong byte %zd, outside written %d", n, so,
                          d0, at == (size_t)-1 ? (ssize_t)-1 : (ssize_t)at, outside);
                    bad = 1;
                }
            }
    free(src);
    free(dst);
}

int main(void)
{
    sizes();
    enums();
    copies();
    plan();
    layout();
    printf("test_unit: %s\n", mp_failures ? "FAILED" : "ok");
    return mp_failures != 0;
}
