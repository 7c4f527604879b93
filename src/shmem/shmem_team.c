/* shmem_team: teams (world, shared, strided splits, 2-D splits) and contexts.
 *
 * Every team PE set here is strided in world numbering (a strided split of a strided team is
 * strided; so are both axes of a 2-D split), so a team is (start, stride, size). Each live team
 * owns a slot of the internal symmetric area (shmem_state.h) for its barrier flags and scratch
 * words. A new team's slot must be free on all its members: the parent team ORs its members'
 * used-slot masks (a small allreduce through the parent's scratch words) and every member picks
 * the lowest slot free in the union, so they agree without further talk. */
#include "shmem_internal.h"

#include <stdlib.h>

static uint64_t used_slots; /* slots of the teams this PE belongs to */

void shi_teams_init(void)
{
    shi_team_world = (struct shmemi_team){.start = 0, .stride = 1, .size = shi.npes, .me = shi.me, .slot = 0};
    /* The shared team: the PEs this one reaches by load/store. yod places a node's ranks
     * contiguously; anything else (not under yod) is a team of one. */
    int lo = shi.me, hi = shi.me;
    while (lo > 0 && shi.peer[lo - 1].heap)
        lo--;
    while (hi + 1 < shi.npes && shi.peer[hi + 1].heap)
        hi++;
    shi_team_shared = (struct shmemi_team){.start = lo, .stride = 1, .size = hi - lo + 1, .me = shi.me - lo, .slot = 1};
    used_slots = 3;
}

static int team_ok(shmem_team_t t) { return t != SHMEM_TEAM_INVALID && shi.initialized; }

BOBCAT_EXPORT int shmem_team_my_pe(shmem_team_t t) { return team_ok(t) ? t->me : -1; }
BOBCAT_EXPORT int shmem_team_n_pes(shmem_team_t t) { return team_ok(t) ? t->size : -1; }

BOBCAT_EXPORT int shmem_team_get_config(shmem_team_t t, long mask, shmem_team_config_t *config)
{
    if (!team_ok(t) || !config)
        return -1;
    if (mask & SHMEM_TEAM_NUM_CONTEXTS)
        config->num_contexts = t->config.num_contexts;
    return 0;
}

BOBCAT_EXPORT int shmem_team_translate_pe(shmem_team_t src, int src_pe, shmem_team_t dest)
{
    if (!team_ok(src) || !team_ok(dest) || src_pe < 0 || src_pe >= src->size)
        return -1;
    int world = src->start + src_pe * src->stride, rel = world - dest->start;
    if (rel < 0 || rel % dest->stride || rel / dest->stride >= dest->size)
        return -1;
    return rel / dest->stride;
}

BOBCAT_EXPORT int shmem_team_sync(shmem_team_t t)
{
    if (!team_ok(t))
        return -1;
    shi_set_t s;
    shi_team_set(t, &s);
    shi_set_sync(&s);
    return 0;
}

BOBCAT_EXPORT void *shmem_team_ptr(shmem_team_t t, const void *dest, int pe)
{
    if (!team_ok(t) || pe < 0 || pe >= t->size)
        return NULL;
    return shmem_ptr(dest, t->start + pe * t->stride);
}

/* The union of the parent's members' used-slot masks (collective over the parent). */
static uint64_t parent_used_union(shmem_team_t parent)
{
    shi_set_t s;
    shi_team_set(parent, &s);
    s.scratch[0] = used_slots;
    shi_store_fence();
    shi_set_sync(&s);
    uint64_t all = 0;
    for (int i = 0; i < s.size; i++)
        all |= shi_amo(SHI_AMO_FETCH, 8, &s.scratch[0], 0, 0, shi_set_pe(&s, i), "shmem_team_split");
    return all;
}

static int free_slot(uint64_t used, int skip)
{
    for (int i = 2; i < SHI_MAX_TEAMS; i++)
        if (!(used >> i & 1) && i != skip)
            return i;
    return -1;
}

static shmem_team_t make_team(int start, int stride, int size, int slot, const shmem_team_config_t *config,
                              long mask)
{
    int rel = shi.me - start;
    if (rel < 0 || (stride ? rel % stride : rel) || (stride ? rel / stride : 0) >= size)
        return SHMEM_TEAM_INVALID;
    shmem_team_t t = calloc(1, sizeof *t);
    if (!t)
        shi_fatal("shmem_team_split", "out of memory");
    *t = (struct shmemi_team){.start = start, .stride = stride ? stride : 1, .size = size,
                              .me = stride ? rel / stride : 0, .slot = slot};
    if (config && (mask & SHMEM_TEAM_NUM_CONTEXTS))
        t->config.num_contexts = config->num_contexts;
    used_slots |= (uint64_t)1 << slot;
    return t;
}

