/* pmpi_rma_ops: put, get, the accumulates and their request forms on the windows bobcat handles.
 *
 * Through SMARTMAP every operation is done by the origin, on the target's memory, before the call
 * returns, so it is complete at once (a flush has nothing left to wait for):
 *  - MPI_Put / MPI_Get: one copy between the origin's buffer and the target's window (contiguous
 *    types), or a pack and an unpack through a staging buffer (the rest);
 *  - the accumulates: per element of the one predefined type both sides are made of (the standard's
 *    unit of atomicity), with a hardware atomic for integer types of 1-8 bytes (rma_atomic_ok), and
 *    otherwise under the target's accumulate lock with the real MPI's own MPI_Reduce_local over the
 *    target's runs. An (op, type) pair always takes the same way, so accumulates from every origin
 *    to one location are atomic with each other: Fetch_and_op with Accumulate, a 1-element call with
 *    a 1000-element one;
 *  - the request forms return a request that is complete.
 * An operation whose pair goes through the real window (rma_route) is the real MPI's call on it. */
#include "pmpi_rma.h"
#include "../p2p/p2p.h"

#include <stdlib.h>
#include <string.h>

/* ---- where the target's bytes are ---- */

typedef struct {
    MPI_Aint lb, span; /* bytes touched: [lb, lb + span) from the target address */
} tspan_t;

static int type_span(MPI_Count count, MPI_Datatype t, tspan_t *s)
{
    MPI_Count lb, ext, tlb, text;
    if (PMPI_Type_get_extent_x(t, &lb, &ext) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent_x(t, &tlb, &text) != MPI_SUCCESS)
        return -1;
    s->lb = (MPI_Aint)tlb;
    s->span = count > 0 ? (MPI_Aint)((count - 1) * ext + text) : 0;
    return 0;
}

/* The target address of displacement tdisp as seen here, or with *staged set, at the target's own
 * address (its memory is outside its segment: the staged path, pmpi_rma_staged.c); NULL with *err 0:
 * the real window must carry it (a dynamic window's address outside the target's segment, without
 * the staged path); *err: MPI_ERR_RMA_RANGE. */
static char *target_at(rma_win_t *w, int t, MPI_Aint tdisp, const tspan_t *s, int *err, int *staged)
{
    *err = 0;
    *staged = 0;
    if (w->dynamic) {
        char *a = (char *)(uintptr_t)tdisp;
        if (s->span > 0 && !(smap_is_shared(a + s->lb) && smap_is_shared(a + s->lb + s->span - 1))) {
            /* Memory attached from outside the heap is all outside it, so one location always
             * takes one way (the accumulates' atomicity). */
            *staged = w->cma;
            return w->cma ? a : NULL;
        }
        return pmpi_peer_ptr(w->pc, t, a);
    }
    const rma_peer_t *p = &w->peer[t];
    MPI_Aint off = tdisp * (MPI_Aint)p->disp;
    if (s->span > 0 && (tdisp < 0 || off + s->lb < 0 || off + s->lb + s->span > p->size)) {
        *err = MPI_ERR_RMA_RANGE;
        return NULL;
    }
    *staged = p->staged;
    return p->staged ? p->rbase + off : p->base + off;
}

/* The byte ranges from s->lb that count elements of t touch: one run for a contiguous type (*r is
 * `one` then), else from the type's map (*r to free). 0 or an MPI error. */
static int target_ranges(MPI_Datatype t, MPI_Count count, const pmpi_dt_info_t *d, const tspan_t *s,
                         MPI_Count bytes, rma_range_t *one, rma_range_t **r, int *n)
{
    if (d->contig) {
        one->off = 0;
        one->len = (MPI_Aint)bytes;
        *r = one;
        *n = 1;
        return MPI_SUCCESS;
    }
    return rma_staged_ranges(t, count, s->lb, s->span, bytes, r, n) ? MPI_ERR_NO_MEM : MPI_SUCCESS;
}

/* The checks every operation starts with: 0 to go on, 1 to take the real window, or an error. */
static int check(rma_win_t *w, int t, int acc, int *way)
{
    if (t < 0 || t >= w->n)
        return MPI_ERR_RANK;
    int r = rma_route(w, t, acc);
    if (r < 0)
        return MPI_ERR_RMA_SYNC;
    *way = r;
    return MPI_SUCCESS;
}

/* ---- put and get ---- */

