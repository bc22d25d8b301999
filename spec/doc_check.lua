-- The reference documentation covers the whole module (the `doc` suite of
-- core/test/check.sh).  Run from the top of the tree with the module built:
--
--   LUA_CPATH_5_4="build/lua/?.so;;" lua5.4 spec/doc_check.lua build
--
-- It builds the reference as `make doc` does (doc/gather.lua, then LDoc with
-- doc/config.ld into BUILD/doc), asks LDoc which items it parsed (the filter
-- doc/ldoc_names.lua), loads the module and compares: every function of the
-- module table and of its sub-tables (lmpio.type), and every method of every
-- metatable the module registers ("lmpio.file", "lmpio.datatype", ...), must
-- be an LDoc item with a summary; every other value of the module table
-- (lmpio.INT, lmpio.MODE_RDWR, lmpio.world, ...) must be named lmpio.NAME in
-- the documentation's text; every documented function must exist (or be a
-- metamethod of the class, which may be documented: file:__close); LDoc
-- must not warn.  One "ok NAME" / "not ok NAME" line per name.

local build = arg[1] or os.getenv("BUILD") or "build"
local ldoc = os.getenv("LDOC") or "ldoc"
local lua = os.getenv("LUA") or "lua5.4"
local passed, failed = 0, 0
local failures = {} -- printed last, so that a runner's tail shows them

