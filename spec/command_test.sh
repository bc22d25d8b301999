#!/bin/sh
# The lmpio command (lua/lmpio-command.lua): dump, convert, map, --help and
# its errors.  Run from the top of the tree with the module built:
#   BUILD=build sh spec/command_test.sh
# Prints one "ok NAME" / "not ok NAME" per check (spec/run.sh runs it).
NAME='command'
. spec/check_env.sh
CMD=$PWD/lua/lmpio-command.lua
# Open MPI's launcher on more ranks than cores, when it is Open MPI.
if "$MPIRUN" --version 2>/dev/null | grep -q "Open MPI"; then over=--oversubscribe; else over=; fi

failures=0
check() { # check NAME CONDITION-COMMAND...
  name=$1; shift
  if "$@"; then echo "ok $name"; else echo "not ok $name"; failures=$((failures + 1)); fi
}
lmpio() { timeout -k 5 "$T" "$LUA" "$CMD" "$@"; }
lmpio_n() { n=$1; shift; timeout -k 5 "$T" "$MPIRUN" $over -n "$n" "$LUA" "$CMD" "$@"; }
# What must end soon and stay small: a short timeout and a memory limit.
# (Under AddressSanitizer, make check-asan, no memory limit: its shadow
# memory is reserved as address space that ulimit -v refuses.)
vlimit() { [ -n "${ASAN_OPTIONS:-}" ] || ulimit -v "$1" 2>/dev/null; }
limited() { (vlimit 4000000; timeout -k 5 30 "$LUA" "$CMD" "$@"); }
lua() { timeout -k 5 "$T" "$LUA" -e "$1"; }
same() { [ "$1" = "$2" ] || { printf '# expected:\n%s\n# got:\n%s\n' "$2" "$1" | sed 's/^/# /'; return 1; }; }

# ---- --help -------------------------------------------------------------------
out=$(lmpio --help) && check "--help prints the usage" same "$(echo "$out" | head -n 1)" "usage: lmpio COMMAND [ARGS] [OPTIONS]"
for c in dump convert map run dropin-path doc-path; do
  out=$(lmpio $c --help) && check "$c --help" same "$(echo "$out" | head -n 1 | cut -d' ' -f1-3)" "usage: lmpio $c"
done
lmpio >/dev/null 2>"$dir/err"
check "no command: usage on stderr, failure status" sh -c '[ "$0" -ne 0 ] && grep -q "^usage: lmpio" "$1"' $? "$dir/err"

# ---- dump ---------------------------------------------------------------------
# An external32 file written by the module: big-endian doubles.
lua "local l = require 'lmpio'
  local fh = l.open(l.self, '$dir/e32.dat', 'w')
  fh:set_view(0, l.DOUBLE, l.DOUBLE, 'external32')
  fh:write_at(0, l.array(l.DOUBLE, { 1.5, -2.25, 3, 0.1, 1 / 3, 1e300 }))
  fh:close()"
out=$(lmpio dump "$dir/e32.dat" --etype DOUBLE --datarep external32)
check "dump of an external32 file" same "$out" "$(printf '1.5\n-2.25\n3\n0.1\n0.3333333333333333\n1e+300')"
check "the file is big-endian (the bytes of 1.5)" \
  same "$(od -An -tx1 -N8 "$dir/e32.dat" | tr -d ' ')" "3ff8000000000000"
out=$(lmpio dump "$dir/e32.dat" --etype DOUBLE --datarep external32 --offset 1 --count 2 --format '%.3f')
check "dump --offset --count --format" same "$out" "$(printf -- '-2.250\n3.000')"
out=$(lmpio dump "$dir/e32.dat" --etype DOUBLE --columns 4 --count 5 --datarep=external32)
check "dump --columns" same "$out" "$(printf '1.5 -2.25 3 0.1\n0.3333333333333333')"
out=$(lmpio dump "$dir/e32.dat" --etype DOUBLE --count 1)
check "dump in native reads other values" [ "$out" != "1.5" ]

# Ints 0..63 in native: a vector view and a subarray view.
lua "local l = require 'lmpio'
  local a = l.array(l.INT, 64)
  for i = 1, 64 do a[i] = i - 1 end
  local fh = l.open(l.self, '$dir/ints.dat', 'w')
  fh:write_at(0, a)
  fh:close()"
out=$(lmpio dump "$dir/ints.dat" --etype INT --filetype 'vector(2, 1, 4, INT)' --count 7 --columns 4)
check "dump with a vector filetype" same "$out" "$(printf '0 4 5 9\n10 14 15')"
out=$(lmpio dump "$dir/ints.dat" --etype INT --filetype 'subarray({8, 8}, {4, 4}, {0, 4}, INT)' --count 16 --columns 4)
check "dump with a subarray filetype" same "$out" "$(printf '4 5 6 7\n12 13 14 15\n20 21 22 23\n28 29 30 31')"
out=$(lmpio dump "$dir/ints.dat" --disp 240 --etype INT | tr '\n' ' ')
check "dump --disp, to the end of the file" same "$out" "60 61 62 63 "
out=$(lmpio dump "$dir/ints.dat" --etype 'contiguous(2, INT)' --type SHORT --count 1 --columns 4 --format '%x')
check "dump --type: the memory type of the values" same "$out" "0 0 1 0"

# ---- convert ------------------------------------------------------------------
# 1001 doubles (an uneven share on 4 ranks) after a 16-byte header.
lua "local l = require 'lmpio'
  local a = l.array(l.DOUBLE, 1001)
  for i = 1, 1001 do a[i] = i * 1.25 - 300 end
  local fh = l.open(l.self, '$dir/nat.dat', 'w')
  fh:write_at(0, 'HEADER-16-BYTES!')
  fh:write_at(16, a)
  fh:close()"