/* A put or a get to memory outside the target's segment (at: its address there, in process pid):
 * the origin's bytes packed, the target's staged in a buffer as laid out from s->lb. */
static int xfer_staged(int get, void *obuf, MPI_Count ocount, MPI_Datatype otype, const pmpi_dt_info_t *od, int pid,
                       char *at, MPI_Count tcount, MPI_Datatype ttype, const pmpi_dt_info_t *td, const tspan_t *s,
                       MPI_Count bytes)
{
    rma_range_t one, *r = NULL;
    int nr = 0, rc = target_ranges(ttype, tcount, td, s, bytes, &one, &r, &nr);
    char *packed = od->contig ? (char *)obuf + od->lb : NULL, *tmp = NULL, *sh = NULL;
    if (rc != MPI_SUCCESS)
        return rc;
    if (!packed && !(packed = tmp = malloc((size_t)bytes))) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    /* The target's side here: the packed bytes themselves if its type is contiguous. */
    if (!td->contig && !(sh = malloc((size_t)s->span))) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    char *local = td->contig ? packed : sh;
    if (get) {
        rc = rma_staged_io(pid, 0, local, at + s->lb, r, nr);
        if (rc == MPI_SUCCESS && sh && pmpi_dt_pack(sh - s->lb, tcount, ttype, packed) < 0)
            rc = MPI_ERR_TYPE;
        if (rc == MPI_SUCCESS && tmp && pmpi_dt_unpack(tmp, bytes, obuf, ocount, otype) != 0)
            rc = MPI_ERR_TYPE;
    } else {
        if (tmp && pmpi_dt_pack(obuf, ocount, otype, tmp) < 0)
            rc = MPI_ERR_TYPE;
        if (rc == MPI_SUCCESS && sh && pmpi_dt_unpack(packed, bytes, sh - s->lb, tcount, ttype) != 0)
            rc = MPI_ERR_TYPE;
        if (rc == MPI_SUCCESS)
            rc = rma_staged_io(pid, 1, local, at + s->lb, r, nr);
    }
out:
    if (r != &one)
        free(r);
    free(tmp);
    free(sh);
    return rc;
}

/* Moves the bytes of a put (get = 0) or a get: 1 if the real window must carry it, or an error. */
static int xfer(rma_win_t *w, int get, void *obuf, MPI_Count ocount, MPI_Datatype otype, int t, MPI_Aint tdisp,
                MPI_Count tcount, MPI_Datatype ttype)
{
    int way = 0, rc = check(w, t, 0, &way);
    if (rc != MPI_SUCCESS)
        return rc;
    if (way)
        return -1;
    const pmpi_dt_info_t *q = pmpi_dt_get(otype);
    pmpi_dt_info_t od = *q;
    q = pmpi_dt_get(ttype);
    pmpi_dt_info_t td = *q;
    MPI_Count bytes = ocount * od.size;
    if (ocount < 0 || tcount < 0)
        return MPI_ERR_COUNT;
    if (bytes != tcount * td.size)
        return MPI_ERR_TYPE; /* the type signatures must match (MPI 4.0 section 12.3) */
    tspan_t s = {td.lb, (MPI_Aint)bytes};
    if (!td.contig && type_span(tcount, ttype, &s))
        return MPI_ERR_TYPE;
    int staged = 0;
    char *at = target_at(w, t, tdisp, &s, &rc, &staged);
    if (rc)
        return rc;
    if (!at)
        return -1;
    int kind = get ? RMA_GET : RMA_PUT;
    if (bytes == 0) {
        rma_count(w, kind, PMPI_PATH_INPLACE, 0);
        return MPI_SUCCESS;
    }
    if (staged) {
        rc = xfer_staged(get, obuf, ocount, otype, &od, w->peer[t].pid, at, tcount, ttype, &td, &s, bytes);
        rma_count(w, kind, PMPI_PATH_STAGED, (size_t)bytes);
        return rc;
    }
    if (od.contig && td.contig) {
        if (get)
            util_copy((char *)obuf + od.lb, at + td.lb, (size_t)bytes);
        else
            util_copy(at + td.lb, (char *)obuf + od.lb, (size_t)bytes);
        rma_count(w, kind, PMPI_PATH_INPLACE, (size_t)bytes);
        return MPI_SUCCESS;
    }
    /* A non-contiguous side: its bytes packed (the other side's contiguous run, or a staging buffer). */
    void *src = get ? at : obuf, *dst = get ? obuf : at;
    MPI_Count scount = get ? tcount : ocount, dcount = get ? ocount : tcount;
    MPI_Datatype stype = get ? ttype : otype, dtype = get ? otype : ttype;
    const pmpi_dt_info_t *sd = get ? &td : &od, *dd = get ? &od : &td;
    char *tmp = NULL;
    const char *packed;
    if (sd->contig) {
        packed = (const char *)src + sd->lb;
    } else {
        tmp = malloc((size_t)bytes);
        if (!tmp)
            return MPI_ERR_NO_MEM;
        if (pmpi_dt_pack(src, scount, stype, tmp) < 0) {
            free(tmp);
            return MPI_ERR_TYPE;
        }
        packed = tmp;
    }
    if (dd->contig)
        util_copy((char *)dst + dd->lb, packed, (size_t)bytes);
    else if (pmpi_dt_unpack(packed, bytes, dst, dcount, dtype) != 0)
        rc = MPI_ERR_TYPE;
    free(tmp);
    rma_count(w, kind, PMPI_PATH_STAGED, (size_t)bytes);
    return rc;
}

