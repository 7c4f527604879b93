/* shmem_amo: atomic memory operations, every standard type, blocking and _nbi, and the old names.
 *
 * Atomicity is per location, so all atomics on a location must go one way. When every PE of the
 * job is on this node they are hardware atomics on the target's memory through the window (no MPI
 * call, no syscall). When the job spans nodes, MPI's atomics (MPI_Fetch_and_op,
 * MPI_Compare_and_swap, MPI_Accumulate on one datatype per size) serve every target, this node's
 * too: MPI's atomics are atomic only with respect to each other, not to a CPU's lock-prefixed
 * instructions. The _nbi forms complete at once (allowed: they may complete before quiet). */
#include "shmem_internal.h"

static inline uint64_t hw_amo(shi_amo_op_t op, int size, void *p, uint64_t v, uint64_t c)
{
    if (size == 8) {
        uint64_t *q = p;
        switch (op & ~SHI_AMO_F) {
        case SHI_AMO_FETCH: return __atomic_load_n(q, __ATOMIC_SEQ_CST);
        case SHI_AMO_SET: __atomic_store_n(q, v, __ATOMIC_SEQ_CST); return 0;
        case SHI_AMO_SWAP: return __atomic_exchange_n(q, v, __ATOMIC_SEQ_CST);
        case SHI_AMO_CSWAP: __atomic_compare_exchange_n(q, &c, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); return c;
        case SHI_AMO_ADD: return __atomic_fetch_add(q, v, __ATOMIC_SEQ_CST);
        case SHI_AMO_AND: return __atomic_fetch_and(q, v, __ATOMIC_SEQ_CST);
        case SHI_AMO_OR: return __atomic_fetch_or(q, v, __ATOMIC_SEQ_CST);
        case SHI_AMO_XOR: return __atomic_fetch_xor(q, v, __ATOMIC_SEQ_CST);
        }
    } else {
        uint32_t *q = p, v4 = (uint32_t)v, c4 = (uint32_t)c;
        switch (op & ~SHI_AMO_F) {
        case SHI_AMO_FETCH: return __atomic_load_n(q, __ATOMIC_SEQ_CST);
        case SHI_AMO_SET: __atomic_store_n(q, v4, __ATOMIC_SEQ_CST); return 0;
        case SHI_AMO_SWAP: return __atomic_exchange_n(q, v4, __ATOMIC_SEQ_CST);
        case SHI_AMO_CSWAP: __atomic_compare_exchange_n(q, &c4, v4, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); return c4;
        case SHI_AMO_ADD: return __atomic_fetch_add(q, v4, __ATOMIC_SEQ_CST);
        case SHI_AMO_AND: return __atomic_fetch_and(q, v4, __ATOMIC_SEQ_CST);
        case SHI_AMO_OR: return __atomic_fetch_or(q, v4, __ATOMIC_SEQ_CST);
        case SHI_AMO_XOR: return __atomic_fetch_xor(q, v4, __ATOMIC_SEQ_CST);
        }
    }
    return 0;
}

/* Across nodes: an MPI atomic, for targets on this node too (see the banner). Kept out of line so
 * that the hardware path of single-node jobs stays a translation and one instruction. */
static __attribute__((noinline)) uint64_t mpi_amo(shi_amo_op_t op, int size, void *target, void *p, int region,
                                                  size_t disp, uint64_t value, uint64_t cond, int pe,
                                                  const char *routine)
{
    if (p) {
        uintptr_t a = (uintptr_t)target;
        region = a - shi.heap < shi.heap_size ? SHI_HEAP : SHI_DATA;
        disp = a - (region == SHI_HEAP ? shi.heap : shi.data);
    }
    uint64_t r = 0;
    SHI_TR(shmem_tr_amo(op, size, region, disp, value, cond, pe, &r), routine);
    /* A fetch of one's own word is how programs poll for other PEs' atomics (shmem_atomic_fetch,
     * shmem_signal_fetch in a loop): a busy-wait step. Open MPI's one-sided layer completes our
     * fetch without progressing the others' operations on our window, so without this their
     * blocking atomics never return (issue 24). */
    if (op == SHI_AMO_FETCH && pe == shi.me)
        shi_poll_miss();
    if (op == SHI_AMO_SET || op == SHI_AMO_ADD || op == SHI_AMO_AND || op == SHI_AMO_OR || op == SHI_AMO_XOR)
        atomic_store_explicit(&shi.mpi_pending, 1, memory_order_relaxed);
    return r;
}

