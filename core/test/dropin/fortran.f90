! The MPI-IO chapter from Fortran (the mpi module of the MPI library),
! served by lmpio when liblmpio-mpi.so is preloaded: the library's Fortran
! bindings reach the C PMPI_File_* symbols, which the drop-in provides.
module handlers
  implicit none
  integer :: calls = 0, last_class = -1, last_file = -1
contains
  subroutine file_handler(fh, code)
    use mpi
    integer :: fh, code, cls, ierr
    calls = calls + 1
    call MPI_Error_class(code, cls, ierr)
    last_class = cls
    last_file = fh
  end subroutine file_handler
end module handlers

program dropin_fortran
  use mpi
  use handlers
  implicit none
  integer, parameter :: n = 10
  integer :: ierr, rank, nprocs, fh, i, count, eh, nkeys
  integer :: info, flag_int
  integer :: status(MPI_STATUS_SIZE)
  integer :: out(n), in(n)
  integer(kind=MPI_OFFSET_KIND) :: off, fsize
  character(len=MPI_MAX_INFO_VAL) :: value
  character(len=256) :: path, dir
  logical :: flag
  integer :: pid

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  call get_environment_variable("TMPDIR", dir)
  if (len_trim(dir) == 0) dir = "/tmp"
  pid = getpid()
  call MPI_Bcast(pid, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  write(path, '(a,a,i0,a)') trim(dir), "/lmpio-dropin-fortran-", pid, ".dat"

  call MPI_File_open(MPI_COMM_WORLD, path, ior(MPI_MODE_CREATE, MPI_MODE_RDWR), MPI_INFO_NULL, fh, ierr)
  call check("open from Fortran", ierr == MPI_SUCCESS .and. fh /= MPI_FILE_NULL)
  call MPI_File_get_info(fh, info, ierr)
  call MPI_Info_get(info, "lmpio_version", MPI_MAX_INFO_VAL, value, flag, ierr)
  call MPI_Info_get_nkeys(info, nkeys, ierr)
  call MPI_Info_free(info, ierr)
  call check("served by lmpio (lmpio_version in get_info)", flag)

  do i = 1, n
    out(i) = rank * 100 + i
  end do
  off = rank * n * 4
  call MPI_File_write_at_all(fh, off, out, n, MPI_INTEGER, status, ierr)
  call MPI_Get_count(status, MPI_INTEGER, count, ierr)
  call check("write_at_all, status count", ierr == MPI_SUCCESS .and. count == n)
  call MPI_File_get_size(fh, fsize, ierr)
  call check("get_size", fsize == nprocs * n * 4)
  in = 0
  call MPI_File_read_at_all(fh, off, in, n, MPI_INTEGER, status, ierr)
  call check("read_at_all back", ierr == MPI_SUCCESS .and. all(in == out))

  call MPI_File_seek_shared(fh, 0_MPI_OFFSET_KIND, MPI_SEEK_SET, ierr)
  in = 0
  call MPI_File_read_ordered(fh, in, n, MPI_INTEGER, status, ierr)
  call check("read_ordered", ierr == MPI_SUCCESS .and. all(in == out))

  ! An error handler made in Fortran, called with the Fortran handle.
  call MPI_File_create_errhandler(file_handler, eh, ierr)
  call MPI_File_set_errhandler(fh, eh, ierr)
  call MPI_File_seek(fh, -1_MPI_OFFSET_KIND, MPI_SEEK_SET, ierr)
  call check("Fortran handler called with class and file", calls == 1 .and. &
             last_class == MPI_ERR_ARG .and. last_file == fh .and. ierr /= MPI_SUCCESS)
  call MPI_Errhandler_free(eh, ierr)

  call MPI_File_close(fh, ierr)
  call check("close", ierr == MPI_SUCCESS .and. fh == MPI_FILE_NULL)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (rank == 0) call MPI_File_delete(path, MPI_INFO_NULL, ierr)
  call MPI_Bcast(ierr, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, flag_int)
  call check("delete", ierr == MPI_SUCCESS)
  call MPI_Finalize(ierr)

contains
  subroutine check(name, cond)
    character(len=*), intent(in) :: name
    logical, intent(in) :: cond
    logical :: all_ok
    integer :: e
    call MPI_Allreduce(cond, all_ok, 1, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD, e)
    if (rank == 0) then
      if (all_ok) then
        print '(a,a)', "ok ", name
      else
        print '(a,a)', "not ok ", name
      end if
    end if
  end subroutine check
end program dropin_fortran
