/* pmpi_shmem: the transport of libbobcat-shmem-<mpi>.so (src/shmem/shmem_transport.h) — start-up (my_pe/n_pes are the ranks of
 * MPI_COMM_WORLD) and the path to PEs of other nodes: MPI-3 RMA, passive target, one window over
 * the symmetric heap and one over the executable's static data, both locked for the job's life
 * (MPI_Win_lock_all) and completed with flushes. It lives here because only src/pmpi includes
 * mpi.h; it is compiled once per MPI ABI together with src/shmem (CMake: bobcat-shmem-<mpi>).
 * Not part of libbobcat-<mpi>.so: yod preloads that into every MPI program, and shmem_* symbols
 * there would capture the calls of programs built against another OpenSHMEM (Open MPI's oshmem).
 * It knows nothing of SHMEM's state: every call returns a status and a failure's text is kept for
 * shmem_tr_error(), for SHMEM's fatal path to name the routine. */
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <mpi.h>
#include <unistd.h>

#include <bobcat/shmem.h> /* SHMEM_THREAD_* */
#include "../shmem/shmem_transport.h"

static MPI_Comm comm = MPI_COMM_NULL;
static MPI_Win win[2] = {MPI_WIN_NULL, MPI_WIN_NULL};
static int we_started_mpi;

#define CHUNK ((size_t)1 << 30) /* MPI counts are int: move large transfers in pieces */

static unsigned spin_before_yield = 64;
static __thread char why[MPI_MAX_ERROR_STRING + 128]; /* the last failure of this thread */

const char *shmem_tr_error(void) { return why; }
void shmem_tr_tune(unsigned spins) { spin_before_yield = spins ? spins : 1; }

static __attribute__((format(printf, 1, 2))) int fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return SHT_ERR;
}

/* An MPI call's code as a status (the MPI's own text kept for shmem_tr_error). */
static int check(int rc, const char *what)
{
    if (rc == MPI_SUCCESS)
        return SHT_OK;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return fail("%s: MPI error: %s", what, msg);
}
#define TRY(call, what)                                                                                \
    do {                                                                                               \
        if (check((call), (what)) != SHT_OK)                                                           \
            return SHT_ERR;                                                                            \
    } while (0)

int shmem_tr_init(int requested, int *provided_p, int *me_p, int *npes_p)
{
    static const int to_mpi[] = {MPI_THREAD_SINGLE, MPI_THREAD_FUNNELED, MPI_THREAD_SERIALIZED, MPI_THREAD_MULTIPLE};
    if (requested < SHMEM_THREAD_SINGLE || requested > SHMEM_THREAD_MULTIPLE)
        requested = SHMEM_THREAD_MULTIPLE;
    int inited = 0, prov = MPI_THREAD_SINGLE;
    MPI_Initialized(&inited);
    if (!inited) {
#ifdef OPEN_MPI
        /* Open MPI 4.1's default one-sided component over vader (osc/rdma) crashes in its emulated
         * compare-and-swap (mca_btl_vader_emu_acswap); osc/ucx is correct. Only when the user has
         * not chosen. */
        setenv("OMPI_MCA_osc", "^rdma", 0);
#endif
        if (MPI_Init_thread(NULL, NULL, to_mpi[requested], &prov) != MPI_SUCCESS)
            return fail("MPI_Init_thread failed: start the program with oshrun (or yod)");
        we_started_mpi = 1;
    } else {
        MPI_Query_thread(&prov);
    }
    int p = SHMEM_THREAD_SINGLE;
    for (int i = 0; i < 4; i++)
        if (to_mpi[i] == prov)
            p = i;
    *provided_p = p;
    TRY(MPI_Comm_dup(MPI_COMM_WORLD, &comm), "MPI_Comm_dup");
    MPI_Comm_rank(comm, me_p);
    MPI_Comm_size(comm, npes_p);
    return SHT_OK;
}

int shmem_tr_windows(void *heap, size_t heap_size, void *data, size_t data_size)
{
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "same_size", "true");
    MPI_Info_set(info, "same_disp_unit", "true");
    /* Node mates reach each other through bobcat's OpenSHMEM itself: these windows stay the real
     * MPI's under libbobcat-<mpi>.so (docs/mpi.md, "One-sided communication"). */
    MPI_Info_set(info, "bobcat_rma", "mpi");
    int rc = check(MPI_Win_create(heap, (MPI_Aint)heap_size, 1, info, comm, &win[SHI_HEAP]), "heap window");
    if (rc == SHT_OK)
        rc = check(MPI_Win_create(data, (MPI_Aint)data_size, 1, info, comm, &win[SHI_DATA]), "static data window");
    MPI_Info_free(&info);
    if (rc != SHT_OK)
        return rc;
    TRY(MPI_Win_lock_all(MPI_MODE_NOCHECK, win[SHI_HEAP]), "MPI_Win_lock_all");
    TRY(MPI_Win_lock_all(MPI_MODE_NOCHECK, win[SHI_DATA]), "MPI_Win_lock_all");
    return SHT_OK;
}

