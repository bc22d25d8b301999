-- A task queue on the shared file pointer: the ranks claim tasks (fixed-size
-- records) from one file with read_shared until it runs out, so a rank that
-- is quick takes more of them; each result goes to the task's own slot of a
-- results file (an explicit offset), and a record of who did what is
-- appended to a log with write_shared.  Then every task must have been done
-- exactly once.
--   mpirun -n 4 lua5.4 examples/task_queue.lua [path]
local lmpio = require "lmpio"

local world = lmpio.world
local rank, size = world:rank(), world:size()
local tasks_path = arg[1] or "/tmp/lmpio-task-queue.dat"
local results_path, log_path = tasks_path .. ".results", tasks_path .. ".log"
local NTASKS = 300
local I64 = lmpio.INT64_T

local function check(cond, what)
  if not world:allreduce(cond and true or false, "land") then
    if rank == 0 then io.stderr:write("task_queue: FAILED: ", what, "\n") end
    world:barrier() -- the message is out before os.exit(1) aborts the job
    os.exit(1)
  end
end

-- A task is {id, work}; its result depends on both, and takes work steps.
local function run(id, work)
  local x = id
  for _ = 1, work do x = (x * 1103515245 + 12345) % 2147483648 end
  return x
end
local function work_of(id) return (id * 7919) % 13 * 500 end

-- 1. The task file: NTASKS records of two 64-bit integers.
do
  local fh <close> = lmpio.open(world, tasks_path, "w")
  if rank == 0 then
    local tasks = lmpio.array(I64, 2 * NTASKS)
    for id = 0, NTASKS - 1 do
      tasks[2 * id + 1], tasks[2 * id + 2] = id, work_of(id)
    end
    fh:write_at(0, tasks)
  end
end

-- 2. Every rank claims the next task until none is left.
local done = 0
do
  local queue <close> = lmpio.open(world, tasks_path, "r")
  local results <close> = lmpio.open(world, results_path, "w")
  local log <close> = lmpio.open(world, log_path, "w")
  while true do
    local task, n = queue:read_shared(2, I64) -- claims the next 16 bytes
    if n == 0 then break end                  -- end of file: the queue is empty
    assert(n == 2, "a task is two integers")
    local id, work = task[1], task[2]
    local result = run(id, work)
    results:write_at(id * 8, lmpio.array(I64, { result }))
    log:write_shared(lmpio.array(I64, { id, rank, result }))
    done = done + 1
  end
end -- closing is collective: every rank's writes are in the files after it

-- 3. Check: the log holds NTASKS records, each task once, each by the rank
-- that counted it, with the right result; the results file agrees.
local counts = world:allgather(done)
do
  local log <close> = lmpio.open(world, log_path, "r delete_on_close")
  local results <close> = lmpio.open(world, results_path, "r delete_on_close")
  check(log:get_size() == NTASKS * 24, "the log has one record per task")
  local rec, n = log:read_at_all(0, 3 * NTASKS, I64)
  local res, m = results:read_at_all(0, NTASKS, I64)
  local seen, by, ok = {}, {}, n == 3 * NTASKS and m == NTASKS
  for i = 0, NTASKS - 1 do
    local id, who, result = rec[3 * i + 1], rec[3 * i + 2], rec[3 * i + 3]
    if seen[id] or id < 0 or id >= NTASKS or result ~= run(id, work_of(id)) or res[id + 1] ~= result then
      ok = false
    else
      seen[id] = true
      by[who] = (by[who] or 0) + 1
    end
  end
  check(ok, "every task was done exactly once, with the right result")
  for r = 0, size - 1 do check((by[r] or 0) == counts[r + 1], "each rank's tasks are in the log") end
end
if rank == 0 then
  print(string.format("%d tasks done once each; tasks per rank: %s", NTASKS, table.concat(counts, " ")))
  print("ok task_queue.lua")
end
