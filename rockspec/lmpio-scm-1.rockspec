rockspec_format = "3.0"
package = "lmpio"
version = "scm-1"
source = {
   -- A placeholder: the project has no public repository yet.  `luarocks
   -- make` (the README's install line) builds the working tree it is run in
   -- and never fetches this; set the repository's address here before
   -- publishing the rock (`luarocks pack` / `luarocks upload`).
   url = "git+https://lmpio.invalid/lmpio.git",
}
description = {
   summary = "The MPI-IO file model for Lua 5.4: parallel I/O with views",
   detailed = [[
      lmpio exposes a complete MPI-IO implementation (open, views, explicit
      offsets, individual and shared file pointers, ordered collectives,
      data representations) to Lua scripts run under mpirun or alone.
   ]],
   license = "MIT",
}
dependencies = {
   "lua >= 5.4, < 5.5",
}
external_dependencies = {
   -- Open MPI or MPICH with its compiler wrapper (mpicc) on the PATH
}
build = {
   -- The project's Makefile builds the core, the module, the drop-in library
   -- and the HTML reference (`make rock`: mpicc, the Lua 5.4 headers and
   -- LDoc); the module's sources see only the public header (core/include),
   -- and with LUA_LINK=static the core goes inside the module, so the rock
   -- installs one self-contained lmpio.so (no liblmpio.so to find at run
   -- time).  Warnings are not errors here (the Makefile adds -Werror only
   -- for `make check`), so a newer compiler does not break the install.
   -- `make rock-install` puts lmpio.so, lmpio/liblmpio-mpi.so (the drop-in,
   -- `lmpio dropin-path`) and the module's Lua files (every .lua under
   -- lua/lmpio: the command's parts, lmpio.command.X, too) in LuaRocks' lib and
   -- lua directories, and the reference in the rock's doc directory
   -- (`lmpio doc-path`).
   type = "command",
   build_command = [[make rock BUILD=build/rock LUA_LINK=static MPICC="${MPICC:-mpicc}" LUA_CFLAGS="-I$(LUA_INCDIR)"]],
   install_command = [[make rock-install BUILD=build/rock ROCK_LIBDIR="$(LIBDIR)" ROCK_LUADIR="$(LUADIR)" ROCK_DOCDIR="$(DOCDIR)"]],
   install = {
      -- the lmpio command (dump, convert, map, run, dropin-path, doc-path)
      bin = {
         lmpio = "lua/lmpio-command.lua",
      },
   },
   -- the rock's doc directory holds the reference (above), not doc/'s
   -- sources of it
   copy_directories = {},
}
