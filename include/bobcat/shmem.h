/* OpenSHMEM 1.5 over SMARTMAP (bobcat's libbobcat-shmem-<mpi>.so; docs/shmem.md).
 *
 * On a node, put/get/atomics are loads, stores, memcpy and hardware atomics on the target PE's
 * memory through the SMARTMAP windows (shmem_ptr gives that address); between nodes they are MPI-3
 * RMA. Symmetric objects: the symmetric heap (shmem_malloc and friends, SHMEM_SYMMETRIC_SIZE bytes
 * per PE) and the executable's global and static variables.
 *
 * The typed routines are declared from the type tables below (the standard's tables 5, 6, 7, 8,
 * 10, 11): one X-macro per table, so every typed name exists exactly for its table's types. */
#ifndef BOBCAT_SHMEM_H
#define BOBCAT_SHMEM_H

#include <stddef.h>
#include <stdint.h>
#if !defined(__cplusplus)
#include <complex.h>
#define SHMEMI_COMPLEXD double _Complex
#define SHMEMI_COMPLEXF float _Complex
#else
/* C++ has no _Complex: std::complex<T> has the same layout (C++ [complex.numbers]), so the
 * complex reductions take it there. */
#include <complex>
#define SHMEMI_COMPLEXD std::complex<double>
#define SHMEMI_COMPLEXF std::complex<float>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* --- constants ------------------------------------------------------------------------------ */
#define SHMEM_MAJOR_VERSION 1
#define SHMEM_MINOR_VERSION 5
#define SHMEM_MAX_NAME_LEN 256
#define SHMEM_VENDOR_STRING "bobcat OpenSHMEM over SMARTMAP"

#define SHMEM_THREAD_SINGLE 0
#define SHMEM_THREAD_FUNNELED 1
#define SHMEM_THREAD_SERIALIZED 2
#define SHMEM_THREAD_MULTIPLE 3

#define SHMEM_CMP_EQ 0
#define SHMEM_CMP_NE 1
#define SHMEM_CMP_GT 2
#define SHMEM_CMP_GE 3
#define SHMEM_CMP_LT 4
#define SHMEM_CMP_LE 5

#define SHMEM_SIGNAL_SET 0
#define SHMEM_SIGNAL_ADD 1

#define SHMEM_MALLOC_ATOMICS_REMOTE 1L
#define SHMEM_MALLOC_SIGNAL_REMOTE 2L

#define SHMEM_CTX_PRIVATE 1L
#define SHMEM_CTX_SERIALIZED 2L
#define SHMEM_CTX_NOSTORE 4L

#define SHMEM_TEAM_NUM_CONTEXTS 1L

/* pSync/pWrk sizes of the legacy active-set collectives (in longs / elements). */
#define SHMEM_SYNC_VALUE 0L
#define SHMEM_SYNC_SIZE 72
#define SHMEM_BARRIER_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_BCAST_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_COLLECT_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_REDUCE_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_ALLTOALL_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_ALLTOALLS_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_REDUCE_MIN_WRKDATA_SIZE 1

/* Who this is, for clients that adapt to the library by its macros, as OpenSHMEM clients do (Open
 * MPI's oshmem defines OSHMEM_MAJOR_VERSION, OSHMPI OSHMPI_NUMVERSION, Cray CRAY_SHMEM_NUMVERSION):
 * bobcat's OpenSHMEM, release 0.1, of the 1.5 standard (SHMEM_MAJOR/MINOR_VERSION). */
#define BOBCAT_SHMEM 1
#define BOBCAT_SHMEM_NUMVERSION 100 /* major * 10000 + minor * 100 + patch: 0.1.0 */

/* shmem4py (PyPI) picks its fallbacks by vendor macro: for a library it does not recognise it
 * defines static stand-ins for every 1.5 routine it cannot be sure of (teams, signals, AMO nbi,
 * team collectives ...), which clash with this header's declarations ("static declaration follows
 * non-static"). Its PySHMEM_HAVE_<feature> macros let a library say what it has; bobcat has every
 * one of them, so a plain `OSHCC=<prefix>/bin/oshcc pip install shmem4py` builds against the real
 * routines (docs/shmem.md). The names are shmem4py's; they mean nothing to other programs. */
