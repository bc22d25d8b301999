-- Combines the per-rank TAP files of spec/mpi_busted.sh: prints "ok NAME"
-- when a test passed on every rank, "not ok NAME (ranks ...)" with the
-- failing ranks' diagnostics otherwise; a rank that did not finish (no plan
-- line, fewer tests) is a failure.  Exit status 0 when everything passed.
local dir = assert(arg[1], "usage: combine.lua DIR")
local ranks = {}
for r = 0, 1023 do
  local f = io.open(string.format("%s/rank%d.tap", dir, r), "r")
  if not f then break end
  local rank = { r = r, tests = {}, plan = nil, extra = {} }
  local cur
  for line in f:lines() do
    local ok, num, name = line:match("^(ok) (%d+) %- (.*)$")
    if not ok then ok, num, name = line:match("^(not ok) (%d+) %- (.*)$") end
    if ok then
      cur = { ok = ok == "ok", name = name, diag = {} }
      rank.tests[tonumber(num)] = cur
    elseif line:match("^1%.%.%d+") then
      rank.plan = tonumber(line:match("^1%.%.(%d+)"))
      cur = nil
    elseif cur then
      cur.diag[#cur.diag + 1] = line
    else
      rank.extra[#rank.extra + 1] = line
    end
  end
  f:close()
  ranks[#ranks + 1] = rank
end

local failed = 0
if #ranks == 0 then
  print("not ok busted: no rank produced output")
  os.exit(1)
end
local n = 0
for _, rank in ipairs(ranks) do
  n = math.max(n, rank.plan or 0, #rank.tests)
end
for i = 1, n do
  local name, bad, diag = nil, {}, {}
  for _, rank in ipairs(ranks) do
    local t = rank.tests[i]
    name = name or (t and t.name)
    if not t or not t.ok then
      bad[#bad + 1] = tostring(rank.r)
      if t then
        for _, d in ipairs(t.diag) do diag[#diag + 1] = "# [rank " .. rank.r .. "] " .. d:gsub("^#%s?", "") end
      else
        diag[#diag + 1] = "# [rank " .. rank.r .. "] test did not run"
      end
    elseif t.name ~= name then
      bad[#bad + 1] = tostring(rank.r)
      diag[#diag + 1] = "# [rank " .. rank.r .. "] ran a different test: " .. t.name
    end
  end
  name = name or ("test " .. i)
  if #bad == 0 then
    print("ok " .. name)
  else
    failed = failed + 1
    print(string.format("not ok %s (failed on rank %s)", name, table.concat(bad, ",")))
    for _, d in ipairs(diag) do print(d) end
  end
end
for _, rank in ipairs(ranks) do
  if not rank.plan then
    failed = failed + 1
    print(string.format("not ok busted on rank %d did not finish", rank.r))
    for j = math.max(1, #rank.extra - 15), #rank.extra do print("# " .. rank.extra[j]) end
  end
end
os.exit(failed == 0 and 0 or 1)
