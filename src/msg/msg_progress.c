/* msg_progress: the receiver's passes. Take arrivals out of the inbox and the fast boxes in each
 * pair's order and hand them to matching; the helper thread's pass (msg_away.c); a blocking
 * receive's short cut straight from a cell; probe. */
#include <stdlib.h>
#include <string.h>

#include "msg_engine.h"

/* The pair's next message is in its cell (acquire: the cell's fields). */
static inline int fbox_ready(const msg_rx_t *x)
{
    return atomic_load_explicit(&x->chan->cell[x->expect & x->mask].seq, memory_order_acquire) == x->expect + 1;
}

/* Cells or ring bytes taken since the last acknowledgement. */
static inline int fbox_owes_ack(const msg_rx_t *x)
{
    return x->acked != x->expect || x->dacked != x->dpos;
}

/* Where the eager message of `len` bytes in cell c lies: the cell itself, or (above MSG_CELL_DATA)
 * the data ring at the offset the cell names; a ring payload moves the read position past it. */
static inline const void *fbox_payload(msg_rx_t *x, const msg_cell_t *c, uint32_t len)
{
    if (len <= MSG_CELL_DATA)
        return c->data;
    uint64_t at;
    memcpy(&at, c->data, sizeof at);
    x->dpos = at + (len + MSG_LINE - 1) / MSG_LINE * MSG_LINE;
    return x->data + at % x->ring;
}

/* Take the pair's next message out of its fast box if it is there. */
static inline int fbox_take(int s)
{
    msg_rx_t *x = &E.rx[s];
    if (!fbox_ready(x))
        return 0;
    msg_cell_t *c = &x->chan->cell[x->expect & x->mask];
    /* A sender ahead of us has filled the next cells too: start their transfers now, four deep,
     * so a window of messages costs overlapped line transfers instead of one full transfer each
     * (a cell not written yet is normally still in our cache from its last use: a free hit). */
    for (uint64_t k = 1; k <= 4; k++)
        __builtin_prefetch(&x->chan->cell[(x->expect + k) & x->mask]);
    uint32_t len = c->len;
    if (len == MSG_CELL_RNDV) {
        uint64_t h[3];
        memcpy(h, c->data, sizeof h);
        msg_arrive(c->ctx, c->src, c->tag, MSG_RTS_CELL, h[0], h[1], h[2], s, c);
    } else {
        msg_arrive(c->ctx, c->src, c->tag, MSG_NODE_EAGER, len, 0, 0, s, fbox_payload(x, c, len));
    }
    x->expect++;
    E.stats.fbox_recv++;
    return 1;
}

/* Let the sender reuse the cells taken so far (release: their reads are done). */
static inline void fbox_ack(int s)
{
    msg_rx_t *x = &E.rx[s];
    if (x->dacked != x->dpos) {
        atomic_store_explicit(&x->chan->dack, x->dpos, memory_order_release);
        x->dacked = x->dpos;
    }
    if (x->acked != x->expect) {
        atomic_store_explicit(&x->chan->ack, x->expect, memory_order_release);
        x->acked = x->expect;
    }
}

/* A node from the inbox, in its pair's order: the pair's fast-box messages numbered before it
 * come first (they are visible: written before the node was pushed). */
static void arrive_node(const msg_node_t *c)
{
    int s = c->from_local;
    msg_rx_t *x = &E.rx[s];
    if (x->chan)
        while ((uint32_t)x->expect != c->pseq)
            if (!fbox_take(s)) {
                util_error("msg: fast box of local rank %d out of order (expected message %llu, node %u)", s,
                           (unsigned long long)x->expect, c->pseq);
                abort();
            }
    uint32_t kind = c->kind;
    uint64_t box = kind == MSG_NODE_EAGER ? c->addr : 0;
    if (kind == MSG_NODE_RTS_BOX) {
        memcpy(&box, c + 1, sizeof box);
        kind = MSG_NODE_RTS;
    }
    if (box && !x->chan) {
        x->chan = peer_addr(s, box);
        x->acked = 0;
        x->dpos = x->dacked = 0;
        x->mask = x->chan->cells - 1;
        x->ring = x->chan->ring;
        x->data = (const char *)&x->chan->cell[x->chan->cells];
        E.polled[E.npolled++] = (int16_t)s;
    }
    msg_arrive(c->ctx, c->src, c->tag, kind, c->len, kind == MSG_NODE_EAGER ? 0 : c->addr, c->done, s, c + 1);
    x->expect++;
}

/* Nothing to take: no detached send to reap, the inbox at its stub with no node behind it, no
 * fast box with its next cell filled or an acknowledgement owed. One line per peer polled, read
 * shared; the common answer of a polling loop, kept out of the slow path's frame. */