#define PySHMEM_HAVE_shmem_malloc_with_hints 1
#define PySHMEM_HAVE_shmem_team_t 1
#define PySHMEM_HAVE_SHMEM_CTX_INVALID 1
#define PySHMEM_HAVE_shmem_amo_nbi 1
#define PySHMEM_HAVE_shmem_put_signal 1
#define PySHMEM_HAVE_shmem_signal_fetch 1
#define PySHMEM_HAVE_shmem_signal_wait_until 1
#define PySHMEM_HAVE_shmem_broadcast 1
#define PySHMEM_HAVE_shmem_collect 1
#define PySHMEM_HAVE_shmem_fcollect 1
#define PySHMEM_HAVE_shmem_alltoall 1
#define PySHMEM_HAVE_shmem_alltoalls 1
#define PySHMEM_HAVE_shmem_broadcastmem 1
#define PySHMEM_HAVE_shmem_collectmem 1
#define PySHMEM_HAVE_shmem_fcollectmem 1
#define PySHMEM_HAVE_shmem_alltoallmem 1
#define PySHMEM_HAVE_shmem_alltoallsmem 1
#define PySHMEM_HAVE_shmem_reduce 1
#define PySHMEM_HAVE_shmem_wait_test_many 1
#define PySHMEM_HAVE_shmem_pcontrol 1

/* The pre-1.3 spellings. */
#define _SHMEM_MAJOR_VERSION SHMEM_MAJOR_VERSION
#define _SHMEM_MINOR_VERSION SHMEM_MINOR_VERSION
#define _SHMEM_MAX_NAME_LEN SHMEM_MAX_NAME_LEN
#define _SHMEM_VENDOR_STRING SHMEM_VENDOR_STRING
#define _SHMEM_SYNC_VALUE SHMEM_SYNC_VALUE
#define _SHMEM_SYNC_SIZE SHMEM_SYNC_SIZE
#define _SHMEM_BARRIER_SYNC_SIZE SHMEM_BARRIER_SYNC_SIZE
#define _SHMEM_BCAST_SYNC_SIZE SHMEM_BCAST_SYNC_SIZE
#define _SHMEM_COLLECT_SYNC_SIZE SHMEM_COLLECT_SYNC_SIZE
#define _SHMEM_REDUCE_SYNC_SIZE SHMEM_REDUCE_SYNC_SIZE
#define _SHMEM_ALLTOALL_SYNC_SIZE SHMEM_ALLTOALL_SYNC_SIZE
#define _SHMEM_ALLTOALLS_SYNC_SIZE SHMEM_ALLTOALLS_SYNC_SIZE
#define _SHMEM_REDUCE_MIN_WRKDATA_SIZE SHMEM_REDUCE_MIN_WRKDATA_SIZE
#define _SHMEM_CMP_EQ SHMEM_CMP_EQ
#define _SHMEM_CMP_NE SHMEM_CMP_NE
#define _SHMEM_CMP_GT SHMEM_CMP_GT
#define _SHMEM_CMP_GE SHMEM_CMP_GE
#define _SHMEM_CMP_LT SHMEM_CMP_LT
#define _SHMEM_CMP_LE SHMEM_CMP_LE
#define SHMEM_CMP_EQ_ SHMEM_CMP_EQ

/* --- handles -------------------------------------------------------------------------------- */
typedef struct shmemi_team *shmem_team_t;
typedef struct shmemi_ctx *shmem_ctx_t;
typedef struct {
    int num_contexts;
} shmem_team_config_t;

extern shmem_team_t SHMEM_TEAM_WORLD;
extern shmem_team_t SHMEM_TEAM_SHARED;
#define SHMEM_TEAM_INVALID ((shmem_team_t)0)
extern shmem_ctx_t SHMEM_CTX_DEFAULT;
#define SHMEM_CTX_INVALID ((shmem_ctx_t)0)

