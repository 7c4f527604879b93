/* p2p_start_api.h: the persistent inits and Sendrecv(_replace), included twice by p2p_start.c: with
 * COUNT_T int and, for MPI 4 libraries, COUNT_T MPI_Count (the _c forms). */

/* Persistent requests: on a registered communicator bobcat keeps the arguments and every start
 * routes like the nonblocking call (so a start behind a wildcard waits its turn); sends to another
 * node are the real MPI's own persistent requests. */
static int SFX(persist_init)(const void *buf, COUNT_T count, MPI_Datatype dt, int peer, int tag, MPI_Comm comm,
                             int mode, MPI_Request *req)
{
    p2p_comm_t *c = p2p_comm_lookup(comm);
    p2p_to_t to = p2p_route(c, peer, tag, count, mode == MODE_RECV);
    if (to == P2P_TO_MPI || (mode != MODE_RECV && to == P2P_TO_OFFNODE))
        return p2p_real(P2P_PERSISTENT, mode, buf, count, dt, peer, tag, comm, req, NULL);
    p2p_req_t *r = p2p_req_new();
    if (!r)
        return PMPI_Comm_call_errhandler(comm, MPI_ERR_NO_MEM), MPI_ERR_NO_MEM;
    r->kind = P2P_K_PERSIST;
    r->persistent = 1;
    r->active = 0;
    r->buf = (void *)buf;
    r->count = count;
    r->peer = peer;
    r->tag = tag;
    r->comm = comm;
    r->mode = mode;
    if (p2p_req_hold_type(r, dt) != MPI_SUCCESS) { /* every start uses it */
        p2p_req_release(r);
        return PMPI_Comm_call_errhandler(comm, MPI_ERR_TYPE), MPI_ERR_TYPE;
    }
    *req = p2p_handle_of(r);
    return MPI_SUCCESS;
}

BOBCAT_EXPORT int SFX(MPI_Send_init)(const void *buf, COUNT_T count, MPI_Datatype dt, int dest, int tag,
                                     MPI_Comm comm, MPI_Request *req)
{
    PMPI_GUARD();
    return SFX(persist_init)(buf, count, dt, dest, tag, comm, MODE_STD, req);
}

BOBCAT_EXPORT int SFX(MPI_Ssend_init)(const void *buf, COUNT_T count, MPI_Datatype dt, int dest, int tag,
                                      MPI_Comm comm, MPI_Request *req)
{
    PMPI_GUARD();
    return SFX(persist_init)(buf, count, dt, dest, tag, comm, MODE_SYNC, req);
}

BOBCAT_EXPORT int SFX(MPI_Rsend_init)(const void *buf, COUNT_T count, MPI_Datatype dt, int dest, int tag,
                                      MPI_Comm comm, MPI_Request *req)
{
    PMPI_GUARD();
    return SFX(persist_init)(buf, count, dt, dest, tag, comm, MODE_READY, req);
}

BOBCAT_EXPORT int SFX(MPI_Bsend_init)(const void *buf, COUNT_T count, MPI_Datatype dt, int dest, int tag,
                                      MPI_Comm comm, MPI_Request *req)
{
    PMPI_GUARD();
    return SFX(persist_init)(buf, count, dt, dest, tag, comm, MODE_BUF, req);
}

BOBCAT_EXPORT int SFX(MPI_Recv_init)(void *buf, COUNT_T count, MPI_Datatype dt, int src, int tag, MPI_Comm comm,
                                     MPI_Request *req)
{
    PMPI_GUARD();
    return SFX(persist_init)(buf, count, dt, src, tag, comm, MODE_RECV, req);
}

BOBCAT_EXPORT int SFX(MPI_Sendrecv)(const void *sbuf, COUNT_T scount, MPI_Datatype stype, int dest, int stag,
                                    void *rbuf, COUNT_T rcount, MPI_Datatype rtype, int src, int rtag, MPI_Comm comm,
                                    MPI_Status *st)
{
    PMPI_GUARD();
    if (!p2p_comm_lookup(comm) && !p2p_need_progress()) {
        return PMPI_AWAY(SFX(PMPI_Sendrecv)(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, src, rtag, comm, st));
    }
    /* The send first: its header reaches the peer before this rank copies the peer's message, and
     * with a send of its own in flight this rank's receive does not split its copy with a peer
     * that has its own receive to copy (msg_rndv_pull; Sendrecv 64 KiB took twice as long). */
    MPI_Request rr, sr;
    int rc = p2p_isend_any(sbuf, scount, stype, dest, stag, comm, MODE_STD, &sr);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = p2p_irecv_any(rbuf, rcount, rtype, src, rtag, comm, &rr);
    if (rc != MPI_SUCCESS) {
        MPI_Wait(&sr, MPI_STATUS_IGNORE);
        return rc;
    }
    int rc2 = MPI_Wait(&sr, MPI_STATUS_IGNORE);
    rc = MPI_Wait(&rr, st);
    return rc != MPI_SUCCESS ? rc : rc2;
}

BOBCAT_EXPORT int SFX(MPI_Sendrecv_replace)(void *buf, COUNT_T count, MPI_Datatype dt, int dest, int stag, int src,
                                            int rtag, MPI_Comm comm, MPI_Status *st)
{
    PMPI_GUARD();
    if (!p2p_comm_lookup(comm) && !p2p_need_progress()) {
        return PMPI_AWAY(SFX(PMPI_Sendrecv_replace)(buf, count, dt, dest, stag, src, rtag, comm, st));
    }
    /* Send a packed copy (MPI_PACKED matches any receive type), receive into buf. */
    MPI_Count bytes = count > 0 ? (MPI_Count)count * pmpi_dt_get(dt)->size : 0;
    void *tmp = malloc(bytes ? (size_t)bytes : 1);
    if (!tmp)
        return PMPI_Comm_call_errhandler(comm, MPI_ERR_NO_MEM), MPI_ERR_NO_MEM;
    if (pmpi_dt_pack(buf, count, dt, tmp) != bytes) {
        free(tmp);
        return PMPI_Comm_call_errhandler(comm, MPI_ERR_TYPE), MPI_ERR_TYPE;
    }
    MPI_Request rr, sr;
    int rc = p2p_isend_any(tmp, bytes, MPI_PACKED, dest, stag, comm, MODE_STD, &sr);
    if (rc == MPI_SUCCESS)
        rc = p2p_irecv_any(buf, count, dt, src, rtag, comm, &rr);
    if (rc != MPI_SUCCESS) {
        free(tmp);
        return rc;
    }
    int rc2 = MPI_Wait(&sr, MPI_STATUS_IGNORE);
    rc = MPI_Wait(&rr, st);
    free(tmp);
    return rc != MPI_SUCCESS ? rc : rc2;
}