uint64_t shi_amo(shi_amo_op_t op, int size, void *target, uint64_t value, uint64_t cond, int pe,
                 const char *routine)
{
    int region = SHI_HEAP;
    size_t disp = 0;
    void *p = shi_xlate(target, (size_t)size, pe, routine, &region, &disp);
    if (SHI_UNLIKELY((uintptr_t)target & (uintptr_t)(size - 1)))
        shi_fatal(routine, "target %p is not aligned to its %d-byte type", target, size);
    if (SHI_LIKELY(shi.all_local))
        return hw_amo(op, size, p, value, cond);
    return mpi_amo(op, size, target, p, region, disp, value, cond, pe, routine);
}

static inline uint64_t to_u(const void *v, size_t size)
{
    if (size == 4) {
        uint32_t x;
        memcpy(&x, v, 4);
        return x;
    }
    uint64_t x;
    memcpy(&x, v, 8);
    return x;
}

/* One atomic on a T: value/cond converted by bits, result converted back. */
#define AMO(T, op, d, v, c, pe, R)                                                                 \
    ({                                                                                             \
        T v_ = (v), c_ = (c), r_;                                                                  \
        uint64_t u_ = shi_amo(op, (int)sizeof(T), (void *)(d), to_u(&v_, sizeof(T)), to_u(&c_, sizeof(T)), pe, R); \
        if (sizeof(T) == 4) {                                                                      \
            uint32_t w_ = (uint32_t)u_;                                                            \
            memcpy(&r_, &w_, sizeof(T));                                                           \
        } else {                                                                                   \
            memcpy(&r_, &u_, sizeof(T));                                                           \
        }                                                                                          \
        r_;                                                                                        \
    })
#define NM(N, OP) "shmem_" #N "_atomic_" #OP
#define CNM(N, OP) "shmem_ctx_" #N "_atomic_" #OP
#define CPE(c, pe, R) shi_ctx_pe(c, pe, R)

