-- Gathers the LDoc comments of the Lua module's C sources into one file that
-- LDoc reads, grouped by what they document (LDoc's sections are positional:
-- a method belongs to the @type block above it, so the methods that one
-- class has in several source files are brought together here).  The
-- comments are copied verbatim; each is preceded by a plain comment naming
-- its source file and line, so an LDoc warning can be traced back.
--
-- Usage: lua5.4 doc/gather.lua OUT.c lua/a.c lua/b.c ...
--
-- Grouping, from each block's tags:
--   @module lmpio             the module's own page text (exactly one)
--   @function lmpio.name      module functions, one section per source file
--   @function lmpio.type.name datatype constructors
--   @function name            a function that a script supplies (a converter)
--   @function class:name      methods, after the class's "@type class" block
--   @field class.name         fields of a class's objects, likewise
--   @type class               the class's description (one generated if none)
--   anything else (@table, ...) at the end, in source order
--
-- A block that documents one method in several forms is written once:
--   @each FORM = ordered, at_all, all
-- stands for one block per value, in that order, with {FORM} replaced by
-- the value; a line "@only FORM = at_all: TEXT" is TEXT in the block of
-- that value alone.  Two @each lines: a block per pair of values.

local out_name = assert(arg[1], "usage: gather.lua OUT.c SOURCE.c ...")

-- Section titles of module functions, by source file; others get a title
-- from the file's name.
local file_titles = {
  ["lifetime.c"] = "MPI environment",
  ["file.c"] = "Opening and deleting files",
  ["buffer.c"] = "Typed arrays and byte buffers",
  ["datatype.c"] = "Datatypes",
  ["comm.c"] = "Communicators",
  ["datarep.c"] = "Data representations written in Lua",
  ["error.c"] = "Errors",
  ["request.c"] = "Requests",
}
local file_order = { "file.c", "buffer.c", "datatype.c", "datarep.c", "comm.c", "error.c", "request.c", "lifetime.c" }
local class_order = { "file", "array", "buffer", "datatype", "comm", "request", "error" }

local module_block
local by_file, constructors, classes, class_blocks, others = {}, {}, {}, {}, {}
local callbacks = {}
local files_seen = {}
local problems = 0

local function warn(where, msg)
  io.stderr:write(where, ": ", msg, "\n")
  problems = problems + 1
end

