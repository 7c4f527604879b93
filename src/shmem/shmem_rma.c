/* shmem_rma: put and get (blocking, _nbi, strided, single element, with signal), fence and quiet.
 *
 * A PE of this node: memcpy to or from its memory through the SMARTMAP window (no MPI call, no
 * syscall). Any other PE: MPI_Put/MPI_Get on the window of the region. Blocking puts return once
 * the source may be reused (MPI_Win_flush_local); remote completion is quiet's job, which flushes
 * only when MPI operations were issued since the last one.
 *
 * A transfer of zero bytes (or zero elements) is a no-op whatever its addresses: nothing is read or
 * written, so NULL or a private address is accepted, as MPI accepts any buffer with a zero count
 * (docs/shmem.md). A put-with-signal of zero bytes still delivers its signal. */
#include "shmem_internal.h"

void shi_put(void *dest, const void *src, size_t n, int pe, const char *routine, int nbi)
{
    if (SHI_UNLIKELY(n == 0))
        return;
    int region = 0;
    size_t disp = 0;
    void *p = shi_xlate(dest, n, pe, routine, &region, &disp);
    if (SHI_LIKELY(p != NULL)) {
        util_copy(p, src, n);
        return;
    }
    SHI_TR(shmem_tr_put(region, disp, src, n, pe), routine);
    atomic_store_explicit(&shi.mpi_pending, 1, memory_order_relaxed);
    if (!nbi)
        SHI_TR(shmem_tr_flush_local(pe), routine);
}

void shi_get(void *dest, const void *src, size_t n, int pe, const char *routine, int nbi)
{
    if (SHI_UNLIKELY(n == 0))
        return;
    int region = 0;
    size_t disp = 0;
    const void *p = shi_xlate(src, n, pe, routine, &region, &disp);
    if (SHI_LIKELY(p != NULL)) {
        util_copy(dest, p, n);
        return;
    }
    if (nbi) {
        SHI_TR(shmem_tr_get(region, disp, dest, n, pe), routine);
        atomic_store_explicit(&shi.mpi_pending, 1, memory_order_relaxed);
    } else {
        SHI_TR(shmem_tr_get_wait(region, disp, dest, n, pe), routine);
    }
}

void shi_iput(void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, size_t size, int pe,
              const char *routine)
{
    if (!nelems)
        return;
    int region = 0;
    size_t disp = 0;
    /* The last element must be symmetric too. */
    shi_xlate((char *)dest + (ptrdiff_t)(nelems - 1) * dst * (ptrdiff_t)size, size, pe, routine, &region, &disp);
    char *p = shi_xlate(dest, size, pe, routine, &region, &disp);
    const char *s = src;
    if (p) {
        for (size_t i = 0; i < nelems; i++)
            memcpy(p + (ptrdiff_t)i * dst * (ptrdiff_t)size, s + (ptrdiff_t)i * sst * (ptrdiff_t)size, size);
        return;
    }
    SHI_TR(shmem_tr_iput(region, disp, src, dst, sst, nelems, size, pe), routine);
    atomic_store_explicit(&shi.mpi_pending, 1, memory_order_relaxed);
    SHI_TR(shmem_tr_flush_local(pe), routine);
}

void shi_iget(void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, size_t size, int pe,
              const char *routine)
{
    if (!nelems)
        return;
    int region = 0;
    size_t disp = 0;
    shi_xlate((const char *)src + (ptrdiff_t)(nelems - 1) * sst * (ptrdiff_t)size, size, pe, routine, &region, &disp);
    const char *p = shi_xlate(src, size, pe, routine, &region, &disp);
    char *d = dest;
    if (p) {
        for (size_t i = 0; i < nelems; i++)
            memcpy(d + (ptrdiff_t)i * dst * (ptrdiff_t)size, p + (ptrdiff_t)i * sst * (ptrdiff_t)size, size);
        return;
    }
    SHI_TR(shmem_tr_iget(region, disp, dest, dst, sst, nelems, size, pe), routine);
    SHI_TR(shmem_tr_flush(pe), routine);
}

