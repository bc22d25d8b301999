#!/bin/bash
# make check-public: the regression gate of the drop-in.  Public test suites
# -- never part of lmpio: each is a copy whose path is given -- built with
# $MPICC into $BUILD/public/ and run, program by program, three ways:
#   lmpio  liblmpio-mpi.so preloaded into the ranks,
#   ompio  --mca io ompio,
#   romio  --mca io romio321,
# each run judged by its suite's own rule.  A run that passes on a peer and
# fails on lmpio is a regression; the script exits 1 when there is one.
# doc/dropin.md says how to get each copy and what the output means.
#
# Suites and the variable that names their copy (a suite runs when its
# variable is set):
#   mpich    MPICH_SRC=      pmodels/mpich (its test/mpi, or a dir holding it)
#   romio    ROMIO_TESTS=    src/mpi/romio/test of pmodels/mpich (default:
#                            MPICH_SRC's, when it has one)
#   mts      MPI_TEST_SUITE= open-mpi/mpi-test-suite, its IO class
#   pnetcdf  PNETCDF_SRC=    Parallel-NetCDF/PnetCDF: its tests and examples/C
#   ior      IOR_SRC=        hpc/ior, a fixed set of MPIIO runs
#   hdf5     HDF5_SRC=       HDF5's source package (Debian's), its testpar
#   mpi4py   MPI4PY=         mpi4py's test/ (test_file.py, test_io.py)
# SUITES="romio mts" runs a subset of those given, ONLY="file_info io_*"
# only the tests whose name matches one of the shell patterns, BACKENDS=
# fewer ways.  PUBLIC_TIMEOUT (600 s) bounds each run; MTS_TIMEOUT (120 s)
# each mpi-test-suite run.  Runs are sequential, each in a fresh temporary
# directory; logs go to $BUILD/public/logs/SUITE/TEST.BACKEND.log.
set -u
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
MPICC=${MPICC:-mpicc}
MPIRUN=${MPIRUN:-mpirun}
TIMEOUT=${PUBLIC_TIMEOUT:-600}
MTS_TIMEOUT=${MTS_TIMEOUT:-120}
BACKENDS=${BACKENDS:-lmpio ompio romio}
ONLY=${ONLY:-}
NICE="nice -n 10"
lib=$BUILD/lib/liblmpio-mpi.so
pub=$BUILD/public
logs=$pub/logs
[ -f "$lib" ] || { echo "public_suites: $lib is not built (make lib)" >&2; exit 2; }
"$MPIRUN" --version 2>/dev/null | grep -q "Open MPI" ||
  { echo "public_suites: needs Open MPI's mpirun (OMPIO and ROMIO are the peers)" >&2; exit 2; }
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
abs() { (cd "$1" 2>/dev/null && pwd); }

: "${MPICH_SRC:=}" "${ROMIO_TESTS:=}" "${MPI_TEST_SUITE:=}" "${PNETCDF_SRC:=}" "${IOR_SRC:=}" "${HDF5_SRC:=}" "${MPI4PY:=}"
if [ -z "$ROMIO_TESTS" ] && [ -n "$MPICH_SRC" ] && [ -d "$MPICH_SRC/src/mpi/romio/test" ]; then
  ROMIO_TESTS=$MPICH_SRC/src/mpi/romio/test
fi
given=""
for s in mpich:MPICH_SRC romio:ROMIO_TESTS mts:MPI_TEST_SUITE pnetcdf:PNETCDF_SRC ior:IOR_SRC hdf5:HDF5_SRC mpi4py:MPI4PY; do
  v=${s#*:}
  if [ -n "${!v}" ]; then
    d=$(abs "${!v}") || { echo "public_suites: $v=${!v} is not a directory" >&2; exit 2; }
    printf -v "$v" %s "$d"
    given="$given ${s%%:*}"
  fi
done
SUITES=${SUITES:-$given}
[ -n "$(echo $SUITES)" ] || { echo "public_suites: give at least one suite's path (MPICH_SRC=, ROMIO_TESTS=, ...)" >&2; exit 2; }

# selected NAME [LABEL]: the test's name or label matches a pattern of
# ONLY (or ONLY is empty).
selected() {
  [ -z "$ONLY" ] && return 0
  local p n
  for p in $ONLY; do
    for n in "$@"; do
      # shellcheck disable=SC2254
      case $n in $p) return 0 ;; esac
    done
  done
  return 1
}