lmpio convert "$dir/nat.dat" "$dir/x1.dat" --type DOUBLE --disp 16 --to external32 &&
  lmpio convert "$dir/x1.dat" "$dir/b1.dat" --type DOUBLE --disp 16 --from external32
check "convert native -> external32 -> native at 1 rank: the same bytes" cmp -s "$dir/nat.dat" "$dir/b1.dat"
check "convert copies the header and changes the data" \
  sh -c '[ "$(head -c 16 "$0")" = "HEADER-16-BYTES!" ] && ! cmp -s "$0" "$1"' "$dir/x1.dat" "$dir/nat.dat"
out=$(lmpio dump "$dir/x1.dat" --disp 16 --etype DOUBLE --datarep external32 --offset 1000)
check "the converted file reads back through an external32 view" same "$out" "951.25"
lmpio_n 4 convert "$dir/nat.dat" "$dir/x4.dat" --type DOUBLE --disp 16 --to external32 &&
  lmpio_n 4 convert "$dir/x4.dat" "$dir/b4.dat" --type DOUBLE --disp 16 --from external32
check "convert at 4 ranks: the same bytes as at 1 rank" cmp -s "$dir/x1.dat" "$dir/x4.dat"
check "convert native -> external32 -> native at 4 ranks: the same bytes" cmp -s "$dir/nat.dat" "$dir/b4.dat"
lmpio_n 3 convert "$dir/nat.dat" "$dir/x3.dat" --type 'contiguous(7, DOUBLE)' --disp 16 --to external32
check "convert at 3 ranks with elements of 7 doubles" cmp -s "$dir/x1.dat" "$dir/x3.dat"

# A representation registered by a Lua file: every item byte-reversed.
cat > "$dir/swap.lua" <<'EOF'
local lmpio = ...
lmpio.register_datarep("swap", {
  extent = function(t) return t:size() end,
  write = function(userbuf, datatype, count, filebuf, position)
    local n = datatype:size()
    lmpio.byteswap(filebuf, 0, userbuf, position * n, count, n)
  end,
  read = function(userbuf, datatype, count, filebuf, position)
    local n = datatype:size()
    lmpio.byteswap(userbuf, position * n, filebuf, 0, count, n)
  end,
})
EOF
lmpio_n 2 convert "$dir/nat.dat" "$dir/s2.dat" --type DOUBLE --disp 16 --to swap --datarep-file "$dir/swap.lua"
check "convert with --datarep-file: swap equals external32 for doubles" cmp -s "$dir/x1.dat" "$dir/s2.dat"
lmpio convert "$dir/s2.dat" "$dir/bs.dat" --type DOUBLE --disp 16 --from swap --datarep-file "$dir/swap.lua"
check "convert back from the registered representation" cmp -s "$dir/nat.dat" "$dir/bs.dat"
out=$(lmpio dump "$dir/s2.dat" --disp 16 --etype DOUBLE --datarep swap --datarep-file "$dir/swap.lua" --count 2 | tr '\n' ' ')
check "dump through a registered representation" same "$out" "-298.75 -297.5 "

# ---- map ----------------------------------------------------------------------
# The quickstart's views: rank r owns r+1 bytes of every 10, after those of
# the ranks before it.
qs='resized(hindexed({rank + 1}, {rank * (rank + 1) // 2}, BYTE), 0, 10)'
out=$(lmpio map --ranks 4 --filetype "$qs" --bytes 40 --width 20)
check "map of the quickstart's views" same "$out" "$(printf ' 0  01122233330112223333\n20  01122233330112223333')"
out=$(lmpio map --ranks 2 --etype INT --filetype 'resized(INT, 0, 12)' --disp 'rank * 4' --bytes 24)
check "map: bytes of nobody" same "$out" " 0  00001111....00001111...."
out=$(lmpio map --ranks 2 --etype INT --filetype 'vector(2, 1, size, INT)' --disp 'rank*4' --bytes 24 --width 12)
check "map: bytes of more than one rank" same "$out" "$(printf ' 0  000011110000\n12  !!!!11110000')"
lmpio map --ranks 4 --filetype "$qs" --bytes 40 --width 20 --svg "$dir/map.svg"
check "map --svg writes an SVG" sh -c 'head -n 1 "$0" | grep -q "^<svg " && tail -n 1 "$0" | grep -q "^</svg>"' "$dir/map.svg"
check "map --svg: one box per block (4 ranks x 4 periods)" same "$(grep -c 'class="block"' "$dir/map.svg")" 16
check "map --svg: rank 3's boxes" same "$(grep 'class="block"' "$dir/map.svg" | grep -c 'data-rank="3"')" 4
lmpio map --ranks 2 --filetype 'resized(BYTE, 0, 1)' --disp 'rank * 16' --bytes 32 --width 32 --svg "$dir/map2.svg"
check "map --svg: items that continue one another are one block" \
  same "$(grep 'class="block"' "$dir/map2.svg" | sed 's/.*<title>\(.*\)<\/title>.*/\1/' | tr '\n' ';')" \
  "rank 0: bytes 0-31;rank 1: bytes 16-31;"
