/* coll_alg: the on-node collectives of the SMARTMAP slides, over one node group's control area.
 *
 * Every call (but the barrier) is one or two "rounds": each rank publishes up to seven words in
 * its slot (buffer pointers, or the data itself when it fits: small reductions move one cache
 * line per rank), reads what its peers published, copies or reduces straight between buffers
 * through the windows, then signals done. A rank whose slot or buffer others use waits for their
 * done before it returns (coll.h, completion rule).
 *
 * Reductions fold from the highest rank down, acc = x[i] op acc, so the result is
 * x[0] op x[1] op ... op x[n-1] in rank order with the accumulator always on the right, which
 * is what MPI requires of non-commutative ops and what MPI's user functions compute (inoutvec =
 * invec op inoutvec). */
#include "coll_sync.h"

#include <stdlib.h>
#include <string.h>

#include <bobcat/smartmap.h>

coll_tune_t coll_tune = {.split_min = 0, .fold3 = 1};

void coll_ctrl_init(coll_ctrl_t *ctrl, int nranks)
{
    memset(ctrl, 0, coll_ctrl_size(nranks));
    atomic_store_explicit(&ctrl->refs, nranks, memory_order_release);
}

int coll_node_release(coll_node_t *cn)
{
    free(cn->scratch);
    cn->scratch = NULL;
    cn->scratch_size = 0;
    if (!cn->ctrl)
        return 0;
    return atomic_fetch_sub_explicit(&cn->ctrl->refs, 1, memory_order_acq_rel) == 1;
}

void *coll_scratch(coll_node_t *cn, size_t bytes)
{
    if (bytes <= cn->scratch_size)
        return cn->scratch;
    size_t want = bytes < 2 * cn->scratch_size ? 2 * cn->scratch_size : bytes;
    want = (want + 4095) & ~(size_t)4095;
    void *p = aligned_alloc(COLL_LINE, want);
    if (!p)
        return NULL;
    free(cn->scratch);
    cn->scratch = p;
    cn->scratch_size = want;
    return p;
}

static inline uint64_t W(const void *p) { return (uint64_t)(uintptr_t)p; }

void coll_barrier(coll_node_t *cn)
{
    if (cn->size == 1) {
        atomic_thread_fence(memory_order_seq_cst);
        return;
    }
    coll_ctrl_t *c = cn->ctrl;
    uint64_t g = ++cn->bar;
    /* acq_rel: the last arriver sees everyone's earlier writes and its release store passes them
     * on, so the barrier also orders memory (MPI_Win_sync + MPI_Barrier on shared windows). */
    uint64_t old = atomic_fetch_add_explicit(&c->arrive, 1, memory_order_acq_rel);
    if (old == g * (uint64_t)cn->size - 1)
        atomic_store_explicit(&c->release, g, memory_order_release);
    else
        coll_wait_ge(cn, &c->release, g);
}

/* Inline data fills words 1..6 of the slot. */
#define INLINE_MAX COLL_INLINE_MAX
_Static_assert(COLL_INLINE_MAX <= 6 * sizeof(uint64_t), "inline data fits the slot");

/* The end of share k (of n) of a `bytes`-long destination at address `dst`: shares split the
 * buffer evenly, their inner boundaries rounded to the destination's cache lines so the two
 * writers of one receiver's buffer never share a line. Root and receiver compute it from the
 * same published address (window offsets are multiples of 2^39, so alignment is view-free). */
static size_t share_end(uint64_t dst, size_t bytes, int k, int n)
{
    if (k <= 0)
        return 0;
    if (k >= n)
        return bytes;
    size_t raw = (size_t)((unsigned __int128)bytes * (unsigned)k / (unsigned)n);
    size_t end = (size_t)(((dst + raw + COLL_LINE - 1) & ~(uint64_t)(COLL_LINE - 1)) - dst);
    return end < bytes ? end : bytes;
}

/* Whether a broadcast of `bytes` splits its copies between root and receiver (below). */
static int bcast_splits(size_t bytes)
{
    return bytes > INLINE_MAX && coll_tune.split_min && bytes >= coll_tune.split_min;
}

