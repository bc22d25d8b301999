-- A fuzzer of the Lua module's file methods: every method, random arguments
-- (not a busted spec: run by hand, from the top of the tree):
--
--   mpirun -n 2 lua5.4 spec/fuzz_methods.lua SEED [ITERATIONS]
--
-- Every rank makes the same sequence of calls (same SEED), so the collective
-- ones match; their arguments are sometimes different on one rank (a wrong
-- offset, count or type there alone).  Errors are expected; a crash or a hang
-- is a defect, and so is a collective call that succeeds on one rank and
-- fails on another, or fails with different classes: at the end rank 0
-- reads every rank's log and compares the outcomes of the collective calls.
-- Requests are kept, waited for, tested, or dropped unfinished; split
-- collectives are begun, ended, begun twice, ended without a beginning.
-- Each rank logs every call and its outcome to /tmp/lmpio-fuzzm.r<rank>.<SEED>
-- (the last line is where it stopped; LMPIO_FUZZ_DIR: another directory than
-- /tmp); the file it works on is /dev/shm/lmpio-fuzzm-<SEED>.  To run it
-- under AddressSanitizer, see spec/fuzz_module.lua.  spec/fuzz_replay.sh
-- (part of make check) replays the seeds that found defects.
--
-- Found with it (2026-11-28), all fixed: an argument error of a nonblocking
-- or split collective on one rank hung the job (lua/file.c agree_failure),
-- and raised another class there than a lower rank's failure elsewhere; a
-- split collective's buffer stayed held after an _end that raised; a
-- nonblocking collective refused on a rank that had a split collective left
-- active left the other ranks waiting (core/src/request.c); a request's
-- finalizer running inside a collective method's argument check made it
-- skip the agreement, and the ranks' calls went apart (lua/request.c r_gc).
package.cpath = (os.getenv("LMPIO_CPATH") or "build/lua/?.so;") .. package.cpath
local lmpio = require "lmpio"
local seed = tonumber(arg[1]) or 1
local N = tonumber(arg[2]) or 300
math.randomseed(seed)
local rank, size = lmpio.world:rank(), lmpio.world:size()
local dir = os.getenv("LMPIO_FUZZ_DIR") or "/tmp"
local logname = function(r) return dir .. "/lmpio-fuzzm.r" .. r .. "." .. seed end
local log = io.open(logname(rank), "w")
local path = "/dev/shm/lmpio-fuzzm-" .. seed
local modes = {"w+", "r+", "r", "w", "a", "w+"}
local f = lmpio.open(path, "w+")
f:write_at_all(rank * 64, ("s"):rep(64))

