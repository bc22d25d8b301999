-- A CSV writer: rank 0 writes the header, then every rank contributes a
-- different number of records, in rank order, with write_ordered.
--   mpirun -n 4 lua5.4 examples/records_csv.lua [path]
local lmpio = require "lmpio"

local world = lmpio.world
local rank, size = world:rank(), world:size()
local path = arg[1] or "/tmp/lmpio-records.csv"

local function check(cond, what)
  if not world:allreduce(cond and true or false, "land") then
    if rank == 0 then io.stderr:write("records_csv: FAILED: ", what, "\n") end
    os.exit(1)
  end
end

local function csv_field(v)
  v = tostring(v)
  if v:find('[,"\n]') then v = '"' .. v:gsub('"', '""') .. '"' end
  return v
end

local function csv_line(t)
  local out = {}
  for i, v in ipairs(t) do out[i] = csv_field(v) end
  return table.concat(out, ",") .. "\n"
end

-- rank r has 2r+1 records; ids are global, computed from a prefix sum
local nmine = 2 * rank + 1
local counts = world:allgather(nmine)
local first = 0
for r = 1, rank do first = first + counts[r] end

local rows = {}
for k = 0, nmine - 1 do
  rows[#rows + 1] = csv_line { first + k, rank, string.format("item %d, \"from\" rank %d", k, rank), (first + k) * 0.5 }
end

do
  local fh <close> = lmpio.open(world, path, "w")
  fh:set_size(0)
  fh:write_ordered(rank == 0 and csv_line { "id", "rank", "label", "value" } or "")
  fh:write_ordered(table.concat(rows))
end

-- verify on rank 0 with plain Lua io: header, then ids 0.. in order, and
-- each rank's count
local ok, total = true, world:allreduce(nmine)
if rank == 0 then
  local f = assert(io.open(path, "rb"))
  local text = f:read("a")
  f:close()
  local lines = {}
  for line in text:gmatch("([^\n]*)\n") do lines[#lines + 1] = line end
  ok = lines[1] == "id,rank,label,value" and #lines == total + 1
  local per = {}
  for i = 2, #lines do
    local id, r = lines[i]:match("^(%d+),(%d+),")
    if tonumber(id) ~= i - 2 then ok = false end
    r = tonumber(r)
    if r then per[r] = (per[r] or 0) + 1 end
  end
  for r = 0, size - 1 do
    if per[r] ~= 2 * r + 1 then ok = false end
  end
  io.write(table.concat(lines, "\n", 1, math.min(#lines, 5)), "\n")
  print(string.format("... %d records from %d ranks", total, size))
  os.remove(path)
end
check(ok, "the CSV has every record in rank order")
if rank == 0 then print("ok records_csv.lua") end
