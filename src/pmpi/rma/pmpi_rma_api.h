/* pmpi_rma_api.h: the one-sided operations' entry points, included twice by pmpi_rma_ops.c (through
 * p2p/p2p_counts.h): with COUNT_T int (MPI_Put ...) and, for MPI 4 libraries, COUNT_T MPI_Count
 * (MPI_Put_c ...), so both forms share one path. MPI_PROC_NULL is nothing, in or out of an epoch. */

BOBCAT_EXPORT int SFX(MPI_Put)(const void *obuf, COUNT_T ocount, MPI_Datatype otype, int t, MPI_Aint tdisp,
                               COUNT_T tcount, MPI_Datatype ttype, MPI_Win win)
{
    PMPI_GUARD();
    rma_win_t *w = rma_get(win);
    if (!w && RMA_ALONE(RMA_PUT, type_bytes(ocount, otype)))
        return SFX(PMPI_Put)(obuf, ocount, otype, t, tdisp, tcount, ttype, win);
    if (t == MPI_PROC_NULL)
        return MPI_SUCCESS;
    int rc = xfer(w, 0, (void *)obuf, ocount, otype, t, tdisp, tcount, ttype);
    RMA_RESULT(w, t, rc, SFX(PMPI_Put)(obuf, ocount, otype, t, tdisp, tcount, ttype, win), RMA_PUT,
               type_bytes(ocount, otype));
}

BOBCAT_EXPORT int SFX(MPI_Get)(void *obuf, COUNT_T ocount, MPI_Datatype otype, int t, MPI_Aint tdisp,
                               COUNT_T tcount, MPI_Datatype ttype, MPI_Win win)
{
    PMPI_GUARD();
    rma_win_t *w = rma_get(win);
    if (!w && RMA_ALONE(RMA_GET, type_bytes(ocount, otype)))
        return SFX(PMPI_Get)(obuf, ocount, otype, t, tdisp, tcount, ttype, win);
    if (t == MPI_PROC_NULL)
        return MPI_SUCCESS;
    int rc = xfer(w, 1, obuf, ocount, otype, t, tdisp, tcount, ttype);
    RMA_RESULT(w, t, rc, SFX(PMPI_Get)(obuf, ocount, otype, t, tdisp, tcount, ttype, win), RMA_GET,
               type_bytes(ocount, otype));
}

BOBCAT_EXPORT int SFX(MPI_Accumulate)(const void *obuf, COUNT_T ocount, MPI_Datatype otype, int t, MPI_Aint tdisp,
                                      COUNT_T tcount, MPI_Datatype ttype, MPI_Op op, MPI_Win win)
{
    PMPI_GUARD();
    rma_win_t *w = rma_get(win);
    if (!w && RMA_ALONE(RMA_ACC, type_bytes(ocount, otype)))
        return SFX(PMPI_Accumulate)(obuf, ocount, otype, t, tdisp, tcount, ttype, op, win);
    if (t == MPI_PROC_NULL)
        return MPI_SUCCESS;
    int rc = acc(w, RMA_ACC, obuf, ocount, otype, NULL, 0, MPI_DATATYPE_NULL, t, tdisp, tcount, ttype, op);
    RMA_RESULT(w, t, rc, SFX(PMPI_Accumulate)(obuf, ocount, otype, t, tdisp, tcount, ttype, op, win), RMA_ACC,
               type_bytes(ocount, otype));
}

BOBCAT_EXPORT int SFX(MPI_Get_accumulate)(const void *obuf, COUNT_T ocount, MPI_Datatype otype, void *rbuf,
                                          COUNT_T rcount, MPI_Datatype rtype, int t, MPI_Aint tdisp, COUNT_T tcount,
                                          MPI_Datatype ttype, MPI_Op op, MPI_Win win)
{
    PMPI_GUARD();
    rma_win_t *w = rma_get(win);
    if (!w && RMA_ALONE(RMA_GACC, type_bytes(rcount, rtype)))
        return SFX(PMPI_Get_accumulate)(obuf, ocount, otype, rbuf, rcount, rtype, t, tdisp, tcount, ttype, op, win);
    if (t == MPI_PROC_NULL)
        return MPI_SUCCESS;
    int rc = acc(w, RMA_GACC, obuf, ocount, otype, rbuf, rcount, rtype, t, tdisp, tcount, ttype, op);
    RMA_RESULT(w, t, rc,
               SFX(PMPI_Get_accumulate)(obuf, ocount, otype, rbuf, rcount, rtype, t, tdisp, tcount, ttype, op, win),
               RMA_GACC, type_bytes(rcount, rtype));
}