/* --- type tables ---------------------------------------------------------------------------- */
/* Table 5: standard RMA types (also broadcast, collect, alltoall). */
#define SHMEMI_RMA_TYPES(X)                                                                        \
    X(float, float) X(double, double) X(long double, longdouble) X(char, char)                     \
    X(signed char, schar) X(short, short) X(int, int) X(long, long) X(long long, longlong)         \
    X(unsigned char, uchar) X(unsigned short, ushort) X(unsigned int, uint) X(unsigned long, ulong) \
    X(unsigned long long, ulonglong) X(int8_t, int8) X(int16_t, int16) X(int32_t, int32)           \
    X(int64_t, int64) X(uint8_t, uint8) X(uint16_t, uint16) X(uint32_t, uint32) X(uint64_t, uint64) \
    X(size_t, size) X(ptrdiff_t, ptrdiff)
/* Table 6: standard AMO types; extended AMO types add float and double; bitwise AMO types. */
#define SHMEMI_AMO_STD_TYPES(X)                                                                    \
    X(int, int) X(long, long) X(long long, longlong) X(unsigned int, uint) X(unsigned long, ulong)  \
    X(unsigned long long, ulonglong) X(int32_t, int32) X(int64_t, int64) X(uint32_t, uint32)       \
    X(uint64_t, uint64) X(size_t, size) X(ptrdiff_t, ptrdiff)
#define SHMEMI_AMO_EXT_TYPES(X) SHMEMI_AMO_STD_TYPES(X) X(float, float) X(double, double)
#define SHMEMI_AMO_BIT_TYPES(X)                                                                    \
    X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong) X(int32_t, int32) \
    X(int64_t, int64) X(uint32_t, uint32) X(uint64_t, uint64)
/* Table 8: point-to-point synchronisation types. */
#define SHMEMI_SYNC_TYPES(X)                                                                       \
    X(short, short) X(int, int) X(long, long) X(long long, longlong) X(unsigned short, ushort)      \
    X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong)                  \
    X(int32_t, int32) X(int64_t, int64) X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size)    \
    X(ptrdiff_t, ptrdiff)
/* Table 10: reduction types, per operator class. */
#define SHMEMI_REDUCE_BIT_TYPES(X)                                                                 \
    X(unsigned char, uchar) X(unsigned short, ushort) X(unsigned int, uint) X(unsigned long, ulong) \
    X(unsigned long long, ulonglong) X(int8_t, int8) X(int16_t, int16) X(int32_t, int32)           \
    X(int64_t, int64) X(uint8_t, uint8) X(uint16_t, uint16) X(uint32_t, uint32) X(uint64_t, uint64) \
    X(size_t, size)
#define SHMEMI_REDUCE_MINMAX_TYPES(X)                                                              \
    X(char, char) X(signed char, schar) X(short, short) X(int, int) X(long, long)                  \
    X(long long, longlong) X(ptrdiff_t, ptrdiff) X(unsigned char, uchar) X(unsigned short, ushort)  \
    X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong) X(int8_t, int8)  \
    X(int16_t, int16) X(int32_t, int32) X(int64_t, int64) X(uint8_t, uint8) X(uint16_t, uint16)    \
    X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size) X(float, float) X(double, double)      \
    X(long double, longdouble)
#define SHMEMI_LEGACY_COMPLEX(X) X(SHMEMI_COMPLEXD, complexd) X(SHMEMI_COMPLEXF, complexf)
#define SHMEMI_REDUCE_ARITH_TYPES(X) SHMEMI_REDUCE_MINMAX_TYPES(X) SHMEMI_LEGACY_COMPLEX(X)
/* Legacy *_to_all types. */
#define SHMEMI_TOALL_BIT_TYPES(X) X(short, short) X(int, int) X(long, long) X(long long, longlong)
#define SHMEMI_TOALL_MINMAX_TYPES(X)                                                               \
    SHMEMI_TOALL_BIT_TYPES(X) X(float, float) X(double, double) X(long double, longdouble)
#define SHMEMI_TOALL_ARITH_TYPES(X) SHMEMI_TOALL_MINMAX_TYPES(X) SHMEMI_LEGACY_COMPLEX(X)
/* Sizes of the sized routines (bits). */
#define SHMEMI_SIZES(X) X(8) X(16) X(32) X(64) X(128)

