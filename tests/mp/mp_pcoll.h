/* Persistent collectives under MPI 4.0's names (MPI_X_init) on every MPI that has them: MPICH 4 and
 * 5, Intel MPI and Open MPI 5 by those names, Open MPI 4 as its pcollreq extension's MPIX_X_init
 * (mpi-ext.h), which the layer defines too (src/pmpi/coll/pmpi_coll.h). MP_PCOLL: there are some. */
#ifndef MP_PCOLL_H
#define MP_PCOLL_H
#include <mpi.h>

#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define MP_PCOLL 1
#elif defined(OPEN_MPI)
#include <mpi-ext.h>
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define MP_PCOLL 1
#define MPI_Barrier_init MPIX_Barrier_init
#define MPI_Bcast_init MPIX_Bcast_init
#define MPI_Reduce_init MPIX_Reduce_init
#define MPI_Allreduce_init MPIX_Allreduce_init
#define MPI_Scan_init MPIX_Scan_init
#define MPI_Exscan_init MPIX_Exscan_init
#define MPI_Reduce_scatter_init MPIX_Reduce_scatter_init
#define MPI_Reduce_scatter_block_init MPIX_Reduce_scatter_block_init
#define MPI_Allgather_init MPIX_Allgather_init
#define MPI_Alltoall_init MPIX_Alltoall_init
#define MPI_Gather_init MPIX_Gather_init
#define MPI_Scatter_init MPIX_Scatter_init
#define MPI_Gatherv_init MPIX_Gatherv_init
#define MPI_Scatterv_init MPIX_Scatterv_init
#define MPI_Allgatherv_init MPIX_Allgatherv_init
#define MPI_Alltoallv_init MPIX_Alltoallv_init
#define MPI_Alltoallw_init MPIX_Alltoallw_init
#define MPI_Neighbor_allgather_init MPIX_Neighbor_allgather_init
#define MPI_Neighbor_allgatherv_init MPIX_Neighbor_allgatherv_init
#define MPI_Neighbor_alltoall_init MPIX_Neighbor_alltoall_init
#define MPI_Neighbor_alltoallv_init MPIX_Neighbor_alltoallv_init
#define MPI_Neighbor_alltoallw_init MPIX_Neighbor_alltoallw_init
#endif
#endif

/* Open MPI's own persistent collectives (4.1's MPIX_X_init, made before MPI 4.0, and 5.0's MPI_X_init
 * alike) keep no reference to their op or datatype: a start after the program freed them crashes
 * (SIGSEGV in its libnbc: Allreduce_init with a user op, Bcast_init with a derived type), although
 * MPI 4.0 lets a program free both once the init returns. MP_PCOLL_NOREF: this MPI is one of them.
 * Where its requests serve (the reference run, BOBCAT_MPI=off), the tests free the op and types after
 * the requests. */
#ifdef OPEN_MPI
#define MP_PCOLL_NOREF 1
#else
#define MP_PCOLL_NOREF 0
#endif
#endif
