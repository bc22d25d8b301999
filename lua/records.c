/* Records: lmpio.recordtype (a struct datatype with named fields, laid out
 * as a C compiler lays out the struct), lmpio.records (an array of them,
 * h5py's compound type: r[i].x, r[i].v[2], r[i] = {...}), and r:fields().
 * Typed memory (lua/buffer.c) reaches the fields through the layout's ops
 * (records.h), so that it calls nothing here. */
#include "error.h"
#include "datatype.h"
#include "buffer.h"
#include "records.h"

#include <string.h>

typedef lmpio_lua_records records;


static const records *getrec(const lmpio_lua_buffer *b) { return b->rec; }

/* The field of r named by the string at kidx, or NULL. */
static const field *findfield(lua_State *L, const records *r, int kidx) {
  size_t len;
  const char *k = lua_tolstring(L, kidx, &len);
  for (int i = 0; i < r->nfields; i++)
    if (r->f[i].name == k || (strlen(r->f[i].name) == len && memcmp(r->f[i].name, k, len) == 0)) return &r->f[i];
  return NULL;
}

/* Pushes field f of the record at p (of ref, at stack index bidx): a value,
 * or a view of an array field. */
static void pushfield(lua_State *L, int bidx, const lmpio_lua_buffer *ref, unsigned char *p, const field *f) {
  if (f->count == 1) lmpio_lua_loadelem(L, f->kind, f->esize, p + f->offset);
  else lmpio_lua_pushview_of(L, bidx, ref, p + f->offset, f->count, f->esize, f->type, f->kind, NULL);
}

/* Stores the value at vidx into field f of record i at p: a value for a
 * scalar, a table of exactly count values or a string of at most count
 * elements' raw bytes (the rest zeroed) for an array field. */
static void setfield(lua_State *L, const records *r, unsigned char *p, size_t i, const field *f, int vidx) {
  (void)r;
  vidx = lua_absindex(L, vidx);
  unsigned char *q = p + f->offset;
  int st;
  if (f->count == 1) {
    if ((st = lmpio_lua_storeelem(L, f->kind, f->esize, q, vidx)) != LMPIO_LUA_ST_OK)
      lmpio_lua_storeerror(L, st, f->kind, f->esize, vidx,
                 lua_pushfstring(L, "field '%s' of record %I", f->name, (lua_Integer)i + 1));
    return;
  }
  size_t bytes = f->count * f->esize;
  if (lua_type(L, vidx) == LUA_TSTRING) {
    size_t len;
    const char *s = lua_tolstring(L, vidx, &len);
    if (len > bytes || len % f->esize)
      lmpio_lua_error(L, MPI_ERR_ARG, "field '%s' of record %I takes at most %I bytes, a whole number of elements, got %I", f->name,
                 (lua_Integer)i + 1, (lua_Integer)bytes, (lua_Integer)len);
    memcpy(q, s, len);
    memset(q + len, 0, bytes - len);
    return;
  }
  if (!lua_istable(L, vidx) || lmpio_lua_len(L, vidx) != (lua_Integer)f->count)
    lmpio_lua_error(L, MPI_ERR_ARG, "field '%s' of record %I needs a table of %I values or a string", f->name, (lua_Integer)i + 1,
               (lua_Integer)f->count);
  unsigned char *tmp = lua_newuserdatauv(L, bytes, 0); /* all or nothing */
  memcpy(tmp, q, bytes);
  for (size_t k = 0; k < f->count; k++) {
    lua_geti(L, vidx, (lua_Integer)k + 1);
    int v = lua_gettop(L); /* absolute: the message is pushed above it */
    if ((st = lmpio_lua_storeelem(L, f->kind, f->esize, tmp + k * f->esize, v)) != LMPIO_LUA_ST_OK)
      lmpio_lua_storeerror(L, st, f->kind, f->esize, v,
                 lua_pushfstring(L, "element %I of field '%s' of record %I", (lua_Integer)k + 1, f->name,
                                 (lua_Integer)i + 1));
    lua_pop(L, 1);
  }
  memcpy(q, tmp, bytes);
  lua_pop(L, 1);
}

/* Stores the value at vidx into record i of b: a table of fields (those not
 * in it are zeroed; an unknown key raises) or a string of exactly one
 * record's raw bytes. */