#define AMO_EXT_DEF(T, N)                                                                          \
    BOBCAT_EXPORT T shmem_##N##_atomic_fetch(const T *s, int pe) { return AMO(T, SHI_AMO_FETCH, s, 0, 0, pe, NM(N, fetch)); } \
    BOBCAT_EXPORT T shmem_ctx_##N##_atomic_fetch(shmem_ctx_t c, const T *s, int pe)                   \
    { return AMO(T, SHI_AMO_FETCH, s, 0, 0, CPE(c, pe, CNM(N, fetch)), CNM(N, fetch)); }           \
    BOBCAT_EXPORT void shmem_##N##_atomic_set(T *d, T v, int pe) { AMO(T, SHI_AMO_SET, d, v, 0, pe, NM(N, set)); } \
    BOBCAT_EXPORT void shmem_ctx_##N##_atomic_set(shmem_ctx_t c, T *d, T v, int pe)                   \
    { AMO(T, SHI_AMO_SET, d, v, 0, CPE(c, pe, CNM(N, set)), CNM(N, set)); }                        \
    BOBCAT_EXPORT T shmem_##N##_atomic_swap(T *d, T v, int pe) { return AMO(T, SHI_AMO_SWAP, d, v, 0, pe, NM(N, swap)); } \
    BOBCAT_EXPORT T shmem_ctx_##N##_atomic_swap(shmem_ctx_t c, T *d, T v, int pe)                     \
    { return AMO(T, SHI_AMO_SWAP, d, v, 0, CPE(c, pe, CNM(N, swap)), CNM(N, swap)); }              \
    BOBCAT_EXPORT void shmem_##N##_atomic_fetch_nbi(T *f, const T *s, int pe)                         \
    { *f = AMO(T, SHI_AMO_FETCH, s, 0, 0, pe, NM(N, fetch_nbi)); }                                 \
    BOBCAT_EXPORT void shmem_ctx_##N##_atomic_fetch_nbi(shmem_ctx_t c, T *f, const T *s, int pe)      \
    { *f = AMO(T, SHI_AMO_FETCH, s, 0, 0, CPE(c, pe, CNM(N, fetch_nbi)), CNM(N, fetch_nbi)); }     \
    BOBCAT_EXPORT void shmem_##N##_atomic_swap_nbi(T *f, T *d, T v, int pe)                           \
    { *f = AMO(T, SHI_AMO_SWAP, d, v, 0, pe, NM(N, swap_nbi)); }                                   \
    BOBCAT_EXPORT void shmem_ctx_##N##_atomic_swap_nbi(shmem_ctx_t c, T *f, T *d, T v, int pe)        \
    { *f = AMO(T, SHI_AMO_SWAP, d, v, 0, CPE(c, pe, CNM(N, swap_nbi)), CNM(N, swap_nbi)); }
SHMEMI_AMO_EXT_TYPES(AMO_EXT_DEF)