/* Old (split_min == 0 or below it): every receiver copies the whole buffer from the root's while
 * the root waits. Split: each receiver also publishes its buffer (0 if private); the root pushes
 * share k into receiver k (k = distance from the root) while that receiver pulls the other shares,
 * so two cores move each receiver's data; the root signals done after its pushes and every
 * receiver waits for that (it also keeps a receiver from republishing its slot too early).
 * The root's words say its bytes: inline, word 0 is the count (at most INLINE_MAX, plus
 * BCAST_FAILED when the root says so) and the data follows; else word 0 is its buffer (an
 * address, never below 4096) and word 1 the count (plus BCAST_FAILED_HI). A receiver follows the
 * root's choices (inline, split) and moves the fewer bytes when its own count differs (erroneous:
 * the signatures must match), so nobody's buffer is overrun; it gets 1 if the root sent more than
 * its buffer holds, 2 if less, else 3 if the root said `failed` (a node's leader whose broadcast
 * among the leaders failed: its data may be short), else 0. */
#define BCAST_FAILED 0x100u
#define BCAST_FAILED_HI ((uint64_t)1 << 63)
int coll_bcast_failed(coll_node_t *cn, int root, void *buf, size_t bytes, int failed)
{
    if (cn->size == 1 || !bytes)
        return 0;
    cn->seq++;
    if (cn->rank == root) {
        int split = bcast_splits(bytes);
        uint64_t w[7] = {W(buf), bytes | (failed ? BCAST_FAILED_HI : 0)};
        int n = 2;
        if (bytes <= INLINE_MAX) {
            w[0] = bytes | (failed ? BCAST_FAILED : 0);
            memcpy(&w[1], buf, bytes);
            n = 1 + (int)((bytes + 7) / 8);
        }
        coll_publish(cn, w, n);
        if (split) {
            for (int k = 1; k < cn->size; k++) {
                int r = (root + k) % cn->size;
                const coll_pub_t *q = coll_pub_of(cn, r);
                uint64_t d = q->word[0];
                if (!d || q->word[1] != bytes) /* (private, or not this many bytes: it copies) */
                    continue;
                size_t lo = share_end(d, bytes, k, cn->size), hi = share_end(d, bytes, k + 1, cn->size);
                if (hi > lo)
                    util_copy((char *)coll_peer(cn, r, d) + lo, (const char *)buf + lo, hi - lo);
            }
            coll_signal_done(cn);
        }
        coll_wait_all_done(cn);
        return 0;
    }
    /* Published before the root's words are read (as early as it can be): my buffer and bytes. */
    int split_me = bcast_splits(bytes);
    uint64_t mine = split_me && smap_is_shared(buf) ? W(buf) : 0;
    if (split_me) {
        uint64_t w[7] = {mine, bytes};
        coll_publish(cn, w, 2);
    }
    const coll_pub_t *p = coll_pub_of(cn, root);
    int inl = p->word[0] < 4096;
    uint64_t rw = inl ? p->word[0] : p->word[1];
    int rfailed = inl ? (rw & BCAST_FAILED) != 0 : (rw & BCAST_FAILED_HI) != 0;
    size_t rb = inl ? (size_t)(rw & (BCAST_FAILED - 1)) : (size_t)(rw & ~BCAST_FAILED_HI); /* the root's bytes */
    int split = bcast_splits(rb);
    if (split && !split_me) { /* (counts differ: the root waits for my words, and pushes nothing) */
        uint64_t w[7] = {0, bytes};
        coll_publish(cn, w, 2);
    }
    const char *src = inl ? (const char *)&p->word[1] : (const char *)coll_peer(cn, root, p->word[0]);
    if (rb != bytes) {
        util_copy(buf, src, rb < bytes ? rb : bytes);
    } else if (mine) { /* (then split too: the same bytes) */
        int k = (cn->rank - root + cn->size) % cn->size;
        size_t lo = share_end(mine, bytes, k, cn->size), hi = share_end(mine, bytes, k + 1, cn->size);
        /* Pull what the root does not push: after its share first (the root starts at the front of
         * the others' shares), then before it. */
        if (bytes > hi)
            util_copy((char *)buf + hi, src + hi, bytes - hi);
        if (lo)
            util_copy(buf, src, lo);
    } else {
        util_copy(buf, src, bytes);
    }
    coll_signal_done(cn);
    if (split)
        coll_wait_done(cn, root);
    return rb != bytes ? (rb > bytes ? 1 : 2) : rfailed ? 3 : 0;
}