static void setrecord(lua_State *L, const lmpio_lua_buffer *b, size_t i, int vidx) {
  const records *r = getrec(b);
  unsigned char *p = b->data + i * b->esize;
  vidx = lua_absindex(L, vidx);
  if (lua_type(L, vidx) == LUA_TSTRING) {
    size_t len;
    const char *s = lua_tolstring(L, vidx, &len);
    if (len != r->extent)
      lmpio_lua_error(L, MPI_ERR_ARG, "record %I takes a table of fields or a string of %I bytes, got %I bytes", (lua_Integer)i + 1,
                 (lua_Integer)r->extent, (lua_Integer)len);
    memcpy(p, s, len);
    return;
  }
  if (!lua_istable(L, vidx))
    lmpio_lua_error(L, MPI_ERR_ARG, "record %I takes a table of fields or a string, got %s", (lua_Integer)i + 1,
               luaL_typename(L, vidx));
  unsigned char *tmp = lua_newuserdatauv(L, r->extent, 0); /* all or nothing */
  memset(tmp, 0, r->extent);
  lua_pushnil(L);
  while (lua_next(L, vidx)) {
    const field *f = lua_type(L, -2) == LUA_TSTRING ? findfield(L, r, -2) : NULL;
    if (!f)
      lmpio_lua_error(L, MPI_ERR_ARG, "record %I has no field '%s'", (lua_Integer)i + 1, luaL_tolstring(L, -2, NULL));
    setfield(L, r, tmp, i, f, -1);
    lua_pop(L, 1);
  }
  memcpy(p, tmp, r->extent);
  lua_pop(L, 1);
}

/* A table of the values of record i (array fields as tables). */
static void pushrecordtable(lua_State *L, const lmpio_lua_buffer *b, size_t i) {
  const records *r = getrec(b);
  const unsigned char *p = b->data + i * b->esize;
  lua_createtable(L, 0, r->nfields);
  for (int k = 0; k < r->nfields; k++) {
    const field *f = &r->f[k];
    if (f->count == 1) {
      lmpio_lua_loadelem(L, f->kind, f->esize, p + f->offset);
    } else {
      lua_createtable(L, (int)f->count, 0);
      for (size_t e = 0; e < f->count; e++) {
        lmpio_lua_loadelem(L, f->kind, f->esize, p + f->offset + e * f->esize);
        lua_rawseti(L, -2, (lua_Integer)e + 1);
      }
    }
    lua_setfield(L, -2, f->name);
  }
}

/* The ops of typed memory on records. */
static int rec_index(lua_State *L, const lmpio_lua_buffer *ref) {
  const field *f = findfield(L, ref->rec, 2);
  if (!f) return 0;
  lmpio_lua_checkheld(L, ref, 0);
  pushfield(L, 1, ref, ref->data, f);
  return 1;
}

static void rec_newindex(lua_State *L, const lmpio_lua_buffer *ref) {
  const field *f = findfield(L, ref->rec, 2);
  if (!f) lmpio_lua_error(L, MPI_ERR_ARG, "record has no field '%s'", lua_tostring(L, 2));
  if (ref->readonly) lmpio_lua_error(L, MPI_ERR_BUFFER, "attempt to write to a read-only buffer");
  lmpio_lua_checkheld(L, ref, 1);
  size_t at = ref->root && ref->root->data ? (size_t)(ref->data - ref->root->data) / ref->esize : 0;
  setfield(L, ref->rec, ref->data, at, f, 3);
}

static const struct lmpio_lua_record_ops ops = {rec_index, rec_newindex, setrecord, pushrecordtable};


/* The alignment of a C object of a predefined kind and size. */
static size_t alignof_kind(int kind, size_t esize) {
  if (kind == LMPIO_LUA_K_LDOUBLE) return _Alignof(long double);
  size_t a = 1;
  while (a < esize && a < 16 && esize % (a * 2) == 0) a *= 2;
  return a;
}

/* Builds the layout of the field spec at sidx, with its datatype (a struct
 * of the fields at the offsets a C compiler gives them, resized to the
 * padded extent, committed) registered; pushes the layout. */