# launch BACKEND: the mpirun options that pick it.
launch() {
  case $1 in
  lmpio) echo "-x LD_PRELOAD=$lib" ;;
  ompio) echo "--mca io ompio" ;;
  romio) echo "--mca io romio321" ;;
  esac
}

# Judges: judge_X LOG RC DIR prints PASS or FAIL(why) by suite X's rule.
# MPICH's runtests (its TestNormal), also for ROMIO's tests, which print
# the same " No Errors": exit 0, one "No Errors" line (or "Test Skipped")
# and no other output, on stdout or stderr -- a warning is a failure.
judge_noerrors() {
  local v
  v=$(grep -v '^== ' "$1" | awk '
    /^[ \t]*No [Ee]rrors[ \t]*$/ && !ne { ne = 1; next }
    /^[ \t]*Test Skipped[ \t]*$/ { sk = 1; next }
    /(FORTRAN STOP|requesting checkpoint|checkpoint completed)[ \t]*$/ { next }
    { stray = 1 }
    END { if (!ne && !sk) print "no-No-Errors"; else if (stray) print "output"; else print "ok" }')
  if [ "$v" = ok ] && [ "$2" -eq 0 ]; then echo PASS
  elif [ "$2" -ne 0 ]; then echo "FAIL($2)"
  else echo "FAIL($v)"; fi
}
# mpi-test-suite: exit 0 and its summary counting no failed test.
judge_mts() {
  if [ "$2" -ne 0 ]; then echo "FAIL($2)"; elif grep -q "Number of failed tests: 0" "$1"; then echo PASS; else echo "FAIL(output)"; fi
}
# PnetCDF (its parallel_run.sh): exit 0, no "fail" verdict, the "pass" line
# (or "skip") of a test/ program (examples/ run with -q print none), and ncvalidator
# finds every file the run left valid.
judge_pnetcdf() {
  local f bad=""
  if [ "$2" -ne 0 ]; then echo "FAIL($2)"; return; fi
  if grep -q "fail with" "$1" || { [ -n "$PNC_PASSLINE" ] && ! grep -q "pass\|skip" "$1"; }; then echo "FAIL(output)"; return; fi
  for f in "$3"/*.nc*; do
    [ -f "$f" ] || continue
    echo "== ncvalidator -q ${f##*/}" >> "$1"
    "$PNC_VALIDATOR" -q "$f" >> "$1" 2>&1 || bad=1
  done
  if [ -n "$bad" ]; then echo "FAIL(ncvalidator)"; else echo PASS; fi
}
# IOR (its testing/test-lib.sh takes the exit status): exit 0 and no ERROR.
judge_ior() {
  if [ "$2" -ne 0 ]; then echo "FAIL($2)"; elif grep -q "ERROR" "$1"; then echo "FAIL(output)"; else echo PASS; fi
}
# HDF5's testpar (make check): the exit status.
judge_exit() { if [ "$2" -eq 0 ]; then echo PASS; else echo "FAIL($2)"; fi; }
# mpi4py: exit 0 and unittest's "OK".
judge_unittest() {
  if [ "$2" -ne 0 ]; then echo "FAIL($2)"; elif grep -q "^OK" "$1"; then echo PASS; else echo "FAIL(output)"; fi
}

