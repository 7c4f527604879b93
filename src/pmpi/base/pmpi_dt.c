/* pmpi_dt: datatype facts, holds and packing for the whole MPI layer (see pmpi_dt.h). */
#include "pmpi_dt.h"
#include "pmpi_lock.h"
#include "pmpi_ref.h"

#include "../../util/util.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

pmpi_dt_info_t pmpi_dt_cache[PMPI_DT_CACHE];
int pmpi_dt_cache_n;
static unsigned cache_next;

/* ---- layout: is one element one ascending run of bytes? ---- */

#define RUN_DEPTH 16

static int is_run(MPI_Datatype t, int depth);

/* Blocks of a constructor, in typemap order: they form one run while each starts where the one
 * before it ended. */
typedef struct {
    MPI_Count end;
    int started, ok;
} chain_t;

/* Block of `len` elements of m at byte displacement disp. */
static void chain_block(chain_t *c, MPI_Datatype m, MPI_Count len, MPI_Count disp, int depth)
{
    if (!c->ok || len <= 0)
        return;
    MPI_Count size = 0, lb, ext, tlb, text;
    if (PMPI_Type_size_x(m, &size) != MPI_SUCCESS || PMPI_Type_get_extent_x(m, &lb, &ext) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent_x(m, &tlb, &text) != MPI_SUCCESS) {
        c->ok = 0;
        return;
    }
    if (size == 0)
        return;
    if ((len > 1 && ext != size) || !is_run(m, depth + 1)) {
        c->ok = 0;
        return;
    }
    MPI_Count start = disp + tlb;
    if (c->started && start != c->end)
        c->ok = 0;
    c->started = 1;
    c->end = start + len * size;
}

#if MPI_VERSION >= 4
/* A large-count type's values, all in MPI_Type_get_contents_c's large counts in the 3.1 order (ints
 * first, then addresses): how many of them are ints, from the combiner and their number nl
 * (counts c: INDEXED 2c+1 ints, HINDEXED c+1 ints and c addresses, ...); -1 for the combiners whose
 * large forms order them otherwise (subarray, darray) or have none. */
static long long large_ints(int comb, MPI_Count nl)
{
    switch (comb) {
    case MPI_COMBINER_CONTIGUOUS:
    case MPI_COMBINER_VECTOR:
    case MPI_COMBINER_INDEXED:
    case MPI_COMBINER_INDEXED_BLOCK: return nl;
    case MPI_COMBINER_HVECTOR:
    case MPI_COMBINER_HINDEXED_BLOCK: return 2;
    case MPI_COMBINER_HINDEXED:
    case MPI_COMBINER_STRUCT: return (nl + 1) / 2;
    case MPI_COMBINER_RESIZED: return 0;
    default: return -1;
    }
}
#endif

int pmpi_type_envelope(MPI_Datatype t, int *ni, int *na, int *nd, int *comb)
{
    *comb = MPI_COMBINER_NAMED;
#if MPI_VERSION >= 4
    MPI_Count ci = 0, ca = 0, cl = 0, cd = 0;
    if (PMPI_Type_get_envelope_c(t, &ci, &ca, &cl, &cd, comb) != MPI_SUCCESS) {
        *comb = -1;
        return -1;
    }
    if (cl > 0) {
        long long k = large_ints(*comb, cl);
        if (k < 0 || ci != 0 || ca != 0 || k > cl)
            return -1;
        ci = k;
        ca = cl - k;
    }
    if (ci > INT_MAX || ca > INT_MAX || cd > INT_MAX)
        return -1;
    *ni = (int)ci;
    *na = (int)ca;
    *nd = (int)cd;
    return 0;
#else
    if (PMPI_Type_get_envelope(t, ni, na, nd, comb) != MPI_SUCCESS) {
        *comb = -1;
        return -1;
    }
    return 0;
#endif
}

