-- Handle lifetime seen from Lua: a file closed (or used) from inside a call
-- that is still using it, from a converter written in Lua.  Every misuse is
-- a Lua error; the file stays usable and closes normally afterwards.
local H = require "spec.helper"
local lmpio = H.lmpio
local world, rank = H.world, H.rank

describe("handle lifetime", function()
  after_each(H.cleanup)

  it("a converter that closes its own file gets an error; the file stays open and usable", function()
    local fh
    local seen = {}
    lmpio.register_datarep("spec_lt_closeown", {
      extent = function(t) return t:size() end,
      write = function(ub, dt, count, fb, pos)
        local ok, err = pcall(fh.close, fh)
        seen[#seen + 1] = ok and "closed" or tostring(err)
        lmpio.byteswap(fb, 0, ub, pos * 4, count, 4)
      end,
      read = function(ub, dt, count, fb, pos)
        fh:close() -- not caught: the read fails
      end,
    })
    local path = H.tmpname("lt")
    fh = lmpio.open(world, path, "w+")
    fh:set_view(0, lmpio.INT, lmpio.INT, "spec_lt_closeown")
    assert.equal(2, fh:write_at_all(2 * rank, lmpio.array(lmpio.INT, { rank, -rank })))
    assert.is_true(#seen >= 1)
    for _, msg in ipairs(seen) do assert.matches("is in use by a call in progress", msg, 1, true) end
    local ok, e = pcall(fh.read_at_all, fh, 2 * rank, 2, lmpio.INT)
    assert.is_false(ok)
    assert.equal("MPI_ERR_CONVERSION", e.name)
    assert.matches("in use by a call in progress", e.message, 1, true)
    -- still open: usable, then closed collectively as usual
    fh:set_view(0, lmpio.BYTE, lmpio.BYTE)
    assert.equal(string.pack(">i4>i4", rank, -rank), fh:read_at_all(8 * rank, 8):tostring())
    assert.matches("lmpio.file %(", tostring(fh))
    fh:close()
    assert.equal("lmpio.file (closed)", tostring(fh))
    H.raises(function() fh:get_size() end, "attempt to use a closed file")
  end)

  it("a converter that closes its own file inside a nonblocking call gets an error; the call goes on", function()
    local fh
    local seen = {}
    lmpio.register_datarep("spec_lt_closeown_nb", {
      extent = function(t) return t:size() end,
      write = function(ub, dt, count, fb, pos)
        local ok, err = pcall(fh.close, fh)
        seen[#seen + 1] = ok and "closed" or tostring(err)
        lmpio.byteswap(fb, 0, ub, pos * 4, count, 4)
      end,
      read = function(ub, dt, count, fb, pos)
        local ok, err = pcall(fh.close, fh)
        seen[#seen + 1] = ok and "closed" or tostring(err)
        lmpio.byteswap(ub, pos * 4, fb, 0, count, 4)
      end,
    })
    local path = H.tmpname("ltnb")
    fh = lmpio.open(world, path, "w+")
    fh:set_view(0, lmpio.INT, lmpio.INT, "spec_lt_closeown_nb")
    local a = lmpio.array(lmpio.INT, { rank, -rank })
    local function refused(what)
      assert.is_true(#seen >= 1, what)
      for _, msg in ipairs(seen) do assert.matches("is in use by a call in progress", msg, 1, true) end
      seen = {}
      assert.matches("lmpio.file %(", tostring(fh))
    end
    local r = fh:iwrite_at(2 * rank, a)
    refused("iwrite_at")
    assert.equal(2, r:wait())
    r = fh:iwrite_shared(a)
    refused("iwrite_shared")
    assert.equal(2, r:wait())
    r = fh:iwrite_at_all(2 * rank, a)
    refused("iwrite_at_all")
    assert.equal(2, r:wait())
    fh:seek(2 * rank)
    fh:write_all_begin(a)
    refused("write_all_begin")
    assert.equal(2, fh:write_all_end())
    fh:read_at_all_begin(2 * rank, 2, lmpio.INT)
    local b, n = fh:read_at_all_end()
    refused("read_at_all_end")
    assert.equal(2, n)
    assert.same({ rank, -rank }, b:totable())
    fh:close()
    assert.equal("lmpio.file (closed)", tostring(fh))
  end)
end)
