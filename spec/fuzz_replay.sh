#!/bin/sh
# Replays the seeds of spec/fuzz_methods.lua that found defects (each hung
# or set the ranks' collective calls apart before its fix), at 2 ranks:
# "ok" when the run ends and every collective call had one outcome on every
# rank.  Sourced settings: $MPIRUN, $LUA, $BUILD (from check.sh) or defaults.
MPIRUN=${MPIRUN:-mpirun}
LUA=${LUA:-lua5.4}
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/lmpio-fuzz.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
# 3 and 22: a request's finalizer inside an argument check; 1, 2 and 4: the
# split and nonblocking collectives' argument errors (the seeds of the
# fuzzer as it is now; each ran 300 calls)
for seed in 1 2 3 4 22; do
  if timeout -k 5 120 "$MPIRUN" -n 2 -x LMPIO_CPATH="$BUILD/lua/?.so;" -x LMPIO_FUZZ_DIR="$dir" \
       "$LUA" spec/fuzz_methods.lua "$seed" 300 >"$dir/out" 2>&1 &&
     grep -q " 0 collective outcomes that differ" "$dir/out"; then
    echo "ok fuzz_methods seed $seed at 2 ranks"
  else
    echo "not ok fuzz_methods seed $seed at 2 ranks"
    tail -n 5 "$dir/out" | sed 's/^/# /'
    for r in 0 1; do tail -n 3 "$dir/lmpio-fuzzm.r$r.$seed" 2>/dev/null | sed "s/^/# rank $r: /"; done
  fi
done
