/* msg_engine: the inbox queue, matching and the single-copy rendezvous (see msg.h for the
 * protocol and the memory orderings). Everything except the inbox, the message nodes and the senders'
 * completion words is private to the process. */
#include "msg.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bobcat/smartmap.h>
#include "../util/util.h"

BOBCAT_LAYER_API void (*bobcat_msg_idle_hook)(void);

static struct {
    int active;
    int away;              /* the owner is away (bobcat_msg_away_begin), in its own view: read on every
                              entry, so it sits in the first line with the fields every call reads */
    size_t eager;          /* payload bytes per node */
    size_t node_size;
    unsigned grow;         /* nodes per pool chunk */
    int my_local;
    uintptr_t delta;       /* own address + delta = universal (window) address */
    msg_inbox_t *inbox;    /* own inbox (own address) */
    msg_node_t *head;      /* consumer: current head (universal address) */
    msg_inbox_t *peer[SMAP_MAX_LOCAL_RANKS]; /* peers' inboxes, through their windows */
    msg_node_t *free_nodes, *flight_head, *flight_tail; /* sender's pool */
    msg_ticket_t *free_tickets, *detached;              /* sender's tickets */
    msg_req_t *posted_head, *posted_tail;
    msg_unexp_t *unexp_head, *unexp_tail;
    msg_unexp_t *unexp_free;
    unsigned unexp_nfree;  /* entries on unexp_free (the helper takes only from a reserve) */
    /* fast boxes (msg.h): what this rank sends to each local peer, and receives from each */
    size_t split_min;      /* rendezvous from this size split the copy with the sender; 0: never */
    unsigned cells;        /* cells per box (power of two), 0: none */
    size_t cell_data;      /* largest message a cell carries */
    size_t ring;           /* data-ring bytes of the boxes I open */
    size_t box_max;        /* largest message a box of mine carries (cell or ring) */
    unsigned opened;       /* boxes I opened */
    int box_rndv;          /* rendezvous headers through cells (BOBCAT_P2P_FASTBOX_RNDV) */
    struct {
        msg_chan_t *chan;  /* my box to this peer, once announced (own address) */
        uint64_t seq;      /* messages sent to this peer */
        uint64_t ack;      /* last `ack` read from the box */
        uint64_t dhead;    /* data-ring bytes written (running offset) */
        uint64_t dack;     /* last `dack` read from the box */
        uint32_t sent;     /* messages before the box opens */
        int refused;       /* the peer has its fill of boxes */
    } tx[SMAP_MAX_LOCAL_RANKS];
    struct {
        msg_chan_t *chan;  /* the peer's box to me (in my view) */
        uint64_t expect;   /* messages received from this peer */
        uint64_t acked;    /* last value stored in the box's ack */
        uint64_t dpos;     /* data-ring offset read up to */
        uint64_t dacked;   /* last value stored in the box's dack */
        uint32_t mask;     /* its cells - 1 */
        uint64_t ring;     /* its data-ring bytes */
        const char *data;  /* its data ring */
    } rx[SMAP_MAX_LOCAL_RANKS];
    uint64_t eager_nodes;  /* eager messages sent through inboxes (stats.eager_sent adds the boxes') */
    int16_t polled[SMAP_MAX_LOCAL_RANKS]; /* peers whose boxes progress polls */
    int npolled;
    msg_stats_t stats;
} E;

_Static_assert(sizeof(msg_node_t) == MSG_LINE, "node header is one line");
_Static_assert(sizeof(msg_inbox_t) == 3 * MSG_LINE, "inbox is three lines");

/* A kind private to this file: a rendezvous header delivered while still in its cell (the `data` of
 * arrive/deliver is the cell), so the receiver may claim it fast (msg.h). */
enum { MSG_RTS_CELL = 5 };

/* Translate an address of local rank `local`'s own space into ours. */
static inline void *peer_addr(int local, uint64_t addr)
{
    if (local == E.my_local)
        return (void *)(uintptr_t)addr;
    return smap_remote_address(local, (const void *)(uintptr_t)addr);
}