/* MPI RMA operations issued by this PE (SHMEM_DEBUG prints them at shmem_finalize): how many
 * messages the off-node paths cost. Relaxed atomics: threads may share a PE. */
static unsigned long n_ops[3];
#define COUNT(k) __atomic_fetch_add(&n_ops[k], 1, __ATOMIC_RELAXED)

void shmem_tr_counts(unsigned long *puts, unsigned long *gets, unsigned long *amos)
{
    *puts = __atomic_load_n(&n_ops[0], __ATOMIC_RELAXED);
    *gets = __atomic_load_n(&n_ops[1], __ATOMIC_RELAXED);
    *amos = __atomic_load_n(&n_ops[2], __ATOMIC_RELAXED);
}

int shmem_tr_put(int region, size_t disp, const void *src, size_t n, int pe)
{
    for (size_t done = 0; done < n; done += CHUNK) {
        size_t k = n - done < CHUNK ? n - done : CHUNK;
        COUNT(0);
        TRY(MPI_Put((const char *)src + done, (int)k, MPI_BYTE, pe, (MPI_Aint)(disp + done), (int)k, MPI_BYTE,
                    win[region]), "MPI_Put");
    }
    return SHT_OK;
}

/* Wait for a request, yielding the core between polls. */
static void wait_request(MPI_Request *req)
{
    int done = 0;
    unsigned spins = 0;
    for (;;) {
        MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (done)
            return;
        if (++spins >= spin_before_yield) {
            spins = 0;
            sched_yield();
        }
    }
}

int shmem_tr_get(int region, size_t disp, void *dst, size_t n, int pe)
{
    for (size_t done = 0; done < n; done += CHUNK) {
        size_t k = n - done < CHUNK ? n - done : CHUNK;
        COUNT(1);
        TRY(MPI_Get((char *)dst + done, (int)k, MPI_BYTE, pe, (MPI_Aint)(disp + done), (int)k, MPI_BYTE,
                    win[region]), "MPI_Get");
    }
    return SHT_OK;
}

/* Strided transfers as one MPI call: nelems elements of `size` bytes, `stride` elements apart. */
static MPI_Datatype strided(size_t nelems, ptrdiff_t stride, size_t size)
{
    MPI_Datatype el, t;
    MPI_Type_contiguous((int)size, MPI_BYTE, &el);
    MPI_Type_create_hvector((int)nelems, 1, (MPI_Aint)(stride * (ptrdiff_t)size), el, &t);
    MPI_Type_commit(&t);
    MPI_Type_free(&el);
    return t;
}

int shmem_tr_iput(int region, size_t disp, const void *src, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, size_t size,
                  int pe)
{
    if (nelems > INT_MAX)
        return fail("%zu elements: at most %d per call off-node", nelems, INT_MAX);
    MPI_Datatype o = strided(nelems, sst, size), t = strided(nelems, dst, size);
    COUNT(0);
    int rc = check(MPI_Put(src, 1, o, pe, (MPI_Aint)disp, 1, t, win[region]), "MPI_Put");
    MPI_Type_free(&o);
    MPI_Type_free(&t);
    return rc;
}

int shmem_tr_iget(int region, size_t disp, void *dst, ptrdiff_t dst_stride, ptrdiff_t sst, size_t nelems, size_t size,
                  int pe)
{
    if (nelems > INT_MAX)
        return fail("%zu elements: at most %d per call off-node", nelems, INT_MAX);
    MPI_Datatype o = strided(nelems, dst_stride, size), t = strided(nelems, sst, size);
    COUNT(1);
    int rc = check(MPI_Get(dst, 1, o, pe, (MPI_Aint)disp, 1, t, win[region]), "MPI_Get");
    MPI_Type_free(&o);
    MPI_Type_free(&t);
    return rc;
}

int shmem_tr_get_wait(int region, size_t disp, void *dst, size_t n, int pe)
{
    for (size_t done = 0; done < n; done += CHUNK) {
        size_t k = n - done < CHUNK ? n - done : CHUNK;
        MPI_Request req;
        COUNT(1);
        TRY(MPI_Rget((char *)dst + done, (int)k, MPI_BYTE, pe, (MPI_Aint)(disp + done), (int)k, MPI_BYTE, win[region],
                     &req), "MPI_Rget");
        wait_request(&req);
    }
    return SHT_OK;
}