local function ok(cond, name, why)
  if cond then
    passed = passed + 1
    print("ok " .. name)
  else
    failed = failed + 1
    failures[#failures + 1] = "not ok " .. name .. (why and (": " .. why) or "")
  end
  return cond
end

local function finish()
  for _, l in ipairs(failures) do print(l) end
  io.stderr:write(string.format("doc_check: %d passed, %d failed\n", passed, failed))
  os.exit(failed == 0 and 0 or 1)
end

local function sh(cmd)
  local p = assert(io.popen(cmd .. " 2>&1"))
  local out = p:read("a")
  local _, _, code = p:close()
  return out, code or 0
end

local function q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local function lines(s)
  local t = {}
  for l in s:gmatch("[^\n]+") do t[#t + 1] = l end
  return t
end

local function readfile(path)
  local f = io.open(path, "r")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

-- ---- build the reference ---------------------------------------------------

local srcdir = build .. "/doc-src"
local gathered = srcdir .. "/lmpio.c"
os.execute("mkdir -p " .. q(srcdir))
local out, code = sh(lua .. " doc/gather.lua " .. q(gathered) .. " lua/*.c")
for _, l in ipairs(lines(out)) do ok(false, "doc comments", l) end
ok(code == 0, "doc/gather.lua gathers the LDoc comments of lua/*.c")

-- The gathered file names the source of each block: map its lines back.
local origin = {}
do
  local n, mark = 0, nil
  for l in (readfile(gathered) or ""):gmatch("([^\n]*)\n") do
    n = n + 1
    local file, line = l:match("^/%* (lua/[%w_]+%.c):(%d+) %*/$")
    if file then
      mark = { file = file, line = tonumber(line), at = n }
    elseif mark then
      origin[n] = mark.file .. ":" .. (mark.line + n - mark.at - 1)
    end
  end
end
local function trace(msg)
  -- LDoc names the line after a comment: the next block's marker line.
  return (msg:gsub("[^%s:]*doc%-src/lmpio%.c:(%d+):", function(n)
    local k = tonumber(n)
    while k > 0 and not origin[k] do k = k - 1 end
    return (origin[k] or ("gathered line " .. n)) .. ":"
  end))
end

local has_ldoc = sh("command -v " .. ldoc) ~= ""
if not ok(has_ldoc, "ldoc is installed", "apt-get install lua-ldoc lua-markdown (make deps)") then
  finish()
end
local cmd = ldoc .. " -c doc/config.ld -d " .. q(build .. "/doc") .. " " .. q(gathered)
out, code = sh(cmd)
local warnings = 0
for _, l in ipairs(lines(out)) do
  if not l:match("^reading configuration from") and not l:match("^output written to") then
    warnings = warnings + 1
    ok(false, "ldoc", trace(l))
  end
end
ok(code == 0 and warnings == 0 and readfile(build .. "/doc/index.html") ~= nil,
   "make doc writes " .. build .. "/doc/index.html without warnings")

-- What LDoc parsed: kind, name, summary.
out, code = sh("LUA_PATH='doc/?.lua;;' " .. cmd .. " --filter ldoc_names.list")
local documented, summary = {}, {}
for _, l in ipairs(lines(out)) do
  local mod, section, kind, name, sum = l:match("^([^\t]*)\t([^\t]*)\t([%w_]+)\t([^\t]*)\t(.*)$")
  if mod == "lmpio" and kind == "function" and section:match("^Functions a script supplies") then
    -- doc/gather.lua's section of unqualified names (a converter's read,
    -- write, ...): documented, not in the module.
    ok(sum:match("%S") ~= nil, "documented callback " .. name, "no summary sentence")
  elseif mod == "lmpio" and kind == "function" then
    -- LDoc strips the module's own prefix: "open" is lmpio.open.
    if not name:find("[.:]") then name = "lmpio." .. name end
    documented[name] = true
    summary[name] = sum
  end
end
ok(code == 0 and next(documented) ~= nil, "ldoc --filter lists the documented functions")

-- ---- what the module has -----------------------------------------------------

local lmpio = require "lmpio"
local expected = {} -- name -> list of accepted documented names
local function expect(name, alternatives)
  expected[name] = alternatives or { name }
end

local values = {}
for k, v in pairs(lmpio) do
  if type(k) == "string" and k:sub(1, 1) ~= "_" then
    if type(v) == "function" then
      expect("lmpio." .. k)
    elseif type(v) == "table" then
      for k2, v2 in pairs(v) do
        if type(v2) == "function" then expect("lmpio." .. k .. "." .. k2) end
      end
    else
      values[#values + 1] = k
    end
  end
end

-- Classes of the documentation, by metatable name (others: the name after
-- "lmpio.").
local class_names = { buffer = { "array", "buffer" } }
local metamethods = {} -- "class:__name" of every metamethod (may be documented)
local registry = debug.getregistry()
for tname, mt in pairs(registry) do
  if type(tname) == "string" and tname:match("^lmpio%.[%w_]+$") and type(mt) == "table"
      and rawget(mt, "__name") == tname then
    local class = tname:match("^lmpio%.(.*)$")
    for k in pairs(mt) do
      if type(k) == "string" and k:sub(1, 2) == "__" then
        for _, c in ipairs(class_names[class] or { class }) do metamethods[c .. ":" .. k] = true end
      end
    end
    local method_tables = {}
    local index = rawget(mt, "__index")
    if type(index) == "table" then
      method_tables[1] = index
    else
      -- __index is a function (or absent): methods live in a table of the
      -- metatable (e.g. lmpio.buffer's "methods").
      for k, v in pairs(mt) do
        if type(k) == "string" and k:sub(1, 2) ~= "__" and type(v) == "table" then
          method_tables[#method_tables + 1] = v
        end
      end
      if type(index) == "function" then
        ok(#method_tables > 0, "methods of " .. tname .. " can be listed",
           "__index is a function and the metatable holds no table of methods")
      end
    end
    for _, t in ipairs(method_tables) do
      for m, f in pairs(t) do
        if type(m) == "string" and type(f) == "function" then
          local alts = {}
          for _, c in ipairs(class_names[class] or { class }) do alts[#alts + 1] = c .. ":" .. m end
          expect(alts[1], alts)
        end
      end
    end
  end
end

-- ---- compare -------------------------------------------------------------------

local names = {}
for name in pairs(expected) do names[#names + 1] = name end
table.sort(names)
local accepted = {}
for _, name in ipairs(names) do
  local found
  for _, alt in ipairs(expected[name]) do
    accepted[alt] = true
    if documented[alt] then found = alt end
  end
  if found then
    ok(summary[found]:match("%S") ~= nil, "documented " .. found, "no summary sentence")
  else
    ok(false, "documented " .. name, "no LDoc comment with @function " .. table.concat(expected[name], " or "))
  end
end

local stale = {}
for name in pairs(documented) do
  if not accepted[name] and not metamethods[name] then stale[#stale + 1] = name end
end
table.sort(stale)
for _, name in ipairs(stale) do
  ok(false, "exists " .. name, "documented, but the module has no such function")
end

-- Values of the module: named lmpio.NAME in the topics or the comments.
local text = (readfile(gathered) or "")
for _, f in ipairs(lines(sh("ls doc/*.md"))) do text = text .. "\n" .. (readfile(f) or "") end
table.sort(values)
for _, k in ipairs(values) do
  local s, found = 1, false
  while true do
    local i, j = text:find("lmpio." .. k, s, true)
    if not i then break end
    if not text:sub(j + 1, j + 1):match("[%w_]") and not text:sub(i - 1, i - 1):match("[%w_.]") then
      found = true
      break
    end
    s = j + 1
  end
  ok(found, "documented lmpio." .. k .. " (" .. type(lmpio[k]) .. ")", "not named in doc/*.md nor in an LDoc comment")
end

finish()
