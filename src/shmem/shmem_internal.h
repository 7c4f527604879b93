/* shmem internals: what every src/shmem file above the state shares — the hot path's inline
 * address translation, busy-wait step and context numbering, the active sets that barriers and
 * collectives run over, and the internal entry points of each file, declared here in the order
 * the files stack (docs: src/shmem/README.md). A file calls only what a file below it defines.
 * Nothing here includes mpi.h: the way to other nodes is shmem_transport.h. */
#ifndef BOBCAT_SHMEM_INTERNAL_H
#define BOBCAT_SHMEM_INTERNAL_H

#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "shmem_state.h"

/* Words of a legacy pSync (SHMEM_SYNC_SIZE = 72 longs, all SHMEM_SYNC_VALUE = 0 between calls):
 * dissemination round counters (a set has < 2^31 members, so < 32 rounds), the node arrival count
 * (at the node's leader) and the release count (each member's own) of the hierarchical barrier,
 * four words of hierarchical collect, and the chain word of the flat collect. */
enum { SHI_PS_ARRIVE = 32, SHI_PS_RELEASE = 33, SHI_PS_COLL = 34, SHI_PS_CHAIN = 64 };

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

/* A context made from a team numbers PEs within the team. */
static inline int shi_ctx_pe(shmem_ctx_t ctx, int pe, const char *routine)
{
    if (SHI_UNLIKELY(!ctx))
        shi_bad_ctx(routine, ctx, pe);
    if (ctx->team && ctx->team != &shi_team_world) {
        if ((unsigned)pe >= (unsigned)ctx->team->size)
            shi_bad_ctx(routine, ctx, pe);
        return ctx->team->start + pe * ctx->team->stride;
    }
    return pe;
}

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
static inline int shi_set_pe(const shi_set_t *s, int i) { return s->start + i * s->stride; }
/* The active set of a team: its PEs and its slot's words. */
static inline void shi_team_set(shmem_team_t t, shi_set_t *s_p)
{
    shi_slot_t *slot = &shi.slots[t->slot];
    *s_p = (shi_set_t){.start = t->start, .stride = t->stride, .size = t->size, .me = t->me, .epoch_p = &t->epoch,
                       .flags = slot->flags, .chain = &slot->chain, .coll = &slot->scratch[8],
                       .scratch = slot->scratch, .slot = slot};
}

/* Atomic engine (shmem_amo.c): the ops and sizes of shmem_transport.h. */
uint64_t shi_amo(shi_amo_op_t op, int size, void *target, uint64_t value, uint64_t cond, int pe,
                 const char *routine);

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

/* Waits, sets and barriers (shmem_sync.c). */
int shi_set_hier(const shi_set_t *s, shi_hier_t *h_p, int *leaders_p); /* 1: spans nodes, not one per node */
void shi_set_sync(shi_set_t *s);
void shi_set_legacy(shi_set_t *s, int start, int log_stride, int size, long *psync, const char *routine);

/* quiet, then the world team's sync: what shmem_barrier_all does, for the routines above sync that
 * must end or begin with one (heap allocation, finalize) without calling the public entry point. */
void shi_barrier_all(void);

/* Symmetric heap (shmem_heap.c). */
void shi_heap_init(void *base, size_t size);

/* Teams (shmem_team.c): fill the predefined teams' objects (start-up, once the peer table is known). */
void shi_teams_init(void);

#endif
