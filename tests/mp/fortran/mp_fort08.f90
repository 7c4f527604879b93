! mp_fort08: mp_fort.F90 in the `use mpi_f08` binding: the same point-to-point and collectives with
! derived-type handles and statuses and the optional ierror left out. Values checked by the program.
program mp_fort08
  use mpi_f08
  use, intrinsic :: iso_c_binding, only: c_ptr, c_f_pointer
  implicit none
  integer, parameter :: big = 5000, nper = 3
  character(len=MPI_MAX_LIBRARY_VERSION_STRING) :: lib
  character(len=4096) :: env
  logical :: idx0
  integer :: rank, np, right, left, i, k, n, fails, idx, outc, color, srank, ssize, inds(4)
  type(MPI_Status) :: st, sts(4)
  type(MPI_Request) :: req(4), preq(2)
  type(MPI_Message) :: msg
  type(MPI_Comm) :: sub
  integer :: sv
  integer, asynchronous :: rv, iv(4)
  logical :: flag
  double precision, asynchronous :: sbuf(big), rbuf(big)
  integer, parameter :: m = 7
  integer, asynchronous :: sec(2 * m), grid(3, m)
  integer, asynchronous :: wbuf(64)
  type(MPI_Win) :: win
  integer(kind=MPI_ADDRESS_KIND) :: disp, aval, addr
  type(c_ptr) :: abase
  integer, pointer, asynchronous :: ap(:)
  integer :: acc, one, fetched, casnew, casold, casres
  logical :: aflag
  integer, allocatable :: a(:), b(:), cnt(:), dsp(:)

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, np)
  right = mod(rank + 1, np)
  left = mod(rank - 1 + np, np)
  fails = 0
  ! MPICH 4.0's own mpi_f08 Waitany/Waitsome return 0-based indices (its bug: its mpif.h binding
  ! and Open MPI's are 1-based). bobcat's entry points for it are 1-based, so only a run of bare
  ! MPICH 4.0 (no libbobcat-mpich preloaded: idx0) takes the index checks below as 0-based.
  call MPI_Get_library_version(lib, n)
  call get_environment_variable('LD_PRELOAD', env)
  idx0 = index(lib, 'MPICH Version:' // achar(9) // '4.0') > 0 .and. index(env, 'libbobcat-mpich') == 0

  ! blocking ring, wildcard source and tag
  do i = 1, 10
    sv = rank * 100 + i
    call MPI_Send(sv, 1, MPI_INTEGER, right, i, MPI_COMM_WORLD)
    call MPI_Recv(rv, 1, MPI_INTEGER, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, st)
    call check(rv == left * 100 + i .and. st%MPI_SOURCE == left .and. st%MPI_TAG == i, 'ring')
    call MPI_Get_count(st, MPI_INTEGER, n)
    call check(n == 1, 'get_count')
  end do

  ! nonblocking, past the eager size, Waitall with statuses
  do i = 1, big
    sbuf(i) = rank * 1.0d6 + i
  end do
  call MPI_Irecv(rbuf, big, MPI_DOUBLE_PRECISION, left, 7, MPI_COMM_WORLD, req(1))
  call MPI_Isend(sbuf, big, MPI_DOUBLE_PRECISION, right, 7, MPI_COMM_WORLD, req(2))
  call MPI_Waitall(2, req, sts)
  call check(req(1) == MPI_REQUEST_NULL .and. req(2) == MPI_REQUEST_NULL, 'waitall nulls')
  call check(sts(1)%MPI_SOURCE == left .and. sts(1)%MPI_TAG == 7, 'waitall status')
  call MPI_Get_count(sts(1), MPI_DOUBLE_PRECISION, n)
  call check(n == big, 'waitall count')
  do i = 1, big
    if (rbuf(i) /= left * 1.0d6 + i) fails = fails + 1
  end do

  ! Waitany: the index is 1-based (either may come first: the left rank may have sent both)
  iv = -1
  call MPI_Irecv(iv(1), 1, MPI_INTEGER, left, 21, MPI_COMM_WORLD, req(1))
  call MPI_Irecv(iv(2), 1, MPI_INTEGER, left, 22, MPI_COMM_WORLD, req(2))
  call MPI_Send(rank + 22, 1, MPI_INTEGER, right, 22, MPI_COMM_WORLD)
  call MPI_Waitany(2, req, idx, st)
  if (idx0) idx = idx + 1
  call check(idx >= 1 .and. idx <= 2, 'waitany index')
  if (idx >= 1 .and. idx <= 2) then
    call check(iv(idx) == left + 20 + idx .and. st%MPI_TAG == 20 + idx, 'waitany value')
    call check(req(idx) == MPI_REQUEST_NULL .and. req(3 - idx) /= MPI_REQUEST_NULL, 'waitany nulls')
  end if
  call MPI_Send(rank + 21, 1, MPI_INTEGER, right, 21, MPI_COMM_WORLD)
  call MPI_Waitsome(2, req, outc, inds, sts)
  if (idx0) inds(1) = inds(1) + 1
  call check(outc == 1 .and. inds(1) == 3 - idx .and. iv(3 - idx) == left + 23 - idx, 'waitsome')
  call check(sts(1)%MPI_TAG == 23 - idx, 'waitsome status')
  call MPI_Waitsome(2, req, outc, inds, sts)
  call check(outc == MPI_UNDEFINED, 'waitsome undefined')

  ! Testall until done
  call MPI_Irecv(rv, 1, MPI_INTEGER, left, 30, MPI_COMM_WORLD, req(1))
  call MPI_Isend(rank, 1, MPI_INTEGER, right, 30, MPI_COMM_WORLD, req(2))
  flag = .false.
  do while (.not. flag)
    call MPI_Testall(2, req, flag, MPI_STATUSES_IGNORE)
  end do
  call check(rv == left, 'testall')

  ! persistent requests, restarted
  call MPI_Recv_init(rv, 1, MPI_INTEGER, left, 40, MPI_COMM_WORLD, preq(1))
  call MPI_Send_init(sv, 1, MPI_INTEGER, right, 40, MPI_COMM_WORLD, preq(2))
  do k = 1, 5
    sv = rank * 10 + k
    call MPI_Startall(2, preq)
    call MPI_Waitall(2, preq, MPI_STATUSES_IGNORE)
    call check(rv == left * 10 + k, 'persistent')
  end do
  call MPI_Request_free(preq(1))
  call MPI_Request_free(preq(2))
  call check(preq(1) == MPI_REQUEST_NULL, 'request_free')

  ! Probe, Iprobe, Mprobe/Mrecv, MPI_STATUS_IGNORE
  call MPI_Send(rank, 1, MPI_INTEGER, right, 50, MPI_COMM_WORLD)
  call MPI_Probe(MPI_ANY_SOURCE, 50, MPI_COMM_WORLD, st)
  call check(st%MPI_SOURCE == left, 'probe')
  call MPI_Recv(rv, 1, MPI_INTEGER, st%MPI_SOURCE, 50, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
  call check(rv == left, 'probe recv')
  call MPI_Send(rank + 1, 1, MPI_INTEGER, right, 51, MPI_COMM_WORLD)
  flag = .false.
  do while (.not. flag)
    call MPI_Iprobe(left, 51, MPI_COMM_WORLD, flag, st)
  end do
  call MPI_Mprobe(left, 51, MPI_COMM_WORLD, msg, st)
  call MPI_Mrecv(rv, 1, MPI_INTEGER, msg, st)
  call check(rv == left + 1 .and. msg == MPI_MESSAGE_NULL .and. st%MPI_TAG == 51, 'mprobe')

  ! Sendrecv_replace
  rv = rank
  call MPI_Sendrecv_replace(rv, 1, MPI_INTEGER, right, 60, left, 60, MPI_COMM_WORLD, st)
  call check(rv == left, 'sendrecv_replace')

  ! non-contiguous array sections as buffers: every other element, a row of a 2-D array; the
  ! elements between must stay untouched. Blocking on both MPIs (Open MPI's gfortran module makes a
  ! contiguous copy for the call); nonblocking only where the module passes the section itself
  ! (MPI_SUBARRAYS_SUPPORTED: MPICH), since a copy would be gone before the Wait.
  sec = -1
  do i = 1, m
    sec(2 * i - 1) = rank * 100 + i
  end do
  call MPI_Sendrecv_replace(sec(1:2 * m:2), m, MPI_INTEGER, right, 80, left, 80, MPI_COMM_WORLD, st)
  do i = 1, m
    call check(sec(2 * i - 1) == left * 100 + i .and. sec(2 * i) == -1, 'section sendrecv_replace')
  end do
  call MPI_Send(sec(1:2 * m:2), m, MPI_INTEGER, right, 81, MPI_COMM_WORLD)
  grid = -1
  call MPI_Recv(grid(2, :), m, MPI_INTEGER, left, 81, MPI_COMM_WORLD, st)
  call MPI_Get_count(st, MPI_INTEGER, n)
  call check(n == m .and. all(grid(1, :) == -1) .and. all(grid(3, :) == -1), 'section recv gaps')
  do i = 1, m
    call check(grid(2, i) == mod(left - 1 + np, np) * 100 + i, 'section recv')
  end do
  ! fewer items than the section holds: the first three elements only
  call MPI_Send(grid(2, :), 3, MPI_INTEGER, right, 82, MPI_COMM_WORLD)
  sec = -1
  call MPI_Recv(sec(2:2 * m:2), m, MPI_INTEGER, left, 82, MPI_COMM_WORLD, st)
  call MPI_Get_count(st, MPI_INTEGER, n)
  call check(n == 3 .and. all(sec(1:2 * m:2) == -1) .and. all(sec(8:2 * m:2) == -1), 'section partial')
  do i = 1, 3
    call check(sec(2 * i) == mod(left - 2 + 2 * np, np) * 100 + i, 'section partial value')
  end do
  if (MPI_SUBARRAYS_SUPPORTED) then
    grid = -1
    sec = -1
    do i = 1, m
      sec(2 * i) = rank * 10 + i
    end do
    call MPI_Irecv(grid(3, 2:m), m - 1, MPI_INTEGER, left, 83, MPI_COMM_WORLD, req(1))
    call MPI_Isend(sec(4:2 * m:2), m - 1, MPI_INTEGER, right, 83, MPI_COMM_WORLD, req(2))
    call MPI_Waitall(2, req, MPI_STATUSES_IGNORE)
    call check(all(grid(1:2, :) == -1) .and. grid(3, 1) == -1, 'section irecv gaps')
    do i = 2, m
      call check(grid(3, i) == left * 10 + i, 'section irecv')
    end do
  end if
  ! a collective into a section: Allreduce in place, Bcast (bare MPICH 4.0 refuses a reduction on
  ! a section: its f08 binding makes it an hvector datatype, which MPI_SUM rejects)
  if (.not. idx0) then
  grid = -1
  grid(1, :) = [(rank + i, i = 1, m)]
  call MPI_Allreduce(MPI_IN_PLACE, grid(1, :), m, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  do i = 1, m
    call check(grid(1, i) == np * (np - 1) / 2 + np * i .and. grid(2, i) == -1, 'section allreduce')
  end do
  if (rank == 0) grid(3, :) = [(40 + i, i = 1, m)]
  call MPI_Bcast(grid(3, :), m, MPI_INTEGER, 0, MPI_COMM_WORLD)
  call check(all(grid(3, :) == [(40 + i, i = 1, m)]) .and. all(grid(2, :) == -1), 'section bcast')
  end if

  ! collectives with MPI_IN_PLACE
  allocate(a(np), b(np * nper), cnt(np), dsp(np))
  n = rank + 1
  call MPI_Allreduce(MPI_IN_PLACE, n, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  call check(n == np * (np + 1) / 2, 'allreduce in_place')
  n = rank + 1
  if (rank == 0) then
    call MPI_Reduce(MPI_IN_PLACE, n, 1, MPI_INTEGER, MPI_MAX, 0, MPI_COMM_WORLD)
    call check(n == np, 'reduce in_place')
  else
    call MPI_Reduce(n, n, 1, MPI_INTEGER, MPI_MAX, 0, MPI_COMM_WORLD)
  end if
  a = -1
  a(rank + 1) = rank * 7
  call MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, a, 1, MPI_INTEGER, MPI_COMM_WORLD)
  do i = 1, np
    call check(a(i) == (i - 1) * 7, 'allgather in_place')
  end do
  a = -1
  a(rank + 1) = rank * 3
  if (rank == 0) then
    call MPI_Gather(MPI_IN_PLACE, 1, MPI_INTEGER, a, 1, MPI_INTEGER, 0, MPI_COMM_WORLD)
    do i = 1, np
      call check(a(i) == (i - 1) * 3, 'gather in_place')
    end do
  else
    call MPI_Gather(a(rank + 1), 1, MPI_INTEGER, a, 1, MPI_INTEGER, 0, MPI_COMM_WORLD)
  end if
  n = 0
  if (rank == 0) n = 4242
  call MPI_Bcast(n, 1, MPI_INTEGER, 0, MPI_COMM_WORLD)
  call check(n == 4242, 'bcast')
  do i = 1, np
    a(i) = rank * 1000 + i - 1
  end do
  call MPI_Alltoall(a, 1, MPI_INTEGER, b, 1, MPI_INTEGER, MPI_COMM_WORLD)
  do i = 1, np
    call check(b(i) == (i - 1) * 1000 + rank, 'alltoall')
  end do
  do i = 1, np
    cnt(i) = 1
    dsp(i) = (i - 1) * nper
  end do
  b = -1
  call MPI_Alltoallv(a, cnt, [(i - 1, i = 1, np)], MPI_INTEGER, b, cnt, dsp, MPI_INTEGER, &
                     MPI_COMM_WORLD)
  do i = 1, np
    call check(b(dsp(i) + 1) == (i - 1) * 1000 + rank, 'alltoallv')
  end do
  call MPI_Barrier(MPI_COMM_WORLD)

  ! one-sided between fences (the layer's MPI_Win_fence and MPI_Put since issue 26: counted in the
  ! RMA rows, not the account of pass-throughs)
  wbuf = -1
  call MPI_Win_create(wbuf, int(4 * size(wbuf), MPI_ADDRESS_KIND), 4, MPI_INFO_NULL, MPI_COMM_WORLD, win)
  call MPI_Win_fence(0, win)
  disp = rank
  call MPI_Put(rank + 500, 1, MPI_INTEGER, right, disp, 1, MPI_INTEGER, win)
  call MPI_Win_fence(0, win)
  call check(wbuf(left + 1) == left + 500 .and. count(wbuf /= -1) == 1, 'put between fences')
  call MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, aval, aflag)
  call check(aflag .and. aval == MPI_WIN_FLAVOR_CREATE, 'win_create flavor')
  call MPI_Win_get_attr(win, MPI_WIN_BASE, aval, aflag)
  call MPI_Get_address(wbuf, addr)
  call check(aflag .and. aval == addr, 'win_create base')
  call MPI_Win_free(win)

  ! a window the MPI allocates, its base a TYPE(C_PTR): Accumulate and Get between fences, then a
  ! counter (Fetch_and_op) and a compare-and-swap exactly one rank wins, under passive locks
  call MPI_Win_allocate(16_MPI_ADDRESS_KIND, 4, MPI_INFO_NULL, MPI_COMM_WORLD, abase, win)
  call c_f_pointer(abase, ap, [4])
  ap = [-1, 0, 0, -1]
  call MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, aval, aflag)
  call check(aflag .and. aval == MPI_WIN_FLAVOR_ALLOCATE, 'win_allocate flavor')
  call MPI_Win_fence(0, win)
  acc = rank + 1
  sv = rank + 1000
  call MPI_Put(sv, 1, MPI_INTEGER, right, 0_MPI_ADDRESS_KIND, 1, MPI_INTEGER, win)
  call MPI_Accumulate(acc, 1, MPI_INTEGER, 0, 1_MPI_ADDRESS_KIND, 1, MPI_INTEGER, MPI_SUM, win)
  call MPI_Win_fence(0, win)
  call MPI_F_sync_reg(ap)
  call check(ap(1) == left + 1000, 'win_allocate put')
  if (rank == 0) call check(ap(2) == np * (np + 1) / 2, 'win_allocate accumulate')
  call MPI_Get(rv, 1, MPI_INTEGER, left, 0_MPI_ADDRESS_KIND, 1, MPI_INTEGER, win)
  call MPI_Win_fence(0, win)
  call check(rv == mod(left - 1 + np, np) + 1000, 'win_allocate get')
  one = 1
  casnew = rank
  casold = -1
  call MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win)
  call MPI_Fetch_and_op(one, fetched, MPI_INTEGER, 0, 2_MPI_ADDRESS_KIND, MPI_SUM, win)
  call MPI_Compare_and_swap(casnew, casold, casres, MPI_INTEGER, 0, 3_MPI_ADDRESS_KIND, win)
  call MPI_Win_unlock(0, win)
  call check(fetched >= 0 .and. fetched < np, 'fetch_and_op')
  call MPI_Barrier(MPI_COMM_WORLD)
  call MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win)
  call MPI_Get(iv, 2, MPI_INTEGER, 0, 2_MPI_ADDRESS_KIND, 2, MPI_INTEGER, win)
  call MPI_Win_unlock(0, win)
  call check(iv(1) == np, 'fetch_and_op total')
  call check((casres == -1) .eqv. (iv(2) == rank), 'compare_and_swap winner')
  call MPI_Barrier(MPI_COMM_WORLD)
  call MPI_Win_free(win)

  ! Comm_split: evens and odds, reversed order
  color = mod(rank, 2)
  call MPI_Comm_split(MPI_COMM_WORLD, color, -rank, sub)
  call MPI_Comm_rank(sub, srank)
  call MPI_Comm_size(sub, ssize)
  call check(ssize == (np + 1 - color) / 2, 'split size')
  n = rank
  call MPI_Allreduce(MPI_IN_PLACE, n, 1, MPI_INTEGER, MPI_MAX, sub)
  call check(n == np - 1 - mod(np - 1 - color, 2), 'split allreduce')
  if (ssize > 1) then
    call MPI_Sendrecv(rank, 1, MPI_INTEGER, mod(srank + 1, ssize), 70, rv, 1, MPI_INTEGER, &
                      MPI_ANY_SOURCE, 70, sub, st)
    call check(st%MPI_SOURCE == mod(srank - 1 + ssize, ssize) .and. mod(rv, 2) == color, 'split sendrecv')
  end if
  call MPI_Comm_free(sub)
  call check(sub == MPI_COMM_NULL, 'comm_free')

  call MPI_Allreduce(MPI_IN_PLACE, fails, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) then
    if (fails == 0) then
      ! for run_fort.sh, which finds them all on bobcat's path in BOBCAT_STATS
      print '(a,i0)', 'mp_fort08: allreduce calls=', merge(3, 4, idx0)
      print '(a,i0)', 'mp_fort08: rma puts=', 2
      print '(a)', 'mp_fort08: pass Comm_size calls=2'
      print '(a)', 'mp_fort08: pass Comm_rank calls=2'
      print '(a)', 'mp_fort08: ok'
    else
      print '(a,i0,a)', 'mp_fort08: ', fails, ' FAILED checks'
    end if
  end if
  call MPI_Finalize()

contains

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(*), intent(in) :: what
    if (.not. ok) then
      fails = fails + 1
      print '(a,i0,2a)', 'mp_fort08: rank ', rank, ': FAILED ', what
    end if
  end subroutine check
end program mp_fort08
