-- The 2-D heat equation on a block-distributed grid: halo exchange of
-- slices, a 5-point stencil in vector statements, one collective write.
--   mpirun -n 4 lua5.4 examples/heat.lua NY NX STEPS OUT
--   mpirun -n 4 lua5.4 examples/heat.lua OUT        (48 x 36, 20 steps, checked)
-- The interior is NY x NX with a fixed zero boundary; cell (i, j) (0-based)
-- starts at 100 inside the disc (i - NY/3)^2 + (j - NX/2)^2 < (NX/5)^2, at
-- ((7i + 13j) mod 17) / 17 elsewhere; each step is
--   u = u + 0.2 (north + south + west + east - 4 u)
-- on the interior.  At the end the interior is in OUT: NY x NX native
-- doubles in C order.  With OUT alone the result is also checked against a
-- serial computation (plain Lua loops on rank 0: heat_serial.lua, beside
-- this file) and "ok heat.lua" printed.
local lmpio = require "lmpio"
local serial = dofile((arg[0]:match("^(.*)/") or ".") .. "/heat_serial.lua")

local world = lmpio.world
local rank = world:rank()
local NY, NX, STEPS, OUT
if #arg >= 4 then
  NY, NX, STEPS, OUT = math.tointeger(tonumber(arg[1])), math.tointeger(tonumber(arg[2])),
                       math.tointeger(tonumber(arg[3])), arg[4]
  assert(NY and NX and STEPS and NY > 0 and NX > 0 and STEPS >= 0, "usage: heat.lua NY NX STEPS OUT")
else
  NY, NX, STEPS, OUT = 48, 36, 20, arg[1] or "/tmp/lmpio-heat.dat"
end

local function initial(i, j) return serial.initial(NY, NX, i, j) end -- 0-based global indices

-- This rank's block of a balanced grid of ranks, and its neighbours (nil at
-- the boundary; a neighbour whose block is empty is none either).
local dims, coords, sub, starts, nb = world:grid(2, { NY, NX })
local ly, lx = sub[1], sub[2]
local empty = ly == 0 or lx == 0
for d = 1, 2 do
  for side = 1, 2 do
    local c = coords[d] + (side == 1 and -1 or 1)
    local _, n = lmpio.block(d == 1 and NY or NX, dims[d], math.max(0, math.min(c, dims[d] - 1)))
    if empty or n == 0 then nb[d][side] = nil end
  end
end
local north, south, west, east = nb[1][1], nb[1][2], nb[2][1], nb[2][2]

-- The block with a ring of ghost cells (zero: the boundary, or halos).
local u = lmpio.array(lmpio.DOUBLE, { shape = { ly + 2, lx + 2 } })
local c = u:slice({ 2, -2 }, { 2, -2 })                    -- the interior
for i = 1, ly do
  for j = 1, lx do c:set(i, j, initial(starts[1] + i - 1, starts[2] + j - 1)) end
end
-- Slices made once: each is its own MPI datatype.
local N, S = u:slice({ 1, -3 }, { 2, -2 }), u:slice({ 3, -1 }, { 2, -2 })
local W, E = u:slice({ 2, -2 }, { 1, -3 }), u:slice({ 2, -2 }, { 3, -1 })
local first_row, last_row = u:slice(2, { 2, -2 }), u:slice(-2, { 2, -2 })
local ghost_north, ghost_south = u:slice(1, { 2, -2 }), u:slice(-1, { 2, -2 })
local first_col, last_col = u:slice({ 2, -2 }, 2), u:slice({ 2, -2 }, -2)
local ghost_west, ghost_east = u:slice({ 2, -2 }, 1), u:slice({ 2, -2 }, -1)
local t = lmpio.array(lmpio.DOUBLE, { shape = { ly, lx } })

local t0 = lmpio.wtime()
for _ = 1, STEPS do
  if not empty then -- halos: rows and columns in place (nil: no neighbour)
    world:sendrecv(first_row, north, south, 1, ghost_south)
    world:sendrecv(last_row, south, north, 2, ghost_north)
    world:sendrecv(first_col, west, east, 3, ghost_east)
    world:sendrecv(last_col, east, west, 4, ghost_west)
  end
  t:copy(N):add(S):add(W):add(E):axpy(-4, c)             -- t = N + S + W + E - 4c
  c:axpy(0.2, t)                                         -- c = c + 0.2 t
end
if os.getenv("LMPIO_HEAT_TIME") then -- the steps' time, for bench/heat_bench.sh
  local took = world:allreduce(lmpio.wtime() - t0, "max")
  if rank == 0 then print(string.format("RESULT side=lmpio sec=%.6f", took)) end
end

-- One collective write of every interior through a subarray view.
local fh <close> = lmpio.open(world, OUT, "w")
fh:set_view(0, lmpio.DOUBLE, lmpio.type.subarray({ NY, NX }, sub, starts, lmpio.DOUBLE))
fh:write_all(c)
fh:close()

if #arg < 4 then -- check against the serial computation
  local ok, why = true, nil
  if rank == 0 then ok, why = serial.check(OUT, NY, NX, STEPS) end
  if not world:bcast(ok or false) then
    if rank == 0 then io.stderr:write("heat.lua: FAILED: the file differs from the serial computation: ", why, "\n") end
    os.exit(1)
  end
  if rank == 0 then print("ok heat.lua") end
end