check "map --svg: bytes of two ranks are outlined" same "$(grep -c 'class="overlap"' "$dir/map2.svg")" 1
check "map --svg: a legend entry per rank" same "$(grep -c '>rank [0-3]</text>' "$dir/map.svg")" 4
# Items that overlap one another, blocks out of order, an extent larger than
# the drawing, negative offsets: drawn as every item walked in turn would.
out=$(lmpio map --ranks 2 --disp 'rank' --filetype 'resized(hvector(5,1,3,BYTE),0,2)' --bytes 40 --width 40)
check "map: overlapping items" same "$out" " 0  010!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
out=$(lmpio map --ranks 3 --disp 'rank*3' --filetype 'resized(hindexed({2, 1}, {5, rank}, BYTE), 0, 7)' --bytes 48 --width 48)
check "map: blocks out of order" same "$out" " 0  0...1000!1.!!00!1.!!00!1.!!00!1.!!00!1.!!00!1.!!"
out=$(lmpio map --ranks 2 --filetype 'resized(hindexed({3,2},{30+rank*5,2},BYTE),0,100)' --bytes 40 --width 40)
check "map: an extent larger than the drawing" same "$out" " 0  ..!!..........................000..111.."
out=$(lmpio map --ranks 2 --disp 'rank*9' --filetype 'resized(hindexed({2,2},{-2,3},BYTE),-2,4)' --bytes 30 --width 30)
check "map: negative offsets" same "$out" " 0  ..000.0!!.0!!10!!10!!10!!10!!1"
# The work and memory of map follow what it draws: 100000 bytes of items that
# overlap a thousand times over (a hundred million blocks walked one by one)
# are drawn at once, under a memory limit.
out=$(limited map --filetype 'resized(hvector(1000,1,2,BYTE),0,1)' --bytes 100000 --width 100)
check "map: a thousand overlapping items per byte, 100000 bytes" \
  same "$(echo "$out" | wc -l) $(echo "$out" | tr -cd '!' | wc -c) $(echo "$out" | tr -d ' 0-9!\n' | wc -c)" "1000 100000 0"
out=$(limited map --ranks 2 --disp 'rank' --filetype 'resized(hvector(1000,1,2,BYTE),0,2)' --bytes 100000 --width 100 | sed -n '2p;$p')
check "map: two ranks of overlapping items, first and last rows" \
  same "$out" "$(printf '  100  %s\n99900  %s' "$(printf '01%.0s' $(seq 50))" "$(printf '01%.0s' $(seq 50))")"

# ---- build/bin/lmpio, dropin-path, doc-path -----------------------------------
# make's launcher runs the command with the build's module from anywhere,
# with no LUA_* variable set (under AddressSanitizer through $LUA: the
# launcher's own interpreter is not instrumented).
if [ -n "${ASAN_OPTIONS:-}" ]; then launch() { "$LUA" "$BUILD/bin/lmpio" "$@"; }; else launch() { "$BUILD/bin/lmpio" "$@"; }; fi
out=$(cd / && (unset LUA_CPATH_5_4 LUA_PATH_5_4 LUA_CPATH LUA_PATH; launch dump "$dir/ints.dat" --etype INT --count 4 --columns 4) 2>&1)
check "build/bin/lmpio from another directory, no LUA_* set: dump" same "$out" "0 1 2 3"
echo 'local l = require "lmpio"; print(l.world:size(), l.world:allreduce(l.world:rank() + 1, "sum"))' > "$dir/ranks.lua"
if [ -z "${ASAN_OPTIONS:-}" ]; then
  out=$(cd / && (unset LUA_CPATH_5_4 LUA_PATH_5_4 LUA_CPATH LUA_PATH; timeout -k 5 "$T" "$BUILD/bin/lmpio" run -n 2 "$LUA" "$dir/ranks.lua") 2>/dev/null)
  check "build/bin/lmpio run: the program finds the build's module" same "$out" "$(printf '2\t3')"
