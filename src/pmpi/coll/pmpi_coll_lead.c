/* pmpi_coll_lead: the leaders' phase of the blocking collectives across nodes. Only leaders call
 * these (pc->leader == pc->rank, pc->nnodes > 1; pc_lead_to_root also the root it names); leader k
 * is node k of pc's node order (leaders_comm rank k). Two ways, fixed per communicator when its
 * node part is built (base/pmpi_comm.c, BOBCAT_COLL_LEADERS):
 *  - the real MPI's collective on pc->leaders_comm (split from the program's communicator), with
 *    the MPI's tuned algorithms; its errors go to that communicator's handler;
 *  - pc->lead_tag >= 0, where the layer may make no communicators of its own (Open MPI at
 *    MPI_THREAD_MULTIPLE: "Hidden communicators" there): the real MPI's point-to-point on
 *    pmpi_layer.lead_world, the one copy of WORLD made at MPI_Init, tagged with the program
 *    communicator's own tag. No program message can match them (a context of the layer's), and the
 *    phases of two communicators, which threads may run at once, never match each other's (distinct
 *    tags). Within one communicator the program's collectives come in one order on every rank, and
 *    every algorithm here posts its messages between two leaders in the same order on both sides
 *    with no wildcard, so each receive matches the send meant for it. The algorithms are the
 *    textbook ones: a dissemination barrier, binomial broadcast and reduction (the reduction
 *    combines lower leaders on the left, so any op, commutative or not), recursive doubling for
 *    the allreduce of a power-of-two number of leaders (the same order; else a reduction and a
 *    broadcast), a chain for the exclusive scan, a ring for the in-place allgather, pairwise
 *    messages for the rest. Errors come back as
 *    the code of the first failing call, after pmpi_comm_lead_error. */
#include "pmpi_coll_lead.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define lead_alloc(bytes) util_alloc_or_die((bytes), "a collective's leaders' phase")

/* BOBCAT_STATS: the leaders' phases this rank led, by way (not calls of the program's: no path). */
static pmpi_stat_t st_leaders = {.name = "leaders", .extra_names = {"comm", "p2p"}};

__attribute__((constructor)) static void register_stats(void) { pmpi_stats_register(&st_leaders); }

static void counted(const pmpi_comm_t *pc)
{
    if (pmpi_stats_on)
        st_leaders.extra[pc->lead_tag >= 0]++;
}

static int leader_of(const pmpi_comm_t *pc, int k) { return pc->world[pc->by_pos[pc->node_first[k]]]; }

static int my_k(const pmpi_comm_t *pc) { return pc->leader_rank[pc->rank]; }

static int failed(const pmpi_comm_t *pc, int rc)
{
    if (rc != MPI_SUCCESS)
        pmpi_comm_lead_error(pc, rc);
    return rc;
}

static int psend(const pmpi_comm_t *pc, const void *b, int n, MPI_Datatype t, int k)
{
    return PMPI_AWAY(PMPI_Send(b, n, t, leader_of(pc, k), pc->lead_tag, pmpi_layer.lead_world));
}

static int precv(const pmpi_comm_t *pc, void *b, int n, MPI_Datatype t, int k)
{
    return PMPI_AWAY(PMPI_Recv(b, n, t, leader_of(pc, k), pc->lead_tag, pmpi_layer.lead_world, MPI_STATUS_IGNORE));
}

static int pswap(const pmpi_comm_t *pc, const void *sb, int sn, int to, void *rb, int rn, int from, MPI_Datatype t)
{
    return PMPI_AWAY(PMPI_Sendrecv(sb, sn, t, leader_of(pc, to), pc->lead_tag, rb, rn, t, leader_of(pc, from),
                                   pc->lead_tag, pmpi_layer.lead_world, MPI_STATUS_IGNORE));
}

static size_t span_of(int n, MPI_Datatype t)
{
    MPI_Aint lb = 0, ext = 0;
    PMPI_Type_get_extent(t, &lb, &ext);
    return (size_t)n * (size_t)ext;
}