/* --- library setup, query, exit ---------------------------------------------------------------- */
void shmem_init(void);
int shmem_init_thread(int requested, int *provided);
void shmem_finalize(void);
void shmem_global_exit(int status);
void shmem_query_thread(int *provided);
int shmem_my_pe(void);
int shmem_n_pes(void);
int shmem_pe_accessible(int pe);
int shmem_addr_accessible(const void *addr, int pe);
void *shmem_ptr(const void *dest, int pe);
void shmem_info_get_version(int *major, int *minor);
void shmem_info_get_name(char *name);
/* Profiling control: accepted and ignored (no built-in profiling layer; a no-op conforms). */
void shmem_pcontrol(const int level, ...);
/* Legacy. */
void start_pes(int npes);
int _my_pe(void);
int _num_pes(void);
int my_pe(void);
int num_pes(void);

/* --- memory management ----------------------------------------------------------------------- */
void *shmem_malloc(size_t size);
void *shmem_calloc(size_t count, size_t size);
void *shmem_align(size_t alignment, size_t size);
void *shmem_realloc(void *ptr, size_t size);
void shmem_free(void *ptr);
void *shmem_malloc_with_hints(size_t size, long hints);
void *shmalloc(size_t size);
void shfree(void *ptr);
void *shmemalign(size_t alignment, size_t size);
void *shrealloc(void *ptr, size_t size);

/* --- teams ------------------------------------------------------------------------------------ */
int shmem_team_my_pe(shmem_team_t team);
int shmem_team_n_pes(shmem_team_t team);
int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t *config);
int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team);
int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size,
                             const shmem_team_config_t *config, long config_mask, shmem_team_t *new_team);
int shmem_team_split_2d(shmem_team_t parent_team, int xrange, const shmem_team_config_t *xaxis_config,
                        long xaxis_mask, shmem_team_t *xaxis_team, const shmem_team_config_t *yaxis_config,
                        long yaxis_mask, shmem_team_t *yaxis_team);
void shmem_team_destroy(shmem_team_t team);
int shmem_team_sync(shmem_team_t team);
void *shmem_team_ptr(shmem_team_t team, const void *dest, int pe);

/* --- contexts -------------------------------------------------------------------------------- */
int shmem_ctx_create(long options, shmem_ctx_t *ctx);
int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx);
void shmem_ctx_destroy(shmem_ctx_t ctx);
int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team);

/* --- RMA ------------------------------------------------------------------------------------- */
#define SHMEMI_DECL_RMA(T, N)                                                                      \
    void shmem_##N##_put(T *dest, const T *source, size_t nelems, int pe);                         \
    void shmem_ctx_##N##_put(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe);    \
    void shmem_##N##_get(T *dest, const T *source, size_t nelems, int pe);                         \
    void shmem_ctx_##N##_get(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe);    \
    void shmem_##N##_put_nbi(T *dest, const T *source, size_t nelems, int pe);                     \
    void shmem_ctx_##N##_put_nbi(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe); \
    void shmem_##N##_get_nbi(T *dest, const T *source, size_t nelems, int pe);                     \
    void shmem_ctx_##N##_get_nbi(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe); \
    void shmem_##N##_iput(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
    void shmem_ctx_##N##_iput(shmem_ctx_t ctx, T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, \
                              size_t nelems, int pe);                                              \
    void shmem_##N##_iget(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
    void shmem_ctx_##N##_iget(shmem_ctx_t ctx, T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, \
                              size_t nelems, int pe);                                              \
    void shmem_##N##_p(T *dest, T value, int pe);                                                  \
    void shmem_ctx_##N##_p(shmem_ctx_t ctx, T *dest, T value, int pe);                             \
    T shmem_##N##_g(const T *source, int pe);                                                      \
    T shmem_ctx_##N##_g(shmem_ctx_t ctx, const T *source, int pe);                                 \
    void shmem_##N##_put_signal(T *dest, const T *source, size_t nelems, uint64_t *sig_addr,       \
                                uint64_t signal, int sig_op, int pe);                              \
    void shmem_ctx_##N##_put_signal(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems,      \
                                    uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);      \
    void shmem_##N##_put_signal_nbi(T *dest, const T *source, size_t nelems, uint64_t *sig_addr,   \
                                    uint64_t signal, int sig_op, int pe);                          \
    void shmem_ctx_##N##_put_signal_nbi(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems,  \
                                        uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
