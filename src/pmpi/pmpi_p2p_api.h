/* pmpi_p2p_api.h: the point-to-point entry points that take a count, included twice by
 * pmpi_p2p.c: with COUNT_T int (MPI_Send ...) and, for MPI 4 libraries, COUNT_T MPI_Count
 * (MPI_Send_c ...), so both forms share one path and one routing. */

BOBCAT_EXPORT int SFX(MPI_Send)(const void *buf, COUNT_T count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
    return send_fast(buf, count, dt, dest, tag, comm, MODE_STD);
}

BOBCAT_EXPORT int SFX(MPI_Ssend)(const void *buf, COUNT_T count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
    return p2p_send(buf, count, dt, dest, tag, comm, MODE_SYNC);
}

BOBCAT_EXPORT int SFX(MPI_Rsend)(const void *buf, COUNT_T count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
    return p2p_send(buf, count, dt, dest, tag, comm, MODE_READY);
}

BOBCAT_EXPORT int SFX(MPI_Bsend)(const void *buf, COUNT_T count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
    return p2p_send(buf, count, dt, dest, tag, comm, MODE_BUF);
}

BOBCAT_EXPORT int SFX(MPI_Isend)(const void *buf, COUNT_T count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm,
                                 MPI_Request *req)
{
    return p2p_isend(buf, count, dt, dest, tag, comm, MODE_STD, req);
}

BOBCAT_EXPORT int SFX(MPI_Issend)(const void *buf, COUNT_T count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm,
                                  MPI_Request *req)
{
    return p2p_isend(buf, count, dt, dest, tag, comm, MODE_SYNC, req);
}

BOBCAT_EXPORT int SFX(MPI_Irsend)(const void *buf, COUNT_T count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm,
                                  MPI_Request *req)
{
    return p2p_isend(buf, count, dt, dest, tag, comm, MODE_READY, req);
}

BOBCAT_EXPORT int SFX(MPI_Ibsend)(const void *buf, COUNT_T count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm,
                                  MPI_Request *req)
{
    return p2p_isend(buf, count, dt, dest, tag, comm, MODE_BUF, req);
}

BOBCAT_EXPORT int SFX(MPI_Recv)(void *buf, COUNT_T count, MPI_Datatype dt, int src, int tag, MPI_Comm comm,
                                MPI_Status *st)
{
    return recv_fast(buf, count, dt, src, tag, comm, st);
}

BOBCAT_EXPORT int SFX(MPI_Irecv)(void *buf, COUNT_T count, MPI_Datatype dt, int src, int tag, MPI_Comm comm,
                                 MPI_Request *req)
{
    return p2p_irecv(buf, count, dt, src, tag, comm, req);
}

/* Persistent requests: on a registered communicator bobcat keeps the arguments and every start
 * routes like the nonblocking call (so a start behind a wildcard waits its turn); sends to another
 * node are the real MPI's own persistent requests. */
static int SFX(persist_init)(const void *buf, COUNT_T count, MPI_Datatype dt, int peer, int tag, MPI_Comm comm,
                             int mode, MPI_Request *req)
{
    p2p_comm_t *c = p2p_comm_lookup(comm);
    int bad = !c || (peer != MPI_PROC_NULL && peer != MPI_ANY_SOURCE && (peer < 0 || peer >= c->size)) ||
              (mode != MODE_RECV && peer == MPI_ANY_SOURCE);
    if (bad || (mode != MODE_RECV && peer >= 0 && c->local[peer] < 0)) {
        p2p_stats.calls_mpi++;
        switch (mode) {
        case MODE_RECV: return SFX(PMPI_Recv_init)((void *)buf, count, dt, peer, tag, comm, req);
        case MODE_SYNC: return SFX(PMPI_Ssend_init)(buf, count, dt, peer, tag, comm, req);
        case MODE_READY: return SFX(PMPI_Rsend_init)(buf, count, dt, peer, tag, comm, req);
        case MODE_BUF: return SFX(PMPI_Bsend_init)(buf, count, dt, peer, tag, comm, req);
        default: return SFX(PMPI_Send_init)(buf, count, dt, peer, tag, comm, req);
        }
    }
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
    return SFX(persist_init)(buf, count, dt, dest, tag, comm, MODE_STD, req);
}

BOBCAT_EXPORT int SFX(MPI_Ssend_init)(const void *buf, COUNT_T count, MPI_Datatype dt, int dest, int tag,
                                      MPI_Comm comm, MPI_Request *req)
{
    return SFX(persist_init)(buf, count, dt, dest, tag, comm, MODE_SYNC, req);
}

