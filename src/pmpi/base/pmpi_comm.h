/* pmpi_comm: the base of libbobcat's MPI layer, shared by the collectives (pmpi_coll*.c) and the
 * single-copy point-to-point (p2p/). Everything here is internal to libbobcat-<mpi>.so.
 *
 * Three things:
 *  1. pmpi_layer: layer-wide state fixed at MPI_Init (is the layer on, and if not why; thread
 *     level; the plan's node of every world rank; the knobs).
 *  2. pmpi_comm_t: what bobcat knows about one communicator, built lazily on first use and freed
 *     with the communicator (an attribute whose delete callback frees it; MPI_Comm_dup does not
 *     copy it, so a dup builds its own). Two parts:
 *       - the rank tables (pmpi_comm_get, NOT collective: safe from a point-to-point call): each
 *         comm rank's world rank, plan node and SMARTMAP local index (-1 off my node), and the
 *         per-peer base table that turns a peer's heap pointer into mine without a call;
 *       - the node part (pmpi_comm_get_coll, COLLECTIVE over the communicator: call it only where
 *         every rank calls it in the same order, i.e. from a collective): the node communicator,
 *         the leaders' communicator and the node's control area in shared memory.
 *  3. statistics (pmpi_stats.c): counters by call and path that BOBCAT_STATS prints at
 *     MPI_Finalize. Any part of the layer registers its own counters.
 *
 * Rule for every MPI_* entry point: `pmpi_comm_t *pc = pmpi_comm_get(comm); if (!pc) -> PMPI_*`.
 * NULL means bobcat must not handle the communicator: the layer is off (BOBCAT_MPI=off, not
 * started by yod, MPI not initialised or already finalised) or the communicator is an
 * intercommunicator. Every entry point starts with PMPI_GUARD() (pmpi_lock.h). */
#ifndef BOBCAT_PMPI_COMM_H
#define BOBCAT_PMPI_COMM_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include <bobcat/smartmap.h>
#include "../../util/util.h"
#include "../../coll/coll.h"
#include "../../msg/msg.h"
#include "pmpi_lock.h"

/* A blocking call into the real MPI. The progress rule (docs/mpi.md, "Progress"): while this rank
 * sits in it with receives posted, node mates' synchronous and rendezvous sends to them still
 * complete, because the engine's helper thread matches for it (msg.h, "Away"). Every blocking
 * PMPI_* call of the layer goes through this, and so does every MPI_* entry point the layer only
 * passes through (pmpi_pass.c, generated). Under MPI_THREAD_MULTIPLE it also lets go of the
 * layer's lock for the call's duration (pmpi_lock.h). */
typedef struct {
    int mt;  /* taken at MPI_THREAD_MULTIPLE (pmpi_mt when the call began) */
    int ret; /* what the matching end needs: went away, or this thread's depth */
} pmpi_away_t;

static inline pmpi_away_t pmpi_away_begin(void)
{
    pmpi_away_t a = {pmpi_mt, 0};
    a.ret = a.mt ? pmpi_mt_away_begin() : bobcat_msg_away_begin();
    return a;
}

static inline void pmpi_away_end(pmpi_away_t a)
{
    if (a.mt)
        pmpi_mt_away_end(a.ret);
    else
        bobcat_msg_away_end(a.ret);
}

#define PMPI_AWAY(call)                                                                                  \
    __extension__({                                                                                      \
        pmpi_away_t away_ = pmpi_away_begin();                                                           \
        int rc_ = (call);                                                                                \
        pmpi_away_end(away_);                                                                            \
        rc_;                                                                                             \
    })

/* ---- 1. the layer --------------------------------------------------------------------------- */

