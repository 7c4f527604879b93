/* p2p_wait: MPI_Test, MPI_Wait and their all/any/some forms over arrays that mix bobcat's requests
 * with the real MPI's, MPI_Request_free, MPI_Request_get_status, MPI_Cancel and MPI_Buffer_detach.
 * A bobcat request never reaches PMPI_*; real ones are handed to PMPI_* in sub-arrays, so the real
 * MPI keeps its own rules (inactive persistent requests, MPI_REQUEST_NULL). A wait that holds only
 * real requests blocks in the real MPI only when bobcat has nothing that needs this rank's
 * progress (posted receives, orphans, off-node queue); else it polls both. */
#include "p2p.h"

#include <stdlib.h>
#include <string.h>

static void retire(p2p_req_t *r, MPI_Request *h)
{
    if (r->kind == P2P_K_PERSIST) {
        r->active = 0;
        r->st_valid = 0;
        return;
    }
    p2p_req_release(r);
    *h = MPI_REQUEST_NULL;
}

static int err_through(MPI_Comm comm, int err)
{
    if (err != MPI_SUCCESS && comm != MPI_COMM_NULL)
        PMPI_Comm_call_errhandler(comm, err);
    return err;
}

static MPI_Comm req_comm(p2p_req_t *r) { return r->comm; }

/* A multiple-completion call some of whose requests failed: the first failing request's
 * communicator's handler, and MPI_ERR_IN_STATUS (the statuses say which). */
static int in_status(MPI_Comm errcomm)
{
    if (errcomm != MPI_COMM_NULL)
        PMPI_Comm_call_errhandler(errcomm, MPI_ERR_IN_STATUS);
    return MPI_ERR_IN_STATUS;
}

/* ---- the family ---- */

static inline int has_mine(int n, const MPI_Request *reqs)
{
    for (int i = 0; i < n; i++)
        if (p2p_req_of(reqs[i]))
            return 1;
    return 0;
}

/* Quick: a request of another room that can look at itself alone (a nonblocking collective on the
 * node, p2p.h), or the one a persistent request started, is polled directly, up to `polls` times,
 * before the full progress pass. Once it completes there, the call returns without that pass: the
 * time from the peers' last word to the return is the room's own test (docs/benchmarks.md,
 * "Nonblocking collectives"). The full pass still runs on every eighth such call and whenever the
 * request is not complete within those polls, so nothing else waits on it for long. */
static int quick(p2p_req_t *r, unsigned polls)
{
    static unsigned calls;
    if (r->kind == P2P_K_PERSIST) /* (a persistent collective: its started call) */
        r = r->active && !r->st_valid ? p2p_req_of(r->inner) : NULL;
    if (!r || r->kind != P2P_K_EXT || !r->ext_ops->poll || (++calls & 7) == 0)
        return 0;
    for (unsigned i = 0;; i++) {
        int done = r->ext_ops->poll(r);
        if (done)
            return done > 0; /* (-1: only the full pass moves it: no use polling) */
        if (i + 1 >= polls)
            return 0;
        util_poll_pause();
    }
}

BOBCAT_EXPORT int MPI_Test(MPI_Request *req, int *flag, MPI_Status *st)
{
    PMPI_GUARD();
    p2p_req_t *r = p2p_req_of(*req);
    if (!r) {
        if (p2p_need_progress())
            p2p_progress();
        return PMPI_Test(req, flag, st);
    }
    int err;
    if (!quick(r, 1))
        p2p_progress();
    *flag = p2p_req_test(r, st, &err);
    if (*flag) {
        MPI_Comm comm = req_comm(r);
        retire(r, req);
        return err_through(comm, err);
    }
    p2p_poke_mpi();
    return MPI_SUCCESS;
}

BOBCAT_EXPORT int MPI_Wait(MPI_Request *req, MPI_Status *st)
{
    PMPI_GUARD();
    p2p_req_t *r = p2p_req_of(*req);
    if (!r) {
        if (!p2p_need_progress() || *req == MPI_REQUEST_NULL)
            return PMPI_AWAY(PMPI_Wait(req, st));
        unsigned spins = 0;
        for (;;) {
            int flag = 0, rc = PMPI_Test(req, &flag, st);
            if (flag || rc != MPI_SUCCESS)
                return rc;
            p2p_progress();
            p2p_relax(&spins);
        }
    }
    unsigned spins = 0;
    int err, ready = quick(r, pmpi_layer.spin > 0 ? (unsigned)pmpi_layer.spin : 16);
    for (;;) {
        if (!ready)
            p2p_progress();
        ready = 0;
        if (p2p_req_test(r, st, &err))
            break;
        p2p_poke_mpi();
        p2p_relax(&spins);
    }
    MPI_Comm comm = req_comm(r);
    retire(r, req);
    return err_through(comm, err);
}

