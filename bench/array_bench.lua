-- array_bench.lua — Lua arrays as a scientist's toolkit (issue 20): element
-- access, bulk operations, and the histogram job of the issue.
--
--   LUA_CPATH_5_4="build/lua/?.so;;" mpirun -n P lua5.4 bench/array_bench.lua PART...
--
-- PART (any of them, in order; default "loop ops job"):
--   loop  (rank 0) N doubles (LMPIO_ARRAY_BENCH_N, 10^7): sum them with a Lua
--         loop over a table t[i] (the ceiling of a Lua loop), over a[i]
--         (__index), over a:totable(), over a:chunks(), and with a:sum();
--         store with a[i] = x and t[i] = x
--   ops   (rank 0) the same doubles: a:sum, a:minmax, a:histogram(0, 1, 66)
--         against the same in Lua loops over a[i] and over a:chunks()
--   make  write the job's file: LMPIO_ARRAY_BENCH_JOB_MB (1024) MiB of doubles
--         uniform in [0, 1) at LMPIO_ARRAY_BENCH_FILE (/dev/shm/lmpio-array-bench.dat)
--   job   the issue's job: every rank reads its block of the file
--         (lmpio.block) with read_at_all in pieces of 16 MiB, counts 66 bins of
--         [0, 1) with a:histogram, and comm:allreduce adds the counts up;
--         also the same job with a Lua loop over a:chunks() (job_chunks) and,
--         when LMPIO_ARRAY_BENCH_INDEX=1, over a[i] (job_index, slow)
-- Output: one line per measurement,
--   RESULT side=lua part=P test=T sec=S [ns=per element] [n=elements] [check=...]
-- best of LMPIO_ARRAY_BENCH_REPS (3) repetitions (the job: wall time between
-- barriers, the slowest rank).  bench/array_bench.py does the same with
-- numpy and mpi4py; bench/array_bench.sh runs both and prints them side by
-- side.
local lmpio = require "lmpio"

local world = lmpio.world
local rank, size = world:rank(), world:size()
local wtime = lmpio.wtime

local function envn(name, def)
  local v = tonumber(os.getenv(name) or "")
  return (v and v > 0) and math.tointeger(v) or def
end
local N = envn("LMPIO_ARRAY_BENCH_N", 10000000)
local REPS = envn("LMPIO_ARRAY_BENCH_REPS", 3)
local JOB_MB = envn("LMPIO_ARRAY_BENCH_JOB_MB", 1024)
local FILE = os.getenv("LMPIO_ARRAY_BENCH_FILE") or "/dev/shm/lmpio-array-bench.dat"
local PIECE = 2 * 1024 * 1024 -- doubles per read (16 MiB)
local LO, HI, NBINS = 0.0, 1.0, 66

local function result(part, test, sec, n, check)
  local s = string.format("RESULT side=lua part=%s test=%s sec=%.6f", part, test, sec)
  if n then s = s .. string.format(" ns=%.2f n=%d", sec / n * 1e9, n) end
  if check then s = s .. " check=" .. check end
  print(s)
  io.stdout:flush()
end

-- Best wall time of fn over REPS runs, and its last result.
local function best(fn)
  local b, r = math.huge, nil
  for _ = 1, REPS do
    collectgarbage()
    local t0 = wtime()
    r = fn()
    b = math.min(b, wtime() - t0)
  end
  return b, r
end

-- N doubles uniform in [0, 1), the same in a table and in an array.
local function data()
  math.randomseed(42)
  local t = {}
  for i = 1, N do t[i] = math.random() end
  return t, lmpio.array(lmpio.DOUBLE, N):set(1, t)
end

local function fmt(x) return string.format("%.6f", x) end

local function part_loop()
  if rank ~= 0 then return end
  local t, a = data()
  local function run(test, fn)
    local sec, r = best(fn)
    result("loop", test, sec, N, fmt(r))
  end
  run("sum_table", function() local s = 0 for i = 1, N do s = s + t[i] end return s end)
  run("sum_index", function() local s = 0 for i = 1, N do s = s + a[i] end return s end)
  run("sum_totable", function() local u = a:totable() local s = 0 for i = 1, N do s = s + u[i] end return s end)
  run("sum_chunks", function()
    local s = 0
    for _, u, n in a:chunks() do for k = 1, n do s = s + u[k] end end
    return s
  end)
  run("sum_bulk", function() return a:sum() end)
  run("store_table", function() for i = 1, N do t[i] = i * 0.5 end return t[N] end)
  run("store_index", function() for i = 1, N do a[i] = i * 0.5 end return a[N] end)
end