int pc_lead_barrier(const pmpi_comm_t *pc)
{
    counted(pc);
    if (pc->lead_tag < 0)
        return PMPI_AWAY(PMPI_Barrier(pc->leaders_comm));
    int N = pc->nnodes, k = my_k(pc), rc = MPI_SUCCESS;
    for (int d = 1; d < N && rc == MPI_SUCCESS; d <<= 1)
        rc = pswap(pc, NULL, 0, (k + d) % N, NULL, 0, (k - d + N) % N, MPI_BYTE);
    return failed(pc, rc);
}

static int bcast_p2p(const pmpi_comm_t *pc, void *buf, int n, MPI_Datatype t, int lroot)
{
    int N = pc->nnodes, v = (my_k(pc) - lroot + N) % N, rc = MPI_SUCCESS, mask = 1;
    for (; mask < N; mask <<= 1)
        if (v & mask) {
            rc = precv(pc, buf, n, t, (v - mask + lroot) % N);
            break;
        }
    for (mask >>= 1; mask > 0 && rc == MPI_SUCCESS; mask >>= 1)
        if (v + mask < N)
            rc = psend(pc, buf, n, t, (v + mask + lroot) % N);
    return rc;
}

int pc_lead_bcast(const pmpi_comm_t *pc, void *buf, int n, MPI_Datatype t, int lroot)
{
    counted(pc);
    if (pc->lead_tag < 0)
        return PMPI_AWAY(PMPI_Bcast(buf, n, t, lroot, pc->leaders_comm));
    return failed(pc, bcast_p2p(pc, buf, n, t, lroot));
}

/* The reduction of every leader's n elements at leader 0, in leaders' order: *acc_p there (to
 * free), NULL elsewhere. */
static int reduce0(const pmpi_comm_t *pc, const void *in, int n, MPI_Datatype t, MPI_Op op, char **acc_p)
{
    size_t bytes = span_of(n, t);
    char *acc = lead_alloc(bytes), *tmp = lead_alloc(bytes);
    memcpy(acc, in, bytes);
    int N = pc->nnodes, k = my_k(pc), rc = MPI_SUCCESS;
    for (int mask = 1; mask < N && rc == MPI_SUCCESS; mask <<= 1) {
        if (k & mask) {
            rc = psend(pc, acc, n, t, k - mask);
            break;
        }
        if (k + mask < N) {
            /* acc holds leaders k..k+mask-1, the message k+mask..k+2*mask-1: tmp = acc op tmp */
            rc = precv(pc, tmp, n, t, k + mask);
            if (rc == MPI_SUCCESS)
                rc = PMPI_Reduce_local(acc, tmp, n, t, op);
            char *x = acc;
            acc = tmp;
            tmp = x;
        }
    }
    free(tmp);
    if (k != 0) {
        free(acc);
        acc = NULL;
    }
    *acc_p = acc;
    return rc;
}

int pc_lead_reduce(const pmpi_comm_t *pc, const void *in, void *out, int n, MPI_Datatype t, MPI_Op op, int lroot)
{
    counted(pc);
    if (pc->lead_tag < 0)
        return PMPI_AWAY(PMPI_Reduce(in, out, n, t, op, lroot, pc->leaders_comm));
    char *acc = NULL;
    int k = my_k(pc), rc = reduce0(pc, in, n, t, op, &acc);
    if (rc == MPI_SUCCESS && lroot != 0) {
        if (k == 0)
            rc = psend(pc, acc, n, t, lroot);
        else if (k == lroot)
            rc = precv(pc, out, n, t, 0);
    } else if (rc == MPI_SUCCESS && k == 0) {
        memcpy(out, acc, span_of(n, t));
    }
    free(acc);
    return failed(pc, rc);
}

/* Recursive doubling (a power-of-two number of leaders): at the step of bit `mask` each leader
 * swaps its partial with the leader across that bit, both covering blocks of leaders that meet
 * there, and folds the lower block's on the left: one message time per step instead of the two of
 * a reduction and a broadcast. */