int coll_bcast(coll_node_t *cn, int root, void *buf, size_t bytes) { return coll_bcast_failed(cn, root, buf, bytes, 0); }

/* acc = x[hi] op ... op x[lo] folded from the top: acc starts as a copy of x[hi]. in(i) is rank
 * i's input at the slice. */
typedef struct {
    const coll_node_t *cn;
    size_t off;       /* byte offset of the slice in every input */
    int inlined;      /* inputs travel in the slots */
} inputs_t;

static inline const char *input_of(const inputs_t *in, int r)
{
    const coll_pub_t *p = coll_pub_of(in->cn, r);
    if (in->inlined)
        return (const char *)&p->word[1] + in->off;
    return (const char *)coll_peer(in->cn, r, p->word[0]) + in->off;
}

static void fold(const inputs_t *in, int lo, int hi, void *acc, size_t count, const coll_op_t *op)
{
    int i = hi - 1;
    if (hi > lo && op->fn3 && coll_tune.fold3) {
        op->fn3(input_of(in, hi - 1), input_of(in, hi), acc, count, op);
        i--;
    } else {
        util_copy(acc, input_of(in, hi), coll_span(op, count));
    }
    for (; i >= lo; i--)
        op->fn(input_of(in, i), acc, count, op);
}

/* Publish my input: inline when small (word 0 = 0), else its address. */
static int publish_input(coll_node_t *cn, const void *sbuf, size_t span)
{
    uint64_t w[7] = {W(sbuf)};
    if (span <= INLINE_MAX) {
        w[0] = 0;
        memcpy(&w[1], sbuf, span);
        coll_publish(cn, w, 1 + (int)((span + 7) / 8));
        return 1;
    }
    coll_publish(cn, w, 1);
    return 0;
}

/* Private memory for an accumulator. Running out in the middle of a collective leaves no way to
 * agree on a fallback with the peers, so it ends the job with a message. */
static void *acc_alloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        util_error("out of memory for a %zu-byte reduction buffer: raise the heap (yod --heap)", bytes);
        abort();
    }
    return p;
}

void coll_reduce(coll_node_t *cn, int root, const void *sbuf, void *rbuf, size_t count, const coll_op_t *op,
                 coll_alg_t alg)
{
    if (!count)
        return;
    size_t span = coll_span(op, count);
    if (cn->size == 1) {
        if (sbuf != rbuf)
            util_copy(rbuf, sbuf, span);
        return;
    }
    cn->seq++;
    if (alg == COLL_ALG_SERIAL || count < (size_t)cn->size) {
        /* The root folds every rank's buffer; the others wait until it has read theirs. */
        int inl = publish_input(cn, sbuf, span);
        if (cn->rank == root) {
            inputs_t in = {cn, 0, inl};
            void *acc = rbuf;
            if (sbuf == rbuf)
                acc = acc_alloc(span);
            fold(&in, 0, cn->size - 1, acc, count, op);
            if (acc != rbuf) {
                util_copy(rbuf, acc, span);
                free(acc);
            }
            coll_signal_done(cn);
        } else {
            coll_wait_done(cn, root);
        }
        return;
    }
    /* Parallel: rank r reduces slice r of every buffer into the root's result (the slides'
     * "each process takes a piece of the buffer"). Only rank r touches slice r of the result, so
     * an in-place root is safe. The root publishes its result buffer in word 1. */
    uint64_t w[7] = {W(sbuf), cn->rank == root ? W(rbuf) : 0};
    coll_publish(cn, w, 2);
    size_t lo, cnt;
    coll_slice_of(count, cn->size, cn->rank, &lo, &cnt);
    if (cnt) {
        inputs_t in = {cn, lo * op->extent, 0};
        char *dst = (char *)coll_peer(cn, root, coll_pub_of(cn, root)->word[1]) + lo * op->extent;
        int root_in_place = coll_pub_of(cn, root)->word[0] == coll_pub_of(cn, root)->word[1];
        size_t sspan = coll_span(op, cnt);
        void *acc = dst;
        if (root_in_place)
            acc = acc_alloc(sspan);
        fold(&in, 0, cn->size - 1, acc, cnt, op);
        if (acc != dst) {
            util_copy(dst, acc, sspan);
            free(acc);
        }
    }
    coll_signal_done(cn);
    coll_wait_all_done(cn);
}

