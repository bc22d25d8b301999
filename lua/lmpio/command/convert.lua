-- lmpio convert: a file of elements rewritten in another data
-- representation (a .npy, a Fortran sequential file's records), each rank
-- its block of the elements.

local common = require "lmpio.command.common"
local expression = require "lmpio.command.expression"
local fortran = require "lmpio.command.fortran"

local fail, error_text, open, set_view = common.fail, common.error_text, common.open, common.set_view
local packed_size = common.packed_size

local usage = [[
usage: lmpio convert IN OUT [OPTIONS]

Rewrites IN, a sequence of elements in one data representation, as OUT in
another.  Under `mpirun -n K` each rank converts its block of the elements;
OUT is the same whatever K.  In a file an element is its items one after
the other, each at its size in that file's representation: the padding of
a C struct in memory is not in the file (a record of an INT and 1000
DOUBLEs is 8004 bytes in the file, 8008 in memory).

  --type T              the element type, a datatype expression: DOUBLE,
                        'contiguous(3, INT)', 'struct({1,1}, {0,8}, {DOUBLE, INT})',
                        'record{{"id", INT}, {"x", DOUBLE, 3}}' (named fields)
  --etype T             the same as --type
  --from REP            representation of IN: native (default), external32,
                        internal or a registered name
  --to REP              representation of OUT (default native)
  --disp N              a header of N bytes, copied as it is (default 0)
  --header-type T       a header of one element of T, converted like the
                        elements (instead of --disp)
  --datarep-file F.lua  a Lua file that registers representations
                        (lmpio.register_datarep); run on every rank first
.npy files (numpy's format):
  --from npy            IN is a .npy file: the element type, the shape and
                        the representation are its header's (--type, if
                        given, must be its type).  The default for an IN
                        that starts with \x93NUMPY, unless --from is given
  --to npy              OUT is a .npy file (native representation) of IN's
                        elements in the order they are, with the shape and
                        order of IN's header, or else these:
  --shape DIMS          OUT's shape, e.g. '{1000, 3}' (default {N}: all
                        the elements)
  --order C|F           what OUT's header says of the order (default C:
                        the last index varies fastest)
Fortran sequential unformatted files:
  --fortran             IN and OUT are records, each a length marker, the
                        payload and the same marker again; a payload is a
                        whole number of elements (the first record's: of
                        --header-type when given).  The markers are
                        rewritten for OUT's payload sizes
  --markers ORDER       byte order of the markers of IN and OUT: little, big
                        or native (default: big with external32 and
                        internal, native otherwise)
  --from-markers ORDER  of IN's markers only
  --to-markers ORDER    of OUT's markers only
  --marker-size N       bytes of a marker: 4 (default) or 8

The size of IN after the header must be a whole number of elements.  A
Fortran record whose markers disagree, run past the end of IN or are cut
short is an error naming the record (from 1) and its offset, and the
options that read IN when markers of another byte order or size frame it
(e.g. --from-markers big).
]]

-- Converts n elements of t from IN at byte inoff to OUT at byte outoff,
-- independently, chunk after chunk (buf holds chunk elements).
local function convert_run(fin, fout, inpath, outpath, buf, chunk, t, n, inoff, insize, outoff, outsize, where)
  local done = 0
  while done < n do
    local m = math.min(chunk, n - done)
    local ok, e, got = pcall(fin.read_at, fin, inoff + done * insize, buf, m, t)
    if not ok then fail("%s: %s", inpath, error_text(e)) end
    if got < m then
      fail("%s: %s: a read returned fewer elements than the file size promised (did it change?); %s is incomplete",
           inpath, where, outpath)
    end
    ok, e = pcall(fout.write_at, fout, outoff + done * outsize, buf, m, t)
    if not ok then fail("%s: %s", outpath, error_text(e)) end
    done = done + m
  end
end

