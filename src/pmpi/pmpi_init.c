/* pmpi_init: the MPI boundary of libbobcat. For now it checks, once MPI is up, that the MPI world
 * is the one yod planned (a mismatch means the launcher placed ranks differently than the plan and
 * SMARTMAP's idea of "my node" would be wrong). Message and collective layers arrive later; every
 * call not defined here goes straight to the real MPI. This is the only file that includes mpi.h. */
#include <mpi.h>
#include <stdio.h>

#include <bobcat/smartmap.h>
#include "pmpi_p2p.h"

#define BOBCAT_EXPORT __attribute__((visibility("default")))

static void check_world(void)
{
    int planned = smap_world_size(), size = 0;
    if (planned == 0)
        return; /* not started by yod */
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != planned) {
        fprintf(stderr, "bobcat: rank %d: MPI_COMM_WORLD has %d ranks but yod planned %d: was the program started by "
                        "another launcher inside yod?\n", smap_world_rank(), size, planned);
        PMPI_Abort(MPI_COMM_WORLD, 3);
    }
}

BOBCAT_EXPORT int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) {
        check_world();
        p2p_init(); /* issue 10: point-to-point layer (collective over WORLD) */
    }
    return rc;
}

BOBCAT_EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS) {
        check_world();
        p2p_init(); /* issue 10: point-to-point layer (collective over WORLD) */
    }
    return rc;
}
