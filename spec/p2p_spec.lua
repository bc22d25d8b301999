-- Point-to-point semantics of messages (lua/p2p.c): a receive takes part
-- in matching from the moment it is posted, a message goes to the earliest
-- posted receive that fits it, receives land in arrays the script gives.
local H = require "spec.helper"
local lmpio = H.lmpio
local world, rank, size = H.world, H.rank, H.size

describe("receives posted at the call", function()
  after_each(H.cleanup)
  local left, right = (rank - 1) % size, (rank + 1) % size

  -- The issue's halo: irecv from both sides, then a blocking send of an
  -- edge to each side, then wait both.  Above the eager limit every rank
  -- sat in its send when a receive was matched only when waited for.
  for _, n in ipairs({ 100, 100000 }) do
    it("irecv then blocking sends of " .. n .. " doubles to both sides complete", function()
      local from_left, from_right = world:irecv(left, 2), world:irecv(right, 1)
      world:send(lmpio.array(lmpio.DOUBLE, n):fill(rank * 10 + 1), left, 1)
      world:send(lmpio.array(lmpio.DOUBLE, n):fill(rank * 10 + 2), right, 2)
      local a, src = from_left:wait()
      local b = from_right:wait()
      assert.equal(left, src)
      assert.equal(n, #a)
      assert.equal((left * 10 + 2) * n, a:sum())
      assert.equal((right * 10 + 1) * n, b:sum())
    end)

    it("irecv into given arrays then blocking sends of " .. n .. " doubles complete", function()
      local ga, gb = lmpio.array(lmpio.DOUBLE, n), lmpio.array(lmpio.DOUBLE, n)
      local from_left, from_right = world:irecv(left, 2, ga), world:irecv(right, 1, gb)
      world:send(lmpio.array(lmpio.DOUBLE, n):fill(rank * 10 + 1), left, 1)
      world:send(lmpio.array(lmpio.DOUBLE, n):fill(rank * 10 + 2), right, 2)
      local a, src, tag = from_left:wait()
      assert.equal(ga, a) -- the array given
      assert.equal(left, src)
      assert.equal(2, tag)
      lmpio.waitall({ from_right })
      assert.equal((left * 10 + 2) * n, ga:sum())
      assert.equal((right * 10 + 1) * n, gb:sum())
      assert.equal(left * 10 + 2, ga[n])
    end)
  end

  it("a wildcard receive posted after a specific one takes the message only it fits", function()
    if size < 2 then return end
    for _, n in ipairs({ 100, 100000 }) do
      for _, how in ipairs({ "wait", "waitany" }) do
        if rank == 1 then
          local r1 = world:irecv(0, 7)
          local r2 = world:irecv(lmpio.ANY_SOURCE, lmpio.ANY_TAG)
          world:barrier()
          local v, src, tag
          if how == "wait" then
            v, src, tag = r2:wait()
          else
            local i
            i, v, src, tag = lmpio.waitany({ r1, r2 })
            assert.equal(2, i)
          end
          assert.equal(0, src)
          assert.equal(9, tag)
          assert.equal(9 * n, v:sum())
          world:barrier()
          local w = r1:wait()
          assert.equal(7 * n, w:sum())
        elseif rank == 0 then
          world:barrier()
          world:send(lmpio.array(lmpio.DOUBLE, n):fill(9), 1, 9)
          world:barrier()
          world:send(lmpio.array(lmpio.DOUBLE, n):fill(7), 1, 7)
        else
          world:barrier()
          world:barrier()
        end
      end
    end
  end)

  it("a message goes to the earliest posted receive that fits, typed or not", function()
    local into = lmpio.array(lmpio.INT, 3)
    local r1 = world:irecv(left, 5, into)
    local r2 = world:irecv(left, lmpio.ANY_TAG)
    local r3 = world:irecv(lmpio.ANY_SOURCE, 5)
    local s = { world:isend(lmpio.array(lmpio.INT, { 1, 2, rank }), right, 6),
                world:isend(lmpio.array(lmpio.INT, { 3, 4, rank }), right, 5),
                world:isend(lmpio.array(lmpio.INT, { 5, 6, rank }), right, 5) }
    lmpio.waitall({ r3, r2, r1 })
    assert.same({ 3, 4, left }, into:totable())
    assert.same({ 1, 2, left }, r2:wait():totable())
    assert.same({ 5, 6, left }, r3:wait():totable())
    lmpio.waitall(s)
  end)
end)