void shi_put_signal(void *dest, const void *src, size_t n, uint64_t *sig, uint64_t signal, int sig_op, int pe,
                    const char *routine)
{
    if (sig_op != SHMEM_SIGNAL_SET && sig_op != SHMEM_SIGNAL_ADD)
        shi_fatal(routine, "sig_op %d is neither SHMEM_SIGNAL_SET nor SHMEM_SIGNAL_ADD", sig_op);
    int region = 0;
    size_t disp = 0;
    void *p = n ? shi_xlate(dest, n, pe, routine, &region, &disp) : NULL;
    if (p) {
        util_copy(p, src, n);
        shi_store_fence(); /* the data before the signal, even after non-temporal stores */
    } else if (n) {
        SHI_TR(shmem_tr_put(region, disp, src, n, pe), routine);
        SHI_TR(shmem_tr_flush(pe), routine); /* MPI does not order a put before a later accumulate: complete it first */
    }
    shi_amo(sig_op == SHMEM_SIGNAL_SET ? SHI_AMO_SET : SHI_AMO_ADD, 8, sig, signal, 0, pe, routine);
}

void shi_quiet(void)
{
    shi_store_fence();
    if (atomic_exchange_explicit(&shi.mpi_pending, 0, memory_order_relaxed))
        SHI_TR(shmem_tr_flush_all(), "shmem_quiet");
}

BOBCAT_EXPORT void shmem_quiet(void) { shi_quiet(); }
BOBCAT_EXPORT void shmem_ctx_quiet(shmem_ctx_t ctx) { (void)ctx; shi_quiet(); }
/* Fence orders puts per target; memcpy stores are ordered by the sfence, and MPI only by a flush. */
BOBCAT_EXPORT void shmem_fence(void) { shi_quiet(); }
BOBCAT_EXPORT void shmem_ctx_fence(shmem_ctx_t ctx) { (void)ctx; shi_quiet(); }

#define NAME(N, OP) "shmem_" #N "_" #OP
#define CNAME(N, OP) "shmem_ctx_" #N "_" #OP
#define CPE(ctx, pe, R) shi_ctx_pe(ctx, pe, R)

