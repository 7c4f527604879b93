/* pmpi_request: bobcat's request handles and the Test/Wait family over arrays that mix them with
 * the real MPI's. A bobcat request never reaches PMPI_*; real ones are handed to PMPI_* in
 * sub-arrays, so the real MPI keeps its own rules (inactive persistent requests, MPI_REQUEST_NULL).
 * A wait that holds only real requests blocks in the real MPI only when bobcat has nothing that
 * needs this rank's progress (posted receives, orphans, off-node queue); else it polls both. */
#include "pmpi_p2p.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BOBCAT_EXPORT __attribute__((visibility("default")))
#define REQ_MAGIC 0xB0BCA7B0BCA7B0BCull /* non-canonical: never an Open MPI object's class pointer */
#define CHUNK 4096
#define MAXCHUNKS 256                 /* 1 Mi live requests: the 20 index bits of MPICH handles */
#define MPICH_TAG 0x0BC00000

static p2p_req_t *chunks[MAXCHUNKS];
static int nchunks;
static int hwm; /* 1 + the highest index ever handed out: p2p_req_pin_comm scans below it */
static p2p_req_t *freelist;
P2P_HIDDEN p2p_req_t *p2p_orphans; /* freed by the user while active, or internal (Bsend): reaped by progress */

P2P_HIDDEN p2p_req_t *p2p_req_new(void)
{
    if (!freelist) {
        if (nchunks == MAXCHUNKS)
            return NULL;
        /* Requests must sit in the segment: receivers store into their `done` words. */
        p2p_req_t *c = bobcat_msg_alloc_shared(sizeof(p2p_req_t) * CHUNK);
        if (!c)
            return NULL;
        for (int i = CHUNK - 1; i >= 0; i--) {
            c[i].idx = nchunks * CHUNK + i;
            c[i].fnext = freelist;
            freelist = &c[i];
        }
        chunks[nchunks++] = c;
    }
    p2p_req_t *r = freelist;
    freelist = r->fnext;
    if (r->idx >= hwm)
        hwm = r->idx + 1;
    /* Field by field, not memset: a receive window allocates one request per message, and clearing
     * the whole ~300-byte request (a `rep stos`) was a tenth of a message-rate receiver's time. The
     * engine part is set by bobcat_msg_send/recv/mrecv; only the words read before that are here. */
    r->magic = REQ_MAGIC;
    r->m.kind = 0;
    r->m.complete = 0;
    r->m.posted = 0;
    r->m.waits_done = 0;
    r->m.cancelled = 0;
    r->m.truncated = 0;
    r->m.ticket = NULL;
    r->kind = 0;
    r->persistent = 0;
    r->active = 1;
    r->freed = 0;
    r->mode = 0;
    r->buf = NULL;
    r->count = 0;
    r->type = (MPI_Datatype)0;
    r->type_owned = 0;
    r->peer = 0;
    r->tag = 0;
    r->comm = (MPI_Comm)0;
    r->c = NULL;
    r->pack = NULL;
    r->real = MPI_REQUEST_NULL;
    r->inner = MPI_REQUEST_NULL;
    r->switched = 0;
    r->polls = 0;
    r->done_err = 0;
    r->st_src = r->st_tag = r->st_err = r->st_cancelled = 0;
    r->st_bytes = 0;
    r->st_valid = 0;
    r->onext = r->oprev = NULL;
    r->fnext = NULL;
    r->permanent = 0;
    return r;
}

P2P_HIDDEN p2p_req_t *p2p_req_done(void)
{
    static p2p_req_t *done;
    if (!done) {
        done = p2p_req_new();
        if (!done) {
            fprintf(stderr, "bobcat: out of memory for the first request\n");
            abort();
        }
        done->kind = P2P_K_NULL;
        done->mode = 0; /* a send: the status says MPI_ANY_SOURCE / MPI_ANY_TAG, 0 bytes */
        done->comm = MPI_COMM_NULL;
        done->permanent = 1;
    }
    return done;
}

P2P_HIDDEN int p2p_req_hold_type(p2p_req_t *r, MPI_Datatype dt)
{
    if (r->type_owned)
        return MPI_SUCCESS;
    r->type = pmpi_dt_hold(dt);
    if (r->type == MPI_DATATYPE_NULL) {
        r->type = dt;
        return MPI_ERR_TYPE;
    }
    r->type_owned = r->type != dt;
    return MPI_SUCCESS;
}

