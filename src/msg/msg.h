/* msg: on-node point-to-point over SMARTMAP, without MPI.
 *
 * Each rank owns one inbox in its own segment: an unbounded multi-producer single-consumer queue
 * of message nodes (Vyukov's intrusive MPSC list). A sender takes a node from its own pool (in its
 * own segment), fills it and links it at the tail of the receiver's inbox with one atomic
 * exchange; only the owner takes nodes out, in order, and marks each one consumed so its sender
 * can reuse it. So a sender never waits for room (an eager send is complete when it is linked,
 * whatever the receiver does, and no message ever waits in the sender for its next MPI call),
 * memory is per outstanding message, never per pair of ranks, and one sender's messages reach a
 * receiver in the order they were sent (MPI's non-overtaking rule).
 *
 *  - eager (len <= eager limit): header and payload travel in the node. No syscall, malloc or
 *    lock on this path (the pool only grows when every node is in flight).
 *  - rendezvous (len > eager limit): the node carries the sender's buffer address; the receiver
 *    copies once, straight out of the sender's window, when the receive is matched, then sets
 *    the sender's completion word. A sender buffer outside the segment (stack, static data) is
 *    first staged into a segment buffer.
 *
 * Pointers in shared structures are node-universal: an address in local rank r's heap is kept in
 * its window form (`own address | (r + 1) << 39`), which every rank of the node, r included,
 * has mapped.
 *
 * Matching is MPI's: (context, source, tag) with wildcards, posted receives in post order against
 * arrivals in arrival order. The receiver's posted and unexpected lists are private. One thread
 * of a process at a time calls in here (under MPI_THREAD_MULTIPLE the pmpi layer's lock sees to it),
 * besides the helper of "Away" below.
 * Callers (pmpi) speak bytes: datatypes are packed/unpacked above this layer. */
#ifndef BOBCAT_MSG_H
#define BOBCAT_MSG_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <bobcat/status.h>

#include "../util/util.h" /* BOBCAT_LAYER_API: the MPI layer, a separate library, calls these */

#define MSG_ANY (-1)      /* wildcard source / tag */
#define MSG_LINE 64

/* ---- shared-memory layout (a unit test checks these sizes and offsets) ----
 * Node: line 0 is the header, the payload follows from line 1. Written by the sender before it
 * is linked; then `next` is written once by whichever sender links the following node (release,
 * so that node's contents are visible to the consumer's acquire load of `next`), and `consumed`
 * once by the receiver (release: its reads of the node are done before the sender reuses it,
 * which loads it with acquire). `pool_next` is the sender's private bookkeeping. */
typedef struct msg_node {
    _Atomic uint64_t next;     /* 0: universal address of the next node, 0 if none yet */
    _Atomic uint32_t consumed; /* 8: the receiver is done with this node */
    uint16_t kind;             /* 12: MSG_NODE_* */
    int16_t from_local;        /* 14: sender's local rank (window of addr/done) */
    int32_t ctx;               /* 16: matching context (the communicator) */
    int32_t src;               /* 20: sender's rank in the communicator */
    int32_t tag;               /* 24 */
    uint32_t pseq;             /* 28: low 32 bits of the pair's message number (orders it among the
                                  pair's fast-box messages, see msg_chan_t) */
    uint64_t len;              /* 32: message bytes */
    uint64_t addr;             /* 40: rendezvous: sender's buffer, in the sender's own address space;
                                  eager: 0, or the pair's new fast box (sender's address) */
    uint64_t done;             /* 48: sender's completion word (its own address) or 0 */
    struct msg_node *pool_next; /* 56: sender-private: its in-flight / free lists */
} msg_node_t;                  /* 64: payload starts here */

/* MSG_NODE_RTS_BOX: a rendezvous node whose first payload word names the pair's new fast box (the
 * sender's address), as `addr` does for an eager node. */
enum { MSG_NODE_EAGER = 1, MSG_NODE_RTS = 2, MSG_NODE_STUB = 3, MSG_NODE_RTS_BOX = 4 };