BOBCAT_EXPORT int MPI_Request_get_status(MPI_Request req, int *flag, MPI_Status *st)
{
    PMPI_GUARD();
    if (req == MPI_REQUEST_NULL) {
        /* MPI 4.0 3.7.3: flag true and an empty status, MPI_ERROR = MPI_SUCCESS included (Open MPI
         * 4.1 leaves MPI_ERROR as it was; MPICH's test suite, rqstatus, checks it). */
        *flag = 1;
        p2p_status_empty(st);
        return MPI_SUCCESS;
    }
    p2p_req_t *r = p2p_req_of(req);
    if (!r)
        return PMPI_Request_get_status(req, flag, st);
    int err;
    p2p_progress();
    *flag = p2p_req_test(r, st, &err);
    return MPI_SUCCESS;
}

BOBCAT_EXPORT int MPI_Request_free(MPI_Request *req)
{
    PMPI_GUARD();
    p2p_req_t *r = p2p_req_of(*req);
    if (!r)
        return PMPI_Request_free(req);
    int err;
    p2p_progress();
    if (r->kind == P2P_K_PERSIST) {
        if (r->active && r->inner != MPI_REQUEST_NULL) {
            p2p_req_t *in = p2p_req_of(r->inner);
            if (in) {
                if (p2p_req_test(in, MPI_STATUS_IGNORE, &err))
                    p2p_req_release(in);
                else
                    p2p_orphan(in);
            } else {
                PMPI_Request_free(&r->inner);
            }
        }
        p2p_req_release(r);
    } else if (p2p_req_test(r, MPI_STATUS_IGNORE, &err)) {
        p2p_req_release(r);
    } else {
        p2p_orphan(r); /* it finishes on its own; progress releases it */
    }
    *req = MPI_REQUEST_NULL;
    return MPI_SUCCESS;
}

BOBCAT_EXPORT int MPI_Cancel(MPI_Request *req)
{
    PMPI_GUARD();
    p2p_req_t *r = p2p_req_of(*req);
    if (!r)
        return PMPI_Cancel(req);
    if (r->kind == P2P_K_PERSIST) {
        if (r->inner != MPI_REQUEST_NULL)
            return MPI_Cancel(&r->inner);
        return MPI_SUCCESS;
    }
    if (r->st_valid)
        return MPI_SUCCESS;
    if ((r->kind == P2P_K_RECV || r->kind == P2P_K_DEFER) && r->switched)
        return PMPI_Cancel(&r->real);
    if (r->kind == P2P_K_RECV) {
        bobcat_msg_progress();
        if (bobcat_msg_cancel(&r->m))
            p2p_offq_remove(r);
    } else if (r->kind == P2P_K_DEFER) {
        p2p_offq_remove(r);
        r->st_src = MPI_ANY_SOURCE;
        r->st_tag = MPI_ANY_TAG;
        r->st_bytes = 0;
        r->st_cancelled = 1;
        r->st_err = MPI_SUCCESS;
        r->st_valid = 1;
    }
    /* Sends are not cancelled: they complete normally (the standard allows either outcome). */
    return MPI_SUCCESS;
}

/* Split an array into bobcat's requests and a compact array of the real ones. */
typedef struct {
    int n, nreal;
    MPI_Request *real;   /* nreal handles */
    int *map;            /* real index -> caller index */
    MPI_Request stack_real[32];
    int stack_map[32];
} split_t;

static int split_init(split_t *s, int n, MPI_Request *reqs)
{
    s->n = n;
    s->nreal = 0;
    s->real = s->stack_real;
    s->map = s->stack_map;
    if (n > 32) {
        s->real = malloc(sizeof(MPI_Request) * (size_t)n);
        s->map = malloc(sizeof(int) * (size_t)n);
        if (!s->real || !s->map)
            return 0;
    }
    for (int i = 0; i < n; i++)
        if (!p2p_req_of(reqs[i])) {
            s->real[s->nreal] = reqs[i];
            s->map[s->nreal++] = i;
        }
    return 1;
}

