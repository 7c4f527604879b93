/* msg: on-node point-to-point over SMARTMAP, without MPI.
 *
 * Each rank owns one inbox in its own segment: a bounded multi-producer single-consumer queue of
 * fixed-size cells (Vyukov's sequence-numbered ring). Any local rank appends to it through its
 * window; only the owner takes cells out, in order. So memory per rank is O(cells), not O(ranks),
 * and one sender's messages reach a receiver in the order they were sent (MPI's non-overtaking
 * rule), whatever the other senders do.
 *
 *  - eager (len <= eager limit): header and payload travel in one cell; a standard-mode send is
 *    complete as soon as the cell is published. No syscall, malloc or lock on this path.
 *  - rendezvous (len > eager limit): the cell carries the sender's buffer address; the receiver
 *    copies once, straight out of the sender's window, when the receive is matched, then sets
 *    the sender's completion word. A sender buffer outside the segment (stack, static data) is
 *    first staged into a segment buffer.
 *  - a full inbox never blocks the sender: the message waits in the sender's private pending
 *    FIFO (eager payload copied) and is retried by every progress call, so eager sends complete
 *    locally whatever the receiver does.
 *
 * Matching is MPI's: (context, source, tag) with wildcards, posted receives in post order against
 * arrivals in arrival order. The receiver's posted and unexpected lists are private. Everything
 * here is single-threaded per process (the pmpi layer disables itself under MPI_THREAD_MULTIPLE).
 * Callers (pmpi) speak bytes: datatypes are packed/unpacked above this layer. */
#ifndef BOBCAT_MSG_H
#define BOBCAT_MSG_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <bobcat/status.h>

#define BOBCAT_MSG_API __attribute__((visibility("default")))

#define MSG_ANY (-1)      /* wildcard source / tag */
#define MSG_LINE 64

/* ---- shared-memory layout (a unit test checks these sizes and offsets) ----
 * Cell: line 0 is the header, the payload follows from line 1. `seq` is the only field written
 * by both sides: the producer that owns ticket t sees seq == t (cell free), writes header and
 * payload, then stores seq = t + 1 with release; the consumer sees seq == head + 1 with acquire
 * (so the payload is visible), copies out, and stores seq = head + ncells with release (so its
 * reads are done before the next producer's writes, which load seq with acquire). */
typedef struct {
    _Atomic uint64_t seq; /* 0 */
    int32_t ctx;          /* 8: matching context (the communicator) */
    int32_t src;          /* 12: sender's rank in the communicator */
    int32_t tag;          /* 16 */
    uint32_t kind;        /* 20: MSG_CELL_* */
    uint64_t len;         /* 24: message bytes */
    uint64_t addr;        /* 32: rendezvous: sender's buffer, in the sender's own address space */
    uint64_t done;        /* 40: sender's completion word (its own address) or 0 */
    int32_t from_local;   /* 48: sender's local rank (window to translate addr/done through) */
    uint32_t pad_[3];     /* 52 */
} msg_cell_hdr_t;         /* 64: payload starts here */

enum { MSG_CELL_EAGER = 1, MSG_CELL_RTS = 2 };

/* Inbox: producers touch line 0 (tail, CAS) and the cells; the owner's head is private (it is
 * the only consumer), so no line bounces between the consumer's reads and producers' claims.
 * Line 1 is constant after init. */
typedef struct {
    _Atomic uint64_t tail;     /* 0: next ticket to claim */
    uint8_t pad0_[MSG_LINE - 8];
    uint32_t ncells;           /* 64 */
    uint32_t cell_size;        /* 68: header + payload, a multiple of MSG_LINE */
    uint64_t magic;            /* 72 */
    uint8_t pad1_[MSG_LINE - 16];
    /* 128: cells[ncells] */
} msg_inbox_t;

#define MSG_INBOX_MAGIC 0x62636d73676e6278ull

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

/* A request. Senders' requests must live in the segment: a receiver stores into `done`. */
typedef struct msg_req {
    _Atomic uint32_t done;     /* rendezvous pulled / synchronous send matched (set by the peer) */
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
    void *bounce;              /* staged copy of a buffer outside the segment */
    int waits_done;            /* complete when `done` becomes 1 */
    struct msg_req *next, *prev; /* posted list */
} msg_req_t;

typedef struct {
    uint64_t eager_sent, rndv_sent, staged_sent, pending_sent;
    uint64_t eager_recv, rndv_recv, unexpected, bytes_sent, bytes_single_copy;
} msg_stats_t;

/* Set up this rank's inbox (in the segment). eager: payload bytes per cell; ncells: cells.
 * Returns the inbox address (this rank's own address) for the peers, through inbox_p. */
BOBCAT_MSG_API bobcat_status_t bobcat_msg_init(size_t eager, unsigned ncells, void **inbox_p);
/* Tell the engine where local rank `local` has its inbox (that rank's own address). */
BOBCAT_MSG_API int bobcat_msg_set_peer(int local, void *inbox); /* 0 if its window is missing */
BOBCAT_MSG_API size_t bobcat_msg_eager_limit(void);
BOBCAT_MSG_API int bobcat_msg_active(void);

/* Start a send of `len` bytes at buf to local rank `dest_local` (matching key ctx/src/tag).
 * sync: complete only once matched. req must be in the segment (bobcat_msg_req_alloc). */
BOBCAT_MSG_API void bobcat_msg_send(msg_req_t *req, int32_t ctx, int32_t src, int32_t tag, int dest_local,
                                    const void *buf, size_t len, int sync);
/* Post a receive; it may complete at once (check req->complete). */
BOBCAT_MSG_API void bobcat_msg_recv(msg_req_t *req, int32_t ctx, int32_t src, int32_t tag, void *buf, size_t cap);
/* Cancel a posted receive: 1 if cancelled, 0 if it had already matched. */
BOBCAT_MSG_API int bobcat_msg_cancel(msg_req_t *req);
/* Retire a send request's waits: 1 once it is complete. */
BOBCAT_MSG_API int bobcat_msg_test(msg_req_t *req);

/* Drain the inbox and retry pending sends. Returns how many events happened. */
BOBCAT_MSG_API int bobcat_msg_progress(void);

/* Look for an unexpected message (after progress). Returns it or NULL; with `take` it is removed
 * from the unexpected list and belongs to the caller until bobcat_msg_mrecv. */
BOBCAT_MSG_API msg_unexp_t *bobcat_msg_probe(int32_t ctx, int32_t src, int32_t tag, int take);
/* Receive a message taken by probe into req (completes at once). */
BOBCAT_MSG_API void bobcat_msg_mrecv(msg_req_t *req, msg_unexp_t *m, void *buf, size_t cap);

/* Requests: zeroed, in the segment, recycled. */
BOBCAT_MSG_API void *bobcat_msg_alloc_shared(size_t size);

/* Sends still waiting for room in a peer's inbox (must be 0 before the rank may leave). */
BOBCAT_MSG_API int bobcat_msg_pending(void);
/* Posted receives or queued sends exist: this rank's progress matters to its peers. */
BOBCAT_MSG_API int bobcat_msg_busy(void);
/* Read the knobs (BOBCAT_P2P, P2P_EAGER, P2P_CELLS) and, if the layer is on, set up the inbox.
 * BOBCAT_ERR_INVAL when it is off or cannot run here (no segment). */
BOBCAT_MSG_API bobcat_status_t bobcat_msg_setup(void **inbox_p);
BOBCAT_MSG_API const msg_stats_t *bobcat_msg_stats(void);

#endif