local function part_ops()
  if rank ~= 0 then return end
  local _, a = data()
  local function run(test, fn, check)
    local sec, r = best(fn)
    result("ops", test, sec, N, check(r))
  end
  local function first_bins(c) return string.format("%d,%d,%d", c[1], c[2], c[NBINS]) end
  run("sum_bulk", function() return a:sum() end, fmt)
  run("minmax_bulk", function() return { a:minmax() } end, function(r) return fmt(r[1]) .. "," .. fmt(r[2]) end)
  run("minmax_index", function()
    local lo, hi = a[1], a[1]
    for i = 2, N do
      local x = a[i]
      if x < lo then lo = x end
      if x > hi then hi = x end
    end
    return { lo, hi }
  end, function(r) return fmt(r[1]) .. "," .. fmt(r[2]) end)
  run("histogram_bulk", function() return a:histogram(LO, HI, NBINS):totable() end, first_bins)
  run("histogram_index", function()
    local c = {}
    for k = 1, NBINS do c[k] = 0 end
    for i = 1, N do
      local x = a[i]
      if x >= LO and x < HI then
        local k = (x - LO) * NBINS // 1 + 1
        c[k] = c[k] + 1
      end
    end
    return c
  end, first_bins)
  run("histogram_chunks", function()
    local c = {}
    for k = 1, NBINS do c[k] = 0 end
    for _, u, n in a:chunks() do
      for i = 1, n do
        local x = u[i]
        if x >= LO and x < HI then
          local k = (x - LO) * NBINS // 1 + 1
          c[k] = c[k] + 1
        end
      end
    end
    return c
  end, first_bins)
end

local function part_make()
  local total = JOB_MB * 1024 * 1024 // 8
  local fh <close> = lmpio.open(world, FILE, "w")
  math.randomseed(7 + rank)
  local piece = lmpio.array(lmpio.DOUBLE, math.min(PIECE, total))
  for i = 1, #piece do piece[i] = math.random() end
  local first, count = lmpio.block(total, size, rank)
  local rounds = world:allreduce((count + PIECE - 1) // PIECE, "max")
  for r = 0, rounds - 1 do
    local n = math.max(0, math.min(PIECE, count - r * PIECE))
    fh:write_at_all((first + r * PIECE) * 8, piece:sub(1, n))
  end
  if rank == 0 then print(string.format("made %s: %d MiB", FILE, JOB_MB)) end
end

-- The job: read this rank's block in pieces, count, add up.  count_piece
-- (view, counts) counts one piece into counts (a Lua table or an array).
local function job(test, count_piece, new_counts)
  local fh <close> = lmpio.open(world, FILE, "r")
  local total = fh:get_size() // 8
  local first, count = lmpio.block(total, size, rank)
  local rounds = world:allreduce((count + PIECE - 1) // PIECE, "max")
  local buf = lmpio.array(lmpio.DOUBLE, PIECE)
  local b, tread, counts = math.huge, 0, nil
  for _ = 1, REPS do
    counts = new_counts()
    world:barrier()
    local t0, tr = wtime(), 0
    for r = 0, rounds - 1 do
      local n = math.max(0, math.min(PIECE, count - r * PIECE))
      local view = buf:sub(1, n)
      local t1 = wtime()
      fh:read_at_all((first + r * PIECE) * 8, view)
      tr = tr + wtime() - t1
      count_piece(view, counts)
    end
    if type(counts) == "table" then counts = lmpio.array(lmpio.INT64_T, counts) end
    counts = world:allreduce(counts)
    world:barrier()
    local t = world:allreduce(wtime() - t0, "max")
    if t < b then b, tread = t, world:allreduce(tr, "max") end
  end
  if rank ~= 0 then return end
  result("job", test, b, total, string.format("%d,%d,%d,sum=%d", counts[1], counts[2], counts[NBINS], counts:sum()))
  result("job", test .. "_read", tread, total)
end

local function part_job()
  local have = world:bcast(rank == 0 and io.open(FILE, "rb") ~= nil)
  if not have then part_make() end
  job("job_bulk", function(view, counts) view:histogram(LO, HI, NBINS, counts) end,
      function() return lmpio.array(lmpio.INT64_T, NBINS) end)
  local function zeros()
    local c = {}
    for k = 1, NBINS do c[k] = 0 end
    return c
  end
  job("job_chunks", function(view, c)
    for _, u, n in view:chunks() do
      for i = 1, n do
        local x = u[i]
        if x >= LO and x < HI then
          local k = (x - LO) * NBINS // 1 + 1
          c[k] = c[k] + 1
        end
      end
    end
  end, zeros)
  if os.getenv("LMPIO_ARRAY_BENCH_INDEX") == "1" then
    job("job_index", function(view, c)
      for i = 1, #view do
        local x = view[i]
        if x >= LO and x < HI then
          local k = (x - LO) * NBINS // 1 + 1
          c[k] = c[k] + 1
        end
      end
    end, zeros)
  end
end

local parts = { loop = part_loop, ops = part_ops, make = part_make, job = part_job }
local list = #arg > 0 and arg or { "loop", "ops", "job" }
for _, p in ipairs(list) do
  assert(parts[p], "unknown part " .. p .. " (loop, ops, make, job)")
  parts[p]()
  world:barrier()
end
