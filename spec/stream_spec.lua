local H = require "spec.helper"
local lmpio = H.lmpio
local world, rank, size = H.world, H.rank, H.size

-- Rank 0 makes a FIFO and starts a shell command on its other end in the
-- background (cmd gets the FIFO's path as $1); every rank gets the path.
local function fifo_with(cmd)
  local path = H.tmpname("fifo")
  if rank == 0 then
    assert(os.execute(("mkfifo '%s' && (sh -c '%s' sh '%s' &)"):format(path, cmd, path)))
  end
  world:barrier()
  return path
end

-- Rank 0 waits until path holds n bytes (a background reader still writing).
local function wait_size(path, n)
  if rank ~= 0 then return end
  for _ = 1, 2000 do
    local f = io.open(path, "rb")
    local got = f and f:seek("end") or 0
    if f then f:close() end
    if got >= n then return end
    os.execute("sleep 0.01")
  end
end

local function read_all(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

-- Every rank's string, in rank order, on every rank.
local function gather(s)
  return table.concat(world:allgather(s))
end

describe("streams", function()
  after_each(H.cleanup)

  it("write_ordered to a FIFO is byte-identical to one process writing in rank order", function()
    local out = H.tmpname("out")
    local fifo = fifo_with("cat \"$1\" > '" .. out .. "'")
    local fh <close> = lmpio.open(world, fifo, "wronly sequential")
    local lines = {}
    for k = 1, 5 do
      local s = ("call %d rank %d %s\n"):format(k, rank, ("x"):rep(rank * k))
      assert.equal(#s, fh:write_ordered(s))
      lines[k] = s
    end
    fh:close()
    local want = {}
    for k = 1, 5 do
      for r = 0, size - 1 do want[#want + 1] = ("call %d rank %d %s\n"):format(k, r, ("x"):rep(r * k)) end
    end
    want = table.concat(want)
    wait_size(out, #want)
    if rank == 0 then assert.equal(want, read_all(out)) end
  end)

  it("records_ordered hands out whole lines in rank order from a FIFO, ending together", function()
    local fifo = fifo_with("seq 1 3000 > \"$1\"")
    local fh <close> = lmpio.open(world, fifo, "rdonly sequential")
    local got, steps = {}, 0
    for lines in fh:records_ordered{max = 100} do
      assert.is_string(lines)
      if #lines > 0 then assert.equal("\n", lines:sub(-1)) end
      got[#got + 1] = gather(lines)
      steps = steps + 1
    end
    assert.equal(world:allreduce(steps, "max"), world:allreduce(steps, "min"))
    local want = {}
    for i = 1, 3000 do want[i] = i .. "\n" end
    assert.equal(table.concat(want), table.concat(got))
  end)

  it("a FIFO opened \"r\" or \"w\" is a stream, as io.open takes it", function()
    local fifo = fifo_with("seq 1 500 > \"$1\"")
    local fh <close> = lmpio.open(world, fifo, "r")
    local got = {}
    for lines in fh:records_ordered{max = 64} do got[#got + 1] = gather(lines) end
    local want = {}
    for i = 1, 500 do want[i] = i .. "\n" end
    assert.equal(table.concat(want), table.concat(got))
    fh:close()
    local out = H.tmpname("out")
    local fifo2 = fifo_with("cat \"$1\" > '" .. out .. "'")
    local wh <close> = lmpio.open(world, fifo2, "w")
    wh:write_ordered(("rank %d\n"):format(rank))
    wh:close()
    local expect = {}
    for r = 0, size - 1 do expect[#expect + 1] = ("rank %d\n"):format(r) end
    expect = table.concat(expect)
    wait_size(out, #expect)
    if rank == 0 then assert.equal(expect, read_all(out)) end
  end)

  it("records_ordered on a regular file, with another separator and a last record without one", function()
    local path = H.tmpname()
    local recs = {}
    for i = 1, 500 do recs[i] = ("r%d%s;"):format(i, ("-"):rep(i % 37)) end
    local text = table.concat(recs) .. "tail"
    if rank == 0 then
      local f = assert(io.open(path, "wb"))
      f:write(text)
      f:close()
    end
    world:barrier()
    local fh <close> = lmpio.open(world, path, "r")
    local got = {}
    for chunk in fh:records_ordered{max = 64, sep = ";"} do
      -- whole records: a piece starts a record and ends one
      if #chunk > 0 and chunk:sub(-1) ~= ";" then assert.equal("tail", chunk:match("[^;]*$")) end
      got[#got + 1] = gather(chunk)
    end
    assert.equal(text, table.concat(got))
  end)

  it("records_ordered left with break: the next pass does not start with the abandoned record", function()
    local path = H.tmpname()
    local lines = {}
    for i = 1, 400 do lines[i] = ("line %d %s\n"):format(i, ("."):rep(i % 23)) end
    local text = table.concat(lines)
    if rank == 0 then
      local f = assert(io.open(path, "wb"))
      f:write(text)
      f:close()
    end
    world:barrier()
    local fh <close> = lmpio.open(world, path, "r")
    local function pass(max)
      local got = {}
      for chunk in fh:records_ordered{max = max} do got[#got + 1] = gather(chunk) end
      return table.concat(got)
    end
    -- 50 bytes a rank: the first step leaves a line unfinished
    for _ in fh:records_ordered{max = 50} do break end
    -- the pointer stays after those bytes: the pass starts there
    assert.equal(text:sub(50 * size + 1), pass(64))
    -- after a seek or a new view: the whole text again
    for _ in fh:records_ordered{max = 50} do break end
    fh:seek_shared(0)
    assert.equal(text, pass(64))
    for _ in fh:records_ordered{max = 50} do break end
    fh:set_view(0, lmpio.BYTE, lmpio.BYTE)
    assert.equal(text, pass(64))
  end)

  it("\"-\" is rank 0's standard output or input, opened as a stream", function()
    local out <close> = lmpio.open(world, "-", "w")
    assert.is_true(out:get_amode() & lmpio.MODE_SEQUENTIAL ~= 0)
    local ok, e = pcall(out.get_size, out)
    assert.is_false(ok)
    assert.equal(lmpio.ERR_UNSUPPORTED_OPERATION, e.class)
    assert.matches("stream", e.message)
    assert.equal(0, out:write_ordered(""))
    out:close()
    -- the specs run with standard input from /dev/null: empty input
    local input <close> = lmpio.stdin()
    local steps = 0
    for _ in input:records_ordered() do steps = steps + 1 end
    assert.equal(0, steps)
    local _, n = input:read_ordered(10)
    assert.equal(0, n)
  end)

  it("lmpio.stdout and lmpio.stdin take a communicator", function()
    local fh <close> = lmpio.stdout(lmpio.self)
    assert.equal("/dev/stdout", tostring(fh):match("/dev/stdout"))
    fh:close()
    local ok, e = pcall(lmpio.open, world, "-", "r+")
    assert.is_false(ok)
    assert.equal(lmpio.ERR_ARG, e.class)
  end)

  it("wrong records_ordered options raise on every rank", function()
    local path = H.tmpname()
    local fh <close> = lmpio.open(world, path, "w+")
    local ok, e = pcall(fh.records_ordered, fh, rank == size - 1 and { sep = "ab" } or {})
    assert.is_false(ok)
    assert.equal(lmpio.ERR_ARG, e.class)
    ok, e = pcall(fh.records_ordered, fh, { max = rank == 0 and 0 or 10 })
    assert.is_false(ok)
    assert.equal(lmpio.ERR_ARG, e.class)
    if size > 1 then
      ok, e = pcall(fh.records_ordered, fh, { sep = rank == 0 and ";" or "," })
      assert.is_false(ok)
      assert.equal(lmpio.ERR_NOT_SAME, e.class)
    end
    -- the file still works
    fh:write_ordered(rank .. "\n")
    fh:seek_shared(0)
    local all = {}
    for lines in fh:records_ordered{max = 1} do all[#all + 1] = gather(lines) end
    local want = {}
    for r = 0, size - 1 do want[#want + 1] = r .. "\n" end
    assert.equal(table.concat(want), table.concat(all))
  end)

  it("a reader that closes early makes write_ordered fail with MPI_ERR_IO on every rank", function()
    local fifo = fifo_with("head -c 10 \"$1\" > /dev/null")
    local fh <close> = lmpio.open(world, fifo, "wronly sequential")
    local big = ("y"):rep(1 << 16)
    local ok, e
    for _ = 1, 1000 do
      ok, e = pcall(fh.write_ordered, fh, big)
      if not ok then break end
    end
    assert.is_false(ok)
    assert.equal(lmpio.ERR_IO, e.class)
    assert.matches("closed the pipe", e.message)
  end)
end)
