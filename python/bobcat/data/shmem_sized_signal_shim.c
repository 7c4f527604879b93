/* Harness shim for the external shmem4py run (bobcat.external --suite shmem4py), never part of
 * libbobcat: OpenSHMEM 1.5's sized put-with-signal routines (shmem_put<SIZE>_signal[_nbi] and their
 * shmem_ctx_ forms) written over shmem_[ctx_]putmem_signal[_nbi], so shmem4py's module can load
 * against a library that lacks them and the rest of its suite runs. The report says when it was used:
 * tests of these routines then test putmem_signal, not the sized routines. */
#include <shmem.h>

#define SIZED(BITS)                                                                               \
    void shmem_put##BITS##_signal(void *d, const void *s, size_t n, uint64_t *sig, uint64_t v,    \
                                  int op, int pe)                                                 \
    { shmem_putmem_signal(d, s, n * (BITS / 8), sig, v, op, pe); }                                \
    void shmem_put##BITS##_signal_nbi(void *d, const void *s, size_t n, uint64_t *sig,            \
                                      uint64_t v, int op, int pe)                                 \
    { shmem_putmem_signal_nbi(d, s, n * (BITS / 8), sig, v, op, pe); }                            \
    void shmem_ctx_put##BITS##_signal(shmem_ctx_t c, void *d, const void *s, size_t n,            \
                                      uint64_t *sig, uint64_t v, int op, int pe)                  \
    { shmem_ctx_putmem_signal(c, d, s, n * (BITS / 8), sig, v, op, pe); }                         \
    void shmem_ctx_put##BITS##_signal_nbi(shmem_ctx_t c, void *d, const void *s, size_t n,        \
                                          uint64_t *sig, uint64_t v, int op, int pe)              \
    { shmem_ctx_putmem_signal_nbi(c, d, s, n * (BITS / 8), sig, v, op, pe); }

SIZED(8)
SIZED(16)
SIZED(32)
SIZED(64)
SIZED(128)