static int allreduce_doubling(const pmpi_comm_t *pc, void *inout, int n, MPI_Datatype t, MPI_Op op)
{
    size_t bytes = span_of(n, t);
    char *tmp = lead_alloc(bytes);
    int N = pc->nnodes, k = my_k(pc), rc = MPI_SUCCESS;
    for (int mask = 1; mask < N && rc == MPI_SUCCESS; mask <<= 1) {
        int peer = k ^ mask;
        rc = pswap(pc, inout, n, peer, tmp, n, peer, t);
        if (rc != MPI_SUCCESS)
            break;
        if (peer < k) { /* inout = tmp op inout */
            rc = PMPI_Reduce_local(tmp, inout, n, t, op);
        } else { /* inout = inout op tmp, through tmp */
            rc = PMPI_Reduce_local(inout, tmp, n, t, op);
            memcpy(inout, tmp, bytes);
        }
    }
    free(tmp);
    return rc;
}

int pc_lead_allreduce(const pmpi_comm_t *pc, void *inout, int n, MPI_Datatype t, MPI_Op op)
{
    counted(pc);
    if (pc->lead_tag < 0)
        return PMPI_AWAY(PMPI_Allreduce(MPI_IN_PLACE, inout, n, t, op, pc->leaders_comm));
    if ((pc->nnodes & (pc->nnodes - 1)) == 0)
        return failed(pc, allreduce_doubling(pc, inout, n, t, op));
    char *acc = NULL;
    int rc = reduce0(pc, inout, n, t, op, &acc);
    if (acc)
        memcpy(inout, acc, span_of(n, t));
    free(acc);
    if (rc == MPI_SUCCESS)
        rc = bcast_p2p(pc, inout, n, t, 0);
    return failed(pc, rc);
}

int pc_lead_reduce_scatter(const pmpi_comm_t *pc, const void *in, void *out, const int *cnt, MPI_Datatype t,
                           MPI_Op op)
{
    counted(pc);
    if (pc->lead_tag < 0)
        return PMPI_AWAY(PMPI_Reduce_scatter(in, out, cnt, t, op, pc->leaders_comm));
    int N = pc->nnodes, k = my_k(pc);
    long long total = 0;
    for (int j = 0; j < N; j++)
        total += cnt[j];
    if (total > INT_MAX) {
        util_error("a leaders' Reduce_scatter of %lld elements exceeds the int count of the MPI call", total);
        abort();
    }
    char *acc = NULL;
    int rc = reduce0(pc, in, (int)total, t, op, &acc);
    size_t ext = span_of(1, t), off = 0;
    for (int j = 0; j < N && rc == MPI_SUCCESS; off += (size_t)cnt[j] * ext, j++) {
        if (k == 0 && j == 0)
            memcpy(out, acc, (size_t)cnt[0] * ext);
        else if (k == 0)
            rc = psend(pc, acc + off, cnt[j], t, j);
        else if (k == j)
            rc = precv(pc, out, cnt[j], t, 0);
    }
    free(acc);
    return failed(pc, rc);
}

int pc_lead_exscan(const pmpi_comm_t *pc, const void *in, void *out, int n, MPI_Datatype t, MPI_Op op)
{
    counted(pc);
    if (pc->lead_tag < 0)
        return PMPI_AWAY(PMPI_Exscan(in, out, n, t, op, pc->leaders_comm));
    int N = pc->nnodes, k = my_k(pc), rc = MPI_SUCCESS;
    if (k == 0)
        return failed(pc, psend(pc, in, n, t, 1));
    rc = precv(pc, out, n, t, k - 1); /* leaders 0..k-1 */
    if (rc == MPI_SUCCESS && k + 1 < N) {
        size_t bytes = span_of(n, t);
        char *tmp = lead_alloc(bytes);
        memcpy(tmp, in, bytes);
        rc = PMPI_Reduce_local(out, tmp, n, t, op); /* leaders 0..k */
        if (rc == MPI_SUCCESS)
            rc = psend(pc, tmp, n, t, k + 1);
        free(tmp);
    }
    return failed(pc, rc);
}

