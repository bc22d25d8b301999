-- A fuzzer of the Lua module's file methods and user data representations
-- (not a busted spec: run by hand, from the top of the tree):
--
--   mpirun -n 2 lua5.4 spec/fuzz_module.lua SEED [ITERATIONS]
--
-- Every rank makes the same random calls (same SEED): set_view with random
-- derived types and representations, then reads and writes; the
-- representations' Lua converters misbehave on purpose (fail, on rank 1
-- only or everywhere, yield, keep their buffers, close the file, call
-- collectives, return wrong values).  Errors are expected; a crash or a hang
-- is a defect.  Each rank logs every call and its outcome to
-- /tmp/lmpio-fuzz.r<rank>.<SEED> (the last line is where it stopped), and the
-- file it works on is /dev/shm/lmpio-fuzz-<SEED>.  With the module built
-- under AddressSanitizer (make BUILD=build/asan CFLAGS="-O1 -g
-- -fsanitize=address,undefined -fno-omit-frame-pointer" lua), run it with
-- LMPIO_CPATH="build/asan/lua/?.so;" and the sanitizer runtimes preloaded
-- (mpirun -x LMPIO_CPATH -x LD_PRELOAD="$(mpicc -print-file-name=libasan.so)
-- $(mpicc -print-file-name=libubsan.so)" -x ASAN_OPTIONS=detect_leaks=0).
--
-- Found with it (2026-11-28), both fixed: seed 1 hung (a converter's
-- collective call on one rank: core/src/agree.c now refuses it), seed 32
-- crashed (a read into a buffer sized by Open MPI's bounds of
-- hvector(100, 3, -1, BYTE) wrote before the buffer: lua/buffer.c span, with
-- the core's bounds from lmpio_type_data_bounds).
package.cpath = (os.getenv("LMPIO_CPATH") or "build/lua/?.so;") .. package.cpath
local lmpio = require "lmpio"
local seed = tonumber(arg[1]) or 1
local N = tonumber(arg[2]) or 500
math.randomseed(seed)
local rank = lmpio.world:rank()
local log = io.open("/tmp/lmpio-fuzz.r" .. rank .. "." .. seed, "w")
local path = "/dev/shm/lmpio-fuzz-" .. seed
local f = lmpio.open(path, "w+")
local kept = {}
local function pick(t) return t[math.random(#t)] end
local basic = {lmpio.BYTE, lmpio.INT, lmpio.DOUBLE, lmpio.CHAR, lmpio.SHORT, lmpio.LONG_LONG, lmpio.FLOAT}
local ints = {0, 1, 2, 3, 7, 64, -1, 100}
local function rtype(depth)
  if depth > 2 or math.random() < 0.4 then return pick(basic) end
  local inner = rtype(depth + 1)
  local c = math.random(7)
  local ok, t = pcall(function()
    if c == 1 then return lmpio.type.contiguous(pick(ints), inner)
    elseif c == 2 then return lmpio.type.vector(pick(ints), pick(ints), pick(ints), inner)
    elseif c == 3 then return lmpio.type.resized(inner, pick(ints), pick(ints))
    elseif c == 4 then return lmpio.type.indexed({pick(ints), pick(ints)}, {pick(ints), pick(ints)}, inner)
    elseif c == 5 then return lmpio.type.struct({pick(ints), pick(ints)}, {pick(ints), pick(ints)}, {inner, pick(basic)})
    elseif c == 6 then return lmpio.type.subarray({pick(ints), pick(ints)}, {pick(ints), pick(ints)}, {pick(ints), pick(ints)}, lmpio.ORDER_C, inner)
    else return lmpio.type.hvector(pick(ints), pick(ints), pick(ints), inner) end
  end)
  if ok and t then return t end
  return pick(basic)
end
local evil = {
  function(...) if rank == 1 then error("converter fails on rank 1") end end,
  function(...) error("converter fails") end,
  function(...) return "not a number" end,
  function(...) coroutine.yield() end,
  function(ub, dt, count, fb, pos) kept[#kept + 1] = ub; kept[#kept + 1] = fb; log:write("    KEEP ", tostring(ub), " | ", tostring(fb), " | ", tostring(dt), " ", tostring(count), " ", tostring(pos), "\n"); log:flush() end,
  function(...) collectgarbage() end,
  function(...) return f:write_at(0, "reentrant") end,
  function(...) return f:read_at_all(0, 4) end,
  function(...) f:close() end,
  function(...) return f:set_view(0, lmpio.BYTE, lmpio.BYTE, "native") end,
  function(...) INNER = (INNER or 0) + 1; return lmpio.register_datarep("inner" .. rank .. "_" .. INNER, {read = function() end}) end,
  function(...) return nil end,
}
local extents = {function() return 4 end, function() return -1 end, function() return 0 end,
  function() return 2^62 end, function() error("extent fails") end, function() return "x" end,
  function() return 0/0 end}
local reps = {"native", "external32", "internal"}
for i = 1, 40 do
  local name = "fz" .. seed .. "_" .. i
  local spec
  local c = math.random(3)
  if c == 1 then spec = {read = pick(evil), write = pick(evil), extent = pick(extents)}
  elseif c == 2 then spec = {encode = pick(evil), decode = pick(evil), extent = pick(extents)}
  else spec = {formats = {INT = pick({">i4", "<i8", ">f", "zz", ">i17"}), DOUBLE = pick({">d", ">f", "<n"})}} end
  if pcall(lmpio.register_datarep, name, spec) then reps[#reps + 1] = name end
end
local ok_n, err_n = 0, 0
for i = 1, N do
  local et, ft, rep = rtype(0), rtype(0), pick(reps)
  log:write(i, " rep ", rep, "\n"); log:flush()
  local ok, e = pcall(function()
    f:set_view(pick({0, 8, 3, -1, 2^40}), et, ft, rep)
  end)
  log:write("  set_view ", tostring(ok), " ", tostring(e):sub(1, 160), "\n"); log:flush()
  for k = 1, 3 do
    local op = math.random(8)
    local r = {pcall(function()
      if op == 1 then return f:write_at(pick({0, 1, 5, 100}), ("abcdefgh"):rep(pick({1, 10, 100})))
      elseif op == 2 then return f:read_at(pick({0, 1, 5}), pick({1, 4, 100}), pick(basic))
      elseif op == 3 then return f:write_at_all(pick({0, 2}), pick({ {1, 2, 3}, ("z"):rep(64), 3.5 }), pick(basic))
      elseif op == 4 then return f:read_all(pick({1, 8, 64}), et)
      elseif op == 5 then return f:write_ordered(("q"):rep(pick({1, 16, 1000})))
      elseif op == 6 then local r = f:iwrite_at(0, ("w"):rep(32)); return r:wait()
      elseif op == 7 then return f:get_type_extent(pick(basic))
      else return f:read_ordered(pick({1, 16}), et) end
    end)}
    log:write("  op ", op, " ", tostring(r[1]), " ", tostring(r[2]):sub(1, 160), "\n"); log:flush()
    if r[1] then ok_n = ok_n + 1 else err_n = err_n + 1 end
  end
  if not pcall(f.get_size, f) then f = lmpio.open(path, "w+") end
  if i % 50 == 0 then collectgarbage() end
  for j, b in ipairs(kept) do log:write("    check ", j, " ", type(b), "\n"); log:flush(); pcall(tostring, b) end
  log:write("  kept ", #kept, " checked\n"); log:flush()
end
for _, b in ipairs(kept) do pcall(function() return #b end); pcall(function() return b[1] end); pcall(tostring, b) end
pcall(f.close, f)
lmpio.world:barrier(); if rank == 0 then os.remove(path) end
print(("seed %d: %d ok, %d errors"):format(seed, ok_n, err_n))
