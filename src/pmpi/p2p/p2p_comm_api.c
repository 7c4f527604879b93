/* p2p_comm_api: the communicator constructors bobcat intercepts — the real one, then registration
 * on the result (collective there too: p2p_comm.c) — and MPI_Comm_free, which waits for bobcat's
 * requests on the communicator before the real free (p2p_req_pin_comm). */
#include "p2p.h"

/* ---- constructors: the real one, then registration on the result (collective there too) ---- */

/* ... and, below a parent with a node part, the new communicator's own if it spans nodes
 * (pmpi_comm_node_part_early: collective over the new communicator; only once it is registered,
 * which every member agreed to, so all of them have the layer on and make the same call). */
#define REG(parent, newcomm_p) do { if (rc == MPI_SUCCESS) { p2p_comm_register(*(newcomm_p), -1); \
                                    if (p2p_comm_lookup(*(newcomm_p))) \
                                        pmpi_comm_node_part_early(*(newcomm_p), parent); } } while (0)

/* A registered communicator with a topology gets its neighbourhood collectives' shadow (p2p.h):
 * collective over comm, after REG. Every member decides alike: registration was agreed, and all
 * see the same topology. A split, not a dup: no user attribute is copied to it (a dup would run
 * the program's copy callbacks, and its delete callbacks at the free). */
static void shadow_make(MPI_Comm comm)
{
    p2p_comm_t *c = comm != MPI_COMM_NULL ? p2p_comm_lookup(comm) : NULL;
    int topo = MPI_UNDEFINED, rank = 0;
    if (!c || PMPI_Topo_test(comm, &topo) != MPI_SUCCESS || topo == MPI_UNDEFINED)
        return;
    MPI_Comm sh = MPI_COMM_NULL;
    PMPI_Comm_rank(comm, &rank);
    if (PMPI_AWAY(PMPI_Comm_split(comm, 0, rank, &sh)) != MPI_SUCCESS || sh == MPI_COMM_NULL)
        return; /* the real MPI raised it on comm: its handler returned */
    p2p_comm_register(sh, -1);
    c = p2p_comm_lookup(comm); /* the lock was let go of meanwhile (MULTIPLE) */
    if (c)
        c->nbr_shadow = sh;
    else
        PMPI_Comm_free(&sh);
}

#define REG_TOPO(parent, newcomm_p) do { if (rc == MPI_SUCCESS) { REG(parent, newcomm_p); shadow_make(*(newcomm_p)); } } while (0)

BOBCAT_EXPORT int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
    PMPI_GUARD();
    int rc = PMPI_AWAY(PMPI_Comm_dup(comm, newcomm));
    REG_TOPO(comm, newcomm);
    return rc;
}

BOBCAT_EXPORT int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm)
{
    PMPI_GUARD();
    int rc = PMPI_AWAY(PMPI_Comm_dup_with_info(comm, info, newcomm));
    REG_TOPO(comm, newcomm);
    return rc;
}

BOBCAT_EXPORT int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
    PMPI_GUARD();
    int rc = PMPI_AWAY(PMPI_Comm_split(comm, color, key, newcomm));
    REG(comm, newcomm);
    return rc;
}

BOBCAT_EXPORT int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)
{
    PMPI_GUARD();
    int rc = PMPI_AWAY(PMPI_Comm_create(comm, group, newcomm));
    REG(comm, newcomm);
    return rc;
}

BOBCAT_EXPORT int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm)
{
    PMPI_GUARD();
    int rc = PMPI_AWAY(PMPI_Comm_create_group(comm, group, tag, newcomm));
    REG(comm, newcomm);
    return rc;
}

BOBCAT_EXPORT int MPI_Cart_create(MPI_Comm comm, int ndims, const int dims[], const int periods[], int reorder,
                                  MPI_Comm *newcomm)
{
    PMPI_GUARD();
    int rc = PMPI_AWAY(PMPI_Cart_create(comm, ndims, dims, periods, reorder, newcomm));
    REG_TOPO(comm, newcomm);
    return rc;
}

BOBCAT_EXPORT int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm)
{
    PMPI_GUARD();
    int rc = PMPI_AWAY(PMPI_Cart_sub(comm, remain_dims, newcomm));
    REG_TOPO(comm, newcomm);
    return rc;
}

BOBCAT_EXPORT int MPI_Graph_create(MPI_Comm comm, int nnodes, const int index[], const int edges[], int reorder,
                                   MPI_Comm *newcomm)
{
    PMPI_GUARD();
    int rc = PMPI_AWAY(PMPI_Graph_create(comm, nnodes, index, edges, reorder, newcomm));
    REG_TOPO(comm, newcomm);
    return rc;
}

BOBCAT_EXPORT int MPI_Dist_graph_create(MPI_Comm comm, int n, const int sources[], const int degrees[],
                                        const int destinations[], const int weights[], MPI_Info info, int reorder,
                                        MPI_Comm *newcomm)
{
    PMPI_GUARD();
    int rc = PMPI_AWAY(PMPI_Dist_graph_create(comm, n, sources, degrees, destinations, weights, info, reorder, newcomm));
    REG_TOPO(comm, newcomm);
    return rc;
}

BOBCAT_EXPORT int MPI_Dist_graph_create_adjacent(MPI_Comm comm, int indegree, const int sources[],
                                                 const int sourceweights[], int outdegree, const int destinations[],
                                                 const int destweights[], MPI_Info info, int reorder,
                                                 MPI_Comm *newcomm)
{
    PMPI_GUARD();
    int rc = PMPI_AWAY(PMPI_Dist_graph_create_adjacent(comm, indegree, sources, sourceweights, outdegree, destinations,
                                             destweights, info, reorder, newcomm));
    REG_TOPO(comm, newcomm);
    return rc;
}

BOBCAT_EXPORT int MPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm *newcomm)
{
    PMPI_GUARD();
    int rc = PMPI_AWAY(PMPI_Intercomm_merge(intercomm, high, newcomm));
    REG(intercomm, newcomm);
    return rc;
}

/* Freeing a communicator some request of bobcat's still uses (MPI allows it: pending operations
 * complete normally) hands the handle back at once and leaves the real free to the last request. */
static int comm_release(MPI_Comm *comm, int (*real)(MPI_Comm *))
{
    p2p_comm_t *c = comm && *comm != MPI_COMM_NULL ? p2p_comm_find(*comm) : NULL;
    if (c && p2p_req_pin_comm(c) > 0) {
        /* It stays in the table (the real handle is not freed, so no new communicator gets its
         * value): a persistent request started later still routes as before. */
        c->freed = 1;
        *comm = MPI_COMM_NULL;
        return MPI_SUCCESS;
    }
    if (c)
        p2p_comm_entry_free(p2p_comm_unhash(c->comm));
    return real(comm);
}

BOBCAT_EXPORT int MPI_Comm_free(MPI_Comm *comm)
{
    PMPI_GUARD();
    return comm_release(comm, PMPI_Comm_free);
}

BOBCAT_EXPORT int MPI_Comm_disconnect(MPI_Comm *comm)
{
    PMPI_GUARD();
    return comm_release(comm, PMPI_Comm_disconnect);
}
