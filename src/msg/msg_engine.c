/* msg_engine: the inbox queue, matching and the single-copy rendezvous (see msg.h for the
 * protocol and the memory orderings). Everything except the inbox cells and the senders'
 * completion words is private to the process. */
#include "msg.h"

#include <stdlib.h>
#include <string.h>

#include <bobcat/smartmap.h>
#include "../util/util.h"

static struct {
    int active;
    size_t eager;          /* payload bytes per cell */
    unsigned ncells;
    size_t cell_size;
    int my_local;
    msg_inbox_t *inbox;    /* own inbox (own address) */
    uint64_t head;         /* next ticket to consume (only this process consumes) */
    msg_inbox_t *peer[SMAP_MAX_LOCAL_RANKS]; /* peers' inboxes, through their windows */
    msg_req_t *posted_head, *posted_tail;
    msg_unexp_t *unexp_head, *unexp_tail;
    msg_unexp_t *unexp_free;
    struct pending *pend_head, *pend_tail;
    msg_stats_t stats;
} E;

/* A send waiting for room in the destination's inbox. Its cell image is kept whole. */
typedef struct pending {
    struct pending *next;
    int dest;
    msg_cell_hdr_t hdr;
    char *payload;
} pending_t;

_Static_assert(sizeof(msg_cell_hdr_t) == MSG_LINE, "cell header is one line");
_Static_assert(sizeof(msg_inbox_t) == 2 * MSG_LINE, "inbox header is two lines");

static inline msg_cell_hdr_t *cell_at(msg_inbox_t *ib, uint64_t ticket)
{
    return (msg_cell_hdr_t *)((char *)ib + sizeof(msg_inbox_t) + (size_t)(ticket % E.ncells) * E.cell_size);
}

/* Translate an address of local rank `local`'s own space into ours. */
static inline void *peer_addr(int local, uint64_t addr)
{
    if (local == E.my_local)
        return (void *)(uintptr_t)addr;
    return smap_remote_address(local, (const void *)(uintptr_t)addr);
}

BOBCAT_MSG_API bobcat_status_t bobcat_msg_init(size_t eager, unsigned ncells, void **inbox_p)
{
    if (E.active) {
        *inbox_p = E.inbox;
        return BOBCAT_OK;
    }
    if (ncells < 2 || eager > (1u << 20)) {
        util_error("msg: BOBCAT_P2P_CELLS must be >= 2 and BOBCAT_P2P_EAGER <= 1M (got %u, %zu)", ncells, eager);
        return BOBCAT_ERR_INVAL;
    }
    size_t cell = (sizeof(msg_cell_hdr_t) + eager + MSG_LINE - 1) / MSG_LINE * MSG_LINE;
    size_t bytes = sizeof(msg_inbox_t) + cell * ncells;
    msg_inbox_t *ib = NULL;
    if (posix_memalign((void **)&ib, 4096, bytes) != 0 || !smap_is_shared(ib)) {
        util_error("msg: cannot allocate a %zu-byte inbox in the segment (raise BOBCAT_HEAP or lower "
                   "BOBCAT_P2P_CELLS)", bytes);
        free(ib);
        return BOBCAT_ERR_NOMEM;
    }
    memset(ib, 0, bytes);
    ib->ncells = ncells;
    ib->cell_size = (uint32_t)cell;
    ib->magic = MSG_INBOX_MAGIC;
    E.eager = eager;
    E.ncells = ncells;
    E.cell_size = cell;
    E.inbox = ib;
    for (unsigned i = 0; i < ncells; i++)
        atomic_store_explicit(&cell_at(ib, i)->seq, i, memory_order_relaxed);
    atomic_store_explicit(&ib->tail, 0, memory_order_release);
    E.my_local = smap_local_rank();
    E.active = 1;
    *inbox_p = ib;
    return BOBCAT_OK;
}

BOBCAT_MSG_API int bobcat_msg_set_peer(int local, void *inbox)
{
    if (local < 0 || local >= SMAP_MAX_LOCAL_RANKS || !inbox)
        return 0;
    E.peer[local] = peer_addr(local, (uint64_t)(uintptr_t)inbox);
    return E.peer[local] != NULL && E.peer[local]->magic == MSG_INBOX_MAGIC;
}

BOBCAT_MSG_API size_t bobcat_msg_eager_limit(void) { return E.eager; }
BOBCAT_MSG_API int bobcat_msg_active(void) { return E.active; }
BOBCAT_MSG_API int bobcat_msg_pending(void) { return E.pend_head != NULL; }
BOBCAT_MSG_API int bobcat_msg_busy(void) { return E.posted_head != NULL || E.pend_head != NULL; }

BOBCAT_MSG_API bobcat_status_t bobcat_msg_setup(void **inbox_p)
{
    util_options_t o;
    if (util_options_load(&o) != BOBCAT_OK || !o.P2P)
        return BOBCAT_ERR_INVAL;
    size_t page;
    if (smap_world_size() == 0 || smap_segment_info(&page, NULL) == SMAP_PAGES_NONE)
        return BOBCAT_ERR_INVAL; /* not started by yod: no segment, no windows */
    return bobcat_msg_init(o.P2P_EAGER, (unsigned)o.P2P_CELLS, inbox_p);
}
BOBCAT_MSG_API const msg_stats_t *bobcat_msg_stats(void) { return &E.stats; }

