/* coll_nb: nonblocking collectives on one node group, as state machines over a ring area
 * (coll.h, "nonblocking collectives"). Nothing here waits: coll_nb_start publishes (or queues),
 * coll_nb_progress / coll_nb_test do whatever the publications so far allow and return.
 *
 * What rank r publishes for call s (words of its ring slot, pointers in r's own view):
 *   BARRIER          nothing
 *   BCAST            w0 = its buffer (0 if inline); the root inline: its data in w0..w5;
 *                    w6 = its bytes | BC_INL if inline | BC_FAILED (the root failed)
 *   REDUCE           w0 = its input, the root's w1 = its result; inline: the input in w0..w5
 *   ALLREDUCE        w0 = its input, w1 = its result; inline: the input in w0..w5
 *   ALLGATHER        w0 = its piece, w1 = its result; inline: the piece in w0..w5
 *   ALLTOALL         w0 = its send buffer, w1 = its receive buffer; inline: the send buffer in w0..w5
 *   GATHER, SCATTER  w0 = its send buffer, w1 = its receive buffer (as far as it has them)
 *   REDUCE_SCATTER, SCAN, EXSCAN   w0 = its input, w1 = its result
 *   GATHERV          w0 = its piece, w2 = the piece's bytes; the root: w3 = its table
 *   SCATTERV         w1 = where its piece lands, w2 = the piece's bytes; the root: w3 = its table
 *   ALLGATHERV       w0 = its piece, w2 = the piece's bytes, w3 = its table
 *   ALLTOALLV        w3 = its table; small (below): its blocks in w0-w2, w4-w5, w6 = their stride
 *
 * Tables (the v forms; uint64 words in the owner's segment, written before it publishes, pointers
 * in the owner's view, 0 = none): per-rank counts differ, and MPI makes each rank's arrays
 * significant only to it, so each rank says where its side of every piece lies.
 *   GATHERV, ALLGATHERV  t[r] = bytes expected from rank r, t[n + r] = where they land
 *   SCATTERV (root)      t[r] = bytes of rank r's piece, t[n + r] = where it lies
 *   ALLTOALLV            t[r] = where my block for r lies, t[n + r] its bytes; t[2n + r] = where
 *                        r's block for me lands, t[3n + r] the bytes I expect
 * A unit copies the fewer of the two sides' bytes (MPI makes them equal; no truncation error).
 *
 * Small all-to-all-v: a rank whose every send block has at most VINL_BYTES / n bytes publishes the
 * blocks themselves, block r at r * stride of the 40 bytes of w0-w2 and w4-w5 (stride = VINL_BYTES
 * / n, in w6; w6 = 0: not inline). Only the rank itself knows its blocks are small (its counts are
 * its own), so the choice is per rank and said in its slot; a unit reads each sender's block from
 * its slot or its table accordingly, taking the receiver's expected bytes (up to the stride). No
 * unit reads such a rank's send side, so it completes once its own unit is done (NEED_OWN) instead
 * of every unit (NEED_ALL): one synchronisation fewer, as the inline Ialltoall. Its unit is its own
 * (no claim, nobody helps with it): for a few bytes a claim's atomic and the race to help cost more
 * than the copy; a rank of the call that is not small then waits for the small one's own progress.
 *
 * Rank p's unit (done by whoever claims it, from the publications and the arguments every rank
 * passes alike): BCAST copies the root's buffer into p's; REDUCE and ALLREDUCE reduce slice p of
 * every input into the root's result (every result); ALLGATHER fills p's result with every piece,
 * its own included; ALLTOALL fills p's receive buffer with block p of every send buffer, its own
 * included; GATHER (SCATTER) moves p's
 * piece to (from) the root; REDUCE_SCATTER reduces p's block into p's result; SCAN (EXSCAN) reduces
 * the inputs of ranks 0..p (0..p-1) into p's result; GATHERV (SCATTERV) moves p's piece to (from)
 * where the root's table says; ALLGATHERV fills p's result with every piece where p's table says;
 * ALLTOALLV fills p's receive blocks with every rank's block for p, its own included. Inline calls: each rank does its own unit
 * from the slots (no buffer of another rank is touched), and nobody else's.
 *
 * Reductions fold from the highest rank down (acc = x[i] op acc), as the blocking ones (coll_alg.c),
 * into a private chunk that is then written out: in-place inputs are safe because only unit p
 * reads or writes slice p. */
#include "coll_sync.h"

#include <stdlib.h>
#include <string.h>

#define D COLL_NB_DEPTH
_Static_assert((D & (D - 1)) == 0, "a ring's depth is a power of two (slot_of masks by it)");
#define NB_CHUNK (16 * 1024)
#define INL_WORDS (COLL_INLINE_MAX / 8)

