/* shmem_pshmem: a profiling tool as the OpenSHMEM profiling interface means it to be written. It
 * defines shmem_putmem and shmem_barrier_all itself, counts the calls and forwards them to the
 * library's name-shifted entry points (pshmem.h). The counts must be exactly the program's calls,
 * and the data must still arrive: the tool sits in front of the library, not instead of it. */
#include <pshmem.h>
#include <shmem.h>
#include <stdio.h>
#include <string.h>

#include "../mp/mp_util.h"

/* --- the tool ---------------------------------------------------------------------------------- */
static long n_putmem, n_barrier_all;
static size_t bytes_put;

void shmem_putmem(void *dest, const void *source, size_t nelems, int pe)
{
    n_putmem++;
    bytes_put += nelems;
    pshmem_putmem(dest, source, nelems, pe);
}

void shmem_barrier_all(void)
{
    n_barrier_all++;
    pshmem_barrier_all();
}

/* --- the program -------------------------------------------------------------------------------- */
#define ROUNDS 5
static char inbox[ROUNDS][64];

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes(), right = (me + 1) % npes, left = (me + npes - 1) % npes;
    for (int r = 0; r < ROUNDS; r++) {
        char msg[64];
        int len = snprintf(msg, sizeof msg, "round %d from PE %d", r, me) + 1;
        shmem_putmem(inbox[r], msg, (size_t)len, right);
        shmem_barrier_all();
        char want[64];
        snprintf(want, sizeof want, "round %d from PE %d", r, left);
        CHECK(!strcmp(inbox[r], want), "inbox[%d] = '%s', not '%s': the tool's forward lost the data", r, inbox[r],
              want);
    }
    /* The library's other entry points are untouched by the tool: a sync_all is no barrier_all. */
    shmem_sync_all();
    CHECK(n_putmem == ROUNDS, "the tool counted %ld shmem_putmem calls, the program made %d", n_putmem, ROUNDS);
    CHECK(n_barrier_all == ROUNDS, "the tool counted %ld shmem_barrier_all calls, the program made %d",
          n_barrier_all, ROUNDS);
    CHECK(bytes_put > ROUNDS * 17, "the tool saw %zu bytes put", bytes_put);
    /* pshmem_ names reach the same routines as shmem_ ones. */
    CHECK(pshmem_my_pe() == me && pshmem_n_pes() == npes, "pshmem_my_pe/pshmem_n_pes");
    static int sfails;
    sfails = mp_failures;
    pshmem_barrier_all();
    int total = 0;
    for (int p = 0; p < npes; p++)
        total += pshmem_int_g(&sfails, p);
    if (me == 0)
        printf("shmem_pshmem: %d PEs, %d failed checks\n", npes, total);
    shmem_finalize();
    return mp_failures ? 1 : 0;
}
