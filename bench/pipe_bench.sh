#!/bin/sh
# Lines per second through write_ordered into a pipe, at 1, 2 and 4 ranks,
# against one process writing the same lines with io.write (the ceiling).
# The output goes through `| cat > /dev/null` (a real pipe; mpirun forwards
# rank 0's standard output into it) and is checked against the serial
# lines (sha256) once per configuration.
# Usage: BUILD=build sh bench/pipe_bench.sh [LINES]
BUILD=${BUILD:-build}
MPIRUN=${MPIRUN:-mpirun}
LUA=${LUA:-lua5.4}
LINES=${1:-1000000}
export LUA_CPATH_5_4="$BUILD/lua/?.so;;"
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
res=$(mktemp) && trap 'rm -f "$res"' EXIT
want=$("$LUA" bench/pipe_bench.lua plain "$LINES" 2>>"$res" | sha256sum)
for batch in 1 1000; do
  for n in 1 2 4; do
    n_lines=$LINES
    [ "$batch" = 1 ] && n_lines=$((LINES / 10)) # one call per line: fewer lines
    got=$(timeout 600 "$MPIRUN" --oversubscribe -n "$n" "$LUA" bench/pipe_bench.lua ordered "$n_lines" "$batch" 2>>"$res" | sha256sum)
    if [ "$n_lines" = "$LINES" ] && [ "$got" != "$want" ]; then echo "WRONG OUTPUT: ranks=$n batch=$batch"; fi
  done
done
cat "$res"
awk '/^RESULT plain/ { for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "lines_per_s") ceil = kv[2] } }
     END { print "ceiling (one process, io.write): " ceil " lines/s" }' "$res"
awk '/^RESULT ordered/ { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
       printf "write_ordered  ranks %s  %5s lines/call  %10.0f lines/s\n", v["ranks"], v["batch"], v["lines_per_s"] }' "$res"
