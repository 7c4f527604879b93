/* p2p: MPI point-to-point over the msg engine (internal to the MPI layer).
 *
 * Routing rule (the consistency that keeps MPI's non-overtaking order): a communicator is either
 * registered — then every message between two members on one node goes through bobcat and every
 * other one through the real MPI, for its whole life — or not registered, and then all of its
 * traffic goes to the real MPI. Registration happens collectively when the communicator is made
 * (MPI_Init for WORLD/SELF, the constructors of p2p_comm_api.c), where the members also agree on a
 * matching context; intercommunicators and anything made by a constructor not intercepted here are
 * never registered. p2p_route() is the one decision every send, receive, start and probe asks.
 *
 * Requests: bobcat's live in the segment and carry a handle the real MPI never produces (Open MPI:
 * the address of a p2p_req_t, whose first word is a non-canonical magic value; MPICH: an int whose
 * two top bits are 00, HANDLE_KIND_INVALID, with 0x0BC in bits 20-31; the standard ABI: that integer
 * as a pointer, compared in full). Everything that takes a
 * request tells the two kinds apart and hands the real ones to PMPI_*.
 *
 * The files, from the bottom up (each uses only those above it in this list):
 *   p2p_comm.c      the registry of communicators and the layer's settings fixed at MPI_Init
 *   p2p_req.c       the request pool, handles, statuses, held types, the orphan and off-node lists
 *   p2p_route.c     where a call goes (p2p_route) and the real MPI's call for it (p2p_real), stats rows
 *   p2p_complete.c  one request's completion (p2p_req_test)
 *   p2p_progress.c  progress: the engine, the off-node queue, orphans; a wait loop's pause
 *   p2p_wait.c      MPI_Test/Wait and their all/any/some forms, Request_free, Cancel
 *   p2p_send.c, p2p_recv.c, p2p_start.c, p2p_comm_api.c, p2p_init.c: the entry points that start
 *                   operations (send, receive and probe, persistent and Sendrecv, communicators),
 *                   and the layer's start and end. */
#ifndef BOBCAT_PMPI_P2P_H
#define BOBCAT_PMPI_P2P_H

#include <mpi.h>
#include <stdint.h>

#include "../../msg/msg.h"
#include "../base/pmpi_comm.h"
#include "../base/pmpi_dt.h"


typedef struct p2p_req p2p_req_t;

/* Tests of an unmatched rendezvous send before it is copied aside and completed. */
#define P2P_DETACH_POLLS 2000
/* The bytes of a call bobcat hands to the real MPI, for BOBCAT_STATS (a receive: what it posted);
 * the type's size is asked only while counting. */
#define P2P_MPI_BYTES(count, dt) (pmpi_stats_on ? pmpi_pass_bytes((count), (dt)) : 0)

/* Send modes; MODE_RECV marks a receive where one code path serves both. */
enum { MODE_STD = 0, MODE_SYNC = 1, MODE_READY = 2, MODE_BUF = 3, MODE_RECV = -1 };

typedef struct p2p_comm {
    MPI_Comm comm;
    int ctx, rank, size;
    int mixed;        /* some members on other nodes */
    /* The nonblocking collectives' ring area (coll.h), agreed at registration: allocated by comm
     * rank 0 of a communicator on one node (nb_own, freed with the entry once no member uses it),
     * its address in rank 0's view (0: none, the real MPI does them); `nb` is the state the
     * collectives keep (p2p_nb_free frees it with the entry). */
    uint64_t nb_area;
    coll_nb_area_t *nb_view;  /* the area in my view (NULL: none) */
    void *nb_own;
    void *nb;
    int *local;       /* comm rank -> local index on this node, -1 if on another node */
    /* The neighbourhood collectives (coll/pmpi_coll_neighbor.c) of a communicator with a topology:
     * `nbr_shadow`, a private communicator of the same members (MPI_COMM_NULL: none, they go to the
     * real MPI) that their messages travel on, made by the constructors of p2p_comm_api.c and freed
     * with the entry; `nbr`, the neighbour lists they build on first use (one malloc'd block). */
    MPI_Comm nbr_shadow;
    void *nbr;
    /* Requests that use the communicator after their call (p2p_req_pin_comm). MPI_Comm_free while
     * some are pending marks it `freed` (it stays in the table); the real communicator is freed when
     * the last of them is retired (as MPI frees a communicator only after its pending operations). */
    int refs, freed;
    struct p2p_comm *next; /* hash chain */
} p2p_comm_t;

