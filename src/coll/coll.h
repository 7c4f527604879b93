/* coll: on-node collectives in place over SMARTMAP, without MPI. The ranks of one node group
 * (a communicator's ranks on one node) meet in a control area in shared memory, publish pointers
 * to their buffers, and copy or reduce straight between the buffers through the windows (the
 * SMARTMAP slides' algorithms). The MPI layer (src/pmpi) supplies the group, stages buffers that
 * are outside the segment, describes datatypes and ops as coll_op_t, and does the inter-node
 * phase through the real MPI.
 *
 * Buffer rule: a buffer another rank reads or writes must be in the caller's segment
 * (smap_is_shared); each algorithm below says which. Pointers are in the caller's own view.
 *
 * Completion rule (why no rank can be overtaken): a rank whose published slot or buffer another
 * rank uses in call k leaves call k only after every such user has signalled done for k, so it
 * cannot overwrite its slot (call k+1) or its buffer (the program) while someone still reads it. */
#ifndef BOBCAT_COLL_H
#define BOBCAT_COLL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/util.h"

#define COLL_LINE 64

/* Control area layout (one per node group, in the node group's first rank's segment). Each
 * field a rank writes sits on its own cache line, so a rank's publication costs one line
 * transfer to each reader and no false sharing:
 *   line 0: arrive and release — the barrier counter, fetch_add by every rank (contended by
 *           design: the slides' "each process atomically increments a counter"), and the
 *           generation the last arriver releases, which everyone polls. One line: the last
 *           arriver already holds it exclusively when it stores the release, so a barrier of two
 *           costs two line transfers instead of three.
 *   line 1: (unused, keeps refs away from the barrier line)
 *   line 2: refs    — ranks still using the area (freed by the owner when it reaches 0)
 *   then per rank three lines: pub[2] (seq + 7 words written by the owner, seq stored last with
 *   release order so a reader that acquires seq sees the words; one line per call parity) and
 *   done (seq of the last call whose peers' data this rank has finished with). */
typedef struct {
    _Alignas(COLL_LINE) _Atomic uint64_t seq;
    uint64_t word[7];
} coll_pub_t;

typedef struct {
    _Alignas(COLL_LINE) _Atomic uint64_t done;
    uint64_t pad[7];
} coll_done_t;

/* Two publication lines, used by call parity (seq & 1): a rank writes call s's line while a slow
 * peer may still read its call s-1 line. It writes the line of call s-2 again only when every
 * peer is past s-2 (the completion rule, or for two ranks: every call waits on something the peer
 * wrote in that call, which the peer writes only after finishing the call before). */
typedef struct {
    coll_pub_t pub[2];
    coll_done_t done;
} coll_slot_t;

typedef struct {
    _Alignas(COLL_LINE) _Atomic uint64_t arrive;
    _Atomic uint64_t release;
    _Alignas(COLL_LINE) uint64_t unused;
    _Alignas(COLL_LINE) _Atomic int64_t refs;
    coll_slot_t slot[];
} coll_ctrl_t;

_Static_assert(sizeof(coll_pub_t) == COLL_LINE, "pub is one cache line");
_Static_assert(sizeof(coll_slot_t) == 3 * COLL_LINE, "a slot is three cache lines");
_Static_assert(offsetof(coll_ctrl_t, release) < COLL_LINE, "arrive and release share line 0");
_Static_assert(offsetof(coll_ctrl_t, refs) == 2 * COLL_LINE, "refs on its own line");
_Static_assert(offsetof(coll_ctrl_t, slot) == 3 * COLL_LINE, "three shared lines precede the slots");

/* Data of at most this many bytes travels inside the publishing slot (Bcast, and the serial
 * reductions and Scan): then no peer reads the caller's buffer, which may be private. */
#define COLL_INLINE_MAX 48

static inline size_t coll_ctrl_size(int nranks) { return sizeof(coll_ctrl_t) + (size_t)nranks * sizeof(coll_slot_t); }

/* One node group as seen by one of its ranks. */
typedef struct {
    int size, rank;          /* ranks in the group, mine */
    const uintptr_t *base;   /* group rank -> offset from its heap pointers to my view of them */
    coll_ctrl_t *ctrl;       /* the control area, in my view */
    uint64_t seq;            /* collectives started on this group (equal on every rank between calls) */
    uint64_t bar;            /* barriers started */
    int spin;                /* polls before sched_yield */
    void (*progress)(unsigned yields); /* called before each yield (the wait's count so far): may
                                drive the real MPI's progress engine, so operations that need this
                                rank's MPI to move (passive-target RMA, rendezvous, nonblocking
                                collectives) advance while it waits here */
    void *scratch;           /* my scratch buffer, in my segment (others read it) */
    size_t scratch_size;
} coll_node_t;

