! mp_fort: a Fortran program's point-to-point and collectives under yod, in the `mpif.h` binding
! (default) or `use mpi` (compiled with -DUSE_MPI_MODULE); mp_fort08.f90 is the same in mpi_f08.
! Every value is checked by the program; run_fort.sh checks that BOBCAT_STATS shows bobcat's path.
! Covered: blocking ring with wildcards and statuses, MPI_Get_count, nonblocking with Waitall,
! Waitany (1-based index), Waitsome, Testall, persistent requests restarted (Startall), a message
! past the eager size, Probe/Iprobe, Mprobe/Mrecv, Sendrecv_replace, MPI_STATUS_IGNORE, collectives
! with MPI_IN_PLACE (Allreduce, Reduce, Allgather, Gather), Bcast, Alltoall(v), Comm_split, and
! one-sided communication: MPI_Win_create over a Fortran array and MPI_Win_allocate (its base pointer
! an address-sized integer), their flavour and base attributes, Put, Get and Accumulate between
! fences, Fetch_and_op and Compare_and_swap under passive locks.
program mp_fort
  use, intrinsic :: iso_c_binding, only: c_f_pointer, c_null_ptr
#ifdef USE_MPI_MODULE
  use mpi
  implicit none
#else
  implicit none
  include 'mpif.h'
