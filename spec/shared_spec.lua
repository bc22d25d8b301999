local H = require "spec.helper"
local lmpio = H.lmpio
local world, rank, size = H.world, H.rank, H.size

describe("shared file pointer", function()
  after_each(H.cleanup)

  it("write_ordered appends Lua strings in rank order and read_ordered reads them back", function()
    local path = H.tmpname()
    local fh <close> = lmpio.open(world, path, "w+")
    local line = string.format("line of rank %d%s\n", rank, string.rep("*", rank))
    assert.equal(#line, fh:write_ordered(line))
    assert.equal(0, fh:get_position())
    local total = world:allreduce(#line)
    assert.equal(total, fh:get_position_shared())
    fh:seek_shared(0, "set")
    local buf, n = fh:read_ordered(#line)
    assert.equal(#line, n)
    assert.equal(line, buf:tostring())
    fh:sync()
    world:barrier()
    local expect = {}
    for r = 0, size - 1 do expect[#expect + 1] = string.format("line of rank %d%s\n", r, string.rep("*", r)) end
    assert.equal(table.concat(expect), fh:read_at(0, total):tostring())
  end)

  it("write_shared and read_shared move the one pointer", function()
    local path = H.tmpname()
    local fh <close> = lmpio.open(world, path, "w+")
    fh:set_view(0, lmpio.INT, lmpio.INT)
    assert.equal(2, fh:write_shared(lmpio.array(lmpio.INT, { rank, rank })))
    world:barrier()
    assert.equal(2 * size, fh:get_position_shared())
    world:barrier()
    fh:seek_shared(0)
    local all = fh:read_at_all(0, 2 * size, lmpio.INT)
    -- every rank's pair is somewhere, intact
    local seen = {}
    for i = 1, 2 * size, 2 do
      assert.equal(all[i], all[i + 1])
      seen[all[i]] = true
    end
    for r = 0, size - 1 do assert.is_true(seen[r]) end
    world:barrier()
    if rank == 0 then
      local a, n = fh:read_shared(2, lmpio.INT)
      assert.equal(2, n)
      assert.equal(a[1], a[2])
    end
    world:barrier()
    assert.equal(rank == 0 and 2 or 2, fh:get_position_shared())
  end)

  it("seek_shared whence cur and end", function()
    local path = H.tmpname()
    local fh <close> = lmpio.open(world, path, "w+")
    fh:write_ordered("0123456789")
    assert.equal(10 * size, fh:seek_shared(0, "end"))
    assert.equal(10 * size, fh:get_position_shared())
    assert.equal(10 * size - 5, fh:seek_shared(-5, "cur"))
    assert.equal(10 * size - 5, fh:get_position_shared())
  end)

  it("split ordered collectives keep their buffer until _end", function()
    local path = H.tmpname()
    local fh <close> = lmpio.open(world, path, "w+")
    fh:set_view(0, lmpio.DOUBLE, lmpio.DOUBLE)
    local a = lmpio.array(lmpio.DOUBLE, { rank + 0.5, rank + 0.75 })
    fh:write_ordered_begin(a)
    a = nil
    collectgarbage()
    collectgarbage()
    assert.equal(2, fh:write_ordered_end())
    fh:seek_shared(0)
    fh:read_ordered_begin(2, lmpio.DOUBLE)
    collectgarbage()
    local b, n = fh:read_ordered_end()
    assert.equal(2, n)
    assert.same({ rank + 0.5, rank + 0.75 }, b:totable())
    -- with a given buffer, _end may name it
    fh:seek_shared(0)
    local c = lmpio.array(lmpio.DOUBLE, 2)
    fh:read_ordered_begin(c)
    local c2, m = fh:read_ordered_end(c)
    assert.equal(c, c2)
    assert.equal(2, m)
    assert.equal(rank + 0.75, c[2])
    fh:seek_shared(0)
    fh:read_ordered_begin(c)
    local wrong = pcall(fh.read_ordered_end, fh, lmpio.array(lmpio.DOUBLE, 2))
    assert.is_false(wrong)
    fh:read_ordered_end()
  end)
end)