#define AMO_STD_DEF(T, N)                                                                          \
    BOBCAT_EXPORT T shmem_##N##_atomic_compare_swap(T *d, T cond, T v, int pe)                        \
    { return AMO(T, SHI_AMO_CSWAP, d, v, cond, pe, NM(N, compare_swap)); }                         \
    BOBCAT_EXPORT T shmem_ctx_##N##_atomic_compare_swap(shmem_ctx_t c, T *d, T cond, T v, int pe)     \
    { return AMO(T, SHI_AMO_CSWAP, d, v, cond, CPE(c, pe, CNM(N, compare_swap)), CNM(N, compare_swap)); } \
    BOBCAT_EXPORT T shmem_##N##_atomic_fetch_inc(T *d, int pe)                                        \
    { return AMO(T, SHI_AMO_ADD | SHI_AMO_F, d, 1, 0, pe, NM(N, fetch_inc)); }                     \
    BOBCAT_EXPORT T shmem_ctx_##N##_atomic_fetch_inc(shmem_ctx_t c, T *d, int pe)                     \
    { return AMO(T, SHI_AMO_ADD | SHI_AMO_F, d, 1, 0, CPE(c, pe, CNM(N, fetch_inc)), CNM(N, fetch_inc)); } \
    BOBCAT_EXPORT void shmem_##N##_atomic_inc(T *d, int pe) { AMO(T, SHI_AMO_ADD, d, 1, 0, pe, NM(N, inc)); } \
    BOBCAT_EXPORT void shmem_ctx_##N##_atomic_inc(shmem_ctx_t c, T *d, int pe)                        \
    { AMO(T, SHI_AMO_ADD, d, 1, 0, CPE(c, pe, CNM(N, inc)), CNM(N, inc)); }                        \
    BOBCAT_EXPORT T shmem_##N##_atomic_fetch_add(T *d, T v, int pe)                                   \
    { return AMO(T, SHI_AMO_ADD | SHI_AMO_F, d, v, 0, pe, NM(N, fetch_add)); }                     \
    BOBCAT_EXPORT T shmem_ctx_##N##_atomic_fetch_add(shmem_ctx_t c, T *d, T v, int pe)                \
    { return AMO(T, SHI_AMO_ADD | SHI_AMO_F, d, v, 0, CPE(c, pe, CNM(N, fetch_add)), CNM(N, fetch_add)); } \
    BOBCAT_EXPORT void shmem_##N##_atomic_add(T *d, T v, int pe) { AMO(T, SHI_AMO_ADD, d, v, 0, pe, NM(N, add)); } \
    BOBCAT_EXPORT void shmem_ctx_##N##_atomic_add(shmem_ctx_t c, T *d, T v, int pe)                   \
    { AMO(T, SHI_AMO_ADD, d, v, 0, CPE(c, pe, CNM(N, add)), CNM(N, add)); }                        \
    BOBCAT_EXPORT void shmem_##N##_atomic_compare_swap_nbi(T *f, T *d, T cond, T v, int pe)           \
    { *f = AMO(T, SHI_AMO_CSWAP, d, v, cond, pe, NM(N, compare_swap_nbi)); }                       \
    BOBCAT_EXPORT void shmem_ctx_##N##_atomic_compare_swap_nbi(shmem_ctx_t c, T *f, T *d, T cond, T v, int pe) \
    { *f = AMO(T, SHI_AMO_CSWAP, d, v, cond, CPE(c, pe, CNM(N, compare_swap_nbi)), CNM(N, compare_swap_nbi)); } \
    BOBCAT_EXPORT void shmem_##N##_atomic_fetch_inc_nbi(T *f, T *d, int pe)                           \
    { *f = AMO(T, SHI_AMO_ADD | SHI_AMO_F, d, 1, 0, pe, NM(N, fetch_inc_nbi)); }                   \
    BOBCAT_EXPORT void shmem_ctx_##N##_atomic_fetch_inc_nbi(shmem_ctx_t c, T *f, T *d, int pe)        \
    { *f = AMO(T, SHI_AMO_ADD | SHI_AMO_F, d, 1, 0, CPE(c, pe, CNM(N, fetch_inc_nbi)), CNM(N, fetch_inc_nbi)); } \
    BOBCAT_EXPORT void shmem_##N##_atomic_fetch_add_nbi(T *f, T *d, T v, int pe)                      \
    { *f = AMO(T, SHI_AMO_ADD | SHI_AMO_F, d, v, 0, pe, NM(N, fetch_add_nbi)); }                   \
    BOBCAT_EXPORT void shmem_ctx_##N##_atomic_fetch_add_nbi(shmem_ctx_t c, T *f, T *d, T v, int pe)   \
    { *f = AMO(T, SHI_AMO_ADD | SHI_AMO_F, d, v, 0, CPE(c, pe, CNM(N, fetch_add_nbi)), CNM(N, fetch_add_nbi)); }
SHMEMI_AMO_STD_TYPES(AMO_STD_DEF)