static inline uint64_t universal(const void *own) { return (uint64_t)((uintptr_t)own + E.delta); }

/* Grow the sender's pool by one chunk of nodes (in the segment: receivers read them). */
static int pool_grow(void)
{
    char *chunk = NULL;
    if (posix_memalign((void **)&chunk, MSG_LINE, E.node_size * E.grow) != 0 || !smap_is_shared(chunk)) {
        util_error("msg: cannot allocate message nodes in the segment: raise BOBCAT_HEAP");
        free(chunk);
        return 0;
    }
    for (unsigned i = 0; i < E.grow; i++) {
        msg_node_t *n = (msg_node_t *)(chunk + (size_t)i * E.node_size);
        n->pool_next = E.free_nodes;
        E.free_nodes = n;
    }
    E.stats.pool_nodes += E.grow;
    return 1;
}

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
        if (!E.free_nodes && !pool_grow()) {
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

/* Link a filled node at the tail of an inbox: exchange the tail, then publish the link. Between
 * the two the list is briefly cut; the consumer then sees no next node and retries later. */
static inline void inbox_push(msg_inbox_t *ib, msg_node_t *n_own)
{
    uint64_t u = universal(n_own);
    atomic_store_explicit(&n_own->next, 0, memory_order_relaxed);
    uint64_t prev = atomic_exchange_explicit(&ib->tail, u, memory_order_acq_rel);
    atomic_store_explicit(&((msg_node_t *)(uintptr_t)prev)->next, u, memory_order_release);
}

BOBCAT_LAYER_API bobcat_status_t bobcat_msg_init(size_t eager, unsigned nodes, void **inbox_p)
{
    if (E.active) {
        *inbox_p = E.inbox;
        return BOBCAT_OK;
    }
    if (eager > (1u << 20)) {
        util_error("msg: BOBCAT_P2P_EAGER must be <= 1M (got %zu)", eager);
        return BOBCAT_ERR_INVAL;
    }
    E.my_local = smap_local_rank();
    msg_inbox_t *ib = NULL;
    if (posix_memalign((void **)&ib, 4096, sizeof *ib) != 0 || !smap_is_shared(ib)) {
        util_error("msg: cannot allocate the inbox in the segment (raise BOBCAT_HEAP)");
        free(ib);
        return BOBCAT_ERR_NOMEM;
    }
    void *win = smap_remote_address(E.my_local, ib);
    if (!win) {
        util_error("msg: this rank's own window is not mapped; point-to-point stays with the real MPI");
        free(ib);
        return BOBCAT_ERR_LAYOUT;
    }
    E.delta = (uintptr_t)win - (uintptr_t)ib;
    memset(ib, 0, sizeof *ib);
    ib->magic = MSG_INBOX_MAGIC;
    ib->stub.kind = MSG_NODE_STUB;
    atomic_store_explicit(&ib->tail, universal(&ib->stub), memory_order_release);
    E.head = (msg_node_t *)(uintptr_t)universal(&ib->stub);
    E.eager = eager;
    E.node_size = (sizeof(msg_node_t) + eager + MSG_LINE - 1) / MSG_LINE * MSG_LINE;
    E.grow = nodes ? nodes : 64;
    E.inbox = ib;
    if (!pool_grow()) {
        free(ib);
        return BOBCAT_ERR_NOMEM;
    }
    E.active = 1;
    *inbox_p = ib;
    return BOBCAT_OK;
}

BOBCAT_LAYER_API int bobcat_msg_set_peer(int local, void *inbox)
{
    if (local < 0 || local >= SMAP_MAX_LOCAL_RANKS || !inbox)
        return 0;
    E.peer[local] = smap_remote_address(local, inbox); /* the universal form, also for ourselves */
    return E.peer[local] != NULL && E.peer[local]->magic == MSG_INBOX_MAGIC;
}

BOBCAT_LAYER_API void bobcat_msg_set_fastbox(unsigned cells, size_t ring)
{
    unsigned c = 1;
    while (c * 2 <= cells && c < (1u << 16))
        c *= 2;
    E.cells = cells ? c : 0;
    E.cell_data = E.eager < MSG_CELL_DATA ? E.eager : MSG_CELL_DATA;
    E.ring = ring / MSG_LINE * MSG_LINE;
    E.box_max = E.ring && E.eager > E.cell_data ? (E.eager < E.ring ? E.eager : E.ring) : E.cell_data;
}

BOBCAT_LAYER_API void bobcat_msg_set_split(size_t min_bytes) { E.split_min = min_bytes; }

BOBCAT_LAYER_API size_t bobcat_msg_eager_limit(void) { return E.eager; }
BOBCAT_LAYER_API int bobcat_msg_active(void) { return E.active; }
BOBCAT_LAYER_API int bobcat_msg_busy(void) { return E.away || E.posted_head != NULL; }
BOBCAT_LAYER_API const msg_stats_t *bobcat_msg_stats(void)
{
    /* Derived here, not counted per message: a small send's stores are its cost (msg.h, fast box). */
    E.stats.eager_sent = E.eager_nodes + E.stats.fbox_sent - E.stats.fbox_rndv;
    return &E.stats;
}

BOBCAT_LAYER_API bobcat_status_t bobcat_msg_setup(void **inbox_p)
{
    util_options_t o;
    if (util_options_load(&o) != BOBCAT_OK || !o.P2P)
        return BOBCAT_ERR_INVAL;
    size_t page;
    if (smap_world_size() == 0 || smap_segment_info(&page, NULL) == SMAP_PAGES_NONE)
        return BOBCAT_ERR_INVAL; /* not started by yod: no segment, no windows */
    bobcat_status_t st = bobcat_msg_init(o.P2P_EAGER, (unsigned)o.P2P_NODES, inbox_p);
    if (st == BOBCAT_OK) {
        bobcat_msg_set_fastbox(o.P2P_FASTBOX > (1u << 16) ? (1u << 16) : (unsigned)o.P2P_FASTBOX, o.P2P_FASTBOX_RING);
        bobcat_msg_set_split(o.P2P_SPLIT_MIN);
        E.box_rndv = o.P2P_FASTBOX_RNDV;
    }
    return st;
}

static msg_ticket_t *ticket_get(void)
{
    msg_ticket_t *t = E.free_tickets;
    if (t != NULL) {
        E.free_tickets = t->next;
    } else {
        t = calloc(1, sizeof *t);
        if (!t || !smap_is_shared(t)) {
            util_out_of_memory("a send ticket", sizeof *t);
        }
    }
    atomic_store_explicit(&t->done, 0, memory_order_relaxed);
    atomic_store_explicit(&t->claim, 0, memory_order_relaxed);
    atomic_store_explicit(&t->push, 0, memory_order_relaxed);
    atomic_store_explicit(&t->pushed, 0, memory_order_relaxed);
    t->bounce = 0;
    t->owned = NULL;
    t->next = NULL;
    return t;
}

static void ticket_put(msg_ticket_t *t)
{
    free(t->owned);
    t->owned = NULL;
    t->next = E.free_tickets;
    E.free_tickets = t;
}

/* Detached tickets whose receiver has finished: free their copies. */
static void reap_detached(void)
{
    msg_ticket_t **pp = &E.detached;
    while (*pp) {
        msg_ticket_t *t = *pp;
        if (atomic_load_explicit(&t->done, memory_order_acquire)) {
            *pp = t->next;
            ticket_put(t);
        } else {
            pp = &t->next;
        }
    }
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
    __typeof__(E.tx[0]) *t = &E.tx[dest];
    if (!E.cells || t->chan || t->refused || dest == E.my_local || ++t->sent < MSG_FBOX_AFTER)
        return NULL;
    return fbox_open(dest);
}

/* The cell of the pair's next message, if the receiver has taken the message that used it last. */
static inline msg_cell_t *fbox_cell(int dest)
{
    __typeof__(E.tx[0]) *t = &E.tx[dest];
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
    __typeof__(E.tx[0]) *t = &E.tx[dest];
    struct { uint32_t len; int32_t ctx, src, tag; } h = {len, ctx, src, tag};
    memcpy(&c->len, &h, sizeof h);
    atomic_store_explicit(&c->seq, t->seq + 1, memory_order_release);
    t->seq++;
    E.stats.fbox_sent++;
}

/* Up to MSG_CELL_DATA bytes into a cell: a few moves, no call (overlapping ones for odd sizes). */
static inline void copy_small(unsigned char *d, const void *src, size_t len)
{
    const unsigned char *s = src;
    if (len >= 8) {
        for (size_t k = 0; k + 8 < len; k += 8)
            memcpy(d + k, s + k, 8);
        memcpy(d + len - 8, s + len - 8, 8);
    } else if (len >= 4) {
        memcpy(d, s, 4);
        memcpy(d + len - 4, s + len - 4, 4);
    } else if (len) {
        d[0] = s[0];
        d[len / 2] = s[len / 2];
        d[len - 1] = s[len - 1];
    }
}

/* A small message into the pair's fast box, if it fits and the cell is free. */
static inline int fbox_send(int dest, int32_t ctx, int32_t src, int32_t tag, const void *buf, size_t len)
{
    __typeof__(E.tx[0]) *t = &E.tx[dest];
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

/* The rendezvous half of a send: its ticket, and the data staged in the segment when peers cannot
 * see the buffer (stack, static data, a foreign mapping): such a send is detached from the start
 * (the receiver reads the copy). Returns the ticket the header names. */
static msg_ticket_t *rndv_prepare(msg_req_t *req, const void *buf, size_t len, int sync)
{
    msg_ticket_t *tk = ticket_get();
    req->ticket = tk;
    if (!smap_is_shared(buf)) {
        void *b = malloc(len);
        if (!b || !smap_is_shared(b)) {
            util_out_of_memory("staging a send from outside the segment", len);
        }
        util_copy(b, buf, len);
        tk->bounce = (uint64_t)(uintptr_t)b;
        tk->owned = b;
        atomic_store_explicit(&tk->claim, 2, memory_order_relaxed); /* published with the header */
        E.stats.staged_sent++;
        if (!sync) {
            tk->next = E.detached;
            E.detached = tk;
            req->ticket = NULL;
        }
    }
    E.stats.rndv_sent++;
    E.stats.bytes_sent += len;
    return tk;
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
    msg_ticket_t *tk = rndv_prepare(req, buf, len, sync);
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
    __typeof__(E.tx[0]) *t = &E.tx[dest_local];
    req->dest = dest_local;
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
            req->ticket = ticket_get();
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
        n->done = (uint64_t)(uintptr_t)rndv_prepare(req, buf, len, sync);
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
    __typeof__(E.tx[0]) *t = &E.tx[dest_local];
    if (len > MSG_CELL_DATA || !t->chan || t->seq - t->ack >= E.cells)
        return send_eager_slow(ctx, src, tag, dest_local, buf, len); /* tail call; reloads ack there */
    msg_cell_t *c = &t->chan->cell[t->seq & (E.cells - 1)];
    copy_small(c->data, buf, len);
    fbox_publish(dest_local, c, ctx, src, tag, (uint32_t)len);
    E.stats.bytes_sent += len;
    return 0;
}

/* The receiver offered this send's tail: copy it into the receiver's buffer (split copy). */
static void take_offer(msg_req_t *req)
{
    msg_ticket_t *t = req->ticket;
    uint32_t offered = 1;
    if (!atomic_compare_exchange_strong_explicit(&t->push, &offered, 2, memory_order_acquire, memory_order_relaxed))
        return;
    util_copy((char *)(uintptr_t)t->dst + t->lo, (const char *)req->sbuf + t->lo, t->len - t->lo);
    atomic_store_explicit(&t->pushed, 1, memory_order_release);
    E.stats.split_pushed++;
    E.stats.bytes_pushed += t->len - t->lo;
}

BOBCAT_LAYER_API int bobcat_msg_test(msg_req_t *req)
{
    if (!req->complete && req->waits_done && atomic_load_explicit(&req->ticket->push, memory_order_acquire) == 1)
        take_offer(req);
    if (!req->complete && req->waits_done && atomic_load_explicit(&req->ticket->done, memory_order_acquire)) {
        ticket_put(req->ticket);
        req->ticket = NULL;
        req->complete = 1;
    }
    return req->complete;
}

BOBCAT_LAYER_API int bobcat_msg_detach(msg_req_t *req)
{
    if (bobcat_msg_test(req) || req->sync || !req->ticket)
        return req->complete;
    msg_ticket_t *t = req->ticket;
    msg_cell_t *c = req->cell;
    if (c && atomic_load_explicit(&c->seq, memory_order_relaxed) == req->cseq) {
        /* The header is still in its cell: the receiver may be fast-claiming it (msg.h, "Fast
         * claim"). Our detach word against its claim. */
        __atomic_store_n((uint64_t *)(void *)(c->data + MSG_RNDV_DETACH), 1, __ATOMIC_RELAXED);
        atomic_thread_fence(memory_order_seq_cst);
        uint64_t fast = atomic_load_explicit(&req->chan->claim, memory_order_relaxed);
        if (fast == req->cseq)
            return 0; /* it copies from the buffer: wait for done */
        if (fast > req->cseq && bobcat_msg_test(req))
            return 1; /* settled while we looked */
    }
    if (atomic_load_explicit(&t->claim, memory_order_relaxed) != 0)
        return 0; /* the receiver is copying: wait for it */
    void *b = malloc(req->slen);
    if (!b || !smap_is_shared(b)) {
        free(b);
        return 0; /* no room for a copy: keep waiting for the receiver */
    }
    util_copy(b, req->sbuf, req->slen);
    t->bounce = (uint64_t)(uintptr_t)b;
    uint32_t open = 0;
    if (!atomic_compare_exchange_strong_explicit(&t->claim, &open, 2, memory_order_release, memory_order_relaxed)) {
        t->bounce = 0;
        free(b); /* the receiver claimed the buffer meanwhile */
        return 0;
    }
    t->owned = b;
    t->next = E.detached;
    E.detached = t;
    req->ticket = NULL;
    req->complete = 1;
    E.stats.detached++;
    return 1;
}

static inline int matches(int32_t want_ctx, int32_t want_src, int32_t want_tag, int32_t ctx, int32_t src, int32_t tag)
{
    return want_ctx == ctx && (want_src == MSG_ANY || want_src == src) && (want_tag == MSG_ANY || want_tag == tag);
}

/* Tell the sender its message was taken (rendezvous: after the copy; release orders the copy's
 * reads of its buffer before the sender may reuse it). */
static inline void signal_sender(int from_local, uint64_t done)
{
    if (!done)
        return;
    msg_ticket_t *t = peer_addr(from_local, done);
    atomic_store_explicit(&t->done, 1, memory_order_release);
}

/* Copy n bytes of a claimed rendezvous from s to buf, offering the sender the tail (msg.h,
 * msg_ticket_t). The split point is a cache line of buf, so the two writers share none. */
static void split_copy(msg_ticket_t *t, void *buf, const void *s, uint64_t n)
{
    uint64_t lo = (((uintptr_t)buf + n / 2 + MSG_LINE - 1) & ~(uintptr_t)(MSG_LINE - 1)) - (uintptr_t)buf;
    if (lo >= n) {
        util_copy(buf, s, n);
        return;
    }
    t->dst = universal(buf);
    t->lo = lo;
    t->len = n;
    atomic_store_explicit(&t->push, 1, memory_order_release);
    util_copy(buf, s, lo);
    uint32_t offered = 1;
    if (atomic_compare_exchange_strong_explicit(&t->push, &offered, 3, memory_order_relaxed, memory_order_relaxed)) {
        util_copy((char *)buf + lo, (const char *)s + lo, n - lo); /* the sender was busy elsewhere */
        return;
    }
    /* The sender is copying the tail: wait for it (yielding, in case it shares our core). */
    unsigned spins = 0;
    while (!atomic_load_explicit(&t->pushed, memory_order_acquire)) {
        if (++spins % 256 == 0)
            sched_yield();
        util_poll_pause();
    }
}

/* The single copy of a rendezvous: claim the sender's buffer (fast, while the header is still in
 * `cell`, else by the ticket's CAS, msg.h) unless the sender has detached to a copy, and copy n bytes
 * of it to buf. The caller signals the sender. */
static void rndv_pull(void *buf, uint64_t n, uint64_t addr, uint64_t done, int from_local, const msg_cell_t *cell)
{
    msg_ticket_t *t = peer_addr(from_local, done);
    uint64_t from = addr;
    int claimed = 0;
    if (cell) {
        atomic_store_explicit(&E.rx[from_local].chan->claim, atomic_load_explicit(&cell->seq, memory_order_relaxed),
                              memory_order_relaxed);
        atomic_thread_fence(memory_order_seq_cst);
        claimed = __atomic_load_n((const uint64_t *)(const void *)(cell->data + MSG_RNDV_DETACH), __ATOMIC_RELAXED) == 0;
    }
    uint32_t open = 0;
    if (!claimed &&
        !atomic_compare_exchange_strong_explicit(&t->claim, &open, 1, memory_order_acquire, memory_order_acquire))
        from = t->bounce; /* open == 2: the copy is complete (the sender's release) */
    const void *s = peer_addr(from_local, from);
    if (from == addr && E.split_min && n >= E.split_min && from_local != E.my_local && smap_is_shared(buf))
        split_copy(t, buf, s, n);
    else if (n)
        util_copy(buf, s, n);
    E.stats.rndv_recv++;
    E.stats.bytes_single_copy += n;
}

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
        rndv_pull(r->buf, n, addr, done, from_local, kind == MSG_RTS_CELL ? data : NULL);
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

static void unexp_put(msg_unexp_t *u)
{
    u->next = E.unexp_free;
    E.unexp_free = u;
    E.unexp_nfree++;
}

static void unexp_unlink(msg_unexp_t *u)
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
static void arrive(int32_t ctx, int32_t src, int32_t tag, uint32_t kind, uint64_t len, uint64_t addr, uint64_t done,
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

/* The pair's next message is in its cell (acquire: the cell's fields). */
static inline int fbox_ready(const __typeof__(E.rx[0]) *x)
{
    return atomic_load_explicit(&x->chan->cell[x->expect & x->mask].seq, memory_order_acquire) == x->expect + 1;
}

/* Cells or ring bytes taken since the last acknowledgement. */
static inline int fbox_owes_ack(const __typeof__(E.rx[0]) *x)
{
    return x->acked != x->expect || x->dacked != x->dpos;
}

/* Where the eager message of `len` bytes in cell c lies: the cell itself, or (above MSG_CELL_DATA)
 * the data ring at the offset the cell names; a ring payload moves the read position past it. */
static inline const void *fbox_payload(__typeof__(E.rx[0]) *x, const msg_cell_t *c, uint32_t len)
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
    __typeof__(E.rx[0]) *x = &E.rx[s];
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
        arrive(c->ctx, c->src, c->tag, MSG_RTS_CELL, h[0], h[1], h[2], s, c);
    } else {
        arrive(c->ctx, c->src, c->tag, MSG_NODE_EAGER, len, 0, 0, s, fbox_payload(x, c, len));
    }
    x->expect++;
    E.stats.fbox_recv++;
    return 1;
}

/* Let the sender reuse the cells taken so far (release: their reads are done). */
static inline void fbox_ack(int s)
{
    __typeof__(E.rx[0]) *x = &E.rx[s];
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
    __typeof__(E.rx[0]) *x = &E.rx[s];
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
    arrive(c->ctx, c->src, c->tag, kind, c->len, kind == MSG_NODE_EAGER ? 0 : c->addr, c->done, s, c + 1);
    x->expect++;
}

/* Take the next node out of the inbox (Vyukov's pop); NULL if none is fully linked yet. */
static msg_node_t *inbox_pop(void)
{
    msg_node_t *stub = (msg_node_t *)(uintptr_t)universal(&E.inbox->stub);
    msg_node_t *head = E.head;
    uint64_t next = atomic_load_explicit(&head->next, memory_order_acquire);
    if (head == stub) {
        if (!next)
            return NULL;
        E.head = head = (msg_node_t *)(uintptr_t)next;
        next = atomic_load_explicit(&head->next, memory_order_acquire);
    }
    if (next) {
        E.head = (msg_node_t *)(uintptr_t)next;
        return head;
    }
    if (atomic_load_explicit(&E.inbox->tail, memory_order_acquire) != (uint64_t)(uintptr_t)head)
        return NULL; /* a sender is between its exchange and its link */
    inbox_push(E.inbox, &E.inbox->stub);
    next = atomic_load_explicit(&head->next, memory_order_acquire);
    if (next) {
        E.head = (msg_node_t *)(uintptr_t)next;
        return head;
    }
    return NULL;
}

/* The inbox holds no node: the consumer's head is the stub and nothing is linked behind it. */
static inline int inbox_empty(void)
{
    msg_node_t *head = E.head;
    return head == (msg_node_t *)(uintptr_t)universal(&E.inbox->stub) &&
           !atomic_load_explicit(&head->next, memory_order_acquire);
}

/* Nothing to take: no detached send to reap, the inbox at its stub with no node behind it, no
 * fast box with its next cell filled or an acknowledgement owed. One line per peer polled, read
 * shared; the common answer of a polling loop, kept out of the slow path's frame. */
static inline int progress_idle(void)
{
    if (E.detached || !inbox_empty())
        return 0;
    for (int i = 0; i < E.npolled; i++) {
        const __typeof__(E.rx[0]) *x = &E.rx[E.polled[i]];
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
        reap_detached();
    while ((c = inbox_pop()) != NULL) {
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

/* ---- away: the helper thread (msg.h, "Away") ---- */

static struct {
    pthread_t thread;
    int started;
    _Atomic int stop;
} A;

static long futex_op(_Atomic uint32_t *word, int op, uint32_t val)
{
    /* shared futex: the word is in the segment and senders of other processes wake it */
    return syscall(SYS_futex, (uint32_t *)word, op, val, NULL, NULL, 0);
}

/* The helper's pass: arrivals in order, while its reserve of unexpected entries lasts (it never
 * allocates: malloc would give this thread an arena block of its own in the segment); detached
 * sends are the owner's to reap. A node may bring up to `cells` box messages before it. */
static void progress_helper(void)
{
    msg_node_t *c;
    while (E.unexp_nfree >= E.cells + 2 && (c = inbox_pop()) != NULL) {
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

static void *helper_main(void *arg)
{
    (void)arg;
    msg_inbox_t *ib = E.inbox;
    for (;;) {
        uint32_t seen = atomic_load_explicit(&ib->kick, memory_order_acquire);
        if (atomic_load_explicit(&A.stop, memory_order_acquire))
            break;
        uint32_t s = MSG_AWAY;
        if (atomic_compare_exchange_strong_explicit(&ib->away, &s, MSG_PROXY, memory_order_acquire,
                                                    memory_order_relaxed)) {
            progress_helper();
            atomic_store_explicit(&ib->away, MSG_AWAY, memory_order_release);
        }
        futex_op(&ib->kick, FUTEX_WAIT, seen); /* returns at once if a kick came meanwhile */
    }
    return NULL;
}

static void helper_forget(void) { A.started = 0; } /* a forked child has no helper */

static int helper_start(void)
{
    static int atfork;
    if (!atfork && pthread_atfork(NULL, NULL, helper_forget) == 0)
        atfork = 1;
    pthread_attr_t at;
    sigset_t all, old;
    if (pthread_attr_init(&at) != 0)
        return -1;
    pthread_attr_setstacksize(&at, 256 * 1024);
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* signals stay the program's thread's */
    atomic_store_explicit(&A.stop, 0, memory_order_relaxed);
    int rc = pthread_create(&A.thread, &at, helper_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&at);
    if (rc != 0) {
        util_error("msg: cannot start the progress helper thread (%s): a rank blocked in the real MPI will not "
                   "match its node mates' synchronous sends",
                   strerror(rc));
        return -1;
    }
    pthread_setname_np(A.thread, "bobcat-progress");
    A.started = 1;
    return 0;
}

/* Take the engine back from the helper (it may be in a pass: wait for its end). */
static __attribute__((noinline)) void come_home(void)
{
    unsigned spins = 0;
    for (;;) {
        uint32_t s = MSG_AWAY;
        if (atomic_compare_exchange_weak_explicit(&E.inbox->away, &s, MSG_HOME, memory_order_acquire,
                                                  memory_order_relaxed))
            break;
        if (++spins % 64 == 0)
            sched_yield();
        else
            util_poll_pause();
    }
    E.away = 0;
}

/* Every entry that touches the receiver's state starts here. */
static inline void home(void)
{
    if (__builtin_expect(E.away, 0))
        come_home();
}

BOBCAT_LAYER_API int bobcat_msg_away_begin(void)
{
    if (!E.active || E.away || !E.posted_head)
        return 0;
    if (!A.started && helper_start() != 0)
        return 0;
    /* the helper's reserve: enough for a node and the box messages before it, twice */
    while (E.unexp_nfree < 2 * (E.cells + 2)) {
        msg_unexp_t *u = malloc(sizeof *u + E.eager);
        if (!u)
            break;
        u->data = (char *)(u + 1);
        unexp_put(u);
    }
    E.away = 1;
    atomic_store_explicit(&E.inbox->away, MSG_AWAY, memory_order_release);
    return 1;
}

BOBCAT_LAYER_API void bobcat_msg_away_end(int went)
{
    if (went)
        home(); /* nothing to do if a callback came home already */
}

BOBCAT_LAYER_API void bobcat_msg_nudge(const msg_req_t *req)
{
    if (!E.active || req->complete || !req->waits_done)
        return;
    msg_inbox_t *ib = E.peer[req->dest];
    if (!ib || atomic_load_explicit(&ib->away, memory_order_relaxed) == MSG_HOME)
        return;
    atomic_fetch_add_explicit(&ib->kick, 1, memory_order_release);
    futex_op(&ib->kick, FUTEX_WAKE, 1);
}

BOBCAT_LAYER_API void bobcat_msg_away_stop(void)
{
    home();
    if (!A.started)
        return;
    atomic_store_explicit(&A.stop, 1, memory_order_release);
    atomic_fetch_add_explicit(&E.inbox->kick, 1, memory_order_release);
    futex_op(&E.inbox->kick, FUTEX_WAKE, 1);
    pthread_join(A.thread, NULL);
    A.started = 0;
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
    __typeof__(E.rx[0]) *x = &E.rx[from_local];
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
        rndv_pull(buf, h[0], h[1], h[2], from_local, c);
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
            unexp_unlink(u);
            deliver(req, u->src, u->tag, u->kind, u->len, u->addr, u->done, u->from_local, u->data);
            unexp_put(u);
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

BOBCAT_LAYER_API msg_unexp_t *bobcat_msg_probe(int32_t ctx, int32_t src, int32_t tag, int take)
{
    home();
    bobcat_msg_progress();
    for (msg_unexp_t *u = E.unexp_head; u; u = u->next)
        if (matches(ctx, src, tag, u->ctx, u->src, u->tag)) {
            if (take)
                unexp_unlink(u);
            return u;
        }
    return NULL;
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
    unexp_put(m);
}

BOBCAT_LAYER_API void *bobcat_msg_alloc_shared(size_t size)
{
    void *p = calloc(1, size);
    if (p && !smap_is_shared(p)) {
        free(p);
        return NULL;
    }
    return p;
}
