/* Memory arguments of the calls that move data: (data [, count [,
 * datatype]]) of file access: lmpio_lua_checkmem and its checks. */
#include "error.h"
#include "datatype.h"
#include "buffer.h"
#include "records.h"

#include <limits.h>
#include <string.h>

typedef lmpio_lua_records records;

void lmpio_lua_checkfit(lua_State *L, int arg, size_t nbytes, int count, MPI_Datatype type) {
  if (count < 0) lmpio_lua_argerror(L, arg, "count must not be negative");
  long long need = lmpio_lua_typespan(L, count, type);
  if (need == LMPIO_LUA_SPAN_HUGE)
    lmpio_lua_argerror(L, arg, lua_pushfstring(L, "%d items of this datatype span more bytes than a 64-bit size holds",
                                          count));
  if (need < 0)
    lmpio_lua_argerror(L, arg, lua_pushfstring(L, "%d items of this datatype reach before the start of the buffer", count));
  if ((unsigned long long)need > nbytes)
    lmpio_lua_argerror(L, arg, lua_pushfstring(L, "%d items of this datatype need %I bytes but the buffer has %I",
                                          count, (lua_Integer)need, (lua_Integer)nbytes));
}

void lmpio_lua_checklasting(lua_State *L, int idx, const lmpio_lua_mem *m) {
  const lmpio_lua_buffer *b = m->buf;
  if (b && (b->borrowed || (b->root && b->root->borrowed)))
    lmpio_lua_argerror(L, idx, "a converter's borrowed buffer cannot be used by a call that outlives the converter "
                          "(a nonblocking call or a split collective): copy it into an lmpio.array first");
}

/* ---- memory arguments of data access calls ------------------------------- */