P2P_HIDDEN int p2p_req_pin_comm(p2p_comm_t *c)
{
    for (int i = 0; i < hwm; i++) {
        p2p_req_t *r = &chunks[i / CHUNK][i % CHUNK];
        if (r->magic == REQ_MAGIC && !r->permanent && !r->c && r->comm == c->comm) {
            r->c = c;
            c->refs++;
        }
    }
    return c->refs;
}

P2P_HIDDEN void p2p_req_release(p2p_req_t *r)
{
    if (r->permanent)
        return;
    if (r->pack) {
        free(r->pack);
        r->pack = NULL;
    }
    if (__builtin_expect(r->type_owned, 0)) {
        pmpi_dt_free(&r->type);
        r->type_owned = 0;
    }
    if (r->c) {
        p2p_comm_unref(r->c);
        r->c = NULL;
    }
    r->magic = 0;
    r->fnext = freelist;
    freelist = r;
}

#if defined(OPEN_MPI)
P2P_HIDDEN p2p_req_t *p2p_req_of(MPI_Request h)
{
    if (h == MPI_REQUEST_NULL || h == NULL)
        return NULL;
    p2p_req_t *r = (p2p_req_t *)(void *)h;
    return r->magic == REQ_MAGIC ? r : NULL;
}
P2P_HIDDEN MPI_Request p2p_handle_of(p2p_req_t *r) { return (MPI_Request)(void *)r; }
P2P_HIDDEN p2p_req_t *p2p_msg_of(MPI_Message h)
{
    if (h == MPI_MESSAGE_NULL || h == MPI_MESSAGE_NO_PROC || h == NULL)
        return NULL;
    p2p_req_t *r = (p2p_req_t *)(void *)h;
    return r->magic == REQ_MAGIC ? r : NULL;
}
P2P_HIDDEN MPI_Message p2p_msghandle_of(p2p_req_t *m) { return (MPI_Message)(void *)m; }
#else
/* The live slot a bobcat handle with this tag names (index in bits 0-19), or NULL. */
static p2p_req_t *slot_of(unsigned h, unsigned tag)
{
    if ((h & 0xFFF00000u) != tag)
        return NULL;
    unsigned i = h & 0xFFFFFu;
    if ((int)(i / CHUNK) >= nchunks)
        return NULL;
    p2p_req_t *r = &chunks[i / CHUNK][i % CHUNK];
    return r->magic == REQ_MAGIC ? r : NULL;
}
P2P_HIDDEN p2p_req_t *p2p_req_of(MPI_Request h) { return slot_of((unsigned)h, MPICH_TAG); }
P2P_HIDDEN MPI_Request p2p_handle_of(p2p_req_t *r) { return (MPI_Request)(MPICH_TAG | r->idx); }
/* Messages: 0x0BD in bits 20-31, also HANDLE_KIND_INVALID to MPICH. */
#define MPICH_MSG_TAG 0x0BD00000
P2P_HIDDEN p2p_req_t *p2p_msg_of(MPI_Message h) { return slot_of((unsigned)h, MPICH_MSG_TAG); }
P2P_HIDDEN MPI_Message p2p_msghandle_of(p2p_req_t *m) { return (MPI_Message)(MPICH_MSG_TAG | m->idx); }
#endif

/* MPI_Status internals: both MPIs keep the byte count and the cancelled flag in hidden fields
 * that MPI_Get_count / MPI_Get_elements / MPI_Test_cancelled read. */
P2P_HIDDEN void p2p_status_set(MPI_Status *st, int src, int tag, MPI_Count bytes, int cancelled)
{
    if (st == MPI_STATUS_IGNORE)
        return;
    st->MPI_SOURCE = src;
    st->MPI_TAG = tag;
#if defined(OPEN_MPI)
    st->_ucount = (size_t)bytes;
    st->_cancelled = cancelled;
#elif defined(MPICH)
    st->count_lo = (int)(bytes & 0xffffffff);
    st->count_hi_and_cancelled = (int)(((uint64_t)bytes >> 32) << 1) | (cancelled ? 1 : 0);
#else
    PMPI_Status_set_elements_x(st, MPI_BYTE, bytes);
    PMPI_Status_set_cancelled(st, cancelled);
#endif
}

P2P_HIDDEN void p2p_status_empty(MPI_Status *st)
{
    if (st == MPI_STATUS_IGNORE)
        return;
    p2p_status_set(st, MPI_ANY_SOURCE, MPI_ANY_TAG, 0, 0);
    st->MPI_ERROR = MPI_SUCCESS;
}

/* Polls before yielding: the layer's rule (BOBCAT_COLL_SPIN, 1 when ranks outnumber cores), so a
 * waiting rank neither burns the core its peer needs nor gives up its own for nothing. */