typedef struct {
    int on;                 /* 1: bobcat handles what it can; 0: every call goes to PMPI_* */
    const char *off_reason; /* why not on ("BOBCAT_MPI=off", "not-started-by-yod", ...) */
    int initialized;        /* between our MPI_Init* and MPI_Finalize */
    int finalizing;         /* inside MPI_Finalize: attribute callbacks must not communicate */
    int thread_level;       /* provided by the real MPI */
    int program_mt;         /* the program itself runs at MPI_THREAD_MULTIPLE (not only the layer's
                               progress thread): set before the layer starts */
    int no_hidden_comms;    /* no node or leaders communicators (nor duplicates of them) may be made
                               after MPI_Init: Open MPI with some rank's program at MULTIPLE
                               (pmpi_comm.c, "Hidden communicators") */
    MPI_Comm lead_world;    /* the layer's copy of MPI_COMM_WORLD for leaders' phases over point-to-point
                               (pmpi_comm_t.lead_tag; BOBCAT_COLL_LEADERS): MPI_COMM_NULL when none */
    int lead_tags;          /* tags per world rank on lead_world (pmpi_comm_lead_start) */
    int lead_block;         /* ... per communicator, of those: its blocking calls', its nonblocking
                               calls', then one per persistent collective made on it across nodes
                               (the first lead_block - 2: pmpi_comm_t.lead_tag) */
    int world_rank, world_size;
    int node;               /* my plan node */
    int local_rank, local_size; /* my SMARTMAP index on my node, ranks on my node */
    int *world_node;        /* plan node of every world rank (world_size entries) */
    int *world_local;       /* local index on its own node of every world rank */
    int spin;               /* polls of a shared flag before yielding (1 when oversubscribed) */
    const util_options_t *opt; /* the knobs (never NULL while on) */
} pmpi_layer_t;

extern pmpi_layer_t pmpi_layer;

/* ---- 2. communicators ----------------------------------------------------------------------- */

/* Extension slots: another part of the layer hangs its own per-communicator state here.
 * pmpi_comm_ext_register (call once, at MPI_Init time or from a constructor) returns a slot
 * index; when the communicator is freed, free_fn(pc, pc->ext[slot]) runs for non-NULL slots
 * (before the node part is torn down, and possibly during MPI_Finalize: see pmpi_layer.finalizing). */
#define PMPI_COMM_EXT_MAX 4
struct pmpi_comm;
typedef void (*pmpi_comm_ext_free_fn)(struct pmpi_comm *pc, void *ext);
int pmpi_comm_ext_register(pmpi_comm_ext_free_fn free_fn);

typedef struct pmpi_comm {
    MPI_Comm comm;        /* the communicator this describes */
    int rank, size;       /* mine in comm, and comm's size */
    /* Rank tables, indexed by comm rank. */
    int *world;           /* world rank */
    int *node;            /* plan node (simulated nodes are real nodes here) */
    int *local;           /* SMARTMAP local index if on my node, else -1 */
    uintptr_t *peer_base; /* added to a pointer into that rank's own heap (its slot-0 address, as
                             it sees it) gives the same byte as seen here; 0 for me and for
                             off-node ranks (check local[r] >= 0 first): see pmpi_peer_ptr */
    int single_node;      /* every rank of comm is on my node */
    int on_node;          /* ranks of comm on my node (me included) */

    /* Node part: valid once coll_ready (pmpi_comm_get_coll). */
    int coll_ready;
    int early;          /* the node part was built when the communicator was made (counted) */
    MPI_Comm node_comm;     /* the ranks of comm on my node, ordered by comm rank (private); MPI_COMM_NULL
                               when comm is on one node (node_part_build) */
    MPI_Comm leaders_comm;  /* the lowest comm rank of every node, ordered by comm rank; MPI_COMM_NULL
                               on non-leaders and when comm is on one node (private) */
    int lead_tag;           /* >= 0: no node_comm or leaders_comm; the leaders' phase is point-to-point on
                               pmpi_layer.lead_world with this tag (the blocking collectives), the
                               next (the nonblocking ones) and those after it (the persistent ones,
                               one each: pmpi_layer.lead_block), the same on every rank of comm
                               (coll/pmpi_coll_lead.c); -1: on leaders_comm */
    coll_nb_area_t *node_nb; /* lead_tag >= 0, node mates: the ring area of the nonblocking collectives'
                               node phase (no node_comm has one), node rank 0's (node_nb_own there),
                               in my view; NULL: none (then also where some node could not make one:
                               node_nb_ok 0 on every rank, those calls go to the real MPI) */
    void *node_nb_own;
    int node_nb_ok;
    int node_rank, node_size; /* mine in node_comm, its size */
    int *node_ranks;        /* node_comm rank -> comm rank */
    int nnodes;             /* nodes comm spans */
    int leader;             /* comm rank of my node's leader (node_comm rank 0) */
    int *leader_rank;       /* comm rank -> leaders_comm rank of that rank's node leader */
    int blocked;            /* comm ranks are grouped by node in increasing node order (so a node's
                               partial reduction is a contiguous run of ranks: non-commutative
                               ops may go hierarchical) */
    /* Node order (the order of the data in every leaders' phase): ranks grouped by node, nodes in
     * leaders_comm order, comm rank order inside a node. Equal to comm order when blocked. */
    int *pos;               /* comm rank -> its place in node order */
    int *by_pos;            /* place in node order -> comm rank */
    int *node_first;        /* leaders_comm rank k -> place of node k's first rank (nnodes entries) */
    int *node_count;        /* leaders_comm rank k -> ranks of comm on node k */
    coll_node_t cn;         /* the node as coll/ sees it: size, my index, base table, control area */
    int pinits;             /* persistent collectives made on it that run across nodes (coll's count:
                               every rank counts alike) */
    void *ext[PMPI_COMM_EXT_MAX];
} pmpi_comm_t;