/* Fused: rank r reduces slice r of every input once and writes it straight into every rank's
 * result (published in word 1; 0 when private), so per rank the inputs' n bytes are read once and n
 * bytes of results written, with no scratch round trip. Only rank r reads slice r of any input and
 * it writes slice r only after its fold, so in-place inputs are safe. A rank whose result is private
 * pulls the slices from where their reducers keep them (word 2) in a second round. */
#define FUSED_CHUNK (16 * 1024)
static int allreduce_fused(coll_node_t *cn, const void *sbuf, void *rbuf, size_t count, const coll_op_t *op)
{
    size_t lo, cnt;
    coll_slice_of(count, cn->size, cn->rank, &lo, &cnt);
    size_t off = lo * op->extent, sspan = coll_span(op, cnt);
    int rshared = smap_is_shared(rbuf);
    char *acc = (char *)rbuf + off;
    if (!rshared || sbuf == rbuf) {
        /* The fold must not write an input (in place), and peers pull from acc (private result). */
        acc = coll_scratch(cn, sspan + 1);
        if (!acc) {
            util_error("out of heap for a %zu-byte reduction slice: raise the heap (yod --heap)", sspan);
            abort();
        }
    }
    cn->seq++;
    uint64_t w[7] = {W(sbuf), rshared ? W(rbuf) : 0, W(acc)};
    coll_publish(cn, w, 3);
    int pull = !rshared;
    if (cnt) {
        /* Chunk by chunk, so each reduced chunk is still in L1 when it is written to the peers. */
        size_t ce = FUSED_CHUNK / op->extent ? FUSED_CHUNK / op->extent : 1;
        for (size_t c0 = 0; c0 < cnt; c0 += ce) {
            size_t ccnt = cnt - c0 < ce ? cnt - c0 : ce, coff = c0 * op->extent, cspan = coll_span(op, ccnt);
            inputs_t in = {cn, off + coff, 0};
            fold(&in, 0, cn->size - 1, acc + coff, ccnt, op);
            for (int k = 1; k < cn->size; k++) {
                int r = (cn->rank + k) % cn->size;
                uint64_t d = coll_pub_of(cn, r)->word[1];
                if (d)
                    util_copy((char *)coll_peer(cn, r, d) + off + coff, acc + coff, cspan);
                else
                    pull = 1;
            }
            if (acc != (char *)rbuf + off)
                util_copy((char *)rbuf + off + coff, acc + coff, cspan);
        }
    } else {
        for (int k = 1; k < cn->size && !pull; k++)
            pull = !coll_pub_of(cn, (cn->rank + k) % cn->size)->word[1];
    }
    coll_signal_done(cn);
    coll_wait_all_done(cn);
    /* Every rank saw every word 1 (a rank with an empty slice looked too), so all agree on
     * whether a second round runs. */
    if (!pull)
        return 0;
    cn->seq++;
    if (!rshared)
        for (int k = 1; k < cn->size; k++) {
            int r = (cn->rank + k) % cn->size;
            size_t rlo, rcnt;
            coll_slice_of(count, cn->size, r, &rlo, &rcnt);
            if (rcnt)
                util_copy((char *)rbuf + rlo * op->extent,
                          coll_peer(cn, r, coll_slot(cn, r)->pub[(cn->seq - 1) & 1].word[2]), coll_span(op, rcnt));
        }
    coll_signal_done(cn);
    coll_wait_all_done(cn);
    return 0;
}

