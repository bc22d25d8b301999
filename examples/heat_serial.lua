-- The serial computation of examples/heat.lua in plain Lua loops: the
-- reference that its file is checked against, by heat.lua itself (given
-- OUT alone) and by spec/heat_check.lua.  A module beside the example,
-- not an example:  local serial = dofile("examples/heat_serial.lua")
local serial = {}

-- The initial value of cell (i, j) (0-based) of the NY x NX interior.
function serial.initial(NY, NX, i, j)
  if (i - NY / 3) ^ 2 + (j - NX / 2) ^ 2 < (NX / 5) ^ 2 then return 100.0 end
  return ((7 * i + 13 * j) % 17) / 17
end

-- The grid after STEPS steps: v[i][j] for the interior 1..NY x 1..NX,
-- zero on the boundary (rows 0 and NY + 1, columns 0 and NX + 1).  The
-- sum is taken in the order of heat.lua's vector statements.
function serial.steps(NY, NX, STEPS)
  local v = {}
  for i = 0, NY + 1 do
    v[i] = {}
    for j = 0, NX + 1 do
      v[i][j] = (i >= 1 and i <= NY and j >= 1 and j <= NX) and serial.initial(NY, NX, i - 1, j - 1) or 0.0
    end
  end
  for _ = 1, STEPS do
    local w = {}
    for i = 0, NY + 1 do
      w[i] = {}
      for j = 0, NX + 1 do
        if i >= 1 and i <= NY and j >= 1 and j <= NX then
          local x = v[i][j]
          w[i][j] = x + 0.2 * ((((v[i - 1][j] + v[i + 1][j]) + v[i][j - 1]) + v[i][j + 1]) + (-4) * x)
        else
          w[i][j] = 0.0
        end
      end
    end
    v = w
  end
  return v
end

-- Whether the file at path (NY x NX native doubles, C order) holds the
-- grid after STEPS steps, to 1e-12 relative: true, or nil and where it
-- differs.
function serial.check(path, NY, NX, STEPS)
  local v = serial.steps(NY, NX, STEPS)
  local f, err = io.open(path, "rb")
  if not f then return nil, err end
  local bytes = f:read("a")
  f:close()
  if #bytes ~= NY * NX * 8 then return nil, string.format("%d bytes, %d expected", #bytes, NY * NX * 8) end
  for i = 1, NY do
    for j = 1, NX do
      local got = string.unpack("d", bytes, ((i - 1) * NX + (j - 1)) * 8 + 1)
      if math.abs(got - v[i][j]) > 1e-12 * math.max(math.abs(v[i][j]), 1e-300) then
        return nil, string.format("cell (%d, %d) is %.17g, %.17g expected", i - 1, j - 1, got, v[i][j])
      end
    end
  end
  return true
end

return serial
