-- lmpio map: which rank owns which bytes of a file when every rank sets a
-- view, drawn in the terminal or as an SVG, computed in one process from
-- the typemaps with bounded work.

local common = require "lmpio.command.common"
local expression = require "lmpio.command.expression"

local fail, parse, check_positional = common.fail, common.parse, common.check_positional
local sandbox, datatype, integer = expression.sandbox, expression.datatype, expression.integer

local usage = [[
usage: lmpio map [OPTIONS]

Draws which rank owns which bytes of a file when every rank sets a view:
one character per byte, the owning rank's digit (0-9, then a-z, A-Z),
'.' for no rank, '!' for more than one.  No MPI job is needed: one process
computes every rank's view from the datatypes' typemaps (native extents).

  --ranks N             number of ranks (default 4)
  --disp EXPR           displacement in bytes (default 0)
  --etype T             elementary type (default BYTE)
  --filetype EXPR       filetype (default: the etype)
                        The expressions may use `rank` and `size`, e.g.
                        --disp 'rank*4' --filetype 'resized(INT, 0, size*4)'
  --bytes N             file bytes to draw (default: two filetype extents
                        past the largest displacement, at most 4096)
  --width N             bytes per row (default 64)
  --svg FILE            write an SVG picture (one box per block of a rank,
                        and a legend) instead of drawing in the terminal

The work follows the drawing, not the number of items a view repeats: at
most 1048576 bytes, 4096 ranks, 16777216 bytes times ranks, 1000000 blocks
in an item of a filetype and 65536 boxes in an SVG, else an error.
]]

local DIGITS = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
-- What map may do, whatever it is asked: the work and memory follow the
-- drawing (bytes times ranks), never the number of items a view repeats.
local MAX_BYTES = 1 << 20 -- bytes drawn
local MAX_RANKS = 4096 -- ranks drawn (--svg; 62 in the terminal)
local MAX_BLOCKS = 1000000 -- blocks of one item of one rank's filetype walked
local MAX_WORK = 1 << 24 -- bytes tested and blocks walked, all ranks together
local MAX_BOXES = 1 << 16 -- boxes of an SVG

-- The views of every rank: disp, extent and filetype.
local function views(o, nranks)
  local list = {}
  for r = 0, nranks - 1 do
    local env = sandbox({ rank = r, size = nranks })
    local disp = integer("--disp", o.disp or "0", env, 0)
    local etype = datatype("--etype", o.etype or "BYTE", env)
    local filetype = o.filetype and datatype("--filetype", o.filetype, env) or etype
    local ext = filetype:extent()
    if ext <= 0 then fail("--filetype: rank %d's filetype has extent %d (it must be positive)", r, ext) end
    if etype:size() == 0 or filetype:size() % etype:size() ~= 0 then
      fail("rank %d: the filetype (%d bytes of data) is not made of etypes (%d bytes)", r, filetype:size(), etype:size())
    end
    list[r] = { disp = disp, ext = ext, filetype = filetype }
  end
  return list
end