/* Ticket: the sender's completion word for a rendezvous or synchronous send, in the sender's
 * segment (a node's `done` points here). It outlives the request when the sender detaches: a
 * rendezvous whose receiver is slow to match is copied into a segment buffer (`bounce`) so the
 * send completes; the receiver then copies from there. `claim` decides the race, by CAS from 0:
 * the receiver sets 1 before it reads the sender's buffer (so the sender keeps it intact until
 * `done`), the sender sets 2 after `bounce` holds the data (release; the receiver's failed CAS
 * acquires it). */
typedef struct msg_ticket {
    _Atomic uint32_t done;     /* 0: set to 1 by the receiver when it has the data / matched */
    _Atomic uint32_t claim;    /* 4: 0 open, 1 receiver copies from the buffer, 2 sender detached */
    uint64_t bounce;           /* 8: detached copy (sender's own address) */
    struct msg_ticket *next;   /* 16: sender-private: free / detached lists */
    void *owned;               /* 24: sender-private: buffer to free when done */
    /* Split copy (P2P_SPLIT_MIN): a receiver that claimed the buffer (claim 1) and whose buffer is
     * in its segment offers the sender the tail [lo, len): it writes dst and lo, then push = 1
     * (release). A sender testing its request takes the offer by CAS 1 -> 2, copies the tail into
     * dst through the window and sets pushed (release). The receiver copies the head, then takes the
     * tail back by CAS 1 -> 3 if the sender has not taken it (a sender busy elsewhere never stalls
     * it), or waits for pushed (the sender is mid-copy), then sets done. */
    _Atomic uint32_t push;     /* 32: 0 none, 1 offered, 2 sender copies, 3 receiver took it back */
    _Atomic uint32_t pushed;   /* 36: the sender's copy is complete */
    uint64_t dst;              /* 40: receiver's buffer (universal address) */
    uint64_t lo;               /* 48: offset of the tail */
    uint64_t len;              /* 56: bytes the receiver takes */
} msg_ticket_t;

/* Inbox: producers exchange `tail` (line 0); the consumer's head is private. The stub node lets
 * the list never be empty (Vyukov). `fboxes` counts the fast boxes senders opened to this rank
 * (fetch_add by a sender when it opens one; bounded so a receiver polls few of them).
 *
 * Away (the progress rule: a rank blocked in the real MPI still serves its node mates). `away` is
 * MSG_HOME while the rank's own thread may run the engine; MSG_AWAY while that thread sits in a
 * blocking call of the real MPI with receives posted (it stores it with release after its last
 * engine access); MSG_PROXY while the rank's helper thread, which took it from MSG_AWAY by CAS
 * (acquire), matches arrivals for it; the helper stores MSG_AWAY back (release) and the owner takes
 * MSG_AWAY -> MSG_HOME by CAS (acquire) when its call returns. Whoever holds HOME or PROXY alone
 * touches the receiver's private state, so the engine needs no lock. `kick` is the helper's futex
 * (shared, not private: senders of other processes wake it): a sender that waits for this rank to
 * match while it is away increments it (release) and wakes the helper. The line is written only
 * at these transitions and when a box opens: senders read it shared. */
enum { MSG_HOME = 0, MSG_AWAY = 1, MSG_PROXY = 2 };
typedef struct {
    _Atomic uint64_t tail;     /* 0: universal address of the last node */
    uint8_t pad0_[MSG_LINE - 8];
    uint64_t magic;            /* 64 */
    _Atomic uint32_t fboxes;   /* 72 */
    _Atomic uint32_t away;     /* 76: MSG_HOME / MSG_AWAY / MSG_PROXY */
    _Atomic uint32_t kick;     /* 80: the helper's futex word */
    uint8_t pad1_[MSG_LINE - 20];
    msg_node_t stub;           /* 128 */
} msg_inbox_t;

