! mp_fort08_large: MPI 4.0's large-count forms from `use mpi_f08` on MPICH, whose module calls the
! `_large_` procedures of libmpichfort for them (mpi_send_f08ts_large_ ...); the layer defines those
! for the routines it handles (src/pmpi/lang/pmpi_f08.h). Counts of kind MPI_COUNT_KIND through
! blocking and nonblocking point-to-point and Sendrecv, MPI_Get_count's large form, and a large-count
! datatype constructor. Values checked by the program; run_fort.sh (p2p) checks the path taken.
program mp_fort08_large
  use mpi_f08
  implicit none
  integer, parameter :: n = 3000
  integer(kind=MPI_COUNT_KIND) :: cnt, got
  integer :: rank, np, right, left, i, fails
  double precision, asynchronous :: sbuf(n), rbuf(n)
  type(MPI_Status) :: st
  type(MPI_Request) :: req
  type(MPI_Datatype) :: pair

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, np)
  right = mod(rank + 1, np)
  left = mod(rank - 1 + np, np)
  fails = 0
  cnt = n
  sbuf = [(rank * 1.0d4 + i, i = 1, n)]

  ! Isend and Recv, then MPI_Get_count into a count of kind MPI_COUNT_KIND
  rbuf = -1
  call MPI_Isend(sbuf, cnt, MPI_DOUBLE_PRECISION, right, 1, MPI_COMM_WORLD, req)
  call MPI_Recv(rbuf, cnt, MPI_DOUBLE_PRECISION, left, 1, MPI_COMM_WORLD, st)
  call MPI_Wait(req, MPI_STATUS_IGNORE)
  call MPI_Get_count(st, MPI_DOUBLE_PRECISION, got)
  call check(got == n .and. st%MPI_SOURCE == left, 'isend/recv count')
  call check(all(rbuf == [(left * 1.0d4 + i, i = 1, n)]), 'isend/recv values')

  ! Irecv and Send
  rbuf = -1
  call MPI_Irecv(rbuf, cnt, MPI_DOUBLE_PRECISION, left, 2, MPI_COMM_WORLD, req)
  call MPI_Send(sbuf, cnt, MPI_DOUBLE_PRECISION, right, 2, MPI_COMM_WORLD)
  call MPI_Wait(req, st)
  call check(st%MPI_TAG == 2 .and. all(rbuf == [(left * 1.0d4 + i, i = 1, n)]), 'irecv/send')

  ! Sendrecv
  rbuf = -1
  call MPI_Sendrecv(sbuf, cnt, MPI_DOUBLE_PRECISION, right, 3, rbuf, cnt, MPI_DOUBLE_PRECISION, left, 3, &
                    MPI_COMM_WORLD, st)
  call check(all(rbuf == [(left * 1.0d4 + i, i = 1, n)]), 'sendrecv')

  ! a datatype made by the large-count constructor, sent with a default-kind count
  call MPI_Type_contiguous(2_MPI_COUNT_KIND, MPI_DOUBLE_PRECISION, pair)
  call MPI_Type_commit(pair)
  rbuf = -1
  call MPI_Irecv(rbuf, n / 2, pair, left, 4, MPI_COMM_WORLD, req)
  call MPI_Send(sbuf, n / 2, pair, right, 4, MPI_COMM_WORLD)
  call MPI_Wait(req, st)
  call MPI_Get_count(st, pair, got)
  call check(got == n / 2 .and. all(rbuf == [(left * 1.0d4 + i, i = 1, n)]), 'contiguous pair')
  call MPI_Type_free(pair)

  call MPI_Allreduce(MPI_IN_PLACE, fails, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) then
    if (fails == 0) then
      print '(a)', 'mp_fort08_large: ok'
    else
      print '(a,i0,a)', 'mp_fort08_large: ', fails, ' FAILED checks'
    end if
  end if
  call MPI_Finalize()

contains

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(*), intent(in) :: what
    if (.not. ok) then
      fails = fails + 1
      print '(a,i0,2a)', 'mp_fort08_large: rank ', rank, ': FAILED ', what
    end if
  end subroutine check
end program mp_fort08_large