# run SUITE LABEL NP JUDGE PROGRAM ARGS...: the program on each backend.
# PRE (a command line, run before in the same directory on the same backend,
# not judged) prepares what the program reads; TLIMIT overrides TIMEOUT.
PRE=""
TLIMIT=""
summary=$pub/summary.txt
run() {
  local suite=$1 label=$2 np=$3 judge=$4 b dir log rc v t0 over="" row=""
  shift 4
  [ "$np" -gt 2 ] && over=--oversubscribe
  local name=${label// /_}
  name=${name//\//_}
  mkdir -p "$logs/$suite"
  for b in $BACKENDS; do
    dir=$(mktemp -d "${TMPDIR:-/tmp}/lmpio-public.XXXXXX")
    log=$logs/$suite/$name.$b.log
    : > "$log"
    if [ -n "$PRE" ]; then
      # shellcheck disable=SC2046,SC2086
      (cd "$dir" && timeout -k 10 "${TLIMIT:-$TIMEOUT}" "$MPIRUN" $over -n "$np" $(launch "$b") $PRE \
        >> "$log" 2>&1 < /dev/null)
    fi
    t0=$(date +%s)
    # shellcheck disable=SC2046
    (cd "$dir" && timeout -k 10 "${TLIMIT:-$TIMEOUT}" "$MPIRUN" $over -n "$np" $(launch "$b") "$@" \
      >> "$log" 2>&1 < /dev/null)
    rc=$?
    echo "== exit status $rc after $(( $(date +%s) - t0 )) s" >> "$log"
    [ "$rc" -eq 124 ] && echo "== timeout after ${TLIMIT:-$TIMEOUT} s" >> "$log"
    v=$("$judge" "$log" "$rc" "$dir")
    [ "$rc" -eq 124 ] && v="TIMEOUT"
    row="$row $b=$v"
    rm -rf "$dir"
  done
  PRE="" TLIMIT=""
  echo "$suite|$label|$np|$row" >> "$summary"
  row_print "$suite" "$label" "$np" "$row"
}

# row_print SUITE LABEL NP "b=V ...": one table row; the last column says
# REGRESSION when lmpio fails where a peer passes.
row_print() {
  local cells="" b v lm="" peer="" kv
  for b in $BACKENDS; do
    v=-
    for kv in $4; do [ "${kv%%=*}" = "$b" ] && v=${kv#*=}; done
    cells="$cells$(printf ' %-14s |' "$v")"
    if [ "$b" = lmpio ]; then lm=$v; elif [ "$v" = PASS ]; then peer=1; fi
  done
  local mark=""
  [ -n "$peer" ] && [ -n "$lm" ] && [ "$lm" != PASS ] && mark=REGRESSION
  printf '| %-7s | %-34s | %2s |%s %-10s |\n' "$1" "$2" "$3" "$cells" "$mark"
}

header() {
  local b cells="" line=""
  for b in $BACKENDS; do cells="$cells$(printf ' %-14s |' "$b")"; line="$line----------------|"; done
  printf '| %-7s | %-34s | %2s |%s %-10s |\n' suite test np "$cells" ""
  printf '|---------|------------------------------------|----|%s------------|\n' "$line"
}

# nobuild SUITE LABEL NP: a program that did not build (its log says why).
nobuild() { row_print "$1" "$2" "$3" "$(for b in $BACKENDS; do printf '%s=nobuild ' "$b"; done)"; echo "$1|$2|$3|nobuild" >> "$summary"; }

# autotools_copy SRC DEST: a copy of a source tree to configure in DEST/src
# (git copies have no configure; the given copy stays untouched).
autotools_copy() {
  if [ ! -x "$2/src/configure" ]; then
    rm -rf "$2/src"; mkdir -p "$2"; cp -a "$1" "$2/src" || return 1
    (cd "$2/src" && [ -x configure ] || $NICE autoreconf -fi) > "$2/autoreconf.log" 2>&1 || return 1
  fi
}

# --- MPICH's test/mpi/io: the tests and rank counts of io/testlist.in.
suite_mpich() {
  local t=$MPICH_SRC out=$pub/mpich name np rest args w label
  [ -d "$t/test/mpi/io" ] && t=$t/test/mpi
  [ -f "$t/io/testlist.in" ] || { echo "mpich: no io/testlist.in under $t" >&2; return 1; }
  mkdir -p "$out/gen" "$out/bin"
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
  local cflags="-O2 -w -I$out/gen -I$t/include" u
  for u in mtest mtest_common mtest_thread; do
    $NICE $MPICC $cflags -c "$t/util/$u.c" -o "$out/bin/$u.o" || { echo "mpich: cannot build $u.c" >&2; return 1; }
  done
  grep -v '^#' "$t/io/testlist.in" | while read -r name np rest; do
    [ -n "$name" ] || continue
    args=""
    for w in $rest; do
      case $w in arg=*) args="$args ${w#arg=}" ;; -*) args="$args $w" ;; esac
    done
    label=$name${args:+ $(echo $args)}
    selected "$name" || continue
    if ! $NICE $MPICC $cflags "$t/io/$name.c" "$out/bin/mtest.o" "$out/bin/mtest_common.o" "$out/bin/mtest_thread.o" \
        -o "$out/bin/$name" -lm -lpthread > "$out/bin/$name.build" 2>&1; then
      nobuild mpich "$label" "$np"; continue
    fi
    # shellcheck disable=SC2086
    run mpich "$label" "$np" judge_noerrors "$out/bin/$name" $args
  done
}

# --- ROMIO's tests: the programs of its Makefile.am, with the ranks and
# arguments of its parallel_run.sh.in, skipping what that skips.
suite_romio() {
  local t=$ROMIO_TESTS out=$pub/romio name src np args
  [ -f "$t/Makefile.am" ] || { echo "romio: no Makefile.am in $t" >&2; return 1; }
  mkdir -p "$out/gen" "$out/bin"
  # What ROMIO's configure defines on Linux that the tests look at.
  echo "#define ROMIO_UFS 1" > "$out/gen/romioconf.h"
  for name in $(sed -n '/^CTESTS *=/,/[^\\]$/p' "$t/Makefile.am" | sed 's/CTESTS *=//; s/\\//g'); do
    case $name in perf|coll_perf|large_array|large_file|external32) continue ;; esac
    selected "$name" || continue
    case $name in noncontig|i_noncontig|noncontig_coll|types_with_zeros|fstype_prefix) np=2 ;;
    syshints|error|status) np=1 ;; *) np=4 ;; esac
    case $name in aggregation1) args="-h -f romio_test_$name" ;;
    syshints) args="-fname $t/test_hintfile" ;; *) args="-fname romio_test_$name" ;; esac
    src=$t/$name.c
    if [ ! -f "$src" ]; then
      # misc.c.in: configure puts the printf length of MPI_Offset.
      sed 's/@LL@/lld/g' "$t/$name.c.in" > "$out/gen/$name.c"; src=$out/gen/$name.c
    fi
    if ! $NICE $MPICC -O2 -w -I"$out/gen" "$src" -o "$out/bin/$name" -lm > "$out/bin/$name.build" 2>&1; then
      nobuild romio "$name" "$np"; continue
    fi
    # shellcheck disable=SC2086
    run romio "$name" "$np" judge_noerrors "$out/bin/$name" $args
  done
}

