/* p2p_init: the start and end of bobcat's point-to-point: the engine, the peers' inboxes, the
 * settings every path reads (p2p_set), WORLD and SELF registered; at MPI_Finalize the orphans are
 * drained and the progress helper stopped. */
#include "p2p.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bobcat/smartmap.h>

/* Marker the evaluation reads (nm) to record that lwk's on-node point-to-point is bobcat's. */
BOBCAT_EXPORT const char bobcat_msg_layer[] = "single-copy on-node point-to-point over SMARTMAP";

/* A communicator that spans nodes: its node communicator (private to the layer) is registered too,
 * so its nonblocking collectives get a ring for their node phase (pmpi_coll_nb.c). Collective over
 * the communicator where the node part is built. */
static void node_part_built(pmpi_comm_t *pc)
{
    if (pc->nnodes > 1 && pc->node_comm != MPI_COMM_NULL && p2p_comm_lookup(pc->comm))
        p2p_comm_register(pc->node_comm, -1);
}

static void node_part_freed(pmpi_comm_t *pc)
{
    p2p_comm_t *c = pc->node_comm != MPI_COMM_NULL ? p2p_comm_find(pc->node_comm) : NULL;
    if (c)
        p2p_comm_entry_free(p2p_comm_unhash(pc->node_comm));
}

int p2p_init(void)
{
    int provided = MPI_THREAD_SINGLE, wsize = 1;
    p2p_set.init_seen = 1;
#if !defined(OPEN_MPI) && !defined(MPICH)
    p2p_abi_status_probe();
#endif
    PMPI_Query_thread(&provided);
    PMPI_Comm_size(MPI_COMM_WORLD, &wsize);
    void *inbox = NULL;
    int ok = pmpi_layer.on && smap_world_size() == wsize && bobcat_msg_setup(&inbox) == BOBCAT_OK;
    static int registered;
    if (!registered) {
        pmpi_stats_register(&p2p_st_send);
        pmpi_stats_register(&p2p_st_recv);
        pmpi_stats_register(&p2p_st_engine);
        registered = 1;
    }
    /* My inbox (0: I cannot take part), and in bits 0 and 1 (an inbox is line-aligned) my thread
     * level being MULTIPLE, and my program's. */
    uint64_t mine = (ok ? (uint64_t)(uintptr_t)inbox : 0) | (provided == MPI_THREAD_MULTIPLE) |
                    (uint64_t)(pmpi_layer.program_mt ? 2 : 0);
    uint64_t *all = calloc((size_t)wsize, sizeof *all);
    if (!all) {
        fprintf(stderr, "bobcat: out of memory at MPI_Init (point-to-point tables of %d ranks): raise BOBCAT_HEAP\n",
                wsize);
        PMPI_Abort(MPI_COMM_WORLD, 3);
    }
    PMPI_Allgather(&mine, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, MPI_COMM_WORLD);
    int anyone = 0;
    for (int w = 0; w < wsize; w++) {
        p2p_set.threads |= (int)(all[w] & 1);
        p2p_set.program_threads |= (int)(all[w] >> 1 & 1);
        all[w] &= ~(uint64_t)3;
        anyone |= all[w] != 0;
    }
    p2p_set.nobody = !anyone;
    for (int w = 0; w < wsize; w++) {
        int l = smap_pe_is_local(w);
        if (l < 0)
            p2p_set.multinode = 1;
        else if (ok && (all[w] == 0 || !bobcat_msg_set_peer(l, (void *)(uintptr_t)all[w])))
            ok = 0; /* a node mate cannot take part: communicators with it go to the real MPI */
    }
    free(all);
    p2p_set.engine = ok;
    if (ok) {
        bobcat_msg_idle_hook = p2p_idle_hook;
        p2p_set.done = p2p_handle_of(p2p_req_done(MODE_STD));
        p2p_set.done_recv = p2p_handle_of(p2p_req_done(MODE_RECV));
        p2p_set.eager_limit = bobcat_msg_eager_limit();
    }
    pmpi_node_part_built = node_part_built;
    pmpi_node_part_freed = node_part_freed;
    p2p_comm_register(MPI_COMM_WORLD, 0);
    p2p_comm_register(MPI_COMM_SELF, 1);
    return ok;
}

void p2p_finalize(void)
{
    unsigned spins = 0;
    while (p2p_orphans_pending()) {
        p2p_progress();
        p2p_relax(&spins);
    }
    bobcat_msg_away_stop();
    bobcat_msg_idle_hook = NULL;
    p2p_comm_reset();
    p2p_set.engine = 0;
}

/* A program whose MPI_Init bobcat never saw (Open MPI's Fortran bindings call PMPI_Init and every
 * other PMPI_* directly) ran entirely on the real MPI: with BOBCAT_STATS, say so at exit instead of
 * printing nothing. */
__attribute__((destructor)) static void p2p_unseen_report(void)
{
    if (p2p_set.init_seen || smap_world_size() == 0)
        return;
    const util_options_t *o = util_options(); /* parsed when libbobcat started this rank */
    if (!o || o->STATS == UTIL_V_OFF)
        return;
    int init = 0, fin = 0;
    PMPI_Initialized(&init);
    PMPI_Finalized(&fin);
    if (init || fin)
        fprintf(stderr, "bobcat: stats rank %d: layer=unused: this program called the real MPI's PMPI_Init directly "
                        "(Open MPI's Fortran bindings do), so every MPI call it made went to the real MPI\n",
                smap_world_rank());
}
