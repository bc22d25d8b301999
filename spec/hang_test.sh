#!/bin/sh
# Hangs explain themselves (LMPIO_HANG_REPORT, core/src/watch.c), at 2 ranks:
# ranks in calls that nothing can match each name their call and the
# script's line (spec/hang_mismatch.lua: the job is ended once the reports
# are in); every blocking call of the module reports a long wait
# (spec/hang_calls.lua, which ends by itself); LMPIO_HANG_REPORT=0 says
# nothing.  Run from the top of the tree with the module built:
#   BUILD=build sh spec/hang_test.sh
# Prints one "ok NAME" / "not ok NAME" per check (spec/run.sh runs it).
NAME=hang
. spec/check_env.sh
# Open MPI passes the variable on with -x; other launchers pass the environment.
if "$MPIRUN" --version 2>/dev/null | grep -q "Open MPI"; then
  launch="-n 2 --mca io romio321 -x LMPIO_HANG_REPORT"
else
  launch="-n 2"
fi

# The line of spec/hang_mismatch.lua that holds TEXT.
line_of() { grep -nF "$1" spec/hang_mismatch.lua | head -n 1 | cut -d: -f1; }
# The report of RANK waiting in CALL at LINE of spec/hang_mismatch.lua (grep -E).
report() { echo "^lmpio: rank $1 has waited [0-9]+ s in $2 \\(spec/hang_mismatch\\.lua:$3\\)\$"; }

# mismatch NAME HOW SECONDS PATTERN...: runs spec/hang_mismatch.lua HOW with
# LMPIO_HANG_REPORT=SECONDS until its standard error holds a line matching
# every PATTERN (or 60 s have passed), then ends the job (SIGTERM to the
# launcher, which ends the ranks).
mismatch() {
  name=$1 how=$2 secs=$3
  shift 3
  log="$dir/$how.log"
  # shellcheck disable=SC2086
  LMPIO_HANG_REPORT=$secs timeout -k 5 90 "$MPIRUN" $launch "$LUA" spec/hang_mismatch.lua "$dir/$how.dat" "$how" \
    >"$log" 2>&1 </dev/null &
  job=$!
  start=$(date +%s)
  while :; do
    all=1
    for p in "$@"; do grep -qE "$p" "$log" || all=0; done
    [ "$all" = 1 ] && break
    [ $(($(date +%s) - start)) -ge 60 ] && break
    sleep 0.2
  done
  took=$(($(date +%s) - start))
  kill "$job" 2>/dev/null
  wait "$job" 2>/dev/null
  if [ "$all" = 1 ]; then
    echo "ok $name (${took} s after the launch)"
  else
    echo "not ok $name"
    sed 's/^/# /' "$log" | tail -n 20
  fi
}

mismatch "rank 0 in write_at_all of a duplicate's file, rank 1 in world:barrier: both say where (LMPIO_HANG_REPORT=2)" \
  file 2 "$(report 0 write_at_all "$(line_of "(file: rank 0 waits here)")")" \
  "$(report 1 barrier "$(line_of "(file: the others wait here)")")"
mismatch "rank 0 in allreduce, rank 1 in recv: both say where" \
  message 1 "$(report 0 allreduce "$(line_of "(message: rank 0 waits here)")")" \
  "$(report 1 recv "$(line_of "(message: the others wait here)")")"
mismatch "a recv whose message never comes says where, again later" \
  never 1 "$(report 1 recv "$(line_of "(never: the last rank waits here)")")" \
  "^lmpio: rank 1 has waited 2 s in recv "

# Every blocking call, one phase each: "ok CALL (line N)" from the last rank.
phases=$(grep -c '^\(collective\|pair\)("' spec/hang_calls.lua)
# (the script reads the log that the launcher writes: it waits for reports)
# shellcheck disable=SC2086,SC2094
LMPIO_HANG_REPORT=0.3 timeout -k 5 200 "$MPIRUN" $launch "$LUA" spec/hang_calls.lua "$dir/calls.log" "$dir/calls.dat" on \
  >"$dir/calls.out" 2>"$dir/calls.log" </dev/null
rc=$?
sed -n 's/^\(\(not \)*ok\) \(.*\)/\1 a long wait in \3 says so/p' "$dir/calls.out"
got=$(grep -c '^ok ' "$dir/calls.out")
if [ "$rc" -eq 0 ] && [ "$got" -eq "$phases" ]; then
  echo "ok every blocking call of the module reports a long wait ($got calls)"
else
  echo "not ok every blocking call of the module reports a long wait ($got of $phases, status $rc)"
  sed 's/^/# /' "$dir/calls.log" | tail -n 20
fi
# LMPIO_HANG_REPORT=0: the same waits, and not one report.
# shellcheck disable=SC2086,SC2094
LMPIO_HANG_REPORT=0 timeout -k 5 "$T" "$MPIRUN" $launch "$LUA" spec/hang_calls.lua "$dir/off.log" "$dir/off.dat" off \
  >"$dir/off.out" 2>"$dir/off.log" </dev/null
rc=$?
if [ "$rc" -eq 0 ] && ! grep -q "^lmpio: rank" "$dir/off.log"; then
  echo "ok LMPIO_HANG_REPORT=0 turns every report off"
else
  echo "not ok LMPIO_HANG_REPORT=0 turns every report off (status $rc)"
  sed 's/^/# /' "$dir/off.log" | tail -n 20
fi