P2P_HIDDEN int p2p_send_settled(msg_req_t *m, unsigned *polls)
{
    if (bobcat_msg_test(m))
        return 1;
    bobcat_msg_progress();
    /* A receiver that has not matched after this many looks may be computing for long: copy the
     * data aside so the send completes (never for synchronous sends: detach refuses them). */
    if (bobcat_msg_test(m))
        return 1;
    /* A receiver away in the real MPI matches through its helper: wake it now and then. */
    if ((++*polls & 63) == 0)
        bobcat_msg_nudge(m);
    return *polls > P2P_DETACH_POLLS && bobcat_msg_detach(m);
}

P2P_HIDDEN void p2p_relax(unsigned *spins)
{
    unsigned limit = pmpi_layer.spin > 0 ? (unsigned)pmpi_layer.spin : 16;
    if (++*spins >= limit) {
        *spins = 0;
        sched_yield();
    } else {
        util_poll_pause(); /* the lines this loop polls are about to be written by a peer */
    }
}

P2P_HIDDEN void p2p_orphan(p2p_req_t *r)
{
    r->freed = 1;
    r->fnext = p2p_orphans;
    p2p_orphans = r;
}


P2P_HIDDEN void p2p_orphans_reap(void)
{
    p2p_req_t **pp = &p2p_orphans;
    while (*pp) {
        p2p_req_t *r = *pp;
        int err;
        if (p2p_req_test(r, MPI_STATUS_IGNORE, &err)) {
            *pp = r->fnext;
            p2p_req_release(r);
        } else {
            pp = &r->fnext;
        }
    }
}

/* ---- completion of one request ---- */

static int finish_persist_inner(p2p_req_t *r, MPI_Status *st, int *err_p)
{
    p2p_req_t *in = p2p_req_of(r->inner);
    if (in) {
        if (!p2p_req_test(in, st, err_p))
            return 0;
        p2p_req_release(in);
        r->inner = MPI_REQUEST_NULL;
        return 1;
    }
    if (r->inner == MPI_REQUEST_NULL) {
        p2p_status_empty(st);
        *err_p = MPI_SUCCESS;
        return 1;
    }
    int flag = 0;
    MPI_Status tmp;
    *err_p = PMPI_Test(&r->inner, &flag, st == MPI_STATUS_IGNORE ? &tmp : st);
    return flag;
}

P2P_HIDDEN int p2p_req_test(p2p_req_t *r, MPI_Status *st, int *err_p)
{
    *err_p = MPI_SUCCESS;
    if (r->st_valid) {
        /* MPI_ERROR is left alone: only the multiple-completion calls set it (MPI 3.2.5). */
        p2p_status_set(st, r->st_src, r->st_tag, r->st_bytes, r->st_cancelled);
        *err_p = r->st_err;
        return 1;
    }
    switch (r->kind) {
    case P2P_K_NULL:
        p2p_status_set(st, r->mode == -1 ? MPI_PROC_NULL : MPI_ANY_SOURCE, MPI_ANY_TAG, 0, 0);
        return 1;
    case P2P_K_SEND:
        if (!p2p_send_settled(&r->m, &r->polls))
            return 0;
        r->st_src = MPI_ANY_SOURCE;
        r->st_tag = MPI_ANY_TAG;
        r->st_bytes = 0;
        r->st_err = MPI_SUCCESS;
        r->st_cancelled = 0;
        if (r->pack) {
            free(r->pack);
            r->pack = NULL;
        }
        break;
    case P2P_K_RECV:
    case P2P_K_DEFER:
        if (r->switched) {
            int flag = 0;
            MPI_Status tmp;
            int rc = PMPI_Test(&r->real, &flag, &tmp);
            if (!flag)
                return 0;
            int cancelled = 0;
            MPI_Count bytes = 0;
            PMPI_Test_cancelled(&tmp, &cancelled);
            PMPI_Get_elements_x(&tmp, MPI_BYTE, &bytes);
            r->st_src = tmp.MPI_SOURCE;
            r->st_tag = tmp.MPI_TAG;
            r->st_bytes = bytes;
            r->st_cancelled = cancelled;
            r->st_err = rc != MPI_SUCCESS ? tmp.MPI_ERROR : MPI_SUCCESS;
            if (r->st_err == MPI_SUCCESS && rc != MPI_SUCCESS)
                r->st_err = rc;
            break;
        }
        if (r->kind == P2P_K_DEFER)
            return 0;
        if (!r->m.complete)
            return 0; /* the caller's progress pass would have matched it */
        p2p_offq_remove(r);
        if (r->pack && !r->m.cancelled) {
            /* Non-contiguous receive: the engine delivered packed bytes; lay them out, a partial
             * last element included. */
            pmpi_dt_unpack(r->pack, (MPI_Count)r->m.st_len, r->buf, r->count, r->type);
            free(r->pack);
            r->pack = NULL;
        }
        r->st_src = r->m.st_src;
        r->st_tag = r->m.st_tag;
        r->st_bytes = (MPI_Count)r->m.st_len;
        r->st_cancelled = r->m.cancelled;
        r->st_err = r->m.truncated ? MPI_ERR_TRUNCATE : MPI_SUCCESS;
        break;
    case P2P_K_PERSIST:
        if (!r->active) {
            p2p_status_empty(st);
            return 1;
        }
    {
        /* Test the started operation once, and keep its status until the request is retired:
         * the Test/Wait family may look at a request twice. */
        MPI_Status tmp;
        int err = MPI_SUCCESS, cancelled = 0;
        MPI_Count bytes = 0;
        if (!finish_persist_inner(r, &tmp, &err))
            return 0;
        PMPI_Test_cancelled(&tmp, &cancelled);
        PMPI_Get_elements_x(&tmp, MPI_BYTE, &bytes);
        r->st_src = tmp.MPI_SOURCE;
        r->st_tag = tmp.MPI_TAG;
        r->st_bytes = bytes;
        r->st_cancelled = cancelled;
        r->st_err = err;
        break;
    }
    default:
        return 0;
    }
    r->st_valid = 1;
    p2p_status_set(st, r->st_src, r->st_tag, r->st_bytes, r->st_cancelled);
    *err_p = r->st_err;
    return 1;
}

