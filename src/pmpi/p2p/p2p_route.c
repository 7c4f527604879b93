/* p2p_route: the other half of the routing decision (p2p_route in p2p.h decides where a call goes):
 * the real MPI's call for a mode, why a call went to the real MPI, and the BOBCAT_STATS rows of
 * point-to-point. */
#include "p2p.h"

#include <limits.h>

/* The engine's own counters, read at report time (plus two of the layer's, counted as they go). */
static void engine_refresh(pmpi_stat_t *s)
{
    const msg_stats_t *m = bobcat_msg_stats();
    const uint64_t v[] = {m->eager_sent, m->eager_recv,  m->rndv_sent, m->rndv_recv,  m->bytes_single_copy,
                          m->staged_sent, m->detached,   m->pool_nodes, m->unexpected, m->fbox_sent,
                          m->fbox_recv,  m->fbox_rndv,   m->fbox_direct, m->fboxes,   m->split_pushed,
                          m->bytes_pushed};
    _Static_assert(sizeof v / sizeof v[0] <= P2P_X_NONCONTIG, "engine counters before the layer's");
    for (unsigned i = 0; i < sizeof v / sizeof v[0]; i++)
        s->extra[i] = v[i];
}

pmpi_stat_t p2p_st_send = {.name = "p2p send", .alg_names = {"eager", "single-copy"}};
pmpi_stat_t p2p_st_recv = {.name = "p2p recv", .alg_names = {"posted", "wildcard-mixed", "deferred"}};
pmpi_stat_t p2p_st_engine = {
    .name = "p2p engine",
    .extra_names = {"eager.sent", "eager.recv", "rndv.sent", "rndv.recv", "bytes.single-copy", "staged.sent",
                    "detached", "pool.nodes", "unexpected", "fbox.sent", "fbox.recv", "fbox.rndv", "fbox.direct",
                    "fboxes", "split.pushed", "bytes.pushed", NULL, NULL,
                    [P2P_X_NONCONTIG] = "noncontig", [P2P_X_OFFQ_SWITCH] = "wildcard.offnode"},
    .refresh = engine_refresh,
};

pmpi_why_t p2p_why_not(MPI_Comm comm)
{
    if (!p2p_set.engine)
        return PMPI_WHY_OFF;
    int inter = 0;
    if (comm != MPI_COMM_NULL)
        PMPI_Comm_test_inter(comm, &inter);
    return inter ? PMPI_WHY_INTER : PMPI_WHY_SETUP; /* else: made by a constructor we do not see */
}

/* MPI 4's large-count forms where the count does not fit an int. */
#if MPI_VERSION >= 4
#define REAL(name, ...) (big ? PMPI_##name##_c(__VA_ARGS__) : PMPI_##name(__VA_ARGS__))
#else
#define REAL(name, ...) PMPI_##name(__VA_ARGS__)
#endif

int p2p_real(int how, int mode, const void *buf, MPI_Count count, MPI_Datatype dt, int peer, int tag,
                        MPI_Comm comm, MPI_Request *req, MPI_Status *st)
{
#if MPI_VERSION >= 4
    int big = count > INT_MAX;
#else
    if (count > INT_MAX)
        return PMPI_Comm_call_errhandler(comm, MPI_ERR_COUNT), MPI_ERR_COUNT; /* no _c forms in MPI 3 */
#endif
    void *rbuf = (void *)buf;
    switch (how) {
    case P2P_BLOCKING:
        switch (mode) {
        case MODE_RECV: return PMPI_AWAY(REAL(Recv, rbuf, count, dt, peer, tag, comm, st));
        case MODE_SYNC: return PMPI_AWAY(REAL(Ssend, buf, count, dt, peer, tag, comm));
        case MODE_READY: return PMPI_AWAY(REAL(Rsend, buf, count, dt, peer, tag, comm));
        case MODE_BUF: return PMPI_AWAY(REAL(Bsend, buf, count, dt, peer, tag, comm));
        default: return PMPI_AWAY(REAL(Send, buf, count, dt, peer, tag, comm));
        }
    case P2P_NONBLOCKING:
        switch (mode) {
        case MODE_RECV: return REAL(Irecv, rbuf, count, dt, peer, tag, comm, req);
        case MODE_SYNC: return REAL(Issend, buf, count, dt, peer, tag, comm, req);
        case MODE_READY: return REAL(Irsend, buf, count, dt, peer, tag, comm, req);
        case MODE_BUF: return REAL(Ibsend, buf, count, dt, peer, tag, comm, req);
        default: return REAL(Isend, buf, count, dt, peer, tag, comm, req);
        }
    default:
        switch (mode) {
        case MODE_RECV: return REAL(Recv_init, rbuf, count, dt, peer, tag, comm, req);
        case MODE_SYNC: return REAL(Ssend_init, buf, count, dt, peer, tag, comm, req);
        case MODE_READY: return REAL(Rsend_init, buf, count, dt, peer, tag, comm, req);
        case MODE_BUF: return REAL(Bsend_init, buf, count, dt, peer, tag, comm, req);
        default: return REAL(Send_init, buf, count, dt, peer, tag, comm, req);
        }
    }
}
