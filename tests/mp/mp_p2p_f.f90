! mp_p2p_f: a Fortran (mpif.h) program's point-to-point under yod: a ring of blocking and
! nonblocking sends with wildcards, values checked. With MPICH its calls take bobcat's path
! (BOBCAT_STATS shows "p2p send" lines); Open MPI's Fortran bindings call PMPI_* directly, so there
! the whole program stays with the real MPI (and bobcat prints no statistics for it).
program mp_p2p_f
  implicit none
  include 'mpif.h'
  integer :: ierr, rank, nprocs, right, left, i, n, fails
  integer :: status(MPI_STATUS_SIZE), req(2)
  integer, parameter :: big = 3000
  double precision :: sbuf(big), rbuf(big)
  integer :: sv, rv

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  right = mod(rank + 1, nprocs)
  left = mod(rank - 1 + nprocs, nprocs)
  fails = 0

  do i = 1, 10
    sv = rank * 100 + i
    call MPI_Sendrecv(sv, 1, MPI_INTEGER, right, i, rv, 1, MPI_INTEGER, MPI_ANY_SOURCE, i, &
                      MPI_COMM_WORLD, status, ierr)
    if (rv /= left * 100 + i .or. status(MPI_SOURCE) /= left) fails = fails + 1
  end do

  do i = 1, big
    sbuf(i) = rank * 1.0d6 + i
  end do
  call MPI_Irecv(rbuf, big, MPI_DOUBLE_PRECISION, left, 7, MPI_COMM_WORLD, req(1), ierr)
  call MPI_Isend(sbuf, big, MPI_DOUBLE_PRECISION, right, 7, MPI_COMM_WORLD, req(2), ierr)
  call MPI_Waitall(2, req, MPI_STATUSES_IGNORE, ierr)
  do i = 1, big
    if (rbuf(i) /= left * 1.0d6 + i) fails = fails + 1
  end do
  call MPI_Get_count(status, MPI_INTEGER, n, ierr)
  if (n /= 1) fails = fails + 1

  call MPI_Allreduce(MPI_IN_PLACE, fails, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (fails == 0) then
      print '(a)', 'mp_p2p_f: ok'
    else
      print '(a,i0,a)', 'mp_p2p_f: ', fails, ' FAILED checks'
    end if
  end if
  call MPI_Finalize(ierr)
end program mp_p2p_f
