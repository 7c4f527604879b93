/* p2p_comm: which communicators bobcat's point-to-point serves, and their matching context; the
 * layer's settings fixed at MPI_Init (p2p_set).
 *
 * A communicator is registered when it is made, collectively: every member computes which members
 * share its node, and one PMPI_Allreduce agrees on the context (the largest "next context" of any
 * member, so no member already uses it) and on eligibility (every member has the engine running).
 * A communicator nobody registered (an intercommunicator, one made by MPI_Comm_idup or by a
 * constructor this file does not intercept) goes to the real MPI whole, for every member alike.
 *
 * Under MPI_THREAD_MULTIPLE several threads of a rank may register communicators at once (each
 * lets go of the layer's lock in its PMPI_Allreduce), so a context a rank proposed may meanwhile
 * have been taken by another of its communicators: the members then agree in rounds of two steps,
 * a candidate (the largest proposal) and whether it is free on every member (each reserves it
 * while it asks), until one is. */
#include "p2p.h"

#include <stdlib.h>
#include <string.h>

#include <bobcat/smartmap.h>

#define NBUCKETS 256

static p2p_comm_t *buckets[NBUCKETS];
p2p_comm_t *p2p_comm_last; /* one-entry cache: most programs talk on one communicator */
static int next_ctx = 2;      /* 0: WORLD, 1: SELF */
/* Contexts this rank holds for registrations in flight (MULTIPLE only; one per thread at most). */
#define CTX_RESERVED_MAX 256
static int ctx_reserved[CTX_RESERVED_MAX];
static int ctx_nreserved;
p2p_settings_t p2p_set;

static inline unsigned hash(MPI_Comm c)
{
    uintptr_t k = (uintptr_t)c;
    return (unsigned)((k >> 4) ^ (k >> 12) ^ k) % NBUCKETS;
}

p2p_comm_t *p2p_comm_find(MPI_Comm comm)
{
    for (p2p_comm_t *c = buckets[hash(comm)]; c; c = c->next)
        if (c->comm == comm)
            return p2p_comm_last = c;
    return NULL;
}

/* Take comm's entry out of the table (NULL if it has none). */
p2p_comm_t *p2p_comm_unhash(MPI_Comm comm)
{
    p2p_comm_t **pp = &buckets[hash(comm)];
    for (; *pp; pp = &(*pp)->next)
        if ((*pp)->comm == comm) {
            p2p_comm_t *c = *pp;
            *pp = c->next;
            c->next = NULL;
            if (p2p_comm_last == c)
                p2p_comm_last = NULL;
            return c;
        }
    return NULL;
}

void (*p2p_nb_free)(p2p_comm_t *c);

void p2p_comm_entry_free(p2p_comm_t *c)
{
    if (c->nbr_shadow != MPI_COMM_NULL) {
        /* The shadow's own entry may be gone already (p2p_comm_reset frees entries in table order). */
        p2p_comm_t *s = p2p_comm_unhash(c->nbr_shadow);
        if (s)
            p2p_comm_entry_free(s);
        PMPI_Comm_free(&c->nbr_shadow);
    }
    free(c->nbr);
    if (c->nb && p2p_nb_free)
        p2p_nb_free(c);
    if (c->nb_view)
        pmpi_nb_area_release(c->nb_view, c->nb_own);
    else
        free(c->nb_own);
    free(c->local);
    free(c);
}

/* The last request using a communicator the user freed let go of it. */
void p2p_comm_free_deferred(p2p_comm_t *c)
{
    MPI_Comm comm = c->comm;
    p2p_comm_entry_free(p2p_comm_unhash(comm));
    PMPI_Comm_free(&comm);
}

/* A context some live communicator of mine, or a registration of mine in flight, uses. */
static int ctx_taken(int ctx)
{
    for (int h = 0; h < NBUCKETS; h++)
        for (const p2p_comm_t *c = buckets[h]; c; c = c->next)
            if (c->ctx == ctx)
                return 1;
    for (int i = 0; i < ctx_nreserved; i++)
        if (ctx_reserved[i] == ctx)
            return 1;
    return 0;
}

static int ctx_free_from(int ctx)
{
    while (ctx_taken(ctx))
        ctx++;
    return ctx;
}

static void ctx_unreserve(int ctx)
{
    for (int i = 0; i < ctx_nreserved; i++)
        if (ctx_reserved[i] == ctx) {
            ctx_reserved[i] = ctx_reserved[--ctx_nreserved];
            return;
        }
}

/* The members' context under MULTIPLE (the banner): 0 and *ctx_p reserved here (the caller lets
 * go of it once the communicator is in the table), or 1 if some member cannot take part. */