int coll_allreduce(coll_node_t *cn, const void *sbuf, void *rbuf, size_t count, const coll_op_t *op, coll_alg_t alg)
{
    if (!count)
        return 0;
    size_t span = coll_span(op, count);
    if (cn->size == 1) {
        if (sbuf != rbuf)
            util_copy(rbuf, sbuf, span);
        return 0;
    }
    if (alg == COLL_ALG_SERIAL || count < (size_t)cn->size) {
        /* Every rank folds every buffer into a private accumulator, then (once nobody reads its
         * input any more) stores it: the input may be the output (MPI_IN_PLACE). */
        char small[256];
        void *acc = span <= sizeof small ? small : acc_alloc(span);
        cn->seq++;
        int inl = publish_input(cn, sbuf, span);
        inputs_t in = {cn, 0, inl};
        fold(&in, 0, cn->size - 1, acc, count, op);
        /* Inline data between two ranks needs no done round: nothing points into a buffer, and
         * the peer cannot reuse this call's slot line before it has seen mine of the next call
         * (double-buffered slots, coll.h). Otherwise the inputs must stay until all have read. */
        if (!(inl && cn->size == 2)) {
            coll_signal_done(cn);
            coll_wait_all_done(cn);
        }
        util_copy(rbuf, acc, span);
        if (acc != small)
            free(acc);
        return 0;
    }
    if (alg == COLL_ALG_FUSED)
        return allreduce_fused(cn, sbuf, rbuf, count, op);
    /* Parallel: rank r reduces slice r of every input into its scratch (round 1), then every rank
     * copies every slice into its own result (round 2). */
    size_t lo, cnt;
    coll_slice_of(count, cn->size, cn->rank, &lo, &cnt);
    char *mine = coll_scratch(cn, coll_span(op, cnt) + 1);
    if (!mine) {
        util_error("out of heap for a %zu-byte reduction slice: raise the heap (yod --heap)", coll_span(op, cnt));
        abort();
    }
    cn->seq++;
    uint64_t w[7] = {W(sbuf), W(mine)};
    coll_publish(cn, w, 2);
    if (cnt) {
        inputs_t in = {cn, lo * op->extent, 0};
        fold(&in, 0, cn->size - 1, mine, cnt, op);
    }
    coll_signal_done(cn);
    coll_wait_all_done(cn);
    cn->seq++;
    for (int k = 0; k < cn->size; k++) {
        int r = (cn->rank + k) % cn->size; /* start at my own slice: spread the readers */
        size_t rlo, rcnt;
        coll_slice_of(count, cn->size, r, &rlo, &rcnt);
        if (!rcnt)
            continue;
        const void *src = r == cn->rank ? (const void *)mine
                                         : coll_peer(cn, r, coll_slot(cn, r)->pub[(cn->seq - 1) & 1].word[1]);
        util_copy((char *)rbuf + rlo * op->extent, src, coll_span(op, rcnt));
    }
    coll_signal_done(cn);
    coll_wait_all_done(cn);
    return 0;
}

int coll_reduce_scatter(coll_node_t *cn, const void *sbuf, void *rbuf, const size_t *counts, const size_t *displs,
                        const coll_op_t *op)
{
    size_t cnt = counts[cn->rank], sspan = coll_span(op, cnt);
    void *acc = rbuf;
    if (sbuf == rbuf && cnt)
        acc = acc_alloc(sspan);
    if (cn->size == 1) {
        if (cnt && acc != sbuf)
            util_copy(acc, (const char *)sbuf + displs[0] * op->extent, sspan);
    } else {
        cn->seq++;
        uint64_t w[7] = {W(sbuf)};
        coll_publish(cn, w, 1);
        if (cnt) {
            inputs_t in = {cn, displs[cn->rank] * op->extent, 0};
            fold(&in, 0, cn->size - 1, acc, cnt, op);
        }
        coll_signal_done(cn);
        coll_wait_all_done(cn);
    }
    if (acc != rbuf) {
        memmove(rbuf, acc, sspan);
        free(acc);
    }
    return 0;
}