/* Claim a cell in `dest`'s inbox without waiting: NULL when it is full. The CAS on tail only
 * orders claims; the acquire load of seq is what makes the previous consumer's reads of the cell
 * happen before our writes. */
static msg_cell_hdr_t *try_claim(msg_inbox_t *ib, uint64_t *ticket_p)
{
    uint64_t t = atomic_load_explicit(&ib->tail, memory_order_relaxed);
    for (;;) {
        msg_cell_hdr_t *c = cell_at(ib, t);
        uint64_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
        if (seq == t) {
            if (atomic_compare_exchange_weak_explicit(&ib->tail, &t, t + 1, memory_order_relaxed,
                                                      memory_order_relaxed)) {
                *ticket_p = t;
                return c;
            }
        } else if (seq < t) {
            return NULL; /* the consumer has not freed this cell from the previous lap: full */
        } else {
            t = atomic_load_explicit(&ib->tail, memory_order_relaxed);
        }
    }
}

/* Write a cell image and publish it (release: header and payload before seq). */
static int try_post(int dest, const msg_cell_hdr_t *h, const void *payload)
{
    msg_inbox_t *ib = E.peer[dest];
    uint64_t t;
    msg_cell_hdr_t *c = try_claim(ib, &t);
    if (!c)
        return 0;
    c->ctx = h->ctx;
    c->src = h->src;
    c->tag = h->tag;
    c->kind = h->kind;
    c->len = h->len;
    c->addr = h->addr;
    c->done = h->done;
    c->from_local = h->from_local;
    if (h->kind == MSG_CELL_EAGER && h->len)
        memcpy(c + 1, payload, h->len);
    atomic_store_explicit(&c->seq, t + 1, memory_order_release);
    return 1;
}

static void pend(int dest, const msg_cell_hdr_t *h, const void *payload)
{
    pending_t *p = malloc(sizeof *p);
    if (!p) {
        util_error("msg: out of memory queueing a send");
        abort();
    }
    p->next = NULL;
    p->dest = dest;
    p->hdr = *h;
    p->payload = NULL;
    if (h->kind == MSG_CELL_EAGER && h->len) {
        p->payload = malloc(h->len);
        if (!p->payload) {
            util_error("msg: out of memory queueing a send");
            abort();
        }
        memcpy(p->payload, payload, h->len);
    }
    if (E.pend_tail)
        E.pend_tail->next = p;
    else
        E.pend_head = p;
    E.pend_tail = p;
    E.stats.pending_sent++;
}

/* Retry queued sends in order; stop at the first that still finds no room, so that no message
 * overtakes an earlier one (to any destination: simple, and this path is rare). */
static int flush_pending(void)
{
    int n = 0;
    while (E.pend_head) {
        pending_t *p = E.pend_head;
        if (!try_post(p->dest, &p->hdr, p->payload))
            break;
        E.pend_head = p->next;
        if (!E.pend_head)
            E.pend_tail = NULL;
        free(p->payload);
        free(p);
        n++;
    }
    return n;
}

BOBCAT_MSG_API void bobcat_msg_send(msg_req_t *req, int32_t ctx, int32_t src, int32_t tag, int dest_local,
                                    const void *buf, size_t len, int sync)
{
    msg_cell_hdr_t h = {.ctx = ctx, .src = src, .tag = tag, .len = len, .from_local = E.my_local};
    req->kind = MSG_REQ_SEND;
    req->complete = 0;
    req->bounce = NULL;
    atomic_store_explicit(&req->done, 0, memory_order_relaxed);
    if (len <= E.eager) {
        h.kind = MSG_CELL_EAGER;
        h.done = sync ? (uint64_t)(uintptr_t)&req->done : 0;
        req->waits_done = sync;
        E.stats.eager_sent++;
    } else {
        const void *src_buf = buf;
        if (!smap_is_shared(buf)) {
            /* Stack, static data or a foreign mapping: peers cannot see it. Stage it. */
            req->bounce = malloc(len);
            if (!req->bounce || !smap_is_shared(req->bounce)) {
                util_error("msg: cannot stage a %zu-byte send in the segment: raise BOBCAT_HEAP", len);
                abort();
            }
            memcpy(req->bounce, buf, len);
            src_buf = req->bounce;
            E.stats.staged_sent++;
        }
        h.kind = MSG_CELL_RTS;
        h.addr = (uint64_t)(uintptr_t)src_buf;
        h.done = (uint64_t)(uintptr_t)&req->done;
        req->waits_done = 1;
        E.stats.rndv_sent++;
    }
    E.stats.bytes_sent += len;
    if (E.pend_head || !try_post(dest_local, &h, buf))
        pend(dest_local, &h, buf);
    if (!req->waits_done)
        req->complete = 1;
}