-- The blocks that block text stands for (itself without @each), appended
-- to blocks.
local function expand(text, blocks)
  blocks = blocks or {}
  local var, values = text:match("\n%s*@each%s+([%w_]+)%s*=%s*([^\n]+)")
  if not var then
    blocks[#blocks + 1] = text
    return blocks
  end
  for value in values:gmatch("[^,%s]+") do
    local lines, each = {}, false
    for line in (text .. "\n"):gmatch("(.-)\n") do
      local only, rest = line:match("^%s*@only%s+" .. var .. "%s*=%s*([%w_]+):%s?(.*)$")
      if only then
        if only == value then lines[#lines + 1] = rest end
      elseif not each and line:match("^%s*@each%s+" .. var .. "[%s=]") then
        each = true -- (this variable's line: the next @each is the next one's)
      else
        lines[#lines + 1] = line
      end
    end
    expand((table.concat(lines, "\n"):gsub("{" .. var .. "}", value)), blocks)
  end
  return blocks
end

-- Files block b (its text, where it is, its source file's name) under
-- what it documents.
local function take(b)
  local text = b.text
  local fname = text:match("@function%s+([%w_.:]+)")
  local tname = text:match("@type%s+([%w_]+)")
  if text:match("@module%s") then
    if module_block then warn(b.where, "a second @module block (the first is at " .. module_block.where .. ")") end
    module_block = b
  elseif tname then
    if class_blocks[tname] then warn(b.where, "a second @type " .. tname .. " block") end
    class_blocks[tname] = b
  elseif fname and fname:match("^lmpio%.type%.[%w_]+$") then
    constructors[#constructors + 1] = b
  elseif fname and fname:match("^[%w_]+$") then
    callbacks[#callbacks + 1] = b
  elseif fname and fname:match("^lmpio%.[%w_]+$") then
    by_file[b.file] = by_file[b.file] or {}
    table.insert(by_file[b.file], b)
    if not files_seen[b.file] then files_seen[b.file] = true end
  elseif fname and fname:match("^[%w_]+:[%w_]+$") then
    local class = fname:match("^([%w_]+):")
    classes[class] = classes[class] or {}
    table.insert(classes[class], b)
  elseif not fname and (text:match("@field%s+([%w_]+)%.[%w_]+") or text:match("@tfield%s+%S+%s+([%w_]+)%.[%w_]+")) then
    local class = text:match("@field%s+([%w_]+)%.[%w_]+") or text:match("@tfield%s+%S+%s+([%w_]+)%.[%w_]+")
    classes[class] = classes[class] or {}
    table.insert(classes[class], b)
  else
    others[#others + 1] = b
  end
end

for i = 2, #arg do
  local path = arg[i]
  local base = path:match("[^/]+$")
  local f = assert(io.open(path, "r"))
  local lineno, block, start = 0, nil, 0
  for line in f:lines() do
    lineno = lineno + 1
    if block then
      block[#block + 1] = line
      if line:find("*/", 1, true) then
        for _, text in ipairs(expand(table.concat(block, "\n"))) do
          take({ text = text, where = path .. ":" .. start, file = base })
        end
        block = nil
      end
    elseif line:match("^%s*/%*%*%*") then
      block, start = { line }, lineno
      if line:find("*/", 4, true) then warn(path .. ":" .. lineno, "one-line LDoc comment (write the tags on their own lines)") end
    end
  end
  f:close()
  if block then warn(path .. ":" .. start, "LDoc comment not closed") end
end

local o = assert(io.open(out_name, "w"))
local function emit(b)
  o:write("/* ", b.where, " */\n", b.text, "\n\n")
end
local function section(title, name)
  o:write("/***\n", title, "\n@section ", name, "\n*/\n\n")
end

o:write("/* Generated by doc/gather.lua from the LDoc comments of lua/*.c: do not edit. */\n\n")
if module_block then
  emit(module_block)
else
  warn("lua/", "no @module block")
  o:write("/***\nThe MPI-IO file model for Lua 5.4.\n@module lmpio\n*/\n\n")
end

-- Module functions, by source file.
local order, listed = {}, {}
for _, name in ipairs(file_order) do
  if by_file[name] then order[#order + 1] = name; listed[name] = true end
end
local rest = {}
for name in pairs(by_file) do
  if not listed[name] then rest[#rest + 1] = name end
end
table.sort(rest)
for _, name in ipairs(rest) do order[#order + 1] = name end
for _, name in ipairs(order) do
  section(file_titles[name] or ("Functions of " .. name), (name:gsub("%.c$", "")))
  for _, b in ipairs(by_file[name]) do emit(b) end
end

if #constructors > 0 then
  section("Datatype constructors (lmpio.type)", "constructors")
  for _, b in ipairs(constructors) do emit(b) end
end

-- Functions that a script supplies (a converter's read, write, extent,
-- encode, decode): unqualified names.  spec/doc_check.lua knows this title.
if #callbacks > 0 then
  section("Functions a script supplies", "callbacks")
  for _, b in ipairs(callbacks) do emit(b) end
end

-- Classes: the known ones in a reading order, then the others.
local corder, cseen = {}, {}
for _, c in ipairs(class_order) do
  if classes[c] or class_blocks[c] then corder[#corder + 1] = c; cseen[c] = true end
end
local crest = {}
for c in pairs(classes) do if not cseen[c] then crest[#crest + 1] = c; cseen[c] = true end end
for c in pairs(class_blocks) do if not cseen[c] then crest[#crest + 1] = c; cseen[c] = true end end
table.sort(crest)
for _, c in ipairs(crest) do corder[#corder + 1] = c end
for _, c in ipairs(corder) do
  if class_blocks[c] then
    emit(class_blocks[c])
  else
    o:write("/***\nMethods of ", c, " objects.\n@type ", c, "\n*/\n\n")
  end
  for _, b in ipairs(classes[c] or {}) do emit(b) end
end

if #others > 0 then
  o:write("/***\n@type end\n*/\n\n")
  for _, b in ipairs(others) do emit(b) end
end
o:close()
os.exit(problems == 0 and 0 or 1)
