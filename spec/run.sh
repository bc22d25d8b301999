# Sourced by core/test/check.sh (its `lua` branch), from the top of the tree,
# with $MPIRUN, $LUA, $BUILD, configs() and run() defined.  Runs every busted
# spec under each launcher configuration (1, 2, 4 ranks, and 2 ranks over
# TCP); spec/mpi_busted.sh prints one "ok NAME" / "not ok NAME" per test,
# combined over the ranks (a test passes only if it passed on every rank).
mkdir -p "$BUILD/spec"
if ! ${MPICC:-mpicc} -std=c11 -Wall -Wextra -Werror -O2 spec/mpiio_ref.c -o "$BUILD/spec/mpiio_ref" \
     >"$log" 2>&1; then
  echo "FAIL spec/mpiio_ref.c does not build"
  sed 's/^/    /' "$log"
  failed=$((failed + 1))
fi
configs > "$log.luacfg"
while read -r cfg; do
  # shellcheck disable=SC2086
  run "busted specs [$cfg]" sh spec/mpi_busted.sh $cfg </dev/null
done < "$log.luacfg"
rm -f "$log.luacfg"
# The lmpio command (lua/lmpio-command.lua): one process and mpirun jobs of
# its own, so it runs once, not under each configuration.
run "lmpio command (spec/command_test.sh)" env BUILD="$BUILD" MPIRUN="$MPIRUN" LUA="$LUA" sh spec/command_test.sh
# The rock: luarocks make into a fresh tree (about half a minute; it builds
# from scratch, not instrumented: not under make check-asan).
if [ -z "${ASAN_OPTIONS:-}" ]; then
  run "the rock (spec/rock_test.sh)" env MPIRUN="$MPIRUN" sh spec/rock_test.sh
fi
# The file methods' fuzzer, its seeds that found defects (2 ranks, once).
run "fuzzer replay (spec/fuzz_replay.sh)" env BUILD="$BUILD" MPIRUN="$MPIRUN" LUA="$LUA" sh spec/fuzz_replay.sh
# Hang reports of every blocking call (LMPIO_HANG_REPORT): jobs of their own
# at 2 ranks, once.
run "hang reports (spec/hang_test.sh)" env BUILD="$BUILD" MPIRUN="$MPIRUN" LUA="$LUA" sh spec/hang_test.sh