fi
out=$(cd / && (unset LUA_CPATH_5_4 LUA_PATH_5_4 LUA_CPATH LUA_PATH; launch dropin-path))
check "build/bin/lmpio dropin-path: the build's drop-in, absolute" same "$out" "$BUILD/lib/liblmpio-mpi.so"
check "the drop-in exports MPI_File_open" sh -c 'nm -D --defined-only "$0" | grep -q " T MPI_File_open$"' "$out"
# Where the module is found decides (a make install layout and a build's,
# made of empty files: the module is not loaded).
mkdir -p "$dir/inst/lua" "$dir/inst/lib" "$dir/inst/doc" "$dir/inst/bin" "$dir/rock/lua/lmpio"
: > "$dir/inst/lua/lmpio.so"; : > "$dir/inst/lib/liblmpio-mpi.so"; : > "$dir/inst/doc/index.html"
out=$(cd "$dir" && LUA_CPATH_5_4="inst/lua/?.so" "$LUA" "$CMD" dropin-path)
check "dropin-path: beside the module found (relative path made absolute)" same "$out" "$dir/inst/lib/liblmpio-mpi.so"
out=$(cd "$dir" && LUA_CPATH_5_4="inst/lua/?.so" "$LUA" "$CMD" doc-path)
check "doc-path: beside the module found" same "$out" "$dir/inst/doc/index.html"
: > "$dir/rock/lua/lmpio.so"; : > "$dir/rock/lua/lmpio/liblmpio-mpi.so"
out=$(LUA_CPATH_5_4="$dir/rock/lua/?.so;$dir/inst/lua/?.so" "$LUA" "$CMD" dropin-path)
check "dropin-path: lmpio/liblmpio-mpi.so on the module's path first (the rock)" same "$out" "$dir/rock/lua/lmpio/liblmpio-mpi.so"
# (make install: the command in PREFIX/bin, its parts in PREFIX/share/lua/5.4)
mkdir -p "$dir/inst/share/lua/5.4/lmpio/command"
cp "$CMD" "$dir/inst/bin/lmpio"
cp lua/lmpio/command/*.lua "$dir/inst/share/lua/5.4/lmpio/command/"
out=$(LUA_CPATH_5_4="$dir/nothing/?.so" "$LUA" "$dir/inst/bin/lmpio" dropin-path)
check "dropin-path: beside the command (make install: PREFIX/bin, PREFIX/lib)" same "$out" "$dir/inst/lib/liblmpio-mpi.so"
mkdir "$dir/alone" && cp "$CMD" "$dir/alone/lmpio"
(LUA_PATH_5_4="$dir/nothing/?.lua" "$LUA" "$dir/alone/lmpio" --help) >"$dir/out" 2>"$dir/err"
check "the command without its parts (lua/lmpio/command): one line saying where it looked, a failure" \
  sh -c '[ "$0" -ne 0 ] && [ ! -s "$1" ] && [ "$(wc -l < "$2")" -eq 1 ] &&
    grep -q "^lmpio: cannot load its commands: .*lmpio.command.common.* (looked in $3/?.lua;" "$2"' $? "$dir/out" "$dir/err" "$dir/alone"
fails_path() { (cd "$dir" && LUA_CPATH_5_4="$dir/nothing/?.so" "$LUA" "$CMD" "$@"); }

# ---- errors: one line on stderr, a failure status, no traceback ---------------
fails() { # fails NAME PATTERN COMMAND...: exits non-zero, says PATTERN, no traceback
  name=$1 pattern=$2; shift 2
  "$@" >"$dir/out" 2>"$dir/err"
  rc=$?
  if [ $rc -ne 0 ] && grep -q "^lmpio: .*$pattern" "$dir/err" && ! grep -q 'traceback' "$dir/err" &&
     ! grep -q '\.lua:[0-9]' "$dir/err" && [ ! -s "$dir/out" ]; then
    echo "ok error: $name"
  else
    echo "not ok error: $name (status $rc)"
    sed 's/^/# /' "$dir/err"
    failures=$((failures + 1))
  fi
}
fails "missing file" "No such file" lmpio dump "$dir/nothing.dat"
fails "bad expression" "cannot read the expression" lmpio dump "$dir/ints.dat" --filetype 'vector(4, 1'
fails "unknown type" "DUBLE" lmpio dump "$dir/ints.dat" --etype DUBLE
fails "constructor error" "must not be negative" lmpio dump "$dir/ints.dat" --filetype 'vector(-1, 1, 1, INT)'
fails "no sandbox escape" "os" lmpio dump "$dir/ints.dat" --filetype 'os.exit(0)'
# Evaluating an expression is bounded in steps and memory: a one-line error.
fails "an endless expression stops" "steps" limited map --filetype '(function() while true do end end)()'
fails "an endless expression in --disp stops" "steps" limited dump "$dir/ints.dat" --disp '(function() while true do end end)()'
fails "an expression that eats memory stops" "more than [0-9]* MB of memory" \
  limited map --filetype '(function() local s = "x" for i = 1, 40 do s = s .. s end return s end)()'
fails "no string methods in expressions" "index a string" limited map --filetype '("x"):rep(1 << 33)'
fails "unknown datarep" "unknown data representation" lmpio dump "$dir/ints.dat" --datarep nope
fails "unknown option" "unknown option '--dsip'" lmpio dump "$dir/ints.dat" --dsip 4
fails "unknown command" "unknown command" lmpio frob
fails "dropin-path: not found says where it looked" "liblmpio-mpi.so (the drop-in library) not found (looked at .*/lib/liblmpio-mpi.so)" fails_path dropin-path
fails "doc-path: not found says where it looked" "the HTML reference (index.html) not found (looked at .*/doc/index.html)" fails_path doc-path
fails "dropin-path takes no argument" "expected no argument" lmpio dropin-path x
fails "run without a program" "say what to run" lmpio run
fails "convert without a type" "--type" lmpio convert "$dir/nat.dat" "$dir/o.dat"
fails "convert onto itself" "the same file" lmpio convert "$dir/nat.dat" "$dir/nat.dat" --type DOUBLE
# OUT naming IN another way is refused before anything is written: IN intact.
cp "$dir/nat.dat" "$dir/in.dat"
ln -s in.dat "$dir/in-sym.dat"
ln "$dir/in.dat" "$dir/in-hard.dat"
fails "convert onto itself through a symbolic link" "the same file" \
  lmpio convert "$dir/in.dat" "$dir/in-sym.dat" --type DOUBLE --disp 16 --to external32
check "convert onto a symbolic link to IN: IN intact" cmp -s "$dir/in.dat" "$dir/nat.dat"
fails "convert onto itself through a hard link" "the same file" \
  lmpio convert "$dir/in-hard.dat" "$dir/in.dat" --type DOUBLE --disp 16 --to external32
check "convert onto a hard link of IN: IN intact" cmp -s "$dir/in.dat" "$dir/nat.dat"
fails "convert onto itself spelt another way" "the same file" \
  lmpio convert "$dir/in.dat" "$dir/../$(basename "$dir")/in.dat" --type DOUBLE
check "convert onto IN spelt another way: IN intact" cmp -s "$dir/in.dat" "$dir/nat.dat"
lmpio_n 2 convert "$dir/in.dat" "$dir/in-sym.dat" --type DOUBLE >/dev/null 2>"$dir/err"
check "convert onto itself at 2 ranks: refused, IN intact" \
  sh -c '[ "$0" -ne 0 ] && grep -q "^lmpio: .*the same file" "$1" && cmp -s "$2" "$3"' $? "$dir/err" "$dir/in.dat" "$dir/nat.dat"
