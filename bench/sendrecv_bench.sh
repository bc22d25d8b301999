#!/bin/sh
# bench/sendrecv_bench.sh: comm:sendrecv into a preallocated array against
# mpi4py's Sendrecv (numpy arrays), 120 doubles around a ring, at 2 and 4
# ranks (4 ranks oversubscribe a 2-core machine), best of 3 each side;
# prints the times and their ratio.  Environment: RANKS ("2 4"), N (120),
# ITERS (20000), BUILD, MPIRUN, LUA, PYTHON (/usr/bin/python3, with numpy and
# mpi4py).
set -u
BUILD=${BUILD:-build}
MPIRUN=${MPIRUN:-mpirun}
LUA=${LUA:-lua5.4}
RANKS=${RANKS:-"2 4"}
N=${N:-120}
ITERS=${ITERS:-20000}
HERE=$(dirname "$0")
PY=${PYTHON:-/usr/bin/python3}
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export LUA_CPATH_5_4="$BUILD/lua/?.so;;"
if ! "$PY" -c 'import numpy, mpi4py' 2>/dev/null; then
  echo "$(basename "$0"): $PY cannot import numpy, mpi4py (apt-get install python3-numpy python3-mpi4py): skipped" >&2
  exit 0
fi
for p in $RANKS; do
  l=$(timeout 300 "$MPIRUN" --oversubscribe --bind-to none -n "$p" "$LUA" "$HERE/sendrecv_bench.lua" "$N" "$ITERS" |
      sed -n 's/.*us=//p')
  m=$(timeout 300 "$MPIRUN" --oversubscribe --bind-to none -n "$p" "$PY" "$HERE/sendrecv_bench.py" "$N" "$ITERS" |
      sed -n 's/.*us=//p')
  awk -v p="$p" -v n="$N" -v l="$l" -v m="$m" 'BEGIN {
    r = (m > 0) ? l / m : 0
    printf "sendrecv %d doubles, %d ranks: lmpio %s us, mpi4py %s us, lmpio/mpi4py %.2f\n", n, p, l, m, r }'
done
