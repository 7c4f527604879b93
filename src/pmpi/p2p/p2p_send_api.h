/* p2p_send_api.h: the send entry points, included twice by p2p_send.c: with COUNT_T int (MPI_Send
 * ...) and, for MPI 4 libraries, COUNT_T MPI_Count (MPI_Send_c ...), so both forms share one path
 * and one routing. */

BOBCAT_EXPORT int SFX(MPI_Send)(const void *buf, COUNT_T count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
    PMPI_GUARD();
    return send_fast(buf, count, dt, dest, tag, comm, MODE_STD);
}

BOBCAT_EXPORT int SFX(MPI_Ssend)(const void *buf, COUNT_T count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
    PMPI_GUARD();
    return p2p_send(buf, count, dt, dest, tag, comm, MODE_SYNC);
}

BOBCAT_EXPORT int SFX(MPI_Rsend)(const void *buf, COUNT_T count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
    PMPI_GUARD();
    return p2p_send(buf, count, dt, dest, tag, comm, MODE_READY);
}

BOBCAT_EXPORT int SFX(MPI_Bsend)(const void *buf, COUNT_T count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
    PMPI_GUARD();
    return p2p_send(buf, count, dt, dest, tag, comm, MODE_BUF);
}

BOBCAT_EXPORT int SFX(MPI_Isend)(const void *buf, COUNT_T count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm,
                                 MPI_Request *req)
{
    PMPI_GUARD();
    return p2p_isend(buf, count, dt, dest, tag, comm, MODE_STD, req);
}

BOBCAT_EXPORT int SFX(MPI_Issend)(const void *buf, COUNT_T count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm,
                                  MPI_Request *req)
{
    PMPI_GUARD();
    return p2p_isend(buf, count, dt, dest, tag, comm, MODE_SYNC, req);
}

BOBCAT_EXPORT int SFX(MPI_Irsend)(const void *buf, COUNT_T count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm,
                                  MPI_Request *req)
{
    PMPI_GUARD();
    return p2p_isend(buf, count, dt, dest, tag, comm, MODE_READY, req);
}

BOBCAT_EXPORT int SFX(MPI_Ibsend)(const void *buf, COUNT_T count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm,
                                  MPI_Request *req)
{
    PMPI_GUARD();
    return p2p_isend(buf, count, dt, dest, tag, comm, MODE_BUF, req);
}