# A read that returns fewer elements than IN's size promised (IN shrank
# while converting: a representation whose read function truncates IN on
# its first call; two steps of 4 MiB) is an error, not zeros in OUT.
cat > "$dir/shrink.lua" <<'EOF'
local lmpio = ...
local path, done = os.getenv("SHRINK"), false
lmpio.register_datarep("shrinking", {
  extent = function(t) return t:size() end,
  read = function(userbuf, datatype, count, filebuf, position)
    if not done then done = true; assert(io.open(path, "w")):close() end
    local n = datatype:size()
    lmpio.byteswap(userbuf, position * n, filebuf, 0, count * n, 1)
  end,
})
EOF
lua "local l = require 'lmpio'
  local fh = l.open(l.self, '$dir/big.dat', 'w')
  fh:write_at(0, l.array(l.DOUBLE, 600000))
  fh:close()"
SHRINK="$dir/big.dat" fails "convert: IN shrinks while converting" "fewer" \
  lmpio convert "$dir/big.dat" "$dir/o.dat" --type DOUBLE --from shrinking --datarep-file "$dir/shrink.lua"
fails "convert: not whole elements" "not a whole number" lmpio convert "$dir/nat.dat" "$dir/o.dat" --type "contiguous(3, DOUBLE)"
fails "bad datarep file" "datarep-file" lmpio dump "$dir/ints.dat" --datarep-file "$dir/nothing.lua"
fails "map: zero extent" "extent" lmpio map --filetype 'resized(INT, 0, 0)'
# Requests too big to draw: a one-line error at once.
fails "map: too many ranks times bytes" "too much" limited map --ranks 60 --bytes 1000000
fails "map: too many blocks in an item" "blocks" limited map --filetype 'vector(3000000, 1, 2, BYTE)'
fails "map --svg: too many boxes" "boxes" limited map --ranks 2 --disp 'rank' --filetype 'resized(BYTE, 0, 2)' --bytes 400000 --svg "$dir/big.svg"
# The error path itself holds when memory runs out (here: one line of
# thirty million values, under a memory limit).
# (Not under AddressSanitizer: no memory limit there, see vlimit.)
if [ -z "${ASAN_OPTIONS:-}" ]; then
  head -c 30000000 /dev/zero > "$dir/zeros.dat"
  fails "out of memory: one line, no traceback" "not enough memory" \
    sh -c 'ulimit -v 400000; exec timeout -k 5 60 "$0" "$1" dump "$2" --columns 30000000' "$LUA" "$CMD" "$dir/zeros.dat"
fi
lmpio_n 2 convert "$dir/nothing.dat" "$dir/o.dat" --type DOUBLE >/dev/null 2>"$dir/err"
check "error at 2 ranks: a failure status and the message" \
  sh -c '[ "$0" -ne 0 ] && grep -q "^lmpio: .*No such file" "$1"' $? "$dir/err"