/* ---- the accumulates ---- */

static int predefined_op(MPI_Op op)
{
    return op == MPI_SUM || op == MPI_PROD || op == MPI_MAX || op == MPI_MIN || op == MPI_BAND || op == MPI_BOR ||
           op == MPI_BXOR || op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR || op == MPI_MAXLOC ||
           op == MPI_MINLOC || op == MPI_REPLACE || op == MPI_NO_OP;
}

static void acc_unlock(rma_ctl_t *c) { atomic_store_explicit(&c->acc, 0, memory_order_release); }

/* Elements of a buffer as one array of the element type at its extent: the buffer itself when it
 * already is, else a copy (*tmp, to free). NULL on failure. */
static char *as_array(const void *buf, MPI_Count count, MPI_Datatype t, MPI_Datatype named, MPI_Aint ext,
                      MPI_Aint esize, MPI_Count n, char **tmp)
{
    const pmpi_dt_info_t *d = pmpi_dt_get(t);
    *tmp = NULL;
    if (d->contig && esize == ext)
        return (char *)buf + d->lb;
    MPI_Count bytes = count * d->size;
    char *packed = malloc((size_t)(bytes ? bytes : 1)), *arr = packed;
    if (!packed)
        return NULL;
    if (bytes && pmpi_dt_pack(buf, count, t, packed) < 0) {
        free(packed);
        return NULL;
    }
    if (esize != ext) { /* pair types (MPI_DOUBLE_INT...): elements at their extent */
        arr = malloc((size_t)(n ? n * ext : 1));
        int pos = 0;
        if (!arr || PMPI_Unpack(packed, (int)bytes, &pos, arr, (int)n, named, MPI_COMM_SELF) != MPI_SUCCESS) {
            free(arr);
            free(packed);
            return NULL;
        }
        free(packed);
    }
    *tmp = arr;
    return arr;
}

/* Lays an array of n elements (at their extent) out in buf as count elements of t. */
static int from_array(const char *arr, MPI_Datatype named, MPI_Count n, void *buf, MPI_Count count, MPI_Datatype t)
{
    int psize = 0, pos = 0;
    if (PMPI_Pack_size((int)n, named, MPI_COMM_SELF, &psize) != MPI_SUCCESS)
        return MPI_ERR_TYPE;
    char *packed = malloc((size_t)(psize ? psize : 1));
    if (!packed)
        return MPI_ERR_NO_MEM;
    int rc = PMPI_Pack(arr, (int)n, named, packed, psize, &pos, MPI_COMM_SELF);
    if (rc == MPI_SUCCESS)
        rc = pmpi_dt_unpack(packed, pos, buf, count, t) == 0 ? MPI_SUCCESS : MPI_ERR_TYPE;
    free(packed);
    return rc;
}

/* Accumulate (res NULL), Get_accumulate / Fetch_and_op (res): 1 if the real window must carry it,
 * or an error. */