BOBCAT_EXPORT int SFX(MPI_Rput)(const void *obuf, COUNT_T ocount, MPI_Datatype otype, int t, MPI_Aint tdisp,
                                COUNT_T tcount, MPI_Datatype ttype, MPI_Win win, MPI_Request *req)
{
    PMPI_GUARD();
    rma_win_t *w = rma_get(win);
    if (!w && RMA_ALONE(RMA_PUT, type_bytes(ocount, otype)))
        return SFX(PMPI_Rput)(obuf, ocount, otype, t, tdisp, tcount, ttype, win, req);
    if (t == MPI_PROC_NULL)
        return done_request(w, req);
    int rc = req_epoch(w, t);
    if (rc == MPI_SUCCESS)
        rc = xfer(w, 0, (void *)obuf, ocount, otype, t, tdisp, tcount, ttype);
    RMA_REQ_RESULT(w, t, rc, SFX(PMPI_Rput)(obuf, ocount, otype, t, tdisp, tcount, ttype, win, req), RMA_PUT,
                   type_bytes(ocount, otype), req);
}

BOBCAT_EXPORT int SFX(MPI_Rget)(void *obuf, COUNT_T ocount, MPI_Datatype otype, int t, MPI_Aint tdisp,
                                COUNT_T tcount, MPI_Datatype ttype, MPI_Win win, MPI_Request *req)
{
    PMPI_GUARD();
    rma_win_t *w = rma_get(win);
    if (!w && RMA_ALONE(RMA_GET, type_bytes(ocount, otype)))
        return SFX(PMPI_Rget)(obuf, ocount, otype, t, tdisp, tcount, ttype, win, req);
    if (t == MPI_PROC_NULL)
        return done_request(w, req);
    int rc = req_epoch(w, t);
    if (rc == MPI_SUCCESS)
        rc = xfer(w, 1, obuf, ocount, otype, t, tdisp, tcount, ttype);
    RMA_REQ_RESULT(w, t, rc, SFX(PMPI_Rget)(obuf, ocount, otype, t, tdisp, tcount, ttype, win, req), RMA_GET,
                   type_bytes(ocount, otype), req);
}

BOBCAT_EXPORT int SFX(MPI_Raccumulate)(const void *obuf, COUNT_T ocount, MPI_Datatype otype, int t, MPI_Aint tdisp,
                                       COUNT_T tcount, MPI_Datatype ttype, MPI_Op op, MPI_Win win, MPI_Request *req)
{
    PMPI_GUARD();
    rma_win_t *w = rma_get(win);
    if (!w && RMA_ALONE(RMA_ACC, type_bytes(ocount, otype)))
        return SFX(PMPI_Raccumulate)(obuf, ocount, otype, t, tdisp, tcount, ttype, op, win, req);
    if (t == MPI_PROC_NULL)
        return done_request(w, req);
    int rc = req_epoch(w, t);
    if (rc == MPI_SUCCESS)
        rc = acc(w, RMA_ACC, obuf, ocount, otype, NULL, 0, MPI_DATATYPE_NULL, t, tdisp, tcount, ttype, op);
    RMA_REQ_RESULT(w, t, rc, SFX(PMPI_Raccumulate)(obuf, ocount, otype, t, tdisp, tcount, ttype, op, win, req),
                   RMA_ACC, type_bytes(ocount, otype), req);
}

BOBCAT_EXPORT int SFX(MPI_Rget_accumulate)(const void *obuf, COUNT_T ocount, MPI_Datatype otype, void *rbuf,
                                           COUNT_T rcount, MPI_Datatype rtype, int t, MPI_Aint tdisp, COUNT_T tcount,
                                           MPI_Datatype ttype, MPI_Op op, MPI_Win win, MPI_Request *req)
{
    PMPI_GUARD();
    rma_win_t *w = rma_get(win);
    if (!w && RMA_ALONE(RMA_GACC, type_bytes(rcount, rtype)))
        return SFX(PMPI_Rget_accumulate)(obuf, ocount, otype, rbuf, rcount, rtype, t, tdisp, tcount, ttype, op, win,
                                         req);
    if (t == MPI_PROC_NULL)
        return done_request(w, req);
    int rc = req_epoch(w, t);
    if (rc == MPI_SUCCESS)
        rc = acc(w, RMA_GACC, obuf, ocount, otype, rbuf, rcount, rtype, t, tdisp, tcount, ttype, op);
    RMA_REQ_RESULT(w, t, rc,
                   SFX(PMPI_Rget_accumulate)(obuf, ocount, otype, rbuf, rcount, rtype, t, tdisp, tcount, ttype, op,
                                             win, req),
                   RMA_GACC, type_bytes(rcount, rtype), req);
}