static size_t hdr_size(int n) { return COLL_LINE + (size_t)n * COLL_LINE; }

static size_t ring_size(int n, int depth) { return hdr_size(n) + (size_t)depth * (size_t)n * sizeof(coll_nb_slot_t); }

size_t coll_nb_area_size(int nranks) { return ring_size(nranks, D) + COLL_NB_CHANNELS * ring_size(nranks, 1); }

char *coll_nb_channel(char *area, int nranks, int k)
{
    return area + ring_size(nranks, D) + (size_t)k * ring_size(nranks, 1);
}

size_t coll_nb_solo_size(int nranks) { return COLL_LINE + ring_size(nranks, 1); }

void coll_nb_solo_init(coll_nb_area_t *a, int nranks)
{
    memset(a, 0, coll_nb_solo_size(nranks));
    atomic_store_explicit(&a->refs, nranks, memory_order_release);
}

char *coll_nb_solo_ring(coll_nb_area_t *a) { return (char *)a + COLL_LINE; }

void coll_nb_area_init(coll_nb_area_t *a, int nranks)
{
    memset(a, 0, coll_nb_area_size(nranks));
    atomic_store_explicit(&a->refs, nranks, memory_order_release);
}

static inline _Atomic uint64_t *wm_of(const coll_nb_group_t *g, int r)
{
    return (_Atomic uint64_t *)(g->area + COLL_LINE + (size_t)r * COLL_LINE);
}

static inline coll_nb_slot_t *slot_of(const coll_nb_group_t *g, uint64_t s, int r)
{
    /* (depth a power of two: a mask, not a division, on every look at a slot) */
    return (coll_nb_slot_t *)(g->area + hdr_size(g->size)) +
           ((s & ((uint64_t)g->depth - 1)) * (uint64_t)g->size + (uint64_t)r);
}

/* Word w of rank r's publication for call s, as a pointer in my view. */
static inline char *pptr(const coll_nb_group_t *g, uint64_t s, int r, int w)
{
    uint64_t v = slot_of(g, s, r)->pub.word[w];
    return v ? (char *)(uintptr_t)(v + g->base[r]) : NULL;
}

static inline const char *pwords(const coll_nb_group_t *g, uint64_t s, int r)
{
    return (const char *)slot_of(g, s, r)->pub.word;
}

static inline uint64_t W(const void *p) { return (uint64_t)(uintptr_t)p; }

/* Small all-to-all-v (above): the published words that hold the blocks, in order. */
#define VINL_BYTES 40
static const int vinl_word[VINL_BYTES / 8] = {0, 1, 2, 4, 5};

/* Broadcast: every rank says its bytes and whether its side is inline (w6). Counts that differ
 * are erroneous, but they happen (MPICH's tests make them): each side's choice is its own, a
 * receiver's unit moves the fewer bytes from wherever the root's are, an inline receiver's unit is
 * its own (its buffer may be private), and each receiver compares the root's bytes with its own. */
#define BC_INL ((uint64_t)1 << 62)
#define BC_FAILED ((uint64_t)1 << 63)
#define BC_BYTES (BC_INL - 1)
static inline uint64_t bc_word(const coll_nb_group_t *g, uint64_t s, int r) { return slot_of(g, s, r)->pub.word[6]; }

/* The v forms: rank r's own piece's bytes (w2). */
static inline size_t pbytes(const coll_nb_group_t *g, uint64_t s, int r) { return (size_t)slot_of(g, s, r)->pub.word[2]; }
/* The v forms: a pointer of rank r's table, in my view. */
static inline char *tptr(const coll_nb_group_t *g, int r, uint64_t v) { return v ? (char *)(uintptr_t)(v + g->base[r]) : NULL; }

int coll_nb_inlines(const coll_nb_group_t *g, coll_nb_kind_t kind, size_t bytes, size_t span)
{
    switch (kind) {
    case COLL_NB_BCAST:
    case COLL_NB_ALLGATHER:
        return bytes <= COLL_INLINE_MAX;
    case COLL_NB_ALLTOALL:
        return bytes * (size_t)g->size <= COLL_INLINE_MAX;
    case COLL_NB_REDUCE:
    case COLL_NB_ALLREDUCE:
        return span <= COLL_INLINE_MAX;
    default:
        return 0;
    }
}

/* ---- who does what ------------------------------------------------------------------------ */