static int acc(rma_win_t *w, int kind, const void *obuf, MPI_Count ocount, MPI_Datatype otype, void *rbuf,
               MPI_Count rcount, MPI_Datatype rtype, int t, MPI_Aint tdisp, MPI_Count tcount, MPI_Datatype ttype,
               MPI_Op op)
{
    int way = 0, rc = check(w, t, 1, &way);
    if (rc != MPI_SUCCESS)
        return rc;
    if (!predefined_op(op))
        return MPI_ERR_OP;
    if (way)
        return -1;
    if (tcount < 0 || ocount < 0 || rcount < 0)
        return MPI_ERR_COUNT;
    /* The target's runs of its element type. */
    rma_runs_t tr;
    MPI_Aint one_disp = 0;
    MPI_Count one_n = tcount;
    const pmpi_dt_info_t *td = pmpi_dt_get(ttype);
    if (td->predefined) {
        int sz = 0;
        memset(&tr, 0, sizeof tr);
        tr.named = ttype;
        tr.ext = (MPI_Aint)td->extent;
        PMPI_Type_size(ttype, &sz);
        tr.size = sz;
        tr.nruns = tcount > 0;
        tr.disp = &one_disp;
        tr.n = &one_n;
        tr.total = tcount;
    } else if (rma_runs(&tr, ttype, tcount)) {
        return MPI_ERR_TYPE;
    }
    int owned_runs = !td->predefined;
    MPI_Count n = tr.total;
    rc = MPI_SUCCESS;
    tspan_t s = {0, 0};
    char *at = NULL, *ob = NULL, *otmp = NULL, *rb = NULL, *rtmp = NULL, *sh = NULL, *rat = NULL;
    rma_range_t one_range, *ranges = NULL;
    int nranges = 0;
    if (n > 0) {
        MPI_Aint lo = tr.disp[0], hi = tr.disp[0] + (MPI_Aint)tr.n[0] * tr.ext;
        for (int i = 1; i < tr.nruns; i++) {
            if (tr.disp[i] < lo)
                lo = tr.disp[i];
            if (tr.disp[i] + (MPI_Aint)tr.n[i] * tr.ext > hi)
                hi = tr.disp[i] + (MPI_Aint)tr.n[i] * tr.ext;
        }
        s.lb = lo;
        s.span = hi - lo;
    }
    int staged = 0;
    at = target_at(w, t, tdisp, &s, &rc, &staged);
    if (rc)
        goto out;
    if (!at) {
        rc = -1;
        goto out;
    }
    if (n == 0) {
        rma_count(w, kind, PMPI_PATH_INPLACE, 0);
        goto out;
    }
    if (staged) { /* the target's bytes staged here (sh), read and written back under its lock */
        rc = target_ranges(ttype, tcount, td, &s, n * tr.size, &one_range, &ranges, &nranges);
        if (rc == MPI_SUCCESS && !(sh = malloc((size_t)s.span)))
            rc = MPI_ERR_NO_MEM;
        if (rc != MPI_SUCCESS)
            goto out;
        rat = at;
        at = sh - s.lb;
    }
    if (op != MPI_NO_OP) {
        /* The origin must hold the same number of the same elements. */
        ob = as_array(obuf, ocount, otype, tr.named, tr.ext, tr.size, n, &otmp);
        if (!ob || (MPI_Count)ocount * pmpi_dt_get(otype)->size != n * tr.size) {
            rc = ob ? MPI_ERR_TYPE : MPI_ERR_NO_MEM;
            goto out;
        }
    }
    if (rbuf) {
        const pmpi_dt_info_t *rd = pmpi_dt_get(rtype);
        if (rcount * rd->size != n * tr.size) {
            rc = MPI_ERR_TYPE;
            goto out;
        }
        if (rd->contig && tr.size == tr.ext) {
            rb = (char *)rbuf + rd->lb;
        } else {
            rb = rtmp = malloc((size_t)(n * tr.ext));
            if (!rb) {
                rc = MPI_ERR_NO_MEM;
                goto out;
            }
        }
    }
    MPI_Count done = 0;
    if (!sh && rma_atomic_ok(tr.named, op)) {
        int sg = rma_is_signed(tr.named);
        for (int i = 0; i < tr.nruns; i++) {
            rma_atomic_apply(at + tr.disp[i], ob ? ob + done * tr.ext : NULL, rb ? rb + done * tr.ext : NULL, tr.n[i],
                             (int)tr.size, sg, op);
            done += tr.n[i];
        }
    } else {
        rma_acquire(&w->peer[t].ctl->acc, 1);
        if (sh)
            rc = rma_staged_io(w->peer[t].pid, 0, sh, rat + s.lb, ranges, nranges);
        for (int i = 0; i < tr.nruns && rc == MPI_SUCCESS; i++) {
            char *tp = at + tr.disp[i];
            size_t nb = (size_t)(tr.n[i] * tr.ext);
            if (rb)
                memcpy(rb + done * tr.ext, tp, nb);
            if (op == MPI_REPLACE)
                memcpy(tp, ob + done * tr.ext, nb);
            else if (op != MPI_NO_OP)
                rc = PMPI_Reduce_local(ob + done * tr.ext, tp, (int)tr.n[i], tr.named, op);
            done += tr.n[i];
        }
        if (sh && rc == MPI_SUCCESS && op != MPI_NO_OP)
            rc = rma_staged_io(w->peer[t].pid, 1, sh, rat + s.lb, ranges, nranges);
        atomic_thread_fence(memory_order_seq_cst);
        acc_unlock(w->peer[t].ctl);
    }
    if (rc == MPI_SUCCESS && rtmp)
        rc = from_array(rtmp, tr.named, n, rbuf, rcount, rtype);
    rma_count(w, kind, sh || otmp || rtmp || owned_runs ? PMPI_PATH_STAGED : PMPI_PATH_INPLACE, (size_t)(n * tr.size));
out:
    free(otmp);
    free(rtmp);
    free(sh);
    if (ranges != &one_range)
        free(ranges);
    if (owned_runs)
        rma_runs_free(&tr);
    return rc;
}