/* Initialise the control area (by its owner, before anyone else sees it). */
BOBCAT_LAYER_API void coll_ctrl_init(coll_ctrl_t *ctrl, int nranks);
/* Stop using the group; returns 1 if the caller was the last user (the owner may free ctrl). */
BOBCAT_LAYER_API int coll_node_release(coll_node_t *cn);
/* My scratch of at least `bytes` (grown with malloc; NULL on out of memory). Only between calls. */
BOBCAT_LAYER_API void *coll_scratch(coll_node_t *cn, size_t bytes);

/* ---- ops on raw bytes ----------------------------------------------------------------------- */

typedef enum {
    COLL_OP_SUM, COLL_OP_PROD, COLL_OP_MAX, COLL_OP_MIN, COLL_OP_LAND, COLL_OP_LOR, COLL_OP_LXOR,
    COLL_OP_BAND, COLL_OP_BOR, COLL_OP_BXOR, COLL_OP_MAXLOC, COLL_OP_MINLOC, COLL_OP_N
} coll_opk_t;

typedef enum {
    COLL_T_I8, COLL_T_U8, COLL_T_I16, COLL_T_U16, COLL_T_I32, COLL_T_U32, COLL_T_I64, COLL_T_U64,
    COLL_T_F32, COLL_T_F64, COLL_T_LD, COLL_T_CF, COLL_T_CD, COLL_T_CLD, COLL_T_BOOL,
    /* MINLOC/MAXLOC pairs: value then int index, as C lays out the struct */
    COLL_T_FLOAT_INT, COLL_T_DOUBLE_INT, COLL_T_LONG_INT, COLL_T_2INT, COLL_T_SHORT_INT, COLL_T_LD_INT,
    COLL_T_N
} coll_type_t;

struct coll_op;
/* inout[i] = in[i] op inout[i] for count elements (in on the left, as MPI's user functions). */
typedef void (*coll_op_fn)(const void *in, void *inout, size_t count, const struct coll_op *op);
/* out[i] = a[i] op b[i] (a on the left): the first step of a fold, which then reads two inputs and
 * writes the accumulator once instead of copying one input into it and reading it back. */
typedef void (*coll_op_fn3)(const void *a, const void *b, void *out, size_t count, const struct coll_op *op);

typedef struct coll_op {
    coll_op_fn fn;
    coll_op_fn3 fn3; /* NULL: the fold copies, then applies fn */
    size_t extent;   /* bytes from one element to the next */
    size_t tail;     /* bytes of the last element up to its last data byte (<= extent): a buffer
                        of n elements spans (n - 1) * extent + tail bytes */
    int commutative;
    void *user[2];   /* for a caller-supplied fn (the MPI layer's op and datatype handles) */
} coll_op_t;

/* A built-in op on a built-in element type; BOBCAT_ERR_INVAL if MPI does not define the pair. */
BOBCAT_LAYER_API bobcat_status_t coll_op_builtin(coll_opk_t opk, coll_type_t type, coll_op_t *op_p);
static inline size_t coll_span(const coll_op_t *op, size_t count) { return count ? (count - 1) * op->extent + op->tail : 0; }

/* ---- algorithms (collective over the node group) -------------------------------------------- */

/* Tuning shared by every group, set once by the MPI layer from its knobs (src/util/options.def). */
typedef struct {
    size_t split_min; /* Bcast of at least this many bytes: the root pushes a share into every
                         receiver's buffer while the receivers pull the rest (two cores move the
                         data); 0 = never (every receiver copies the whole buffer) */
    int fold3;        /* first fold step out = a op b (1), or copy then a op= (0, the old way) */
    void (*yield)(void); /* a wait gives up the core: NULL sched_yield(); the MPI layer's under
                            MPI_THREAD_MULTIPLE also lets the rank's other threads into the layer */
} coll_tune_t;
BOBCAT_LAYER_API extern coll_tune_t coll_tune;

/* PARALLEL: slices reduced into scratch, then every rank copies every slice (two rounds).
 * FUSED (Allreduce; Reduce treats it as PARALLEL): rank r reduces slice r of every input and
 * writes it straight into every rank's result: per rank n bytes read and n written instead of
 * 2n read and (1 + 1/P) n written. */
typedef enum { COLL_ALG_SERIAL, COLL_ALG_PARALLEL, COLL_ALG_FUSED } coll_alg_t;