local function pick(t) return t[math.random(#t)] end
-- The same draw on every rank; with probability p, rank size-1 takes another
-- value of the pool (its argument alone is wrong or different).
local function arg_(t, p)
  local i = math.random(#t)
  local diverge = math.random() < (p or 0.15)
  if diverge and rank == size - 1 then i = i % #t + 1 end
  return t[i]
end
local basic = {lmpio.BYTE, lmpio.INT, lmpio.DOUBLE, lmpio.CHAR, lmpio.SHORT, lmpio.LONG_LONG}
local types = {lmpio.BYTE, lmpio.INT, lmpio.DOUBLE, "not a type", 17}
local offsets = {0, 0, 1, 8, 64, 100, 4096, -1, 2^20, math.maxinteger, 1.5, "x"}
local counts = {0, 1, 4, 16, 100, -1, 2^31, 1.5}
local datas = {"", "abc", ("d"):rep(64), ("e"):rep(5000), {1, 2, 3}, {1.5, "x"}, 3.5, true}
-- (a file of 2^40 bytes or more, sparse, is one records_ordered looking
-- for a separator would read for ever: files stay small, but preallocate)
local sizes = {0, 10, 4096, 100000, -5, 2^20 + 1, "big"}
local prealloc = {0, 10, 4096, 100000, -5, 2^62, "big"}
local infos = {{}, {cb_buffer_size = "1024"}, {romio_cb_write = "enable"}, {romio_cb_read = "disable"},
  {cb_buffer_size = "-3"}, {striping_unit = "65536"}, {lmpio_map_reads = "enable"}, {access_style = "read_once"},
  {cb_nodes = "x"}, {[1] = 2}}
local whences = {lmpio.SEEK_SET, lmpio.SEEK_CUR, lmpio.SEEK_END, 99}
local filetypes = function()
  return pick({lmpio.BYTE, lmpio.INT,
    lmpio.type.resized(lmpio.type.contiguous(4, lmpio.BYTE), 0, 4 * size),
    lmpio.type.vector(3, 2, 5, lmpio.INT)})
end

-- Every call: op name, whether it is collective, the function.
local reqs, splits, uncompared = {}, 0, false
-- One of the nonblocking methods names; its request is kept, waited for
-- now, or dropped unfinished.
local function start(names)
  local m = pick(names)
  log:write("  ", m, "\n"); log:flush()
  local at = m:find("_at") ~= nil
  local r
  if m:find("write") then
    if at then r = f[m](f, arg_(offsets), arg_(datas)) else r = f[m](f, arg_(datas)) end
  elseif at then
    r = f[m](f, arg_(offsets), arg_(counts), arg_(types))
  else
    r = f[m](f, arg_(counts), arg_(types))
  end
  local what = math.random(3)
  if what == 1 then return r:wait() elseif what == 2 then reqs[#reqs + 1] = r; return m end
  return m .. " dropped"
end
local calls = {
  {"set_view", true, function()
    local et = pick({lmpio.BYTE, lmpio.BYTE, lmpio.INT})
    return f:set_view(arg_({0, 0, 8, 4 * rank, -1}), et, filetypes(), arg_({"native", "native", "external32", "internal", "bogus"}, 0.05))
  end},
  {"set_size", true, function() return f:set_size(arg_(sizes, 0.1)) end},
  {"preallocate", true, function() return f:preallocate(arg_(prealloc, 0.1)) end},
  {"sync", true, function() return f:sync() end},
  {"set_info", true, function() return f:set_info(arg_(infos, 0.1)) end},
  {"set_atomicity", true, function() return f:set_atomicity(arg_({true, false, true, "yes"}, 0.1)) end},
  {"seek_shared", true, function() return f:seek_shared(arg_(offsets), arg_(whences, 0.05)) end},
  {"read_at_all", true, function() return f:read_at_all(arg_(offsets), arg_(counts), arg_(types, 0.05)) end},
  {"write_at_all", true, function() return f:write_at_all(arg_(offsets), arg_(datas)) end},
  {"read_all", true, function() return f:read_all(arg_(counts), arg_(types, 0.05)) end},
  {"write_all", true, function() return f:write_all(arg_(datas)) end},
  {"read_ordered", true, function() return f:read_ordered(arg_(counts), arg_(types, 0.05)) end},
  {"write_ordered", true, function() return f:write_ordered(arg_(datas)) end},
  {"records_ordered", true, function()
    local n, max, sep = 0, arg_({1, 16, 100, -1, 0}, 0.1), arg_({"\n", "s", "", 3}, 0.05)
    log:write("  max ", tostring(max), " sep ", ("%q"):format(sep), "\n"); log:flush()
    for rec in f:records_ordered{max = max, sep = sep} do
      n = n + #rec -- (no break: leaving on one rank alone is the script's error)
    end
    return n
  end},
  {"read_at", false, function() return f:read_at(arg_(offsets), arg_(counts), arg_(types)) end},
  {"write_at", false, function() return f:write_at(arg_(offsets), arg_(datas)) end},
  {"read", false, function() return f:read(arg_(counts), arg_(types)) end},
  {"write", false, function() return f:write(arg_(datas)) end},
  {"read_shared", false, function() return f:read_shared(arg_(counts), arg_(types)) end},
  {"write_shared", false, function() return f:write_shared(arg_(datas)) end},
  {"seek", false, function() return f:seek(arg_(offsets), arg_(whences)) end},
  {"get_position", false, function() return f:get_position() end},
  {"get_position_shared", false, function() return f:get_position_shared() end},
  {"get_byte_offset", false, function() return f:get_byte_offset(arg_(offsets)) end},
  {"get_size", false, function() return f:get_size() end},
  {"get_info", false, function() return f:get_info() end},
  {"get_view", false, function() return f:get_view() end},
  {"get_amode", false, function() return f:get_amode() end},
  {"get_group", false, function() return f:get_group() end},
  {"get_atomicity", false, function() return f:get_atomicity() end},
  {"get_type_extent", false, function() return f:get_type_extent(arg_(types)) end},
  {"stats", false, function() return f:stats() end},
  {"tostring", false, function() return tostring(f) end},
  -- nonblocking (start: below); inb_all is collective, but not compared:
  -- the rank with a bad argument raises at once, the others when they
  -- complete the request
  {"inb", false, function()
    return start({"iread_at", "iwrite_at", "iread", "iwrite", "iread_shared", "iwrite_shared"})
  end},
  {"inb_all", false, function() return start({"iread_at_all", "iwrite_at_all", "iread_all", "iwrite_all"}) end},
  {"complete", false, function()
    local what = math.random(4)
    if #reqs == 0 then return "none" end
    if what == 1 then local r = table.remove(reqs); return r:wait()
    elseif what == 2 then return reqs[#reqs]:test()
    elseif what == 3 then local rs = reqs; reqs = {}; return lmpio.waitall(rs)
    else return lmpio.waitany(reqs) end
  end},
  {"split", true, function()
    local kind = pick({"read_at_all", "write_at_all", "read_all", "write_all", "read_ordered", "write_ordered"})
    local step = math.random(4)
    log:write("  ", kind, " step ", step, "\n"); log:flush()
    -- a _begin left active: where it ran in the background, a bad argument
    -- on one rank shows on the others only at their _end
    uncompared = step == 1
    if step == 4 then -- an end without (or after) a beginning
      splits = 0
      return f[kind .. "_end"](f)
    end
    local b = kind .. "_begin"
    if kind == "write_at_all" then f[b](f, arg_(offsets), arg_(datas))
    elseif kind == "read_at_all" then f[b](f, arg_(offsets), arg_(counts), arg_(types, 0.05))
    elseif kind:find("write") then f[b](f, arg_(datas))
    else f[b](f, arg_(counts), arg_(types, 0.05)) end
    splits = 1
    if step == 1 then return "left active" end -- (not compared: below)
    splits = 0
    return f[kind .. "_end"](f)
  end},
  {"close", true, function() return f:close() end},
  {"reopen", true, function()
    pcall(f.close, f)
    f = lmpio.open(path, arg_(modes, 0.05))
    return "open"
  end},
}

local collective_outcome = {} -- [i] = "name ok" or "name class"
local ok_n, err_n = 0, 0
for i = 1, N do
  -- (each iteration from its own seed: a call that failed on one rank alone
  -- drew fewer numbers there, and the ranks' sequences must not drift apart)
  math.randomseed(seed * 1000003 + i)
  local c = pick(calls)
  log:write(i, " ", c[1], "\n"); log:flush()
  local r = {pcall(c[3])}
  local out
  if r[1] then out = "ok" ok_n = ok_n + 1
  else
    err_n = err_n + 1
    out = lmpio.iserror(r[2]) and ("class " .. r[2].class) or "lua error"
  end
  log:write("  ", out, " ", tostring(r[2]):sub(1, 200):gsub("\n", " "), "\n"); log:flush()
  if c[2] and not uncompared then collective_outcome[#collective_outcome + 1] = i .. " " .. c[1] .. " " .. out end
  uncompared = false
  -- a file that could not be reopened: open it again, everywhere
  if not pcall(f.get_amode, f) then
    local ok = pcall(function() f = lmpio.open(path, "w+") end)
    log:write("  reopened ", tostring(ok), "\n"); log:flush()
  end
end
pcall(lmpio.waitall, reqs)
pcall(f.close, f)
local out = io.open(logname(rank) .. ".coll", "w")
out:write(table.concat(collective_outcome, "\n"), "\n")
out:close()
lmpio.world:barrier()
local bad = 0
if rank == 0 then
  os.remove(path)
  local mine = collective_outcome
  for r = 1, size - 1 do
    local j = 0
    for line in io.lines(logname(r) .. ".coll") do
      j = j + 1
      if line ~= mine[j] then
        bad = bad + 1
        if bad <= 5 then print(("seed %d: collective outcomes differ: rank 0 %q, rank %d %q"):format(seed, tostring(mine[j]), r, line)) end
      end
    end
  end
  print(("seed %d: %d ok, %d errors, %d collective outcomes that differ"):format(seed, ok_n, err_n, bad))
end
os.exit(bad == 0 and 0 or 3)