/* ---- the entry points ---- */

/* An operation's end: MPI_SUCCESS, the real window's call (way -1), or an error through the
 * window's handler. */
#define RMA_RESULT(w, t, rc, real_call, kind, bytes)                                                      \
    do {                                                                                                 \
        if ((rc) == -1) {                                                                                \
            rma_count((w), (kind), PMPI_PATH_MPI, (size_t)(bytes));                                     \
            rma_owe((w), (t));                                                                           \
            return real_call;                                                                            \
        }                                                                                                \
        return (rc) == MPI_SUCCESS ? MPI_SUCCESS : rma_error((w), (rc));                                 \
    } while (0)

static size_t type_bytes(MPI_Count count, MPI_Datatype t)
{
    MPI_Count sz = 0;
    if (PMPI_Type_size_x(t, &sz) != MPI_SUCCESS || sz < 0)
        sz = 0;
    return (size_t)count * (size_t)sz;
}

BOBCAT_EXPORT int MPI_Fetch_and_op(const void *obuf, void *rbuf, MPI_Datatype dt, int t, MPI_Aint tdisp, MPI_Op op,
                                   MPI_Win win)
{
    PMPI_GUARD();
    rma_win_t *w = rma_get(win);
    if (!w && RMA_ALONE(RMA_FOP, type_bytes(1, dt)))
        return PMPI_Fetch_and_op(obuf, rbuf, dt, t, tdisp, op, win);
    if (t == MPI_PROC_NULL)
        return MPI_SUCCESS; /* MPI_PROC_NULL: nothing, in or out of an epoch */
    int rc;
    /* The common case, one integer the hardware adds: straight to the atomic. */
    int way = 0;
    rc = check(w, t, 1, &way);
    const pmpi_dt_info_t *d;
    if (rc == MPI_SUCCESS && !way && !w->dynamic && !w->peer[t].staged && (d = pmpi_dt_get(dt))->predefined &&
        d->contig && rma_atomic_ok(dt, op)) {
        tspan_t s = {0, (MPI_Aint)d->size};
        int staged;
        char *at = target_at(w, t, tdisp, &s, &rc, &staged);
        if (!rc) {
            rma_atomic_apply(at, obuf, rbuf, 1, (int)d->size, rma_is_signed(dt), op);
            rma_count(w, RMA_FOP, PMPI_PATH_INPLACE, (size_t)d->size);
        }
    } else if (rc == MPI_SUCCESS) {
        rc = acc(w, RMA_FOP, obuf, 1, dt, rbuf, 1, dt, t, tdisp, 1, dt, op);
    }
    RMA_RESULT(w, t, rc, PMPI_Fetch_and_op(obuf, rbuf, dt, t, tdisp, op, win), RMA_FOP, type_bytes(1, dt));
}

