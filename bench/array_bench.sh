#!/bin/sh
# bench/array_bench.sh — Lua arrays against numpy and mpi4py (issue 20).
#
#   sh bench/array_bench.sh          (after `make all`: needs build/lua/lmpio.so;
#                                     python3 with numpy and mpi4py for the other side)
#
# Runs bench/array_bench.lua (and bench/array_bench.py when python3 can
# import numpy and mpi4py): the parts loop and ops in one rank, then the
# histogram job of the issue at each rank count, and prints the best times
# side by side.  Environment (and those of array_bench.lua):
#   LMPIO_ARRAY_BENCH_RANKS   "1 2 4" (the job)
#   LMPIO_ARRAY_BENCH_JOB_MB  1024 (the job's file, written once by the Lua side)
#   LMPIO_ARRAY_BENCH_FILE    /dev/shm/lmpio-array-bench.dat (removed at the end)
#   LMPIO_ARRAY_BENCH_N       10^7 doubles (loop, ops)
#   LMPIO_ARRAY_BENCH_PYTHON  /usr/bin/python3
#   BUILD, MPIRUN, LUA        as in the Makefile
# `sh bench/array_bench.sh --report` prints the table of the last run again
# (from $BUILD/bench/array_bench.results).
# Every launch has --bind-to none: Open MPI binds ranks to cores by default,
# and on a shared machine the core it picks may be busy (loop ran 4 times
# slower bound than unbound here).
# Speed is only printed, never asserted; the exit status is 1 when a run
# failed or the two sides counted different histograms.
set -u
BUILD=${BUILD:-build}
MPIRUN=${MPIRUN:-mpirun}
LUA=${LUA:-lua5.4}
PY=${LMPIO_ARRAY_BENCH_PYTHON:-/usr/bin/python3}
RANKS=${LMPIO_ARRAY_BENCH_RANKS:-"1 2 4"}
FILE=${LMPIO_ARRAY_BENCH_FILE:-/dev/shm/lmpio-array-bench.dat}
OUT=${LMPIO_ARRAY_BENCH_OUT:-$BUILD/bench/array_bench.results}
HERE=$(dirname "$0")
export LMPIO_ARRAY_BENCH_FILE="$FILE"
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
LUA_CPATH_5_4="$BUILD/lua/?.so;;"
export LUA_CPATH_5_4
if [ ! -f "$BUILD/lua/lmpio.so" ]; then
  echo "array_bench.sh: $BUILD/lua/lmpio.so is not built (make all)" >&2
  exit 1
fi
python=1
if ! "$PY" -c 'import numpy, mpi4py' 2>/dev/null; then
  echo "array_bench.sh: $PY cannot import numpy and mpi4py (apt-get install python3-numpy python3-mpi4py): Lua side only" >&2
  python=0
fi
# The table of the results in $OUT.
report() {
  awk '
/^RESULT / {
  delete f
  for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
  k = f["ranks"] SUBSEP f["test"]
  sec[k, f["side"]] = f["sec"]; ns[k, f["side"]] = f["ns"]; chk[k, f["side"]] = f["check"]
  if (!(k in seen)) { seen[k] = 1; order[++n] = k }
}
END {
  printf "\n%-6s %-20s %12s %10s %12s %10s %8s\n", "ranks", "test", "Lua s", "ns/elem", "numpy s", "ns/elem", "Lua/np"
  bad = 0
  for (i = 1; i <= n; i++) {
    k = order[i]; split(k, kk, SUBSEP)
    l = sec[k, "lua"]; p = sec[k, "numpy"]
    r = (l != "" && p != "" && p > 0) ? sprintf("%.2f", l / p) : "-"
    printf "%-6s %-20s %12s %10s %12s %10s %8s\n", kk[1], kk[2], l == "" ? "-" : l, ns[k, "lua"] == "" ? "-" : ns[k, "lua"], \
           p == "" ? "-" : p, ns[k, "numpy"] == "" ? "-" : ns[k, "numpy"], r
    if (kk[2] == "job_bulk" && chk[k, "numpy"] != "" && chk[k, "lua"] != chk[k, "numpy"]) {
      printf "       histograms differ: lua %s, numpy %s\n", chk[k, "lua"], chk[k, "numpy"]; bad = 1
    }
  }
  exit bad
}' "$OUT"
}
if [ "${1:-}" = "--report" ]; then # only the table of an earlier run
  report
  exit
fi

mkdir -p "$(dirname "$OUT")"
: > "$OUT"
status=0
run() { # ranks command...
  np=$1
  shift
  if ! timeout 1200 "$MPIRUN" --oversubscribe --bind-to none -n "$np" "$@" < /dev/null > "$OUT.tmp" 2>&1; then
    echo "array_bench.sh: '$*' at $np ranks failed" >&2
    status=1
  fi
  sed "s/^RESULT /RESULT ranks=$np /" "$OUT.tmp" | tee -a "$OUT"
  rm -f "$OUT.tmp"
}
run 1 "$LUA" "$HERE/array_bench.lua" make loop ops
[ "$python" = 1 ] && run 1 "$PY" "$HERE/array_bench.py" loop ops
for np in $RANKS; do
  run "$np" "$LUA" "$HERE/array_bench.lua" job
  [ "$python" = 1 ] && run "$np" "$PY" "$HERE/array_bench.py" job
done
rm -f "$FILE"

report || status=1
exit $status