/* Fast box: a ring of one-line cells per (sender, receiver) pair that talks often, in the
 * sender's segment, so a small message costs one line the sender writes once and the receiver
 * polls (the inbox costs a pointer chase over several lines shared by all senders). Opened by
 * the sender after MSG_FBOX_AFTER messages to a peer, at most MSG_FBOX_MAX per receiver; the
 * next eager node it sends carries the address (node.addr), so the receiver starts polling it
 * before the first cell is written. Every message of a pair has a number (node.pseq, cell.seq - 1):
 * message q goes into cell q % cells when it fits (contiguous, <= MSG_CELL_DATA bytes, not
 * synchronous) and the cell is free (the receiver's `ack` says it consumed message q - cells),
 * else through the inbox. The receiver takes cell `expect % cells` while its seq is expect + 1,
 * and before a node from the pair whose pseq is ahead of `expect` it takes the cells between
 * (visible: the sender's release of the cell precedes its push of the node), so the pair's order
 * is kept across both paths. Cell: the sender writes the fields, then seq with release; the
 * receiver acquires seq, copies, and later stores ack (release) so the sender may reuse it.
 * A rendezvous header takes a cell too when the pair's next cell is free: len is MSG_CELL_RNDV and
 * data holds the message's length, the sender's buffer and its ticket (sender's addresses), as a
 * rendezvous node's len, addr and done would, then the `detach` word (MSG_RNDV_DETACH).
 * Rendezvous nodes open boxes as eager ones do.
 *
 * Fast claim. A receiver that matches a rendezvous header while its cell still holds it (not acked)
 * claims the sender's buffer without touching the sender's ticket, whose line the sender holds (a
 * CAS there costs a line transfer per message): it stores the message's number + 1 in the box's
 * `claim` (a line only it writes), fences, and reads the cell's detach word, a line it has just read:
 * 0 -> the buffer is its to copy. A sender about to detach stores 1 in the detach word, fences and
 * reads `claim` (Dekker: at least one of the two sees the other's store): equal to its message's
 * number + 1 -> the receiver copies, wait for `done`; anything else, or a detach word of 1 seen by the
 * receiver, and both fall back to the ticket's CAS on `claim` (msg_ticket_t). A staged send
 * publishes its cell with detach 1, so the receiver goes to the ticket and reads the copy. A later
 * message's fast claim implies this one is settled: the receiver's fast path is synchronous (claim,
 * copy, `done`), so a `claim` past the message with `done` still 0 means the receiver took its header
 * some other way (as unexpected) and will CAS. */
#define MSG_CELL_DATA 40
#define MSG_CELL_RNDV 0xffffffffu
#define MSG_RNDV_DETACH 24 /* offset in a rendezvous cell's data of its detach word (uint64_t) */
#define MSG_FBOX_AFTER 8
#define MSG_FBOX_MAX 32
typedef struct {
    _Atomic uint64_t seq;      /* 0: message number + 1 of the message held (0: never used) */
    uint32_t len;              /* 8 */
    int32_t ctx;               /* 12 */
    int32_t src;               /* 16 */
    int32_t tag;               /* 20 */
    unsigned char data[MSG_CELL_DATA]; /* 24 */
} msg_cell_t;

/* A message of more than MSG_CELL_DATA bytes (up to the eager limit and the ring) puts its payload
 * in the box's data ring, at the running offset the cell names in its first 8 data bytes, lines
 * rounded up and never wrapping (a payload that would cross the ring's end starts at the next lap);
 * the receiver returns ring bytes through `dack` (the running offset up to which it has read). So
 * the receiver polls cells only and a payload is never mistaken for a header. */
typedef struct {
    _Atomic uint64_t ack;      /* 0: messages of the pair the receiver has consumed (receiver writes) */
    _Atomic uint64_t dack;     /* 8: running data-ring offset the receiver has read up to */
    uint32_t cells;            /* 16: cells (a power of two), set by the sender when it opens the box */
    uint32_t pad0_;
    uint64_t ring;             /* 24: data-ring bytes (a multiple of 64; 0: none) */
    _Atomic uint64_t claim;    /* 32: number + 1 of the last rendezvous the receiver fast-claimed (receiver
                                  writes; see "Fast claim") */
    uint8_t pad_[MSG_LINE - 40];
    msg_cell_t cell[];         /* 64: `cells` cells, then the data ring */
} msg_chan_t;

#define MSG_INBOX_MAGIC 0x62636d73676e6279ull

/* ---- private objects ---- */

/* An arrival nobody has asked for yet (also what Mprobe hands out). */
typedef struct msg_unexp {
    struct msg_unexp *next, *prev;
    int32_t ctx, src, tag, from_local;
    uint32_t kind;
    uint64_t len, addr, done;
    char *data; /* eager payload copy (capacity: eager limit) */
} msg_unexp_t;

enum { MSG_REQ_SEND = 1, MSG_REQ_RECV = 2 };