/* Requests of one leaders' call, all started: their completion, then the first error. */
static int wait_all(const pmpi_comm_t *pc, int nq, MPI_Request *q)
{
    int rc = MPI_SUCCESS;
    for (int i = 0; i < nq; i++) {
        int r = PMPI_AWAY(PMPI_Wait(&q[i], MPI_STATUS_IGNORE));
        rc = rc == MPI_SUCCESS ? r : rc;
    }
    return pc->lead_tag < 0 ? rc : failed(pc, rc);
}

/* The root's side of the leaders' Gatherv (gather: the blocks come into all) or Scatterv (they
 * leave it): a request per other leader's block (cnt[j] bytes at dsp[j]), its own moved between all
 * and mine (n bytes). */
static int root_side(const pmpi_comm_t *pc, int gather, char *all, const int *cnt, const int *dsp, char *mine, int n)
{
    int N = pc->nnodes, k = my_k(pc), nq = 0;
    MPI_Request *q = lead_alloc((size_t)N * sizeof(MPI_Request));
    for (int j = 0; j < N; j++)
        if (j != k && gather)
            pc_lead_irecv(pc, all + dsp[j], cnt[j], MPI_BYTE, j, &q[nq++]);
        else if (j != k)
            pc_lead_isend(pc, all + dsp[j], cnt[j], MPI_BYTE, j, &q[nq++]);
    size_t own = (size_t)(n < cnt[k] ? n : cnt[k]);
    memmove(gather ? all + dsp[k] : mine, gather ? mine : all + dsp[k], own);
    int rc = wait_all(pc, nq, q);
    free(q);
    return rc;
}

int pc_lead_gatherv(const pmpi_comm_t *pc, const void *sb, int sn, void *rb, const int *cnt, const int *dsp,
                    int lroot)
{
    counted(pc);
    if (pc->lead_tag < 0)
        return PMPI_AWAY(PMPI_Gatherv(sb, sn, MPI_BYTE, rb, cnt, dsp, MPI_BYTE, lroot, pc->leaders_comm));
    if (my_k(pc) != lroot)
        return failed(pc, psend(pc, sb, sn, MPI_BYTE, lroot));
    return root_side(pc, 1, rb, cnt, dsp, (char *)(uintptr_t)sb, sn);
}

int pc_lead_scatterv(const pmpi_comm_t *pc, const void *sb, const int *cnt, const int *dsp, void *rb, int rn,
                     int lroot)
{
    counted(pc);
    if (pc->lead_tag < 0)
        return PMPI_AWAY(PMPI_Scatterv(sb, cnt, dsp, MPI_BYTE, rb, rn, MPI_BYTE, lroot, pc->leaders_comm));
    if (my_k(pc) != lroot)
        return failed(pc, precv(pc, rb, rn, MPI_BYTE, lroot));
    return root_side(pc, 0, (char *)(uintptr_t)sb, cnt, dsp, rb, rn);
}

int pc_lead_allgatherv(const pmpi_comm_t *pc, void *all, const int *cnt, const int *dsp)
{
    counted(pc);
    if (pc->lead_tag < 0)
        return PMPI_AWAY(PMPI_Allgatherv(MPI_IN_PLACE, 0, MPI_BYTE, all, cnt, dsp, MPI_BYTE, pc->leaders_comm));
    /* A ring: at step s each leader passes on the block it got at step s - 1 (its own first). */
    int N = pc->nnodes, k = my_k(pc), rc = MPI_SUCCESS;
    char *a = all;
    for (int s = 0; s < N - 1 && rc == MPI_SUCCESS; s++) {
        int out = (k - s + N) % N, in = (k - s - 1 + N) % N;
        rc = pswap(pc, a + dsp[out], cnt[out], (k + 1) % N, a + dsp[in], cnt[in], (k - 1 + N) % N, MPI_BYTE);
    }
    return failed(pc, rc);
}

