local H = require "spec.helper"
local lmpio = H.lmpio

describe("communicators", function()
  after_each(H.cleanup)

  it("world has this rank and size", function()
    assert.is_true(H.rank >= 0 and H.rank < H.size)
    assert.equal(H.size, lmpio.world:size())
  end)

  it("self has one rank", function()
    assert.equal(0, lmpio.self:rank())
    assert.equal(1, lmpio.self:size())
  end)

  it("barrier returns", function()
    lmpio.world:barrier()
  end)

  it("split by parity ranks by key", function()
    local c = lmpio.world:split(H.rank % 2, -H.rank)
    assert.equal(math.floor((H.size - H.rank % 2 + 1) / 2), c:size())
    -- keys are negated ranks: the highest world rank is rank 0
    local members = c:allgather(H.rank)
    for i = 2, #members do assert.is_true(members[i - 1] > members[i]) end
    c:free()
  end)

  it("split with an undefined color gives nil", function()
    local c = lmpio.world:split(H.rank == 0 and 0 or lmpio.UNDEFINED)
    if H.rank == 0 then
      assert.equal(1, c:size())
      c:free()
    else
      assert.is_nil(c)
    end
  end)

  it("dup is a new communicator with the same ranks", function()
    local c = lmpio.world:dup()
    assert.equal(H.rank, c:rank())
    assert.equal(H.size, c:size())
    assert.is_false(c == lmpio.world)
    c:free()
    assert.has_error(function() c:rank() end, "attempt to use a freed communicator")
  end)

  it("cannot free world", function()
    assert.has_error(function() lmpio.world:free() end)
  end)

  it("bcast and allreduce agree", function()
    assert.equal("hello", lmpio.world:bcast(H.rank == 0 and "hello" or nil))
    assert.equal(42, lmpio.world:bcast(42))
    assert.equal(true, lmpio.world:bcast(true))
    assert.equal(H.size * (H.size - 1) // 2, lmpio.world:allreduce(H.rank))
    assert.equal(H.size - 1, lmpio.world:allreduce(H.rank, "max"))
  end)

  it("wtime increases", function()
    local t0 = lmpio.wtime()
    local t1 = lmpio.wtime()
    assert.is_true(t1 >= t0)
    assert.is_true(lmpio.wtick() > 0)
  end)

  it("tostring", function()
    assert.matches("lmpio.comm %(rank %d+ of %d+%)", tostring(lmpio.world))
  end)
end)