static inline int progress_idle(void)
{
    if (E.detached || !inbox_empty())
        return 0;
    for (int i = 0; i < E.npolled; i++) {
        const msg_rx_t *x = &E.rx[E.polled[i]];
        if (fbox_owes_ack(x) || fbox_ready(x))
            return 0;
    }
    return 1;
}

/* Take arrivals out of the inbox and the fast boxes; with `stop`, only until it completes (the
 * rest stay where they are for the receives about to be posted, instead of being copied aside as
 * unexpected: a receiver posting a window of receives takes each message straight from its cell). */
static __attribute__((noinline)) int progress_take(const msg_req_t *stop)
{
    int n = 0;
    msg_node_t *c;
    if (E.detached)
        msg_reap_detached();
    while ((c = msg_inbox_pop()) != NULL) {
        arrive_node(c);
        atomic_store_explicit(&c->consumed, 1, memory_order_release);
        n++;
        if (stop && stop->complete)
            break;
    }
    for (int i = 0; i < E.npolled; i++) {
        int s = E.polled[i];
        while (!(stop && stop->complete) && fbox_take(s))
            n++;
        fbox_ack(s);
    }
    return n;
}

static inline int progress_until(const msg_req_t *stop)
{
    return progress_idle() ? 0 : progress_take(stop);
}

/* The helper's pass: arrivals in order, while its reserve of unexpected entries lasts (it never
 * allocates: malloc would give this thread an arena block of its own in the segment); detached
 * sends are the owner's to reap. A node may bring up to `cells` box messages before it. */
void msg_progress_helper(void)
{
    msg_node_t *c;
    while (E.unexp_nfree >= E.cells + 2 && (c = msg_inbox_pop()) != NULL) {
        arrive_node(c);
        atomic_store_explicit(&c->consumed, 1, memory_order_release);
    }
    for (int i = 0; i < E.npolled; i++) {
        int s = E.polled[i];
        while (E.unexp_nfree >= 1 && fbox_take(s))
            ;
        fbox_ack(s);
    }
}

BOBCAT_LAYER_API int bobcat_msg_progress(void)
{
    if (!E.active)
        return 0;
    home();
    return progress_until(NULL);
}

BOBCAT_LAYER_API int bobcat_msg_progress_for(const msg_req_t *req)
{
    if (!E.active)
        return 0;
    home();
    return progress_until(req);
}

/* A blocking receive's short cut (msg.h): the pair's next message, straight from its cell. */
BOBCAT_LAYER_API int bobcat_msg_recv_box(int32_t ctx, int32_t src, int32_t tag, int from_local, void *buf, size_t cap,
                                       unsigned polls, int32_t *tag_p, uint64_t *len_p)
{
    msg_rx_t *x = &E.rx[from_local];
    /* Anything that could come first in MPI's order, or that progress owes someone, takes the long
     * way: posted receives (they match before this one), unexpected arrivals (one may match),
     * detached sends to reap. */
    if (!E.active || E.away || !x->chan || E.posted_head || E.unexp_head || E.detached)
        return 0;
    for (unsigned k = 0;; k++) {
        if (fbox_ready(x))
            break;
        /* A node in the inbox may be this pair's next message, or another's to take in order. */
        if (!inbox_empty() || k >= polls)
            return 0;
        util_poll_pause();
    }
    msg_cell_t *c = &x->chan->cell[x->expect & x->mask];
    uint32_t len = c->len;
    if (c->ctx != ctx || c->src != src || (tag != MSG_ANY && c->tag != tag))
        return 0; /* not for this receive: progress takes it */
    if (len == MSG_CELL_RNDV) {
        uint64_t h[3];
        memcpy(h, c->data, sizeof h);
        if (h[0] > cap)
            return 0; /* truncated: the long way reports it */
        msg_rndv_pull(buf, h[0], h[1], h[2], from_local, c);
        signal_sender(from_local, h[2]);
        *len_p = h[0];
    } else {
        if (len > cap)
            return 0;
        if (len > MSG_CELL_DATA)
            memcpy(buf, fbox_payload(x, c, len), len);
        else
            copy_small(buf, c->data, len);
        *len_p = len;
        E.stats.eager_recv++;
    }
    *tag_p = c->tag;
    x->expect++;
    E.stats.fbox_recv++;
    E.stats.fbox_direct++;
    fbox_ack(from_local);
    return 1;
}

BOBCAT_LAYER_API msg_unexp_t *bobcat_msg_probe(int32_t ctx, int32_t src, int32_t tag, int take)
{
    home();
    bobcat_msg_progress();
    for (msg_unexp_t *u = E.unexp_head; u; u = u->next)
        if (matches(ctx, src, tag, u->ctx, u->src, u->tag)) {
            if (take)
                msg_unexp_unlink(u);
            return u;
        }
    return NULL;
}
