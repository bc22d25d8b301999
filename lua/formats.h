/* The formats compiler of user-defined representations (lua/formats.c):
 * plain C, no Lua. */
#ifndef LMPIO_LUA_FORMATS_H
#define LMPIO_LUA_FORMATS_H

#include <stddef.h>

#include "lmpio.h"

/* What a number is, natively or in the file (the kind given to compile). */
enum { N_SINT, N_UINT, N_FLOAT };      /* what a number is, natively or in the file */
enum { OP_COPY, OP_SWAP, OP_INT, OP_FLOAT };

typedef struct lmpio_lua_fmt {
  MPI_Datatype t;
  char key[32];                 /* the type name as the formats table gave it */
  char text[24];                /* the format (for messages) */
  unsigned char nkind, nsize;   /* native item: N_*, bytes */
  unsigned char fkind, fsize;   /* file item */
  unsigned char fbig;           /* file item is big-endian */
  unsigned char op;
} lmpio_lua_fmt;

enum { DIR_READ, DIR_WRITE };

/* Reverses the bytes of n items of size bytes from s into d (d may be s). */
void lmpio_lua_fmt_swap(unsigned char *d, const unsigned char *s, size_t n, size_t size);
/* Compiles the format text for type t (a number of kind N_*, key its name
 * for messages) into f; NULL, or why it cannot. */
const char *lmpio_lua_fmt_compile(lmpio_lua_fmt *f, MPI_Datatype t, int kind, const char *key, const char *text);
/* The converter, both directions (DIR_*): count items of dt from item
 * position, between userbuf and filebuf; MPI_SUCCESS, or
 * MPI_ERR_CONVERSION with the reason in msg. */
int lmpio_lua_fmt_convert(const lmpio_lua_fmt *fmts, int nfmts, int dir, void *userbuf, MPI_Datatype dt,
                          MPI_Count count, void *filebuf, MPI_Offset position, char *msg, size_t msglen);
/* The file extent of t: the size of its format. */
int lmpio_lua_fmt_extent(const lmpio_lua_fmt *fmts, int n, MPI_Datatype t, MPI_Aint *file_extent, char *why,
                         size_t whylen);

#endif
