/* pmpi_rma_staged: window memory outside the target's segment (user stack or static arrays given to
 * MPI_Win_create, a dynamic window's attached memory from outside the heap), reached without the
 * target through the kernel's cross-memory calls (process_vm_readv/writev, the same permission as
 * ptrace: the job's own user, and no seccomp filter against them).
 *
 * The origin stages the target's bytes in a buffer of its own: a put packs the origin and writes
 * the bytes the target type touches; a get reads them and unpacks; an accumulate holds the target's
 * accumulate lock while it reads, applies and writes back, so every accumulate to that memory,
 * from any origin, is atomic with the others (they all take this way: the choice is per target for
 * the static flavours, per address for a dynamic window).
 *
 * Whether the calls work between every pair is decided once per window, from a probe every rank
 * makes on every node mate (reading the random token its control block holds, so a process with
 * the same number in another PID namespace is never taken for it) and an MPI_MIN over the window's
 * communicator (rma_staged_probe). Where they do not, those targets go through the real window, as
 * before. */
#include "pmpi_rma.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#ifndef IOV_MAX
#define IOV_MAX 1024
#endif

int rma_staged_probe(int pid, const void *remote_token, int64_t token)
{
    int64_t got = 0;
    struct iovec l = {&got, sizeof got}, r = {(void *)remote_token, sizeof got};
    return process_vm_readv(pid, &l, 1, &r, 1, 0) == (ssize_t)sizeof got && got == token;
}

int rma_staged_ranges(MPI_Datatype t, MPI_Count count, MPI_Aint lb, MPI_Aint span, MPI_Count bytes,
                      rma_range_t **out, int *n)
{
    /* Which bytes of [lb, lb + span) the type touches: unpack all-ones into a zeroed mask. */
    unsigned char *mask = calloc((size_t)(span ? span : 1), 1), *ones = malloc((size_t)(bytes ? bytes : 1));
    rma_range_t *r = NULL;
    int nr = 0, cap = 0, rc = -1;
    if (!mask || !ones)
        goto out;
    memset(ones, 0xff, (size_t)bytes);
    if (bytes && pmpi_dt_unpack(ones, bytes, mask - lb, count, t) != 0)
        goto out;
    for (MPI_Aint i = 0; i < span;) {
        if (!mask[i]) {
            i++;
            continue;
        }
        MPI_Aint j = i;
        while (j < span && mask[j])
            j++;
        if (nr == cap) {
            cap = cap ? 2 * cap : 16;
            rma_range_t *g = realloc(r, (size_t)cap * sizeof *r);
            if (!g)
                goto out;
            r = g;
        }
        r[nr].off = i;
        r[nr].len = j - i;
        nr++;
        i = j;
    }
    rc = 0;
out:
    free(mask);
    free(ones);
    if (rc) {
        free(r);
        r = NULL;
        nr = 0;
    }
    *out = r;
    *n = nr;
    return rc;
}

int rma_staged_io(int pid, int write, char *local, char *remote, const rma_range_t *r, int n)
{
    struct iovec l[64], rv[64];
    for (int i = 0; i < n;) {
        int k = 0;
        ssize_t want = 0;
        for (; i + k < n && k < 64; k++) {
            l[k].iov_base = local + r[i + k].off;
            rv[k].iov_base = remote + r[i + k].off;
            l[k].iov_len = rv[k].iov_len = (size_t)r[i + k].len;
            want += (ssize_t)r[i + k].len;
        }
        ssize_t got = write ? process_vm_writev(pid, l, (unsigned long)k, rv, (unsigned long)k, 0)
                            : process_vm_readv(pid, l, (unsigned long)k, rv, (unsigned long)k, 0);
        if (got != want) {
            /* A fault part-way (the kernel stops at an iovec it cannot reach): that range is not in
             * the target's memory; anything else means the calls stopped working under us. */
            int e = got < 0 ? errno : EFAULT;
            if (e != EFAULT)
                util_error("one-sided access to rank memory outside the heap failed (%s); "
                           "set BOBCAT_RMA=mpi to leave such windows to the MPI",
                           strerror(e));
            return e == EFAULT ? MPI_ERR_RMA_RANGE : MPI_ERR_OTHER;
        }
        i += k;
    }
    return MPI_SUCCESS;
}
