#!/bin/sh
# bench/heat_bench.sh [NY NX STEPS]: examples/heat.lua against the same
# computation in numpy (bench/heat_bench.py), 480 x 360 x 50 by default:
# the steps' time of each (best of 3), the CPU time of each whole process
# (best of 3; lmpio's includes MPI_Init), and the largest relative
# difference of the two files at 1, 2 and 4 ranks.
# Environment: BUILD, MPIRUN, LUA, PYTHON (/usr/bin/python3 with numpy).
set -u
BUILD=${BUILD:-build}
MPIRUN=${MPIRUN:-mpirun}
LUA=${LUA:-lua5.4}
PY=${PYTHON:-/usr/bin/python3}
NY=${1:-480} NX=${2:-360} STEPS=${3:-50}
HERE=$(dirname "$0")
D=$(mktemp -d "${TMPDIR:-/tmp}/lmpio-heat.XXXXXX") || exit 1
trap 'rm -rf "$D"' EXIT
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export LUA_CPATH_5_4="$BUILD/lua/?.so;;"
if ! "$PY" -c 'import numpy' 2>/dev/null; then
  echo "$(basename "$0"): $PY cannot import numpy (apt-get install python3-numpy python3-mpi4py): skipped" >&2
  exit 0
fi
best() { sort -g | head -n 1; }
for k in 1 2 3; do
  LMPIO_HEAT_TIME=1 /usr/bin/time -f "cpu %U %S" "$LUA" "$HERE/../examples/heat.lua" "$NY" "$NX" "$STEPS" "$D/l.dat" \
    >"$D/l$k.out" 2>"$D/l$k.time"
  /usr/bin/time -f "cpu %U %S" "$PY" "$HERE/heat_bench.py" "$NY" "$NX" "$STEPS" "$D/n.dat" >"$D/n$k.out" 2>"$D/n$k.time"
done
ls=$(cat "$D"/l?.out | sed -n 's/.*sec=//p' | best)
ns=$(cat "$D"/n?.out | sed -n 's/.*sec=//p' | best)
lc=$(awk '/^cpu/ {print $2 + $3}' "$D"/l?.time | best)
nc=$(awk '/^cpu/ {print $2 + $3}' "$D"/n?.time | best)
awk -v a="$ls" -v b="$ns" -v c="$lc" -v d="$nc" -v s="$NY x $NX x $STEPS" 'BEGIN {
  printf "heat %s, 1 rank: steps lmpio %.4f s, numpy %.4f s (%.2f); process CPU lmpio %.2f s, numpy %.2f s (%.2f)\n",
    s, a, b, a / b, c, d, c / d }'
for p in 1 2 4; do
  timeout 300 "$MPIRUN" --oversubscribe --bind-to none -n "$p" "$LUA" "$HERE/../examples/heat.lua" \
    "$NY" "$NX" "$STEPS" "$D/p.dat" >/dev/null || echo "heat.lua failed at $p ranks"
  "$PY" -c 'import sys, numpy as np
a, b = np.fromfile(sys.argv[1]), np.fromfile(sys.argv[2])
print("heat at %s ranks: largest relative difference to numpy %.3g" % (sys.argv[3],
      np.max(np.abs(a - b) / np.maximum(1e-300, np.abs(b))) if a.size == b.size else float("inf")))' \
    "$D/p.dat" "$D/n.dat" "$p"
done
