-- Quickstart: ranks partition one file with complementary views, write,
-- read back, verify, and print which rank owns which bytes of the start of
-- the file.   mpirun -n 4 lua5.4 examples/quickstart.lua [path]
local lmpio = require "lmpio"

local world = lmpio.world
local rank, size = world:rank(), world:size()
local path = arg[1] or "/tmp/lmpio-quickstart.dat"

-- Rank r owns r+1 bytes of every period of 1+2+...+size bytes, after the
-- blocks of the ranks before it: complementary views that tile the file.
local period = size * (size + 1) // 2
local start = rank * (rank + 1) // 2
local block = rank + 1
local filetype = lmpio.type.resized(lmpio.type.hindexed({ block }, { start }, lmpio.BYTE), 0, period)

local periods = 16
local mine = string.rep(string.char(48 + rank % 10), block * periods)

local function check(cond, what)
  if not world:allreduce(cond and true or false, "land") then
    if rank == 0 then io.stderr:write("quickstart: FAILED: ", what, "\n") end
    os.exit(1)
  end
end

do
  local fh <close> = lmpio.open(world, path, "w+ delete_on_close")
  fh:set_view(0, lmpio.BYTE, filetype)
  fh:write_all(mine)                       -- a Lua string is bytes

  -- read our part back through the same view
  local back, n = fh:read_at_all(0, #mine)
  check(n == #mine and back:tostring() == mine, "read back through the view")

  -- the whole file through the default view: every byte owned by one rank
  fh:set_view(0, lmpio.BYTE, lmpio.BYTE)
  local whole = fh:read_at_all(0, period * periods):tostring()
  local owner = {}
  for r = 0, size - 1 do
    for k = r * (r + 1) // 2, r * (r + 1) // 2 + r do owner[k] = r end
  end
  local ok = #whole == period * periods
  for i = 1, #whole do
    if whole:byte(i) ~= 48 + owner[(i - 1) % period] % 10 then ok = false end
  end
  check(ok, "the file is the union of the views")

  if rank == 0 then
    print(string.format("%d ranks, one file of %d bytes; rank r owns r+1 bytes of every %d:", size, #whole, period))
    local width = math.min(#whole, 60)
    print("byte  " .. ("0123456789"):rep(6):sub(1, width))
    print("owner " .. whole:sub(1, width))
  end
end
if rank == 0 then print("ok quickstart.lua") end
