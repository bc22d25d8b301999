-- Every blocking call of the module reports a long wait (LMPIO_HANG_REPORT,
-- core/src/watch.c): in each phase rank 0 waits in one call, and the last
-- rank comes only once rank 0's report of that call, with the line of this
-- script that made it, is in LOG (mpirun's standard error), or after 60 s.
-- The last rank prints "ok CALL" or "not ok CALL" per phase.  With MODE
-- "off" (LMPIO_HANG_REPORT=0) the last rank comes 0.4 s late instead, and
-- spec/hang_test.sh checks that LOG holds no report at all.
-- Usage: mpirun -n 2 lua5.4 spec/hang_calls.lua LOG PATH on|off
local lmpio = require "lmpio"
local world = lmpio.world
local rank, last = world:rank(), world:size() - 1
local log, path, mode = arg[1], arg[2], arg[3]
local src = debug.getinfo(1, "S").short_src

local function sleep(s) os.execute("sleep " .. s) end

-- Whether LOG holds rank 0's report of call made at line.
local function reported(call, line)
  local f = io.open(log)
  if not f then return false end
  local text = f:read("a")
  f:close()
  local suffix = (" s in %s (%s:%d)"):format(call, src, line)
  for l in text:gmatch("[^\n]+") do
    if l:find("lmpio: rank 0 has waited ", 1, true) == 1 and l:sub(-#suffix) == suffix then return true end
  end
  return false
end

-- The last rank's side of a phase: late, then its part.
local function come_late(call, line, part)
  local ok = true
  if mode == "on" then
    local t0 = lmpio.wtime()
    while not reported(call, line) and lmpio.wtime() - t0 < 60 do sleep(0.05) end
    ok = reported(call, line)
  else
    sleep(0.4)
  end
  part()
  if mode == "on" then
    print(("%s %s (line %d)"):format(ok and "ok" or "not ok", call, line))
    io.stdout:flush()
  end
end

-- A collective phase: every rank calls fn (defined on one line, where the
-- call is), the last one late.
local function collective(call, fn)
  local line = debug.getinfo(fn, "S").linedefined
  if rank == last then come_late(call, line, fn) else fn() end
end

-- A phase of two ranks: rank 0 waits in wait (one line), the last rank runs
-- late; the others do nothing.
local function pair(call, wait, late)
  local line = debug.getinfo(wait, "S").linedefined
  if rank == last then come_late(call, line, late) elseif rank == 0 then wait() end
end

local function doubles(n)
  local t = {}
  for i = 1, n do t[i] = i end
  return lmpio.array(lmpio.DOUBLE, t)
end
-- (big: 1 MiB, a send that waits for its receiver whatever MPI's eager limit)
local small, big = doubles(4), lmpio.array(lmpio.DOUBLE, 131072)

-- ---- communicators' collectives ------------------------------------------
collective("barrier", function() world:barrier() end)
collective("bcast", function() return world:bcast({ 1, 2, 3 }) end)
collective("bcast", function() return world:bcast(small) end)
collective("allgather", function() return world:allgather(rank) end)
collective("allreduce", function() return world:allreduce(1) end)
collective("allreduce", function() return world:allreduce(small, "max") end)
collective("scan", function() return world:scan(1) end)
collective("exscan", function() return world:exscan(small) end)
collective("reduce", function() return world:reduce(1) end)
collective("reduce", function() return world:reduce(small) end)
collective("gather", function() return world:gather(small) end)
collective("scatter", function() return world:scatter(doubles(world:size())) end)
local split, dup, cart
collective("split", function() split = world:split(0) end)
collective("dup", function() dup = world:dup() end)
collective("cart", function() cart = world:cart(1) end)
-- a rank whose arguments are wrong waits in the agreement all the same
collective("allreduce", function() return pcall(world.allreduce, world, rank == 0 and "not a number" or 1) end)

-- ---- files: waits of nonblocking and split collectives --------------------
local fh = lmpio.open(dup, path, "w+")
collective("write_at_all", function() fh:write_at_all(rank * 32, small) end)
collective("wait", function() fh:iwrite_at_all(rank * 32, small):wait() end)
collective("waitall", function() lmpio.waitall({ fh:iwrite_at_all(rank * 32, small) }) end)
collective("waitany", function() lmpio.waitany({ fh:iwrite_at_all(rank * 32, small) }) end)
collective("write_all_end", function() fh:write_all_begin(small); fh:write_all_end() end)
fh:close()

-- ---- messages: rank 0 waits, the last rank sends (or receives) late -------
pair("recv", function() world:recv(last) end, function() world:send(1, 0) end)
pair("recv", function() world:recv(last, 0, doubles(4)) end, function() world:send(small, 0) end)
pair("sendrecv", function() world:sendrecv(1, last, last) end, function() world:sendrecv(2, 0, 0) end)
pair("send", function() world:send(big, last) end, function() world:recv(0) end)
pair("wait", function() world:irecv(last):wait() end, function() world:send(1, 0) end)
pair("waitall", function() lmpio.waitall({ world:irecv(last) }) end, function() world:send(1, 0) end)
pair("waitany", function() lmpio.waitany({ world:irecv(last) }) end, function() world:send(1, 0) end)

world:barrier()
for _, c in ipairs({ split, dup, cart }) do c:free() end
