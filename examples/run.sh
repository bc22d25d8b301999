# Sourced by core/test/check.sh (its `examples` branch), from the top of the
# tree, with run(), $MPIRUN, $LUA and $BUILD defined: runs every Lua example
# on 4 ranks; an example verifies its own data, prints "ok <example>" and
# exits 0 when it is right.
if [ -f "$BUILD/lua/lmpio.so" ]; then
  for e in examples/*.lua; do
    [ -f "$e" ] || continue
    # the examples that live in pipes run in pipes, below
    case $(basename "$e") in filter.lua | fifo_consumer.lua | cat.lua) continue ;; esac
    # (not an example: heat.lua's serial computation, which it loads)
    [ "$(basename "$e")" = heat_serial.lua ] && continue
    run "$(basename "$e") example" sh -c '
      LUA_CPATH_5_4="$0/lua/?.so;;" timeout -k 5 120 "$1" --oversubscribe -n 4 "$2" "$3" "$4"' \
      "$BUILD" "$MPIRUN" "$LUA" "$e" "${TMPDIR:-/tmp}/lmpio-example-$$-$(basename "$e" .lua).dat"
    rm -f "${TMPDIR:-/tmp}/lmpio-example-$$-$(basename "$e" .lua).dat"
  done
else
  echo "FAIL Lua examples: $BUILD/lua/lmpio.so is not built"
  failed=$((failed + 1))
fi
# The checkpoint written by 4 ranks, restarted by 7 (a rank owns nothing).
if [ -f "$BUILD/lua/lmpio.so" ]; then
  ckp="${TMPDIR:-/tmp}/lmpio-example-$$-checkpoint.dat"
  run "checkpoint_restart.lua example: written by 4 ranks, read by 7" sh -c '
    export LUA_CPATH_5_4="$0/lua/?.so;;"
    timeout -k 5 120 "$1" --oversubscribe -n 4 "$2" examples/checkpoint_restart.lua "$3" >/dev/null &&
    timeout -k 5 120 "$1" --oversubscribe -n 7 "$2" examples/checkpoint_restart.lua "$3" restart' \
    "$BUILD" "$MPIRUN" "$LUA" "$ckp"
  rm -f "$ckp"
fi
# The lmpio command: dump an external32 file that a script wrote.
if [ -f "$BUILD/lua/lmpio.so" ]; then
  e32="${TMPDIR:-/tmp}/lmpio-example-$$-e32.dat"
  run "lmpio dump of an external32 file" sh -c '
    export LUA_CPATH_5_4="$0/lua/?.so;;"
    "$1" -e "local l = require \"lmpio\"
      local fh <close> = l.open(l.self, \"$2\", \"w\")
      fh:set_view(0, l.DOUBLE, l.DOUBLE, \"external32\")
      fh:write_at(0, l.array(l.DOUBLE, { 0.5, 1.5, 2.5, 3.5, 4.5, 5.5 }))" &&
    out=$(timeout -k 5 120 "$1" lua/lmpio-command.lua dump "$2" --etype DOUBLE --datarep external32 --columns 3) &&
    echo "$out" && [ "$out" = "$(printf "0.5 1.5 2.5\n3.5 4.5 5.5")" ] && echo "ok lmpio dump"' \
    "$BUILD" "$LUA" "$e32"
  rm -f "$e32"
fi
# The pipe examples (filter.lua, fifo_consumer.lua) in pipelines: output
# byte-identical to the serial run at 1, 2, 4 and 8 ranks, a FIFO consumer.
if [ -f "$BUILD/lua/lmpio.so" ]; then
  run "pipelines (examples/pipelines.sh)" sh examples/pipelines.sh "$BUILD" "$MPIRUN" "$LUA"
fi
# examples/heat.lua at 1, 2 and 4 ranks (uneven blocks: 37 x 23) against
# the serial computation (spec/heat_check.lua, examples/heat_serial.lua).
if [ -f "$BUILD/lua/lmpio.so" ]; then
  for p in 1 2 4; do
    heat="${TMPDIR:-/tmp}/lmpio-example-$$-heat.dat"
    run "heat.lua at $p ranks against the serial computation" sh -c '
      LUA_CPATH_5_4="$0/lua/?.so;;" timeout -k 5 120 "$1" --oversubscribe -n "$3" "$2" examples/heat.lua 37 23 15 "$4" &&
      out=$("$2" spec/heat_check.lua 37 23 15 "$4") && echo "$out" && [ "$out" = ok ] && echo "ok heat.lua at $3 ranks"' \
      "$BUILD" "$MPIRUN" "$LUA" "$p" "$heat"
    rm -f "$heat"
  done
fi
