/* shmem_transport: what OpenSHMEM needs from the network between nodes, and nothing else — the one
 * interface between src/shmem and its transport (today src/pmpi/pmpi_shmem.c: MPI-3 RMA, compiled
 * once per MPI ABI). The transport knows nothing of SHMEM's state: each call returns a status
 * (SHT_OK or SHT_ERR) and shmem_tr_error() says what failed, for the calling thread; SHMEM decides
 * what a failure means (its fatal path names the routine). Both sides include this header. */
#ifndef BOBCAT_SHMEM_TRANSPORT_H
#define BOBCAT_SHMEM_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

enum { SHT_OK = 0, SHT_ERR = -1 };

/* The two regions every PE exposes at the same offsets: the symmetric heap, the static data. */
enum { SHI_HEAP = 0, SHI_DATA = 1 };

/* Atomics: every AMO type is 4 or 8 bytes; values travel as uint64_t. SHI_AMO_F marks the fetching
 * form of add/and/or/xor (fetch, swap and cswap always fetch). */
typedef enum {
    SHI_AMO_FETCH, SHI_AMO_SET, SHI_AMO_SWAP, SHI_AMO_CSWAP, SHI_AMO_ADD, SHI_AMO_AND, SHI_AMO_OR, SHI_AMO_XOR,
    SHI_AMO_F = 0x10
} shi_amo_op_t;

/* Start (SHMEM_THREAD_* levels in and out) and learn this PE's number and the job's size. */
int shmem_tr_init(int requested, int *provided_p, int *me_p, int *npes_p);
/* Polls of a request before the transport yields the core (PEs may outnumber cores). */
void shmem_tr_tune(unsigned spin_before_yield);
/* Expose the two regions (collective). */
int shmem_tr_windows(void *heap, size_t heap_size, void *data, size_t data_size);
int shmem_tr_put(int region, size_t disp, const void *src, size_t n, int pe);
int shmem_tr_get(int region, size_t disp, void *dst, size_t n, int pe);      /* complete at quiet */
int shmem_tr_get_wait(int region, size_t disp, void *dst, size_t n, int pe); /* complete on return */
int shmem_tr_iput(int region, size_t disp, const void *src, ptrdiff_t dst_stride, ptrdiff_t src_stride,
                  size_t nelems, size_t size, int pe);
int shmem_tr_iget(int region, size_t disp, void *dst, ptrdiff_t dst_stride, ptrdiff_t src_stride, size_t nelems,
                  size_t size, int pe);
int shmem_tr_flush(int pe);       /* this PE's operations to pe complete remotely */
int shmem_tr_flush_local(int pe); /* ... locally (the source buffers may be reused) */
int shmem_tr_flush_all(void);
int shmem_tr_amo(shi_amo_op_t op, int size, int region, size_t disp, uint64_t value, uint64_t cond, int pe,
                 uint64_t *old_p);
void shmem_tr_progress(void);     /* one pass of the transport's progress */
int shmem_tr_barrier(void);
int shmem_tr_allgather_int(int mine, int *all_p);
void shmem_tr_counts(unsigned long *puts, unsigned long *gets, unsigned long *amos); /* operations issued */
void shmem_tr_abort(int status) __attribute__((noreturn)); /* the whole job, with this exit status */
int shmem_tr_finalize(void);
const char *shmem_tr_error(void); /* what the last failed call of this thread said */

#endif