SHMEMI_RMA_TYPES(SHMEMI_DECL_RMA)

#define SHMEMI_DECL_SIZED(B)                                                                       \
    void shmem_put##B(void *dest, const void *source, size_t nelems, int pe);                      \
    void shmem_ctx_put##B(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe); \
    void shmem_get##B(void *dest, const void *source, size_t nelems, int pe);                      \
    void shmem_ctx_get##B(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe); \
    void shmem_put##B##_nbi(void *dest, const void *source, size_t nelems, int pe);                \
    void shmem_ctx_put##B##_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe); \
    void shmem_get##B##_nbi(void *dest, const void *source, size_t nelems, int pe);                \
    void shmem_ctx_get##B##_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe); \
    void shmem_iput##B(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
    void shmem_ctx_iput##B(shmem_ctx_t ctx, void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, \
                           size_t nelems, int pe);                                                 \
    void shmem_iget##B(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
    void shmem_ctx_iget##B(shmem_ctx_t ctx, void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, \
                           size_t nelems, int pe);                                                 \
    void shmem_put##B##_signal(void *dest, const void *source, size_t nelems, uint64_t *sig_addr,    \
                             uint64_t signal, int sig_op, int pe);                                 \
    void shmem_ctx_put##B##_signal(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,   \
                                 uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);         \
    void shmem_put##B##_signal_nbi(void *dest, const void *source, size_t nelems, uint64_t *sig_addr, \
                                   uint64_t signal, int sig_op, int pe);                           \
    void shmem_ctx_put##B##_signal_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, \
                                       uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
SHMEMI_SIZES(SHMEMI_DECL_SIZED)

