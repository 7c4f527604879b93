/* msg_rndv: the single-copy rendezvous (msg.h, msg_ticket_t and "Fast claim"). The sender's side:
 * tickets, staging, testing and detaching a send, taking a split copy's tail; the receiver's side:
 * claiming the sender's buffer and the one copy out of it. */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "msg_engine.h"

msg_ticket_t *msg_ticket_get(void)
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

void msg_ticket_put(msg_ticket_t *t)
{
    free(t->owned);
    t->owned = NULL;
    t->next = E.free_tickets;
    E.free_tickets = t;
}

/* Detached tickets whose receiver has finished: free their copies. */
void msg_reap_detached(void)
{
    msg_ticket_t **pp = &E.detached;
    while (*pp) {
        msg_ticket_t *t = *pp;
        if (atomic_load_explicit(&t->done, memory_order_acquire)) {
            *pp = t->next;
            msg_ticket_put(t);
        } else {
            pp = &t->next;
        }
    }
}

/* A send no longer waits for its receiver: out of the count that keeps my receives whole. */
static inline void rndv_settled(msg_req_t *req)
{
    if (req->live_rndv) {
        req->live_rndv = 0;
        E.rndv_live--;
    }
}

/* The rendezvous half of a send: its ticket, and the data staged in the segment when peers cannot
 * see the buffer (stack, static data, a foreign mapping): such a send is detached from the start
 * (the receiver reads the copy). Returns the ticket the header names. */
msg_ticket_t *msg_rndv_prepare(msg_req_t *req, const void *buf, size_t len, int sync)
{
    msg_ticket_t *tk = msg_ticket_get();
    req->ticket = tk;
    req->live_rndv = 1;
    E.rndv_live++;
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
            rndv_settled(req);
        }
    }
    E.stats.rndv_sent++;
    E.stats.bytes_sent += len;
    return tk;
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
        msg_ticket_put(req->ticket);
        req->ticket = NULL;
        req->complete = 1;
        rndv_settled(req);
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
    rndv_settled(req);
    E.stats.detached++;
    return 1;
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
void msg_rndv_pull(void *buf, uint64_t n, uint64_t addr, uint64_t done, int from_local, const msg_cell_t *cell)
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
    /* Split only while none of my own sends waits for its receiver: in an exchange (Sendrecv, a halo)
     * the sender is copying its own receive, and taking my tail would serialise the two copies
     * (Sendrecv 64 KiB took 2x the time: docs/benchmarks.md, "Split copy in an exchange"). */
    if (from == addr && E.split_min && n >= E.split_min && from_local != E.my_local && E.rndv_live <= 0 &&
        smap_is_shared(buf))
        split_copy(t, buf, s, n);
    else if (n)
        util_copy(buf, s, n);
    E.stats.rndv_recv++;
    E.stats.bytes_single_copy += n;
}