/* Rank p has a unit in this call. */
static int has_unit(const coll_nb_t *c, int p)
{
    size_t lo, cnt;
    switch (c->kind) {
    case COLL_NB_BARRIER:
        return 0;
    case COLL_NB_BCAST: /* (even empty: the root's bytes may differ, erroneous) */
        return p != c->root;
    case COLL_NB_GATHER:
    case COLL_NB_SCATTER:
        return p != c->root && c->bytes;
    case COLL_NB_REDUCE:
        if (c->inl)
            return p == c->root;
        coll_slice_of(c->count, c->g->size, p, &lo, &cnt);
        return cnt != 0;
    case COLL_NB_ALLREDUCE:
        if (c->inl)
            return 1;
        coll_slice_of(c->count, c->g->size, p, &lo, &cnt);
        return cnt != 0;
    case COLL_NB_ALLGATHER:
    case COLL_NB_ALLTOALL:
        return c->bytes != 0;
    case COLL_NB_REDUCE_SCATTER:
        return c->counts[p] != 0;
    case COLL_NB_SCAN:
        return 1;
    case COLL_NB_EXSCAN:
        return p > 0;
    case COLL_NB_GATHERV:
    case COLL_NB_SCATTERV:
        return p != c->root; /* (empty pieces too: only the root knows which are) */
    case COLL_NB_ALLGATHERV:
    case COLL_NB_ALLTOALLV:
        return 1;
    default:
        return 0;
    }
}

/* What my call's completion waits for. */
enum { NEED_NONE, NEED_PUBS, NEED_OWN, NEED_ALL };
static int need_of(const coll_nb_t *c)
{
    int me = c->g->rank;
    switch (c->kind) {
    case COLL_NB_BARRIER:
        return NEED_PUBS;
    case COLL_NB_BCAST:
        if (me == c->root)
            return c->inl ? NEED_NONE : NEED_ALL;
        return NEED_OWN;
    case COLL_NB_REDUCE:
        if (c->inl)
            return me == c->root ? NEED_OWN : NEED_NONE;
        return NEED_ALL;
    case COLL_NB_ALLREDUCE:
    case COLL_NB_ALLGATHER:
    case COLL_NB_ALLTOALL:
        return c->inl ? NEED_OWN : NEED_ALL;
    case COLL_NB_ALLTOALLV:
        return c->vinl ? NEED_OWN : NEED_ALL;
    case COLL_NB_GATHER:
    case COLL_NB_SCATTER:
    case COLL_NB_GATHERV:
    case COLL_NB_SCATTERV:
        return me == c->root ? NEED_ALL : NEED_OWN;
    default:
        return NEED_ALL;
    }
}

/* ---- the units ------------------------------------------------------------------------------ */

/* dst[k] + off (k < ndst) = in[lo] op ... op in[hi] at byte offset off, for count elements; NULL
 * destinations are skipped. Through a private chunk: any input may also be a destination. */
static void fold_out(const coll_op_t *op, const char *const *in, int lo, int hi, size_t off, size_t count,
                     char *const *dst, int ndst)
{
    _Alignas(64) char stack_acc[NB_CHUNK];
    char *acc = stack_acc;
    size_t per = NB_CHUNK / op->extent;
    if (!per) {
        per = 1;
        acc = malloc(op->extent);
        if (!acc) {
            util_error("out of memory for a %zu-byte reduction element", op->extent);
            abort();
        }
    }
    for (size_t c0 = 0; c0 < count; c0 += per) {
        size_t n = count - c0 < per ? count - c0 : per, o = off + c0 * op->extent, span = coll_span(op, n);
        int i = hi - 1;
        if (hi > lo && op->fn3) {
            op->fn3(in[hi - 1] + o, in[hi] + o, acc, n, op);
            i--;
        } else {
            memcpy(acc, in[hi] + o, span);
        }
        for (; i >= lo; i--)
            op->fn(in[i] + o, acc, n, op);
        for (int k = 0; k < ndst; k++)
            if (dst[k])
                util_copy(dst[k] + o, acc, span);
    }
    if (acc != stack_acc)
        free(acc);
}

/* An inline call's fold (in[0] op ... op in[n - 1], in fold_out's order) straight into dst: the
 * inputs are the slots' words, never the caller's result, so no private chunk is needed (fold_out's
 * chunk, division and copy were most of an 8-byte MPI_Iallreduce's finish: docs/benchmarks.md). */
static void fold_inline(const coll_op_t *op, const char *const *in, int n, size_t count, char *dst)
{
    if (!count)
        return;
    int i = n - 2;
    if (n > 1 && op->fn3) {
        op->fn3(in[n - 2], in[n - 1], dst, count, op);
        i--;
    } else {
        memcpy(dst, in[n - 1], coll_span(op, count));
    }
    for (; i >= 0; i--)
        op->fn(in[i], dst, count, op);
}

