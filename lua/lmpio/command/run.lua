-- lmpio run: mpirun in a pipeline, rank 0's standard input and output
-- passed exactly.
--
-- The launcher is a shell script: it copies its standard input into one
-- FIFO and the other FIFO to its standard output (two cat processes) while
-- mpirun runs, with Open MPI's fork agent making rank 0's standard input
-- and output those FIFOs.  The rank's own descriptors 0 and 1 are the
-- FIFOs, so print, "-" and a plain C program's stdin all see them, in
-- order, and mpirun forwards nothing of rank 0's.  No MPI in this process.

local fail = require("lmpio.command.common").fail

local usage = [[
usage: lmpio run [MPIRUN OPTIONS] PROGRAM [ARGS]

Runs `mpirun [MPIRUN OPTIONS] PROGRAM [ARGS]` with its standard input and
output passed between the shell and rank 0 by lmpio run itself, through
two FIFOs that rank 0 takes as its standard input and output (mpirun's
own forwarding of standard input is off).  In a pipeline:

  cat input | lmpio run -n 4 lua5.4 filter.lua | sort
  lmpio run -n 4 lua5.4 filter.lua < input > output

Everything rank 0 writes to its standard output (lmpio.stdout, "-",
"/dev/stdout", print, io.write, printf) is the output, in the order rank 0
writes it; what the other ranks print goes to standard error.  Rank 0's
standard input is the input.  The exit status is mpirun's.  More ranks
than cores are allowed (as --oversubscribe; --nooversubscribe refuses).
Rank 0 must run on this machine.  Lua programs find the module that lmpio
itself uses (LUA_PATH_5_4 and LUA_CPATH_5_4 are set to its search paths:
the rock's tree, or build/lua for build/bin/lmpio).  MPIRUN (environment) names the launcher
(default mpirun); one that is not Open MPI 1 to 4 runs as it is, with its
own forwarding.
]]

-- The fork agent's script: every rank is started as
-- `/bin/sh -c AGENT DIR PROGRAM ARGS`.  The first rank 0 (the mkdir: not
-- the rank 0 of a spawned job) takes DIR's FIFOs as its standard input and
-- output; then every rank becomes PROGRAM.  Open MPI cuts the agent at its
-- spaces: the script gets tabs instead (agent() below).
local AGENT = [=[
if [ "${OMPI_COMM_WORLD_RANK-${PMIX_RANK-}}" = 0 ]; then
if mkdir "$0/rank0" 2>/dev/null; then exec <"$0/in" >"$0/out"
elif [ ! -d "$0" ]; then printf 'MSG\n' >&2; exit 1; fi
fi
exec "$@"
]=]

local function agent()
  local msg = "lmpio run: rank 0 runs on another machine than lmpio run: its standard input and output cannot reach it"
  return (AGENT:gsub("MSG", (msg:gsub(" ", "\\040"))):gsub(" ", "\t"))
end

-- $1 mpirun, $2 the agent's script, then mpirun's arguments.
local LAUNCHER = [=[
mpirun=$1 agent=$2
shift 2
case $("$mpirun" --version 2>/dev/null) in
*"(Open MPI) "[1-4].*) ;;
*)
  echo "lmpio run: $mpirun is not Open MPI 1 to 4: running it as it is (its own forwarding of standard input and output)" >&2
  exec "$mpirun" "$@" ;;
esac
dir=$(mktemp -d "${TMPDIR:-/tmp}/lmpio-run.XXXXXX") || exit 1
case $dir in *[[:space:]]*) # the agent's command line is cut at spaces
  rmdir "$dir"
  dir=$(mktemp -d /tmp/lmpio-run.XXXXXX) || exit 1 ;;
esac
feeder= drainer=
trap 'for p in $feeder $drainer; do kill "$p" 2>/dev/null; done; rm -rf "$dir"' EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM
mkfifo -m 600 "$dir/in" "$dir/out" || exit 1
# Each cat opens its FIFO (and waits there for rank 0 to open the other
# end); an asynchronous command's standard input would be /dev/null: fd 3.
exec 3<&0
cat <&3 >"$dir/in" 3<&- &
feeder=$!
exec 3<&-
cat <"$dir/out" &
drainer=$!
# More ranks than cores are allowed, as --oversubscribe does (a pipeline
# on a laptop), unless the arguments or the environment say otherwise.
case " $* " in
*" --nooversubscribe "* | *" -nooversubscribe "*) ;;
*) [ -n "${OMPI_MCA_rmaps_base_oversubscribe+set}" ] || export OMPI_MCA_rmaps_base_oversubscribe=1 ;;
esac
"$mpirun" --stdin none --mca orte_fork_agent "/bin/sh -c $agent $dir" "$@" </dev/null >&2
status=$?
# Rank 0 is gone: what it did not read is nobody's.  A drainer still
# waiting for rank 0 to open its FIFO gets an end of file.
kill "$feeder" 2>/dev/null
wait "$feeder" 2>/dev/null
feeder=
: <>"$dir/out"
wait "$drainer"
drainer=
if [ ! -d "$dir/rank0" ] && [ "$status" -eq 0 ]; then
  echo "lmpio run: no rank 0 started here (OMPI_COMM_WORLD_RANK unset?): its standard input and output were not passed" >&2
  status=1
fi
exit "$status"
]=]

local function quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local function run(argv)
  if argv[2] == "--help" or argv[2] == "-h" then return io.stdout:write(usage) end
  if argv[2] == nil then fail("run: say what to run: lmpio run [MPIRUN OPTIONS] PROGRAM [ARGS] (see 'lmpio run --help')") end
  -- Lua programs find the module that this command finds (the rock's, or
  -- build/lua for build/bin/lmpio): its search paths are theirs.
  local paths = package.searchpath("lmpio", package.cpath)
    and "LUA_PATH_5_4=" .. quote(package.path) .. " LUA_CPATH_5_4=" .. quote(package.cpath) .. " " or ""
  local words = { paths .. "exec /bin/sh -c", quote(LAUNCHER), "lmpio-run", quote(os.getenv("MPIRUN") or "mpirun"), quote(agent()) }
  for i = 2, #argv do words[#words + 1] = quote(argv[i]) end
  io.stdout:flush()
  local _, how, code = os.execute(table.concat(words, " "))
  os.exit(how == "signal" and 128 + code or code)
end

return { run = { usage = usage, main = run } }
