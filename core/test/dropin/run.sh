# The dropin suite, sourced by core/test/check.sh (which gives run, configs,
# is_openmpi, $BUILD, $MPIRUN): programs written against plain MPI -- C
# (built by make from core/test/dropin/*.c, nothing of lmpio in them),
# Fortran, Python (mpi4py) and, where installed, PnetCDF -- run with
# liblmpio-mpi.so preloaded, at 1, 2 and 4 ranks; each checks that lmpio
# served it.
dropin_lib=$BUILD/lib/liblmpio-mpi.so
dropin_tmp=$(mktemp -d)
dropin_dir=core/test/dropin
# mpirun passes the preload (and the directory for the test files) to the
# ranks only, not to itself.
if is_openmpi; then
  dropin_env="-x LD_PRELOAD=$dropin_lib -x TMPDIR=$dropin_tmp"
else
  dropin_env="-genv LD_PRELOAD $dropin_lib -genv TMPDIR $dropin_tmp"
fi
# The Fortran compiler of the MPI library of $MPICC (mpicc.mpich -> mpifort.mpich).
MPIFC=${MPIFC:-$(echo "${MPICC:-mpicc}" | sed 's/mpicc/mpifort/')}
mkdir -p "$BUILD/dropin-f"
run "dropin: Fortran program builds ($MPIFC)" sh -c '"$0" -O2 -J "$1" "$2" -o "$1/fortran" && echo "ok build fortran"' \
  "$MPIFC" "$BUILD/dropin-f" "$dropin_dir/fortran.f90"

# PnetCDF, where its header is installed for this MPI (Debian's
# libpnetcdf-dev is built against Open MPI).
rm -f "$BUILD/dropin-pnc/netcdf"
if is_openmpi && printf '#include <pnetcdf.h>\n' | "${MPICC:-mpicc}" -x c -E - >/dev/null 2>&1; then
  mkdir -p "$BUILD/dropin-pnc"
  run "dropin: PnetCDF program builds" sh -c '"$0" -std=c11 -O2 "$2" -o "$1/netcdf" -lpnetcdf && echo "ok build pnetcdf"' \
    "${MPICC:-mpicc}" "$BUILD/dropin-pnc" "$dropin_dir/pnetcdf/netcdf.c"
fi

configs | grep -v "btl self,tcp" > "$log.cfg"
while read -r cfg; do
  for t in "$BUILD"/dropin/* "$BUILD/dropin-f/fortran" "$BUILD/dropin-pnc/netcdf"; do
    [ -x "$t" ] || continue
    case $(basename "$t") in
    fatal)
      # Aborts the job, with lmpio's detailed message on stderr.
      # shellcheck disable=SC2086
      run "dropin fatal [$cfg]" sh -c '"$@" > "$0" 2>&1; rc=$?
        if [ "$rc" -ne 0 ] && grep -q "MPI_File_read_at failed, MPI_ERRORS_ARE_FATAL: lmpio_file_read_at: .*MPI_MODE_WRONLY (MPI_ERR_ACCESS" "$0"
        then echo "ok MPI_ERRORS_ARE_FATAL aborts with the message (exit status $rc)"
        else echo "not ok MPI_ERRORS_ARE_FATAL aborts with the message (exit status $rc)"; cat "$0"; fi' \
        "$log.out" "$MPIRUN" $cfg $dropin_env "$t" ;;
    fatal_wait)
      # The same through MPI_Wait: the file's handler, not MPI_COMM_WORLD's.
      # shellcheck disable=SC2086
      run "dropin fatal_wait [$cfg]" sh -c '"$@" > "$0" 2>&1; rc=$?
        if [ "$rc" -ne 0 ] && grep -q "MPI_\(Wait\|File_iwrite_at\) failed, MPI_ERRORS_ARE_FATAL: lmpio_file_iwrite_at: .*MPI_ERR_NO_SPACE" "$0"
        then echo "ok MPI_ERRORS_ARE_FATAL on a file aborts at MPI_Wait with the message (exit status $rc)"
        else echo "not ok MPI_ERRORS_ARE_FATAL on a file aborts at MPI_Wait with the message (exit status $rc)"; cat "$0"; fi' \
        "$log.out" "$MPIRUN" $cfg $dropin_env "$t" ;;
    *)
      # shellcheck disable=SC2086
      run "dropin $(basename "$t") [$cfg]" "$MPIRUN" $cfg $dropin_env "$t" ;;
    esac
  done
  # Debian's mpi4py is built against Open MPI.
  if is_openmpi; then
    # shellcheck disable=SC2086
    run "dropin mpi4py [$cfg]" "$MPIRUN" $cfg $dropin_env /usr/bin/python3 "$dropin_dir/mpi4py_test.py"
  fi
done < "$log.cfg"
rm -rf "$log.cfg" "$log.out" "$dropin_tmp"