BOBCAT_LAYER_API void coll_barrier(coll_node_t *cn);
/* root's buf shared; others may be private (a private one is not pushed into: its owner copies
 * all of it). 0, or at a receiver whose bytes differ from the root's (the fewer moved) 1 if the
 * root sent more, 2 if less. */
BOBCAT_LAYER_API int coll_bcast(coll_node_t *cn, int root, void *buf, size_t bytes);
/* The same; a root with `failed` set makes every receiver whose bytes match get 3 (a node's
 * leader whose broadcast among the leaders failed says so to its node). */
BOBCAT_LAYER_API int coll_bcast_failed(coll_node_t *cn, int root, void *buf, size_t bytes, int failed);
/* Every rank's sbuf shared (at the root sbuf may equal rbuf: in place). Parallel: root's rbuf shared. */
BOBCAT_LAYER_API void coll_reduce(coll_node_t *cn, int root, const void *sbuf, void *rbuf, size_t count, const coll_op_t *op, coll_alg_t alg);
/* Every rank's sbuf shared (may equal rbuf). rbuf private ok (FUSED: a private one costs a second
 * round, its owner pulls the slices). Uses scratch. */
BOBCAT_LAYER_API int coll_allreduce(coll_node_t *cn, const void *sbuf, void *rbuf, size_t count, const coll_op_t *op, coll_alg_t alg);
/* Every rank's sbuf shared (may equal rbuf); rank r gets elements [displ[r], displ[r] + counts[r]). */
BOBCAT_LAYER_API int coll_reduce_scatter(coll_node_t *cn, const void *sbuf, void *rbuf, const size_t *counts, const size_t *displs,
                        const coll_op_t *op);
/* Every rank's sbuf shared (may equal rbuf). exclusive: rank 0's rbuf untouched. */
BOBCAT_LAYER_API int coll_scan(coll_node_t *cn, const void *sbuf, void *rbuf, size_t count, const coll_op_t *op, int exclusive);
/* Each rank writes its piece at the root: root's rbuf shared. sbuf NULL at the root = in place.
 * The pieces lie at the root's piece size; a rank whose own differs (erroneous: the signatures
 * must match) moves the fewer bytes and gets 1 if its piece did not fit (else 0). */
BOBCAT_LAYER_API int coll_gather(coll_node_t *cn, int root, const void *sbuf, size_t bytes, void *rbuf);
/* Each rank reads its piece at the root: root's sbuf shared. rbuf NULL at the root = in place.
 * As coll_gather: 1 at a rank whose piece was smaller than the root's (truncated). */
BOBCAT_LAYER_API int coll_scatter(coll_node_t *cn, int root, const void *sbuf, size_t bytes, void *rbuf);
/* Root reads every piece: non-roots' sbuf shared; piece r lands at rbuf + displs[r] (bytes). */
BOBCAT_LAYER_API void coll_gatherv(coll_node_t *cn, int root, const void *sbuf, size_t sbytes, void *rbuf, const size_t *bytes,
                  const size_t *displs);
/* Root writes every piece: non-roots' rbuf shared; piece r is sbuf + displs[r]. */
BOBCAT_LAYER_API void coll_scatterv(coll_node_t *cn, int root, const void *sbuf, const size_t *bytes, const size_t *displs, void *rbuf,
                   size_t rbytes);
/* Each rank reads every piece: every sbuf shared; piece r lands at rbuf + displs[r]. sbuf NULL =
 * in place (my piece is already at rbuf + displs[me], and then rbuf must be shared). When every
 * piece is at most COLL_INLINE_MAX bytes they travel in the slots (buffers may then be private). */
BOBCAT_LAYER_API void coll_allgatherv(coll_node_t *cn, const void *sbuf, void *rbuf, const size_t *bytes, const size_t *displs);
/* Each rank reads block `me` of every rank's sbuf (shared, not overlapping rbuf). When the whole
 * send buffer is at most COLL_INLINE_MAX bytes it travels in the slots: buffers may then be
 * private, and sbuf may be rbuf (in place). */
BOBCAT_LAYER_API void coll_alltoall(coll_node_t *cn, const void *sbuf, size_t bytes, void *rbuf);

/* Vector all-to-all (MPI_Alltoallv/w) on packed bytes: I send sbytes[r] bytes at sblk[r] to group
 * rank r and receive rbytes[r] bytes from r into rblk[r] (any memory: only I write it). Each rank
 * reads its block straight from every peer's: a peer publishes where its block for me lies and how
 * long it is (in its slot for up to 4 ranks, else in an array in its scratch), and I copy it.
 * So sblk[r] (r != me) must be in the segment, unless coll_alltoallv_inlines(): then my block for
 * the peer travels in my slot, and my buffers may be private and overlap my receive blocks. My own
 * block is copied when sblk[me] != rblk[me] (pass them equal, or 0 bytes, in place). Returns how
 * many blocks were longer than I expected (cut to rbytes: MPI's truncation error). */