/* Inputs of every rank for a reduction, in my view (w0, or the slot's words when inline). */
#define MAXSTACK 64
typedef struct {
    const char *stack[MAXSTACK];
    const char **p;
} ptrs_t;

static const char **ptrs_get(ptrs_t *t, int n)
{
    t->p = n <= MAXSTACK ? t->stack : malloc(sizeof(char *) * (size_t)n);
    if (!t->p) {
        util_error("out of memory for a collective's table of %d ranks", n);
        abort();
    }
    return t->p;
}
static void ptrs_put(ptrs_t *t)
{
    if (t->p != t->stack)
        free(t->p);
}

static const char **inputs(ptrs_t *t, const coll_nb_t *c)
{
    const coll_nb_group_t *g = c->g;
    const char **in = ptrs_get(t, g->size);
    for (int r = 0; r < g->size; r++)
        in[r] = c->inl ? pwords(g, c->seq, r) : pptr(g, c->seq, r, 0);
    return in;
}

static void unit_part(coll_nb_t *c, int p, int part, int parts);
static int parts_count(const coll_nb_t *c);
static void unit(coll_nb_t *c, int p) { unit_part(c, p, 0, 1); }

/* Part `part` of `parts` of rank p's unit (c->parts: 1 but for large Ialltoall and Iallreduce). */
static void unit_part(coll_nb_t *c, int p, int part, int parts)
{
    coll_nb_group_t *g = c->g;
    uint64_t s = c->seq;
    int n = g->size;
    const coll_op_t *op = &c->op;
    ptrs_t t;
    size_t lo, cnt;
    switch (c->kind) {
    case COLL_NB_BCAST: {
        uint64_t rw = bc_word(g, s, c->root);
        size_t rb = (size_t)(rw & BC_BYTES), pb = p == g->rank ? c->bytes : (size_t)(bc_word(g, s, p) & BC_BYTES);
        size_t b = rb < pb ? rb : pb;
        char *dst = p == g->rank && c->inl ? (char *)c->rbuf : pptr(g, s, p, 0); /* (inline: my own unit) */
        if (!b)
            break;
        if (rw & BC_INL)
            memcpy(dst, pwords(g, s, c->root), b);
        else
            util_copy(dst, pptr(g, s, c->root, 0), b);
        break;
    }
    case COLL_NB_REDUCE:
    case COLL_NB_ALLREDUCE: {
        const char **in = inputs(&t, c);
        if (c->inl) {
            fold_inline(op, in, n, c->count, c->rbuf); /* my own unit: inline calls are each rank's own */
        } else {
            coll_slice_of(c->count, n, p, &lo, &cnt);
            if (parts > 1) { /* (Allreduce: part of slice p) */
                size_t plo, pcnt;
                coll_slice_of(cnt, parts, part, &plo, &pcnt);
                lo += plo;
                cnt = pcnt;
            }
            if (c->kind == COLL_NB_REDUCE) {
                char *dst = pptr(g, s, c->root, 1);
                fold_out(op, in, 0, n - 1, lo * op->extent, cnt, &dst, 1);
            } else {
                ptrs_t dt;
                char **dst = (char **)ptrs_get(&dt, n);
                for (int r = 0; r < n; r++)
                    dst[r] = pptr(g, s, (p + r) % n, 1); /* start at p's own: spread the writers */
                fold_out(op, in, 0, n - 1, lo * op->extent, cnt, dst, n);
                ptrs_put(&dt);
            }
        }
        ptrs_put(&t);
        break;
    }
    case COLL_NB_ALLGATHER:
    case COLL_NB_ALLTOALL:
        /* Inline: the owner copied its own block at the start. Otherwise the unit includes p's own
         * block (a rank that went away to compute has nothing left to copy but its result). */
        for (int k = c->inl ? 1 : 0; k < n; k++) {
            int r = (p + k) % n;
            size_t in_off = c->kind == COLL_NB_ALLTOALL ? (size_t)p * c->bytes : 0;
            if (c->inl) {
                memcpy((char *)c->rbuf + (size_t)r * c->bytes, pwords(g, s, r) + in_off, c->bytes);
            } else {
                size_t plo = 0, pbytes = c->bytes; /* (Alltoall: the same share of every block) */
                if (parts > 1)
                    coll_slice_of(c->bytes, parts, part, &plo, &pbytes);
                char *dst = pptr(g, s, p, 1) + (size_t)r * c->bytes + plo;
                const char *src = pptr(g, s, r, 0) + in_off + plo;
                if (dst != src) /* Iallgather in place: p's own piece is where it belongs */
                    util_copy(dst, src, pbytes);
            }
        }
        break;
    case COLL_NB_GATHER: { /* at the root's piece size; mismatched pieces (erroneous) move the fewer bytes */
        size_t rb = pbytes(g, s, c->root), pb = pbytes(g, s, p);
        util_copy(pptr(g, s, c->root, 1) + (size_t)p * rb, pptr(g, s, p, 0), pb < rb ? pb : rb);
        break;
    }
    case COLL_NB_SCATTER: {
        size_t rb = pbytes(g, s, c->root), pb = pbytes(g, s, p);
        util_copy(pptr(g, s, p, 1), pptr(g, s, c->root, 0) + (size_t)p * rb, pb < rb ? pb : rb);
        break;
    }
    case COLL_NB_REDUCE_SCATTER: {
        size_t off = 0;
        for (int r = 0; r < p; r++)
            off += c->counts[r];
        const char **in = inputs(&t, c);
        for (int r = 0; r < n; r++)
            in[r] += off * op->extent;
        char *dst = pptr(g, s, p, 1);
        fold_out(op, in, 0, n - 1, 0, c->counts[p], &dst, 1);
        ptrs_put(&t);
        break;
    }
    case COLL_NB_SCAN:
    case COLL_NB_EXSCAN: {
        const char **in = inputs(&t, c);
        char *dst = pptr(g, s, p, 1);
        fold_out(op, in, 0, c->kind == COLL_NB_SCAN ? p : p - 1, 0, c->count, &dst, 1);
        ptrs_put(&t);
        break;
    }
    case COLL_NB_GATHERV:
    case COLL_NB_SCATTERV: {
        const uint64_t *rt = (const uint64_t *)pptr(g, s, c->root, 3);
        size_t b = rt[p] < pbytes(g, s, p) ? rt[p] : pbytes(g, s, p);
        if (!b)
            break;
        char *at = tptr(g, c->root, rt[n + p]);
        if (c->kind == COLL_NB_GATHERV)
            util_copy(at, pptr(g, s, p, 0), b);
        else
            util_copy(pptr(g, s, p, 1), at, b);
        break;
    }
    case COLL_NB_ALLGATHERV: {
        const uint64_t *pt = (const uint64_t *)pptr(g, s, p, 3);
        for (int k = 0; k < n; k++) {
            int r = (p + k) % n;
            size_t b = pt[r] < pbytes(g, s, r) ? pt[r] : pbytes(g, s, r);
            if (!b)
                continue;
            char *dst = tptr(g, p, pt[n + r]);
            const char *src = pptr(g, s, r, 0);
            if (dst != src) /* in place: p's own piece is where it belongs */
                util_copy(dst, src, b);
        }
        break;
    }
    case COLL_NB_ALLTOALLV: {
        const uint64_t *pt = (const uint64_t *)pptr(g, s, p, 3);
        for (int k = 0; k < n; k++) {
            int r = (p + k) % n;
            const uint64_t *rw = slot_of(g, s, r)->pub.word;
            size_t stride = (size_t)rw[6];
            if (stride) { /* r's blocks are in its slot (its table may be gone already) */
                uint64_t blk[VINL_BYTES / 8];
                for (int i = 0; i < VINL_BYTES / 8; i++)
                    blk[i] = rw[vinl_word[i]];
                size_t b = pt[3 * n + r] < stride ? pt[3 * n + r] : stride;
                if (b)
                    memcpy(tptr(g, p, pt[2 * n + r]), (const char *)blk + (size_t)p * stride, b);
                continue;
            }
            const uint64_t *rt = (const uint64_t *)pptr(g, s, r, 3);
            size_t b = rt[n + p] < pt[3 * n + r] ? rt[n + p] : pt[3 * n + r];
            if (!b)
                continue;
            char *dst = tptr(g, p, pt[2 * n + r]);
            const char *src = tptr(g, r, rt[p]);
            if (dst != src)
                util_copy(dst, src, b);
        }
        break;
    }
    default:
        break;
    }
}