static int ctx_agree_threads(MPI_Comm comm, int cannot, int *ctx_p)
{
    int cand = ctx_free_from(next_ctx);
    for (;;) {
        int mine[2] = {cand, cannot}, agreed[2] = {0, 1};
        if (PMPI_AWAY(PMPI_Allreduce(mine, agreed, 2, MPI_INT, MPI_MAX, comm)) != MPI_SUCCESS || agreed[1])
            return 1;
        int v = agreed[0];
        /* reserved before asking, so no registration of another thread takes v meanwhile */
        int here = !ctx_taken(v) && ctx_nreserved < CTX_RESERVED_MAX, everywhere = 0;
        if (here)
            ctx_reserved[ctx_nreserved++] = v;
        if (PMPI_AWAY(PMPI_Allreduce(&here, &everywhere, 1, MPI_INT, MPI_MIN, comm)) != MPI_SUCCESS) {
            if (here)
                ctx_unreserve(v);
            return 1;
        }
        if (everywhere) {
            *ctx_p = v;
            return 0;
        }
        if (here)
            ctx_unreserve(v);
        cand = ctx_free_from(v + 1);
    }
}

/* Collective over `comm` (all members call it): register it or agree not to. fixed_ctx >= 0 for
 * WORLD (whose context every member knows). */
void p2p_comm_register(MPI_Comm comm, int fixed_ctx)
{
    if (comm == MPI_COMM_NULL || p2p_set.nobody)
        return; /* nobody: the layer is off everywhere, no need to agree (and no collective) */
    int inter = 0;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter)
        return; /* intercommunicators: the real MPI, whole (every member sees inter == 1) */
    int size, rank;
    PMPI_Comm_size(comm, &size);
    PMPI_Comm_rank(comm, &rank);
    int *local = malloc(sizeof(int) * (size_t)size);
    int *world = malloc(sizeof(int) * (size_t)size);
    int *idx = malloc(sizeof(int) * (size_t)size);
    int ok = p2p_set.engine && local && world && idx;
    int mixed = 0;
    if (ok) {
        MPI_Group g, wg;
        PMPI_Comm_group(comm, &g);
        PMPI_Comm_group(MPI_COMM_WORLD, &wg);
        for (int i = 0; i < size; i++)
            idx[i] = i;
        PMPI_Group_translate_ranks(g, size, idx, wg, world);
        PMPI_Group_free(&g);
        PMPI_Group_free(&wg);
        for (int i = 0; i < size; i++) {
            local[i] = world[i] == MPI_UNDEFINED ? -1 : smap_pe_is_local(world[i]);
            if (local[i] < 0)
                mixed = 1;
        }
    }
    free(world);
    free(idx);
    /* The nonblocking collectives' area: comm rank 0 of a communicator on one node makes it (every
     * member knows whether the communicator is on one node: all see the same members). */
    coll_nb_area_t *nb_own = ok && !mixed && size > 1 && rank == 0 ? pmpi_nb_area_new(size) : NULL;
    /* [0] = the context, [1] = 1 if some member cannot take part, [2] = the area (rank 0's view). */
    long long mine[3] = {fixed_ctx >= 0 ? fixed_ctx : next_ctx, !ok, (long long)(uintptr_t)nb_own},
              agreed[3] = {0, 1, 0};
    int reserved = fixed_ctx < 0 && p2p_set.threads;
    if (reserved) {
        int ctx = 0;
        agreed[1] = ctx_agree_threads(comm, !ok, &ctx);
        agreed[0] = ctx;
        if (!agreed[1] && PMPI_AWAY(PMPI_Allreduce(&mine[2], &agreed[2], 1, MPI_LONG_LONG, MPI_MAX, comm)) != MPI_SUCCESS)
            agreed[1] = 1;
    } else if (PMPI_AWAY(PMPI_Allreduce(mine, agreed, 3, MPI_LONG_LONG, MPI_MAX, comm)) != MPI_SUCCESS) {
        agreed[1] = 1;
    }
    if (agreed[1]) {
        free(nb_own);
        free(local);
        return;
    }
    if (fixed_ctx < 0 && agreed[0] >= next_ctx)
        next_ctx = (int)agreed[0] + 1;
    p2p_comm_t *c = calloc(1, sizeof *c);
    if (!c) {
        /* The others registered it: we cannot drop out alone. Corruption-class failure. */
        PMPI_Abort(MPI_COMM_WORLD, 70);
        return;
    }
    c->comm = comm;
    c->ctx = (int)agreed[0];
    c->nb_own = nb_own;
    c->nb_area = (uint64_t)agreed[2];
    if (c->nb_area)
        c->nb_view = (coll_nb_area_t *)(uintptr_t)(c->nb_area + (rank == 0 ? 0
                                        : (uintptr_t)smap_remote_address(local[0], (void *)SMAP_HEAP_BASE) - SMAP_HEAP_BASE));
    c->rank = rank;
    c->size = size;
    c->mixed = mixed;
    c->local = local;
    c->nbr_shadow = MPI_COMM_NULL;
    unsigned h = hash(comm);
    c->next = buckets[h];
    buckets[h] = c;
    if (reserved)
        ctx_unreserve(c->ctx); /* the table holds it now */
}

void p2p_comm_reset(void)
{
    for (int h = 0; h < NBUCKETS; h++)
        while (buckets[h])
            p2p_comm_entry_free(p2p_comm_unhash(buckets[h]->comm));
    p2p_comm_last = NULL;
}