# --- mpi-test-suite: one run of its binary per test of the IO class, at
# 4 ranks, all communicators and datatypes (its defaults).
suite_mts() {
  local out=$pub/mts name
  if [ ! -x "$out/src/mpi_test_suite" ]; then
    autotools_copy "$MPI_TEST_SUITE" "$out" || { echo "mts: autoreconf failed ($out/autoreconf.log)" >&2; return 1; }
    # Its partitioned point-to-point tests need MPI 4 (Open MPI 4.1 is 3.1).
    local mpi4=""
    printf '#include <mpi.h>\n#if MPI_VERSION < 4\n#error MPI 3\n#endif\n' | $MPICC -x c -E - > /dev/null 2>&1 ||
      mpi4=--disable-mpi4-partitioned-p2p
    (cd "$out/src" && $NICE ./configure CC="$MPICC" $mpi4 && make clean && $NICE make) > "$out/build.log" 2>&1 ||
      { echo "mts: build failed ($out/build.log)" >&2; return 1; }
  fi
  # The IO class's tests, as tst_tests.c names them.
  sed -n 's/^ *{TST_CLASS_IO, *"\([^"]*\)".*/\1/p' "$out/src/tst_tests.c" | while read -r name; do
    selected "$name" || continue
    TLIMIT=$MTS_TIMEOUT run mts "$name" 4 judge_mts "$out/src/mpi_test_suite" -t "$name"
  done
}

