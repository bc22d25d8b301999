-- lua_bench.lua — the Lua side of the Lua-overhead benchmark (issue 3).
--
--   LUA_CPATH_5_4="build/lua/?.so;;" mpirun -n P lua5.4 bench/lua_bench.lua [DIR [FS_LABEL]]
--
-- The same workloads as bench/lua_bench.c (read its header), through the Lua
-- module; bench/lua_bench.sh alternates launches of the two and prints the
-- comparison.  Small calls, each LMPIO_LUA_BENCH_N (200000) times, 8 bytes at
-- consecutive offsets of the rank's region:
--   write8_string  fh:write_at(off, s)          s an 8-byte Lua string (MPI_CHAR)
--   write8_buffer  fh:write_at(off, b)          b = lmpio.buffer(8) (MPI_BYTE)
--   write8_array   fh:write_at(off, a)          a = lmpio.array(lmpio.DOUBLE, 1)
--   read8_buffer   fh:read_at(off, b)           into the preallocated buffer
--   read8_array    fh:read_at(off, a)           into the preallocated array
--   nop_call       f(fh, off, s) with f = rawequal: the interpreter's own cost
--                  of a loop iteration calling a C function with these arguments
-- and one write_at / read_at of LMPIO_LUA_BENCH_MB (64) MiB from/into an
-- lmpio.array of doubles.  Output: the RESULT lines of lua_bench.c with
-- side=lua.
--
-- Converters (part "conv"): one write_at and one read_at of
-- LMPIO_LUA_BENCH_CONV_MB (16) MiB of doubles per rank through a view
-- (etype DOUBLE) in each representation, best of LMPIO_LUA_BENCH_CONV_REPS (5), MB/s
-- of native data of all ranks:
--   conv_native      "native" (no conversion: the ceiling)
--   conv_external32  "external32" (the core's own C conversions)
--   conv_formats     register_datarep{formats = {DOUBLE = ">d"}} (compiled to C)
--   conv_formats_f   register_datarep{formats = {DOUBLE = ">f"}} (narrowing, checked)
--   conv_bulk        register_datarep{read = , write = } with lmpio.byteswap
--   conv_codec       register_datarep{encode = , decode = } with string.pack,
--                    on LMPIO_LUA_BENCH_CODEC_MB (1) MiB: one Lua call per item
-- Every read is compared with the data written.
--
-- Hosted: `lua_bench --lua bench/lua_bench.lua DIR FS` (the C program) runs
-- this file in a Lua state of its own process, with the global
-- LMPIO_LUA_BENCH_HOSTED set; the chunk then returns the module M below and
-- the C program alternates its own repetitions with M's, one by one, in the
-- same process (so that the noise of the shared machine hits both alike).
local lmpio = require "lmpio"

local world = lmpio.world
local rank, nranks = world:rank(), world:size()

local function envn(name, def)
  local v = tonumber(os.getenv(name) or "")
  return (v and v > 0) and math.tointeger(v) or def
end
local N = envn("LMPIO_LUA_BENCH_N", 200000)
local REPS = envn("LMPIO_LUA_BENCH_REPS", 3)
local MIB = envn("LMPIO_LUA_BENCH_MB", 64)
local LARGE_REPS = envn("LMPIO_LUA_BENCH_LARGE_REPS", 10)
local CONV_MIB = envn("LMPIO_LUA_BENCH_CONV_MB", 16)
local CODEC_MIB = envn("LMPIO_LUA_BENCH_CODEC_MB", 1)
local CONV_REPS = envn("LMPIO_LUA_BENCH_CONV_REPS", 5)
local wtime = lmpio.wtime

local function slowest(t) return world:allreduce(t + 0.0, "max") end
local function all_ok(ok) return world:allreduce(ok and true or false, "land") end

-- The 8-byte pattern of small-call workload w (as pattern8 in lua_bench.c).
local function pattern8(w) return "lmpio-w" .. string.char(48 + w) end

-- ---- small calls ------------------------------------------------------------

-- Each loop is its own function with everything in locals/upvalues, as a
-- user would write it; they differ only in the call.
local loops = {}
loops.write8_string = function(fh, base, n, s)
  for i = 0, n - 1 do fh:write_at(base + i * 8, s) end
end
loops.write8_buffer = loops.write8_string  -- the data argument differs
loops.write8_array = loops.write8_string
loops.read8_buffer = function(fh, base, n, b)
  for i = 0, n - 1 do fh:read_at(base + i * 8, b) end
end
loops.read8_array = loops.read8_buffer
loops.nop_call = function(fh, base, n, s)
  local f = rawequal
  for i = 0, n - 1 do f(fh, base + i * 8, s) end
end

-- test name -> pattern index (the C side's workload numbers), kind
local SMALL = {
  {"write8_string", 0, "w"}, {"write8_buffer", 1, "w"}, {"write8_array", 2, "w"},
  {"read8_buffer", 3, "r"}, {"read8_array", 4, "r"}, {"nop_call", 5, "n"},
}
local small_by_name = {}
for _, t in ipairs(SMALL) do small_by_name[t[1]] = t end

local M = {N = N, MIB = MIB, SMALL = SMALL}
local S, L, C = {}, {}, {} -- state of the small, the large and the converter workloads

-- ---- converters ---------------------------------------------------------------

-- test name -> representation, MiB per rank
local CONV = {
  {"conv_native", "native"}, {"conv_external32", "external32"}, {"conv_formats", "lua-bench-formats"},
  {"conv_formats_f", "lua-bench-formats-f"}, {"conv_bulk", "lua-bench-bulk"}, {"conv_codec", "lua-bench-codec"},
}

local function register_converters()
  lmpio.register_datarep("lua-bench-formats", {formats = {DOUBLE = ">d"}})
  lmpio.register_datarep("lua-bench-formats-f", {formats = {DOUBLE = ">f"}})
  lmpio.register_datarep("lua-bench-bulk", {
    extent = {DOUBLE = 8},
    write = function(ub, dt, count, fb, pos) lmpio.byteswap(fb, 0, ub, pos * 8, count, 8) end,
    read = function(ub, dt, count, fb, pos) lmpio.byteswap(ub, pos * 8, fb, 0, count, 8) end,
  })
  local pack, unpack = string.pack, string.unpack
  lmpio.register_datarep("lua-bench-codec", {
    extent = {DOUBLE = 8},
    encode = function(_, v) return pack(">d", v) end,
    decode = function(_, b) return (unpack(">d", b)) end,
  })
end

function M.init(dir, fs, parts)
  parts = parts or "small,large"
  M.fs = fs
  local id = world:bcast(rank == 0 and string.format("%d", math.floor(wtime() * 1e6) % 1000000000) or nil, 0)
  if parts:find("small") then
    S.fh = lmpio.open(world, string.format("%s/lmpio-lua-bench-lua-%s-small.dat", dir, id), "w+ delete_on_close")
    S.base = rank * N * 8
    -- distinct words for the reads: word k of the region holds (base/8 + k) + 0.5
    S.words = lmpio.array(lmpio.DOUBLE, N)
    for k = 1, N do S.words[k] = (S.base // 8 + k - 1) + 0.5 end
    S.whole = lmpio.buffer(N * 8)
  end
  if parts:find("large") then
    L.bytes = MIB * 1024 * 1024
    L.n = L.bytes // 8
    L.fh = lmpio.open(world, string.format("%s/lmpio-lua-bench-lua-%s-large.dat", dir, id), "w+ delete_on_close")
    L.off = rank * L.bytes
    L.src = lmpio.array(lmpio.DOUBLE, L.n)
    for k = 1, L.n do L.src[k] = (L.off // 8 + k - 1) + 0.25 end
    L.dst = lmpio.array(lmpio.DOUBLE, L.n)
  end
  if parts:find("conv") then
    register_converters()
    C.fh = lmpio.open(world, string.format("%s/lmpio-lua-bench-lua-%s-conv.dat", dir, id), "w+ delete_on_close")
    for _, mib in ipairs({CONV_MIB, CODEC_MIB}) do
      local n = mib * 131072
      -- values a float holds exactly too (conv_formats_f)
      local src = lmpio.array(lmpio.DOUBLE, n)
      for k = 1, n do src[k] = (k % 1000000) + 0.25 end
      C[mib] = {n = n, src = src, dst = lmpio.array(lmpio.DOUBLE, n)}
    end
  end
end

-- One repetition of converter workload name: seconds of the write and of
-- the read (slowest rank), data ok (all ranks).
function M.conv(name)
  local rep
  for _, t in ipairs(CONV) do if t[1] == name then rep = t[2] end end
  local d = C[name == "conv_codec" and CODEC_MIB or CONV_MIB]
  local fh = C.fh
  fh:set_view(0, lmpio.DOUBLE, lmpio.DOUBLE, "native")
  fh:set_size(0)
  fh:set_view(0, lmpio.DOUBLE, lmpio.DOUBLE, rep)
  d.dst:fill(0)
  collectgarbage("collect")
  world:barrier()
  local t0 = wtime()
  local cw = fh:write_at(rank * d.n, d.src)
  local tw = slowest(wtime() - t0)
  world:barrier()
  t0 = wtime()
  local _, cr = fh:read_at(rank * d.n, d.dst)
  local tr = slowest(wtime() - t0)
  local ok = cw == d.n and cr == d.n and d.dst:tostring() == d.src:tostring()
  if not ok then io.stderr:write(string.format("lua_bench.lua (rank %d): %s: wrong data\n", rank, name)) end
  return tw, tr, all_ok(ok)
end

-- Every converter workload, CONV_REPS times each (interleaved), RESULT
-- lines on rank 0.
function M.conv_all()
  local best = {}
  for _ = 1, CONV_REPS do
    for _, t in ipairs(CONV) do
      local tw, tr, ok = M.conv(t[1])
      local b = best[t[1]] or {w = math.huge, r = math.huge, ok = true}
      b.w, b.r, b.ok = math.min(b.w, tw), math.min(b.r, tr), b.ok and ok
      best[t[1]] = b
    end
  end
  if rank == 0 then
    for _, t in ipairs(CONV) do
      local b, bytes = best[t[1]], C[t[1] == "conv_codec" and CODEC_MIB or CONV_MIB].n * 8
      for _, op in ipairs({"write", "read"}) do
        local sec = op == "write" and b.w or b.r
        print(string.format("RESULT side=lua fs=%s ranks=%d test=%s_%s bytes=%d mbps=%.1f sec=%.5f ok=%d", M.fs,
                            nranks, t[1], op, bytes, bytes * nranks / sec / 1e6, sec, b.ok and 1 or 0))
      end
    end
    io.stdout:flush()
  end
  return 0, true
end

-- One repetition of a small workload: seconds (slowest rank), data ok (all ranks).
function M.small(name)
  local _, w, kind = table.unpack(small_by_name[name])
  local fh, base, words = S.fh, S.base, S.words
  local data, expect, ok = nil, nil, true
  if kind == "w" then
    fh:set_size(0)
    expect = pattern8(w)
    if name == "write8_string" then data = expect
    elseif name == "write8_buffer" then data = lmpio.buffer(expect)
    else data = lmpio.array(lmpio.DOUBLE, expect) end
  elseif kind == "r" then
    fh:write_at(base, words)
    data = name == "read8_buffer" and lmpio.buffer(8) or lmpio.array(lmpio.DOUBLE, 1)
  else
    data = pattern8(w)
  end
  collectgarbage("collect")
  world:barrier()
  local t0 = wtime()
  loops[name](fh, base, N, data)
  local dt = slowest(wtime() - t0)
  if kind == "w" then -- every word of the region holds the pattern
    S.whole:fill(0)
    local _, cnt = fh:read_at(base, S.whole)
    if cnt ~= N * 8 or S.whole:tostring() ~= string.rep(expect, N) then ok = false end
  elseif kind == "r" then -- the last word, and a sample of single reads
    if data:tostring() ~= words:tostring(N, N) then ok = false end
    local one = lmpio.array(lmpio.DOUBLE, 1)
    for k = 0, N - 1, N // 997 + 1 do
      fh:read_at(base + k * 8, one)
      if one[1] ~= words[k + 1] then ok = false end
    end
  end
  if not ok then io.stderr:write(string.format("lua_bench.lua (rank %d): %s: wrong data\n", rank, name)) end
  return dt, all_ok(ok)
end

-- One repetition of the large transfer, op "write" or "read" (a read
-- follows a write).
function M.large(op)
  local fh, off, n = L.fh, L.off, L.n
  local ok = true
  if op == "write" then
    fh:set_size(0)
  else
    L.dst:fill(0)
  end
  collectgarbage("collect")
  world:barrier()
  local t0 = wtime()
  local cnt
  if op == "write" then
    cnt = fh:write_at(off, L.src)
  else
    _, cnt = fh:read_at(off, L.dst)
  end
  local t = slowest(wtime() - t0)
  if cnt ~= n then ok = false end
  if op == "read" and L.dst:tostring() ~= L.src:tostring() then ok = false end
  if not ok then io.stderr:write(string.format("lua_bench.lua (rank %d): %s%dm: wrong data\n", rank, op, MIB)) end
  return t, all_ok(ok)
end

function M.finish()
  if S.fh then S.fh:close() end
  if L.fh then L.fh:close() end
  if C.fh then C.fh:close() end
  S, L, C = {}, {}, {}
end

if LMPIO_LUA_BENCH_HOSTED then return M end

-- ---- standalone ---------------------------------------------------------------

local dir = arg[1] or "/dev/shm"
local fs = arg[2] or (arg[1] and dir or "shm")
local parts = os.getenv("LMPIO_LUA_BENCH_PARTS") or "small,large,conv"
M.init(dir, fs, parts)
local function result(fmt, ...)
  if rank == 0 then print(string.format(fmt, ...)) end
end
if parts:find("small") then
  for _, t in ipairs(SMALL) do
    local best, ok = math.huge, true
    for _ = 1, REPS do
      local dt, good = M.small(t[1])
      if dt < best then best = dt end
      ok = ok and good
    end
    result("RESULT side=lua fs=%s ranks=%d test=%s calls=%d ns=%.1f ok=%d", fs, nranks, t[1], N, best / N * 1e9,
           ok and 1 or 0)
  end
end
if parts:find("large") then
  local bw, br, okw, okr = math.huge, math.huge, true, true
  for _ = 1, LARGE_REPS do
    local t, good = M.large("write")
    if t < bw then bw = t end
    okw = okw and good
    t, good = M.large("read")
    if t < br then br = t end
    okr = okr and good
    okw = okw and good
  end
  local total = L.bytes * nranks
  result("RESULT side=lua fs=%s ranks=%d test=write%dm bytes=%d mbps=%.1f sec=%.5f ok=%d", fs, nranks, MIB, L.bytes,
         total / bw / 1e6, bw, okw and 1 or 0)
  result("RESULT side=lua fs=%s ranks=%d test=read%dm bytes=%d mbps=%.1f sec=%.5f ok=%d", fs, nranks, MIB, L.bytes,
         total / br / 1e6, br, okr and 1 or 0)
end
if parts:find("conv") then M.conv_all() end
M.finish()
