/* msg_engine.h: private to src/msg. The engine's state, shared by the files of the layer, and the
 * small inline helpers more than one of them uses on the path of a message. Not for other layers:
 * they speak msg.h. File stack and contract: README.md. */
#ifndef BOBCAT_MSG_ENGINE_H
#define BOBCAT_MSG_ENGINE_H

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include <bobcat/smartmap.h>
#include "../util/util.h"
#include "msg.h"

/* What this rank sends to one local peer through its fast box (msg.h). */
typedef struct {
    msg_chan_t *chan;  /* my box to this peer, once announced (own address) */
    uint64_t seq;      /* messages sent to this peer */
    uint64_t ack;      /* last `ack` read from the box */
    uint64_t dhead;    /* data-ring bytes written (running offset) */
    uint64_t dack;     /* last `dack` read from the box */
    uint32_t sent;     /* messages before the box opens */
    int refused;       /* the peer has its fill of boxes */
} msg_tx_t;

/* What this rank receives from one local peer through that peer's box. */
typedef struct {
    msg_chan_t *chan;  /* the peer's box to me (in my view) */
    uint64_t expect;   /* messages received from this peer */
    uint64_t acked;    /* last value stored in the box's ack */
    uint64_t dpos;     /* data-ring offset read up to */
    uint64_t dacked;   /* last value stored in the box's dack */
    uint32_t mask;     /* its cells - 1 */
    uint64_t ring;     /* its data-ring bytes */
    const char *data;  /* its data ring */
} msg_rx_t;

/* The engine's state: one per process, private to it (the shared parts are in the segment and
 * reached through it). Defined in msg_engine.c. */
typedef struct {
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
    int rndv_live;         /* my rendezvous/synchronous sends whose receiver has not finished: while
                            * there are any, my receives do not split (msg_rndv_pull) */
    unsigned cells;        /* cells per box (power of two), 0: none */
    size_t cell_data;      /* largest message a cell carries */
    size_t ring;           /* data-ring bytes of the boxes I open */
    size_t box_max;        /* largest message a box of mine carries (cell or ring) */
    unsigned opened;       /* boxes I opened */
    int box_rndv;          /* rendezvous headers through cells (BOBCAT_P2P_FASTBOX_RNDV) */
    msg_tx_t tx[SMAP_MAX_LOCAL_RANKS];
    msg_rx_t rx[SMAP_MAX_LOCAL_RANKS];
    uint64_t eager_nodes;  /* eager messages sent through inboxes (stats.eager_sent adds the boxes') */
    int16_t polled[SMAP_MAX_LOCAL_RANKS]; /* peers whose boxes progress polls */
    int npolled;
    msg_stats_t stats;
} msg_engine_t;

extern msg_engine_t msg_engine;
/* Every file of the layer calls the state E, as the one file it was cut from did. */
#define E msg_engine

_Static_assert(sizeof(msg_node_t) == MSG_LINE, "node header is one line");
_Static_assert(sizeof(msg_inbox_t) == 3 * MSG_LINE, "inbox is three lines");

/* A kind private to this layer: a rendezvous header delivered while still in its cell (the `data` of
 * msg_arrive/deliver is the cell), so the receiver may claim it fast (msg.h). */
enum { MSG_RTS_CELL = 5 };

/* Translate an address of local rank `local`'s own space into ours. */
static inline void *peer_addr(int local, uint64_t addr)
{
    if (local == E.my_local)
        return (void *)(uintptr_t)addr;
    return smap_remote_address(local, (const void *)(uintptr_t)addr);
}

static inline uint64_t universal(const void *own) { return (uint64_t)((uintptr_t)own + E.delta); }

/* Link a filled node at the tail of an inbox: exchange the tail, then publish the link. Between
 * the two the list is briefly cut; the consumer then sees no next node and retries later. */
static inline void inbox_push(msg_inbox_t *ib, msg_node_t *n_own)
{
    uint64_t u = universal(n_own);
    atomic_store_explicit(&n_own->next, 0, memory_order_relaxed);
    uint64_t prev = atomic_exchange_explicit(&ib->tail, u, memory_order_acq_rel);
    atomic_store_explicit(&((msg_node_t *)(uintptr_t)prev)->next, u, memory_order_release);
}

/* The inbox holds no node: the consumer's head is the stub and nothing is linked behind it. */
static inline int inbox_empty(void)
{
    msg_node_t *head = E.head;
    return head == (msg_node_t *)(uintptr_t)universal(&E.inbox->stub) &&
           !atomic_load_explicit(&head->next, memory_order_acquire);
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

/* ---- across the files, bottom up (README.md) ---- */

/* msg_engine.c */
void msg_come_home(void);
/* Every entry that touches the receiver's state starts here. */
static inline void home(void)
{
    if (__builtin_expect(E.away, 0))
        msg_come_home();
}

/* msg_inbox.c */
int msg_pool_grow(void);
msg_node_t *msg_inbox_pop(void);

/* msg_rndv.c */
msg_ticket_t *msg_ticket_get(void);
void msg_ticket_put(msg_ticket_t *t);
void msg_reap_detached(void);
msg_ticket_t *msg_rndv_prepare(msg_req_t *req, const void *buf, size_t len, int sync);
void msg_rndv_pull(void *buf, uint64_t n, uint64_t addr, uint64_t done, int from_local, const msg_cell_t *cell);

/* msg_match.c */
void msg_arrive(int32_t ctx, int32_t src, int32_t tag, uint32_t kind, uint64_t len, uint64_t addr, uint64_t done,
                int from_local, const void *data);
void msg_unexp_put(msg_unexp_t *u);
void msg_unexp_unlink(msg_unexp_t *u);

/* msg_progress.c */
void msg_progress_helper(void);

#endif