# --- PnetCDF: built whole (it needs its own configured tree), C tests and
# examples at 4 ranks as its ptest4 runs them, ncvalidator on the output.
suite_pnetcdf() {
  local out=$pub/pnetcdf dir name prog args src
  if [ ! -x "$out/src/src/utils/ncvalidator/ncvalidator" ] || [ ! -f "$out/src/built-tests" ]; then
    autotools_copy "$PNETCDF_SRC" "$out" || { echo "pnetcdf: autoreconf failed ($out/autoreconf.log)" >&2; return 1; }
    (cd "$out/src" && $NICE ./configure --disable-fortran --disable-cxx --disable-shared MPICC="$MPICC" &&
      $NICE make -j2 && $NICE make -j2 tests && touch built-tests) > "$out/build.log" 2>&1 ||
      { echo "pnetcdf: build failed ($out/build.log)" >&2; return 1; }
  fi
  PNC_VALIDATOR=$out/src/src/utils/ncvalidator/ncvalidator
  for dir in test/C test/cdf_format test/header test/testcases test/nonblocking examples/C; do
    src=$PNETCDF_SRC/$dir
    # shellcheck disable=SC2016
    for name in $(make -s -C "$out/src/$dir" -f Makefile -f - print_programs 2>/dev/null <<'M'
print_programs:
	@echo $(check_PROGRAMS)
M
    ); do
      prog=$out/src/$dir/$name
      [ -x "$prog" ] || continue
      selected "$name" "${dir#test/}/$name" || continue
      PNC_PASSLINE=1
      args="$name.nc"
      case $dir:$name in
      examples/C:get_vara) PRE="$out/src/$dir/put_vara -q put_vara.nc"; args="-q put_vara.nc"; PNC_PASSLINE="" ;;
      examples/C:*) args="-q $name.nc"; PNC_PASSLINE="" ;;
      *:pres_temp_4D_rd) PRE="$out/src/$dir/pres_temp_4D_wr pres_temp_4D.nc"; args=pres_temp_4D.nc ;;
      *:pres_temp_4D_wr) args=pres_temp_4D.nc ;;
      *:tst_version) args="" ;;
      *:test_inq_format|*:tst_corrupt) args=$src ;;
      *:tst_open_cdf5) args=$src/bad_begin.nc5 ;;
      esac
      # The first setting of PnetCDF's parallel_run.sh (no safe mode, the
      # MPI-IO driver, no intra-node aggregation) unless PNETCDF_HINTS is set.
      # shellcheck disable=SC2086
      PNETCDF_HINTS=${PNETCDF_HINTS-"cb_nodes=2;nc_num_aggrs_per_node=0;nc_data_move_chunk_size=100"} PNETCDF_SAFE_MODE=0 \
        run pnetcdf "${dir#test/}/$name" 4 judge_pnetcdf "$prog" $args
    done
  done
}

# --- IOR: the patterns of its testing/basic-tests.sh through the MPIIO
# backend, independent and collective, each writing then checking (-W -R).
suite_ior() {
  local out=$pub/ior label np opts
  if [ ! -x "$out/src/src/ior" ]; then
    autotools_copy "$IOR_SRC" "$out" || { echo "ior: autoreconf failed ($out/autoreconf.log)" >&2; return 1; }
    (cd "$out/src" && $NICE ./configure CC="$MPICC" MPICC="$MPICC" && $NICE make -j2) > "$out/build.log" 2>&1 ||
      { echo "ior: build failed ($out/build.log)" >&2; return 1; }
  fi
  while read -r label np opts; do
    selected "$label" || continue
    # shellcheck disable=SC2086
    run ior "$label" "$np" judge_ior "$out/src/src/ior" -a MPIIO $opts -o ior.dat
  done <<'L'
shared-indep      2 -w -r -W -R -C -k -e -i1 -m -t 100k -b 200k
shared-coll       2 -w -r -W -R -C -k -e -i1 -m -t 100k -b 200k -c
strided-indep     2 -w -r -W -R -C -e -i1 -t 100k -b 200k -s 10
strided-coll      2 -w -r -W -R -C -e -i1 -t 100k -b 200k -s 10 -c
random-read       2 -w -r -e -i1 -t 100k -b 200k -s 10 -z
fpp-indep         2 -w -r -W -R -C -F -e -i2 -m -t 100k -b 200k
strided-coll-4    4 -w -r -W -R -C -e -i1 -t 47008 -b 47008 -s 20 -c
strided-coll-3    3 -w -r -W -R -C -Q 1 -e -i1 -t 100k -b 200k -s 4 -c
hints-coll        2 -w -r -W -R -C -e -i1 -t 100k -b 200k -s 4 -c --mpiio.showHints
L
}