static void split_writeback(split_t *s, MPI_Request *reqs)
{
    for (int k = 0; k < s->nreal; k++)
        reqs[s->map[k]] = s->real[k];
}

static void split_done(split_t *s)
{
    if (s->real != s->stack_real)
        free(s->real);
    if (s->map != s->stack_map)
        free(s->map);
}

static inline MPI_Status *st_at(MPI_Status *sts, int i)
{
    return sts == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &sts[i];
}

/* An active bobcat request (inactive persistent ones count as null in any/some). */
static inline int active_mine(p2p_req_t *r) { return r->kind != P2P_K_PERSIST || r->active; }

static int testall_impl(int n, MPI_Request *reqs, int *flag, MPI_Status *sts)
{
    p2p_progress();
    int err, nreal = 0, errs = 0;
    for (int i = 0; i < n; i++) {
        p2p_req_t *r = p2p_req_of(reqs[i]);
        if (!r) {
            nreal += reqs[i] != MPI_REQUEST_NULL;
            continue;
        }
        if (!p2p_req_test(r, MPI_STATUS_IGNORE, &err)) {
            *flag = 0;
            return MPI_SUCCESS;
        }
        errs |= err != MPI_SUCCESS;
    }
    if (!nreal && !errs) {
        /* Only bobcat's requests (and null ones), all complete and fine: one pass retires them (a
         * window of small messages). Null ones get the empty status PMPI_Testall gives them; the
         * MPI_ERROR fields stay as they are (no MPI_ERR_IN_STATUS). */
        for (int i = 0; i < n; i++) {
            p2p_req_t *r = p2p_req_of(reqs[i]);
            if (r) {
                p2p_req_test(r, st_at(sts, i), &err);
                retire(r, &reqs[i]);
            } else if (sts != MPI_STATUSES_IGNORE) {
                p2p_status_set(&sts[i], MPI_ANY_SOURCE, MPI_ANY_TAG, 0, 0);
            }
        }
        *flag = 1;
        return MPI_SUCCESS;
    }
    split_t s;
    if (!split_init(&s, n, reqs))
        return MPI_ERR_NO_MEM;
    MPI_Status *rst = NULL;
    if (sts != MPI_STATUSES_IGNORE && s.nreal)
        rst = malloc(sizeof(MPI_Status) * (size_t)s.nreal);
    int rc = MPI_SUCCESS, f = 1;
    if (s.nreal) {
        rc = PMPI_Testall(s.nreal, s.real, &f, rst ? rst : MPI_STATUSES_IGNORE);
        split_writeback(&s, reqs);
    }
    if (!f) {
        *flag = 0;
        free(rst);
        split_done(&s);
        return rc;
    }
    *flag = 1;
    /* MPI_ERROR fields change only when the call returns MPI_ERR_IN_STATUS; then all of them. */
    int any_err = rc == MPI_ERR_IN_STATUS;
    MPI_Comm errcomm = MPI_COMM_NULL;
    for (int i = 0; i < n; i++) {
        p2p_req_t *r = p2p_req_of(reqs[i]);
        if (r && p2p_req_test(r, MPI_STATUS_IGNORE, &err) && err != MPI_SUCCESS) {
            any_err = 1;
            if (errcomm == MPI_COMM_NULL)
                errcomm = req_comm(r);
        }
    }
    for (int k = 0; rst && k < s.nreal; k++) {
        int keep = sts[s.map[k]].MPI_ERROR;
        sts[s.map[k]] = rst[k];
        sts[s.map[k]].MPI_ERROR = !any_err ? keep : rc == MPI_ERR_IN_STATUS ? rst[k].MPI_ERROR : MPI_SUCCESS;
    }
    for (int i = 0; i < n; i++) {
        p2p_req_t *r = p2p_req_of(reqs[i]);
        if (!r)
            continue;
        p2p_req_test(r, st_at(sts, i), &err);
        if (any_err && sts != MPI_STATUSES_IGNORE)
            sts[i].MPI_ERROR = err;
        retire(r, &reqs[i]);
    }
    free(rst);
    split_done(&s);
    if (any_err)
        return in_status(errcomm);
    return rc;
}