int pmpi_type_contents(MPI_Datatype t, int ni, int na, int nd, int *ints, MPI_Aint *addrs, MPI_Datatype *types)
{
#if MPI_VERSION >= 4
    MPI_Count ci = 0, ca = 0, cl = 0, cd = 0;
    int comb;
    if (PMPI_Type_get_envelope_c(t, &ci, &ca, &cl, &cd, &comb) != MPI_SUCCESS)
        return -1;
    if (cl > 0) {
        if (cl != (MPI_Count)ni + na || ci != 0 || ca != 0 || cd != nd)
            return -1;
        MPI_Count *large = malloc(sizeof *large * (size_t)cl);
        if (!large || PMPI_Type_get_contents_c(t, 0, 0, cl, cd, ints, addrs, large, types) != MPI_SUCCESS) {
            free(large);
            return -1;
        }
        int ok = 1;
        for (int i = 0; i < ni; i++) {
            ok &= large[i] >= INT_MIN && large[i] <= INT_MAX;
            ints[i] = (int)large[i];
        }
        for (int i = 0; i < na; i++)
            addrs[i] = (MPI_Aint)large[ni + i];
        free(large);
        if (!ok)
            pmpi_dt_free_contents(types, nd);
        return ok ? 0 : -1;
    }
#endif
    return PMPI_Type_get_contents(t, ni, na, nd, ints, addrs, types) == MPI_SUCCESS ? 0 : -1;
}

void pmpi_dt_free_contents(MPI_Datatype *types, int n)
{
    for (int i = 0; i < n; i++) {
        int ni, na, nd, comb;
        pmpi_type_envelope(types[i], &ni, &na, &nd, &comb);
        if (comb != MPI_COMBINER_NAMED && comb != -1)
            PMPI_Type_free(&types[i]);
    }
}

static int is_run(MPI_Datatype t, int depth)
{
    int ni, na, nd, comb;
    if (depth > RUN_DEPTH || pmpi_type_envelope(t, &ni, &na, &nd, &comb) != 0)
        return 0;
    MPI_Count size = 0, tlb, text;
    if (PMPI_Type_size_x(t, &size) != MPI_SUCCESS || PMPI_Type_get_true_extent_x(t, &tlb, &text) != MPI_SUCCESS)
        return 0;
    if (size == 0)
        return 1;
    if (text != size)
        return 0; /* gaps (or overlaps): no run */
    switch (comb) {
    case MPI_COMBINER_NAMED:
#ifdef MPI_COMBINER_F90_REAL
    case MPI_COMBINER_F90_REAL:
    case MPI_COMBINER_F90_COMPLEX:
    case MPI_COMBINER_F90_INTEGER:
#endif
        return 1; /* predefined: one run when its true extent is its size (not MPI_SHORT_INT) */
    case MPI_COMBINER_DUP:
    case MPI_COMBINER_RESIZED:
    case MPI_COMBINER_CONTIGUOUS:
    case MPI_COMBINER_VECTOR:
    case MPI_COMBINER_HVECTOR:
    case MPI_COMBINER_INDEXED:
    case MPI_COMBINER_HINDEXED:
    case MPI_COMBINER_INDEXED_BLOCK:
    case MPI_COMBINER_HINDEXED_BLOCK:
    case MPI_COMBINER_STRUCT:
        break;
    default:
        return 0; /* subarray, darray, ...: packed (always right) */
    }
    int *ints = malloc(sizeof(int) * (size_t)(ni ? ni : 1));
    MPI_Aint *addrs = malloc(sizeof(MPI_Aint) * (size_t)(na ? na : 1));
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * (size_t)(nd ? nd : 1));
    if (!ints || !addrs || !types || pmpi_type_contents(t, ni, na, nd, ints, addrs, types) != 0) {
        free(ints);
        free(addrs);
        free(types);
        return 0;
    }
    chain_t c = {0, 0, 1};
    MPI_Count lb = 0, ext = 0;
    if (nd >= 1)
        PMPI_Type_get_extent_x(types[0], &lb, &ext);
    switch (comb) {
    case MPI_COMBINER_DUP:
    case MPI_COMBINER_RESIZED: /* the bounds move, the typemap does not */
        chain_block(&c, types[0], 1, 0, depth);
        break;
    case MPI_COMBINER_CONTIGUOUS:
        chain_block(&c, types[0], ints[0], 0, depth);
        break;
    case MPI_COMBINER_VECTOR: /* count, blocklength, stride (in extents) */
        if (ints[0] <= 1 || ints[1] == ints[2])
            chain_block(&c, types[0], (MPI_Count)ints[0] * ints[1], 0, depth);
        else if (ints[1] > 0)
            c.ok = 0;
        break;
    case MPI_COMBINER_HVECTOR: /* count, blocklength; stride in bytes */
        if (ints[0] <= 1 || (MPI_Count)ints[1] * ext == addrs[0])
            chain_block(&c, types[0], (MPI_Count)ints[0] * ints[1], 0, depth);
        else if (ints[1] > 0)
            c.ok = 0;
        break;
    case MPI_COMBINER_INDEXED: /* count, blocklengths[count], displacements[count] (extents) */
        for (int i = 0; i < ints[0] && c.ok; i++)
            chain_block(&c, types[0], ints[1 + i], (MPI_Count)ints[1 + ints[0] + i] * ext, depth);
        break;
    case MPI_COMBINER_HINDEXED: /* count, blocklengths[count]; displacements in bytes */
        for (int i = 0; i < ints[0] && c.ok; i++)
            chain_block(&c, types[0], ints[1 + i], addrs[i], depth);
        break;
    case MPI_COMBINER_INDEXED_BLOCK: /* count, blocklength, displacements[count] (extents) */
        for (int i = 0; i < ints[0] && c.ok; i++)
            chain_block(&c, types[0], ints[1], (MPI_Count)ints[2 + i] * ext, depth);
        break;
    case MPI_COMBINER_HINDEXED_BLOCK: /* count, blocklength; displacements in bytes */
        for (int i = 0; i < ints[0] && c.ok; i++)
            chain_block(&c, types[0], ints[1], addrs[i], depth);
        break;
    case MPI_COMBINER_STRUCT: /* count, blocklengths[count]; displacements; types */
        for (int i = 0; i < ints[0] && c.ok; i++)
            chain_block(&c, types[i], ints[1 + i], addrs[i], depth);
        break;
    }
    pmpi_dt_free_contents(types, nd);
    free(ints);
    free(addrs);
    free(types);
    return c.ok;
}