/* The communicator's info, building the rank tables if needed (local: no communication).
 * NULL when bobcat must not handle comm (see the banner). */
pmpi_comm_t *pmpi_comm_get(MPI_Comm comm);
/* What bobcat already knows of comm, without building anything (NULL if nothing yet). */
pmpi_comm_t *pmpi_comm_peek(MPI_Comm comm);
/* Same plus the node part (COLLECTIVE over comm the first time). NULL as pmpi_comm_get, or if
 * building the node part failed (then logged, and the comm stays with the real MPI). */
pmpi_comm_t *pmpi_comm_get_coll(MPI_Comm comm);
/* A communicator just made (COLLECTIVE over it): its node part now, when it spans nodes and its
 * parent already has one (parent MPI_COMM_NULL: none needed, for MPI_COMM_WORLD at MPI_Init), so
 * that its first collectives may be nonblocking ones and still run hierarchically. Only while
 * pmpi_node_part_early (the collectives' knobs: BOBCAT_COLL_HIER, BOBCAT_COLL_NBC not mpi). */
void pmpi_comm_node_part_early(MPI_Comm comm, MPI_Comm parent);
extern int pmpi_node_part_early;

/* The node communicator rank of comm rank r (node part built; r on my node, else -1). */
static inline int pmpi_comm_node_rank(const pmpi_comm_t *pc, int r)
{
    for (int i = 0; i < pc->node_size; i++)
        if (pc->node_ranks[i] == r)
            return i;
    return -1;
}

/* A pointer p into comm rank r's heap, as r sees it, seen from here. r must be on my node
 * (pc->local[r] >= 0) and p inside r's segment (smap_is_shared(p) on r). No call, no branch. */
static inline void *pmpi_peer_ptr(const pmpi_comm_t *pc, int r, const void *p)
{
    return (void *)((uintptr_t)p + pc->peer_base[r]);
}

/* Set by a room above (p2p): called when a communicator's node part has just been built (a
 * collective point: every rank of the communicator calls it) and just before its node communicator
 * is freed. p2p registers a spanning communicator's node communicator there, so that its
 * nonblocking collectives have a ring for their node phase. */
extern void (*pmpi_node_part_built)(pmpi_comm_t *pc);
extern void (*pmpi_node_part_freed)(pmpi_comm_t *pc);

/* The owner of a shared area in its heap lets go of it: freed now if `last` (no peer uses it any
 * more), else once *refs (the peers still using it) reaches 0, checked whenever an owner lets go. */
void pmpi_free_when_unused(void *mem, _Atomic int64_t *refs, int last);

/* A ring area of the nonblocking collectives (coll.h) for `size` ranks of this node, in my heap (the
 * segment) so that they reach it; its refs count them. NULL: no memory. */
coll_nb_area_t *pmpi_nb_area_new(int size);
/* A member lets go of such an area (view: where it sees it; own: the area, in the member that made
 * it, else NULL): the maker frees it once no member uses it (pmpi_free_when_unused). */