BOBCAT_EXPORT int MPI_Testall(int n, MPI_Request reqs[], int *flag, MPI_Status sts[])
{
    PMPI_GUARD();
    if (!has_mine(n, reqs)) {
        if (p2p_need_progress())
            p2p_progress();
        return PMPI_Testall(n, reqs, flag, sts);
    }
    return testall_impl(n, reqs, flag, sts);
}

/* Waitall over bobcat's requests and null ones only (a window of on-node messages): one pass per
 * progress pass, from the first request not yet complete, retiring each as it completes. A wait,
 * unlike a test, may retire part of the array before the rest is done: the caller sees the array
 * only at the return. MPI_ERROR fields change only if some request failed (MPI_ERR_IN_STATUS), then
 * in every status: the requests retired before the first failure had none. */
static int waitall_mine(int n, MPI_Request *reqs, MPI_Status *sts)
{
    unsigned spins = 0;
    int i = 0, err, any_err = 0;
    MPI_Comm errcomm = MPI_COMM_NULL;
    for (;;) {
        p2p_progress();
        for (; i < n; i++) {
            p2p_req_t *r = p2p_req_of(reqs[i]);
            MPI_Status *st = st_at(sts, i);
            if (!r) {
                p2p_status_set(st, MPI_ANY_SOURCE, MPI_ANY_TAG, 0, 0); /* MPI_REQUEST_NULL */
                err = MPI_SUCCESS;
            } else if (p2p_req_test(r, st, &err)) {
                if (err != MPI_SUCCESS && !any_err) {
                    any_err = 1;
                    errcomm = req_comm(r);
                    for (int k = 0; k < i && sts != MPI_STATUSES_IGNORE; k++)
                        sts[k].MPI_ERROR = MPI_SUCCESS;
                }
                retire(r, &reqs[i]);
            } else {
                break;
            }
            if (any_err && st != MPI_STATUS_IGNORE)
                st->MPI_ERROR = err;
        }
        if (i == n)
            break;
        p2p_poke_mpi();
        p2p_relax(&spins);
    }
    if (any_err)
        return in_status(errcomm);
    return MPI_SUCCESS;
}

/* Waitall over both kinds: every request is tested on its own (the real ones with PMPI_Test) and
 * retired as it completes, until all are; a wait may retire part of the array before the rest.
 * Not PMPI_Testall over the real ones: MPICH 4.0's Testall (and Testsome) report MPI_ERR_IN_STATUS
 * and MPI_ERR_PENDING for persistent collective requests that are merely not complete yet, where its
 * own Waitall and Test are right. MPI_ERROR fields change only if some request failed. */
static int waitall_mixed(int n, MPI_Request *reqs, MPI_Status *sts)
{
    unsigned char stack_done[64], *done = n <= 64 ? stack_done : calloc((size_t)n, 1);
    int *errs = calloc((size_t)n, sizeof *errs);
    if (!done || !errs) {
        if (done != stack_done)
            free(done);
        free(errs);
        return MPI_ERR_NO_MEM;
    }
    if (done == stack_done)
        memset(done, 0, sizeof stack_done);
    unsigned spins = 0;
    int left = n, any_err = 0;
    MPI_Comm errcomm = MPI_COMM_NULL;
    while (left) {
        p2p_progress();
        for (int i = 0; i < n; i++) {
            if (done[i])
                continue;
            MPI_Status *st = st_at(sts, i);
            p2p_req_t *r = p2p_req_of(reqs[i]);
            int flag = 0, err = MPI_SUCCESS;
            if (r) {
                flag = p2p_req_test(r, st, &err);
                if (flag) {
                    if (err != MPI_SUCCESS && errcomm == MPI_COMM_NULL)
                        errcomm = req_comm(r);
                    retire(r, &reqs[i]);
                }
            } else if (reqs[i] == MPI_REQUEST_NULL) {
                p2p_status_set(st, MPI_ANY_SOURCE, MPI_ANY_TAG, 0, 0);
                flag = 1;
            } else {
                int keep = st != MPI_STATUS_IGNORE ? st->MPI_ERROR : MPI_SUCCESS;
                err = PMPI_Test(&reqs[i], &flag, st);
                if (st != MPI_STATUS_IGNORE)
                    st->MPI_ERROR = keep;
            }
            if (flag) {
                done[i] = 1;
                errs[i] = err;
                any_err |= err != MPI_SUCCESS;
                left--;
            }
        }
        if (left) {
            p2p_poke_mpi();
            p2p_relax(&spins);
        }
    }
    if (any_err && sts != MPI_STATUSES_IGNORE)
        for (int i = 0; i < n; i++)
            sts[i].MPI_ERROR = errs[i];
    if (done != stack_done)
        free(done);
    free(errs);
    return any_err ? in_status(errcomm) : MPI_SUCCESS;
}

