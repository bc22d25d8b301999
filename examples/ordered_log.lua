-- Every rank appends variable-length text lines to one log, in rank order,
-- with fh:write_ordered (Lua strings); a second pass reads them back with
-- read_ordered and checks order and content.
--   mpirun -n 4 lua5.4 examples/ordered_log.lua [path]
local lmpio = require "lmpio"

local world = lmpio.world
local rank, size = world:rank(), world:size()
local path = arg[1] or "/tmp/lmpio-ordered.log"

local function check(cond, what)
  if not world:allreduce(cond and true or false, "land") then
    if rank == 0 then io.stderr:write("ordered_log: FAILED: ", what, "\n") end
    os.exit(1)
  end
end

local rounds = 3
local function lines_of(r, round)
  local t = {}
  for k = 1, (r + round) % 3 + 1 do   -- a different number of lines per rank and round
    t[#t + 1] = string.format("round %d rank %d line %d %s\n", round, r, k, string.rep("~", (r * 7 + k) % 11))
  end
  return table.concat(t)
end

do
  local fh <close> = lmpio.open(world, path, "w")
  fh:set_size(0)
  for round = 1, rounds do
    local text = lines_of(rank, round)
    check(fh:write_ordered(text) == #text, "write_ordered wrote everything")
  end
end

do
  local fh <close> = lmpio.open(world, path, "r delete_on_close")
  local ok = true
  for round = 1, rounds do
    local want = lines_of(rank, round)
    local got, n = fh:read_ordered(#want)
    if n ~= #want or got:tostring() ~= want then ok = false end
  end
  check(ok, "read_ordered gives back each rank's lines")
  -- the whole log, rank after rank within each round
  local expect = {}
  for round = 1, rounds do
    for r = 0, size - 1 do expect[#expect + 1] = lines_of(r, round) end
  end
  expect = table.concat(expect)
  local all = fh:read_at_all(0, #expect + 16)
  check(all:tostring(1, #expect) == expect and fh:get_size() == #expect, "the log is in rank order")
  if rank == 0 then
    io.write(expect:sub(1, expect:find("round 2") - 1))
    print(string.format("... %d bytes from %d ranks in %d rounds", #expect, size, rounds))
  end
end
if rank == 0 then print("ok ordered_log.lua") end