int shmem_tr_flush(int pe)
{
    TRY(MPI_Win_flush(pe, win[SHI_HEAP]), "MPI_Win_flush");
    TRY(MPI_Win_flush(pe, win[SHI_DATA]), "MPI_Win_flush");
    return SHT_OK;
}

int shmem_tr_flush_local(int pe)
{
    TRY(MPI_Win_flush_local(pe, win[SHI_HEAP]), "MPI_Win_flush_local");
    TRY(MPI_Win_flush_local(pe, win[SHI_DATA]), "MPI_Win_flush_local");
    return SHT_OK;
}

int shmem_tr_flush_all(void)
{
    TRY(MPI_Win_flush_all(win[SHI_HEAP]), "MPI_Win_flush_all");
    TRY(MPI_Win_flush_all(win[SHI_DATA]), "MPI_Win_flush_all");
    return SHT_OK;
}

/* One datatype per size for every operation, so that MPI's atomicity guarantee (same predefined
 * datatype) covers mixes of add, swap, compare-and-swap and fetch on one location. */
int shmem_tr_amo(shi_amo_op_t op, int size, int region, size_t disp, uint64_t value, uint64_t cond, int pe,
                 uint64_t *old_p)
{
    MPI_Datatype dt = size == 8 ? MPI_UINT64_T : MPI_UINT32_T;
    uint64_t v8 = value, c8 = cond, r8 = 0;
    uint32_t v4 = (uint32_t)value, c4 = (uint32_t)cond, r4 = 0;
    void *v = size == 8 ? (void *)&v8 : (void *)&v4, *c = size == 8 ? (void *)&c8 : (void *)&c4;
    void *r = size == 8 ? (void *)&r8 : (void *)&r4;
    MPI_Win w = win[region];
    MPI_Op mop = MPI_NO_OP;
    switch (op & ~SHI_AMO_F) {
    case SHI_AMO_FETCH: mop = MPI_NO_OP; break;
    case SHI_AMO_SET: case SHI_AMO_SWAP: mop = MPI_REPLACE; break;
    case SHI_AMO_ADD: mop = MPI_SUM; break;
    case SHI_AMO_AND: mop = MPI_BAND; break;
    case SHI_AMO_OR: mop = MPI_BOR; break;
    case SHI_AMO_XOR: mop = MPI_BXOR; break;
    case SHI_AMO_CSWAP: break;
    }
    COUNT(2);
    if ((op & ~SHI_AMO_F) == SHI_AMO_CSWAP) {
        TRY(MPI_Compare_and_swap(v, c, r, dt, pe, (MPI_Aint)disp, w), "MPI_Compare_and_swap");
        TRY(MPI_Win_flush(pe, w), "MPI_Win_flush");
    } else {
        /* Every other atomic is a request-based fetching accumulate: its completion means the
         * remote update is done (so a waiting PE sees it without a quiet), and we wait for it
         * with yields instead of in MPI_Win_flush, which busy-polls (an MPI that applies atomics
         * in the target's progress needs the target to get the core). */
        MPI_Request req;
        TRY(MPI_Rget_accumulate(v, 1, dt, r, 1, dt, pe, (MPI_Aint)disp, 1, dt, mop, w, &req), "MPI_Rget_accumulate");
        wait_request(&req);
    }
    *old_p = size == 8 ? r8 : r4;
    return SHT_OK;
}

void shmem_tr_progress(void)
{
    int flag;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, MPI_STATUS_IGNORE);
}

int shmem_tr_barrier(void) { return check(MPI_Barrier(comm), "MPI_Barrier"); }

int shmem_tr_allgather_int(int mine, int *all_p)
{
    return check(MPI_Allgather(&mine, 1, MPI_INT, all_p, 1, MPI_INT, comm), "MPI_Allgather");
}

/* The whole job ends, so the abort is on MPI_COMM_WORLD, not on our duplicate of it: MPICH ends
 * only the processes of a communicator that is not MPI_COMM_WORLD (with Hydra, the others waited
 * on), and Open MPI names the aborting rank in the world only when the communicator is the world. */
void shmem_tr_abort(int status)
{
    MPI_Abort(MPI_COMM_WORLD, status);
    _exit(status);
}

int shmem_tr_finalize(void)
{
    for (int i = 0; i < 2; i++) {
        if (win[i] != MPI_WIN_NULL) {
            MPI_Win_unlock_all(win[i]);
            MPI_Win_free(&win[i]);
        }
    }
    if (comm != MPI_COMM_NULL)
        MPI_Comm_free(&comm);
    int fin = 0;
    MPI_Finalized(&fin);
    if (we_started_mpi && !fin)
        return check(MPI_Finalize(), "MPI_Finalize");
    return SHT_OK;
}
