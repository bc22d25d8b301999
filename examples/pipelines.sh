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


# lmpio run: standard input and output passed to and from rank 0 by the
# launcher (FIFOs), not by mpirun's forwarding: every run byte-identical.
export MPIRUN
run() { TMPDIR="$tmp" timeout -k 5 120 "$LUA" lua/lmpio-command.lua run --oversubscribe "$@"; }
{ seq 1 30000; head -c 200000 /dev/urandom; printf 'no newline at the end'; } > "$tmp/input"
for n in 1 2 4; do
  same=0
  for i in 1 2 3; do
    run -n "$n" "$LUA" examples/cat.lua < "$tmp/input" > "$tmp/out1" && cmp -s "$tmp/input" "$tmp/out1" && same=$((same + 1))
    cat "$tmp/input" | run -n "$n" "$LUA" examples/cat.lua > "$tmp/out2" && cmp -s "$tmp/input" "$tmp/out2" && same=$((same + 1))
  done
  check "lmpio run cat.lua at $n ranks, < file and cat file |: identical output" "$same" 6
done
got=$(seq 1 1000000 | run -n 4 "$LUA" examples/filter.lua 2>"$tmp/err" | head -n 3 | tr '\n' ' ')
check "lmpio run filter.lua | head: the first lines" "$got" "$(printf '1\t1\t-\n2\t4\tprime\n3\t9\tprime\n' | tr '\n' ' ')"
check "lmpio run filter.lua | head: mpirun did not crash" "$(grep -c -i -e 'segmentation fault' -e 'signal 11' "$tmp/err")" 0
# Rank 0's print and its stream are one output, in order; the other ranks'
# print goes to standard error.
got=$(run -n 3 "$LUA" -e 'local l = require "lmpio"
  print("rank " .. l.world:rank() .. " says hello")
  local out <close> = l.stdout()
  out:write_ordered(("%d\n"):format(l.world:rank()))
  out:close()
  if l.world:rank() == 0 then print("end") end' </dev/null 2>"$tmp/err" | tr '\n' ' ')
check "lmpio run: rank 0's print and write_ordered in order" "$got" "rank 0 says hello 0 1 2 end "
check "lmpio run: the other ranks' print on standard error" "$(grep -c 'says hello' "$tmp/err")" 2
# Any program: rank 0 of `cat` copies the input; the exit status is mpirun's.
got=$(seq 1 100000 | run -n 2 cat | sha256sum)
check "lmpio run of a plain program (cat)" "$got" "$(seq 1 100000 | sha256sum)"
run -n 2 "$LUA" -e 'os.exit(3)' </dev/null 2>/dev/null
check "lmpio run: the exit status is mpirun's" "$?" 3
check "lmpio run: no temporary directory left" "$(ls "$tmp" | grep -c lmpio-run)" 0
