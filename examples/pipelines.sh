#!/bin/sh
# The examples that live in pipes, run in pipes: prints one "ok NAME" or
# "not ok NAME" per check.  Usage: sh examples/pipelines.sh BUILD MPIRUN LUA
# (from the top of the tree; examples/run.sh runs it).
BUILD=$1 MPIRUN=$2 LUA=$3
export LUA_CPATH_5_4="$BUILD/lua/?.so;;"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lmpio-pipes.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
mpi() { timeout -k 5 120 "$MPIRUN" --oversubscribe "$@"; }
check() { if [ "$2" = "$3" ]; then echo "ok $1"; else echo "not ok $1 (got $2, expected $3)"; fi; }

# filter.lua: the parallel run's output is byte-identical to the serial run's.
input() { printf '# a comment\nhello pipes\n\n'; seq 1 100000; printf 'no newline at the end'; }
serial=$(input | "$LUA" examples/filter.lua | sha256sum)
for n in 1 2 4 8; do
  par=$(input | mpi -n "$n" "$LUA" examples/filter.lua | sha256sum)
  check "filter.lua at $n ranks: same bytes as the serial run" "$par" "$serial"
done
par=$(input | mpi -n 2 --mca btl self,tcp "$LUA" examples/filter.lua | sha256sum)
check "filter.lua at 2 ranks over TCP: same bytes as the serial run" "$par" "$serial"
# empty input: empty output, no hang
par=$(mpi -n 4 "$LUA" examples/filter.lua </dev/null | wc -c)
check "filter.lua on empty input: no output" "$par" "0"
# a reader that stops early (| head): the job ends, nothing hangs
got=$(seq 1 1000000 | mpi -n 4 "$LUA" examples/filter.lua 2>/dev/null | head -n 3 | tr '\n' ' ')
check "filter.lua | head: the first lines, then the job ends" "$got" "$(printf '1\t1\t-\n2\t4\tprime\n3\t9\tprime\n' | tr '\n' ' ')"

# fifo_consumer.lua: a producer writes into a FIFO, 4 ranks consume it.
mkfifo "$tmp/fifo"
(seq 1 50000 > "$tmp/fifo" &)
got=$(mpi -n 4 "$LUA" examples/fifo_consumer.lua "$tmp/fifo" 2>/dev/null)
check "fifo_consumer.lua: every line once" "$got" "lines 50000 sum 1250025000"