#endif
  integer, parameter :: big = 5000, nper = 3
  integer :: ierr, rank, np, right, left, i, k, n, fails, idx, outc, color, sub, srank, ssize
  integer :: st(MPI_STATUS_SIZE), sts(MPI_STATUS_SIZE, 4), req(4), preq(2), msg, inds(4)
  integer :: sv, rv, iv(4)
  logical :: flag
  double precision :: sbuf(big), rbuf(big)
  integer, allocatable :: a(:), b(:), cnt(:), dsp(:)
  ! window memory: volatile, as the MPI changes it behind the compiler's back (MPI 4.0 19.1.17)
  integer, volatile :: wbuf(4)
  integer, pointer, volatile :: ap(:)
  integer :: win, acc, one, fetched, casnew, casold, casres
  integer(kind=MPI_ADDRESS_KIND) :: wbytes, abase, aval, addr
  logical :: aflag

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  right = mod(rank + 1, np)
  left = mod(rank - 1 + np, np)
  fails = 0

  ! blocking ring, wildcard source and tag
  do i = 1, 10
    sv = rank * 100 + i
    call MPI_Send(sv, 1, MPI_INTEGER, right, i, MPI_COMM_WORLD, ierr)
    call MPI_Recv(rv, 1, MPI_INTEGER, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, st, ierr)
    call check(rv == left * 100 + i .and. st(MPI_SOURCE) == left .and. st(MPI_TAG) == i, 'ring')
    call MPI_Get_count(st, MPI_INTEGER, n, ierr)
    call check(n == 1, 'get_count')
  end do

  ! nonblocking, past the eager size, Waitall with statuses
  do i = 1, big
    sbuf(i) = rank * 1.0d6 + i
  end do
  call MPI_Irecv(rbuf, big, MPI_DOUBLE_PRECISION, left, 7, MPI_COMM_WORLD, req(1), ierr)
  call MPI_Isend(sbuf, big, MPI_DOUBLE_PRECISION, right, 7, MPI_COMM_WORLD, req(2), ierr)
  call MPI_Waitall(2, req, sts, ierr)
  call check(req(1) == MPI_REQUEST_NULL .and. req(2) == MPI_REQUEST_NULL, 'waitall nulls')
  call check(sts(MPI_SOURCE, 1) == left .and. sts(MPI_TAG, 1) == 7, 'waitall status')
  call MPI_Get_count(sts(:, 1), MPI_DOUBLE_PRECISION, n, ierr)
  call check(n == big, 'waitall count')
  do i = 1, big
    if (rbuf(i) /= left * 1.0d6 + i) fails = fails + 1
  end do

  ! Waitany: the index is 1-based (either may come first: the left rank may have sent both)
  iv = -1
  call MPI_Irecv(iv(1), 1, MPI_INTEGER, left, 21, MPI_COMM_WORLD, req(1), ierr)
  call MPI_Irecv(iv(2), 1, MPI_INTEGER, left, 22, MPI_COMM_WORLD, req(2), ierr)
  call MPI_Send(rank + 22, 1, MPI_INTEGER, right, 22, MPI_COMM_WORLD, ierr)
  call MPI_Waitany(2, req, idx, st, ierr)
  call check(idx >= 1 .and. idx <= 2, 'waitany index')
  if (idx >= 1 .and. idx <= 2) then
    call check(iv(idx) == left + 20 + idx .and. st(MPI_TAG) == 20 + idx, 'waitany value')
    call check(req(idx) == MPI_REQUEST_NULL .and. req(3 - idx) /= MPI_REQUEST_NULL, 'waitany nulls')
  end if
  call MPI_Send(rank + 21, 1, MPI_INTEGER, right, 21, MPI_COMM_WORLD, ierr)
  call MPI_Waitsome(2, req, outc, inds, sts, ierr)
  call check(outc == 1 .and. inds(1) == 3 - idx .and. iv(3 - idx) == left + 23 - idx, 'waitsome')
  call check(sts(MPI_TAG, 1) == 23 - idx, 'waitsome status')
  call MPI_Waitsome(2, req, outc, inds, sts, ierr)
  call check(outc == MPI_UNDEFINED, 'waitsome undefined')

  ! Testall until done
  call MPI_Irecv(rv, 1, MPI_INTEGER, left, 30, MPI_COMM_WORLD, req(1), ierr)
  call MPI_Isend(rank, 1, MPI_INTEGER, right, 30, MPI_COMM_WORLD, req(2), ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_Testall(2, req, flag, MPI_STATUSES_IGNORE, ierr)
  end do
  call check(rv == left, 'testall')

  ! persistent requests, restarted
  call MPI_Recv_init(rv, 1, MPI_INTEGER, left, 40, MPI_COMM_WORLD, preq(1), ierr)
  call MPI_Send_init(sv, 1, MPI_INTEGER, right, 40, MPI_COMM_WORLD, preq(2), ierr)
  do k = 1, 5
    sv = rank * 10 + k
    call MPI_Startall(2, preq, ierr)
    call MPI_Waitall(2, preq, MPI_STATUSES_IGNORE, ierr)
    call check(rv == left * 10 + k, 'persistent')
  end do
  call MPI_Request_free(preq(1), ierr)
  call MPI_Request_free(preq(2), ierr)
  call check(preq(1) == MPI_REQUEST_NULL, 'request_free')

  ! Probe, Iprobe, Mprobe/Mrecv, MPI_STATUS_IGNORE
  call MPI_Send(rank, 1, MPI_INTEGER, right, 50, MPI_COMM_WORLD, ierr)
  call MPI_Probe(MPI_ANY_SOURCE, 50, MPI_COMM_WORLD, st, ierr)
  call check(st(MPI_SOURCE) == left, 'probe')
  call MPI_Recv(rv, 1, MPI_INTEGER, st(MPI_SOURCE), 50, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  call check(rv == left, 'probe recv')
  call MPI_Send(rank + 1, 1, MPI_INTEGER, right, 51, MPI_COMM_WORLD, ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_Iprobe(left, 51, MPI_COMM_WORLD, flag, st, ierr)
  end do
  call MPI_Mprobe(left, 51, MPI_COMM_WORLD, msg, st, ierr)
  call MPI_Mrecv(rv, 1, MPI_INTEGER, msg, st, ierr)
  call check(rv == left + 1 .and. msg == MPI_MESSAGE_NULL .and. st(MPI_TAG) == 51, 'mprobe')

  ! Sendrecv_replace
  rv = rank
  call MPI_Sendrecv_replace(rv, 1, MPI_INTEGER, right, 60, left, 60, MPI_COMM_WORLD, st, ierr)
  call check(rv == left, 'sendrecv_replace')

  ! collectives with MPI_IN_PLACE
  allocate(a(np), b(np * nper), cnt(np), dsp(np))
  n = rank + 1
  call MPI_Allreduce(MPI_IN_PLACE, n, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(n == np * (np + 1) / 2, 'allreduce in_place')
  n = rank + 1
  if (rank == 0) then
    call MPI_Reduce(MPI_IN_PLACE, n, 1, MPI_INTEGER, MPI_MAX, 0, MPI_COMM_WORLD, ierr)
    call check(n == np, 'reduce in_place')
  else
    call MPI_Reduce(n, n, 1, MPI_INTEGER, MPI_MAX, 0, MPI_COMM_WORLD, ierr)
  end if
  a = -1
  a(rank + 1) = rank * 7
  call MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, a, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  do i = 1, np
    call check(a(i) == (i - 1) * 7, 'allgather in_place')
  end do
  a = -1
  a(rank + 1) = rank * 3
  if (rank == 0) then
    call MPI_Gather(MPI_IN_PLACE, 1, MPI_INTEGER, a, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    do i = 1, np
      call check(a(i) == (i - 1) * 3, 'gather in_place')
    end do
  else
    call MPI_Gather(a(rank + 1), 1, MPI_INTEGER, a, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  end if
  n = 0
  if (rank == 0) n = 4242
  call MPI_Bcast(n, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call check(n == 4242, 'bcast')
  do i = 1, np
    a(i) = rank * 1000 + i - 1
  end do
  call MPI_Alltoall(a, 1, MPI_INTEGER, b, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  do i = 1, np
    call check(b(i) == (i - 1) * 1000 + rank, 'alltoall')
  end do
  do i = 1, np
    cnt(i) = 1
    dsp(i) = (i - 1) * nper
  end do
  b = -1
  call MPI_Alltoallv(a, cnt, [(i - 1, i = 1, np)], MPI_INTEGER, b, cnt, dsp, MPI_INTEGER, &
                     MPI_COMM_WORLD, ierr)
  do i = 1, np
    call check(b(dsp(i) + 1) == (i - 1) * 1000 + rank, 'alltoallv')
  end do
  call MPI_Barrier(MPI_COMM_WORLD, ierr)

  ! Comm_split: evens and odds, reversed order
  color = mod(rank, 2)
  call MPI_Comm_split(MPI_COMM_WORLD, color, -rank, sub, ierr)
  call MPI_Comm_rank(sub, srank, ierr)
  call MPI_Comm_size(sub, ssize, ierr)
  call check(ssize == (np + 1 - color) / 2, 'split size')
  n = rank
  call MPI_Allreduce(MPI_IN_PLACE, n, 1, MPI_INTEGER, MPI_MAX, sub, ierr)
  call check(n == np - 1 - mod(np - 1 - color, 2), 'split allreduce')
  if (ssize > 1) then
    call MPI_Sendrecv(rank, 1, MPI_INTEGER, mod(srank + 1, ssize), 70, rv, 1, MPI_INTEGER, &
                      MPI_ANY_SOURCE, 70, sub, st, ierr)
    call check(st(MPI_SOURCE) == mod(srank - 1 + ssize, ssize) .and. mod(rv, 2) == color, 'split sendrecv')
  end if
  call MPI_Comm_free(sub, ierr)
  call check(sub == MPI_COMM_NULL, 'comm_free')

  ! one-sided: a window over a Fortran array, (-1, 0, 0, -1) on every rank
  wbuf = (/ -1, 0, 0, -1 /)
  wbytes = 16
  call MPI_Win_create(wbuf, wbytes, 4, MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
  call MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, aval, aflag, ierr)
  call check(aflag .and. aval == MPI_WIN_FLAVOR_CREATE, 'win_create flavor')
  call MPI_Win_get_attr(win, MPI_WIN_BASE, aval, aflag, ierr)
  call MPI_Get_address(wbuf, addr, ierr)
  call check(aflag .and. aval == addr, 'win_create base')
  call MPI_Win_fence(0, win, ierr)
  sv = rank + 1000
  acc = rank + 1
  call MPI_Put(sv, 1, MPI_INTEGER, right, 0_MPI_ADDRESS_KIND, 1, MPI_INTEGER, win, ierr)
  call MPI_Accumulate(acc, 1, MPI_INTEGER, 0, 1_MPI_ADDRESS_KIND, 1, MPI_INTEGER, MPI_SUM, win, ierr)
  call MPI_Win_fence(0, win, ierr)
  call check(wbuf(1) == left + 1000, 'rma put')
  if (rank == 0) call check(wbuf(2) == np * (np + 1) / 2, 'rma accumulate')
  call MPI_Get(rv, 1, MPI_INTEGER, left, 0_MPI_ADDRESS_KIND, 1, MPI_INTEGER, win, ierr)
  call MPI_Win_fence(0, win, ierr)
  call check(rv == mod(left - 1 + np, np) + 1000, 'rma get')
  ! passive target on rank 0: a counter, and a compare-and-swap exactly one rank wins
  one = 1
  casnew = rank
  casold = -1
  call MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win, ierr)
  call MPI_Fetch_and_op(one, fetched, MPI_INTEGER, 0, 2_MPI_ADDRESS_KIND, MPI_SUM, win, ierr)
  call MPI_Compare_and_swap(casnew, casold, casres, MPI_INTEGER, 0, 3_MPI_ADDRESS_KIND, win, ierr)
  call MPI_Win_unlock(0, win, ierr)
  call check(fetched >= 0 .and. fetched < np, 'fetch_and_op')
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win, ierr)
  call MPI_Get(iv, 2, MPI_INTEGER, 0, 2_MPI_ADDRESS_KIND, 2, MPI_INTEGER, win, ierr)
  call MPI_Win_unlock(0, win, ierr)
  call check(iv(1) == np, 'fetch_and_op total')
  call check((casres == -1) .eqv. (iv(2) == rank), 'compare_and_swap winner')
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_Win_free(win, ierr)
  call check(win == MPI_WIN_NULL, 'win_free')
  ! a window the MPI allocates: its base an address-sized integer
  call MPI_Win_allocate(wbytes, 4, MPI_INFO_NULL, MPI_COMM_WORLD, abase, win, ierr)
  call c_f_pointer(transfer(abase, c_null_ptr), ap, (/ 4 /))
  ap = -5
  call MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, aval, aflag, ierr)
  call check(aflag .and. aval == MPI_WIN_FLAVOR_ALLOCATE, 'win_allocate flavor')
  call MPI_Win_get_attr(win, MPI_WIN_BASE, aval, aflag, ierr)
  call check(aflag .and. aval == abase, 'win_allocate base')
  call MPI_Win_fence(0, win, ierr)
  call MPI_Put(sv, 1, MPI_INTEGER, right, 1_MPI_ADDRESS_KIND, 1, MPI_INTEGER, win, ierr)
  call MPI_Win_fence(0, win, ierr)
  call check(ap(2) == left + 1000 .and. ap(1) == -5, 'win_allocate put')
  call MPI_Win_free(win, ierr)

  call MPI_Allreduce(MPI_IN_PLACE, fails, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (fails == 0) then
      print '(a,i0)', 'mp_fort: allreduce calls=', 3
      print '(a,i0)', 'mp_fort: rma puts=', 2
      ! routines the layer only passes through, counted in the account (on Open MPI through the
      ! layer's Fortran forwarders)
      print '(a)', 'mp_fort: pass Comm_size calls=2'
      print '(a)', 'mp_fort: pass Comm_rank calls=2'
      print '(a)', 'mp_fort: ok'
    else
      print '(a,i0,a)', 'mp_fort: ', fails, ' FAILED checks'
    end if
  end if
  call MPI_Finalize(ierr)

contains

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(*), intent(in) :: what
    if (.not. ok) then
      fails = fails + 1
      print '(a,i0,2a)', 'mp_fort: rank ', rank, ': FAILED ', what
    end if
  end subroutine check
end program mp_fort