void pmpi_nb_area_release(coll_nb_area_t *view, void *own);

/* Other parts of the layer run fn at the start of MPI_Finalize (before the statistics are printed
 * and the layer stops; MPI still works), in registration order. Up to 8. */
void pmpi_at_finalize(void (*fn)(void));

/* RMA windows alive in this process (rma/pmpi_shm.c counts them). While there are any, the real MPI
 * may owe a peer progress that only its engine makes (MPICH: a passive-target lock, the completion
 * of an access epoch), so bobcat's waits and MPI_Barrier drive it: pmpi_mpi_progress is one
 * progress pass of the real MPI (MPI_Test on a receive nothing matches). */
extern int pmpi_rma_windows;
/* Some request of the real MPI's may be pending (a nonblocking call bobcat passed on): bobcat's waits
 * then drive the real MPI's progress now and then, as the standard's progress rule asks (the real
 * operation may need this rank's MPI to move while it waits on one of bobcat's requests). Sticky. */
extern int pmpi_real_requests;
void pmpi_mpi_progress(void);
/* bobcat's barrier on comm for the layer's own use (a window's fence), not counted in the
 * statistics as the program's MPI_Barrier (coll/pmpi_coll.c). */
int pmpi_barrier(MPI_Comm comm);
void pmpi_run_finalize_hooks(void);

/* Layer start and end (pmpi_init.c calls them). */
void pmpi_comm_layer_init(void);  /* after PMPI_Init*: keyval, world tables */
void pmpi_comm_layer_fini(void);  /* in MPI_Finalize before PMPI_Finalize */

/* ---- 3. statistics -------------------------------------------------------------------------- */

typedef enum {
    PMPI_PATH_INPLACE, /* through SMARTMAP, straight from/to the user's buffers */
    PMPI_PATH_STAGED,  /* through SMARTMAP, but at least one buffer copied through the segment
                          (stack/static/foreign memory, or a non-contiguous datatype packed) */
    PMPI_PATH_MPI,     /* handed to the real MPI (PMPI_*) */
    PMPI_PATH_N
} pmpi_path_t;

/* Why a call went to the real MPI. Append new reasons before PMPI_WHY_N and name them in
 * pmpi_why_names (pmpi_stats.c). */
typedef enum {
    PMPI_WHY_NONE,
    PMPI_WHY_OFF,        /* the layer is off (see pmpi_layer.off_reason) */
    PMPI_WHY_INTER,      /* intercommunicator */
    PMPI_WHY_FORCED,     /* a knob chose mpi */
    PMPI_WHY_DATATYPE,   /* datatype not handled (non-contiguous derived type for a reduction) */
    PMPI_WHY_OP,         /* op/datatype pair not handled here */
    PMPI_WHY_MULTINODE,  /* the communicator spans nodes and BOBCAT_COLL_HIER=0 */
    PMPI_WHY_ORDER,      /* across nodes, ranks not grouped by node: non-commutative op, or Scan/Exscan */
    PMPI_WHY_SETUP,      /* the node part could not be built */
    PMPI_WHY_VARIANT,    /* v/w variant or argument combination left to the real MPI */
    PMPI_WHY_OFFNODE,    /* point-to-point: the peer is on another node */
    PMPI_WHY_ROOT,       /* across nodes, a rooted nonblocking call whose root is not its node's
                            leader (lowest rank there) */
    PMPI_WHY_THREADS,    /* the communicator spans nodes and the layer may make no communicators for it
                            (MPI_THREAD_MULTIPLE on Open MPI: pmpi_layer.no_hidden_comms): its nonblocking
                            and persistent collectives, or all of them under BOBCAT_COLL_LEADERS=comm */
    PMPI_WHY_ALONE,      /* a blocking collective on a communicator with one rank on every node: no node
                            phase to gain, the real MPI's call on it (pc_hier_why) */
    PMPI_WHY_N
} pmpi_why_t;

/* At MPI_Init, on every rank alike, before any node part that should use it: the copy of WORLD for
 * leaders' phases over point-to-point (none if the MPI's tags are too few for it). */