/* ---- publication ---------------------------------------------------------------------------- */

static void publish(coll_nb_t *c)
{
    coll_nb_group_t *g = c->g;
    int me = g->rank;
    uint64_t w[7] = {0};
    switch (c->kind) {
    case COLL_NB_BARRIER:
        break;
    case COLL_NB_BCAST:
        if (!c->inl)
            w[0] = W(c->rbuf);
        else if (me == c->root)
            memcpy(w, c->rbuf, c->bytes);
        w[6] = c->bytes | (c->inl ? BC_INL : 0) | (c->failed ? BC_FAILED : 0);
        break;
    case COLL_NB_REDUCE:
    case COLL_NB_ALLREDUCE:
        if (c->inl) {
            memcpy(w, c->sbuf, coll_span(&c->op, c->count));
        } else {
            w[0] = W(c->sbuf);
            w[1] = W(c->rbuf);
        }
        break;
    case COLL_NB_ALLGATHER:
        if (c->inl) {
            memcpy(w, c->sbuf, c->bytes);
        } else {
            w[0] = W(c->sbuf);
            w[1] = W(c->rbuf);
        }
        break;
    case COLL_NB_ALLTOALL:
        if (c->inl) {
            memcpy(w, c->sbuf, c->bytes * (size_t)g->size);
        } else {
            w[0] = W(c->sbuf);
            w[1] = W(c->rbuf);
        }
        break;
    case COLL_NB_ALLTOALLV: {
        int n = g->size;
        size_t stride = VINL_BYTES / (size_t)n, most = 0;
        for (int r = 0; r < n; r++)
            most = c->tab[n + r] > most ? c->tab[n + r] : most;
        w[3] = W(c->tab);
        c->vinl = most <= stride && stride > 0;
        if (!c->vinl) {
            w[0] = W(c->sbuf);
            w[1] = W(c->rbuf);
            w[2] = c->bytes;
            break;
        }
        uint64_t blk[VINL_BYTES / 8] = {0};
        for (int r = 0; r < n; r++)
            if (c->tab[n + r])
                memcpy((char *)blk + (size_t)r * stride, tptr(g, me, c->tab[r]), c->tab[n + r]);
        for (int i = 0; i < VINL_BYTES / 8; i++)
            w[vinl_word[i]] = blk[i];
        w[6] = stride;
        break;
    }
    case COLL_NB_GATHERV:
    case COLL_NB_SCATTERV:
    case COLL_NB_ALLGATHERV:
    case COLL_NB_GATHER: /* (the piece's bytes, which the units read; no table: 0) */
    case COLL_NB_SCATTER:
        w[0] = W(c->sbuf);
        w[1] = W(c->rbuf);
        w[2] = c->bytes;
        w[3] = W(c->tab);
        break;
    default:
        w[0] = W(c->sbuf);
        w[1] = W(c->rbuf);
        break;
    }
    coll_nb_slot_t *sl = slot_of(g, c->seq, me);
    for (int i = 0; i < 7; i++)
        sl->pub.word[i] = w[i];
    atomic_store_explicit(&sl->pub.seq, c->seq, memory_order_release);
    c->parts = parts_count(c); /* (its shape is final once published; units are done only after) */
    c->published = 1;
    g->published = c->seq;
    if (!has_unit(c, me))
        c->mine_done = 1;
}