enum {
    P2P_K_NULL = 1, /* complete from the start (MPI_PROC_NULL, buffered send) */
    P2P_K_SEND,     /* engine send */
    P2P_K_RECV,     /* engine receive (maybe also waiting for off-node traffic: wildcard, mixed comm) */
    P2P_K_DEFER,    /* off-node receive held back behind an earlier wildcard on its comm */
    P2P_K_PERSIST,  /* persistent: `inner` is the started operation (either kind of request) */
    P2P_K_EXT,      /* another room's operation (a nonblocking collective): `ext_ops` tests and frees it */
};

/* An operation of another room behind a request of bobcat's: test returns 1 once complete (with
 * *err_p, the MPI error code), release frees what it holds (also for a request never completed).
 * A persistent request of another room (a persistent collective) is a P2P_K_PERSIST whose ext_ops
 * has start: MPI_Start calls it to start the operation as `inner` (test is then unused). poll, if
 * set, progresses the operation's own engine alone and returns 1 once test would, -1 if it never
 * can alone (only a full pass moves it): MPI_Wait and MPI_Test look there before a full progress
 * pass (p2p_wait.c, "quick"). */
typedef struct p2p_ext_ops {
    int (*test)(p2p_req_t *r, int *err_p);
    void (*release)(p2p_req_t *r);
    int (*start)(p2p_req_t *r, MPI_Request *inner);
    int (*poll)(p2p_req_t *r);
} p2p_ext_ops_t;

struct p2p_req {
    uint64_t magic;           /* first word: tells bobcat's Open MPI handles from real ones */
    msg_req_t m;
    int kind, idx;
    int persistent, active, freed;
    int mode;                 /* persistent sends: 0 standard, 1 sync, 2 ready, 3 buffered; -1 recv */
    /* the call's arguments (persistent start, unpack, switching to the real MPI) */
    void *buf;
    MPI_Count count;
    MPI_Datatype type;        /* the user's, or (type_owned) a duplicate this request holds */
    int type_owned;
    int peer, tag;
    MPI_Comm comm;
    p2p_comm_t *c;            /* a reference to comm's entry (p2p_req_pin_comm), or NULL */
    void *pack;               /* packed bytes of a non-contiguous datatype (or a Bsend copy) */
    MPI_Request real;         /* a real request this one now waits on */
    MPI_Request inner;        /* P2P_K_PERSIST: the started operation */
    int switched;             /* K_RECV/K_DEFER: matched an off-node message, now `real` */
    unsigned polls;           /* K_SEND: times tested incomplete (see P2P_DETACH_POLLS) */
    int done_err;             /* completion: error class (truncation) */
    /* a finished request's status (when `real` completed, copied from it) */
    int st_src, st_tag, st_err, st_cancelled;
    MPI_Count st_bytes;
    int st_valid;
    p2p_req_t *onext, *oprev; /* the off-node queue (mixed comms) */
    p2p_req_t *fnext;         /* free list / orphans */
    const p2p_ext_ops_t *ext_ops; /* P2P_K_EXT: its room's calls */
    void *ext;                /* P2P_K_EXT: its room's state */
    int permanent;            /* the shared completed send or receive (p2p_req_done): never released */
};


/* ---- p2p_comm.c: the registry and the layer's settings ---- */

/* Constructors not in p2p_comm_api.c (MPI_Comm_split_type, rma/pmpi_shm.c) call p2p_comm_register
 * on their result: collective over the new communicator. */
void p2p_comm_register(MPI_Comm comm, int fixed_ctx);
p2p_comm_t *p2p_comm_find(MPI_Comm comm); /* the hash table (sets p2p_comm_last) */
p2p_comm_t *p2p_comm_unhash(MPI_Comm comm); /* take its entry out of the table */
void p2p_comm_entry_free(p2p_comm_t *c);
void p2p_comm_free_deferred(p2p_comm_t *c); /* the last reference of a freed one went */
static inline void p2p_comm_unref(p2p_comm_t *c)
{
    if (--c->refs == 0 && c->freed)
        p2p_comm_free_deferred(c);
}
extern p2p_comm_t *p2p_comm_last;
/* The registered communicator's entry, or NULL. */
static inline p2p_comm_t *p2p_comm_lookup(MPI_Comm comm)
{
    p2p_comm_t *c = p2p_comm_last;
    return c && c->comm == comm ? c : p2p_comm_find(comm);
}
void p2p_comm_reset(void);