void pmpi_comm_lead_start(void);
/* A leaders' call failed with code (an erroneous program: counts that differ across nodes): where
 * comm's handler is fatal, it runs now; else the code goes back to the layer's call. */
void pmpi_comm_lead_error(const pmpi_comm_t *pc, int code);

/* Why pmpi_comm_get_coll(comm) gave NULL (the layer off, an intercommunicator, no hidden
 * communicators at this thread level, a failed set-up). */
pmpi_why_t pmpi_comm_coll_why(MPI_Comm comm);

#define PMPI_STAT_ALGS 4
#define PMPI_STAT_EXTRA 20
typedef struct pmpi_stat {
    const char *name;                  /* "Allreduce", "Send", ... */
    const char *alg_names[PMPI_STAT_ALGS]; /* algorithm names, NULL-terminated if fewer */
    uint64_t calls[PMPI_PATH_N], bytes[PMPI_PATH_N];
    uint64_t alg[PMPI_STAT_ALGS];      /* SMARTMAP calls by algorithm */
    uint64_t why[PMPI_WHY_N];          /* real-MPI calls by reason */
    /* Named counters of a part's own (the point-to-point engine's: eager.sent, fbox.direct ...),
     * NULL-terminated if fewer; `refresh`, if set, fills them just before a report. */
    const char *extra_names[PMPI_STAT_EXTRA];
    uint64_t extra[PMPI_STAT_EXTRA];
    void (*refresh)(struct pmpi_stat *s);
    struct pmpi_stat *next;
} pmpi_stat_t;

extern int pmpi_stats_on;              /* counting: BOBCAT_STATS != off, or BOBCAT_STATS_DIR set */
extern int pmpi_stats_print;           /* printing on stderr: BOBCAT_STATS != off */
extern const char *const pmpi_why_names[PMPI_WHY_N];

/* Register a counter (static storage, zeroed; name and alg_names set). Register from a library
 * constructor so every rank registers the same counters in the same order (the node sum relies
 * on it). */
void pmpi_stats_register(pmpi_stat_t *s);

static inline void pmpi_stat_path(pmpi_stat_t *s, pmpi_path_t path, size_t bytes, int alg)
{
    if (pmpi_stats_on) {
        s->calls[path]++;
        s->bytes[path] += bytes;
        if (alg >= 0 && alg < PMPI_STAT_ALGS)
            s->alg[alg]++;
    }
}
static inline void pmpi_stat_mpi(pmpi_stat_t *s, pmpi_why_t why, size_t bytes)
{
    if (pmpi_stats_on) {
        s->calls[PMPI_PATH_MPI]++;
        s->bytes[PMPI_PATH_MPI] += bytes;
        s->why[why]++;
    }
}

/* The account of the routines the layer only passes through (gen/gen_pass.py generates them, their
 * names and pmpi_pass_acct): per routine, calls and bytes by where the call's communicator lies.
 * Counted while BOBCAT_STATS is on; pmpi_pass_count is the cold path of every pass-through. */
enum { PMPI_PASS_NODE, PMPI_PASS_OFFNODE, PMPI_PASS_UNKNOWN, PMPI_PASS_WHERE };
#define PMPI_PASS_WORDS (2 * PMPI_PASS_WHERE) /* calls by where, then bytes by where */
extern const int pmpi_pass_n;
extern const char *const pmpi_pass_names[];   /* without the MPI_ prefix: "Alltoallv" */
extern const unsigned char pmpi_pass_moves[];  /* 1: moves data or synchronises; 0: local */
extern uint64_t pmpi_pass_acct[][PMPI_PASS_WORDS];
void pmpi_pass_count(int idx, MPI_Comm comm, uint64_t bytes);
uint64_t pmpi_pass_bytes(MPI_Count count, MPI_Datatype dt);
uint64_t pmpi_pass_vbytes(const void *counts, int wide, MPI_Datatype dt, MPI_Comm comm);
int pmpi_pass_index(const char *name); /* -1 if the routine is not a pass-through */

/* Print (BOBCAT_STATS=rank|node) at MPI_Finalize; collective over MPI_COMM_WORLD for node. */
void pmpi_stats_report(void);

#endif
