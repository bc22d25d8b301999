/* Access modes of lmpio.open: io.open's mode strings ("r", "w+", ...),
 * words of MPI_MODE_* bits ("rdwr create"), integers, and back to words
 * (fh:get_amode); the lmpio.MODE_* constants. */
#include "fileobj.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* ---- access modes ------------------------------------------------------------ */

static const struct { const char *name; int bit; } modes[] = {
  {"rdonly", MPI_MODE_RDONLY}, {"rdwr", MPI_MODE_RDWR}, {"wronly", MPI_MODE_WRONLY},
  {"create", MPI_MODE_CREATE}, {"excl", MPI_MODE_EXCL},
  {"delete_on_close", MPI_MODE_DELETE_ON_CLOSE}, {"unique_open", MPI_MODE_UNIQUE_OPEN},
  {"sequential", MPI_MODE_SEQUENTIAL}, {"append", MPI_MODE_APPEND},
};
#define NMODES (sizeof modes / sizeof modes[0])

static const struct { const char *name; int amode; } short_modes[] = {
  {"r", MPI_MODE_RDONLY},
  {"r+", MPI_MODE_RDWR},
  {"rw", MPI_MODE_RDWR},
  {"w", MPI_MODE_WRONLY | MPI_MODE_CREATE},
  {"w+", MPI_MODE_RDWR | MPI_MODE_CREATE},
  {"a", MPI_MODE_WRONLY | MPI_MODE_CREATE | MPI_MODE_APPEND},
  {"a+", MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_APPEND},
};

/* One flag name: "rdwr", "RDWR", "MODE_RDWR", "MPI_MODE_RDWR". */
static int mode_bit(lua_State *L, int arg, const char *s, size_t len) {
  char w[32];
  if (len >= sizeof w) len = sizeof w - 1;
  for (size_t i = 0; i < len; i++) w[i] = (char)tolower((unsigned char)s[i]);
  w[len] = '\0';
  const char *n = w;
  for (size_t i = 0; i < sizeof short_modes / sizeof short_modes[0]; i++)
    if (strcmp(n, short_modes[i].name) == 0) return short_modes[i].amode;
  if (strncmp(n, "mpi_", 4) == 0) n += 4;
  if (strncmp(n, "mode_", 5) == 0) n += 5;
  for (size_t i = 0; i < NMODES; i++)
    if (strcmp(n, modes[i].name) == 0) return modes[i].bit;
  return lmpio_lua_argerror(L, arg, lua_pushfstring(L, "unknown access mode '%s' (expected rdonly, rdwr, wronly, "
                                               "create, excl, delete_on_close, unique_open, sequential, "
                                               "append, or one of r r+ w w+ a a+)", w));
}

/* amode: an integer of OR-ed lmpio.MODE_*; a string ("r", "w+", "rdwr create",
 * "wronly|create|excl"); or a table ({"rdwr", "create"} or {rdwr = true}). */
int lmpio_lua_checkamode(lua_State *L, int arg) {
  switch (lua_type(L, arg)) {
  case LUA_TNUMBER: {
    lua_Integer v = lmpio_lua_checkinteger(L, arg);
    if (v < 0 || v > INT_MAX) lmpio_lua_argerror(L, arg, "invalid access mode");
    return (int)v;
  }
  case LUA_TSTRING: {
    const char *s = lua_tostring(L, arg);
    for (size_t i = 0; i < sizeof short_modes / sizeof short_modes[0]; i++)
      if (strcmp(s, short_modes[i].name) == 0) return short_modes[i].amode;
    int amode = 0, any = 0;
    while (*s) {
      size_t n = strcspn(s, " \t,|");
      if (n) {
        amode |= mode_bit(L, arg, s, n);
        any = 1;
      }
      s += n;
      if (*s) s++;
    }
    if (!any) lmpio_lua_argerror(L, arg, "empty access mode");
    return amode;
  }
  case LUA_TTABLE: {
    int amode = 0;
    lua_pushnil(L);
    while (lua_next(L, arg)) {
      if (lua_type(L, -2) == LUA_TNUMBER && lua_type(L, -1) == LUA_TSTRING) {
        size_t n;
        const char *s = lua_tolstring(L, -1, &n);
        amode |= mode_bit(L, arg, s, n);
      } else if (lua_type(L, -2) == LUA_TSTRING) {
        size_t n;
        const char *s = lua_tolstring(L, -2, &n);
        int bit = mode_bit(L, arg, s, n);
        if (lua_toboolean(L, -1)) amode |= bit;
      } else {
        lmpio_lua_argerror(L, arg, "access mode tables hold flag names");
      }
      lua_pop(L, 1);
    }
    return amode;
  }
  default:
    return lmpio_lua_typeerror(L, arg, "access mode (integer, string or table)");
  }
}

void lmpio_lua_pushamode(lua_State *L, int amode) {
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  int first = 1;
  for (size_t i = 0; i < NMODES; i++)
    if (amode & modes[i].bit) {
      if (!first) luaL_addchar(&b, ',');
      luaL_addstring(&b, modes[i].name);
      first = 0;
    }
  luaL_pushresult(&b);
}

/* Whether the mode argument is "w" or "w+" (io.open's truncating modes). */
int lmpio_lua_truncating_mode(lua_State *L, int arg) {
  const char *m = lua_type(L, arg) == LUA_TSTRING ? lua_tostring(L, arg) : NULL;
  return m && (strcmp(m, "w") == 0 || strcmp(m, "w+") == 0);
}

void lmpio_lua_amode_constants(lua_State *L) {
  for (size_t i = 0; i < NMODES; i++) {
    char name[40];
    snprintf(name, sizeof name, "MODE_%s", modes[i].name);
    for (char *p = name; *p; p++) *p = (char)toupper((unsigned char)*p);
    lua_pushinteger(L, modes[i].bit);
    lua_setfield(L, -2, name);
  }
}
