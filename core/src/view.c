/* The view: displacement, etype, filetype and data representation; its
 * validation and the mapping between data positions and file bytes.
 *
 * The filetype tiles the file from disp as MPI_Type_contiguous(filetype,
 * infinity) would: instance i starts at disp + i * extent, explicit lower and
 * upper bounds included. */
#include "model.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static void free_handle(MPI_Datatype *t) {
  if (*t != MPI_DATATYPE_NULL && !lmpio__type_is_named(*t)) MPI_Type_free(t);
  *t = MPI_DATATYPE_NULL;
}

/* Our own handle on a user's type: the user may free theirs after set_view. */
static int keep_handle(MPI_Datatype t, MPI_Datatype *out) {
  if (lmpio__type_is_named(t)) {
    *out = t;
    return MPI_SUCCESS;
  }
  if (MPI_Type_dup(t, out) != MPI_SUCCESS) return MPI_ERR_TYPE;
  return MPI_Type_commit(out) == MPI_SUCCESS ? MPI_SUCCESS : MPI_ERR_TYPE;
}

void lmpio__view_free(lmpio__view *v) {
  if (!v->ft) return; /* nothing was built */
  free_handle(&v->etype);
  free_handle(&v->filetype);
  if (v->ft) lmpio__typemap_release(v->ft);
  v->ft = NULL;
}

/* Checks that every coalesced data segment of one filetype instance starts
 * and ends on a whole etype; with a contiguous etype holes then are multiples
 * of its extent.  Walks the segments, so it is only used when the structural
 * test below cannot decide. */
static int segments_are_whole_etypes(const lmpio__tm_node *ft, MPI_Aint eext) {
  lmpio__cursor c;
  if (lmpio__cursor_init(&c, ft, ft->extent) != MPI_SUCCESS) return 0;
  MPI_Count left = ft->size;
  int ok = 1;
  while (left > 0 && ok) {
    MPI_Aint off;
    MPI_Count len = lmpio__cursor_next(&c, left, &off);
    if ((off - ft->data_lb) % eext != 0 || len % eext != 0) ok = 0;
    left -= len;
  }
  lmpio__cursor_free(&c);
  return ok;
}

/* Structural test: every segment a run can produce starts on a whole etype
 * from base and is a whole number of etypes long, recursively.  Sufficient,
 * not necessary (coalescing may join partial pieces into whole etypes). */
static int runs_are_whole_etypes(const lmpio__tm_node *n, MPI_Aint base, MPI_Aint eext) {
  for (int i = 0; i < n->nruns; i++) {
    const lmpio__tm_run *r = &n->runs[i];
    if (r->kind == LMPIO__RUN_FLAT) { /* one segment */
      if ((r->disp + r->lo - base) % eext != 0 || (r->count * r->esize) % eext != 0) return 0;
      continue;
    }
    if ((r->disp - base) % eext != 0 || (r->count > 1 && r->stride % eext != 0)) return 0;
    if (r->kind == LMPIO__RUN_ELEMS) { /* one segment per element */
      if (r->lo % eext != 0 || r->esize % eext != 0) return 0;
    } else if (!runs_are_whole_etypes(r->child, 0, eext)) {
      return 0;
    }
  }
  return 1;
}