static inline int coll_alltoallv_inlines(const coll_node_t *cn, const size_t *sbytes)
{
    return cn->size == 2 && sbytes[1 - cn->rank] <= COLL_INLINE_MAX;
}
BOBCAT_LAYER_API int coll_alltoallv(coll_node_t *cn, const void *const *sblk, const size_t *sbytes, void *const *rblk,
                                    const size_t *rbytes);

/* ---- nonblocking collectives: a ring of calls in flight per group (coll_nb.c) ----------------
 *
 * A group that runs nonblocking collectives has, besides its control area, a ring area: for each
 * of COLL_NB_DEPTH calls in flight and each rank, a publication line (seq + 7 words, as coll_pub_t)
 * and a unit line (claim, done); and per rank a watermark line. Call s uses entry s % DEPTH. The
 * ranks of a communicator start its collectives in one order (MPI's rule), so call s is the same
 * collective on every rank.
 *
 * A call is split into units, one per rank (rank p's unit: what lands in p's result, or slice p of
 * a reduction). Every rank publishes its buffers when it starts the call; from then on, any rank
 * that makes progress may claim a unit whose buffers are all in the segment and do it through the
 * windows (claimable calls), so a rank that started the call and went away to compute still has
 * its share done by the node mates that wait: what the SMARTMAP slides' in-place collectives give
 * a nonblocking collective without a progress thread. Calls whose data travels inside the slots
 * (inline: small) are done by each rank for itself. A rank's call is complete when the units that
 * touch its buffers are done (every unit for most calls).
 *
 * Ring reuse rule: a rank publishes call s + DEPTH only when every rank's watermark (all its calls
 * up to wm are complete, so it no longer reads their entries) is at least s. A call that cannot be
 * published yet waits in its group's queue; progress publishes it later, in order. */
#define COLL_NB_DEPTH 8
/* Persistent collectives match in the order of their inits, not of their starts (MPI 4.0), so the
 * first COLL_NB_CHANNELS persistent collectives made on a communicator get a channel each: a ring
 * of depth 1 of their own after the main ring in the same area (a persistent request has one call
 * in flight at a time). Later ones get a ring in an area of their own (coll_nb_solo_*). */
#define COLL_NB_CHANNELS 8

typedef struct {
    coll_pub_t pub;                               /* the call's words, seq stored last */
    _Alignas(COLL_LINE) _Atomic uint64_t claim;   /* seq of the last call whose unit somebody took */
    _Atomic uint64_t done;                        /* seq of the last call whose unit is finished */
} coll_nb_slot_t;
_Static_assert(sizeof(coll_nb_slot_t) == 2 * COLL_LINE, "a ring slot is two cache lines");

typedef struct {
    _Alignas(COLL_LINE) _Atomic int64_t refs;     /* ranks still using the area (owner frees at 0) */
} coll_nb_area_t;

BOBCAT_LAYER_API size_t coll_nb_area_size(int nranks);
BOBCAT_LAYER_API void coll_nb_area_init(coll_nb_area_t *a, int nranks);
/* Channel k (< COLL_NB_CHANNELS) of an area (in my view): a group's `area` with depth 1. */
BOBCAT_LAYER_API char *coll_nb_channel(char *area, int nranks, int k);
/* A channel with an area of its own (a persistent collective's past the area's channels): its
 * size, its initialisation (refs = nranks), its ring (a group's `area` with depth 1). */
BOBCAT_LAYER_API size_t coll_nb_solo_size(int nranks);
BOBCAT_LAYER_API void coll_nb_solo_init(coll_nb_area_t *a, int nranks);
BOBCAT_LAYER_API char *coll_nb_solo_ring(coll_nb_area_t *a);

typedef enum {
    COLL_NB_BARRIER, COLL_NB_BCAST, COLL_NB_REDUCE, COLL_NB_ALLREDUCE, COLL_NB_ALLGATHER, COLL_NB_ALLTOALL,
    COLL_NB_GATHER, COLL_NB_SCATTER, COLL_NB_REDUCE_SCATTER, COLL_NB_SCAN, COLL_NB_EXSCAN,
    /* The v/w forms, on packed bytes: per-rank counts differ, so each rank publishes a table of its
     * own side in its segment (coll_nb.c, "tables"); never inline. Alltoallw is ALLTOALLV. */
    COLL_NB_GATHERV, COLL_NB_SCATTERV, COLL_NB_ALLGATHERV, COLL_NB_ALLTOALLV, COLL_NB_N
} coll_nb_kind_t;