/* Call s may take its ring entry: every rank (me too) is done with call s - depth. */
static int entry_free(coll_nb_group_t *g, uint64_t s)
{
    uint64_t depth = (uint64_t)g->depth;
    if (s <= depth)
        return 1;
    uint64_t need = s - depth;
    if (g->wm < need)
        return 0;
    if (g->peers_wm >= need)
        return 1;
    uint64_t lo = UINT64_MAX;
    for (int r = 0; r < g->size; r++)
        if (r != g->rank) {
            uint64_t v = atomic_load_explicit(wm_of(g, r), memory_order_acquire);
            if (v < lo)
                lo = v;
        }
    g->peers_wm = lo;
    return lo >= need;
}

static void publish_queued(coll_nb_group_t *g)
{
    for (coll_nb_t *c = g->head; c; c = c->next)
        if (!c->published) {
            if (c->hold || !entry_free(g, c->seq))
                return; /* in order: nothing behind it either */
            publish(c);
        }
}

/* ---- progress ------------------------------------------------------------------------------- */

static int all_published(const coll_nb_t *c)
{
    const coll_nb_group_t *g = c->g;
    for (int r = 0; r < g->size; r++)
        if (atomic_load_explicit(&slot_of(g, c->seq, r)->pub.seq, memory_order_acquire) < c->seq)
            return 0;
    return 1;
}

/* Rank p's unit is p's own alone: a small all-to-all-v's (above), an inline receiver's broadcast. */
static int own_only(const coll_nb_t *c, int p)
{
    if (c->kind == COLL_NB_ALLTOALLV)
        return slot_of(c->g, c->seq, p)->pub.word[6] != 0;
    return c->kind == COLL_NB_BCAST && (bc_word(c->g, c->seq, p) & BC_INL);
}

/* A broadcast's receiver, complete (the root's slot is still there: my watermark is below it). */
static int bcast_mism(const coll_nb_t *c)
{
    uint64_t rw = bc_word(c->g, c->seq, c->root);
    size_t rb = (size_t)(rw & BC_BYTES);
    return rb != c->bytes ? (rb > c->bytes ? 1 : 2) : (rw & BC_FAILED) ? 3 : 0;
}