/* Fixed at MPI_Init (p2p_init). */
typedef struct {
    int engine;          /* the engine runs on this rank */
    int nobody;          /* no rank of the job runs it (every rank knows: MPI_Init's allgather) */
    int multinode;       /* some rank of the job is on another node: waits poke the real MPI */
    int init_seen;       /* our MPI_Init* ran */
    int program_threads; /* some rank's program runs at MPI_THREAD_MULTIPLE (pmpi_layer.program_mt) */
    int threads;         /* some rank of the job runs at MPI_THREAD_MULTIPLE: communicators agree
                            on their context in two steps (p2p_comm.c) */
    size_t eager_limit;  /* the engine's */
    MPI_Request done;    /* the shared completed send's handle (p2p_req_done): small sends, sends
                            to MPI_PROC_NULL, a buffered send's stand-in */
    MPI_Request done_recv; /* the shared completed receive's (from MPI_PROC_NULL) */
} p2p_settings_t;
extern p2p_settings_t p2p_set;

/* ---- p2p_req.c: requests ---- */

p2p_req_t *p2p_req_new(void);
void p2p_req_release(p2p_req_t *r);
/* The request keeps the datatype past its call (MPI lets the user free it meanwhile): it holds a
 * reference (pmpi_dt_hold), let go at release. 0, or MPI_ERR_TYPE. */
int p2p_req_hold_type(p2p_req_t *r, MPI_Datatype dt);
/* MPI_Comm_free of a registered communicator: every live request of bobcat's on it (pending,
 * persistent, a matched-probe message, an orphan) takes a reference to c, so the real free waits
 * for the last (requests use their communicator after their call: error handler, off-node switch,
 * starts). Taken here rather than per request: the small-message paths pay nothing. Returns the
 * references c holds. */
int p2p_req_pin_comm(p2p_comm_t *c);
/* The one completed send (mode MODE_STD) or receive from MPI_PROC_NULL (MODE_RECV) request that
 * such calls share (kind P2P_K_NULL). */
p2p_req_t *p2p_req_done(int mode);
p2p_req_t *p2p_req_of(MPI_Request h); /* NULL for real requests and MPI_REQUEST_NULL */
MPI_Request p2p_handle_of(p2p_req_t *r);
/* r made a persistent request of a room above (kind P2P_K_PERSIST, inactive until MPI_Start, which
 * calls ops->start), and its handle. */
static inline MPI_Request p2p_persist_ext(p2p_req_t *r, const p2p_ext_ops_t *ops, void *ext, MPI_Comm comm)
{
    r->kind = P2P_K_PERSIST;
    r->persistent = 1;
    r->active = 0;
    r->comm = comm;
    r->ext_ops = ops;
    r->ext = ext;
    return p2p_handle_of(r);
}
/* Matched-probe messages of bobcat's (a p2p_req_t whose buf is the msg_unexp_t) */
p2p_req_t *p2p_msg_of(MPI_Message h);
MPI_Message p2p_msghandle_of(p2p_req_t *m);
void p2p_status_set(MPI_Status *st, int src, int tag, MPI_Count bytes, int cancelled);
void p2p_status_empty(MPI_Status *st);
/* Orphans: requests freed by the user while active, or internal (a Bsend's): progress reaps them. */
void p2p_orphan(p2p_req_t *r);
extern p2p_req_t *p2p_orphans;
static inline int p2p_orphans_pending(void) { return p2p_orphans != NULL; }
/* The off-node queue: receives on communicators that span nodes which wait behind, or are, a
 * wildcard (see p2p_progress.c), in post order. */
extern p2p_req_t *p2p_offq_head;
void p2p_offq_add(p2p_req_t *r);
void p2p_offq_remove(p2p_req_t *r);
int p2p_offq_has_comm(MPI_Comm comm);

/* ---- p2p_route.c: where a call goes ---- */

/* Where a point-to-point operation goes: the one routing decision, for every send, receive, start
 * and probe. recv: MPI_ANY_SOURCE and MPI_ANY_TAG are legal. */
typedef enum {
    P2P_TO_MPI,     /* not ours: an unregistered communicator, or arguments the real MPI judges */
    P2P_TO_NULL,    /* MPI_PROC_NULL on a registered communicator */
    P2P_TO_OFFNODE, /* a peer on another node: the real MPI */
    P2P_TO_ENGINE,  /* a node mate, or any source (the engine, plus the off-node queue where the
                       communicator spans nodes) */
} p2p_to_t;
static inline __attribute__((always_inline)) p2p_to_t p2p_route(const p2p_comm_t *c, int peer, int tag,
                                                                MPI_Count count, int recv)
{
    if (!c)
        return P2P_TO_MPI;
    if (peer == MPI_PROC_NULL)
        return P2P_TO_NULL;
    if (count < 0 || (tag < 0 && !(recv && tag == MPI_ANY_TAG)))
        return P2P_TO_MPI;
    if (peer == MPI_ANY_SOURCE)
        return recv ? P2P_TO_ENGINE : P2P_TO_MPI;
    if ((unsigned)peer >= (unsigned)c->size)
        return P2P_TO_MPI;
    return c->local[peer] < 0 ? P2P_TO_OFFNODE : P2P_TO_ENGINE;
}
/* The real MPI's own call for an operation bobcat leaves to it: the one place a mode becomes a
 * PMPI_* call (the MPI-4 _c form above INT_MAX elements). how: P2P_BLOCKING (st: a receive's
 * status), P2P_NONBLOCKING or P2P_PERSISTENT (req). */