int lmpio_lua_checkmem(lua_State *L, int idx, int writing, lmpio_lua_mem *m) {
  memset(m, 0, sizeof *m);
  size_t nbytes = 0;
  MPI_Datatype deftype = MPI_BYTE;
  size_t defcount = 0;
  int tidx = idx + 2, cidx = idx + 1;
  lmpio_lua_datatype *defobj = NULL;
  switch (lua_type(L, idx)) {
  case LUA_TSTRING:
    if (!writing)
      return lmpio_lua_argerror(L, idx, "cannot read into a string (strings are immutable): pass an lmpio.buffer or a count");
    m->ptr = (void *)lua_tolstring(L, idx, &nbytes);
    deftype = MPI_CHAR;
    defcount = nbytes;
    break;
  case LUA_TNUMBER: {
    if (writing) return lmpio_lua_typeerror(L, idx, "lmpio buffer, array or string");
    lua_Integer n = lmpio_lua_checkinteger(L, idx);
    if (n < 0 || n > INT_MAX) return lmpio_lua_argerror(L, idx, "count out of range");
    MPI_Datatype t = lmpio_lua_opttype(L, idx + 1, MPI_BYTE);
    const records *r = lmpio_lua_findlayout(L, idx + 1);
    if (r) {
      m->buf = lmpio_lua_newrecords(L, -1, r, (size_t)n);
      lua_remove(L, -2); /* the layout: the records keep it */
    } else {
      m->buf = lmpio_lua_newbuffer(L, t, (size_t)n); /* pushed: the result */
    }
    m->buf->fresh = 1;
    m->ptr = m->buf->data ? (void *)m->buf->data : (void *)"";
    m->count = (int)n;
    m->type = t;
    m->type_size = lmpio_lua_type_size(L, t);
    m->tobj = lmpio_lua_totype(L, idx + 1);
    return 2;
  }
  case LUA_TUSERDATA: {
    lmpio_lua_buffer *b = lmpio_lua_tobuffer(L, idx);
    if (b) {
      if (!lmpio_lua_usable(b)) return lmpio_lua_error(L, MPI_ERR_BUFFER, "buffer used after the converter returned");
      if (!writing && b->readonly) return lmpio_lua_argerror(L, idx, "cannot read into a read-only buffer");
      lmpio_lua_checkheld(L, b, !writing); /* a read writes the memory, a write reads it */
      if (b->strided) { /* a slice: one item of its datatype; counts are of its elements */
        if (!lua_isnoneornil(L, cidx) || !lua_isnoneornil(L, tidx))
          return lmpio_lua_argerror(L, idx, "a slice takes no count or datatype (it is its own datatype)");
        m->buf = b;
        m->ptr = b->data ? (void *)b->data : (void *)"";
        m->count = b->count ? 1 : 0;
        m->type = b->count ? b->dtype : b->type;
        m->type_size = (MPI_Count)b->esize;
        return 3;
      }
      m->buf = b;
      m->ptr = b->data;
      nbytes = b->nbytes;
      deftype = b->type;
      defcount = b->count;
      if (b->rec) {
        defobj = b->rec->tobj;
        if (defobj->type == MPI_DATATYPE_NULL) return lmpio_lua_argerror(L, idx, "the record datatype was freed");
        deftype = defobj->type;
      }
      break;
    }
  } /* fall through */
  default:
    return lmpio_lua_typeerror(L, idx, writing ? "lmpio buffer, array or string" : "lmpio buffer, array or count");
  }
  if (lua_isnoneornil(L, cidx) && lua_isnoneornil(L, tidx) &&
      (!m->buf || lmpio_lua_typekind(deftype) != LMPIO_LUA_K_NONE)) {
    /* The common call: the whole string or array of a predefined type, which
     * fits by construction; its item size is known without asking MPI. */
    m->count = (int)(defcount > INT_MAX ? INT_MAX : defcount);
    if (defcount > INT_MAX) return lmpio_lua_argerror(L, idx, "too many items for one call (more than INT_MAX)");
    m->type = deftype;
    m->type_size = m->buf ? (MPI_Count)m->buf->esize : 1;
    if (!m->ptr) m->ptr = (void *)""; /* zero-length buffer */
    return 3;
  }
  MPI_Datatype t = lmpio_lua_opttype(L, tidx, deftype);
  long long count;
  if (!lua_isnoneornil(L, cidx)) {
    lua_Integer c = lmpio_lua_checkinteger(L, cidx);
    if (c < 0 || c > INT_MAX) return lmpio_lua_argerror(L, cidx, "count out of range");
    count = c;
  } else if (t == deftype) {
    count = (long long)defcount;
  } else {
    /* A type without a count: as many whole items as fit. */
    MPI_Count lb, ext, tlb, text;
    lmpio_lua_checkmpi(L, MPI_Type_get_extent_x(t, &lb, &ext), "MPI_Type_get_extent_x");
    lmpio_lua_checkmpi(L, MPI_Type_get_true_extent_x(t, &tlb, &text), "MPI_Type_get_true_extent_x");
    (void)lb;
    long long tub;
    if (tlb < 0) return lmpio_lua_argerror(L, tidx, "datatype reaches before the start of the buffer");
    if (!lmpio_lua_add_ok((long long)tlb, (long long)text, &tub) || (unsigned long long)tub > nbytes) count = 0;
    else if (ext <= 0) count = 1;
    else count = ((long long)nbytes - tub) / ext + 1;
  }
  lmpio_lua_datatype *tobj = lmpio_lua_totype(L, tidx);
  /* A typed array is accessed through a datatype of its own element type
   * (issue 32: an INT array written as DOUBLE wrote two ints' bytes as one
   * double); byte buffers and strings take any.  One comparison when the
   * type is the array's; the walk of a derived type is cached in it. */
  if (m->buf && !m->buf->rec && t != deftype && deftype != MPI_BYTE && !lmpio_lua_type_fits(tobj, t, deftype)) {
    const char *tn = lmpio_lua_typename(t);
    return lmpio_lua_argerror(L, tidx, lua_pushfstring(L, "an array of %s cannot be accessed as %s%s: give a datatype of "
                                                          "its element type, or use a byte buffer",
                                                          lmpio_lua_typename(deftype), tn ? tn : "a derived datatype",
                                                          tn ? "" : " of other basic types"));
  }
  if (count > INT_MAX) return lmpio_lua_argerror(L, cidx, "count too large for one call (more than INT_MAX items)");
  lmpio_lua_checkfit(L, lua_isnoneornil(L, cidx) ? idx : cidx, nbytes, (int)count, t);
  m->count = (int)count;
  m->type = t;
  m->type_size = lmpio_lua_type_size(L, t);
  m->tobj = tobj;
  if (!m->tobj && t == deftype) m->tobj = defobj;
  if (!m->ptr) m->ptr = (void *)""; /* zero-length buffer */
  return 3;
}