/* A request (private). */
typedef struct msg_req {
    msg_ticket_t *ticket;      /* send waiting for the receiver: rendezvous or synchronous */
    int sync;
    const void *sbuf;          /* send: the data (for a detach) */
    uint64_t slen;
    uint32_t kind;             /* MSG_REQ_* */
    int complete;              /* the operation finished (status fields valid) */
    int posted;                /* receive on the posted list */
    int32_t ctx, src, tag;     /* receive: what to match (src/tag may be MSG_ANY) */
    void *buf;                 /* receive: contiguous destination */
    uint64_t cap;              /* receive: capacity in bytes */
    /* result of a receive */
    int32_t st_src, st_tag;
    uint64_t st_len;           /* bytes delivered (min(len, cap)) */
    int truncated, cancelled;
    /* send side */
    int waits_done;            /* complete when the ticket is done */
    struct msg_req *next, *prev; /* posted list */
    /* send side, read only when a send detaches: its rendezvous header is in this cell of my box
     * (else NULL), of this box, as the pair's message number + 1 (the cell's seq) */
    msg_cell_t *cell;
    msg_chan_t *chan;
    uint64_t cseq;
    int dest;                  /* send: the receiver's local rank (bobcat_msg_nudge) */
    int live_rndv;             /* send: counted in the engine's rndv_live until its ticket is done */
} msg_req_t;

typedef struct {
    uint64_t eager_sent, rndv_sent, staged_sent, detached, pool_nodes;
    uint64_t eager_recv, rndv_recv, unexpected, bytes_sent, bytes_single_copy;
    uint64_t fbox_sent, fbox_recv, fboxes; /* messages through fast boxes; boxes opened */
    uint64_t fbox_rndv;                    /* rendezvous headers sent through fast boxes */
    uint64_t fbox_direct;                  /* of fbox_recv, taken by bobcat_msg_recv_box */
    uint64_t split_pushed, bytes_pushed;   /* rendezvous tails this rank copied as the sender */
} msg_stats_t;

/* Set up this rank's inbox (in the segment). eager: payload bytes per node; nodes: the pool's
 * initial size. Returns the inbox address (this rank's own address) for the peers. */
BOBCAT_LAYER_API bobcat_status_t bobcat_msg_init(size_t eager, unsigned nodes, void **inbox_p);
/* Cells per fast box (rounded down to a power of two; 0: no fast boxes) and bytes of its data
 * ring (rounded down to lines; 0: only messages that fit a cell). Before any send. */
BOBCAT_LAYER_API void bobcat_msg_set_fastbox(unsigned cells, size_t ring);
/* Rendezvous of at least this many bytes split the copy between receiver and sender (0: never). */
BOBCAT_LAYER_API void bobcat_msg_set_split(size_t min_bytes);
/* Tell the engine where local rank `local` has its inbox (that rank's own address). */
BOBCAT_LAYER_API int bobcat_msg_set_peer(int local, void *inbox); /* 0 if its window is missing */
BOBCAT_LAYER_API size_t bobcat_msg_eager_limit(void);
BOBCAT_LAYER_API int bobcat_msg_active(void);

/* Start a send of `len` bytes at buf to local rank `dest_local` (matching key ctx/src/tag).
 * sync: complete only once matched. req is private (a stack request will do). */
BOBCAT_LAYER_API void bobcat_msg_send(msg_req_t *req, int32_t ctx, int32_t src, int32_t tag, int dest_local,
                                    const void *buf, size_t len, int sync);
/* A standard-mode send of len <= the eager limit, without a request: complete on return. Returns 0
 * (so that a caller's own success code can come from a tail call). */
BOBCAT_LAYER_API int bobcat_msg_send_eager(int32_t ctx, int32_t src, int32_t tag, int dest_local, const void *buf,
                                         size_t len);
/* Post a receive; it completes at once if an unexpected message matches (check req->complete), else
 * it waits on the posted list for a progress pass. */