BOBCAT_MSG_API int bobcat_msg_test(msg_req_t *req)
{
    if (!req->complete && req->waits_done && atomic_load_explicit(&req->done, memory_order_acquire)) {
        req->complete = 1;
        if (req->bounce) {
            free(req->bounce);
            req->bounce = NULL;
        }
    }
    return req->complete;
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
    _Atomic uint32_t *d = peer_addr(from_local, done);
    atomic_store_explicit(d, 1, memory_order_release);
}

/* Complete receive `r` with a message described by a header, eager payload at `data`. */
static void deliver(msg_req_t *r, int32_t src, int32_t tag, uint32_t kind, uint64_t len, uint64_t addr,
                    uint64_t done, int from_local, const void *data)
{
    uint64_t n = len <= r->cap ? len : r->cap;
    if (kind == MSG_CELL_EAGER) {
        if (n)
            memcpy(r->buf, data, n);
        E.stats.eager_recv++;
    } else {
        const void *s = peer_addr(from_local, addr);
        if (n)
            memcpy(r->buf, s, n);
        E.stats.rndv_recv++;
        E.stats.bytes_single_copy += n;
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
        return u;
    }
    u = malloc(sizeof *u + E.eager);
    if (!u) {
        util_error("msg: out of memory holding an unexpected message");
        abort();
    }
    u->data = (char *)(u + 1);
    return u;
}

static void unexp_put(msg_unexp_t *u)
{
    u->next = E.unexp_free;
    E.unexp_free = u;
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
static void arrive(const msg_cell_hdr_t *c)
{
    for (msg_req_t *r = E.posted_head; r; r = r->next) {
        if (matches(r->ctx, r->src, r->tag, c->ctx, c->src, c->tag)) {
            unlink_posted(r);
            deliver(r, c->src, c->tag, c->kind, c->len, c->addr, c->done, c->from_local, c + 1);
            return;
        }
    }
    msg_unexp_t *u = unexp_get();
    u->ctx = c->ctx;
    u->src = c->src;
    u->tag = c->tag;
    u->from_local = c->from_local;
    u->kind = c->kind;
    u->len = c->len;
    u->addr = c->addr;
    u->done = c->done;
    if (c->kind == MSG_CELL_EAGER && c->len)
        memcpy(u->data, c + 1, c->len);
    u->next = NULL;
    u->prev = E.unexp_tail;
    if (E.unexp_tail)
        E.unexp_tail->next = u;
    else
        E.unexp_head = u;
    E.unexp_tail = u;
    E.stats.unexpected++;
}

BOBCAT_MSG_API int bobcat_msg_progress(void)
{
    if (!E.active)
        return 0;
    int n = E.pend_head ? flush_pending() : 0;
    for (;;) {
        msg_cell_hdr_t *c = cell_at(E.inbox, E.head);
        if (atomic_load_explicit(&c->seq, memory_order_acquire) != E.head + 1)
            break;
        arrive(c);
        atomic_store_explicit(&c->seq, E.head + E.ncells, memory_order_release);
        E.head++;
        n++;
    }
    return n;
}

BOBCAT_MSG_API void bobcat_msg_recv(msg_req_t *req, int32_t ctx, int32_t src, int32_t tag, void *buf, size_t cap)
{
    req->kind = MSG_REQ_RECV;
    req->complete = 0;
    req->cancelled = 0;
    req->truncated = 0;
    req->ctx = ctx;
    req->src = src;
    req->tag = tag;
    req->buf = buf;
    req->cap = cap;
    req->waits_done = 0;
    /* Arrivals still in the inbox are later than every unexpected one; drain first so the
     * unexpected list is complete, then the earliest match wins. */
    bobcat_msg_progress();
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

BOBCAT_MSG_API int bobcat_msg_cancel(msg_req_t *req)
{
    if (req->kind != MSG_REQ_RECV || !req->posted)
        return 0;
    unlink_posted(req);
    req->cancelled = 1;
    req->complete = 1;
    req->st_len = 0;
    return 1;
}

BOBCAT_MSG_API msg_unexp_t *bobcat_msg_probe(int32_t ctx, int32_t src, int32_t tag, int take)
{
    bobcat_msg_progress();
    for (msg_unexp_t *u = E.unexp_head; u; u = u->next)
        if (matches(ctx, src, tag, u->ctx, u->src, u->tag)) {
            if (take)
                unexp_unlink(u);
            return u;
        }
    return NULL;
}

BOBCAT_MSG_API void bobcat_msg_mrecv(msg_req_t *req, msg_unexp_t *m, void *buf, size_t cap)
{
    req->kind = MSG_REQ_RECV;
    req->cancelled = 0;
    req->buf = buf;
    req->cap = cap;
    req->waits_done = 0;
    deliver(req, m->src, m->tag, m->kind, m->len, m->addr, m->done, m->from_local, m->data);
    unexp_put(m);
}

BOBCAT_MSG_API void *bobcat_msg_alloc_shared(size_t size)
{
    void *p = calloc(1, size);
    if (p && !smap_is_shared(p)) {
        free(p);
        return NULL;
    }
    return p;
}
