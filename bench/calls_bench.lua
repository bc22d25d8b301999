-- calls_bench.lua — what the module costs a script's own code (issue 20):
-- plain Lua function calls with lmpio loaded, which must run as fast in a job
-- of several ranks as in one (no debug hook on the script's calls).
--
--   LUA_CPATH_5_4="build/lua/?.so;;" mpirun -n P lua5.4 bench/calls_bench.lua [N]
--
-- Each rank times N (LMPIO_CALLS_BENCH_N or the argument, default 2e7) calls
-- of a small Lua function, best of LMPIO_CALLS_BENCH_REPS (3) repetitions,
-- and rank 0 prints one RESULT line with the slowest rank's best time.
-- Compare P = 1 with P = 2 (whole processes, pair by pair, e.g. with
-- `/usr/bin/time` or a benchmark harness): the times should match within noise.
local lmpio = require "lmpio"

local N = math.tointeger(tonumber(arg[1] or os.getenv("LMPIO_CALLS_BENCH_N") or "") or 20000000)
local REPS = math.tointeger(tonumber(os.getenv("LMPIO_CALLS_BENCH_REPS") or "") or 3)

local function add(a, b) return a + b end

local best = math.huge
local sum = 0
for _ = 1, REPS do
  local t = os.clock()
  local s = 0
  for i = 1, N do s = add(s, i) end
  t = os.clock() - t
  sum = s
  if t < best then best = t end
end
assert(sum == N * (N + 1) // 2)
local slowest = lmpio.world:allreduce(best, "max")
if lmpio.world:rank() == 0 then
  print(string.format("RESULT test=plain_calls ranks=%d calls=%d s=%.3f ns_per_call=%.2f",
    lmpio.world:size(), N, slowest, slowest / N * 1e9))
end
