#!/bin/sh
# How often a parallel cat in a pipeline gives back exactly its input, under
# plain mpirun and under `lmpio run` (see bench/README.md, "Pipelines, run
# after run").  examples/cat.lua copies standard input to standard output
# through every rank (read_ordered / write_ordered on "-"); each run's output
# is compared byte for byte with the input, which comes from a file
# (`< input`) or from a pipe (`cat input |`).
#
# Usage: BUILD=build sh bench/pipe_exact.sh [RUNS] [LAUNCHERS]
#   RUNS       runs per configuration (default 200)
#   LAUNCHERS  "mpirun lmpio" (default), or one of them
# Prints one line per configuration: launcher, ranks, input, identical runs,
# and the exit statuses of the others; LMPIO_PIPE_KEEP=DIR keeps the stderr
# of every failed run there.
BUILD=${BUILD:-build}
MPIRUN=${MPIRUN:-mpirun}
LUA=${LUA:-lua5.4}
RUNS=${1:-200}
LAUNCHERS=${2:-"mpirun lmpio"}
export LUA_CPATH_5_4="$BUILD/lua/?.so;;" MPIRUN
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lmpio-pipe-exact.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
# 1 MB and a bit of text and bytes of every value (the last step is short)
{ seq 1 60000; head -c 600000 /dev/urandom; printf 'no newline at the end'; } > "$tmp/input"

launch() { # launch LAUNCHER RANKS: the parallel cat, standard streams as given
  case $1 in
  mpirun) timeout -k 5 120 "$MPIRUN" --oversubscribe -n "$2" "$LUA" examples/cat.lua ;;
  lmpio) timeout -k 5 120 "$LUA" lua/lmpio-command.lua run --oversubscribe -n "$2" "$LUA" examples/cat.lua ;;
  esac
}

for launcher in $LAUNCHERS; do
  for n in 1 2 4; do
    for input in file pipe; do
      same=0 statuses=
      i=0
      while [ "$i" -lt "$RUNS" ]; do
        i=$((i + 1))
        if [ "$input" = file ]; then
          launch "$launcher" "$n" < "$tmp/input" > "$tmp/output" 2> "$tmp/err"
        else
          cat "$tmp/input" | launch "$launcher" "$n" > "$tmp/output" 2> "$tmp/err"
        fi
        rc=$?
        if [ "$rc" -eq 0 ] && cmp -s "$tmp/input" "$tmp/output"; then
          same=$((same + 1))
        else
          statuses="$statuses $rc"
          if [ -n "${LMPIO_PIPE_KEEP:-}" ]; then
            mkdir -p "$LMPIO_PIPE_KEEP" && cp "$tmp/err" "$LMPIO_PIPE_KEEP/$launcher-$n-$input-$i.err"
          fi
        fi
      done
      printf '%-7s ranks %d  input %-4s  identical %d of %d%s\n' "$launcher" "$n" "$input" "$same" "$RUNS" \
        "${statuses:+  (others: exit status$statuses)}"
    done
  done
done