#define AMO_BIT1(T, N, OP, OPC)                                                                    \
    BOBCAT_EXPORT T shmem_##N##_atomic_fetch_##OP(T *d, T v, int pe)                                  \
    { return AMO(T, OPC | SHI_AMO_F, d, v, 0, pe, NM(N, fetch_##OP)); }                            \
    BOBCAT_EXPORT T shmem_ctx_##N##_atomic_fetch_##OP(shmem_ctx_t c, T *d, T v, int pe)               \
    { return AMO(T, OPC | SHI_AMO_F, d, v, 0, CPE(c, pe, CNM(N, fetch_##OP)), CNM(N, fetch_##OP)); } \
    BOBCAT_EXPORT void shmem_##N##_atomic_##OP(T *d, T v, int pe) { AMO(T, OPC, d, v, 0, pe, NM(N, OP)); } \
    BOBCAT_EXPORT void shmem_ctx_##N##_atomic_##OP(shmem_ctx_t c, T *d, T v, int pe)                  \
    { AMO(T, OPC, d, v, 0, CPE(c, pe, CNM(N, OP)), CNM(N, OP)); }                                  \
    BOBCAT_EXPORT void shmem_##N##_atomic_fetch_##OP##_nbi(T *f, T *d, T v, int pe)                   \
    { *f = AMO(T, OPC | SHI_AMO_F, d, v, 0, pe, NM(N, fetch_##OP##_nbi)); }                        \
    BOBCAT_EXPORT void shmem_ctx_##N##_atomic_fetch_##OP##_nbi(shmem_ctx_t c, T *f, T *d, T v, int pe) \
    { *f = AMO(T, OPC | SHI_AMO_F, d, v, 0, CPE(c, pe, CNM(N, fetch_##OP##_nbi)), CNM(N, fetch_##OP##_nbi)); }
#define AMO_BIT_DEF(T, N) AMO_BIT1(T, N, and, SHI_AMO_AND) AMO_BIT1(T, N, or, SHI_AMO_OR) AMO_BIT1(T, N, xor, SHI_AMO_XOR)
SHMEMI_AMO_BIT_TYPES(AMO_BIT_DEF)

/* The pre-1.4 names. */
#define AMO_OLD_DEF(T, N)                                                                          \
    BOBCAT_EXPORT T shmem_##N##_fadd(T *d, T v, int pe) { return AMO(T, SHI_AMO_ADD | SHI_AMO_F, d, v, 0, pe, "shmem_" #N "_fadd"); } \
    BOBCAT_EXPORT T shmem_##N##_finc(T *d, int pe) { return AMO(T, SHI_AMO_ADD | SHI_AMO_F, d, 1, 0, pe, "shmem_" #N "_finc"); } \
    BOBCAT_EXPORT void shmem_##N##_add(T *d, T v, int pe) { AMO(T, SHI_AMO_ADD, d, v, 0, pe, "shmem_" #N "_add"); } \
    BOBCAT_EXPORT void shmem_##N##_inc(T *d, int pe) { AMO(T, SHI_AMO_ADD, d, 1, 0, pe, "shmem_" #N "_inc"); } \
    BOBCAT_EXPORT T shmem_##N##_cswap(T *d, T cond, T v, int pe) { return AMO(T, SHI_AMO_CSWAP, d, v, cond, pe, "shmem_" #N "_cswap"); } \
    BOBCAT_EXPORT T shmem_##N##_swap(T *d, T v, int pe) { return AMO(T, SHI_AMO_SWAP, d, v, 0, pe, "shmem_" #N "_swap"); } \
    BOBCAT_EXPORT T shmem_##N##_fetch(const T *s, int pe) { return AMO(T, SHI_AMO_FETCH, s, 0, 0, pe, "shmem_" #N "_fetch"); } \
    BOBCAT_EXPORT void shmem_##N##_set(T *d, T v, int pe) { AMO(T, SHI_AMO_SET, d, v, 0, pe, "shmem_" #N "_set"); }
AMO_OLD_DEF(int, int)
AMO_OLD_DEF(long, long)
AMO_OLD_DEF(long long, longlong)
#define AMO_OLD_F(T, N)                                                                            \
    BOBCAT_EXPORT T shmem_##N##_swap(T *d, T v, int pe) { return AMO(T, SHI_AMO_SWAP, d, v, 0, pe, "shmem_" #N "_swap"); } \
    BOBCAT_EXPORT T shmem_##N##_fetch(const T *s, int pe) { return AMO(T, SHI_AMO_FETCH, s, 0, 0, pe, "shmem_" #N "_fetch"); } \
    BOBCAT_EXPORT void shmem_##N##_set(T *d, T v, int pe) { AMO(T, SHI_AMO_SET, d, v, 0, pe, "shmem_" #N "_set"); }
AMO_OLD_F(float, float)
AMO_OLD_F(double, double)
BOBCAT_EXPORT long shmem_swap(long *d, long v, int pe) { return AMO(long, SHI_AMO_SWAP, d, v, 0, pe, "shmem_swap"); }