int lmpio__view_build(lmpio__view *v, MPI_Offset disp, MPI_Datatype etype,
                    MPI_Datatype filetype, const char *datarep, int writable, const char *call) {
  if (!datarep) return lmpio__err(MPI_ERR_ARG, call, "datarep is NULL");
  if (strlen(datarep) >= MPI_MAX_DATAREP_STRING)
    return lmpio__err(MPI_ERR_UNSUPPORTED_DATAREP, call, "data representation name too long");
  const lmpio__datarep *rep;
  int rc = lmpio__datarep_find(datarep, &rep, call);
  if (rc != MPI_SUCCESS) return rc;
  if (disp < 0) return lmpio__err(MPI_ERR_ARG, call, "negative displacement %lld", (long long)disp);
  if (etype == MPI_DATATYPE_NULL || filetype == MPI_DATATYPE_NULL)
    return lmpio__err(MPI_ERR_TYPE, call, "etype or filetype is MPI_DATATYPE_NULL");

  /* Both types as laid out in the file's representation. */
  const lmpio__tm_node *et = NULL, *ft = NULL;
  rc = lmpio__typemap_get_rep(etype, rep, &et, call);
  if (rc != MPI_SUCCESS) return rc;
  rc = lmpio__typemap_get_rep(filetype, rep, &ft, call);
  if (rc != MPI_SUCCESS) {
    lmpio__typemap_release(et);
    return rc;
  }
  MPI_Count esize = et->size;
  MPI_Aint eext = et->extent;
  int econtig = et->contiguous && esize == eext;
  lmpio__typemap_release(et);
  /* A filetype of size 0 is a view with no data (a block darray or subarray
   * split can give a rank nothing): only accesses of count 0 work on it. */
  int has = ft->size > 0;
  if (esize <= 0) rc = lmpio__err(MPI_ERR_TYPE, call, "etype has size 0");
  else if (ft->size % esize != 0)
    rc = lmpio__err(MPI_ERR_TYPE, call, "filetype size %lld is not a multiple of the etype size %lld",
                    (long long)ft->size, (long long)esize);
  else if (has && ft->data_lb < 0)
    rc = lmpio__err(MPI_ERR_TYPE, call, "filetype has a negative displacement");
  else if (has && !ft->nondecreasing)
    rc = lmpio__err(MPI_ERR_TYPE, call, "filetype displacements decrease (the standard requires them nondecreasing)");
  else if (has && !ft->monotone && writable)
    rc = lmpio__err(MPI_ERR_TYPE, call, "filetype overlaps itself (a data byte is used twice), which is only allowed on files opened MPI_MODE_RDONLY");
  else if (has && ft->extent <= 0)
    rc = lmpio__err(MPI_ERR_TYPE, call, "filetype has a nonpositive extent");
  /* Data may span more than the extent (explicit bounds inside a struct are
   * sticky: PnetCDF's filetypes put header bytes below the lower bound of a
   * resized record type), even on a file open for writing: the standard
   * forbids overlap in the filetype, not between its tiles, and ROMIO and
   * OMPIO accept it.  A write reaching tiles that share bytes writes them
   * in data order. */
  else if (has && econtig && ft->monotone && !runs_are_whole_etypes(ft, ft->data_lb, eext) &&
           !segments_are_whole_etypes(ft, eext))
    rc = lmpio__err(MPI_ERR_TYPE, call, "filetype is not made of whole etypes (a hole or block is not a multiple of the %lld-byte etype; an etype of MPI_BYTE allows any layout)",
                    (long long)eext);
  else if (has && econtig && ft->data_ub - ft->data_lb <= ft->extent &&
           (ft->extent - (ft->data_ub - ft->data_lb)) % eext != 0)
    rc = lmpio__err(MPI_ERR_TYPE, call, "the hole between two tiles of the filetype (%lld bytes) is not a multiple of the etype extent %lld (an etype of MPI_BYTE allows any hole)",
                    (long long)(ft->extent - (ft->data_ub - ft->data_lb)), (long long)eext);
  if (rc != MPI_SUCCESS) {
    lmpio__typemap_release(ft);
    return rc;
  }

  lmpio__view nv;
  memset(&nv, 0, sizeof nv);
  nv.disp = disp;
  nv.esize = esize;
  nv.eextent = eext;
  nv.ft = ft;
  nv.rep = rep;
  nv.contiguous = ft->size > 0 && ft->contiguous && ft->size == ft->extent;
  nv.empty = ft->size == 0;
  nv.any_holes = !nv.contiguous; /* this rank's; set_view agrees on it */
  snprintf(nv.datarep, sizeof nv.datarep, "%s", datarep);
  nv.etype = nv.filetype = MPI_DATATYPE_NULL;
  rc = keep_handle(etype, &nv.etype);
  if (rc == MPI_SUCCESS) rc = keep_handle(filetype, &nv.filetype);
  if (rc != MPI_SUCCESS) {
    lmpio__view_free(&nv);
    return lmpio__err(rc, call, "cannot duplicate the etype or filetype");
  }
  *v = nv;
  return MPI_SUCCESS;
}

int lmpio__view_byte_tiled(const lmpio__view *v, MPI_Offset pos, MPI_Offset *byte, const char *call) {
  const lmpio__tm_node *ft = v->ft;
  if (ft->size == 0) { /* an empty view: no data byte anywhere */
    *byte = v->disp;
    return MPI_SUCCESS;
  }
  MPI_Offset tile, rem, in, at;
  /* Contiguous tiles (extent == size): tile * extent + rem is pos itself,
   * with no division (every data access call checks its range here). */
  if (v->contiguous && lmpio__add_ok(pos, ft->data_lb, &at) && lmpio__add_ok(at, v->disp, &at)) {
    *byte = at;
    return MPI_SUCCESS;
  }
  tile = pos / ft->size;
  rem = pos % ft->size;
  if (ft->contiguous) { /* one segment a tile (a resized int): no cursor to build */
    in = ft->data_lb + rem;
  } else {
    lmpio__cursor c;
    if (lmpio__cursor_init(&c, ft, ft->extent) != MPI_SUCCESS) return lmpio__err(MPI_ERR_NO_MEM, call, "out of memory");
    lmpio__cursor_seek(&c, rem);
    in = lmpio__cursor_peek(&c);
    lmpio__cursor_free(&c);
  }
  if (!lmpio__mul_ok(tile, ft->extent, &at) || !lmpio__add_ok(at, in, &at) || !lmpio__add_ok(at, v->disp, &at))
    return lmpio__err(MPI_ERR_ARG, call,
                      "data byte %lld of the view lies past the largest 64-bit file offset (tile %lld of extent %lld)",
                      (long long)pos, (long long)tile, (long long)ft->extent);
  *byte = at;
  return MPI_SUCCESS;
}

MPI_Offset lmpio__view_data_before(const lmpio__view *v, MPI_Offset x) {
  const lmpio__tm_node *ft = v->ft;
  MPI_Offset rel = x - v->disp;
  if (ft->size == 0 || rel <= ft->data_lb) return 0;
  /* Tiles before t end at or before x; tile t may hold x; later ones start after. */
  MPI_Offset t = (rel - ft->data_lb) / ft->extent, before;
  if (__builtin_mul_overflow(t, ft->size, &before)) return INT64_MAX; /* overlapping tiles, far out */
  return before + lmpio__typemap_bytes_before(ft, (MPI_Aint)(rel - t * ft->extent));
}

int lmpio__view_get(const lmpio__view *v, MPI_Offset *disp, MPI_Datatype *etype,
                    MPI_Datatype *filetype, char *datarep, const char *call) {
  *disp = v->disp;
  /* Derived types are returned as new handles the caller frees, as in MPI. */
  if (keep_handle(v->etype, etype) != MPI_SUCCESS || keep_handle(v->filetype, filetype) != MPI_SUCCESS)
    return lmpio__err(MPI_ERR_TYPE, call, "cannot duplicate the view's datatypes");
  snprintf(datarep, MPI_MAX_DATAREP_STRING, "%s", v->datarep);
  return MPI_SUCCESS;
}