int pc_lead_alltoallv(const pmpi_comm_t *pc, const void *sb, const int *sc, const int *sd, void *rb, const int *rcnt,
                      const int *rd)
{
    counted(pc);
    if (pc->lead_tag < 0)
        return PMPI_AWAY(PMPI_Alltoallv(sb, sc, sd, MPI_BYTE, rb, rcnt, rd, MPI_BYTE, pc->leaders_comm));
    int N = pc->nnodes, k = my_k(pc), nq = 0;
    MPI_Request *q = lead_alloc(2 * (size_t)N * sizeof(MPI_Request));
    for (int j = 0; j < N; j++)
        if (j != k)
            pc_lead_irecv(pc, (char *)rb + rd[j], rcnt[j], MPI_BYTE, j, &q[nq++]);
    for (int j = 0; j < N; j++)
        if (j != k)
            pc_lead_isend(pc, (const char *)sb + sd[j], sc[j], MPI_BYTE, j, &q[nq++]);
    memmove((char *)rb + rd[k], (const char *)sb + sd[k], (size_t)(sc[k] < rcnt[k] ? sc[k] : rcnt[k]));
    int rc = wait_all(pc, nq, q);
    free(q);
    return rc;
}

int pc_lead_irecv(const pmpi_comm_t *pc, void *b, int n, MPI_Datatype t, int k, MPI_Request *q)
{
    if (pc->lead_tag < 0)
        return PMPI_Irecv(b, n, t, k, PC_LEAD_TAG, pc->leaders_comm, q);
    return PMPI_Irecv(b, n, t, leader_of(pc, k), pc->lead_tag, pmpi_layer.lead_world, q);
}

int pc_lead_isend(const pmpi_comm_t *pc, const void *b, int n, MPI_Datatype t, int k, MPI_Request *q)
{
    if (pc->lead_tag < 0)
        return PMPI_Isend(b, n, t, k, PC_LEAD_TAG, pc->leaders_comm, q);
    return PMPI_Isend(b, n, t, leader_of(pc, k), pc->lead_tag, pmpi_layer.lead_world, q);
}

int pc_lead_waitall(const pmpi_comm_t *pc, int nq, MPI_Request *q)
{
    counted(pc);
    return wait_all(pc, nq, q);
}

int pc_lead_to_root(const pmpi_comm_t *pc, void *buf, int n, MPI_Datatype t, int root)
{
    int me = pc->rank;
    if (me == pc->leader)
        counted(pc);
    if (pc->lead_tag < 0)
        return me == pc->leader ? PMPI_AWAY(PMPI_Send(buf, n, t, pmpi_comm_node_rank(pc, root), 1, pc->node_comm))
                                : PMPI_AWAY(PMPI_Recv(buf, n, t, 0, 1, pc->node_comm, MPI_STATUS_IGNORE));
    int rc = me == pc->leader
                 ? PMPI_AWAY(PMPI_Send(buf, n, t, pc->world[root], pc->lead_tag, pmpi_layer.lead_world))
                 : PMPI_AWAY(PMPI_Recv(buf, n, t, pc->world[pc->leader], pc->lead_tag, pmpi_layer.lead_world,
                                       MPI_STATUS_IGNORE));
    return failed(pc, rc);
}

/* ---- the nonblocking collectives' leaders' phase over point-to-point --------------------------- */

/* The same algorithms as a state machine: each step posts a round of messages (or ends it), the
 * next runs once they are complete; between rounds, the local work (a fold, a copy). */
struct pc_lead_nb {
    const pmpi_comm_t *pc;
    pc_lead_nb_args_t a;
    int N, k, tag;
    int stage, sub;  /* where the kind's steps are; sub: the broadcast's, inside an allreduce */
    int mask, peer;  /* the loops' bit, the partner of a recursive doubling's round */
    int fold;        /* the round brought a partial to combine */
    int n;           /* elements of a reduction (REDUCE_SCATTER: all the leaders' pieces) */
    int err;
    size_t bytes;    /* their span */
    char *acc, *tmp;
    int nq;
    MPI_Request q[];
};

