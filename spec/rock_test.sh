#!/bin/sh
# The rock is the whole product: `luarocks make` of a copy of this tree into
# a fresh tree installs the module (with its Lua files), the lmpio command,
# the drop-in library and the HTML reference, and `luarocks remove` takes
# them away.  Run from the top of the tree (spec/run.sh runs it; about half a
# minute: the rock builds the core, the module and the drop-in from scratch):
#   sh spec/rock_test.sh
# Prints one "ok NAME" / "not ok NAME" per check.
MPIRUN=${MPIRUN:-mpirun}
T=${LMPIO_SPEC_TIMEOUT:-300}
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/lmpio-rock.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT

failures=0
check() { # check NAME CONDITION-COMMAND...
  name=$1; shift
  if "$@"; then echo "ok $name"; else echo "not ok $name"; failures=$((failures + 1)); fi
}

# The source as a user has it: this tree without its builds.
mkdir "$dir/src" "$dir/work"
tar -cf - --exclude=./build --exclude=./tmp --exclude=./.git . | tar -xf - -C "$dir/src" || exit 1
# A Lua file of the module (as lua/lmpio/npy.lua is): the rock takes every
# one of them, whatever its name.
mkdir -p "$dir/src/lua/lmpio"
echo 'return "probe of the rock"' > "$dir/src/lua/lmpio/rock_probe.lua"
tree=$dir/tree
(cd "$dir/src" && timeout -k 5 "$T" luarocks --lua-version=5.4 make --tree "$tree" rockspec/lmpio-scm-1.rockspec) \
  >"$dir/make.log" 2>&1
rc=$?
check "luarocks make into a fresh tree" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || { sed 's/^/# /' "$dir/make.log" | tail -n 30; exit 1; }

# Nothing of the environment but what `luarocks path` says (for require).
unset LUA_PATH LUA_CPATH LUA_PATH_5_4 LUA_CPATH_5_4
cd "$dir/work" || exit 1
lmpio() { timeout -k 5 60 "$tree/bin/lmpio" "$@"; }
paths=$(luarocks --lua-version=5.4 --tree "$tree" path)
out=$(eval "$paths"; lua5.4 -e 'local l = require "lmpio"; io.write(l.version, " ", package.searchpath("lmpio", package.cpath))')
check "require 'lmpio' with the tree's paths: the module of the tree" \
  sh -c 'case "$0" in *" $1/lib/lua/5.4/lmpio.so") ;; *) exit 1 ;; esac' "$out" "$tree"
# The module's Lua files (lua/lmpio/..., whatever the module holds) are in the tree.
missing=
for f in $(cd "$dir/src/lua" && find . -name '*.lua' ! -name lmpio-command.lua); do
  [ -f "$tree/share/lua/5.4/$f" ] || missing="$missing $f"
done
check "the module's Lua files are installed${missing:+ (missing:$missing)}" [ -z "$missing" ]
out=$(eval "$paths"; lua5.4 -e 'io.write((require "lmpio.rock_probe"))')
check "require 'lmpio.rock_probe' (a Lua file of the module) from the tree" [ "$out" = "probe of the rock" ]

# The command: dump, run (its Lua programs find the tree's module).
(eval "$paths"; lua5.4 -e "local l = require 'lmpio'
  local fh = l.open(l.self, 'ints.dat', 'w')
  fh:write_at(0, l.array(l.INT, { 3, 1, 4, 1, 5 }))
  fh:close()")
out=$(lmpio dump ints.dat --etype INT --columns 5)
check "lmpio dump from the tree's bin" [ "$out" = "3 1 4 1 5" ]
echo 'local l = require "lmpio"; print(l.world:size(), l.world:allreduce(l.world:rank() + 1, "sum"))' > ranks.lua
out=$(lmpio run -n 2 lua5.4 ranks.lua 2>/dev/null)
check "lmpio run -n 2 from the tree's bin: its program finds the module" [ "$out" = "$(printf '2\t3')" ]

# The drop-in library: where lmpio dropin-path says, exporting MPI-IO.
drop=$(lmpio dropin-path)
check "lmpio dropin-path: a file of the tree" sh -c 'case "$0" in "$1"/*) [ -f "$0" ] ;; *) exit 1 ;; esac' "$drop" "$tree"
check "the drop-in exports MPI_File_open" sh -c 'nm -D --defined-only "$0" | grep -q " T MPI_File_open$"' "$drop"
check "the drop-in loads (LD_PRELOAD=\$(lmpio dropin-path))" sh -c '[ -f "$0" ] && [ -z "$(LD_PRELOAD="$0" /bin/true 2>&1)" ]' "$drop"

# The HTML reference.
doc=$(lmpio doc-path)
check "lmpio doc-path: the reference's index.html in the tree" \
  sh -c 'case "$0" in "$1"/*) grep -q "lmpio reference" "$0" ;; *) exit 1 ;; esac' "$doc" "$tree"
check "the reference's pages beside it (topics, stylesheet)" sh -c '[ -f "$0/ldoc.css" ] && ls "$0"/topics/*.html >/dev/null' "$(dirname "$doc")"

# luarocks remove takes everything away.
(cd "$dir/src" && timeout -k 5 60 luarocks --lua-version=5.4 remove --tree "$tree" lmpio) >"$dir/remove.log" 2>&1
check "luarocks remove: the command, the module and the drop-in are gone" \
  sh -c '[ ! -e "$0/bin/lmpio" ] && [ ! -e "$0/lib/lua/5.4/lmpio.so" ] && [ ! -e "$1" ] && [ ! -e "$2" ]' "$tree" "$drop" "$doc"

[ "$failures" -eq 0 ]
