# Sourced by core/test/check.sh (its `examples` branch), from the top of the
# tree, with run(), $MPIRUN, $LUA and $BUILD defined: runs every Lua example
# on 4 ranks; an example verifies its own data, prints "ok <example>" and
# exits 0 when it is right.
if [ -f "$BUILD/lua/lmpio.so" ]; then
  for e in examples/*.lua; do
    [ -f "$e" ] || continue
    run "$(basename "$e") example" sh -c '
      LUA_CPATH_5_4="$0/lua/?.so;;" timeout -k 5 120 "$1" --oversubscribe -n 4 "$2" "$3" "$4"' \
      "$BUILD" "$MPIRUN" "$LUA" "$e" "${TMPDIR:-/tmp}/lmpio-example-$$-$(basename "$e" .lua).dat"
    rm -f "${TMPDIR:-/tmp}/lmpio-example-$$-$(basename "$e" .lua).dat"
  done
else
  echo "FAIL Lua examples: $BUILD/lua/lmpio.so is not built"
  failed=$((failed + 1))
fi