#define RMA_DEF(T, N)                                                                              \
    BOBCAT_EXPORT void shmem_##N##_put(T *d, const T *s, size_t n, int pe)                            \
    { shi_put(d, s, n * sizeof(T), pe, NAME(N, put), 0); }                                         \
    BOBCAT_EXPORT void shmem_ctx_##N##_put(shmem_ctx_t c, T *d, const T *s, size_t n, int pe)         \
    { shi_put(d, s, n * sizeof(T), CPE(c, pe, CNAME(N, put)), CNAME(N, put), 0); }                 \
    BOBCAT_EXPORT void shmem_##N##_get(T *d, const T *s, size_t n, int pe)                            \
    { shi_get(d, s, n * sizeof(T), pe, NAME(N, get), 0); }                                         \
    BOBCAT_EXPORT void shmem_ctx_##N##_get(shmem_ctx_t c, T *d, const T *s, size_t n, int pe)         \
    { shi_get(d, s, n * sizeof(T), CPE(c, pe, CNAME(N, get)), CNAME(N, get), 0); }                 \
    BOBCAT_EXPORT void shmem_##N##_put_nbi(T *d, const T *s, size_t n, int pe)                        \
    { shi_put(d, s, n * sizeof(T), pe, NAME(N, put_nbi), 1); }                                     \
    BOBCAT_EXPORT void shmem_ctx_##N##_put_nbi(shmem_ctx_t c, T *d, const T *s, size_t n, int pe)     \
    { shi_put(d, s, n * sizeof(T), CPE(c, pe, CNAME(N, put_nbi)), CNAME(N, put_nbi), 1); }         \
    BOBCAT_EXPORT void shmem_##N##_get_nbi(T *d, const T *s, size_t n, int pe)                        \
    { shi_get(d, s, n * sizeof(T), pe, NAME(N, get_nbi), 1); }                                     \
    BOBCAT_EXPORT void shmem_ctx_##N##_get_nbi(shmem_ctx_t c, T *d, const T *s, size_t n, int pe)     \
    { shi_get(d, s, n * sizeof(T), CPE(c, pe, CNAME(N, get_nbi)), CNAME(N, get_nbi), 1); }         \
    BOBCAT_EXPORT void shmem_##N##_iput(T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) \
    { shi_iput(d, s, dst, sst, n, sizeof(T), pe, NAME(N, iput)); }                                 \
    BOBCAT_EXPORT void shmem_ctx_##N##_iput(shmem_ctx_t c, T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, \
                                         size_t n, int pe)                                         \
    { shi_iput(d, s, dst, sst, n, sizeof(T), CPE(c, pe, CNAME(N, iput)), CNAME(N, iput)); }        \
    BOBCAT_EXPORT void shmem_##N##_iget(T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) \
    { shi_iget(d, s, dst, sst, n, sizeof(T), pe, NAME(N, iget)); }                                 \
    BOBCAT_EXPORT void shmem_ctx_##N##_iget(shmem_ctx_t c, T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, \
                                         size_t n, int pe)                                         \
    { shi_iget(d, s, dst, sst, n, sizeof(T), CPE(c, pe, CNAME(N, iget)), CNAME(N, iget)); }        \
    BOBCAT_EXPORT void shmem_##N##_p(T *d, T v, int pe) { shi_put(d, &v, sizeof(T), pe, NAME(N, p), 0); } \
    BOBCAT_EXPORT void shmem_ctx_##N##_p(shmem_ctx_t c, T *d, T v, int pe)                            \
    { shi_put(d, &v, sizeof(T), CPE(c, pe, CNAME(N, p)), CNAME(N, p), 0); }                        \
    BOBCAT_EXPORT T shmem_##N##_g(const T *s, int pe)                                                 \
    { T v; shi_get(&v, s, sizeof(T), pe, NAME(N, g), 0); return v; }                              \
    BOBCAT_EXPORT T shmem_ctx_##N##_g(shmem_ctx_t c, const T *s, int pe)                              \
    { T v; shi_get(&v, s, sizeof(T), CPE(c, pe, CNAME(N, g)), CNAME(N, g), 0); return v; }         \
    BOBCAT_EXPORT void shmem_##N##_put_signal(T *d, const T *s, size_t n, uint64_t *sig, uint64_t sv, int op, int pe) \
    { shi_put_signal(d, s, n * sizeof(T), sig, sv, op, pe, NAME(N, put_signal)); }                 \
    BOBCAT_EXPORT void shmem_ctx_##N##_put_signal(shmem_ctx_t c, T *d, const T *s, size_t n, uint64_t *sig, \
                                               uint64_t sv, int op, int pe)                        \
    { shi_put_signal(d, s, n * sizeof(T), sig, sv, op, CPE(c, pe, CNAME(N, put_signal)), CNAME(N, put_signal)); } \
    BOBCAT_EXPORT void shmem_##N##_put_signal_nbi(T *d, const T *s, size_t n, uint64_t *sig, uint64_t sv, int op, \
                                               int pe)                                             \
    { shi_put_signal(d, s, n * sizeof(T), sig, sv, op, pe, NAME(N, put_signal_nbi)); }             \
    BOBCAT_EXPORT void shmem_ctx_##N##_put_signal_nbi(shmem_ctx_t c, T *d, const T *s, size_t n, uint64_t *sig, \
                                                   uint64_t sv, int op, int pe)                    \
    { shi_put_signal(d, s, n * sizeof(T), sig, sv, op, CPE(c, pe, CNAME(N, put_signal_nbi)),       \
                     CNAME(N, put_signal_nbi)); }
SHMEMI_RMA_TYPES(RMA_DEF)