-- Rank r's view in [0, nbytes), without walking its items one by one.
-- Item i's block at offset b covers file byte p = disp + b + i*ext, so p is
-- the view's when some block byte q = disp + b (item 0) has q = p modulo
-- the extent and q <= p.  first[c] is the least such q of each residue c
-- of the drawing (c < min(ext, nbytes)); with the blocks in file order the
-- first block to reach a residue gives its least q, and next[] (a "next
-- residue not yet reached" forest) makes each residue cost one visit.
-- Returns whether byte p is the view's: a function of p.
local function view_bytes(v, nbytes, work)
  local ext, disp = v.ext, v.disp
  local R = math.min(ext, nbytes)
  local offs, lens, sorted, walked = {}, {}, true, 0
  for off, len in v.filetype:blocks() do
    if walked == MAX_BLOCKS then
      fail("--filetype: more than %d blocks in one item: too many to draw", MAX_BLOCKS)
    end
    walked = walked + 1
    work(1)
    if disp + off < nbytes then -- a block past the drawing reaches nothing in it
      if #offs > 0 and off < offs[#offs] then sorted = false end
      offs[#offs + 1], lens[#offs + 1] = off, len
    end
  end
  local order = {}
  for k = 1, #offs do order[k] = k end
  if not sorted then table.sort(order, function(a, b) return offs[a] < offs[b] end) end
  work(R)
  local first, next = {}, {}
  for c = 0, R do next[c] = c end
  local function find(c) -- the first residue >= c not reached (R: none)
    local root = c
    while next[root] ~= root do root = next[root] end
    while next[c] ~= root do c, next[c] = next[c], root end
    return root
  end
  local function reach(a, b, q, c0) -- residues [a, b) from the block at q
    local c = find(a)
    while c < b do
      first[c] = q + (c - c0) % ext
      next[c] = c + 1
      c = find(c + 1)
    end
  end
  for _, k in ipairs(order) do
    local q, len = disp + offs[k], math.min(lens[k], ext)
    local c0 = q % ext
    if c0 < R then reach(c0, math.min(c0 + len, R), q, c0) end
    if c0 + len > ext then reach(0, math.min(c0 + len - ext, R), q, c0) end
    if find(0) == R then break end -- every residue reached
  end
  return function(p)
    local f = first[p % ext]
    return f ~= nil and f <= p
  end
end

local function xml(s) return (s:gsub("[&<>\"]", { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;" })) end

local function svg(path, cov, owners, nranks, nbytes, width, title)
  local cw, ch, left, top = 12, 24, 72, 40
  local rows = (nbytes + width - 1) // width
  local legend_y = top + rows * (ch + 6) + 16
  local per_row = math.max(1, (width * cw) // 90)
  local legend_rows = (nranks + 1 + per_row - 1) // per_row
  local W = left + width * cw + 16
  local H = legend_y + legend_rows * 22 + 10
  local out = {}
  local function add(fmt, ...) out[#out + 1] = string.format(fmt, ...) end
  W = math.max(W, left + #title * 8)
  local function colour(r) return string.format("hsl(%d,65%%,55%%)", r * 360 // nranks) end
  add('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="monospace" font-size="12">', W, H, W, H)
  add('<title>%s</title>', xml(title))
  add('<text x="%d" y="20">%s</text>', left, xml(title))
  -- the row grid: unowned bytes are the background
  for row = 0, rows - 1 do
    local y = top + row * (ch + 6)
    local n = math.min(width, nbytes - row * width)
    add('<text x="%d" y="%d" text-anchor="end">%d</text>', left - 6, y + 16, row * width)
    add('<rect class="row" x="%d" y="%d" width="%d" height="%d" fill="#eeeeee" stroke="#999999"/>', left, y, n * cw, ch)
  end
  -- one box per block of a rank (split where a row ends)
  local function boxes(class, r, iv, fill, extra)
    local lo, hi = iv[1], iv[2]
    while lo <= hi do
      local row = lo // width
      local last = math.min(hi, row * width + width - 1)
      local x, y = left + (lo - row * width) * cw, top + row * (ch + 6)
      add('<rect class="%s"%s x="%d" y="%d" width="%d" height="%d" fill="%s" %s><title>%s bytes %d-%d</title></rect>',
          class, r and string.format(' data-rank="%d"', r) or "", x, y, (last - lo + 1) * cw, ch, fill,
          extra, r and "rank " .. r .. ":" or "more than one rank:", iv[1], iv[2])
      lo = last + 1
    end
  end
  for r = 0, nranks - 1 do
    for _, iv in ipairs(cov[r]) do boxes("block", r, iv, colour(r), 'stroke="#333333" fill-opacity="0.85"') end
  end
  -- bytes of more than one rank: outlined in red on top
  local run
  for b = 0, nbytes do
    if b < nbytes and owners[b] == -2 then
      if run then run[2] = b else run = { b, b } end
    elseif run then
      boxes("overlap", nil, run, "none", 'stroke="#d00000" stroke-width="3"')
      run = nil
    end
  end
  -- legend
  for k = 0, nranks do
    local x = left + (k % per_row) * 90
    local y = legend_y + (k // per_row) * 22
    if k < nranks then
      add('<rect class="legend" x="%d" y="%d" width="14" height="14" fill="%s" stroke="#333333"/>', x, y, colour(k))
      add('<text x="%d" y="%d">rank %d</text>', x + 20, y + 12, k)
    else
      add('<rect class="legend" x="%d" y="%d" width="14" height="14" fill="none" stroke="#d00000" stroke-width="3"/>', x, y)
      add('<text x="%d" y="%d">overlap</text>', x + 20, y + 12)
    end
  end
  add('</svg>')
  local f, err = io.open(path, "w")
  if not f then fail("--svg: %s", err) end
  f:write(table.concat(out, "\n"), "\n")
  f:close()
end

local function map(argv)
  local pos, o = parse(argv, 2, {
    ranks = true, disp = true, etype = true, filetype = true, bytes = true, width = true, svg = true, help = false,
  }, "map")
  if o.help then return io.stdout:write(usage) end
  check_positional(pos, 0, "map", "no argument")
  local nranks = integer("--ranks", o.ranks or "4", nil, 1)
  local width = integer("--width", o.width or "64", nil, 1)
  if nranks > #DIGITS and not o.svg then
    fail("map: more than %d ranks cannot be drawn with one character each: use --svg FILE", #DIGITS)
  end
  if common.module().world:rank() ~= 0 then return end
  if nranks > MAX_RANKS then fail("map: more than %d ranks: too many to draw", MAX_RANKS) end
  local vs = views(o, nranks)
  local nbytes
  if o.bytes then
    nbytes = integer("--bytes", o.bytes, nil, 1)
    if nbytes > MAX_BYTES then fail("--bytes: at most %d bytes can be drawn", MAX_BYTES) end
  else
    nbytes = 0
    for r = 0, nranks - 1 do nbytes = math.max(nbytes, vs[r].disp + 2 * vs[r].ext) end
    nbytes = math.max(1, math.min(4096, nbytes))
  end
  if nranks * nbytes > MAX_WORK then
    fail("map: %d bytes of %d ranks is too much to draw (at most %d bytes times ranks): draw fewer bytes (--bytes)",
         nbytes, nranks, MAX_WORK)
  end
  local done = 0
  local function work(n)
    done = done + n
    if done > MAX_WORK then
      fail("map: too much work to draw these views (more than %d blocks walked and bytes tested): draw fewer bytes or ranks",
           MAX_WORK)
    end
  end
  -- owners[p]: the rank of byte p, -2 for more than one; cov[r]: rank r's
  -- runs of bytes {first, last} (for --svg only)
  local cov, owners, boxes = {}, {}, 0
  for r = 0, nranks - 1 do
    local mine = view_bytes(vs[r], nbytes, work)
    work(nbytes)
    local runs, run = {}, nil
    for p = 0, nbytes - 1 do
      if mine(p) then
        owners[p] = owners[p] and -2 or r
        if not o.svg then -- nothing more to keep
        elseif run and run[2] == p - 1 then
          run[2] = p
        else
          boxes = boxes + 1
          if boxes > MAX_BOXES then
            fail("map --svg: more than %d boxes to draw: draw fewer bytes (--bytes)", MAX_BOXES)
          end
          run = { p, p }
          runs[#runs + 1] = run
        end
      end
    end
    cov[r] = runs
  end
  if o.svg then
    local title = string.format("%d ranks: disp %s, etype %s, filetype %s; bytes 0-%d", nranks, o.disp or "0",
                                o.etype or "BYTE", o.filetype or o.etype or "BYTE", nbytes - 1)
    return svg(o.svg, cov, owners, nranks, nbytes, width, title)
  end
  local out = io.stdout
  local digits = #tostring(nbytes - 1)
  local row = {}
  for start = 0, nbytes - 1, width do
    local n = math.min(width, nbytes - start)
    for k = 1, n do
      local w = owners[start + k - 1]
      row[k] = w == nil and "." or w == -2 and "!" or DIGITS:sub(w + 1, w + 1)
    end
    out:write(string.format("%" .. digits .. "d  ", start), table.concat(row, "", 1, n), "\n")
  end
end

return { map = { usage = usage, main = map } }