BOBCAT_EXPORT int SFX(MPI_Rsend_init)(const void *buf, COUNT_T count, MPI_Datatype dt, int dest, int tag,
                                      MPI_Comm comm, MPI_Request *req)
{
    return SFX(persist_init)(buf, count, dt, dest, tag, comm, MODE_READY, req);
}

BOBCAT_EXPORT int SFX(MPI_Bsend_init)(const void *buf, COUNT_T count, MPI_Datatype dt, int dest, int tag,
                                      MPI_Comm comm, MPI_Request *req)
{
    return SFX(persist_init)(buf, count, dt, dest, tag, comm, MODE_BUF, req);
}

BOBCAT_EXPORT int SFX(MPI_Recv_init)(void *buf, COUNT_T count, MPI_Datatype dt, int src, int tag, MPI_Comm comm,
                                     MPI_Request *req)
{
    return SFX(persist_init)(buf, count, dt, src, tag, comm, MODE_RECV, req);
}

BOBCAT_EXPORT int SFX(MPI_Sendrecv)(const void *sbuf, COUNT_T scount, MPI_Datatype stype, int dest, int stag,
                                    void *rbuf, COUNT_T rcount, MPI_Datatype rtype, int src, int rtag, MPI_Comm comm,
                                    MPI_Status *st)
{
    if (!p2p_comm_lookup(comm) && !p2p_need_progress()) {
        p2p_stats.calls_mpi++;
        return SFX(PMPI_Sendrecv)(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, src, rtag, comm, st);
    }
    MPI_Request rr, sr;
    int rc = p2p_irecv(rbuf, rcount, rtype, src, rtag, comm, &rr);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = p2p_isend(sbuf, scount, stype, dest, stag, comm, MODE_STD, &sr);
    if (rc != MPI_SUCCESS)
        return rc;
    int rc2 = MPI_Wait(&sr, MPI_STATUS_IGNORE);
    rc = MPI_Wait(&rr, st);
    return rc != MPI_SUCCESS ? rc : rc2;
}

BOBCAT_EXPORT int SFX(MPI_Sendrecv_replace)(void *buf, COUNT_T count, MPI_Datatype dt, int dest, int stag, int src,
                                            int rtag, MPI_Comm comm, MPI_Status *st)
{
    if (!p2p_comm_lookup(comm) && !p2p_need_progress()) {
        p2p_stats.calls_mpi++;
        return SFX(PMPI_Sendrecv_replace)(buf, count, dt, dest, stag, src, rtag, comm, st);
    }
    /* Send a packed copy (MPI_PACKED matches any receive type), receive into buf. */
    MPI_Count bytes = count > 0 ? (MPI_Count)count * dt_get(dt)->size : 0;
    void *tmp = malloc(bytes ? (size_t)bytes : 1);
    if (!tmp)
        return PMPI_Comm_call_errhandler(comm, MPI_ERR_NO_MEM), MPI_ERR_NO_MEM;
    if (pmpi_dt_pack(buf, count, dt, tmp) != bytes) {
        free(tmp);
        return PMPI_Comm_call_errhandler(comm, MPI_ERR_TYPE), MPI_ERR_TYPE;
    }
    MPI_Request rr, sr;
    int rc = p2p_isend(tmp, bytes, MPI_PACKED, dest, stag, comm, MODE_STD, &sr);
    if (rc == MPI_SUCCESS)
        rc = p2p_irecv(buf, count, dt, src, rtag, comm, &rr);
    if (rc != MPI_SUCCESS) {
        free(tmp);
        return rc;
    }
    int rc2 = MPI_Wait(&sr, MPI_STATUS_IGNORE);
    rc = MPI_Wait(&rr, st);
    free(tmp);
    return rc != MPI_SUCCESS ? rc : rc2;
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
    dtinfo_t d;
    dt_info(dt, &d);
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
    p2p_stats.calls_bobcat++;
    *req = p2p_handle_of(r);
    return MPI_SUCCESS;
}

BOBCAT_EXPORT int SFX(MPI_Imrecv)(void *buf, COUNT_T count, MPI_Datatype dt, MPI_Message *msg, MPI_Request *req)
{
    return SFX(mrecv_start)(buf, count, dt, msg, req);
}

BOBCAT_EXPORT int SFX(MPI_Mrecv)(void *buf, COUNT_T count, MPI_Datatype dt, MPI_Message *msg, MPI_Status *st)
{
    if (!p2p_msg_of(*msg) && !p2p_need_progress())
        return SFX(PMPI_Mrecv)(buf, count, dt, msg, st);
    MPI_Request req;
    int rc = SFX(mrecv_start)(buf, count, dt, msg, &req);
    if (rc != MPI_SUCCESS)
        return rc;
    return MPI_Wait(&req, st);
}
