/* msg_match: MPI's matching. Posted receives in post order against arrivals in arrival order;
 * arrivals nobody has asked for wait as unexpected (eager payload copied). Posting, cancelling and
 * the matched-probe receive; delivering a matched message (eager copy or the rendezvous pull). */
#include <stdlib.h>
#include <string.h>

#include "msg_engine.h"

/* Complete receive `r` with a message described by a header, eager payload at `data` (for
 * MSG_RTS_CELL: the cell holding the header). */
static void deliver(msg_req_t *r, int32_t src, int32_t tag, uint32_t kind, uint64_t len, uint64_t addr,
                    uint64_t done, int from_local, const void *data)
{
    uint64_t n = len <= r->cap ? len : r->cap;
    if (kind == MSG_NODE_EAGER) {
        if (n)
            memcpy(r->buf, data, n);
        E.stats.eager_recv++;
    } else {
        msg_rndv_pull(r->buf, n, addr, done, from_local, kind == MSG_RTS_CELL ? data : NULL);
    }
    signal_sender(from_local, done);
    r->st_src = src;
    r->st_tag = tag;
    r->st_len = n;
    r->truncated = len > r->cap;
    r->complete = 1;
}

static void unlink_posted(msg_req_t *r)
{
    if (r->prev)
        r->prev->next = r->next;
    else
        E.posted_head = r->next;
    if (r->next)
        r->next->prev = r->prev;
    else
        E.posted_tail = r->prev;
    r->next = r->prev = NULL;
    r->posted = 0;
}

static msg_unexp_t *unexp_get(void)
{
    msg_unexp_t *u = E.unexp_free;
    if (u) {
        E.unexp_free = u->next;
        E.unexp_nfree--;
        return u;
    }
    u = malloc(sizeof *u + E.eager);
    if (!u) {
        util_out_of_memory("an unexpected on-node message", sizeof *u + E.eager);
    }
    u->data = (char *)(u + 1);
    return u;
}

void msg_unexp_put(msg_unexp_t *u)
{
    u->next = E.unexp_free;
    E.unexp_free = u;
    E.unexp_nfree++;
}

void msg_unexp_unlink(msg_unexp_t *u)
{
    if (u->prev)
        u->prev->next = u->next;
    else
        E.unexp_head = u->next;
    if (u->next)
        u->next->prev = u->prev;
    else
        E.unexp_tail = u->prev;
    u->next = u->prev = NULL;
}

/* One arrival: the first posted receive it matches takes it, else it waits as unexpected. */
void msg_arrive(int32_t ctx, int32_t src, int32_t tag, uint32_t kind, uint64_t len, uint64_t addr, uint64_t done,
                   int from_local, const void *data)
{
    for (msg_req_t *r = E.posted_head; r; r = r->next) {
        if (matches(r->ctx, r->src, r->tag, ctx, src, tag)) {
            unlink_posted(r);
            deliver(r, src, tag, kind, len, addr, done, from_local, data);
            return;
        }
    }
    msg_unexp_t *u = unexp_get();
    u->ctx = ctx;
    u->src = src;
    u->tag = tag;
    u->from_local = from_local;
    u->kind = kind == MSG_RTS_CELL ? MSG_NODE_RTS : kind; /* claimed later by the ticket */
    u->len = len;
    u->addr = addr;
    u->done = done;
    if (kind == MSG_NODE_EAGER && len)
        memcpy(u->data, data, len);
    u->next = NULL;
    u->prev = E.unexp_tail;
    if (E.unexp_tail)
        E.unexp_tail->next = u;
    else
        E.unexp_head = u;
    E.unexp_tail = u;
    E.stats.unexpected++;
}

BOBCAT_LAYER_API void bobcat_msg_recv(msg_req_t *req, int32_t ctx, int32_t src, int32_t tag, void *buf, size_t cap)
{
    home();
    req->kind = MSG_REQ_RECV;
    req->complete = 0;
    req->posted = 0;
    req->cancelled = 0;
    req->truncated = 0;
    req->ctx = ctx;
    req->src = src;
    req->tag = tag;
    req->buf = buf;
    req->cap = cap;
    req->waits_done = 0;
    /* Arrivals still in the inbox or the fast boxes are later than every unexpected one: the
     * earliest unexpected match wins; else post. No progress pass here: a receiver posting a
     * window of receives would poll, with each, the cell its sender is about to write (and every
     * read of it makes that write wait for the line); the first progress pass after the window
     * delivers the arrivals to the posted receives, in order. */
    for (msg_unexp_t *u = E.unexp_head; u; u = u->next) {
        if (matches(ctx, src, tag, u->ctx, u->src, u->tag)) {
            msg_unexp_unlink(u);
            deliver(req, u->src, u->tag, u->kind, u->len, u->addr, u->done, u->from_local, u->data);
            msg_unexp_put(u);
            return;
        }
    }
    req->posted = 1;
    req->next = NULL;
    req->prev = E.posted_tail;
    if (E.posted_tail)
        E.posted_tail->next = req;
    else
        E.posted_head = req;
    E.posted_tail = req;
}

BOBCAT_LAYER_API int bobcat_msg_cancel(msg_req_t *req)
{
    home();
    if (req->kind != MSG_REQ_RECV || !req->posted)
        return 0;
    unlink_posted(req);
    req->cancelled = 1;
    req->complete = 1;
    req->st_len = 0;
    return 1;
}

BOBCAT_LAYER_API void bobcat_msg_mrecv(msg_req_t *req, msg_unexp_t *m, void *buf, size_t cap)
{
    home();
    req->kind = MSG_REQ_RECV;
    req->posted = 0;
    req->cancelled = 0;
    req->buf = buf;
    req->cap = cap;
    req->waits_done = 0;
    deliver(req, m->src, m->tag, m->kind, m->len, m->addr, m->done, m->from_local, m->data);
    msg_unexp_put(m);
}
