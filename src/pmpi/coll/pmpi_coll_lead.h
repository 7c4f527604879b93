/* pmpi_coll_lead.h: the leaders' phase of the blocking collectives across nodes (pmpi_coll_lead.c),
 * over pmpi/base only, so that the collectives' files and it do not depend on each other. */
#ifndef BOBCAT_PMPI_COLL_LEAD_H
#define BOBCAT_PMPI_COLL_LEAD_H

#include "../base/pmpi_comm.h"

/* Called by the leaders only (pc_lead_to_root: the leader and the root it names), leader k being
 * leaders_comm rank k. Each is the real MPI's collective on pc->leaders_comm, or the same over
 * point-to-point on pmpi_layer.lead_world where pc->lead_tag >= 0. Byte forms (gatherv .. alltoallv)
 * take MPI_BYTE counts. MPI_SUCCESS or the first error (already given to the handler that decides). */
int pc_lead_barrier(const pmpi_comm_t *pc);
int pc_lead_bcast(const pmpi_comm_t *pc, void *buf, int n, MPI_Datatype t, int lroot);
int pc_lead_reduce(const pmpi_comm_t *pc, const void *in, void *out, int n, MPI_Datatype t, MPI_Op op, int lroot);
/* in place */
int pc_lead_allreduce(const pmpi_comm_t *pc, void *inout, int n, MPI_Datatype t, MPI_Op op);
int pc_lead_reduce_scatter(const pmpi_comm_t *pc, const void *in, void *out, const int *cnt, MPI_Datatype t,
                           MPI_Op op);
int pc_lead_exscan(const pmpi_comm_t *pc, const void *in, void *out, int n, MPI_Datatype t, MPI_Op op);
int pc_lead_gatherv(const pmpi_comm_t *pc, const void *sb, int sn, void *rb, const int *cnt, const int *dsp,
                    int lroot);
int pc_lead_scatterv(const pmpi_comm_t *pc, const void *sb, const int *cnt, const int *dsp, void *rb, int rn,
                     int lroot);
/* in place: my block is already at all + dsp[mine] */
int pc_lead_allgatherv(const pmpi_comm_t *pc, void *all, const int *cnt, const int *dsp);
int pc_lead_alltoallv(const pmpi_comm_t *pc, const void *sb, const int *sc, const int *sd, void *rb, const int *rcnt,
                      const int *rd);
/* A point-to-point exchange between leaders (the leaders' exchange of blocks of any size): started
 * here, completed by pc_lead_waitall. On leaders_comm they carry PC_LEAD_TAG. */
#define PC_LEAD_TAG 11
int pc_lead_isend(const pmpi_comm_t *pc, const void *b, int n, MPI_Datatype t, int k, MPI_Request *q);
int pc_lead_irecv(const pmpi_comm_t *pc, void *b, int n, MPI_Datatype t, int k, MPI_Request *q);
int pc_lead_waitall(const pmpi_comm_t *pc, int nq, MPI_Request *q);
/* My node's leader hands n elements to comm rank `root` on its node (a root that does not lead it). */
int pc_lead_to_root(const pmpi_comm_t *pc, void *buf, int n, MPI_Datatype t, int root);

/* The nonblocking collectives' leaders' phase over point-to-point (pc->lead_tag >= 0), for
 * pmpi_coll_nb.c's calls across nodes: a state machine on pmpi_layer.lead_world with the tag after
 * the blocking calls' own, advanced by pc_lead_nb_test from bobcat's progress. One at a time per
 * communicator (the caller starts the next once the last is done, in the calls' order, which every
 * rank shares), so no message of one can match another's; a persistent collective's starts carry a
 * tag of the request's own (MPI 4.0 pairs them by init, whatever order ranks start them in). The arguments are the real MPI's
 * nonblocking call's on the leaders (pmpi_coll_nb.c's leaders_start): kind is coll_nb_kind_t's
 * BARRIER, BCAST (count elements of dt from leader root), REDUCE (in place at root), ALLREDUCE (in
 * place), EXSCAN (buf's prefix over the earlier leaders into out, none at leader 0),
 * REDUCE_SCATTER (in place: cnt[j] elements to leader j, at the start of buf), ALLGATHER (bytes,
 * in place: cnt, dsp), GATHER / SCATTER (bytes; at the root buf in place with cnt, dsp, elsewhere
 * count bytes in buf), ALLTOALL (bytes: buf with cnt, dsp out, out with rcnt, rdsp in) or
 * ALLTOALLV (the same with the datatypes st and rt: MPI_Ialltoallw's arguments). The
 * buffers and tables must stay until it is done. */
typedef struct pc_lead_nb_args {
    coll_nb_kind_t kind;
    void *buf, *out;
    int count, root;
    MPI_Datatype dt;
    MPI_Op op;
    const int *cnt, *dsp, *rcnt, *rdsp;
    const MPI_Datatype *st, *rt; /* ALLTOALLV: MPI_Ialltoallw's, with a datatype per block (and
                                   byte displacements), my own block too */
    int tag;                     /* 0: the communicator's nonblocking calls' (pc->lead_tag + 1); a
                                   persistent collective's start: its own */
} pc_lead_nb_args_t;
typedef struct pc_lead_nb pc_lead_nb_t;
/* Made ready to run (its first messages go at the first pc_lead_nb_test, which the caller makes
 * at once); MPI_SUCCESS or an error code (nothing to free then). */
int pc_lead_nb_start(const pmpi_comm_t *pc, const pc_lead_nb_args_t *a, pc_lead_nb_t **s_p);
/* Advance it: 1 once done (*err_p: the first failing call's code, or MPI_SUCCESS), and then freed. */
int pc_lead_nb_test(pc_lead_nb_t *s, int *err_p);

#endif
