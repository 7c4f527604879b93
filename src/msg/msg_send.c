/* msg_send: the send path. A small message goes into the pair's fast-box cell (or its data ring),
 * a rendezvous header into the next cell when it is free, anything else into an inbox node from
 * this rank's pool; a pair that talks often gets its box here. bobcat_msg_send_eager is the
 * small-message hot path: inline, one cache line written once. */
#include <stdlib.h>
#include <string.h>

#include "msg_engine.h"

/* A free node: recycle what receivers have consumed (acquire: their reads are done) when the
 * free list runs dry, and only grow the pool when every node is still in flight. */
static msg_node_t *node_get(void)
{
    if (!E.free_nodes) {
        msg_node_t **pp = &E.flight_head, *last = NULL;
        while (*pp) {
            msg_node_t *n = *pp;
            if (atomic_load_explicit(&n->consumed, memory_order_acquire)) {
                *pp = n->pool_next;
                n->pool_next = E.free_nodes;
                E.free_nodes = n;
            } else {
                last = n;
                pp = &n->pool_next;
            }
        }
        E.flight_tail = last;
        if (!E.free_nodes && !msg_pool_grow()) {
            abort();
        }
    }
    msg_node_t *n = E.free_nodes;
    E.free_nodes = n->pool_next;
    n->pool_next = NULL;
    if (E.flight_tail)
        E.flight_tail->pool_next = n;
    else
        E.flight_head = n;
    E.flight_tail = n;
    return n;
}

/* Open a fast box to local rank `dest` if it still takes one (its inbox counts them). */
static msg_chan_t *fbox_open(int dest)
{
    msg_inbox_t *ib = E.peer[dest];
    if (E.opened >= MSG_FBOX_MAX) {
        E.tx[dest].refused = 1; /* mine are used up: my heap holds at most MSG_FBOX_MAX boxes */
        return NULL;
    }
    if (atomic_fetch_add_explicit(&ib->fboxes, 1, memory_order_relaxed) >= MSG_FBOX_MAX) {
        atomic_fetch_sub_explicit(&ib->fboxes, 1, memory_order_relaxed);
        E.tx[dest].refused = 1;
        return NULL;
    }
    msg_chan_t *c = NULL;
    size_t bytes = sizeof *c + (size_t)E.cells * sizeof(msg_cell_t) + E.ring;
    if (posix_memalign((void **)&c, MSG_LINE, bytes) != 0 || !smap_is_shared(c)) {
        free(c);
        atomic_fetch_sub_explicit(&ib->fboxes, 1, memory_order_relaxed);
        E.tx[dest].refused = 1; /* no room: the inbox serves this pair */
        return NULL;
    }
    memset(c, 0, sizeof *c + (size_t)E.cells * sizeof(msg_cell_t)); /* the ring needs no clearing */
    c->cells = E.cells;
    c->ring = E.ring;
    E.opened++;
    E.stats.fboxes++;
    return c;
}

/* The box this send should open to `dest`: its MSG_FBOX_AFTER-th message to a peer with no box yet,
 * if one can be had (the node it travels in announces it); else NULL. */
static msg_chan_t *fbox_due(int dest)
{
    msg_tx_t *t = &E.tx[dest];
    if (!E.cells || t->chan || t->refused || dest == E.my_local || ++t->sent < MSG_FBOX_AFTER)
        return NULL;
    return fbox_open(dest);
}

/* The cell of the pair's next message, if the receiver has taken the message that used it last. */
static inline msg_cell_t *fbox_cell(int dest)
{
    msg_tx_t *t = &E.tx[dest];
    uint64_t q = t->seq;
    if (q - t->ack >= E.cells) {
        t->ack = atomic_load_explicit(&t->chan->ack, memory_order_acquire);
        if (q - t->ack >= E.cells)
            return NULL; /* the receiver has not taken message q - cells yet */
    }
    return &t->chan->cell[q & (E.cells - 1)];
}

/* Publish the filled cell as the pair's next message (release: its fields before its seq). The
 * header goes in as two 8-byte stores: every store of a send waits behind the cell's, whose line
 * the receiver holds, so fewer stores per message keep more messages' lines in flight. */
static inline void fbox_publish(int dest, msg_cell_t *c, int32_t ctx, int32_t src, int32_t tag, uint32_t len)
{
    msg_tx_t *t = &E.tx[dest];
    struct { uint32_t len; int32_t ctx, src, tag; } h = {len, ctx, src, tag};
    memcpy(&c->len, &h, sizeof h);
    atomic_store_explicit(&c->seq, t->seq + 1, memory_order_release);
    t->seq++;
    E.stats.fbox_sent++;
}

/* A small message into the pair's fast box, if it fits and the cell is free. */
static inline int fbox_send(int dest, int32_t ctx, int32_t src, int32_t tag, const void *buf, size_t len)
{
    msg_tx_t *t = &E.tx[dest];
    msg_cell_t *c = fbox_cell(dest);
    if (!c)
        return 0;
    if (len > MSG_CELL_DATA) {
        /* The payload goes to the data ring, whole lines, never across its end. */
        uint64_t need = (len + MSG_LINE - 1) / MSG_LINE * MSG_LINE, at = t->dhead;
        if (at % E.ring + need > E.ring)
            at += E.ring - at % E.ring;
        if (at + need - t->dack > E.ring) {
            t->dack = atomic_load_explicit(&t->chan->dack, memory_order_acquire);
            if (at + need - t->dack > E.ring)
                return 0; /* the receiver has not read far enough: the inbox takes it */
        }
        memcpy((char *)&t->chan->cell[E.cells] + at % E.ring, buf, len);
        memcpy(c->data, &at, sizeof at);
        t->dhead = at + need;
    } else {
        copy_small(c->data, buf, len);
    }
    fbox_publish(dest, c, ctx, src, tag, (uint32_t)len);
    E.stats.bytes_sent += len;
    return 1;
}