static records *buildlayout(lua_State *L, int sidx) {
  sidx = lua_absindex(L, sidx);
  lua_Integer n = lmpio_lua_len(L, sidx);
  if (n < 1 || n > 4096) lmpio_lua_argerror(L, sidx, "a record has 1 to 4096 fields");
  records *r = lua_newuserdatauv(L, sizeof *r + (size_t)n * sizeof(field), 2);
  memset(r, 0, sizeof *r + (size_t)n * sizeof(field));
  r->ops = &ops;
  int lidx = lua_gettop(L);
  lua_createtable(L, (int)n, 0); /* the names, kept alive with the layout */
  lua_pushvalue(L, -1);
  lua_setiuservalue(L, lidx, 2);
  int nidx = lua_gettop(L);
  size_t off = 0, maxalign = 1;
  for (lua_Integer k = 0; k < n; k++) {
    field *f = &r->f[k];
    if (lua_geti(L, sidx, k + 1) != LUA_TTABLE)
      lmpio_lua_argerror(L, sidx, lua_pushfstring(L, "field %d is not a table {name, type [, count]}", (int)k + 1));
    int e = lua_gettop(L);
    if (lua_geti(L, e, 1) != LUA_TSTRING || lua_rawlen(L, -1) == 0)
      lmpio_lua_argerror(L, sidx, lua_pushfstring(L, "field %d has no name", (int)k + 1));
    f->name = lua_tostring(L, -1);
    for (lua_Integer q = 0; q < k; q++)
      if (!strcmp(r->f[q].name, f->name))
        lmpio_lua_argerror(L, sidx, lua_pushfstring(L, "field '%s' named twice", f->name));
    lua_rawseti(L, nidx, k + 1);
    lua_geti(L, e, 2);
    lmpio_lua_datatype *d = lmpio_lua_totype(L, -1);
    if (!d || d->type == MPI_DATATYPE_NULL || !lmpio_lua_isnamed(d->type) ||
        lmpio_lua_typekind(d->type) == LMPIO_LUA_K_NONE)
      lmpio_lua_argerror(L, sidx, lua_pushfstring(L, "field '%s' needs a predefined datatype that Lua can read", f->name));
    f->type = d->type;
    f->kind = lmpio_lua_typekind(d->type);
    f->esize = (size_t)lmpio_lua_type_size(L, d->type);
    lua_pop(L, 1);
    int isnum;
    lua_geti(L, e, 3);
    lua_Integer c = lua_isnil(L, -1) ? 1 : lua_tointegerx(L, -1, &isnum);
    if (!lua_isnil(L, -1) && (!isnum || c < 1 || c > (1 << 24)))
      lmpio_lua_argerror(L, sidx, lua_pushfstring(L, "field '%s' needs a count from 1", f->name));
    lua_pop(L, 2);
    f->count = (size_t)c;
    size_t a = alignof_kind(f->kind, f->esize);
    if (a > maxalign) maxalign = a;
    off = (off + a - 1) / a * a;
    f->offset = off;
    off += f->count * f->esize;
  }
  lua_pop(L, 1); /* the names */
  r->nfields = (int)n;
  r->extent = (off + maxalign - 1) / maxalign * maxalign;
  /* The datatype: a struct of the fields, resized to the padded extent. */
  int *bl = lua_newuserdatauv(L, (size_t)n * sizeof(int), 0);
  MPI_Aint *disp = lua_newuserdatauv(L, (size_t)n * sizeof(MPI_Aint), 0);
  MPI_Datatype *types = lua_newuserdatauv(L, (size_t)n * sizeof(MPI_Datatype), 0);
  for (lua_Integer k = 0; k < n; k++) {
    bl[k] = (int)r->f[k].count;
    disp[k] = (MPI_Aint)r->f[k].offset;
    types[k] = r->f[k].type;
  }
  MPI_Datatype st, t;
  lmpio_lua_checkmpi(L, MPI_Type_create_struct((int)n, bl, disp, types, &st), "MPI_Type_create_struct");
  int rc = MPI_Type_create_resized(st, 0, (MPI_Aint)r->extent, &t);
  MPI_Type_free(&st);
  lmpio_lua_checkmpi(L, rc, "MPI_Type_create_resized");
  lua_pop(L, 3);
  r->tobj = lmpio_lua_pushtype(L, t, 1);
  if ((rc = MPI_Type_commit(&r->tobj->type)) != MPI_SUCCESS) lmpio_lua_checkmpi(L, rc, "MPI_Type_commit");
  lua_setiuservalue(L, lidx, 1);
  /* registered: the datatype object finds its layout */
  lua_getfield(L, LUA_REGISTRYINDEX, LMPIO_LUA_RECORDTYPES_KEY);
  lua_getiuservalue(L, lidx, 1);
  lua_pushvalue(L, lidx);
  lua_rawset(L, -3);
  lua_pop(L, 1);
  return r;
}

/* The layout registered for the datatype object at idx: pushed and returned,
 * or NULL (nothing pushed). */