static void nb_post(pc_lead_nb_t *s, int send, const void *b, int n, MPI_Datatype t, int k)
{
    if (s->err)
        return;
    int to = leader_of(s->pc, k), rc = send ? PMPI_Isend(b, n, t, to, s->tag, pmpi_layer.lead_world, &s->q[s->nq])
                                            : PMPI_Irecv((void *)(uintptr_t)b, n, t, to, s->tag, pmpi_layer.lead_world,
                                                         &s->q[s->nq]);
    if (rc == MPI_SUCCESS)
        s->nq++;
    else
        s->err = rc;
}

static void nb_fold(pc_lead_nb_t *s, const void *in, void *inout)
{
    int rc = PMPI_Reduce_local(in, inout, s->n, s->a.dt, s->a.op);
    if (rc != MPI_SUCCESS && !s->err)
        s->err = rc;
}

/* reduce0's steps: 1 once leader 0's acc holds the whole reduction (the others' is spent). */
static int nb_reduce0(pc_lead_nb_t *s)
{
    if (s->fold) { /* acc: leaders k..k+mask-1, tmp the next block: tmp = acc op tmp */
        nb_fold(s, s->acc, s->tmp);
        char *x = s->acc;
        s->acc = s->tmp;
        s->tmp = x;
        s->fold = 0;
        s->mask <<= 1;
    }
    for (; s->mask < s->N; s->mask <<= 1) {
        if (s->k & s->mask) {
            nb_post(s, 1, s->acc, s->n, s->a.dt, s->k - s->mask);
            s->mask = s->N;
            return 0;
        }
        if (s->k + s->mask < s->N) {
            nb_post(s, 0, s->tmp, s->n, s->a.dt, s->k + s->mask);
            s->fold = 1;
            return 0;
        }
    }
    return 1;
}

/* A binomial broadcast's steps (n elements of t from leader root): the receive, then every send. */
static int nb_bcast(pc_lead_nb_t *s, void *buf, int n, MPI_Datatype t, int root)
{
    int N = s->N, v = (s->k - root + N) % N, m = 1;
    switch (s->sub) {
    case 0:
        while (m < N && !(v & m))
            m <<= 1;
        s->mask = m;
        s->sub = 1;
        if (v) {
            nb_post(s, 0, buf, n, t, (v - m + root) % N);
            return 0;
        }
        /* fall through */
    case 1:
        for (m = s->mask >> 1; m > 0; m >>= 1)
            if (v + m < N)
                nb_post(s, 1, buf, n, t, (v + m + root) % N);
        s->sub = 2;
        return s->nq == 0;
    default: return 1;
    }
}

/* Recursive doubling's steps (a power-of-two number of leaders), in place in buf. */
static int nb_doubling(pc_lead_nb_t *s)
{
    char *buf = s->a.buf;
    if (s->fold) {
        if (s->peer < s->k) { /* buf = tmp op buf */
            nb_fold(s, s->tmp, buf);
        } else { /* buf = buf op tmp */
            nb_fold(s, buf, s->tmp);
            memcpy(buf, s->tmp, s->bytes);
        }
        s->fold = 0;
    }
    if (s->mask >= s->N)
        return 1;
    s->peer = s->k ^ s->mask;
    nb_post(s, 1, buf, s->n, s->a.dt, s->peer);
    nb_post(s, 0, s->tmp, s->n, s->a.dt, s->peer);
    s->fold = 1;
    s->mask <<= 1;
    return 0;
}

/* One message per other leader (all posted at once): receives of cnt[j] bytes at rb + rd[j] when
 * rb, sends from sb + sd[j] when sb. */