int coll_scan(coll_node_t *cn, const void *sbuf, void *rbuf, size_t count, const coll_op_t *op, int exclusive)
{
    if (!count)
        return 0;
    size_t span = coll_span(op, count);
    int hi = exclusive ? cn->rank - 1 : cn->rank;
    if (cn->size == 1) {
        if (!exclusive && sbuf != rbuf)
            util_copy(rbuf, sbuf, span);
        return 0;
    }
    void *acc = rbuf;
    if (sbuf == rbuf && hi >= 0)
        acc = acc_alloc(span);
    cn->seq++;
    int inl = publish_input(cn, sbuf, span);
    if (hi >= 0) {
        inputs_t in = {cn, 0, inl};
        fold(&in, 0, hi, acc, count, op);
    }
    coll_signal_done(cn);
    coll_wait_all_done(cn);
    if (acc != rbuf) {
        util_copy(rbuf, acc, span);
        free(acc);
    }
    return 0;
}

int coll_gather(coll_node_t *cn, int root, const void *sbuf, size_t bytes, void *rbuf)
{
    if (cn->rank == root && sbuf)
        util_copy((char *)rbuf + (size_t)root * bytes, sbuf, bytes);
    if (cn->size == 1 || !bytes)
        return 0;
    cn->seq++;
    if (cn->rank == root) {
        uint64_t w[7] = {W(rbuf), bytes};
        coll_publish(cn, w, 2);
        coll_wait_all_done(cn);
        return 0;
    }
    const coll_pub_t *p = coll_pub_of(cn, root);
    size_t rb = p->word[1]; /* the root's piece: where mine lies, and how much of it fits */
    util_copy((char *)coll_peer(cn, root, p->word[0]) + (size_t)cn->rank * rb, sbuf, bytes < rb ? bytes : rb);
    coll_signal_done(cn);
    return bytes > rb;
}

int coll_scatter(coll_node_t *cn, int root, const void *sbuf, size_t bytes, void *rbuf)
{
    if (cn->rank == root && rbuf)
        util_copy(rbuf, (const char *)sbuf + (size_t)root * bytes, bytes);
    if (cn->size == 1 || !bytes)
        return 0;
    cn->seq++;
    if (cn->rank == root) {
        uint64_t w[7] = {W(sbuf), bytes};
        coll_publish(cn, w, 2);
        coll_wait_all_done(cn);
        return 0;
    }
    const coll_pub_t *p = coll_pub_of(cn, root);
    size_t sb = p->word[1]; /* the root's piece: where mine lies, and how much it holds */
    util_copy(rbuf, (const char *)coll_peer(cn, root, p->word[0]) + (size_t)cn->rank * sb, bytes < sb ? bytes : sb);
    coll_signal_done(cn);
    return sb > bytes;
}

void coll_gatherv(coll_node_t *cn, int root, const void *sbuf, size_t sbytes, void *rbuf, const size_t *bytes,
                  const size_t *displs)
{
    if (cn->rank == root && sbuf && bytes[root])
        util_copy((char *)rbuf + displs[root], sbuf, bytes[root]);
    if (cn->size == 1)
        return;
    cn->seq++;
    uint64_t w[7] = {W(sbuf)};
    coll_publish(cn, w, 1);
    if (cn->rank == root) {
        for (int r = 0; r < cn->size; r++)
            if (r != root && bytes[r])
                util_copy((char *)rbuf + displs[r], coll_peer(cn, r, coll_pub_of(cn, r)->word[0]), bytes[r]);
        coll_signal_done(cn);
    } else {
        coll_wait_done(cn, root);
    }
}

void coll_scatterv(coll_node_t *cn, int root, const void *sbuf, const size_t *bytes, const size_t *displs, void *rbuf,
                   size_t rbytes)
{
    if (cn->rank == root && rbuf && bytes[root])
        util_copy(rbuf, (const char *)sbuf + displs[root], bytes[root]);
    if (cn->size == 1)
        return;
    cn->seq++;
    uint64_t w[7] = {W(rbuf)};
    coll_publish(cn, w, 1);
    if (cn->rank == root) {
        for (int r = 0; r < cn->size; r++)
            if (r != root && bytes[r])
                util_copy(coll_peer(cn, r, coll_pub_of(cn, r)->word[0]), (const char *)sbuf + displs[r], bytes[r]);
        coll_signal_done(cn);
    } else {
        coll_wait_done(cn, root);
    }
}

