/* The model layer: flattened datatypes (typemap, with the extents of types
 * in a representation), the datarep registry, views.  Below: ground.h. */
#ifndef LMPIO_MODEL_H
#define LMPIO_MODEL_H

#include "ground.h"

/* ---- typemap: flattened datatypes ----------------------------------- */

typedef struct lmpio__tm_node lmpio__tm_node;

enum { LMPIO__RUN_FLAT, LMPIO__RUN_ELEMS, LMPIO__RUN_NEST };

/* A run is `count` elements spaced `stride` bytes apart from `disp`; an
 * element is either one predefined item (child == NULL, basic says which) or
 * one instance of a child node.  kind caches how the cursor walks it:
 * FLAT: the whole run is one segment; ELEMS: each element is one segment;
 * NEST: descend into the child. */
typedef struct {
  MPI_Aint disp, stride;
  MPI_Count count;
  MPI_Count esize;       /* data bytes of one element (> 0) */
  MPI_Count size_before; /* data bytes of the runs before this one */
  MPI_Aint lo;           /* first data byte of an element, from its start */
  const lmpio__tm_node *child;
  MPI_Datatype basic;
  int kind;
} lmpio__tm_run;

struct lmpio__tm_node {
  int refs;
  int nruns;
  int depth;                  /* frames a cursor needs */
  lmpio__tm_run *runs;        /* only runs with data */
  MPI_Count size;             /* data bytes */
  MPI_Count nitems;           /* predefined items (typemap entries) */
  int full_depth;             /* frames a leaf cursor needs */
  MPI_Aint lb, extent;        /* as MPI defines them (markers, resized) */
  int marked;                 /* bounds set by a resized type inside: they hold in types made from this one */
  MPI_Aint data_lb, data_ub;  /* bounds of the data bytes (0, 0 if none) */
  int monotone;               /* data in nondecreasing, non-overlapping order */
  int nondecreasing;          /* displacements never decrease (data may overlap) */
  int contiguous;             /* one segment: monotone and size == data span */
  lmpio__tm_node **owned;     /* children released with this node */
  int nowned;
};

typedef struct lmpio__datarep lmpio__datarep;

/* Whether t is a predefined (named) type, which is never freed or duplicated. */
int lmpio__type_is_named(MPI_Datatype t);
/* The flattened form of a datatype, cached on it; release when done. */
int lmpio__typemap_get(MPI_Datatype type, const lmpio__tm_node **node, const char *call);
/* The same laid out in a file representation (rep NULL: native): predefined
 * types take the representation's extents and portable types are rebuilt
 * with them.  Not cached. */
int lmpio__typemap_get_rep(MPI_Datatype type, const lmpio__datarep *rep,
                           const lmpio__tm_node **node, const char *call);
/* File extent of a predefined type in rep (MPI_ERR_CONVERSION when the
 * extent function fails, MPI_ERR_TYPE when rep has no such type). */
int lmpio__typemap_extent(const lmpio__datarep *rep, MPI_Datatype basic, MPI_Aint *ext);
/* (inline: most calls name a predefined type, whose node is permanent,
 * refs < 0, and releasing it does nothing) */
void lmpio__typemap_drop(const lmpio__tm_node *node);
static inline void lmpio__typemap_release(const lmpio__tm_node *node) {
  if (node && node->refs >= 0) lmpio__typemap_drop(node);
}
void lmpio__typemap_retain(const lmpio__tm_node *node);
/* Data bytes of one instance of a monotone node at offsets below x. */
MPI_Count lmpio__typemap_bytes_before(const lmpio__tm_node *n, MPI_Aint x);

/* A cursor walks the data segments of a node tiled forever with a given
 * extent (instance i at i * extent), coalescing adjacent segments. */
typedef struct {
  const lmpio__tm_node *node;
  int run;
  MPI_Count elem;
  MPI_Aint base;
} lmpio__frame;

typedef struct {
  const lmpio__tm_node *root;
  MPI_Aint extent;
  MPI_Count tile;
  int sp;
  lmpio__frame *st;
  lmpio__frame inline_st[16];
  MPI_Aint seg_off;
  MPI_Count seg_left;         /* bytes, or items for a leaf cursor */
  int leaves;                 /* walks predefined items, no coalescing */
  MPI_Datatype leaf_basic;
  MPI_Count leaf_esize;
} lmpio__cursor;

/* root must have size > 0.  Returns MPI_ERR_NO_MEM on allocation failure. */
int lmpio__cursor_init(lmpio__cursor *c, const lmpio__tm_node *root, MPI_Aint extent);
void lmpio__cursor_free(lmpio__cursor *c);
/* Positions the cursor at data byte pos of the tiled stream. */
void lmpio__cursor_seek(lmpio__cursor *c, MPI_Count pos);
/* The next (coalesced) segment, at most max bytes: returns its length, its
 * offset in *off.  Never runs out: the stream is tiled forever. */