static void nb_pairwise(pc_lead_nb_t *s, const char *sb, const int *sc, const int *sd, char *rb, const int *rc,
                        const int *rd)
{
    for (int j = 0; j < s->N; j++)
        if (j != s->k && rb)
            nb_post(s, 0, rb + rd[j], rc[j], MPI_BYTE, j);
    for (int j = 0; j < s->N; j++)
        if (j != s->k && sb)
            nb_post(s, 1, sb + sd[j], sc[j], MPI_BYTE, j);
}

/* The kind's next round: 0 once posted, 1 when nothing is left. */
static int nb_step(pc_lead_nb_t *s)
{
    const pc_lead_nb_args_t *a = &s->a;
    int N = s->N, k = s->k;
    char *buf = a->buf;
    switch (a->kind) {
    case COLL_NB_BARRIER: /* dissemination */
        if (s->mask >= N)
            return 1;
        nb_post(s, 1, NULL, 0, MPI_BYTE, (k + s->mask) % N);
        nb_post(s, 0, NULL, 0, MPI_BYTE, (k - s->mask + N) % N);
        s->mask <<= 1;
        return 0;
    case COLL_NB_BCAST: return nb_bcast(s, buf, a->count, a->dt, a->root);
    case COLL_NB_ALLREDUCE:
        if (!(N & (N - 1)))
            return nb_doubling(s);
        if (s->stage == 0) {
            if (!nb_reduce0(s))
                return 0;
            if (k == 0)
                memcpy(buf, s->acc, s->bytes);
            s->stage = 1;
        }
        return nb_bcast(s, buf, s->n, a->dt, 0);
    case COLL_NB_REDUCE:
    case COLL_NB_REDUCE_SCATTER:
        if (s->stage == 0) {
            if (!nb_reduce0(s))
                return 0;
            s->stage = 1;
            size_t ext = span_of(1, a->dt), off = 0;
            if (a->kind == COLL_NB_REDUCE_SCATTER) { /* leader 0 hands out the pieces */
                for (int j = 0; j < N; off += (size_t)a->cnt[j] * ext, j++)
                    if (k == 0 && j == 0)
                        memcpy(buf, s->acc, (size_t)a->cnt[0] * ext);
                    else if (k == 0)
                        nb_post(s, 1, s->acc + off, a->cnt[j], a->dt, j);
                    else if (k == j)
                        nb_post(s, 0, buf, a->cnt[j], a->dt, 0);
            } else if (a->root == 0 && k == 0) {
                memcpy(buf, s->acc, s->bytes);
            } else if (k == 0 && a->root != 0) {
                nb_post(s, 1, s->acc, s->n, a->dt, a->root);
            } else if (k == a->root) {
                nb_post(s, 0, buf, s->n, a->dt, 0);
            }
            return s->nq == 0;
        }
        return 1;
    case COLL_NB_EXSCAN: /* a chain */
        if (s->stage == 0) {
            s->stage = k == 0 ? 2 : 1;
            nb_post(s, k != 0 ? 0 : 1, k == 0 ? buf : a->out, a->count, a->dt, k == 0 ? 1 : k - 1);
            return 0;
        }
        if (s->stage == 1 && k + 1 < N) { /* the earlier leaders' op mine, on */
            memcpy(s->tmp, buf, s->bytes);
            nb_fold(s, a->out, s->tmp);
            nb_post(s, 1, s->tmp, a->count, a->dt, k + 1);
            s->stage = 2;
            return 0;
        }
        return 1;
    case COLL_NB_ALLGATHER:
    case COLL_NB_GATHER:
    case COLL_NB_SCATTER:
    case COLL_NB_ALLTOALL:
    case COLL_NB_ALLTOALLV:
        if (s->stage)
            return 1;
        s->stage = 1;
        if (a->kind == COLL_NB_ALLGATHER) { /* in place: my block to each, theirs into place */
            nb_pairwise(s, NULL, NULL, NULL, buf, a->cnt, a->dsp);
            for (int j = 0; j < N; j++)
                if (j != k)
                    nb_post(s, 1, buf + a->dsp[k], a->cnt[k], MPI_BYTE, j);
        } else if (a->kind == COLL_NB_ALLTOALLV) { /* (my own block too, to myself) */
            for (int j = 0; j < N; j++)
                if (a->rcnt[j])
                    nb_post(s, 0, (char *)a->out + a->rdsp[j], a->rcnt[j], a->rt[j], j);
            for (int j = 0; j < N; j++)
                if (a->cnt[j])
                    nb_post(s, 1, buf + a->dsp[j], a->cnt[j], a->st[j], j);
        } else if (a->kind == COLL_NB_ALLTOALL) {
            nb_pairwise(s, buf, a->cnt, a->dsp, a->out, a->rcnt, a->rdsp);
            int own = a->cnt[k] < a->rcnt[k] ? a->cnt[k] : a->rcnt[k];
            if (own > 0)
                memmove((char *)a->out + a->rdsp[k], buf + a->dsp[k], (size_t)own);
        } else if (k != a->root) {
            nb_post(s, a->kind == COLL_NB_GATHER, buf, a->count, MPI_BYTE, a->root);
        } else {
            int gather = a->kind == COLL_NB_GATHER;
            nb_pairwise(s, gather ? NULL : buf, a->cnt, a->dsp, gather ? buf : NULL, a->cnt, a->dsp);
        }
        return s->nq == 0;
    default: return 1;
    }
}