BOBCAT_EXPORT int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status sts[])
{
    PMPI_GUARD();
    int mine = 0, real = 0;
    for (int i = 0; i < n; i++) {
        if (p2p_req_of(reqs[i]))
            mine = 1;
        else
            real |= reqs[i] != MPI_REQUEST_NULL;
    }
    if (!mine && !p2p_need_progress())
        return PMPI_AWAY(PMPI_Waitall(n, reqs, sts));
    if (mine && !real)
        return waitall_mine(n, reqs, sts);
    return waitall_mixed(n, reqs, sts);
}

/* Testany over both kinds: *idx = MPI_UNDEFINED with flag 1 when nothing is active. */
static int testany_impl(int n, MPI_Request *reqs, int *idx, int *flag, MPI_Status *st)
{
    p2p_progress();
    int err, active = 0, real = 0;
    for (int i = 0; i < n; i++) {
        p2p_req_t *r = p2p_req_of(reqs[i]);
        if (!r) {
            real |= reqs[i] != MPI_REQUEST_NULL;
            continue;
        }
        if (!active_mine(r))
            continue;
        active = 1;
        if (p2p_req_test(r, st, &err)) {
            MPI_Comm comm = req_comm(r);
            retire(r, &reqs[i]);
            *idx = i;
            *flag = 1;
            return err_through(comm, err);
        }
    }
    if (!real) {
        /* Only bobcat's requests (and nulls), none complete: no real MPI call to make (the
         * common case of a polling loop, e.g. HPCC RandomAccess's Testany per update). */
        *idx = MPI_UNDEFINED;
        *flag = !active;
        if (!active && st != MPI_STATUS_IGNORE)
            p2p_status_empty(st);
        return MPI_SUCCESS;
    }
    split_t s;
    if (!split_init(&s, n, reqs))
        return MPI_ERR_NO_MEM;
    int rc = MPI_SUCCESS, k = MPI_UNDEFINED, f = 1;
    if (s.nreal) {
        rc = PMPI_Testany(s.nreal, s.real, &k, &f, st);
        split_writeback(&s, reqs);
    }
    if (f && k != MPI_UNDEFINED) {
        *idx = s.map[k];
        *flag = 1;
    } else if (f && !active) {
        *idx = MPI_UNDEFINED;
        *flag = 1;
        if (st != MPI_STATUS_IGNORE)
            p2p_status_empty(st);
    } else {
        *idx = MPI_UNDEFINED;
        *flag = 0;
    }
    split_done(&s);
    return rc;
}

BOBCAT_EXPORT int MPI_Testany(int n, MPI_Request reqs[], int *idx, int *flag, MPI_Status *st)
{
    PMPI_GUARD();
    if (!has_mine(n, reqs)) {
        if (p2p_need_progress())
            p2p_progress();
        return PMPI_Testany(n, reqs, idx, flag, st);
    }
    return testany_impl(n, reqs, idx, flag, st);
}

BOBCAT_EXPORT int MPI_Waitany(int n, MPI_Request reqs[], int *idx, MPI_Status *st)
{
    PMPI_GUARD();
    if (!has_mine(n, reqs) && !p2p_need_progress())
        return PMPI_AWAY(PMPI_Waitany(n, reqs, idx, st));
    unsigned spins = 0;
    for (;;) {
        int flag = 0, rc = testany_impl(n, reqs, idx, &flag, st);
        if (flag || rc != MPI_SUCCESS)
            return rc;
        p2p_poke_mpi();
        p2p_relax(&spins);
    }
}