enum { P2P_BLOCKING, P2P_NONBLOCKING, P2P_PERSISTENT };
int p2p_real(int how, int mode, const void *buf, MPI_Count count, MPI_Datatype dt, int peer, int tag,
                        MPI_Comm comm, MPI_Request *req, MPI_Status *st);
/* Why a call on this communicator went to the real MPI (for BOBCAT_STATS). */
pmpi_why_t p2p_why_not(MPI_Comm comm);
/* BOBCAT_STATS rows: sends by path (eager / single-copy through bobcat, or the real MPI and why),
 * receives by where they were posted, and the engine's own counters. */
extern pmpi_stat_t p2p_st_send, p2p_st_recv, p2p_st_engine;
enum { P2P_X_NONCONTIG = 18, P2P_X_OFFQ_SWITCH = 19 }; /* p2p_st_engine.extra slots counted here */

/* ---- p2p_complete.c ---- */

/* 1 when complete; fills *st (may be MPI_STATUS_IGNORE); returns the MPI error code in *err_p.
 * Does not release the request. Callers run p2p_progress() first: a receive the engine has not
 * matched is reported incomplete without another engine pass (a polling loop's one look costs one
 * pass: HPCC RandomAccess tests once per update). */
int p2p_req_test(p2p_req_t *r, MPI_Status *st, int *err_p);
/* One look at an engine send: complete now (1), or after progress, or detached (its receiver has
 * not matched after P2P_DETACH_POLLS looks, counted in *polls); else 0. */
int p2p_send_settled(msg_req_t *m, unsigned *polls);

/* ---- p2p_progress.c ---- */

/* Operations of other rooms in flight (nonblocking collectives): p2p_progress calls
 * p2p_ext_progress while p2p_ext_pending is not 0. */
extern int p2p_ext_pending;
extern void (*p2p_ext_progress)(void);
/* Frees a communicator entry's `nb` (set by the room that made it). */
extern void (*p2p_nb_free)(p2p_comm_t *c);

/* This rank's progress matters to someone: receives posted, off-node queue, orphans, collectives. */
static inline int p2p_need_progress(void)
{
    return bobcat_msg_busy() || p2p_offq_head != NULL || p2p_orphans != NULL || p2p_ext_pending;
}
void p2p_progress(void);
void p2p_poke_mpi(void);

/* ---- p2p_agent.c: the progress thread (BOBCAT_PROGRESS=thread) ---- */

/* Start it at MPI_Init, when the real MPI gave MPI_THREAD_MULTIPLE (0), or say why not and leave the
 * rank to progress alone (-1); stop and join it at MPI_Finalize. */
int p2p_agent_start(void);
void p2p_agent_stop(void);
/* Calls in flight that only this rank's own process can move: leaders' phases of nonblocking
 * collectives across nodes (a request of the real MPI's). What the agent runs for; written under
 * the layer's lock, read by the agent as a hint. (On one node a node mate's help already does a
 * computing rank's share: an agent there only took the helper's core, docs/benchmarks.md.) */
extern int p2p_agent_work;
/* Such a call has started: set p2p_agent_work, and wake the agent if it sleeps. */
void p2p_agent_wanted(void);
/* a wait loop's pause: spins a little, then yields the core */
void p2p_relax(unsigned *spins);
/* While a rank waits inside an on-node collective (the engine's idle hook). */
void p2p_idle_hook(void);

/* ---- the starting files ---- */

/* p2p_send.c, p2p_recv.c: any nonblocking send / receive (p2p_start.c's persistent starts and
 * Sendrecv). */
int p2p_isend_any(const void *buf, MPI_Count count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm,
                             int mode, MPI_Request *req);
int p2p_irecv_any(void *buf, MPI_Count count, MPI_Datatype dt, int src, int tag, MPI_Comm comm,
                             MPI_Request *req);
/* p2p_init.c */
int p2p_init(void);      /* after PMPI_Init: engine + WORLD/SELF (collective over WORLD) */
void p2p_finalize(void); /* before PMPI_Finalize */

#if !defined(OPEN_MPI) && !defined(MPICH)
/* The standard ABI (the abi flavour): whether statuses are written directly (p2p_req.c). */
extern int p2p_abi_status_direct;
void p2p_abi_status_probe(void);
#endif

#endif
