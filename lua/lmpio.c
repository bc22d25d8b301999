/* The Lua module `lmpio`: its entry point, which only registers.  Each
 * concern has its file (lmpio_lua.h); MPI's lifetime is lua/lifetime.c. */
#include "error.h"
#include "lifetime.h"
#include "datatype.h"
#include "buffer.h"
#include "comm.h"
#include "request.h"
#include "p2p.h"
#include "fileobj.h"

/***
The MPI-IO file model for Lua 5.4.

`local lmpio = require "lmpio"` initialises MPI when it is not yet
initialised (a script run without `mpirun` is a job of one rank) and, at
exit, closes the files the script left open (every rank, in opening order)
and finalises MPI if the module initialised it.  In a job of several ranks,
a rank whose script ends with an uncaught error, leaves a `<close>` scope
with an error, or calls `os.exit` with a failure status prints the message
with a traceback and aborts the job (`MPI_Abort`) instead of starting a
collective call that the other ranks would never join.
Once MPI is finalized (a finalizer that runs late at exit), the functions
that would call MPI raise an error instead of letting MPI abort the process.
A rank that has waited `LMPIO_HANG_REPORT` seconds (an environment
variable; 60 by default, `0` turns it off) inside one blocking call (a
file's collective, a communicator's collective such as `comm:allreduce` or
`comm:barrier`, a message wait such as `comm:recv`, `msgrequest:wait` or
`lmpio.waitall`, the wait of a request or of a split collective's `_end`)
prints one line on standard error naming its rank, the call and the line
of the script that made it, again at doubling intervals:
`lmpio: rank 1 has waited 60 s in barrier (heat.lua:42)`.

Names follow MPI-IO: drop the `MPI_File_` prefix and lower-case the rest
(`MPI_File_write_at_all` is `fh:write_at_all`, `MPI_Type_vector` is
`lmpio.type.vector`, `MPI_INT` is `lmpio.INT`).  Data are typed arrays
(`lmpio.array`), byte buffers (`lmpio.buffer`) or, for writing, strings;
count and datatype default from the array.  A failing call raises an
@{error} object carrying the MPI error class; wrong arguments raise Lua
errors, and collective methods raise them on every rank (`MPI_ERR_ARG`).

See @{modes.md|modes, options and constants} for the access modes, `set_view` options, hints and
constants, and @{datarep.md|data representations written in Lua} for the functions a data representation
written in Lua supplies.
@module lmpio
@usage
local lmpio = require "lmpio"
local world = lmpio.world
local fh <close> = lmpio.open(world, "/tmp/data", "w+")
fh:set_view(world:rank() * 8, lmpio.DOUBLE,
            lmpio.type.resized(lmpio.DOUBLE, 0, world:size() * 8))
fh:write_at_all(0, lmpio.array(lmpio.DOUBLE, {1.5, 2.5}))
local back, n = fh:read_at_all(0, 2, lmpio.DOUBLE)
*/

/***
Typed arrays and byte buffers: Lua values over C memory.

Made by `lmpio.array(datatype, n_or_table_or_string)` (elements of a
predefined type) or `lmpio.buffer(n_or_string)` (bytes, an array of
`lmpio.BYTE`); the reading methods of @{file} return new ones.  Elements
are indexed from 1 (`a[i]`, `a[i] = v`), `#a` is the number of elements.
Whole-array work runs in C: `a:sum`, `a:min`, `a:max`, `a:minmax`,
`a:histogram`, and the collectives and messages of @{comm} take arrays.
A loop written in Lua visits every element fastest with `a:chunks()`
(elements a few thousand at a time in one reused table); `a[i]` calls a
metamethod, several times the cost of reading a table.
An array handed to a converter (see @{datarep.md|data representations written in Lua}) borrows the library's
memory and is invalid once the converter returns: every access then raises,
and the calls that would use it later (nonblocking calls, split collectives)
refuse it.
@type array
*/

/***
Communicators: `lmpio.world` (`MPI_COMM_WORLD`), `lmpio.self`
(`MPI_COMM_SELF`) and those made from them by `comm:split` and `comm:dup`.
Two communicator objects are equal (`==`) when they hold the same MPI
communicator.
@type comm
*/

/* Concerns added later define these; they are called when linked in. */
int lmpio_lua_datarep_open(lua_State *L) __attribute__((weak));

LUAMOD_API int luaopen_lmpio(lua_State *L) {
  lmpio_lua_lifetime_open(L); /* MPI first: every concern below may call it */
  lua_newtable(L);
  lmpio_lua_error_open(L);
  lmpio_lua_datatype_open(L);
  lmpio_lua_typemap_open(L);
  lmpio_lua_buffer_open(L);
  lmpio_lua_records_open(L);
  lmpio_lua_array_ops_open(L);
  lmpio_lua_slice_open(L);
  lmpio_lua_arith_open(L);
  lmpio_lua_comm_open(L);
  lmpio_lua_file_open(L);
  lmpio_lua_access_open(L);
  lmpio_lua_npy_open(L);
  lmpio_lua_request_open(L);
  lmpio_lua_message_open(L);
  lmpio_lua_p2p_open(L);
  lmpio_lua_msgreq_open(L);
  if (lmpio_lua_datarep_open) lmpio_lua_datarep_open(L);
  lmpio_lua_environment_open(L);
  return 1;
}
