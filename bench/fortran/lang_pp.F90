! lang_pp (Fortran): pingpong and Allreduce at 8 B and 1 MiB through `use mpi` (or `use mpi_f08`
! with -DUSE_F08: the same calls, whose handles are then derived types), timed exactly as
! lang_pp.c times them in C, so the two languages' figures under yod can be set side by side
! (bench/fortran/README.md). Prints one line per case: "<case> <bytes> <microseconds per op>",
! each the median of 11 timed blocks.
program lang_pp
#ifdef USE_F08
  use mpi_f08
#else
  use mpi
#endif
  implicit none
  integer, parameter :: nblk = 11
  integer :: ierr, rank, k, b, reps, n, other
  integer :: sizes(2) = [8, 1048576]
  double precision :: t(nblk), t0
  character, allocatable :: sb(:), rb(:)
  double precision, allocatable :: ds(:), dr(:)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  other = 1 - rank
  do k = 1, 2
    n = sizes(k)
    reps = merge(2000, 50, n <= 8)
    allocate(sb(n), rb(n))
    sb = 'x'
    do b = 0, nblk
      call MPI_Barrier(MPI_COMM_WORLD, ierr)
      t0 = MPI_Wtime()
      call pingpong(reps)
      if (b > 0) t(b) = (MPI_Wtime() - t0) / reps / 2 * 1d6
    end do
    if (rank == 0) print '(a,1x,i0,1x,f12.3)', 'pingpong', n, median(t)
    deallocate(sb, rb)
    allocate(ds(n / 8), dr(n / 8))
    ds = 1d0
    do b = 0, nblk
      call MPI_Barrier(MPI_COMM_WORLD, ierr)
      t0 = MPI_Wtime()
      call allreduce(reps)
      if (b > 0) t(b) = (MPI_Wtime() - t0) / reps * 1d6
    end do
    if (rank == 0) print '(a,1x,i0,1x,f12.3)', 'allreduce', n, median(t)
    deallocate(ds, dr)
  end do
  call MPI_Finalize(ierr)

contains

  subroutine pingpong(r)
    integer, intent(in) :: r
    integer :: i
    do i = 1, r
      if (rank == 0) then
        call MPI_Send(sb, n, MPI_CHARACTER, other, 1, MPI_COMM_WORLD, ierr)
        call MPI_Recv(rb, n, MPI_CHARACTER, other, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      else
        call MPI_Recv(rb, n, MPI_CHARACTER, other, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
        call MPI_Send(sb, n, MPI_CHARACTER, other, 1, MPI_COMM_WORLD, ierr)
      end if
    end do
  end subroutine pingpong

  subroutine allreduce(r)
    integer, intent(in) :: r
    integer :: i
    do i = 1, r
      call MPI_Allreduce(ds, dr, n / 8, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    end do
  end subroutine allreduce

#include "median.inc"
end program lang_pp