local function convert(argv)
  local pos, o = common.parse(argv, 2, {
    type = true, etype = true, from = true, to = true, disp = true, ["datarep-file"] = true, help = false,
    ["header-type"] = true, fortran = false, markers = true, ["from-markers"] = true, ["to-markers"] = true,
    ["marker-size"] = true, shape = true, order = true,
  }, "convert")
  if o.help then return io.stdout:write(usage) end
  common.check_positional(pos, 2, "convert", "IN and OUT")
  local inpath, outpath = pos[1], pos[2]
  if inpath == outpath then fail("convert: IN and OUT are the same file (%s)", inpath) end
  if o.type and o.etype and o.type ~= o.etype then fail("convert: --type and --etype differ") end
  local texpr = o.type or o.etype
  -- .npy: IN's header gives the type, shape and representation
  local npy_in = o.from == "npy" or (not o.from and common.is_npy(inpath))
  local npy_out = o.to == "npy"
  if npy_in or npy_out then
    for _, k in ipairs({ "disp", "header-type", "fortran" }) do
      if o[k] then fail("convert: --%s with a .npy file (its header is the .npy's)", k) end
    end
  end
  if not npy_out and (o.shape or o.order) then fail("convert: --%s is for a .npy OUT (--to npy)", o.shape and "shape" or "order") end
  if not texpr and not npy_in then fail("convert: say the element type with --type (e.g. --type DOUBLE)") end
  if o.disp and o["header-type"] then fail("convert: give a header either as bytes (--disp) or as a type (--header-type)") end
  if o.disp and o.fortran then fail("convert: --disp with --fortran: the header is a record of its own (--header-type)") end
  if not o.fortran then
    for _, k in ipairs({ "markers", "from-markers", "to-markers", "marker-size" }) do
      if o[k] then fail("convert: --%s is for Fortran files (--fortran)", k) end
    end
  end
  local lmpio = common.module()
  local world = lmpio.world
  local rank, size = world:rank(), world:size()
  local env = expression.sandbox()
  local fin_npy, npy
  if npy_in then fin_npy, npy = common.npy_open(world, inpath, "r") end
  local t = texpr and expression.datatype(o.type and "--type" or "--etype", texpr, env) or npy.type
  if npy and t:name() ~= npy.type:name() then
    fail("--type: %s, but %s holds %s (its .npy header)", texpr, inpath, npy.type:name())
  end
  texpr = texpr or t:name()
  local ht = o["header-type"] and expression.datatype("--header-type", o["header-type"], env)
  local disp = expression.integer("--disp", o.disp or "0", env, 0)
  if t:size() == 0 then fail("--type: %s has no data", texpr) end
  if ht and ht:size() == 0 then fail("--header-type: %s has no data", o["header-type"]) end
  local mbytes = expression.integer("--marker-size", o["marker-size"] or "4", env, 0)
  if mbytes ~= 4 and mbytes ~= 8 then fail("--marker-size: %d bytes (4 or 8)", mbytes) end
  common.run_datarep_file(o["datarep-file"])
  local from = npy and npy.datarep or o.from or "native"
  local to = npy_out and "native" or o.to or "native"
  -- Markers: in the representation's byte order when it has one.
  local function default_order(rep) return (rep == "external32" or rep == "internal") and "big" or "native" end
  local infmt = o.fortran and fortran.marker_format(o["from-markers"] and "--from-markers" or "--markers",
                                            o["from-markers"] or o.markers or default_order(from), mbytes)
  local outfmt = o.fortran and fortran.marker_format(o["to-markers"] and "--to-markers" or "--markers",
                                             o["to-markers"] or o.markers or default_order(to), mbytes)

  local fin <close> = fin_npy or open(world, inpath, "r")
  local total = fin:get_size()
  if total < disp then fail("%s: %d bytes, shorter than the header (--disp %d)", inpath, total, disp) end
  local header = disp > 0 and fin:read_at_all(0, rank == 0 and disp or 0, lmpio.BYTE)
  local recs = o.fortran and fortran.records(world, fin, inpath, total, infmt, "--from-markers")
  set_view(fin, inpath, 0, lmpio.BYTE, lmpio.BYTE, from)
  local insize = packed_size(fin, inpath, t)
  local hin = ht and packed_size(fin, inpath, ht)
  local tname = texpr .. (from ~= "native" and " in " .. from or "")
  local nin -- elements of IN
  if npy then
    nin = 1
    for _, d in ipairs(npy.shape) do nin = nin * d end
    hin = npy.offset -- (the file holds them: npy.open "r" checked)
  elseif not o.fortran then
    local head = hin or disp
    if total < head then
      fail("%s: %d bytes, shorter than the header (--header-type, %d bytes in %s)", inpath, total, head, from)
    end
    if (total - head) % insize ~= 0 then
      fail("%s: %d bytes after the header are not a whole number of elements of %d bytes (%s)",
           inpath, total - head, insize, tname)
    end
  else
    for k, r in ipairs(recs) do
      local sz, what = insize, tname
      if k == 1 and ht then sz, what = hin, o["header-type"] .. " (--header-type)" end
      if r[2] % sz ~= 0 then
        fail("%s: record %d at offset %d: %d bytes are not a whole number of elements of %d bytes (%s)",
             inpath, k, r[1], r[2], sz, what)
      end
    end
  end
  -- OUT may name IN another way (a link, another spelling): opening it "w"
  -- would empty IN before a byte of it is read.
  if world:allreduce(lmpio.same_file(inpath, outpath), "lor") then
    fail("convert: IN and OUT are the same file (%s and %s)", inpath, outpath)
  end
  local fout_npy, onpy
  if npy_out then
    local n = nin or (total - (hin or disp)) // insize
    local shape = o.shape and expression.evaluate("--shape", o.shape, {}) or npy and npy.shape or { n }
    local m = type(shape) == "table" and 1 or -1
    for _, d in ipairs(type(shape) == "table" and shape or {}) do m = math.type(d) == "integer" and d >= 0 and m * d or -1 end
    if m ~= n then
      fail("--shape: '%s' holds %s elements, IN holds %d", o.shape, m < 0 and "no number of" or tostring(m), n)
    end
    fout_npy, onpy = common.npy_open(world, outpath, "w", { type = t, shape = shape, order = o.order or npy and npy.order or "C" })
  end
  local fout <close> = fout_npy or open(world, outpath, "w")
  if header then fout:write_at_all(0, header) end -- as it is

  -- Fortran: OUT's records, and their markers while OUT's view is bytes.
  local outrecs
  if o.fortran then
    outrecs = {}
    local lim = mbytes == 4 and 0x7fffffff or math.maxinteger
    local at = 0
    local osz = {} -- payload bytes of an element of OUT, filled after set_view
    for k, r in ipairs(recs) do outrecs[k] = { r[2] } end
    -- the sizes in OUT need its view: markers after it, through a second
    -- handle of this rank with the default view (bytes as they are)
    set_view(fout, outpath, 0, lmpio.BYTE, lmpio.BYTE, to)
    osz.t = packed_size(fout, outpath, t)
    osz.h = ht and packed_size(fout, outpath, ht)
    for k, r in ipairs(recs) do
      local len = (k == 1 and ht) and r[2] // hin * osz.h or r[2] // insize * osz.t
      if len > lim then
        fail("%s: record %d becomes %d bytes in %s, too long for a %d-byte marker", outpath, k, len, to, mbytes)
      end
      outrecs[k] = { at, len }
      at = at + 2 * mbytes + len
    end
    local first, mine = lmpio.block(#recs, size, rank)
    local mk <close> = open(lmpio.self, outpath, "r+")
    for k = first + 1, first + mine do
      local r = outrecs[k]
      local m = string.pack(outfmt, r[2])
      local ok, e = pcall(mk.write_at, mk, r[1], m)
      if ok then ok, e = pcall(mk.write_at, mk, r[1] + mbytes + r[2], m) end
      if not ok then fail("%s: %s", outpath, error_text(e)) end
    end
    mk:close()
    world:barrier()
    -- The payloads: the header record on rank 0, then every rank its block
    -- of all the other records' elements.
    local mext = math.max(t:extent(), ht and ht:extent() or 0)
    local chunk = math.max(1, (1 << 22) // math.max(mext, insize, osz.t))
    local buf = lmpio.buffer(chunk * mext)
    local k0 = 1
    if ht and #recs > 0 then
      if rank == 0 then
        local hb = lmpio.buffer(math.max(1, recs[1][2] // hin) * ht:extent())
        convert_run(fin, fout, inpath, outpath, hb, recs[1][2] // hin, ht, recs[1][2] // hin,
                    mbytes, hin, mbytes, osz.h, "record 1")
      end
      k0 = 2
    end
    -- elements before each record (from k0), for a binary search
    local before, n = {}, 0
    for k = k0, #recs do
      before[k] = n
      n = n + recs[k][2] // insize
    end
    local e0, emine = lmpio.block(n, size, rank)
    local k = k0
    local lo, hi = k0, #recs
    while lo < hi do -- the last record whose elements start at or before e0
      local mid = (lo + hi + 1) // 2
      if before[mid] <= e0 then lo = mid else hi = mid - 1 end
    end
    k = lo
    local e = e0
    while emine > 0 and k <= #recs do
      local cnt = recs[k][2] // insize
      local j = e - before[k] -- this record's first element of mine
      local m = math.min(cnt - j, emine)
      if m > 0 then
        convert_run(fin, fout, inpath, outpath, buf, chunk, t, m, recs[k][1] + mbytes + j * insize, insize,
                    outrecs[k][1] + mbytes + j * osz.t, osz.t, "record " .. k)
        e, emine = e + m, emine - m
      end
      k = k + 1
    end
    world:barrier()
    fout:close()
    fin:close()
    return
  end

  set_view(fout, outpath, 0, lmpio.BYTE, lmpio.BYTE, to)
  local outsize = packed_size(fout, outpath, t)
  local hout = onpy and onpy.offset or ht and packed_size(fout, outpath, ht) or disp
  local hin_ = hin or disp
  if ht then -- the header: one element, converted on rank 0
    local hb = lmpio.buffer(ht:extent())
    local ok, e, got = pcall(fin.read_at_all, fin, 0, hb, rank == 0 and 1 or 0, ht)
    if not ok then fail("%s: %s", inpath, error_text(e)) end
    if world:allreduce(got < (rank == 0 and 1 or 0), "lor") then fail("%s: the header could not be read", inpath) end
    ok, e = pcall(fout.write_at_all, fout, 0, hb, rank == 0 and 1 or 0, ht)
    if not ok then fail("%s: %s", outpath, error_text(e)) end
  end
  local n = nin or (total - hin_) // insize
  local first, mine = lmpio.block(n, size, rank)
  local mext = t:extent()
  local chunk = math.max(1, (1 << 22) // math.max(mext, insize, outsize)) -- elements per step
  local buf = lmpio.buffer(math.min(chunk, math.max(mine, 1)) * mext)
  chunk = math.min(chunk, math.max(mine, 1))
  local steps = world:allreduce((mine + chunk - 1) // chunk, "max")
  for step = 0, steps - 1 do
    local at = step * chunk
    local m = math.max(0, math.min(chunk, mine - at))
    local ok, e, got = pcall(fin.read_at_all, fin, hin_ + (first + at) * insize, buf, m, t)
    if not ok then fail("%s: %s", inpath, error_text(e)) end
    -- IN shorter than its size said (it changed meanwhile): no zeros in OUT
    local short = world:allreduce(got < m and first + at + got or -1, "max")
    if short >= 0 then
      fail("%s: a read returned fewer elements than its size promised (it ends at element %d of %d: did it change?); %s is incomplete",
           inpath, short, n, outpath)
    end
    ok, e = pcall(fout.write_at_all, fout, hout + (first + at) * outsize, buf, m, t)
    if not ok then fail("%s: %s", outpath, error_text(e)) end
  end
  fout:close()
  fin:close()
end

return { convert = { usage = usage, main = convert } }