/* Parts. A large Ialltoall's or Iallreduce's unit is cut into parts (docs/mpi.md, "Units anyone may
 * do"; every rank finds the same count from the call's shape). A rank that finds its own unit
 * untouched takes it whole and does it in one go, as before parts. A node mate that helps takes an
 * untouched unit one part at a time, so that its owner, back from computing, takes what is left
 * and the two share it instead of the owner waiting for the helper to finish alone; a unit already
 * begun is left to whoever began it (two working ranks splitting one unit cost both their caches
 * and a claim line bounced per part: Ialltoall 256 KiB 6 % slower when they did). A slot's claim
 * and done words say, for call s, s << PART_BITS plus the parts taken (claim) or finished (done);
 * an older call's are below. */
#define PART_BITS 6
#define PARTS_MAX 16
#define PART_BYTES (64 * 1024)
_Static_assert(PARTS_MAX < (1 << PART_BITS), "the part counts fit below the call's number");

static int parts_count(const coll_nb_t *c)
{
    size_t bytes;
    if (c->inl)
        return 1;
    if (c->kind == COLL_NB_ALLTOALL)
        bytes = c->bytes; /* (each part copies a share of every block) */
    else if (c->kind == COLL_NB_ALLREDUCE)
        bytes = c->count / (size_t)c->g->size * c->op.extent; /* (a slice's, at least) */
    else
        return 1;
    size_t k = bytes / PART_BYTES;
    return k < 2 ? 1 : k > PARTS_MAX ? PARTS_MAX : (int)k;
}

static inline uint64_t part_base(uint64_t s) { return s << PART_BITS; }

static inline int unit_done(const coll_nb_t *c, int p)
{
    return atomic_load_explicit(&slot_of(c->g, c->seq, p)->done, memory_order_acquire) >=
           part_base(c->seq) + (uint64_t)c->parts;
}

/* Whether nobody has taken any part of rank p's unit of call c yet. */
static inline int unit_untouched(const coll_nb_t *c, int p)
{
    return atomic_load_explicit(&slot_of(c->g, c->seq, p)->claim, memory_order_relaxed) < part_base(c->seq);
}

/* Take the next part of rank p's unit of call c: its number, or -1 when every part is taken. */
static int claim(const coll_nb_t *c, int p)
{
    _Atomic uint64_t *cl = &slot_of(c->g, c->seq, p)->claim;
    uint64_t b = part_base(c->seq), k = (uint64_t)c->parts, v = atomic_load_explicit(cl, memory_order_relaxed);
    for (;;) {
        uint64_t taken = v < b ? 0 : v - b;
        if (taken >= k)
            return -1;
        if (atomic_compare_exchange_weak_explicit(cl, &v, b + taken + 1, memory_order_acq_rel, memory_order_relaxed))
            return (int)taken;
    }
}

/* Every part of rank p's unit at once, if nobody took one yet: 1 if taken. */
static int claim_all(const coll_nb_t *c, int p)
{
    _Atomic uint64_t *cl = &slot_of(c->g, c->seq, p)->claim;
    uint64_t b = part_base(c->seq), v = atomic_load_explicit(cl, memory_order_relaxed);
    while (v < b)
        if (atomic_compare_exchange_weak_explicit(cl, &v, b + (uint64_t)c->parts, memory_order_acq_rel,
                                                  memory_order_relaxed))
            return 1;
    return 0;
}

/* k more parts of rank p's unit finished (the done word counts them). */
static void parts_done(coll_nb_t *c, int p, int k)
{
    _Atomic uint64_t *d = &slot_of(c->g, c->seq, p)->done;
    uint64_t b = part_base(c->seq), v = atomic_load_explicit(d, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(d, &v, (v < b ? b : v) + (uint64_t)k, memory_order_release,
                                                  memory_order_relaxed))
        ;
}

/* Part `part` of rank p's unit, claimed: done and counted. */
static void do_claimed(coll_nb_t *c, int p, int part)
{
    unit_part(c, p, part, c->parts);
    parts_done(c, p, 1);
}

/* Every part of rank p's unit that nobody took yet, one at a time: how many. */
static int do_parts(coll_nb_t *c, int p)
{
    int took = 0;
    for (int part; (part = claim(c, p)) >= 0; took++)
        do_claimed(c, p, part);
    return took;
}