BOBCAT_EXPORT int MPI_Compare_and_swap(const void *obuf, const void *cbuf, void *rbuf, MPI_Datatype dt, int t,
                                       MPI_Aint tdisp, MPI_Win win)
{
    PMPI_GUARD();
    rma_win_t *w = rma_get(win);
    if (!w && RMA_ALONE(RMA_CAS, type_bytes(1, dt)))
        return PMPI_Compare_and_swap(obuf, cbuf, rbuf, dt, t, tdisp, win);
    if (t == MPI_PROC_NULL)
        return MPI_SUCCESS; /* MPI_PROC_NULL: nothing, in or out of an epoch */
    int way = 0, rc = check(w, t, 1, &way);
    if (rc == MPI_SUCCESS && !way) {
        int sz = 0;
        PMPI_Type_size(dt, &sz);
        tspan_t s = {0, sz};
        int staged = 0;
        char *at = target_at(w, t, tdisp, &s, &rc, &staged);
        if (!rc && !at) {
            rc = -1;
        } else if (!rc && staged) { /* read, compare and write back under the target's lock */
            rma_range_t one = {0, sz};
            rma_acquire(&w->peer[t].ctl->acc, 1);
            rc = rma_staged_io(w->peer[t].pid, 0, rbuf, at, &one, 1);
            if (rc == MPI_SUCCESS && !memcmp(rbuf, cbuf, (size_t)sz))
                rc = rma_staged_io(w->peer[t].pid, 1, (char *)obuf, at, &one, 1);
            acc_unlock(w->peer[t].ctl);
            rma_count(w, RMA_CAS, PMPI_PATH_STAGED, (size_t)sz);
        } else if (!rc) {
            if (sz == 1 || sz == 2 || sz == 4 || sz == 8) {
                rma_atomic_cas(at, obuf, cbuf, rbuf, sz);
            } else { /* no instruction this wide: under the accumulate lock */
                rma_acquire(&w->peer[t].ctl->acc, 1);
                memcpy(rbuf, at, (size_t)sz);
                if (!memcmp(rbuf, cbuf, (size_t)sz))
                    memcpy(at, obuf, (size_t)sz);
                acc_unlock(w->peer[t].ctl);
            }
            rma_count(w, RMA_CAS, PMPI_PATH_INPLACE, (size_t)sz);
        }
    } else if (rc == MPI_SUCCESS) {
        rc = -1;
    }
    RMA_RESULT(w, t, rc, PMPI_Compare_and_swap(obuf, cbuf, rbuf, dt, t, tdisp, win), RMA_CAS, type_bytes(1, dt));
}

/* ---- request forms: allowed in passive-target epochs only (MPI 4.0 section 12.3.5) ---- */

static int done_test(p2p_req_t *r, int *err_p)
{
    (void)r;
    *err_p = MPI_SUCCESS;
    return 1;
}
static void done_release(p2p_req_t *r) { (void)r; }
static const p2p_ext_ops_t done_ops = {done_test, done_release, NULL, NULL};

/* A request that is already complete (the operation was done in the call). */
static int done_request(rma_win_t *w, MPI_Request *req)
{
    p2p_req_t *r = p2p_req_new();
    if (!r)
        return MPI_ERR_NO_MEM;
    r->kind = P2P_K_EXT;
    r->ext_ops = &done_ops;
    r->ext = NULL;
    r->comm = w->comm;
    *req = p2p_handle_of(r);
    return MPI_SUCCESS;
}

static int req_epoch(rma_win_t *w, int t)
{
    if (t != MPI_PROC_NULL && t >= 0 && t < w->n && !w->lock_all && !w->locked[t])
        return MPI_ERR_RMA_SYNC;
    return MPI_SUCCESS;
}

#define RMA_REQ_RESULT(w, t, rc, real_call, kind, bytes, req)                                             \
    do {                                                                                                 \
        if ((rc) == -1) {                                                                                \
            rma_count((w), (kind), PMPI_PATH_MPI, (size_t)(bytes));                                     \
            rma_owe((w), (t));                                                                           \
            pmpi_real_requests = 1;                                                                      \
            return real_call;                                                                            \
        }                                                                                                \
        if ((rc) == MPI_SUCCESS)                                                                         \
            (rc) = done_request((w), (req));                                                            \
        return (rc) == MPI_SUCCESS ? MPI_SUCCESS : rma_error((w), (rc));                                 \
    } while (0)

#define P2P_API "../rma/pmpi_rma_api.h" /* the path is from p2p_counts.h */
#include "../p2p/p2p_counts.h"