int pc_lead_nb_start(const pmpi_comm_t *pc, const pc_lead_nb_args_t *a, pc_lead_nb_t **s_p)
{
    int N = pc->nnodes;
    pc_lead_nb_t *s = lead_alloc(sizeof *s + 2 * (size_t)N * sizeof(MPI_Request));
    *s = (pc_lead_nb_t){.pc = pc, .a = *a, .N = N, .k = my_k(pc), .tag = a->tag ? a->tag : pc->lead_tag + 1, .mask = 1};
    counted(pc);
    int typed = a->kind == COLL_NB_REDUCE || a->kind == COLL_NB_ALLREDUCE || a->kind == COLL_NB_EXSCAN ||
                a->kind == COLL_NB_REDUCE_SCATTER;
    if (typed) {
        long long n = a->count;
        if (a->kind == COLL_NB_REDUCE_SCATTER)
            for (int j = n = 0; j < N; j++)
                n += a->cnt[j];
        if (n > INT_MAX) {
            free(s);
            return MPI_ERR_COUNT;
        }
        s->n = (int)n;
        s->bytes = span_of(s->n, a->dt);
        s->tmp = lead_alloc(s->bytes);
        if (a->kind != COLL_NB_EXSCAN && (a->kind != COLL_NB_ALLREDUCE || (N & (N - 1)))) {
            s->acc = lead_alloc(s->bytes); /* reduce0's: my input first */
            memcpy(s->acc, a->buf, s->bytes);
        }
    }
    *s_p = s;
    return MPI_SUCCESS;
}

static void nb_end(pc_lead_nb_t *s)
{
    for (int i = 0; i < s->nq; i++)
        if (s->q[i] != MPI_REQUEST_NULL)
            PMPI_Request_free(&s->q[i]);
    free(s->acc);
    free(s->tmp);
    free(s);
}

int pc_lead_nb_test(pc_lead_nb_t *s, int *err_p)
{
    for (;;) {
        if (s->nq) { /* (completed ones become MPI_REQUEST_NULL, which tests as complete) */
            int all = 1;
            for (int i = 0; i < s->nq && !s->err; i++) {
                int flag = 0, rc = PMPI_Test(&s->q[i], &flag, MPI_STATUS_IGNORE);
                if (rc != MPI_SUCCESS)
                    s->err = rc;
                all &= flag;
            }
            if (!all && !s->err)
                return 0;
            if (!s->err)
                s->nq = 0;
        }
        if (s->err || nb_step(s))
            break;
    }
    *err_p = s->err;
    if (s->err)
        pmpi_comm_lead_error(s->pc, s->err);
    nb_end(s);
    return 1;
}