static int testsome_impl(int n, MPI_Request *reqs, int *outcount, int *idxs, MPI_Status *sts)
{
    p2p_progress();
    int err, active = 0, out = 0, any_err = 0;
    MPI_Comm errcomm = MPI_COMM_NULL;
    int errs_stack[32], *errs = n > 32 ? malloc(sizeof(int) * (size_t)n) : errs_stack; /* per output slot */
    int keeps_stack[32], *keeps = n > 32 ? malloc(sizeof(int) * (size_t)n) : keeps_stack;
    if (!errs || !keeps) {
        if (errs != errs_stack)
            free(errs);
        if (keeps != keeps_stack)
            free(keeps);
        return MPI_ERR_NO_MEM;
    }
    for (int i = 0; i < n; i++) {
        p2p_req_t *r = p2p_req_of(reqs[i]);
        if (!r || !active_mine(r))
            continue;
        active = 1;
        if (p2p_req_test(r, st_at(sts, out), &err)) {
            errs[out] = err;
            if (err != MPI_SUCCESS) {
                any_err = 1;
                if (errcomm == MPI_COMM_NULL)
                    errcomm = req_comm(r);
            }
            retire(r, &reqs[i]);
            idxs[out++] = i;
        }
    }
    split_t s;
    if (!split_init(&s, n, reqs)) {
        if (errs != errs_stack)
            free(errs);
        if (keeps != keeps_stack)
            free(keeps);
        return MPI_ERR_NO_MEM;
    }
    int rc = MPI_SUCCESS, k = 0;
    if (s.nreal) {
        int *ridx = malloc(sizeof(int) * (size_t)s.nreal);
        MPI_Status *rst = sts == MPI_STATUSES_IGNORE ? MPI_STATUSES_IGNORE : malloc(sizeof(MPI_Status) * (size_t)s.nreal);
        rc = PMPI_Testsome(s.nreal, s.real, &k, ridx, rst);
        split_writeback(&s, reqs);
        if (k == MPI_UNDEFINED) {
            k = 0;
        } else {
            active = 1;
        }
        for (int j = 0; j < k; j++) {
            idxs[out] = s.map[ridx[j]];
            errs[out] = rc == MPI_ERR_IN_STATUS ? MPI_ERR_IN_STATUS : MPI_SUCCESS; /* marks "real" */
            if (sts != MPI_STATUSES_IGNORE) {
                keeps[out] = sts[out].MPI_ERROR;
                sts[out] = rst[j];
                if (rc != MPI_ERR_IN_STATUS)
                    sts[out].MPI_ERROR = keeps[out];
            }
            out++;
        }
        if (rc == MPI_ERR_IN_STATUS)
            any_err = 1;
        free(ridx);
        if (rst != MPI_STATUSES_IGNORE)
            free(rst);
    }
    split_done(&s);
    *outcount = active ? out : MPI_UNDEFINED;
    if (any_err && sts != MPI_STATUSES_IGNORE)
        for (int j = 0; j < out; j++) {
            if (errs[j] != MPI_ERR_IN_STATUS) /* bobcat's, or real ones when the real call succeeded */
                sts[j].MPI_ERROR = errs[j];
        }
    if (errs != errs_stack)
        free(errs);
    if (keeps != keeps_stack)
        free(keeps);
    if (any_err)
        return in_status(errcomm);
    return rc;
}

BOBCAT_EXPORT int MPI_Testsome(int n, MPI_Request reqs[], int *outcount, int idxs[], MPI_Status sts[])
{
    PMPI_GUARD();
    if (!has_mine(n, reqs)) {
        if (p2p_need_progress())
            p2p_progress();
        return PMPI_Testsome(n, reqs, outcount, idxs, sts);
    }
    return testsome_impl(n, reqs, outcount, idxs, sts);
}

BOBCAT_EXPORT int MPI_Waitsome(int n, MPI_Request reqs[], int *outcount, int idxs[], MPI_Status sts[])
{
    PMPI_GUARD();
    if (!has_mine(n, reqs) && !p2p_need_progress())
        return PMPI_AWAY(PMPI_Waitsome(n, reqs, outcount, idxs, sts));
    unsigned spins = 0;
    for (;;) {
        int rc = testsome_impl(n, reqs, outcount, idxs, sts);
        if (*outcount != 0 || (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS))
            return rc;
        p2p_poke_mpi();
        p2p_relax(&spins);
    }
}

BOBCAT_EXPORT int MPI_Buffer_detach(void *buffer_addr, int *size)
{
    PMPI_GUARD();
    unsigned spins = 0;
    while (p2p_orphans_pending()) { /* buffered sends still on their way */
        p2p_progress();
        p2p_relax(&spins);
    }
    return PMPI_Buffer_detach(buffer_addr, size);
}