void shmem_putmem(void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_putmem(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);
void shmem_getmem(void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_getmem(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);
void shmem_putmem_nbi(void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_putmem_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);
void shmem_getmem_nbi(void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_getmem_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);
void shmem_putmem_signal(void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal,
                         int sig_op, int pe);
void shmem_ctx_putmem_signal(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, uint64_t *sig_addr,
                             uint64_t signal, int sig_op, int pe);
void shmem_putmem_signal_nbi(void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal,
                             int sig_op, int pe);
void shmem_ctx_putmem_signal_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,
                                 uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
uint64_t shmem_signal_fetch(const uint64_t *sig_addr);
uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value);

/* --- atomics ----------------------------------------------------------------------------------- */
#define SHMEMI_DECL_AMO_EXT(T, N)                                                                  \
    T shmem_##N##_atomic_fetch(const T *source, int pe);                                           \
    T shmem_ctx_##N##_atomic_fetch(shmem_ctx_t ctx, const T *source, int pe);                      \
    void shmem_##N##_atomic_set(T *dest, T value, int pe);                                         \
    void shmem_ctx_##N##_atomic_set(shmem_ctx_t ctx, T *dest, T value, int pe);                    \
    T shmem_##N##_atomic_swap(T *dest, T value, int pe);                                           \
    T shmem_ctx_##N##_atomic_swap(shmem_ctx_t ctx, T *dest, T value, int pe);                      \
    void shmem_##N##_atomic_fetch_nbi(T *fetch, const T *source, int pe);                          \
    void shmem_ctx_##N##_atomic_fetch_nbi(shmem_ctx_t ctx, T *fetch, const T *source, int pe);     \
    void shmem_##N##_atomic_swap_nbi(T *fetch, T *dest, T value, int pe);                          \
    void shmem_ctx_##N##_atomic_swap_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T value, int pe);
#define SHMEMI_DECL_AMO_STD(T, N)                                                                  \
    T shmem_##N##_atomic_compare_swap(T *dest, T cond, T value, int pe);                           \
    T shmem_ctx_##N##_atomic_compare_swap(shmem_ctx_t ctx, T *dest, T cond, T value, int pe);      \
    T shmem_##N##_atomic_fetch_inc(T *dest, int pe);                                               \
    T shmem_ctx_##N##_atomic_fetch_inc(shmem_ctx_t ctx, T *dest, int pe);                          \
    void shmem_##N##_atomic_inc(T *dest, int pe);                                                  \
    void shmem_ctx_##N##_atomic_inc(shmem_ctx_t ctx, T *dest, int pe);                             \
    T shmem_##N##_atomic_fetch_add(T *dest, T value, int pe);                                      \
    T shmem_ctx_##N##_atomic_fetch_add(shmem_ctx_t ctx, T *dest, T value, int pe);                 \
    void shmem_##N##_atomic_add(T *dest, T value, int pe);                                         \
    void shmem_ctx_##N##_atomic_add(shmem_ctx_t ctx, T *dest, T value, int pe);                    \
    void shmem_##N##_atomic_compare_swap_nbi(T *fetch, T *dest, T cond, T value, int pe);          \
    void shmem_ctx_##N##_atomic_compare_swap_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T cond, T value, int pe); \
    void shmem_##N##_atomic_fetch_inc_nbi(T *fetch, T *dest, int pe);                              \
    void shmem_ctx_##N##_atomic_fetch_inc_nbi(shmem_ctx_t ctx, T *fetch, T *dest, int pe);         \
    void shmem_##N##_atomic_fetch_add_nbi(T *fetch, T *dest, T value, int pe);                     \
    void shmem_ctx_##N##_atomic_fetch_add_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T value, int pe);
#define SHMEMI_DECL_AMO_BIT1(T, N, OP)                                                             \
    T shmem_##N##_atomic_fetch_##OP(T *dest, T value, int pe);                                     \
    T shmem_ctx_##N##_atomic_fetch_##OP(shmem_ctx_t ctx, T *dest, T value, int pe);                \
    void shmem_##N##_atomic_##OP(T *dest, T value, int pe);                                        \
    void shmem_ctx_##N##_atomic_##OP(shmem_ctx_t ctx, T *dest, T value, int pe);                   \
    void shmem_##N##_atomic_fetch_##OP##_nbi(T *fetch, T *dest, T value, int pe);                  \
    void shmem_ctx_##N##_atomic_fetch_##OP##_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T value, int pe);
#define SHMEMI_DECL_AMO_BIT(T, N) SHMEMI_DECL_AMO_BIT1(T, N, and) SHMEMI_DECL_AMO_BIT1(T, N, or) SHMEMI_DECL_AMO_BIT1(T, N, xor)
SHMEMI_AMO_EXT_TYPES(SHMEMI_DECL_AMO_EXT)
SHMEMI_AMO_STD_TYPES(SHMEMI_DECL_AMO_STD)
SHMEMI_AMO_BIT_TYPES(SHMEMI_DECL_AMO_BIT)

/* Deprecated (pre-1.4) atomic names. */
#define SHMEMI_DECL_AMO_OLD(T, N)                                                                  \
    T shmem_##N##_fadd(T *dest, T value, int pe);                                                  \
    T shmem_##N##_finc(T *dest, int pe);                                                           \
    void shmem_##N##_add(T *dest, T value, int pe);                                                \
    void shmem_##N##_inc(T *dest, int pe);                                                         \
    T shmem_##N##_cswap(T *dest, T cond, T value, int pe);                                         \
    T shmem_##N##_swap(T *dest, T value, int pe);                                                  \
    T shmem_##N##_fetch(const T *source, int pe);                                                  \
    void shmem_##N##_set(T *dest, T value, int pe);
SHMEMI_DECL_AMO_OLD(int, int)
SHMEMI_DECL_AMO_OLD(long, long)
SHMEMI_DECL_AMO_OLD(long long, longlong)
float shmem_float_swap(float *dest, float value, int pe);
double shmem_double_swap(double *dest, double value, int pe);
float shmem_float_fetch(const float *source, int pe);
double shmem_double_fetch(const double *source, int pe);
void shmem_float_set(float *dest, float value, int pe);
void shmem_double_set(double *dest, double value, int pe);
long shmem_swap(long *dest, long value, int pe);

/* --- ordering ---------------------------------------------------------------------------------- */
void shmem_fence(void);
void shmem_ctx_fence(shmem_ctx_t ctx);
void shmem_quiet(void);
void shmem_ctx_quiet(shmem_ctx_t ctx);

/* --- point-to-point synchronisation ------------------------------------------------------------ */
#define SHMEMI_DECL_SYNC(T, N)                                                                     \
    void shmem_##N##_wait_until(T *ivar, int cmp, T cmp_value);                                    \
    void shmem_##N##_wait(T *ivar, T cmp_value);                                                   \
    void shmem_##N##_wait_until_all(T *ivars, size_t nelems, const int *status, int cmp, T cmp_value); \
    size_t shmem_##N##_wait_until_any(T *ivars, size_t nelems, const int *status, int cmp, T cmp_value); \
    size_t shmem_##N##_wait_until_some(T *ivars, size_t nelems, size_t *indices, const int *status, int cmp, \
                                       T cmp_value);                                               \
    void shmem_##N##_wait_until_all_vector(T *ivars, size_t nelems, const int *status, int cmp,    \
                                           T *cmp_values);                                         \
    size_t shmem_##N##_wait_until_any_vector(T *ivars, size_t nelems, const int *status, int cmp,  \
                                             T *cmp_values);                                       \
    size_t shmem_##N##_wait_until_some_vector(T *ivars, size_t nelems, size_t *indices, const int *status, \
                                              int cmp, T *cmp_values);                             \
    int shmem_##N##_test(T *ivar, int cmp, T cmp_value);                                           \
    int shmem_##N##_test_all(T *ivars, size_t nelems, const int *status, int cmp, T cmp_value);    \
    size_t shmem_##N##_test_any(T *ivars, size_t nelems, const int *status, int cmp, T cmp_value); \
    size_t shmem_##N##_test_some(T *ivars, size_t nelems, size_t *indices, const int *status, int cmp, \
                                 T cmp_value);                                                     \
    int shmem_##N##_test_all_vector(T *ivars, size_t nelems, const int *status, int cmp, T *cmp_values); \
    size_t shmem_##N##_test_any_vector(T *ivars, size_t nelems, const int *status, int cmp, T *cmp_values); \
    size_t shmem_##N##_test_some_vector(T *ivars, size_t nelems, size_t *indices, const int *status, int cmp, \
                                        T *cmp_values);