# ---- records and Fortran sequential files --------------------------------------
# A Fortran sequential unformatted file as a Fortran program writes it (plain
# Lua, value by value): a header record of three INTs, then NREC records of
# an INT step, 1000 DOUBLEs and 4 INTs (8020 bytes; 8024 as a C struct in
# memory), each between two 4-byte length markers, in byte order ORDER
# ("<", ">" or "=") and marker size MB.
fortran() { # fortran ORDER PATH NREC [MB]
  lua "local ord, path, nrec, mb = '$1', '$2', $3, ${4:-4}
    local f = assert(io.open(path, 'wb'))
    local function rec(p) local m = string.pack(ord .. 'i' .. mb, #p); f:write(m, p, m) end
    rec(string.pack(ord .. 'i4i4i4', 1000, nrec, 7))
    for k = 1, nrec do
      local p = { string.pack(ord .. 'i4', k) }
      for i = 1, 1000 do p[#p + 1] = string.pack(ord .. 'd', k * 1000 + i / 8) end
      for i = 1, 4 do p[#p + 1] = string.pack(ord .. 'i4', -k * i) end
      rec(table.concat(p))
    end
    f:close()"
}
REC='record{{"step", INT}, {"x", DOUBLE, 1000}, {"flags", INT, 4}}'
HDR='contiguous(3, INT)'
fortran ">" "$dir/be.f" 7
fortran "<" "$dir/le.f" 7
fortran "=" "$dir/native.f" 7
lmpio convert "$dir/be.f" "$dir/be-nat.f" --fortran --type "$REC" --header-type "$HDR" --from external32
check "fortran: big-endian (external32, big markers) -> native: the native program's bytes" cmp -s "$dir/be-nat.f" "$dir/native.f"
lmpio convert "$dir/be-nat.f" "$dir/be-back.f" --fortran --type "$REC" --header-type "$HDR" --to external32
check "fortran: and back to big-endian: the original bytes" cmp -s "$dir/be-back.f" "$dir/be.f"
check "fortran: the header record is converted (its INTs in native order)" \
  same "$(od -An -tx1 -j4 -N12 "$dir/be-nat.f" | tr -d ' ')" \
       "$(lua "io.write((string.gsub(string.pack('=i4i4i4', 1000, 7, 7), '.', function(c) return string.format('%02x', c:byte()) end)))")"
lmpio_n 3 convert "$dir/be.f" "$dir/be-nat3.f" --fortran --type "$REC" --header-type "$HDR" --from external32 &&
  lmpio_n 4 convert "$dir/be-nat3.f" "$dir/be-back4.f" --fortran --type "$REC" --header-type "$HDR" --to external32
check "fortran: at 3 and 4 ranks, the same bytes both ways" \
  sh -c 'cmp -s "$0" "$1" && cmp -s "$2" "$3"' "$dir/be-nat3.f" "$dir/native.f" "$dir/be-back4.f" "$dir/be.f"
# Little-endian to big-endian and back, with the marker orders said outright.
lmpio_n 2 convert "$dir/le.f" "$dir/le-be.f" --fortran --type "$REC" --header-type "$HDR" \
  --from-markers little --to external32 --to-markers big &&
  lmpio convert "$dir/le-be.f" "$dir/le-back.f" --fortran --type "$REC" --header-type "$HDR" \
  --from external32 --markers big --to-markers little
check "fortran: little-endian -> big-endian is the big-endian program's file" cmp -s "$dir/le-be.f" "$dir/be.f"
check "fortran: big-endian -> little-endian gives back the little-endian bytes" cmp -s "$dir/le-back.f" "$dir/le.f"
fortran ">" "$dir/be8.f" 3 8
fortran "=" "$dir/native8.f" 3 8
lmpio convert "$dir/be8.f" "$dir/be8-nat.f" --fortran --marker-size 8 --type "$REC" --header-type "$HDR" --from external32 &&
  lmpio convert "$dir/be8-nat.f" "$dir/be8-back.f" --fortran --marker-size 8 --type "$REC" --header-type "$HDR" --to external32
check "fortran: 8-byte markers, both ways" \
  sh -c 'cmp -s "$0" "$1" && cmp -s "$2" "$3"' "$dir/be8-nat.f" "$dir/native8.f" "$dir/be8-back.f" "$dir/be8.f"
lmpio convert "$dir/native.f" "$dir/markers-only.f" --fortran --type "$REC" --header-type "$HDR" --to-markers big
check "fortran: only the markers change order (payload native)" \
  same "$(od -An -tx1 -N4 "$dir/markers-only.f" | tr -d ' ') $(cmp -s "$dir/markers-only.f" "$dir/native.f"; echo $?) $(wc -c < "$dir/markers-only.f")" \
  "0000000c 1 $(wc -c < "$dir/native.f")"
# Records without markers: packed at their size in the file (8020 bytes,
# not the 8024 of the C struct), header converted with its own type.
tail -c +21 "$dir/be.f" | lua "local d = io.read('a'); local out = {}
  for at = 1, #d, 8028 do out[#out + 1] = d:sub(at + 4, at + 8023) end
  io.open('$dir/be.recs', 'wb'):write(string.pack('>i4i4i4', 1000, 7, 7), table.concat(out)):close()"
lmpio convert "$dir/be.recs" "$dir/nat.recs" --type "$REC" --header-type "$HDR" --from external32
check "records: 7 records of 8020 bytes after a 12-byte header" same "$(wc -c < "$dir/nat.recs" | tr -d ' ')" "$((12 + 7 * 8020))"
lmpio_n 2 convert "$dir/nat.recs" "$dir/be-back.recs" --type 'struct({1, 1000, 4}, {0, 8, 8008}, {INT, DOUBLE, INT})' \
  --header-type "$HDR" --to external32
check "records: a struct expression, and back: the original bytes" cmp -s "$dir/be-back.recs" "$dir/be.recs"
out=$(lmpio dump "$dir/nat.recs" --disp 12 --type "$REC" --offset 6 --count 1 --format '%g' | cut -d' ' -f1-3,1000-1005)
check "dump: a record type is rows under named columns" \
  same "$out" "$(printf 'step x[1] x[2] x[999] x[1000] flags[1] flags[2] flags[3] flags[4]\n7 7000.12 7000.25 7124.88 7125 -7 -14 -21 -28')"
out=$(lmpio dump "$dir/be.recs" --datarep external32 --disp 12 --type 'struct({1, 2}, {0, 8}, {INT, DOUBLE})' --count 1 --format '%g')
check "dump: items of a struct without names: TYPE@OFFSET columns" \
  same "$out" "$(printf 'INT@0 DOUBLE@8 DOUBLE@16\n1 1000.12 1000.25')"
out=$(lmpio dump "$dir/nat.recs" --type "$HDR" --count 1 --no-header)
check "dump --no-header" same "$out" "1000 7 7"
# Malformed marker files: an error naming the record and its offset, and no OUT.
cp "$dir/le.f" "$dir/bad-tail.f"
printf '\001' | dd of="$dir/bad-tail.f" bs=1 seek=$((20 + 8028 + 8024)) conv=notrunc 2>/dev/null
fails "fortran: markers that disagree" "record 3 at offset 8048: the markers disagree (8020 at the start, 7937 at the end)" \
  lmpio convert "$dir/bad-tail.f" "$dir/o1.f" --fortran --type "$REC" --header-type "$HDR" --markers little
head -c 30000 "$dir/le.f" > "$dir/cut.f"
fails "fortran: a record past the end" "record 5 at offset 24104: its marker says 8020 bytes, past the end of the file (30000 bytes)" \
  lmpio convert "$dir/cut.f" "$dir/o2.f" --fortran --type "$REC" --header-type "$HDR" --markers little
head -c 24106 "$dir/le.f" > "$dir/cut2.f"
fails "fortran: a marker cut short" "record 5 at offset 24104: 2 bytes left, too few for two record markers" \
  lmpio convert "$dir/cut2.f" "$dir/o3.f" --fortran --type "$REC" --header-type "$HDR" --markers little
fails "fortran: markers of the other byte order" "record 1 at offset 0: its marker says [0-9]* bytes, past the end.*big-endian 4-byte markers" \
  lmpio convert "$dir/le.f" "$dir/o4.f" --fortran --type "$REC" --header-type "$HDR" --markers big
fails "fortran: a payload that is not whole elements" "record 1 at offset 0: 12 bytes are not a whole number of elements of 8020 bytes" \
  lmpio convert "$dir/le.f" "$dir/o5.f" --fortran --type "$REC" --markers little
check "fortran: no OUT after a malformed IN" sh -c '! ls "$0"/o[1-5].f 2>/dev/null' "$dir"
lmpio_n 2 convert "$dir/bad-tail.f" "$dir/o6.f" --fortran --type "$REC" --header-type "$HDR" --markers little >/dev/null 2>"$dir/err"
check "fortran: a malformed IN at 2 ranks: one message, a failure status" \
  sh -c '[ "$0" -ne 0 ] && [ "$(grep -c "^lmpio: .*record 3 at offset 8048" "$1")" = 1 ] && [ ! -e "$2" ]' $? "$dir/err" "$dir/o6.f"
# A big-endian file read with the default (native, little-endian) markers:
# the error names the option that reads it.
fails "fortran: the error names --from-markers" "record 1 at offset 0: .*reading little-endian 4-byte markers; big-endian 4-byte markers frame the file: give --from-markers big" \
  lmpio convert "$dir/be.f" "$dir/o7.f" --fortran --type "$REC" --header-type "$HDR"
fails "fortran: the error names --from-markers and --marker-size" "big-endian 8-byte markers frame the file: give --from-markers big --marker-size 8" \
  lmpio convert "$dir/be8.f" "$dir/o8.f" --fortran --type "$REC" --header-type "$HDR" --markers little
fails "fortran: markers that frame nothing: no option named" "record 3 at offset 8048: the markers disagree .*(is it a Fortran sequential file with little-endian 4-byte markers?)" \
  lmpio convert "$dir/bad-tail.f" "$dir/o9.f" --fortran --type "$REC" --header-type "$HDR" --markers little
check "fortran: no OUT after the errors that name an option" sh -c '! ls "$0"/o[7-9].f 2>/dev/null' "$dir"

# dump --fortran: the records with their markers, the byte order detected or given.
# (the first three values of each row)
first3() { awk '/^record |^[0-9]+ records/ { print; next } { print $1, $2, $3 }'; }
out=$(lmpio dump "$dir/be.f" --fortran --header-type "$HDR" --type "$REC" --format '%g' | first3)
check "dump --fortran: a big-endian file, detected (values in external32)" \
  same "$(echo "$out" | sed -n '1,6p;$p')" "$(printf '%s\n' '8 records, big-endian 4-byte markers (detected), values in external32' \
    'record 1 at offset 0: marker 12' 'INT@0 INT@4 INT@8' '1000 7 7' 'record 2 at offset 20: marker 8020' 'step x[1] x[2]' \
    '7 7000.12 7000.25')"
check "dump --fortran: every record" same "$(echo "$out" | grep -c '^record ')" 8
out2=$(lmpio dump "$dir/le.f" --fortran --header-type "$HDR" --type "$REC" --format '%g' | first3)
check "dump --fortran: the little-endian file, detected: the same records and values" \
  same "$(echo "$out2" | sed 1d)" "$(echo "$out" | sed 1d)"
check "dump --fortran: little-endian detected" \
  same "$(echo "$out2" | head -n 1)" "8 records, little-endian 4-byte markers (detected), values in native"
out=$(lmpio dump "$dir/be.f" --fortran --markers big --type INT --columns 3 | sed -n '1,3p;5p')
check "dump --fortran --markers big: the order given, INT values" \
  same "$out" "$(printf '%s\n' '8 records, big-endian 4-byte markers (--markers big), values in external32' \
    'record 1 at offset 0: marker 12' '1000 7 7' '1 1083130112 0')"
out=$(lmpio dump "$dir/le.f" --fortran --markers little --marker-size 4 --type INT | sed -n '3,5p' | tr '\n' ' ')
check "dump --fortran --markers little: the order given" same "$out" "1000 7 7 "
out=$(lmpio dump "$dir/be8.f" --fortran --type INT --columns 3 | sed -n '1,3p')
check "dump --fortran: 8-byte markers detected" \
  same "$out" "$(printf '%s\n' '4 records, big-endian 8-byte markers (detected), values in external32' \
    'record 1 at offset 0: marker 12' '1000 3 7')"
out=$(lmpio dump "$dir/le.f" --fortran --type DOUBLE | sed -n '2,4p')
check "dump --fortran: bytes that are not a whole element are said" \
  same "$out" "$(printf '%s\n' 'record 1 at offset 0: marker 12' "$(lmpio dump "$dir/le.f" --disp 4 --etype DOUBLE --count 1)" \
    '(4 bytes left over: not a whole DOUBLE of 8 bytes)')"
fails "dump --fortran: markers that frame nothing" "cut.f: the record markers do not frame the file .*reading little-endian 4-byte markers, record 5 at offset 24104: its marker says 8020 bytes, past the end" \
  lmpio dump "$dir/cut.f" --fortran
fails "dump --fortran: markers that disagree" "record 3 at offset 8048: the markers disagree" lmpio dump "$dir/bad-tail.f" --fortran
fails "dump --fortran --markers: the other order frames it" "reading big-endian 4-byte markers; little-endian 4-byte markers frame the file: give --markers little" \
  lmpio dump "$dir/le.f" --fortran --markers big
fails "dump: --markers without --fortran" "for Fortran files" lmpio dump "$dir/le.f" --markers big
fails "dump --fortran --filetype" "does not apply" lmpio dump "$dir/le.f" --fortran --filetype INT
fails "convert: --markers without --fortran" "for Fortran files" lmpio convert "$dir/le.f" "$dir/o.f" --type INT --markers big
fails "convert: --disp and --header-type" "either as bytes" lmpio convert "$dir/le.f" "$dir/o.f" --type INT --disp 4 --header-type INT
fails "convert: a bad marker order" "not a byte order" lmpio convert "$dir/le.f" "$dir/o.f" --type INT --fortran --markers middle
fails "dump: --columns with a record type" "one row per element" lmpio dump "$dir/nat.recs" --type "$REC" --columns 2

# ---- .npy (numpy's format; numpy from python3-numpy) ---------------------------
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
"$PY" -c "import numpy
def save(p, a):
  with open(p, 'wb') as f: numpy.save(f, a)
save('$dir/f.npy', numpy.asfortranarray(numpy.arange(12, dtype=numpy.int32).reshape(3, 4)))
save('$dir/be.npy', (numpy.arange(6).reshape(2, 3) * 1.5 - 1).astype('>f8'))
save('$dir/c.npy', numpy.array([1 + 2j, 3.5 - 1j], dtype='<c16'))
save('$dir/z.npy', numpy.float32(0.1))"
check "numpy writes the .npy files of the tests" [ -s "$dir/z.npy" ]
out=$(lmpio dump "$dir/be.npy")
check "dump of a big-endian .npy: its shape, then rows" same "$out" "$(printf '# shape (2, 3), DOUBLE, C order\n-1 0.5 2\n3.5 5 6.5')"
out=$(lmpio dump "$dir/f.npy")
check "dump of a Fortran-order .npy: a column per line" same "$out" "$(printf '# shape (3, 4), INT, F order\n0 4 8\n1 5 9\n2 6 10\n3 7 11')"
out=$(lmpio dump "$dir/z.npy" --no-header)
check "dump of a 0-d .npy, --no-header" same "$out" "0.1"
out=$(lmpio dump "$dir/c.npy" --no-header)
check "dump of complex numbers: their two parts" same "$out" "$(printf '1 2\n3.5 -1')"
out=$(lmpio dump "$dir/be.npy" --offset 2 --count 3 --columns 1 --format '%.1f' --no-header | tr '\n' ' ')
check "dump of a .npy with --offset, --count, --columns, --format" same "$out" "2.0 3.5 5.0 "
out=$(lmpio dump "$dir/f.npy" --etype INT --count 2 | tr '\n' ' ')
check "dump of a .npy with --etype: its bytes as they are (the header)" [ "$out" != "0 4 " ]
fails "dump: a type whose values cannot be printed" "values of C_DOUBLE_COMPLEX cannot be printed as numbers (its two parts can: --type DOUBLE)" \
  lmpio dump "$dir/c.npy" --etype C_DOUBLE_COMPLEX --type C_DOUBLE_COMPLEX
lmpio_n 3 convert "$dir/be.npy" "$dir/le.npy" --to npy
check "convert of a big-endian .npy to a native one at 3 ranks, numpy loads it" "$PY" -c "import numpy
a = numpy.load('$dir/le.npy')
assert a.dtype == numpy.dtype('<f8') and a.shape == (2, 3), (a.dtype, a.shape)
assert (a == numpy.arange(6).reshape(2, 3) * 1.5 - 1).all(), a"
lmpio_n 2 convert "$dir/be.npy" "$dir/be.raw"
check "convert of a .npy to a raw file: its data in native" same "$(lmpio dump "$dir/be.raw" --etype DOUBLE | tr '\n' ' ')" "-1 0.5 2 3.5 5 6.5 "
lmpio_n 4 convert "$dir/be.raw" "$dir/r.npy" --type DOUBLE --to npy --shape '{3, 2}' --order F
check "convert of a raw file to a .npy with --shape and --order at 4 ranks" "$PY" -c "import numpy
a = numpy.load('$dir/r.npy')
assert a.shape == (3, 2) and a.flags['F_CONTIGUOUS'], (a.shape, a.flags)
assert a.T.ravel().tolist() == [-1, 0.5, 2, 3.5, 5, 6.5], a"
lmpio convert "$dir/be.raw" "$dir/r1.npy" --type DOUBLE --to npy
check "convert to a .npy: shape (N,) by default" same "$(lmpio dump "$dir/r1.npy" | head -n 1)" "# shape (6,), DOUBLE, C order"
lmpio convert "$dir/f.npy" "$dir/f2.npy" --to npy
check "convert .npy to .npy keeps the order and the bytes" cmp -s "$dir/f.npy" "$dir/f2.npy"
fails "convert: a --shape that does not hold IN" "--shape: '{4, 2}' holds 8 elements, IN holds 6" \
  lmpio convert "$dir/be.raw" "$dir/o.npy" --type DOUBLE --to npy --shape '{4, 2}'
fails "convert: a --type other than the .npy's" "--type: INT, but .*be.npy holds DOUBLE" \
  lmpio convert "$dir/be.npy" "$dir/o.raw" --type INT
fails "convert: a derived type to .npy" "type is a derived datatype" \
  lmpio convert "$dir/be.raw" "$dir/o.npy" --type 'contiguous(2, DOUBLE)' --to npy
fails "convert: --disp with a .npy" "--disp with a .npy file" lmpio convert "$dir/be.npy" "$dir/o.raw" --disp 8
fails "convert: --shape without --to npy" "--shape is for a .npy OUT" lmpio convert "$dir/be.raw" "$dir/o.raw" --type DOUBLE --shape '{6}'
fails "convert: --from npy of a file that is not one" "not a .npy file" lmpio convert "$dir/be.raw" "$dir/o.raw" --from npy

[ "$failures" -eq 0 ]