MPI_Count lmpio__cursor_next(lmpio__cursor *c, MPI_Count max, MPI_Aint *off);
/* Offset of the next data byte without consuming it. */
MPI_Aint lmpio__cursor_peek(lmpio__cursor *c);
/* A leaf cursor walks the predefined items of the tiled node in typemap
 * order: each step gives up to max items of one predefined type that lie
 * back to back at *off.  Starts at item 0. */
int lmpio__cursor_init_leaves(lmpio__cursor *c, const lmpio__tm_node *root, MPI_Aint extent);
MPI_Count lmpio__cursor_next_leaf(lmpio__cursor *c, MPI_Count max, MPI_Aint *off,
                                  MPI_Datatype *basic, MPI_Count *esize);
/* The predefined type of the next leaf item, without consuming it. */
MPI_Datatype lmpio__cursor_peek_leaf(lmpio__cursor *c);


/* ---- datarep: the registry (datarep.c) -------------------------------- */

/* A registered representation.  Conversion functions take an int count
 * (MPI_Register_datarep) or an MPI_Count (the large-count form). */
struct lmpio__datarep {
  char name[MPI_MAX_DATAREP_STRING];
  MPI_Datarep_conversion_function *read_fn, *write_fn;
  lmpio_datarep_conversion_function_c *read_fn_c, *write_fn_c;
  int large;                 /* the _c functions are the ones to call */
  MPI_Datarep_extent_function *extent_fn;
  void *extra;
  int builtin;               /* external32 layout, converted by lmpio itself */
  struct lmpio__datarep *next;
};

/* Looks a representation up: *rep is NULL for "native".  Returns
 * MPI_ERR_UNSUPPORTED_DATAREP (with a message) for an unknown name. */
int lmpio__datarep_find(const char *name, const lmpio__datarep **rep, const char *call);


/* ---- view (view.c) ----------------------------------------------------- */

typedef struct {
  MPI_Offset disp;
  MPI_Datatype etype, filetype;  /* our own handles (dups of derived types) */
  char datarep[MPI_MAX_DATAREP_STRING];
  const lmpio__datarep *rep;     /* NULL for "native" */
  const lmpio__tm_node *ft;      /* laid out in the file's representation */
  MPI_Count esize;               /* etype size in bytes, in the file */
  MPI_Aint eextent;
  int contiguous;                /* data of the tiled filetype is one run */
  int empty;                     /* the filetype has no data: only count 0 works */
  /* Some rank's view of this file has holes (agreed by set_view), so some
   * rank may sieve writes (read-modify-write of a window with holes): every
   * direct write then takes a shared byte-range lock that such a sieve's
   * exclusive lock excludes.  Sieved writes always lock. */
  int any_holes;
} lmpio__view;

/* Validates and builds a view into *v (which holds nothing yet).  writable:
 * the file is open for writing (a filetype that overlaps itself is then
 * refused; reading through one is allowed). */
int lmpio__view_build(lmpio__view *v, MPI_Offset disp, MPI_Datatype etype,
                      MPI_Datatype filetype, const char *datarep, int writable, const char *call);
void lmpio__view_free(lmpio__view *v);
/* The view's parts as MPI_File_get_view returns them (new handles for
 * derived types). */
int lmpio__view_get(const lmpio__view *v, MPI_Offset *disp, MPI_Datatype *etype,
                    MPI_Datatype *filetype, char *datarep, const char *call);
/* Absolute byte offset of data byte pos of the view, or MPI_ERR_ARG when it
 * does not fit in an MPI_Offset.  (Every data access call checks its range
 * with it: a contiguous view's, which is pos moved by the displacements,
 * is inline; view.c does the rest.) */
int lmpio__view_byte_tiled(const lmpio__view *v, MPI_Offset pos, MPI_Offset *byte, const char *call);
static inline int lmpio__view_byte(const lmpio__view *v, MPI_Offset pos, MPI_Offset *byte, const char *call) {
  MPI_Offset at;
  if (v->contiguous && lmpio__add_ok(pos, v->ft->data_lb, &at) && lmpio__add_ok(at, v->disp, &at)) {
    *byte = at;
    return MPI_SUCCESS;
  }
  return lmpio__view_byte_tiled(v, pos, byte, call);
}
/* Data bytes of the view that lie before absolute byte offset x. */
MPI_Offset lmpio__view_data_before(const lmpio__view *v, MPI_Offset x);

#endif
