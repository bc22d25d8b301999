-- A parallel filter in a pipe: reads standard input, writes standard
-- output, in order, as one process would.
--
--   seq 1 100000 | mpirun -n 4 lua5.4 examples/filter.lua | sha256sum
--
-- gives the same sum as `lua5.4 examples/filter.lua` alone.  Rank 0 reads
-- and writes the bytes (the streams are rank 0's); every rank gets whole
-- lines, transforms its share, and write_ordered puts the shares back in
-- rank order.  Numbers become "n<TAB>n*n<TAB>prime?", other lines go
-- through upper-cased, lines starting with '#' are dropped.
local lmpio = require "lmpio"

local function is_prime(n)
  if n < 2 or n % 1 ~= 0 then return false end
  for d = 2, math.floor(math.sqrt(n)) do
    if n % d == 0 then return false end
  end
  return true
end

local function transform(line)
  if line:sub(1, 1) == "#" then return nil end
  local n = tonumber(line)
  if n then return ("%s\t%s\t%s"):format(line, math.tointeger(n * n) or n * n, is_prime(n) and "prime" or "-") end
  return line:upper()
end

local input <close> = lmpio.stdin()
local output <close> = lmpio.stdout()
for lines in input:records_ordered{max = 64 * 1024} do
  local out = {}
  for line, nl in lines:gmatch("([^\n]*)(\n?)") do
    if line ~= "" or nl ~= "" then
      local t = transform(line)
      if t then out[#out + 1] = t .. nl end
    end
  end
  output:write_ordered(table.concat(out))
end