enum { COLL_NB_HOLD_DATA = 1, COLL_NB_HOLD_AREA = 2 }; /* coll_nb_t's hold bits */

struct coll_nb;
/* One group as one of its ranks runs nonblocking collectives on it (private to that rank). */
typedef struct coll_nb_group {
    int size, rank;
    const uintptr_t *base;     /* group rank -> offset from its pointers to my view */
    char *area;                /* the ring area (or a channel of it), in my view */
    int depth;                 /* calls in flight its ring holds: COLL_NB_DEPTH, a channel 1 (a
                                  power of two) */
    uint64_t started;          /* calls started here */
    uint64_t published;        /* calls published (<= started) */
    uint64_t wm;               /* my watermark as last stored */
    uint64_t peers_wm;         /* the lowest peer watermark last read */
    struct coll_nb *head, *tail; /* my calls not yet complete, in start order */
    int help;                  /* do claimable units of other ranks (BOBCAT_NBC_HELP) */
} coll_nb_group_t;

/* One nonblocking collective as one rank runs it. The caller fills the arguments (every buffer a
 * peer reaches in the segment unless the call is inline), then coll_nb_start. Arguments every rank
 * passes alike (root, counts, op) are used by whoever does a unit; buffers travel in the slots. */
typedef struct coll_nb {
    coll_nb_group_t *g;
    coll_nb_kind_t kind;
    int root;
    size_t bytes;              /* moving calls: bytes per piece/block (per rank for Bcast); the v
                                  forms: my own piece's (Gatherv, Allgatherv: sent; Scatterv: received) */
    const uint64_t *tab;       /* the v forms: my table, in my segment (coll_nb.c; the caller keeps it
                                  until the call is complete) */
    size_t count;              /* reductions: elements (Reduce_scatter: see counts) */
    const size_t *counts;      /* Reduce_scatter: elements per rank (the caller keeps it alive) */
    coll_op_t op;
    const void *sbuf;          /* mine (Bcast: the buffer, at every rank); NULL: in place */
    void *rbuf;
    int inl;                   /* the data travels in the slots (from facts every rank shares) */
    uint64_t seq;              /* its place in the group's order (1, 2, ...) */
    int hold;                  /* started but not to be published yet: COLL_NB_HOLD_DATA (the
                                  caller's: its data is not ready, the node phase after a leaders'
                                  phase; coll_nb_release), COLL_NB_HOLD_AREA (coll_nb_start's: its
                                  group's area is not known yet; coll_nb_set_area) */
    int published, mine_done, complete;
    int parts;                 /* pieces each unit is cut into (coll_nb.c, "parts"): set when published */
    int vinl;                  /* ALLTOALLV: my blocks travel in my slot (coll_nb.c, "small
                                  all-to-all-v"): set when published */
    int failed;                /* BCAST, the root: say so to every receiver (a node's leader whose
                                  broadcast among the leaders failed) */
    int mism;                  /* BCAST, a receiver, once complete: 1 the root sent more than my
                                  bytes, 2 fewer (erroneous; the fewer moved), 3 the root failed */
    struct coll_nb *next;
} coll_nb_t;

/* Whether a call of this shape travels in the slots: the same answer on every rank. */
BOBCAT_LAYER_API int coll_nb_inlines(const coll_nb_group_t *g, coll_nb_kind_t kind, size_t bytes, size_t span);
/* Start the call: publish it, or queue it behind calls not yet published. Never waits. */
BOBCAT_LAYER_API void coll_nb_start(coll_nb_t *c);
/* A held call's data is ready: publish it (and the calls queued behind it) unless its area is
 * still unknown. */
BOBCAT_LAYER_API void coll_nb_release(coll_nb_t *c);
/* A group made with area NULL (its ring's place learnt later): calls started on it are held until
 * this says where the ring is, and then go. */
BOBCAT_LAYER_API void coll_nb_set_area(coll_nb_group_t *g, char *area);
/* Progress the call's group; 1 once the call is complete (then it has left the group). */
BOBCAT_LAYER_API int coll_nb_test(coll_nb_t *c);
/* Progress every call of the group (publish what can be, do units, complete). 1 if any remain. */
BOBCAT_LAYER_API int coll_nb_progress(coll_nb_group_t *g);

#endif