void coll_allgatherv(coll_node_t *cn, const void *sbuf, void *rbuf, const size_t *bytes, const size_t *displs)
{
    int me = cn->rank;
    if (sbuf && bytes[me])
        util_copy((char *)rbuf + displs[me], sbuf, bytes[me]);
    if (cn->size == 1)
        return;
    int inl = 1;
    for (int r = 0; r < cn->size; r++)
        inl &= bytes[r] <= INLINE_MAX;
    cn->seq++;
    if (inl) {
        /* Every piece travels in its owner's slot (all ranks see the same sizes, so all take this
         * branch): one line per peer, no peer reads a buffer, and between two ranks no done round
         * (the same argument as the small serial Allreduce). */
        uint64_t w[7] = {0};
        if (bytes[me])
            memcpy(&w[1], sbuf ? sbuf : (const char *)rbuf + displs[me], bytes[me]);
        coll_publish(cn, w, 1 + (int)((bytes[me] + 7) / 8));
        for (int k = 1; k < cn->size; k++) {
            int r = (me + k) % cn->size;
            const coll_pub_t *p = coll_pub_of(cn, r); /* waited for even when empty (slot reuse rule) */
            if (bytes[r])
                memcpy((char *)rbuf + displs[r], &p->word[1], bytes[r]);
        }
        if (cn->size != 2) {
            coll_signal_done(cn);
            coll_wait_all_done(cn);
        }
        return;
    }
    uint64_t w[7] = {W(sbuf ? sbuf : (const char *)rbuf + displs[me])};
    coll_publish(cn, w, 1);
    for (int k = 1; k < cn->size; k++) {
        int r = (me + k) % cn->size;
        if (bytes[r])
            util_copy((char *)rbuf + displs[r], coll_peer(cn, r, coll_pub_of(cn, r)->word[0]), bytes[r]);
    }
    coll_signal_done(cn);
    coll_wait_all_done(cn);
}

void coll_alltoall(coll_node_t *cn, const void *sbuf, size_t bytes, void *rbuf)
{
    int me = cn->rank;
    size_t all = (size_t)cn->size * bytes;
    if (sbuf != rbuf)
        util_copy((char *)rbuf + (size_t)me * bytes, (const char *)sbuf + (size_t)me * bytes, bytes);
    if (cn->size == 1 || !bytes)
        return;
    cn->seq++;
    if (all <= INLINE_MAX) {
        /* My whole send buffer travels in my slot and each rank copies its block out of every
         * peer's slot (buffers may be private; in place works because the slot is filled before
         * any block is written). Between two ranks no done round, as for the inline Allgather. */
        uint64_t w[7] = {0};
        memcpy(&w[1], sbuf, all);
        coll_publish(cn, w, 1 + (int)((all + 7) / 8));
        for (int k = 1; k < cn->size; k++) {
            int r = (me + k) % cn->size;
            const coll_pub_t *p = coll_pub_of(cn, r);
            memcpy((char *)rbuf + (size_t)r * bytes, (const char *)&p->word[1] + (size_t)me * bytes, bytes);
        }
        if (cn->size != 2) {
            coll_signal_done(cn);
            coll_wait_all_done(cn);
        }
        return;
    }
    uint64_t w[7] = {W(sbuf)};
    coll_publish(cn, w, 1);
    for (int k = 1; k < cn->size; k++) {
        int r = (me + k) % cn->size;
        const char *src = coll_peer(cn, r, coll_pub_of(cn, r)->word[0]);
        util_copy((char *)rbuf + (size_t)r * bytes, src + (size_t)me * bytes, bytes);
    }
    coll_signal_done(cn);
    coll_wait_all_done(cn);
}