const pmpi_dt_info_t *pmpi_dt_query(MPI_Datatype t)
{
    MPI_Count size = 0, lb = 0, ext = 0, tlb = 0, text = 0;
    int ni = 0, na = 0, nd = 0, comb = MPI_COMBINER_NAMED;
    PMPI_Type_size_x(t, &size);
    PMPI_Type_get_extent_x(t, &lb, &ext);
    PMPI_Type_get_true_extent_x(t, &tlb, &text);
    pmpi_type_envelope(t, &ni, &na, &nd, &comb);
    pmpi_dt_info_t *o = &pmpi_dt_cache[cache_next % PMPI_DT_CACHE];
    o->t = t;
    o->size = size;
    o->lb = tlb;
    o->extent = ext;
    o->predefined = comb == MPI_COMBINER_NAMED;
    o->contig = size == 0 || (ext == size && text == size && is_run(t, 0));
    cache_next++;
    if (pmpi_dt_cache_n < PMPI_DT_CACHE)
        pmpi_dt_cache_n++;
    return o;
}

/* ---- lifetime ---- */

MPI_Datatype pmpi_dt_hold(MPI_Datatype t)
{
    if (pmpi_dt_get(t)->predefined)
        return t;
    MPI_Datatype d = MPI_DATATYPE_NULL;
    if (PMPI_Type_dup(t, &d) != MPI_SUCCESS)
        return MPI_DATATYPE_NULL;
    return d;
}

MPI_Datatype pmpi_dt_keep(MPI_Datatype t)
{
    MPI_Datatype h = t == MPI_DATATYPE_NULL ? t : pmpi_dt_hold(t);
    return h == MPI_DATATYPE_NULL ? t : h;
}

int pmpi_dt_free(MPI_Datatype *t)
{
    pmpi_dt_cache_n = 0; /* the handle may name another type next time */
    cache_next = 0;
    return PMPI_Type_free(t);
}

void pmpi_dt_ref(MPI_Datatype t)
{
    if (t != MPI_DATATYPE_NULL && !pmpi_dt_get(t)->predefined)
        pmpi_ref(PMPI_REF_TYPE, PMPI_BITS(t));
}

void pmpi_dt_unref(MPI_Datatype t)
{
    if (t != MPI_DATATYPE_NULL && pmpi_unref(PMPI_REF_TYPE, PMPI_BITS(t)))
        pmpi_dt_free(&t);
}

/* The program's own frees go through here too: the cache must forget the handle. A type a pending
 * call references (pmpi_dt_ref) is freed when that call lets go of it. */
BOBCAT_EXPORT int MPI_Type_free(MPI_Datatype *t)
{
    PMPI_GUARD();
    if (!t || !pmpi_ref_free(PMPI_REF_TYPE, PMPI_BITS(*t)))
        return pmpi_dt_free(t);
    *t = MPI_DATATYPE_NULL;
    return MPI_SUCCESS;
}

void pmpi_dt_release(MPI_Datatype held, MPI_Datatype user)
{
    if (held != user && held != MPI_DATATYPE_NULL)
        pmpi_dt_free(&held);
}

