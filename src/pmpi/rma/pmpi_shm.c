/* pmpi_shm: the plan's node as MPI's shared-memory node. MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)
 * returns the ranks of yod's plan node (simulated or not), so MPI_Win_allocate_shared on it
 * (pmpi_rma_win.c) gives memory every rank of that node can load and store. */
#include "../base/pmpi_comm.h"
#include "../p2p/p2p.h"

/* Every rank must make the same real-MPI calls, but split_type may differ per rank: some pass
 * MPI_UNDEFINED (and get MPI_COMM_NULL) while others ask for MPI_COMM_TYPE_SHARED. Deciding locally
 * would send the UNDEFINED ranks into PMPI_Comm_split_type and the others into PMPI_Comm_split, a
 * mismatched collective that hangs (Open MPI). So the ranks first agree whether anyone asked for
 * SHARED; if so, all split by plan node, the UNDEFINED ranks with color MPI_UNDEFINED. */
BOBCAT_EXPORT int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm *newcomm)
{
    PMPI_GUARD();
    pmpi_comm_t *pc;
    int rc;
    if ((split_type != MPI_COMM_TYPE_SHARED && split_type != MPI_UNDEFINED) || !(pc = pmpi_comm_get(comm))) {
        rc = PMPI_AWAY(PMPI_Comm_split_type(comm, split_type, key, info, newcomm));
    } else {
        /* Ranks may pass MPI_UNDEFINED while others ask for SHARED: all must take the same call. */
        int want = split_type == MPI_COMM_TYPE_SHARED, any = 0;
        rc = PMPI_AWAY(PMPI_Allreduce(&want, &any, 1, MPI_INT, MPI_MAX, comm));
        if (rc != MPI_SUCCESS)
            return rc;
        if (!any)
            rc = PMPI_AWAY(PMPI_Comm_split_type(comm, split_type, key, info, newcomm)); /* all UNDEFINED */
        else
            rc = PMPI_AWAY(PMPI_Comm_split(comm, want ? pc->node[pc->rank] : MPI_UNDEFINED, key, newcomm));
    }
    if (rc == MPI_SUCCESS)
        p2p_comm_register(*newcomm, -1); /* issue 10: point-to-point registration (collective) */
    return rc;
}
