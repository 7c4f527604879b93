/* shmem internals: the state every src/shmem file shares, the address translation of the hot path,
 * and the seam to the MPI glue (src/pmpi/pmpi_shmem.c, compiled once per MPI ABI into
 * libbobcat-shmem-<mpi>.so together with these files). Nothing here includes mpi.h. */
#ifndef BOBCAT_SHMEM_INTERNAL_H
#define BOBCAT_SHMEM_INTERNAL_H

#define SHMEMI_NO_GENERIC 1
#include <bobcat/shmem.h>
#include <bobcat/shmemx.h>
#include <bobcat/smartmap.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "../util/util.h" /* BOBCAT_EXPORT; util_copy (util_copy.c is compiled into this library too) */
#include "shmem_transport.h"

#define SHI_LIKELY(x) __builtin_expect(!!(x), 1)
#define SHI_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Symmetric regions: 0 the symmetric heap, 1 the executable's static data. */

/* Per-PE base addresses of its symmetric regions in this process (0: not reachable by load/store). */
typedef struct {
    uintptr_t heap, data;
} shi_peer_t;

/* Internal symmetric memory at the start of the symmetric heap: one slot per live team (its
 * barrier flags and scratch words), allocated identically on every PE. One slot is 1 KiB + 2
 * cache lines; the flags each have their own writer (one partner per barrier round). */
#define SHI_MAX_TEAMS 64
#define SHI_ROUNDS 64
typedef struct {
    _Alignas(64) uint64_t flags[SHI_ROUNDS]; /* barrier round k: epoch written by the round's partner */
    uint64_t scratch[SHI_ROUNDS];            /* team creation and collectives */
    _Alignas(64) uint64_t chain;             /* collect: running offset handed down the team */
    _Alignas(64) uint64_t release;           /* hierarchical sync: the node leader's go (epoch) */
    _Alignas(64) uint64_t arrive[SMAP_MAX_LOCAL_RANKS + 1]; /* ...and each node member's arrival */
} shi_slot_t;
#define SHI_SLOTS_BYTES (((sizeof(shi_slot_t) * SHI_MAX_TEAMS) + 4095) & ~(size_t)4095)
/* After the slots: the staging area of hierarchical alltoall(s) (a node leader's outgoing blocks in
 * the first half, the blocks it fetched from the other nodes' leaders in the second). */
#define SHI_STAGE ((size_t)1 << 20)
#define SHI_RESERVED (SHI_SLOTS_BYTES + SHI_STAGE)

/* Words of a legacy pSync (SHMEM_SYNC_SIZE = 72 longs, all SHMEM_SYNC_VALUE = 0 between calls):
 * dissemination round counters (a set has < 2^31 members, so < 32 rounds), the node arrival count
 * (at the node's leader) and the release count (each member's own) of the hierarchical barrier,
 * four words of hierarchical collect, and the chain word of the flat collect. */
enum { SHI_PS_ARRIVE = 32, SHI_PS_RELEASE = 33, SHI_PS_COLL = 34, SHI_PS_CHAIN = 64 };

typedef struct {
    int initialized, finalized;
    int me, npes;
    int thread_level;
    uintptr_t heap, heap_size;  /* own symmetric heap (user part starts SHI_RESERVED in) */
    uintptr_t data, data_size;  /* own static data */
    shi_peer_t *peer;           /* npes entries */
    int nlocal;                 /* PEs reachable by load/store (this node) */
    int *node;                  /* per PE: its node's first PE (nodes are contiguous PE ranges) */
    int all_local;              /* every PE is: hardware atomics everywhere */
    atomic_int mpi_pending;     /* MPI RMA issued since the last quiet */
    unsigned spin_before_yield; /* busy polls before sched_yield() in waits */
    int debug;
    shi_slot_t *slots;          /* own slot array (in the heap) */
} shi_state_t;

extern shi_state_t shi;

