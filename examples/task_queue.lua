-- A task queue on the shared file pointer.
--
--   mpirun -n 4 lua5.4 examples/task_queue.lua [path]
--
-- Rank 0 writes a file of tasks, fixed-size records (a task id and a
-- parameter).  Every rank then takes the next task with read_shared, which
-- moves the shared pointer by one record atomically, so no two ranks get the
-- same task and no task is skipped, whatever the ranks' speeds; a rank stops
-- when read_shared returns nothing (the end of the file).  Results are
-- appended to a second file with write_shared, in whatever order they come.
-- Rank 0 finally checks that every task was done exactly once and right.
-- Prints "ok task_queue" and exits 0 when everything checks out.
local lmpio = require "lmpio"

local world = lmpio.world
local rank, size = world:rank(), world:size()

local base, temporary = arg[1], not arg[1]
if temporary then base = world:bcast(rank == 0 and os.tmpname() or nil) end
local tasks_path, results_path = base, base .. ".results"

local NTASKS = 97
local TASK = "<i8<d"        -- id, parameter: 16 bytes
local RESULT = "<i8<i8<d"   -- id, rank that did it, result: 24 bytes
local TASK_SIZE, RESULT_SIZE = string.packsize(TASK), string.packsize(RESULT)

local function work(param)
  -- uneven work: some tasks take much longer than others
  local x = param
  for _ = 1, (math.floor(param) % 7) * 2000 do x = math.sin(x) + param end
  return x
end

-- The task file, written by rank 0 alone.
do
  local fh <close> = lmpio.open(world, tasks_path, "w")
  if rank == 0 then
    local parts = {}
    for id = 1, NTASKS do parts[id] = string.pack(TASK, id, id * 1.5) end
    fh:write_at(0, table.concat(parts))
  end
  fh:close()
end

-- Workers: every rank takes tasks until there are none left.
local done = 0
do
  local tasks <close> = lmpio.open(world, tasks_path, "r")
  local results <close> = lmpio.open(world, results_path, "w")
  while true do
    local rec, n = tasks:read_shared(TASK_SIZE)
    if n == 0 then break end
    assert(n == TASK_SIZE, "a task record was cut")
    local id, param = string.unpack(TASK, rec:tostring())
    results:write_shared(string.pack(RESULT, id, rank, work(param)))
    done = done + 1
  end
  tasks:close()
  results:close()
end

-- Every task exactly once, with the right result.
local per_rank = world:allgather(done)
local ok, why = true, nil
if rank == 0 then
  local f = assert(io.open(results_path, "rb"))
  local data = f:read("a")
  f:close()
  local seen = {}
  if #data ~= NTASKS * RESULT_SIZE then
    ok, why = false, string.format("%d bytes of results, not %d", #data, NTASKS * RESULT_SIZE)
  end
  for pos = 1, #data - RESULT_SIZE + 1, RESULT_SIZE do
    local id, who, result = string.unpack(RESULT, data, pos)
    if seen[id] then ok, why = false, "task " .. id .. " was done twice" end
    if result ~= work(id * 1.5) then ok, why = false, "task " .. id .. " has a wrong result" end
    if who < 0 or who >= size then ok, why = false, "task " .. id .. " names rank " .. who end
    seen[id] = true
  end
  for id = 1, NTASKS do
    if not seen[id] then ok, why = false, "task " .. id .. " was never done" end
  end
  local total = 0
  for _, n in ipairs(per_rank) do total = total + n end
  if total ~= NTASKS then ok, why = false, "the ranks counted " .. total .. " tasks" end
end
ok = world:bcast(ok)
if temporary or ok then
  world:barrier()
  if rank == 0 then
    os.remove(results_path)
    if temporary then os.remove(tasks_path) end
  end
end
if not ok then
  if rank == 0 then io.stderr:write("task_queue: FAILED: ", why, "\n") end
  os.exit(1)
end
if rank == 0 then print("ok task_queue (tasks per rank: " .. table.concat(per_rank, " ") .. ")") end
