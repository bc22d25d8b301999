-- spec/heat_check.lua NY NX STEPS FILE: FILE (NY x NX native doubles, C
-- order) against the serial computation of examples/heat.lua in plain Lua
-- (examples/heat_serial.lua), to 1e-12 relative.  Run from the top of the
-- tree.  Prints "ok" or where they differ; exits non-zero on a difference.
local serial = dofile("examples/heat_serial.lua")
local ok, why = serial.check(arg[4], tonumber(arg[1]), tonumber(arg[2]), tonumber(arg[3]))
if not ok then
  print("not ok: " .. why)
  os.exit(1)
end
print("ok")
