/* Records: the layout of an array of records (its fields), shared by
 * lua/buffer.c (typed memory, which reaches the fields only through the
 * layout's ops) and lua/records.c (layouts, record datatypes, fields). */
#ifndef LMPIO_LUA_RECORDS_H
#define LMPIO_LUA_RECORDS_H

#include "buffer.h"

/* One field of a record. */
typedef struct field {
  const char *name; /* kept alive by the layout's name list (user value 2) */
  size_t offset;    /* bytes from the start of the record */
  size_t count;     /* elements (1: a scalar, more: an array field) */
  size_t esize;
  MPI_Datatype type;
  int kind;
} field;

/* The layout of records (a userdata: user value 1 the datatype object, 2 the
 * list of field names). */
struct lmpio_lua_records {
  size_t extent;            /* bytes of one record in memory */
  int nfields;
  lmpio_lua_datatype *tobj; /* the record's MPI datatype */
  const struct lmpio_lua_record_ops *ops;
  field f[];
};
typedef struct lmpio_lua_records lmpio_lua_records;

/* What typed memory asks of records (lua/records.c fills it). */
struct lmpio_lua_record_ops {
  /* r[i].x for the key at 2 of the record ref at 1: pushes it, 1; 0: no field */
  int (*index)(lua_State *L, const lmpio_lua_buffer *ref);
  /* r[i].x = v (key 2, value 3) */
  void (*newindex)(lua_State *L, const lmpio_lua_buffer *ref);
  /* record i of b = the value at vidx (a table of fields or raw bytes) */
  void (*set)(lua_State *L, const lmpio_lua_buffer *b, size_t i, int vidx);
  /* pushes a table of the fields of record i of b */
  void (*totable)(lua_State *L, const lmpio_lua_buffer *b, size_t i);
};

#define LMPIO_LUA_RECORDTYPES_KEY "lmpio.recordtypes" /* registry: record datatype object -> layout (weak keys) */

#endif
