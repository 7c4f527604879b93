/* p2p_recv_api.h: the receive entry points that take a count, included twice by p2p_recv.c: with
 * COUNT_T int (MPI_Recv ...) and, for MPI 4 libraries, COUNT_T MPI_Count (MPI_Recv_c ...). */

BOBCAT_EXPORT int SFX(MPI_Recv)(void *buf, COUNT_T count, MPI_Datatype dt, int src, int tag, MPI_Comm comm,
                                MPI_Status *st)
{
    PMPI_GUARD();
    return recv_fast(buf, count, dt, src, tag, comm, st);
}

BOBCAT_EXPORT int SFX(MPI_Irecv)(void *buf, COUNT_T count, MPI_Datatype dt, int src, int tag, MPI_Comm comm,
                                 MPI_Request *req)
{
    PMPI_GUARD();
    return p2p_irecv(buf, count, dt, src, tag, comm, req);
}

/* Receive a message taken by MPI_Mprobe / MPI_Improbe. */
static int SFX(mrecv_start)(void *buf, COUNT_T count, MPI_Datatype dt, MPI_Message *msg, MPI_Request *req)
{
    p2p_req_t *m = p2p_msg_of(*msg);
    if (!m)
        return SFX(PMPI_Imrecv)(buf, count, dt, msg, req);
    msg_unexp_t *u = m->buf;
    MPI_Comm comm = m->comm;
    p2p_req_t *r = p2p_req_new();
    if (!r)
        return PMPI_Comm_call_errhandler(comm, MPI_ERR_NO_MEM), MPI_ERR_NO_MEM;
    dtinfo_t d = *pmpi_dt_get(dt);
    void *dst = (char *)buf + d.lb;
    MPI_Count cap = (MPI_Count)count * d.size;
    r->kind = P2P_K_RECV;
    r->comm = comm;
    r->buf = buf;
    r->count = count;
    r->type = dt;
    r->mode = MODE_RECV;
    if (!d.contig && cap) {
        r->pack = malloc((size_t)cap);
        if (!r->pack || p2p_req_hold_type(r, dt) != MPI_SUCCESS) {
            p2p_req_release(r);
            return PMPI_Comm_call_errhandler(comm, MPI_ERR_NO_MEM), MPI_ERR_NO_MEM;
        }
        dst = r->pack;
    }
    r->c = m->c; /* the message's reference to its communicator passes to the receive */
    m->c = NULL;
    p2p_req_release(m);
    *msg = MPI_MESSAGE_NULL;
    bobcat_msg_mrecv(&r->m, u, dst, (size_t)cap);
    pmpi_stat_path(&p2p_st_recv, r->pack ? PMPI_PATH_STAGED : PMPI_PATH_INPLACE, (size_t)cap, 0);
    *req = p2p_handle_of(r);
    return MPI_SUCCESS;
}

BOBCAT_EXPORT int SFX(MPI_Imrecv)(void *buf, COUNT_T count, MPI_Datatype dt, MPI_Message *msg, MPI_Request *req)
{
    PMPI_GUARD();
    return SFX(mrecv_start)(buf, count, dt, msg, req);
}

BOBCAT_EXPORT int SFX(MPI_Mrecv)(void *buf, COUNT_T count, MPI_Datatype dt, MPI_Message *msg, MPI_Status *st)
{
    PMPI_GUARD();
    if (!p2p_msg_of(*msg) && !p2p_need_progress())
        return PMPI_AWAY(SFX(PMPI_Mrecv)(buf, count, dt, msg, st));
    MPI_Request req;
    int rc = SFX(mrecv_start)(buf, count, dt, msg, &req);
    if (rc != MPI_SUCCESS)
        return rc;
    return MPI_Wait(&req, st);
}