/* Errors the user must see: names the routine, then aborts the job (shmem_global_exit). */
void shi_fatal(const char *routine, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
void shi_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void shi_not_symmetric(const char *routine, const void *addr, int pe) __attribute__((noreturn));
void shi_bad_pe(const char *routine, int pe) __attribute__((noreturn));
void shi_not_initialized(const char *routine) __attribute__((noreturn));

/* Where the n bytes at `addr` (symmetric) live on `pe`: a pointer when pe's memory is mapped here,
 * else NULL with region_p and disp_p set for MPI. Names `routine` in the error for a bad address
 * (outside both regions, or running past the end of one) or a bad pe. */
static inline void *shi_xlate(const void *addr, size_t n, int pe, const char *routine, int *region_p,
                              size_t *disp_p)
{
    if (SHI_UNLIKELY((unsigned)pe >= (unsigned)shi.npes))
        shi_bad_pe(routine, pe);
    uintptr_t a = (uintptr_t)addr, off;
    const shi_peer_t *p = &shi.peer[pe];
    if (SHI_LIKELY((off = a - shi.heap) < shi.heap_size)) {
        if (SHI_UNLIKELY(n > shi.heap_size - off))
            shi_not_symmetric(routine, (const char *)addr + n - 1, pe);
        if (SHI_LIKELY(p->heap))
            return (void *)(p->heap + off);
        *region_p = SHI_HEAP;
    } else if ((off = a - shi.data) < shi.data_size) {
        if (SHI_UNLIKELY(n > shi.data_size - off))
            shi_not_symmetric(routine, (const char *)addr + n - 1, pe);
        if (p->data)
            return (void *)(p->data + off);
        *region_p = SHI_DATA;
    } else {
        shi_not_symmetric(routine, addr, pe);
    }
    *disp_p = off;
    return NULL;
}

/* Busy-wait step: pause, poke MPI's progress when other nodes may be waiting on us, and yield the
 * core after a while (PEs may outnumber cores: every wait must let the others run). */
/* A poll that found nothing: its caller polls again (a test loop, a local atomic fetch in a loop),
 * so it is a busy-wait step too and must let MPI progress when other nodes may be updating us. */
static inline void shi_poll_miss(void)
{
    if (!shi.all_local)
        shmem_tr_progress();
}
static inline void shi_relax(unsigned *spins)
{
    util_poll_pause();
    shi_poll_miss();
    if (++*spins >= shi.spin_before_yield) {
        *spins = 0;
        sched_yield();
    }
}

/* Stores made with memcpy may be non-temporal (weakly ordered): sfence before a release store. */
static inline void shi_store_fence(void)
{
    __builtin_ia32_sfence();
    atomic_thread_fence(memory_order_seq_cst);
}

/* RMA engine (shmem_rma.c). */
void shi_put(void *dest, const void *src, size_t n, int pe, const char *routine, int nbi);
void shi_get(void *dest, const void *src, size_t n, int pe, const char *routine, int nbi);
void shi_iput(void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, size_t size, int pe,
              const char *routine);
void shi_iget(void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, size_t size, int pe,
              const char *routine);
void shi_put_signal(void *dest, const void *src, size_t n, uint64_t *sig, uint64_t signal, int sig_op, int pe,
                    const char *routine);
void shi_quiet(void);

/* Atomic engine (shmem_amo.c): the ops and sizes of shmem_transport.h. */
uint64_t shi_amo(shi_amo_op_t op, int size, void *target, uint64_t value, uint64_t cond, int pe,
                 const char *routine);

/* An active set of PEs (a team, or a legacy PE_start/logPE_stride/PE_size with its pSync). */
typedef struct {
    int start, stride, size, me; /* world PEs start + i * stride; me: our index, -1 if not a member */
    uint64_t *epoch_p;           /* team: its barrier epoch counter; NULL: legacy (counters in pSync) */
    uint64_t *flags;             /* team slot flags, or pSync[0..63] */
    uint64_t *chain;             /* collect offset word */
    uint64_t *coll;              /* 4 words of hierarchical collect (team scratch or pSync) */
    uint64_t *scratch;           /* team only */
    shi_slot_t *slot;            /* team only: hierarchical sync words */
} shi_set_t;
/* A set seen by node: its members on this node and the node leaders (first member per node). */
typedef struct {
    int nleaders, leader_idx; /* number of nodes in the set; our index among leaders, -1 if not one */
    int leader;               /* set index of our node's leader */
    int nlocal, my_local;     /* members on our node, our index among them */
} shi_hier_t;
/* The staging area of this PE (symmetric: the same offset in every PE's heap). */
#define SHI_STAGE_ADDR ((char *)shi.slots + SHI_SLOTS_BYTES)
int shi_set_hier(const shi_set_t *s, shi_hier_t *h_p, int *leaders_p); /* 1: spans nodes, not one per node */
static inline int shi_set_pe(const shi_set_t *s, int i) { return s->start + i * s->stride; }
void shi_set_sync(shi_set_t *s);
void shi_set_legacy(shi_set_t *s, int start, int log_stride, int size, long *psync, const char *routine);

/* Teams (shmem_team.c). */
struct shmemi_team {
    int start, stride, size, me;
    int slot;
    uint64_t epoch;
    shmem_team_config_t config;
};
struct shmemi_ctx {
    shmem_team_t team;
    long options;
};
void shi_team_set(shmem_team_t team, shi_set_t *s_p);
void shi_teams_init(void);
void shi_bad_ctx(const char *routine, shmem_ctx_t ctx, int pe) __attribute__((noreturn));
static inline int shi_ctx_pe(shmem_ctx_t ctx, int pe, const char *routine)
{
    /* A context made from a team numbers PEs within the team. */
    if (SHI_UNLIKELY(!ctx))
        shi_bad_ctx(routine, ctx, pe);
    if (ctx->team && ctx->team != SHMEM_TEAM_WORLD) {
        if ((unsigned)pe >= (unsigned)ctx->team->size)
            shi_bad_ctx(routine, ctx, pe);
        return ctx->team->start + pe * ctx->team->stride;
    }
    return pe;
}

/* Symmetric heap (shmem_heap.c). */
void shi_heap_init(void *base, size_t size);

/* The transport to other nodes (shmem_transport.h): a failure is fatal for the routine. */
#define SHI_TR(call, routine)                                                                          \
    do {                                                                                               \
        if (SHI_UNLIKELY((call) != SHT_OK))                                                            \
            shi_fatal((routine), "%s", shmem_tr_error());                                              \
    } while (0)

#endif