/* ---- packing ---- */

/* MPI_BOTTOM: the type's displacements are absolute addresses, and MPICH's PMPI_Pack refuses a
 * NULL buffer. The same typemap moved down by a non-NULL anchor's address (same extent, so count
 * elements tile as before) is packed from the anchor instead. */
static char anchor;

static int bottom_type(MPI_Datatype t, MPI_Datatype *out_p)
{
    MPI_Aint shift = -(MPI_Aint)(uintptr_t)&anchor, lb, ext;
    int one = 1;
    MPI_Datatype s, r;
    if (PMPI_Type_get_extent(t, &lb, &ext) != MPI_SUCCESS ||
        PMPI_Type_create_struct(1, &one, &shift, &t, &s) != MPI_SUCCESS)
        return -1;
    int rc = PMPI_Type_create_resized(s, lb + shift, ext, &r);
    PMPI_Type_free(&s);
    if (rc != MPI_SUCCESS || PMPI_Type_commit(&r) != MPI_SUCCESS)
        return -1;
    *out_p = r;
    return 0;
}

/* The element run of [k, k + n) elements one PMPI_(Un)pack call may take: ints for counts and
 * byte positions. */
static MPI_Count chunk_of(MPI_Count left, MPI_Count size)
{
    MPI_Count n = size ? INT_MAX / size : left;
    if (n > INT_MAX)
        n = INT_MAX;
    return left < n ? left : n;
}

/* Pack (dir 0) or unpack (dir 1) whole elements [first, first + count) of buf to or from bytes. */
static int move_whole(void *buf, MPI_Count first, MPI_Count count, MPI_Datatype t, MPI_Count size, MPI_Count ext,
                      char *bytes, int dir)
{
    MPI_Datatype use = t;
    char *base = buf;
    if (buf == MPI_BOTTOM && count > 0) {
        if (bottom_type(t, &use) != 0)
            return -1;
        base = &anchor;
    }
    int rc = MPI_SUCCESS;
    for (MPI_Count k = 0; k < count && rc == MPI_SUCCESS;) {
        MPI_Count n = chunk_of(count - k, size);
        if (n <= 0) {
            rc = MPI_ERR_COUNT; /* one element of more than INT_MAX bytes */
            break;
        }
        int pos = 0;
        char *at = base + (first + k) * ext;
        if (dir == 0)
            rc = PMPI_Pack(at, (int)n, use, bytes + k * size, (int)(n * size), &pos, MPI_COMM_SELF);
        else
            rc = PMPI_Unpack(bytes + k * size, (int)(n * size), &pos, at, (int)n, use, MPI_COMM_SELF);
        k += n;
    }
    if (use != t)
        PMPI_Type_free(&use);
    return rc == MPI_SUCCESS ? 0 : -1;
}

MPI_Count pmpi_dt_pack(const void *buf, MPI_Count count, MPI_Datatype t, void *out)
{
    const pmpi_dt_info_t *d = pmpi_dt_get(t);
    MPI_Count size = d->size, ext = d->extent;
    if (count <= 0 || size == 0)
        return 0;
    return move_whole((void *)buf, 0, count, t, size, ext, out, 0) == 0 ? count * size : -1;
}

int pmpi_dt_unpack(const void *in, MPI_Count bytes, void *buf, MPI_Count count, MPI_Datatype t)
{
    const pmpi_dt_info_t *d = pmpi_dt_get(t);
    MPI_Count size = d->size, ext = d->extent;
    if (size == 0 || bytes <= 0 || count <= 0)
        return 0;
    MPI_Count whole = bytes / size, part = bytes % size;
    if (whole >= count) {
        whole = count;
        part = 0;
    }
    if (move_whole(buf, 0, whole, t, size, ext, (char *)in, 1) != 0)
        return -1;
    if (!part)
        return 0;
    /* A message that ends inside an element (legal: MPI_Get_count says MPI_UNDEFINED, and
     * MPI_Get_elements counts its basic elements): the element as it is now, its first `part`
     * bytes replaced by the received ones, laid back out. */
    char *tmp = malloc((size_t)size);
    if (!tmp)
        return -1;
    int rc = -1;
    if (move_whole(buf, whole, 1, t, size, ext, tmp, 0) == 0) {
        memcpy(tmp, (const char *)in + whole * size, (size_t)part);
        rc = move_whole(buf, whole, 1, t, size, ext, tmp, 1);
    }
    free(tmp);
    return rc;
}