# --- HDF5's testpar: built from the source package (its tests need the
# configured tree and libh5test), each program of TEST_PROG_PARA at
# HDF5_NP (4) ranks; t_prestart reads what t_pshutdown left.
suite_hdf5() {
  local out=$pub/hdf5 name progs
  progs=$(sed -n 's/^TEST_PROG_PARA *= *//p' "$HDF5_SRC/testpar/Makefile.am")
  mkdir -p "$out/build"
  if [ ! -f "$out/build/testpar/built" ]; then
    (cd "$out/build" && { [ -f Makefile ] || $NICE "$HDF5_SRC/configure" CC="$MPICC" --enable-parallel --disable-shared \
        --disable-fortran --disable-cxx --disable-java --disable-hl --without-zlib --without-szlib; } &&
      $NICE make -j2 -C src && $NICE make -j2 -C test libh5test.la && $NICE make -j2 -C testpar $progs &&
      touch testpar/built) > "$out/build.log" 2>&1 || { echo "hdf5: build failed ($out/build.log)" >&2; return 1; }
  fi
  for name in $progs; do
    selected "$name" || continue
    [ "$name" = t_prestart ] && PRE="$out/build/testpar/t_pshutdown"
    run hdf5 "$name" "${HDF5_NP:-4}" judge_exit "$out/build/testpar/$name"
  done
}

# --- mpi4py's test_file.py and test_io.py at 1, 2 and 4 ranks.
suite_mpi4py() {
  local t np
  for t in test_file test_io; do
    selected "$t" || continue
    for np in 1 2 4; do run mpi4py "$t.py" "$np" judge_unittest /usr/bin/python3 "$MPI4PY/$t.py"; done
  done
}

mkdir -p "$logs"
: > "$summary"
times=""
header
for s in $SUITES; do
  case " $given " in *" $s "*) ;; *) echo "public_suites: $s: its path is not given" >&2; continue ;; esac
  start=$(date +%s)
  "suite_$s" || echo "| $s: not run (see above)" >&2
  times="$times $s=$(( $(date +%s) - start ))s"
done

# The summary: per suite, the runs that pass on each backend, then the
# regressions (a peer passes, lmpio does not).
echo
echo "summary (logs: $logs/SUITE/TEST.BACKEND.log; times:$times)"
regress=0
for s in $SUITES; do
  grep -q "^$s|" "$summary" || continue
  line="$s: $(grep -c "^$s|" "$summary") programs;"
  for b in $BACKENDS; do line="$line $b $(grep "^$s|" "$summary" | grep -c " $b=PASS") pass,"; done
  echo "${line%,}"
done
while IFS='|' read -r s label np row; do
  lm="" peer=""
  for kv in $row; do
    case $kv in lmpio=PASS) lm=ok ;; lmpio=*) lm=bad ;; *=PASS) peer=${peer:+$peer,}${kv%%=*} ;; esac
  done
  if [ "$lm" = bad ] && [ -n "$peer" ]; then
    [ "$regress" -eq 0 ] && echo "regressions (pass on a peer, fail on lmpio):"
    regress=$((regress + 1))
    echo "  $s $label (np $np): $row"
  fi
done < "$summary"
echo "$regress regressions"
[ "$regress" -eq 0 ]