/* Alltoallv: what a rank publishes in word 0 (the low byte; for INLINE the bytes above it are the
 * block's length): INLINE (two ranks, my block for the peer in words 1..6), PAIRS (at most four
 * ranks: (pointer, bytes) of my block for each peer in words 1..6, peers in rank order without me),
 * ARRAY ((pointer, bytes) for every rank in an array in my scratch, pointer in word 1). The group
 * size picks PAIRS or ARRAY on every rank; INLINE is each rank's own choice, and its peer reads
 * which one it took. */
enum { A2AV_INLINE = 1, A2AV_PAIRS = 2, A2AV_ARRAY = 3 };
#define A2AV_PAIRS_MAX 4

int coll_alltoallv(coll_node_t *cn, const void *const *sblk, const size_t *sbytes, void *const *rblk,
                   const size_t *rbytes)
{
    int me = cn->rank, n = cn->size, cut = 0;
    if (sblk[me] != rblk[me] && sbytes[me] && rbytes[me]) {
        cut += sbytes[me] > rbytes[me];
        util_copy(rblk[me], sblk[me], sbytes[me] < rbytes[me] ? sbytes[me] : rbytes[me]);
    }
    if (n == 1)
        return cut;
    cn->seq++;
    uint64_t w[7] = {0};
    int mode, nw = 1;
    if (coll_alltoallv_inlines(cn, sbytes)) {
        /* The slot is filled before I write any received block: in place is safe. */
        size_t b = sbytes[1 - me];
        mode = A2AV_INLINE;
        w[0] = A2AV_INLINE | (uint64_t)b << 8;
        if (b)
            memcpy(&w[1], sblk[1 - me], b);
        nw += (int)((b + 7) / 8);
    } else if (n <= A2AV_PAIRS_MAX) {
        mode = A2AV_PAIRS;
        w[0] = A2AV_PAIRS;
        for (int r = 0, k = 1; r < n; r++)
            if (r != me) {
                w[k++] = W(sblk[r]);
                w[k++] = sbytes[r];
            }
        nw = 1 + 2 * (n - 1);
    } else {
        uint64_t *arr = coll_scratch(cn, 2 * (size_t)n * sizeof(uint64_t));
        if (!arr) {
            /* Peers are about to wait for this rank in shared memory: no way back. */
            util_error("out of heap for a %zu-byte all-to-all table: raise the heap (yod --heap)",
                       2 * (size_t)n * sizeof(uint64_t));
            abort();
        }
        for (int r = 0; r < n; r++) {
            arr[2 * r] = W(sblk[r]);
            arr[2 * r + 1] = sbytes[r];
        }
        mode = A2AV_ARRAY;
        w[0] = A2AV_ARRAY;
        w[1] = W(arr);
        nw = 2;
    }
    coll_publish(cn, w, nw);
    int peer_reads = 0; /* a peer published pointers: it waits for my done */
    for (int k = 1; k < n; k++) {
        int r = (me + k) % n;
        const coll_pub_t *p = coll_pub_of(cn, r); /* waited for even when empty (slot reuse rule) */
        uint64_t w0 = p->word[0];
        const void *src;
        size_t b;
        if ((w0 & 0xff) == A2AV_INLINE) {
            src = &p->word[1];
            b = (size_t)(w0 >> 8);
        } else if ((w0 & 0xff) == A2AV_PAIRS) {
            int i = me < r ? me : me - 1;
            src = coll_peer(cn, r, p->word[1 + 2 * i]);
            b = (size_t)p->word[2 + 2 * i];
            peer_reads = 1;
        } else {
            const uint64_t *arr = coll_peer(cn, r, p->word[1]);
            src = coll_peer(cn, r, arr[2 * me]);
            b = (size_t)arr[2 * me + 1];
            peer_reads = 1;
        }
        cut += b > rbytes[r];
        if (b > rbytes[r])
            b = rbytes[r];
        if (b)
            util_copy(rblk[r], src, b);
    }
    if (n != 2 || peer_reads)
        coll_signal_done(cn);
    /* Between two ranks, an INLINE rank's buffers are read by nobody (the slot reuse argument of the
     * inline Allgather holds: each call waits on the peer's publication of that call). */
    if (n != 2 || mode != A2AV_INLINE)
        coll_wait_all_done(cn);
    return cut;
}
