#!/bin/sh
# make check-dropin SUITE=<dir>: the MPI-IO tests of MPICH's test suite
# (test/mpi/io of pmodels/mpich, with test/mpi/util and test/mpi/include
# beside it), from a copy whose path is given -- never part of lmpio --,
# built with $MPICC and run twice: on the MPI library's own MPI-IO, and on
# lmpio through liblmpio-mpi.so.  Judged as MPICH's runtests judges: exit
# status 0 and "No Errors" in the output.  Prints one table row per test.
# SUITE is the test/mpi directory or a directory that holds test/mpi.
# MPI4PY=<dir> (a copy of mpi4py's test/ directory, of the version of the
# installed mpi4py) adds its test_file.py and test_io.py at 1, 2 and 4
# ranks, judged by exit status 0 and unittest's "OK".
set -u
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
MPICC=${MPICC:-mpicc}
MPIRUN=${MPIRUN:-mpirun}
TIMEOUT=${LMPIO_TEST_TIMEOUT:-180}
suite=${SUITE:?give SUITE=<dir of MPICH test/mpi>}
[ -d "$suite/test/mpi/io" ] && suite=$suite/test/mpi
[ -f "$suite/io/testlist.in" ] || { echo "no io/testlist.in under $suite" >&2; exit 2; }
lib=$BUILD/lib/liblmpio-mpi.so
out=$BUILD/peer-mpich
mkdir -p "$out/gen" "$out/bin" "$out/run"

# What MPICH's configure would generate for these tests.
cat > "$out/gen/mpitestconf.h" <<'H'
#define HAVE_STDARG_H 1
#define HAVE_STRING_H 1
#define HAVE_UNISTD_H 1
#define HAVE_SYS_TIME_H 1
#define HAVE_SYS_RESOURCE_H 1
#define HAVE_GETRUSAGE 1
#define HAVE_MPI_INIT_THREAD 1
#define HAVE_MPI_WIN_CREATE 1
#define THREAD_PACKAGE_NAME THREAD_PACKAGE_POSIX
H
: > "$out/gen/mtest_mpix.h"
cflags="-O2 -w -I$out/gen -I$suite/include"
if ! $MPICC $cflags -c "$suite/util/mtest.c" -o "$out/bin/mtest.o" ||
   ! $MPICC $cflags -c "$suite/util/mtest_common.c" -o "$out/bin/mtest_common.o" ||
   ! $MPICC $cflags -c "$suite/util/mtest_thread.c" -o "$out/bin/mtest_thread.o"; then
  echo "cannot build MPICH's test utilities" >&2; exit 2
fi

if "$MPIRUN" --version 2>/dev/null | grep -q "Open MPI"; then
  launch="--oversubscribe"; preload="-x LD_PRELOAD=$lib"
else
  launch=""; preload="-genv LD_PRELOAD $lib"
fi

# judge LOG RC: PASS when runtests would pass it.
judge() { if [ "$2" -eq 0 ] && grep -q "No Errors" "$1"; then echo PASS; else echo "FAIL($2)"; fi; }

printf '| %-28s | %2s | %-12s | %-12s |\n' test np "own MPI-IO" lmpio
printf '|%s|%s|%s|%s|\n' ------------------------------ ---- -------------- --------------
own_pass=0 lmpio_pass=0 total=0 regress=""
grep -v '^#' "$suite/io/testlist.in" | while read -r name np rest; do
  [ -n "$name" ] || continue
  args=""
  for w in $rest; do
    case $w in
    arg=*) args="$args ${w#arg=}" ;;
    -*) args="$args $w" ;;
    esac
  done
  label=$name${args:+ $(echo $args)}
  if ! $MPICC $cflags "$suite/io/$name.c" "$out/bin/mtest.o" "$out/bin/mtest_common.o" "$out/bin/mtest_thread.o" -o "$out/bin/$name" -lm -lpthread \
      > "$out/bin/$name.build" 2>&1; then
    printf '| %-28s | %2s | %-12s | %-12s |\n' "$label" "$np" "no build" "no build"
    continue
  fi
  res=""
  for mode in own lmpio; do
    dir=$out/run/$name-$mode
    rm -rf "$dir"; mkdir -p "$dir"
    env=""; [ "$mode" = lmpio ] && env=$preload
    # shellcheck disable=SC2086
    (cd "$dir" && timeout -k 10 "$TIMEOUT" "$MPIRUN" $launch -n "$np" $env "$out/bin/$name" $args \
      > "$out/run/$name-$mode.log" 2>&1 < /dev/null)
    rc=$?
    res="$res $(judge "$out/run/$name-$mode.log" "$rc")"
    rm -rf "$dir"
  done
  set -- $res
  printf '| %-28s | %2s | %-12s | %-12s |\n' "$label" "$np" "$1" "$2"
done
if [ -n "${MPI4PY:-}" ]; then
  for t in test_file test_io; do
    for np in 1 2 4; do
      res=""
      for mode in own lmpio; do
        dir=$out/run/$t-$np-$mode
        rm -rf "$dir"; mkdir -p "$dir"
        env=""; [ "$mode" = lmpio ] && env=$preload
        # shellcheck disable=SC2086
        (cd "$dir" && timeout -k 10 "$TIMEOUT" "$MPIRUN" $launch -n "$np" $env /usr/bin/python3 "$MPI4PY/$t.py" \
          > "$out/run/$t-$np-$mode.log" 2>&1 < /dev/null)
        rc=$?
        if [ "$rc" -eq 0 ] && grep -q "^OK" "$out/run/$t-$np-$mode.log"; then res="$res PASS"; else res="$res FAIL($rc)"; fi
        rm -rf "$dir"
      done
      set -- $res
      printf '| %-28s | %2s | %-12s | %-12s |\n' "mpi4py $t.py" "$np" "$1" "$2"
    done
  done
fi
echo "(logs: $out/run/NAME-own.log, NAME-lmpio.log)"