#define SIZED_DEF(B)                                                                               \
    BOBCAT_EXPORT void shmem_put##B(void *d, const void *s, size_t n, int pe)                         \
    { shi_put(d, s, n * (B / 8), pe, "shmem_put" #B, 0); }                                         \
    BOBCAT_EXPORT void shmem_ctx_put##B(shmem_ctx_t c, void *d, const void *s, size_t n, int pe)      \
    { shi_put(d, s, n * (B / 8), CPE(c, pe, "shmem_ctx_put" #B), "shmem_ctx_put" #B, 0); }         \
    BOBCAT_EXPORT void shmem_get##B(void *d, const void *s, size_t n, int pe)                         \
    { shi_get(d, s, n * (B / 8), pe, "shmem_get" #B, 0); }                                         \
    BOBCAT_EXPORT void shmem_ctx_get##B(shmem_ctx_t c, void *d, const void *s, size_t n, int pe)      \
    { shi_get(d, s, n * (B / 8), CPE(c, pe, "shmem_ctx_get" #B), "shmem_ctx_get" #B, 0); }         \
    BOBCAT_EXPORT void shmem_put##B##_nbi(void *d, const void *s, size_t n, int pe)                   \
    { shi_put(d, s, n * (B / 8), pe, "shmem_put" #B "_nbi", 1); }                                  \
    BOBCAT_EXPORT void shmem_ctx_put##B##_nbi(shmem_ctx_t c, void *d, const void *s, size_t n, int pe) \
    { shi_put(d, s, n * (B / 8), CPE(c, pe, "shmem_ctx_put" #B "_nbi"), "shmem_ctx_put" #B "_nbi", 1); } \
    BOBCAT_EXPORT void shmem_get##B##_nbi(void *d, const void *s, size_t n, int pe)                   \
    { shi_get(d, s, n * (B / 8), pe, "shmem_get" #B "_nbi", 1); }                                  \
    BOBCAT_EXPORT void shmem_ctx_get##B##_nbi(shmem_ctx_t c, void *d, const void *s, size_t n, int pe) \
    { shi_get(d, s, n * (B / 8), CPE(c, pe, "shmem_ctx_get" #B "_nbi"), "shmem_ctx_get" #B "_nbi", 1); } \
    BOBCAT_EXPORT void shmem_iput##B(void *d, const void *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) \
    { shi_iput(d, s, dst, sst, n, B / 8, pe, "shmem_iput" #B); }                                   \
    BOBCAT_EXPORT void shmem_ctx_iput##B(shmem_ctx_t c, void *d, const void *s, ptrdiff_t dst, ptrdiff_t sst, \
                                      size_t n, int pe)                                            \
    { shi_iput(d, s, dst, sst, n, B / 8, CPE(c, pe, "shmem_ctx_iput" #B), "shmem_ctx_iput" #B); }  \
    BOBCAT_EXPORT void shmem_iget##B(void *d, const void *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) \
    { shi_iget(d, s, dst, sst, n, B / 8, pe, "shmem_iget" #B); }                                   \
    BOBCAT_EXPORT void shmem_ctx_iget##B(shmem_ctx_t c, void *d, const void *s, ptrdiff_t dst, ptrdiff_t sst, \
                                      size_t n, int pe)                                            \
    { shi_iget(d, s, dst, sst, n, B / 8, CPE(c, pe, "shmem_ctx_iget" #B), "shmem_ctx_iget" #B); }  \
    BOBCAT_EXPORT void shmem_put##B##_signal(void *d, const void *s, size_t n, uint64_t *sig, uint64_t sv, int op, \
                                        int pe)                                                    \
    { shi_put_signal(d, s, n * (B / 8), sig, sv, op, pe, "shmem_put" #B "_signal"); }                 \
    BOBCAT_EXPORT void shmem_ctx_put##B##_signal(shmem_ctx_t c, void *d, const void *s, size_t n, uint64_t *sig, \
                                            uint64_t sv, int op, int pe)                           \
    { shi_put_signal(d, s, n * (B / 8), sig, sv, op, CPE(c, pe, "shmem_ctx_put" #B "_signal"),        \
                     "shmem_ctx_put" #B "_signal"); }                                                 \
    BOBCAT_EXPORT void shmem_put##B##_signal_nbi(void *d, const void *s, size_t n, uint64_t *sig, uint64_t sv, \
                                              int op, int pe)                                      \
    { shi_put_signal(d, s, n * (B / 8), sig, sv, op, pe, "shmem_put" #B "_signal_nbi"); }          \
    BOBCAT_EXPORT void shmem_ctx_put##B##_signal_nbi(shmem_ctx_t c, void *d, const void *s, size_t n, \
                                                  uint64_t *sig, uint64_t sv, int op, int pe)      \
    { shi_put_signal(d, s, n * (B / 8), sig, sv, op, CPE(c, pe, "shmem_ctx_put" #B "_signal_nbi"), \
                     "shmem_ctx_put" #B "_signal_nbi"); }
SHMEMI_SIZES(SIZED_DEF)

BOBCAT_EXPORT void shmem_putmem(void *d, const void *s, size_t n, int pe) { shi_put(d, s, n, pe, "shmem_putmem", 0); }
BOBCAT_EXPORT void shmem_ctx_putmem(shmem_ctx_t c, void *d, const void *s, size_t n, int pe)
{ shi_put(d, s, n, CPE(c, pe, "shmem_ctx_putmem"), "shmem_ctx_putmem", 0); }
BOBCAT_EXPORT void shmem_getmem(void *d, const void *s, size_t n, int pe) { shi_get(d, s, n, pe, "shmem_getmem", 0); }
BOBCAT_EXPORT void shmem_ctx_getmem(shmem_ctx_t c, void *d, const void *s, size_t n, int pe)
{ shi_get(d, s, n, CPE(c, pe, "shmem_ctx_getmem"), "shmem_ctx_getmem", 0); }
BOBCAT_EXPORT void shmem_putmem_nbi(void *d, const void *s, size_t n, int pe)
{ shi_put(d, s, n, pe, "shmem_putmem_nbi", 1); }
BOBCAT_EXPORT void shmem_ctx_putmem_nbi(shmem_ctx_t c, void *d, const void *s, size_t n, int pe)
{ shi_put(d, s, n, CPE(c, pe, "shmem_ctx_putmem_nbi"), "shmem_ctx_putmem_nbi", 1); }
BOBCAT_EXPORT void shmem_getmem_nbi(void *d, const void *s, size_t n, int pe)
{ shi_get(d, s, n, pe, "shmem_getmem_nbi", 1); }
BOBCAT_EXPORT void shmem_ctx_getmem_nbi(shmem_ctx_t c, void *d, const void *s, size_t n, int pe)
{ shi_get(d, s, n, CPE(c, pe, "shmem_ctx_getmem_nbi"), "shmem_ctx_getmem_nbi", 1); }
BOBCAT_EXPORT void shmem_putmem_signal(void *d, const void *s, size_t n, uint64_t *sig, uint64_t sv, int op, int pe)
{ shi_put_signal(d, s, n, sig, sv, op, pe, "shmem_putmem_signal"); }
BOBCAT_EXPORT void shmem_ctx_putmem_signal(shmem_ctx_t c, void *d, const void *s, size_t n, uint64_t *sig, uint64_t sv,
                                        int op, int pe)
{ shi_put_signal(d, s, n, sig, sv, op, CPE(c, pe, "shmem_ctx_putmem_signal"), "shmem_ctx_putmem_signal"); }
BOBCAT_EXPORT void shmem_putmem_signal_nbi(void *d, const void *s, size_t n, uint64_t *sig, uint64_t sv, int op, int pe)
{ shi_put_signal(d, s, n, sig, sv, op, pe, "shmem_putmem_signal_nbi"); }
BOBCAT_EXPORT void shmem_ctx_putmem_signal_nbi(shmem_ctx_t c, void *d, const void *s, size_t n, uint64_t *sig,
                                            uint64_t sv, int op, int pe)
{ shi_put_signal(d, s, n, sig, sv, op, CPE(c, pe, "shmem_ctx_putmem_signal_nbi"), "shmem_ctx_putmem_signal_nbi"); }

BOBCAT_EXPORT uint64_t shmem_signal_fetch(const uint64_t *sig_addr)
{
    return shi_amo(SHI_AMO_FETCH, 8, (void *)sig_addr, 0, 0, shi.me, "shmem_signal_fetch");
}