/* A completed request leaves the user's hands: non-persistent ones are released (handle becomes
 * MPI_REQUEST_NULL), persistent ones turn inactive. */
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

BOBCAT_EXPORT int MPI_Test(MPI_Request *req, int *flag, MPI_Status *st)
{
    p2p_req_t *r = p2p_req_of(*req);
    if (!r) {
        if (p2p_need_progress())
            p2p_progress();
        return PMPI_Test(req, flag, st);
    }
    int err;
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
    p2p_req_t *r = p2p_req_of(*req);
    if (!r) {
        if (!p2p_need_progress() || *req == MPI_REQUEST_NULL)
            return PMPI_Wait(req, st);
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
    int err;
    for (;;) {
        p2p_progress();
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

BOBCAT_EXPORT int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status sts[])
{
    int mine = 0, real = 0;
    for (int i = 0; i < n; i++) {
        if (p2p_req_of(reqs[i]))
            mine = 1;
        else
            real |= reqs[i] != MPI_REQUEST_NULL;
    }
    if (!mine && !p2p_need_progress())
        return PMPI_Waitall(n, reqs, sts);
    if (mine && !real)
        return waitall_mine(n, reqs, sts);
    unsigned spins = 0;
    for (;;) {
        int flag = 0, rc = testall_impl(n, reqs, &flag, sts);
        if (flag || (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS))
            return rc;
        p2p_poke_mpi();
        p2p_relax(&spins);
    }
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
    if (!has_mine(n, reqs)) {
        if (p2p_need_progress())
            p2p_progress();
        return PMPI_Testany(n, reqs, idx, flag, st);
    }
    return testany_impl(n, reqs, idx, flag, st);
}

BOBCAT_EXPORT int MPI_Waitany(int n, MPI_Request reqs[], int *idx, MPI_Status *st)
{
    if (!has_mine(n, reqs) && !p2p_need_progress())
        return PMPI_Waitany(n, reqs, idx, st);
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
    if (!has_mine(n, reqs)) {
        if (p2p_need_progress())
            p2p_progress();
        return PMPI_Testsome(n, reqs, outcount, idxs, sts);
    }
    return testsome_impl(n, reqs, outcount, idxs, sts);
}

BOBCAT_EXPORT int MPI_Waitsome(int n, MPI_Request reqs[], int *outcount, int idxs[], MPI_Status sts[])
{
    if (!has_mine(n, reqs) && !p2p_need_progress())
        return PMPI_Waitsome(n, reqs, outcount, idxs, sts);
    unsigned spins = 0;
    for (;;) {
        int rc = testsome_impl(n, reqs, outcount, idxs, sts);
        if (*outcount != 0 || (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS))
            return rc;
        p2p_poke_mpi();
        p2p_relax(&spins);
    }
}