/* Zero this PE's copy of the new slots, then let the parent sync before anyone signals into them. */
static void finish_split(shmem_team_t parent, int a, int b)
{
    if (a >= 0)
        memset(&shi.slots[a], 0, sizeof(shi_slot_t));
    if (b >= 0)
        memset(&shi.slots[b], 0, sizeof(shi_slot_t));
    shi_store_fence();
    shmem_team_sync(parent);
}

BOBCAT_EXPORT int shmem_team_split_strided(shmem_team_t parent, int start, int stride, int size,
                                        const shmem_team_config_t *config, long mask, shmem_team_t *new_team)
{
    if (new_team)
        *new_team = SHMEM_TEAM_INVALID;
    if (!team_ok(parent) || !new_team)
        return -1;
    uint64_t used = parent_used_union(parent);
    int slot = free_slot(used, -1);
    finish_split(parent, slot, -1);
    int bad = size < 1 || start < 0 || start >= parent->size || (size > 1 && stride < 1) ||
              (long)start + (long)(size - 1) * (size > 1 ? stride : 0) >= parent->size;
    if (bad || slot < 0)
        return -1;
    *new_team = make_team(parent->start + start * parent->stride, parent->stride * (size > 1 ? stride : 1), size, slot,
                          config, mask);
    return 0;
}

BOBCAT_EXPORT int shmem_team_split_2d(shmem_team_t parent, int xrange, const shmem_team_config_t *xconf, long xmask,
                                   shmem_team_t *xteam, const shmem_team_config_t *yconf, long ymask,
                                   shmem_team_t *yteam)
{
    if (xteam)
        *xteam = SHMEM_TEAM_INVALID;
    if (yteam)
        *yteam = SHMEM_TEAM_INVALID;
    if (!team_ok(parent) || !xteam || !yteam)
        return -1;
    uint64_t used = parent_used_union(parent);
    int xs = free_slot(used, -1), ys = xs >= 0 ? free_slot(used, xs) : -1;
    finish_split(parent, xs, ys);
    if (xrange < 1 || xs < 0 || ys < 0)
        return -1;
    int n = parent->size;
    if (xrange > n)
        xrange = n;
    int i = parent->me, row = i / xrange, col = i % xrange;
    int xsize = n - row * xrange < xrange ? n - row * xrange : xrange;
    int ysize = (n - col + xrange - 1) / xrange;
    *xteam = make_team(parent->start + row * xrange * parent->stride, parent->stride, xsize, xs, xconf, xmask);
    *yteam = make_team(parent->start + col * parent->stride, parent->stride * xrange, ysize, ys, yconf, ymask);
    return 0;
}

BOBCAT_EXPORT void shmem_team_destroy(shmem_team_t t)
{
    if (t == SHMEM_TEAM_INVALID || t == SHMEM_TEAM_WORLD || t == SHMEM_TEAM_SHARED)
        return;
    used_slots &= ~((uint64_t)1 << t->slot);
    free(t);
}

/* --- contexts: every context shares the one ordering domain of the PE (quiet completes all) --- */
BOBCAT_EXPORT int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx)
{
    if (!ctx)
        return -1;
    *ctx = SHMEM_CTX_INVALID;
    if (!team_ok(team))
        return -1;
    shmem_ctx_t c = calloc(1, sizeof *c);
    if (!c)
        return -1;
    c->team = team;
    c->options = options;
    *ctx = c;
    return 0;
}

BOBCAT_EXPORT int shmem_ctx_create(long options, shmem_ctx_t *ctx)
{
    return shmem_team_create_ctx(SHMEM_TEAM_WORLD, options, ctx);
}

BOBCAT_EXPORT void shmem_ctx_destroy(shmem_ctx_t ctx)
{
    if (ctx && ctx != SHMEM_CTX_DEFAULT) {
        shi_quiet(); /* destroying a context completes its operations */
        free(ctx);
    }
}

BOBCAT_EXPORT int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team)
{
    if (!team)
        return -1;
    if (!ctx) {
        *team = SHMEM_TEAM_INVALID;
        return -1;
    }
    *team = ctx->team;
    return 0;
}
