/* shmem_state: the bottom of src/shmem — what one PE knows about the job (the `shi` state), the
 * layout of the internal symmetric area, the predefined team and context objects, and the one
 * fatal/diagnostic path every routine reports through. shmem_state.c defines them and calls
 * nothing of src/shmem above it; every other file reaches this header through shmem_internal.h.
 * Nothing here includes mpi.h: the way to other nodes is shmem_transport.h. */
#ifndef BOBCAT_SHMEM_STATE_H
#define BOBCAT_SHMEM_STATE_H

#define SHMEMI_NO_GENERIC 1
#include <bobcat/shmem.h>
#include <bobcat/shmemx.h>
#include <bobcat/smartmap.h>
#include <stdatomic.h>
#include <stdint.h>

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

/* Filled once by shmem_init (shmem_init.c), read by every routine. */
extern shi_state_t shi;

/* Teams and contexts. A team is a strided set of world PEs (shmem_team.c) with a slot of the
 * internal area; a context names the team whose numbering its PE arguments use. */
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
/* The objects behind SHMEM_TEAM_WORLD and SHMEM_TEAM_SHARED (filled at start-up by shi_teams_init). */
extern struct shmemi_team shi_team_world, shi_team_shared;

/* Errors the user must see: names the routine, then aborts the job (shmem_tr_abort). */
void shi_fatal(const char *routine, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
void shi_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void shi_not_symmetric(const char *routine, const void *addr, int pe) __attribute__((noreturn));
void shi_bad_pe(const char *routine, int pe) __attribute__((noreturn));
void shi_not_initialized(const char *routine) __attribute__((noreturn));
void shi_bad_ctx(const char *routine, shmem_ctx_t ctx, int pe) __attribute__((noreturn));

/* The transport to other nodes (shmem_transport.h): a failure is fatal for the routine. */
#define SHI_TR(call, routine)                                                                          \
    do {                                                                                               \
        if (SHI_UNLIKELY((call) != SHT_OK))                                                            \
            shi_fatal((routine), "%s", shmem_tr_error());                                              \
    } while (0)

#endif
