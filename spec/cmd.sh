#!/bin/sh
# The `lmpio` command (lua/lmpio-cmd.lua): dump, convert and map, alone and
# under mpirun; prints one "ok NAME" / "not ok NAME" per check.
# Usage (from the top of the tree): sh spec/cmd.sh BUILD MPIRUN LUA
BUILD=$1 MPIRUN=$2 LUA=$3
export LUA_CPATH_5_4="$BUILD/lua/?.so;;"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lmpio-cmd.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
cmd() { timeout -k 5 60 "$LUA" lua/lmpio-cmd.lua "$@"; }
mpi() { n=$1; shift; timeout -k 5 60 "$MPIRUN" --oversubscribe -n "$n" "$LUA" lua/lmpio-cmd.lua "$@"; }
check() { if [ "$2" = "$3" ]; then echo "ok $1"; else printf 'not ok %s\n# got:\n%s\n# expected:\n%s\n' "$1" "$2" "$3"; fi; }

for c in dump convert map; do
  out=$(cmd "$c" --help); rc=$?
  case $out in *"usage: lmpio $c"*) check "lmpio $c --help" "$rc" 0 ;; *) check "lmpio $c --help" "$out" "usage: lmpio $c ..." ;; esac
done
cmd dump "$tmp/x" --no-such-option 1 >/dev/null 2>&1
check "an unknown option is an error (status 2)" "$?" 2

# An external32 file (big-endian IEEE doubles) as another program writes it.
OUT="$tmp/e32.dat" "$LUA" -e 'local f = io.open(os.getenv("OUT"), "wb"); for i = 0, 99 do f:write(string.pack(">d", i * 0.25)) end; f:close()'
want=$("$LUA" -e 'for i = 0, 99 do print(("%d\t%.17g"):format(i, i * 0.25)) end')
check "dump of an external32 file" "$(cmd dump "$tmp/e32.dat" --etype DOUBLE --datarep external32)" "$want"
for n in 2 4; do
  check "dump of an external32 file under mpirun -n $n: the same text" \
    "$(mpi "$n" dump "$tmp/e32.dat" --etype DOUBLE --datarep external32)" "$want"
done
# A view: every fourth double from double 1 (disp 8), values 3 to 5 of it.
want=$(printf '3\t3.25\n4\t4.25\n5\t5.25\n')
check "dump through a vector filetype with --disp, --offset and --count" \
  "$(mpi 3 dump "$tmp/e32.dat" --datarep external32 --disp 8 --etype DOUBLE --filetype 'resized(DOUBLE, 0, 32)' --offset 3 --count 3)" "$want"
# The memory type differs from the etype: bytes shown as unsigned chars.
check "dump with --type (the first bytes of 0.25 in external32)" "$(cmd dump "$tmp/e32.dat" --type UNSIGNED_CHAR --offset 8 --count 2)" "$(printf '8\t63\n9\t208')"

# convert: external32 -> native (3 ranks) is what the machine writes natively.
mpi 3 convert "$tmp/e32.dat" "$tmp/native.dat" --etype DOUBLE --from external32 --to native
OUT="$tmp/want.dat" "$LUA" -e 'local f = io.open(os.getenv("OUT"), "wb"); for i = 0, 99 do f:write(string.pack("=d", i * 0.25)) end; f:close()'
if cmp -s "$tmp/native.dat" "$tmp/want.dat"; then echo "ok convert external32 -> native under mpirun -n 3"; else echo "not ok convert external32 -> native under mpirun -n 3"; fi
# ... and back, through a representation registered from a Lua file.
printf 'lmpio.register_datarep("be64", { formats = { DOUBLE = ">d", INT = ">i4" } })\n' > "$tmp/rep.lua"
mpi 2 convert "$tmp/native.dat" "$tmp/back.dat" --etype DOUBLE --from native --to be64 --datarep-file "$tmp/rep.lua"
if cmp -s "$tmp/back.dat" "$tmp/e32.dat"; then echo "ok convert native -> a representation from --datarep-file"; else echo "not ok convert native -> a representation from --datarep-file"; fi

# map: three ranks, doubles dealt round robin.
want=$(printf ' 0  000000001111111122222222\n24  000000001111111122222222\n(3 ranks; a byte shows the rank whose view holds it, %s none, %s several)' "'.'" "'*'")
check "map of a round-robin view" \
  "$(cmd map --ranks 3 --disp 'rank * 8' --etype DOUBLE --filetype 'resized(DOUBLE, 0, size * 8)' --bytes 48 --width 24 --svg "$tmp/m.svg")" "$want"
check "map --svg: one rectangle a byte" "$(grep -c '<rect' "$tmp/m.svg")" 48
want=$(printf '0  ..0.\n4  .1..\n(2 ranks; a byte shows the rank whose view holds it, %s none, %s several)' "'.'" "'*'")
check "map of views with holes" "$(cmd map --ranks 2 --filetype 'resized(indexed({1}, {2 + rank * 3}, BYTE), 0, 8)' --bytes 8 --width 4)" "$want"
check "map: overlapping views are '*'" "$(cmd map --ranks 2 --bytes 4 | head -n 1)" "0  ****"
