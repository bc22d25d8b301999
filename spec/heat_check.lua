-- spec/heat_check.lua NY NX STEPS FILE: the serial computation of
-- examples/heat.lua in plain Lua (the test's own reference), compared
-- with FILE (NY x NX native doubles, C order) to 1e-12 relative.  Prints
-- "ok" or where they differ; exits non-zero on a difference.
local NY, NX, STEPS, path = tonumber(arg[1]), tonumber(arg[2]), tonumber(arg[3]), arg[4]
local v = {}
for i = 0, NY + 1 do
  v[i] = {}
  for j = 0, NX + 1 do
    local x = 0.0
    if i >= 1 and i <= NY and j >= 1 and j <= NX then
      local gi, gj = i - 1, j - 1
      if (gi - NY / 3) ^ 2 + (gj - NX / 2) ^ 2 < (NX / 5) ^ 2 then x = 100.0 else x = ((7 * gi + 13 * gj) % 17) / 17 end
    end
    v[i][j] = x
  end
end
for _ = 1, STEPS do
  local w = {}
  for i = 0, NY + 1 do
    w[i] = {}
    for j = 0, NX + 1 do
      if i >= 1 and i <= NY and j >= 1 and j <= NX then
        local x = v[i][j]
        w[i][j] = x + 0.2 * (v[i - 1][j] + v[i + 1][j] + v[i][j - 1] + v[i][j + 1] - 4 * x)
      else
        w[i][j] = 0.0
      end
    end
  end
  v = w
end
local f = assert(io.open(path, "rb"))
local bytes = f:read("a")
f:close()
if #bytes ~= NY * NX * 8 then
  print(string.format("not ok: %d bytes, %d expected", #bytes, NY * NX * 8))
  os.exit(1)
end
for i = 1, NY do
  for j = 1, NX do
    local got = string.unpack("d", bytes, ((i - 1) * NX + (j - 1)) * 8 + 1)
    if math.abs(got - v[i][j]) > 1e-12 * math.max(math.abs(v[i][j]), 1e-300) then
      print(string.format("not ok: cell (%d, %d) is %.17g, %.17g expected", i - 1, j - 1, got, v[i][j]))
      os.exit(1)
    end
  end
end
print("ok")
