! lang_cost: the Fortran binding's own cost per call, without a peer. Send + Recv to
! MPI_PROC_NULL and an 8-byte Allreduce on MPI_COMM_SELF, timed in blocks that alternate with the
! same calls made from C (lang_cost_c.c) in the same process; prints per case the median ns per call
! of each language and the median of the blocks' ratios F/C.
program lang_cost
#ifdef USE_F08
  use mpi_f08
#else
  use mpi
#endif
  use iso_c_binding
  implicit none
  interface
    real(c_double) function c_sendrecv(n) bind(C)
      import :: c_double, c_int
      integer(c_int), value :: n
    end function
    real(c_double) function c_allreduce(n) bind(C)
      import :: c_double, c_int
      integer(c_int), value :: n
    end function
  end interface
  integer, parameter :: nblk = 101, reps = 20000
  integer :: ierr, b, i
  double precision :: tf(nblk), tc(nblk), r(nblk), t0, ds(1), dr(1)
  character :: sb(8), rb(8)

  call MPI_Init(ierr)
  ds = 1d0
  sb = 'x'
  do b = 1, nblk
    t0 = MPI_Wtime()
    do i = 1, reps
      call MPI_Send(sb, 8, MPI_CHARACTER, MPI_PROC_NULL, 1, MPI_COMM_WORLD, ierr)
      call MPI_Recv(rb, 8, MPI_CHARACTER, MPI_PROC_NULL, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    end do
    tf(b) = (MPI_Wtime() - t0) / reps / 2 * 1d9
    tc(b) = c_sendrecv(reps)
  end do
  call report('sendrecv')
  do b = 1, nblk
    tc(b) = c_allreduce(reps)
    t0 = MPI_Wtime()
    do i = 1, reps
      call MPI_Allreduce(ds, dr, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_SELF, ierr)
    end do
    tf(b) = (MPI_Wtime() - t0) / reps * 1d9
  end do
  call report('allreduce')
  call MPI_Finalize(ierr)
contains
  subroutine report(name)
    character(*), intent(in) :: name
    r = tf / tc
    print '(a,1x,f8.2,1x,f8.2,1x,f7.3)', name, median(tf), median(tc), median(r)
  end subroutine
#include "median.inc"
end program lang_cost