SHMEMI_SYNC_TYPES(SHMEMI_DECL_SYNC)
void shmem_wait_until(long *ivar, int cmp, long cmp_value);
void shmem_wait(long *ivar, long cmp_value);

/* --- barriers and locks ----------------------------------------------------------------------- */
void shmem_barrier_all(void);
void shmem_sync_all(void);
void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long *pSync);
/* Deprecated active-set sync. In 1.5 `shmem_sync` names the team sync in C11 (and C++), as
 * `shmem_sync(team)`; the active-set form is reached as `shmem_sync(PE_start, logPE_stride,
 * PE_size, pSync)` through the selection below, or by its own name shmem_sync_deprecated. The
 * exported symbol shmem_sync stays the active-set routine, so programs built before 1.5 still
 * link to what they called. */
void shmem_sync(int PE_start, int logPE_stride, int PE_size, long *pSync);
void shmem_sync_deprecated(int PE_start, int logPE_stride, int PE_size, long *pSync);
void shmem_set_lock(long *lock);
void shmem_clear_lock(long *lock);
int shmem_test_lock(long *lock);

/* --- collectives ------------------------------------------------------------------------------ */
#define SHMEMI_DECL_COLL(T, N)                                                                     \
    int shmem_##N##_broadcast(shmem_team_t team, T *dest, const T *source, size_t nelems, int PE_root); \
    int shmem_##N##_collect(shmem_team_t team, T *dest, const T *source, size_t nelems);           \
    int shmem_##N##_fcollect(shmem_team_t team, T *dest, const T *source, size_t nelems);          \
    int shmem_##N##_alltoall(shmem_team_t team, T *dest, const T *source, size_t nelems);          \
    int shmem_##N##_alltoalls(shmem_team_t team, T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, \
                              size_t nelems);
SHMEMI_RMA_TYPES(SHMEMI_DECL_COLL)
int shmem_broadcastmem(shmem_team_t team, void *dest, const void *source, size_t nelems, int PE_root);
int shmem_collectmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_fcollectmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_alltoallmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_alltoallsmem(shmem_team_t team, void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,
                       size_t nelems);