/* A rendezvous header into the pair's fast box when its next cell is free: the receiver polls that
 * line anyway, where through the inbox the header costs an exchange on a tail every sender shares
 * and a pointer chase. */
static int fbox_rndv(msg_req_t *req, int dest, int32_t ctx, int32_t src, int32_t tag, const void *buf, size_t len,
                     int sync)
{
    msg_cell_t *c = fbox_cell(dest);
    if (!c)
        return 0;
    msg_ticket_t *tk = msg_rndv_prepare(req, buf, len, sync);
    /* detach word 1 for a staged send: the receiver must go to the ticket and read the copy */
    uint64_t h[4] = {len, (uint64_t)(uintptr_t)buf, (uint64_t)(uintptr_t)tk,
                     atomic_load_explicit(&tk->claim, memory_order_relaxed) == 2};
    _Static_assert(MSG_RNDV_DETACH == 3 * sizeof(uint64_t), "detach word follows the header");
    memcpy(c->data, h, sizeof h);
    req->cell = c;
    req->chan = E.tx[dest].chan;
    req->cseq = E.tx[dest].seq + 1;
    fbox_publish(dest, c, ctx, src, tag, MSG_CELL_RNDV);
    E.stats.fbox_rndv++;
    return 1;
}

BOBCAT_LAYER_API void bobcat_msg_send(msg_req_t *req, int32_t ctx, int32_t src, int32_t tag, int dest_local,
                                    const void *buf, size_t len, int sync)
{
    msg_tx_t *t = &E.tx[dest_local];
    req->dest = dest_local;
    req->live_rndv = 0;
    if (t->chan && len <= E.box_max && !sync && fbox_send(dest_local, ctx, src, tag, buf, len)) {
        req->kind = MSG_REQ_SEND;
        req->sync = 0;
        req->ticket = NULL;
        req->waits_done = 0;
        req->complete = 1;
        return;
    }
    req->kind = MSG_REQ_SEND;
    req->sync = sync;
    req->ticket = NULL;
    req->cell = NULL;
    req->sbuf = buf;
    req->slen = len;
    if (len > E.eager && t->chan && E.box_rndv && fbox_rndv(req, dest_local, ctx, src, tag, buf, len, sync)) {
        req->waits_done = req->ticket != NULL;
        req->complete = !req->waits_done;
        return;
    }
    msg_node_t *n = node_get();
    n->ctx = ctx;
    n->src = src;
    n->tag = tag;
    n->len = len;
    n->from_local = (int16_t)E.my_local;
    n->pseq = (uint32_t)t->seq++;
    n->addr = 0;
    n->done = 0;
    msg_chan_t *opened = NULL;
    atomic_store_explicit(&n->consumed, 0, memory_order_relaxed);
    req->complete = 0;
    if (len <= E.eager) {
        n->kind = MSG_NODE_EAGER;
        if (sync) {
            req->ticket = msg_ticket_get();
            n->done = (uint64_t)(uintptr_t)req->ticket;
        }
        if (len)
            memcpy(n + 1, buf, len);
        E.eager_nodes++;
        /* A pair that talks often gets a fast box; this node announces it. */
        if ((opened = fbox_due(dest_local)) != NULL)
            n->addr = (uint64_t)(uintptr_t)opened;
        E.stats.bytes_sent += len;
    } else {
        n->kind = MSG_NODE_RTS;
        n->addr = (uint64_t)(uintptr_t)buf;
        n->done = (uint64_t)(uintptr_t)msg_rndv_prepare(req, buf, len, sync);
        /* Rendezvous traffic opens the pair's box too (its headers then go through cells): the
         * node names the box in its first payload word. */
        if (E.eager >= sizeof(uint64_t) && (opened = fbox_due(dest_local)) != NULL) {
            uint64_t box = (uint64_t)(uintptr_t)opened;
            memcpy(n + 1, &box, sizeof box);
            n->kind = MSG_NODE_RTS_BOX;
        }
    }
    inbox_push(E.peer[dest_local], n);
    if (opened) {
        t->chan = opened;
        t->ack = t->seq; /* every cell is free */
        t->dhead = t->dack = 0;
    }
    req->waits_done = req->ticket != NULL;
    if (!req->waits_done)
        req->complete = 1;
}

/* A standard-mode eager send without a request: complete on return (a cell, or an inbox node). */
static __attribute__((noinline)) int send_eager_slow(int32_t ctx, int32_t src, int32_t tag, int dest_local,
                                                      const void *buf, size_t len)
{
    msg_req_t m;
    bobcat_msg_send(&m, ctx, src, tag, dest_local, buf, len, 0);
    return 0;
}

/* The one-cell case inline, with no call (so no register saves: see fbox_publish); the rest (data
 * ring, inbox) through bobcat_msg_send. */
BOBCAT_LAYER_API int bobcat_msg_send_eager(int32_t ctx, int32_t src, int32_t tag, int dest_local, const void *buf,
                                         size_t len)
{
    msg_tx_t *t = &E.tx[dest_local];
    if (len > MSG_CELL_DATA || !t->chan || t->seq - t->ack >= E.cells)
        return send_eager_slow(ctx, src, tag, dest_local, buf, len); /* tail call; reloads ack there */
    msg_cell_t *c = &t->chan->cell[t->seq & (E.cells - 1)];
    copy_small(c->data, buf, len);
    fbox_publish(dest_local, c, ctx, src, tag, (uint32_t)len);
    E.stats.bytes_sent += len;
    return 0;
}