static int is_complete(coll_nb_t *c)
{
    coll_nb_group_t *g = c->g;
    switch (need_of(c)) {
    case NEED_NONE:
        return 1;
    case NEED_PUBS:
        return all_published(c);
    case NEED_OWN:
        return c->mine_done || (!c->inl && unit_done(c, g->rank));
    default:
        for (int p = 0; p < g->size; p++)
            if (has_unit(c, p) && !unit_done(c, p))
                return 0;
        return 1;
    }
}

/* One look at a published call: my unit, other units nobody took, completion. */
static int advance(coll_nb_t *c)
{
    coll_nb_group_t *g = c->g;
    int me = g->rank, n = g->size, nd = need_of(c);
    if (nd == NEED_NONE)
        return 1;
    if (!all_published(c))
        return 0;
    if (!c->mine_done) {
        if (c->inl) {
            unit(c, me);
            c->mine_done = 1;
            if (c->kind == COLL_NB_BCAST && !(bc_word(g, c->seq, c->root) & BC_INL)) /* (a root whose side
                                                                  is not inline waits for every unit) */
                parts_done(c, me, 1);
        } else if (c->vinl || claim_all(c, me)) { /* (a small all-to-all-v's unit is its own: no claim) */
            unit(c, me); /* (all of it in one go, as one part or as many) */
            parts_done(c, me, c->parts);
            c->mine_done = 1;
        } else {
            do_parts(c, me); /* a node mate began it while I was away: the rest, shared (unit_done says when) */
        }
    }
    if (!c->inl && g->help)
        for (int k = 1; k < n; k++) {
            int p = (me + k) % n;
            /* A unit its owner (or another helper) has begun is left to them: two ranks at work
             * take each other's parts only when one of them was away when the call needed it,
             * since a part taken from a working owner costs both ranks' caches and claim lines. */
            if (has_unit(c, p) && !own_only(c, p) && unit_untouched(c, p))
                do_parts(c, p);
        }
    return is_complete(c);
}

static void store_wm(coll_nb_group_t *g)
{
    uint64_t wm = g->head ? g->head->seq - 1 : g->started;
    if (wm != g->wm) {
        g->wm = wm;
        atomic_store_explicit(wm_of(g, g->rank), wm, memory_order_release);
    }
}

int coll_nb_progress(coll_nb_group_t *g)
{
    publish_queued(g);
    int removed = 0;
    for (coll_nb_t **pp = &g->head, *prev = NULL; *pp;) {
        coll_nb_t *c = *pp;
        if (c->published && advance(c)) {
            c->complete = 1;
            if (c->kind == COLL_NB_BCAST && g->rank != c->root)
                c->mism = bcast_mism(c);
            *pp = c->next;
            if (g->tail == c)
                g->tail = prev;
            removed = 1;
        } else {
            prev = c;
            pp = &c->next;
        }
    }
    if (removed) {
        store_wm(g);
        publish_queued(g); /* my own watermark may have been what held the next one */
    }
    return g->head != NULL;
}

void coll_nb_start(coll_nb_t *c)
{
    coll_nb_group_t *g = c->g;
    c->seq = ++g->started;
    c->published = c->mine_done = c->complete = c->vinl = c->mism = 0; /* hold, failed: as the caller set them */
    if (!g->area)
        c->hold |= COLL_NB_HOLD_AREA;
    c->next = NULL;
    if (g->tail)
        g->tail->next = c;
    else
        g->head = c;
    g->tail = c;
    if (!c->hold && g->published + 1 == c->seq && entry_free(g, c->seq))
        publish(c);
}

void coll_nb_release(coll_nb_t *c)
{
    c->hold &= ~COLL_NB_HOLD_DATA;
    coll_nb_progress(c->g);
}

void coll_nb_set_area(coll_nb_group_t *g, char *area)
{
    g->area = area;
    for (coll_nb_t *c = g->head; c; c = c->next)
        c->hold &= ~COLL_NB_HOLD_AREA;
    coll_nb_progress(g);
}

/* A call alone in its group that needs only every rank's publication and its own inline unit (an
 * inline Allreduce, a barrier: the MPI layer's lean calls) completes here by the same steps as in
 * coll_nb_progress (advance, completion, the watermark), without its general walk. */
int coll_nb_test(coll_nb_t *c)
{
    if (c->complete)
        return 1;
    coll_nb_group_t *g = c->g;
    if (g->head == c && !c->next && c->published &&
        (c->kind == COLL_NB_BARRIER || (c->kind == COLL_NB_ALLREDUCE && c->inl))) {
        if (!all_published(c))
            return 0;
        if (!c->mine_done) {
            unit(c, g->rank);
            c->mine_done = 1;
        }
        c->complete = 1;
        g->head = g->tail = NULL;
        store_wm(g);
        return 1;
    }
    coll_nb_progress(g);
    return c->complete;
}