#define SHMEMI_DECL_RED1(T, N, OP)                                                                 \
    int shmem_##N##_##OP##_reduce(shmem_team_t team, T *dest, const T *source, size_t nreduce);
#define SHMEMI_DECL_RED_BIT(T, N) SHMEMI_DECL_RED1(T, N, and) SHMEMI_DECL_RED1(T, N, or) SHMEMI_DECL_RED1(T, N, xor)
#define SHMEMI_DECL_RED_MINMAX(T, N) SHMEMI_DECL_RED1(T, N, max) SHMEMI_DECL_RED1(T, N, min)
#define SHMEMI_DECL_RED_ARITH(T, N) SHMEMI_DECL_RED1(T, N, sum) SHMEMI_DECL_RED1(T, N, prod)
SHMEMI_REDUCE_BIT_TYPES(SHMEMI_DECL_RED_BIT)
SHMEMI_REDUCE_MINMAX_TYPES(SHMEMI_DECL_RED_MINMAX)
SHMEMI_REDUCE_ARITH_TYPES(SHMEMI_DECL_RED_ARITH)

/* Legacy active-set collectives: PEs PE_start + i * 2^logPE_stride, pSync of *_SYNC_SIZE longs
 * set to SHMEM_SYNC_VALUE. */
#define SHMEMI_DECL_LEGACY_BITS(B)                                                                 \
    void shmem_broadcast##B(void *dest, const void *source, size_t nelems, int PE_root, int PE_start, \
                            int logPE_stride, int PE_size, long *pSync);                           \
    void shmem_collect##B(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, \
                          int PE_size, long *pSync);                                               \
    void shmem_fcollect##B(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, \
                           int PE_size, long *pSync);                                              \
    void shmem_alltoall##B(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, \
                           int PE_size, long *pSync);                                              \
    void shmem_alltoalls##B(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, \
                            int PE_start, int logPE_stride, int PE_size, long *pSync);
SHMEMI_DECL_LEGACY_BITS(32)
SHMEMI_DECL_LEGACY_BITS(64)
#define SHMEMI_DECL_TOALL1(T, N, OP)                                                               \
    void shmem_##N##_##OP##_to_all(T *dest, const T *source, int nreduce, int PE_start, int logPE_stride, \
                                   int PE_size, T *pWrk, long *pSync);
#define SHMEMI_DECL_TOALL_BIT(T, N) SHMEMI_DECL_TOALL1(T, N, and) SHMEMI_DECL_TOALL1(T, N, or) SHMEMI_DECL_TOALL1(T, N, xor)
#define SHMEMI_DECL_TOALL_MINMAX(T, N) SHMEMI_DECL_TOALL1(T, N, max) SHMEMI_DECL_TOALL1(T, N, min)
#define SHMEMI_DECL_TOALL_ARITH(T, N) SHMEMI_DECL_TOALL1(T, N, sum) SHMEMI_DECL_TOALL1(T, N, prod)
SHMEMI_TOALL_BIT_TYPES(SHMEMI_DECL_TOALL_BIT)
SHMEMI_TOALL_MINMAX_TYPES(SHMEMI_DECL_TOALL_MINMAX)
SHMEMI_TOALL_ARITH_TYPES(SHMEMI_DECL_TOALL_ARITH)

/* Cache management (no-ops on a coherent machine; kept for old codes). */
void shmem_clear_cache_inv(void);
void shmem_set_cache_inv(void);
void shmem_clear_cache_line_inv(void *dest);
void shmem_set_cache_line_inv(void *dest);
void shmem_udcflush(void);
void shmem_udcflush_line(void *dest);

#ifdef __cplusplus
}
/* C++: the 1.5 team form of shmem_sync as an overload (C++ linkage; the active-set shmem_sync
 * keeps C linkage). */
static inline int shmem_sync(shmem_team_t team) { return shmem_team_sync(team); }
#endif

/* --- C11 generic selection --------------------------------------------------------------------- */
#if !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(SHMEMI_NO_GENERIC)
#include "shmem_generic.h"
#endif

#endif