/***
The fields of records, in order, with their place in memory.
@function array:fields
@return a sequence of tables {name =, type =, count =, offset =} (offset
 in bytes from the start of a record)
@raise when a is not records
*/
static int b_fields(lua_State *L) {
  lmpio_lua_buffer *b = lmpio_lua_checkbuffer(L, 1);
  const records *r = getrec(b);
  if (!r) return lmpio_lua_error(L, MPI_ERR_ARG, "only records have fields");
  lua_createtable(L, r->nfields, 0);
  for (int k = 0; k < r->nfields; k++) {
    lua_createtable(L, 0, 4);
    lua_pushstring(L, r->f[k].name);
    lua_setfield(L, -2, "name");
    lmpio_lua_pushtype(L, r->f[k].type, 0);
    lua_setfield(L, -2, "type");
    lua_pushinteger(L, (lua_Integer)r->f[k].count);
    lua_setfield(L, -2, "count");
    lua_pushinteger(L, (lua_Integer)r->f[k].offset);
    lua_setfield(L, -2, "offset");
    lua_rawseti(L, -2, k + 1);
  }
  return 1;
}

/***
A record datatype from a list of named fields, laid out as a C compiler lays
out the matching struct (each field aligned to its type's alignment, the
extent padded to the largest one), committed.  Use it with `lmpio.records`,
as the datatype of a read from a count (which then returns records), or in a
view.  Written through a contiguous view, records leave only their fields'
bytes in the file (`rt:size()` bytes each, no padding); as the filetype, the
record's layout is kept in the file (`rt:extent()` bytes each, the padding
being holes).
@function lmpio.recordtype
@param fields a list of {name, type [, count]}: type a predefined datatype
 that Lua can read (not complex), count > 1 an array field
@return the datatype
@raise when a field is malformed or named twice
*/
static int l_recordtype(lua_State *L) {
  lmpio_lua_running(L);
  lmpio_lua_checkluatype(L, 1, LUA_TTABLE);
  buildlayout(L, 1);
  lua_getiuservalue(L, -1, 1);
  return 1;
}

/***
A new array of records (h5py's compound type): `r[i].x` reads field x of
record i, `r[i].x = 3` writes it, `r[i].v[2]` reads element 2 of an array
field (a view), `r[i] = {x = 1, id = 2}` stores a whole record.  The
records are the data of any read or write (count #r, datatype r:type()).
@function lmpio.records
@param fields a record datatype from `lmpio.recordtype`, or a field list as
 it takes
@param init a count of zeroed records, a list of record tables, or a string
 of raw bytes (a whole number of records)
@return the records
@raise when fields is not a record datatype, or a value does not fit
*/
static int l_records(lua_State *L) {
  lmpio_lua_running(L);
  lua_settop(L, 2);
  const records *r;
  if (lua_istable(L, 1)) r = buildlayout(L, 1);
  else if (!(r = lmpio_lua_findlayout(L, 1)))
    return lmpio_lua_typeerror(L, 1, "record datatype (from lmpio.recordtype) or field list");
  int lidx = lua_gettop(L);
  lmpio_lua_buffer *b;
  switch (lua_type(L, 2)) {
  case LUA_TNUMBER: {
    lua_Integer n = lmpio_lua_checkinteger(L, 2);
    if (n < 0) return lmpio_lua_argerror(L, 2, "count must not be negative");
    lmpio_lua_newrecords(L, lidx, r, (size_t)n);
    break;
  }
  case LUA_TTABLE: {
    lua_Integer n = lmpio_lua_len(L, 2);
    b = lmpio_lua_newrecords(L, lidx, r, (size_t)n);
    for (lua_Integer k = 0; k < n; k++) {
      lua_geti(L, 2, k + 1);
      setrecord(L, b, (size_t)k, -1);
      lua_pop(L, 1);
    }
    break;
  }
  case LUA_TSTRING: {
    size_t len;
    const char *s = lua_tolstring(L, 2, &len);
    if (len % r->extent) return lmpio_lua_argerror(L, 2, "not a whole number of records");
    b = lmpio_lua_newrecords(L, lidx, r, len / r->extent);
    if (len) memcpy(b->data, s, len);
    break;
  }
  default:
    return lmpio_lua_typeerror(L, 2, "count, table or string");
  }
  return 1;
}

int lmpio_lua_records_open(lua_State *L) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, LMPIO_LUA_RECORDTYPES_KEY) != LUA_TTABLE) {
    lua_pop(L, 1);
    lmpio_lua_new_weak_keys(L, LMPIO_LUA_RECORDTYPES_KEY);
  } else {
    lua_pop(L, 1);
  }
  luaL_getmetatable(L, LMPIO_LUA_BUFFER);
  lua_getfield(L, -1, "methods");
  lua_pushcfunction(L, b_fields);
  lua_setfield(L, -2, "fields");
  lua_pop(L, 2);
  static const luaL_Reg funcs[] = {{"recordtype", l_recordtype}, {"records", l_records}, {NULL, NULL}};
  lmpio_lua_setfuncs(L, funcs);
  return 0;
}
