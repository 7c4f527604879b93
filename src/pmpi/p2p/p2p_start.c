/* p2p_start: persistent requests (their inits, MPI_Start and MPI_Startall) and MPI_Sendrecv(_replace):
 * operations made of the nonblocking send and receive of p2p_send.c and p2p_recv.c. On a registered
 * communicator a persistent request keeps its arguments and every start routes like the
 * nonblocking call (so a start behind a wildcard waits its turn); sends to another node are the
 * real MPI's own persistent requests. */
#include "p2p.h"

#include <stdlib.h>

#define P2P_API "p2p_start_api.h"
#include "p2p_counts.h"

BOBCAT_EXPORT int MPI_Start(MPI_Request *req)
{
    PMPI_GUARD();
    p2p_req_t *r = p2p_req_of(*req);
    if (!r)
        return PMPI_Start(req);
    if (r->kind != P2P_K_PERSIST)
        return MPI_ERR_REQUEST;
    int rc;
    if (r->ext_ops)
        rc = r->ext_ops->start(r, &r->inner);
    else if (r->mode == MODE_RECV)
        rc = p2p_irecv_any(r->buf, r->count, r->type, r->peer, r->tag, r->comm, &r->inner);
    else
        rc = p2p_isend_any(r->buf, r->count, r->type, r->peer, r->tag, r->comm, r->mode, &r->inner);
    r->active = rc == MPI_SUCCESS;
    r->st_valid = 0;
    return rc;
}

BOBCAT_EXPORT int MPI_Startall(int n, MPI_Request reqs[])
{
    PMPI_GUARD();
    for (int i = 0; i < n; i++) {
        int rc = MPI_Start(&reqs[i]);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}