BOBCAT_LAYER_API void bobcat_msg_recv(msg_req_t *req, int32_t ctx, int32_t src, int32_t tag, void *buf, size_t cap);
/* A blocking receive from local rank from_local (specific source; tag may be MSG_ANY) takes the
 * pair's next message straight from its fast-box cell, without a request, when nothing can come
 * before it in MPI's order (no posted receive, no unexpected arrival, nothing in the inbox) and it
 * matches and fits. Polls the cell at most `polls` times. 1: received (*tag_p, *len_p); 0: nothing
 * was taken (use bobcat_msg_recv). */
BOBCAT_LAYER_API int bobcat_msg_recv_box(int32_t ctx, int32_t src, int32_t tag, int from_local, void *buf, size_t cap,
                                       unsigned polls, int32_t *tag_p, uint64_t *len_p);
/* Cancel a posted receive: 1 if cancelled, 0 if it had already matched. */
BOBCAT_LAYER_API int bobcat_msg_cancel(msg_req_t *req);
/* 1 once a send request is complete. */
BOBCAT_LAYER_API int bobcat_msg_test(msg_req_t *req);
/* A rendezvous send the receiver has not matched yet: copy the data aside and complete it now
 * (not for synchronous sends). Returns 1 if the request is complete. */
BOBCAT_LAYER_API int bobcat_msg_detach(msg_req_t *req);

/* Drain the inbox. Returns how many messages arrived. */
BOBCAT_LAYER_API int bobcat_msg_progress(void);
/* Take arrivals only until req (a posted receive) completes: the later ones stay in the boxes and
 * the inbox for the receives about to be posted, instead of being copied aside as unexpected (a
 * blocking receive in a stream of them). */
BOBCAT_LAYER_API int bobcat_msg_progress_for(const msg_req_t *req);

/* Look for an unexpected message (after progress). Returns it or NULL; with `take` it is removed
 * from the unexpected list and belongs to the caller until bobcat_msg_mrecv. */
BOBCAT_LAYER_API msg_unexp_t *bobcat_msg_probe(int32_t ctx, int32_t src, int32_t tag, int take);
/* Receive a message taken by probe into req (completes at once). */
BOBCAT_LAYER_API void bobcat_msg_mrecv(msg_req_t *req, msg_unexp_t *m, void *buf, size_t cap);

/* Called by waits of the layers above (coll/) each time they yield the core: the MPI layer sets
 * it to serve on-node point-to-point, so a rank waiting in an on-node collective does not stall a
 * message another rank waits for. NULL: nothing to do. */
BOBCAT_LAYER_API extern void (*bobcat_msg_idle_hook)(void);

/* Requests: zeroed, in the segment, recycled. */
BOBCAT_LAYER_API void *bobcat_msg_alloc_shared(size_t size);

/* Posted receives exist: this rank's progress matters to its peers (rendezvous, sync sends). */
BOBCAT_LAYER_API int bobcat_msg_busy(void);

/* The progress rule across calls into the real MPI. Around a blocking call that does not come
 * back to bobcat, the owner calls away_begin (returns 1 if it went away: receives are posted) and
 * away_end with what it returned. Meanwhile a helper thread of this process, woken by waiting
 * senders (bobcat_msg_nudge), matches arrivals to the posted receives and copies them; it never
 * sends, allocates or calls MPI. Any engine call of the owner's during the call (a callback of
 * the real MPI's into bobcat) first takes the engine back. Under MPI_THREAD_MULTIPLE the pmpi
 * layer goes away each time it lets go of its lock while some thread sits in the real MPI, and
 * comes home (away_end(1)) each time it takes it. */
BOBCAT_LAYER_API int bobcat_msg_away_begin(void);
BOBCAT_LAYER_API void bobcat_msg_away_end(int went);
/* A send still waiting for its receiver: if that rank is away, wake its helper. */
BOBCAT_LAYER_API void bobcat_msg_nudge(const msg_req_t *req);
/* Stop the helper thread (MPI_Finalize). */
BOBCAT_LAYER_API void bobcat_msg_away_stop(void);
/* Read the knobs (BOBCAT_P2P, P2P_EAGER, P2P_NODES, P2P_FASTBOX) and, if the layer is on, set up the inbox.
 * BOBCAT_ERR_INVAL when it is off or cannot run here (no segment). */
BOBCAT_LAYER_API bobcat_status_t bobcat_msg_setup(void **inbox_p);
BOBCAT_LAYER_API const msg_stats_t *bobcat_msg_stats(void);

#endif
