/* The public item walker (lmpio_items_*): the predefined items of count
 * instances of a datatype in typemap order, for conversion functions written
 * outside the core (the Lua binding).  A thin shell over the typemap's leaf
 * cursor, the one walker of the project: the flattened node is held (not the
 * MPI handle), the cursor tiles it forever at its extent, and the walker
 * bounds it to count instances, joins runs that continue one another (the
 * instances of a predefined type, say) and skips whole instances by
 * arithmetic. */
#include "model.h"

#include <stdlib.h>

struct lmpio_items_s {
  const lmpio__tm_node *node;
  lmpio__cursor cur;
  int have_cur;
  MPI_Count per;  /* items of one instance */
  MPI_Count pos;  /* items the cursor walked (skipped instances excluded) */
  MPI_Count left; /* items of the walk still ahead */
  MPI_Aint base;  /* bytes of the instances skipped by arithmetic */
};

int lmpio_items_open(MPI_Datatype datatype, MPI_Count count, lmpio_items *items) {
  const char *call = "lmpio_items_open";
  if (!items) return lmpio__err(MPI_ERR_ARG, call, "items is NULL");
  *items = NULL;
  if (count < 0) return lmpio__err(MPI_ERR_COUNT, call, "count is negative (%lld)", (long long)count);
  const lmpio__tm_node *n;
  int rc = lmpio__typemap_get(datatype, &n, call);
  if (rc != MPI_SUCCESS) return rc;
  lmpio_items it = calloc(1, sizeof *it);
  if (!it) {
    lmpio__typemap_release(n);
    return lmpio__err(MPI_ERR_NO_MEM, call, "out of memory");
  }
  it->node = n;
  it->per = n->nitems;
  if (it->per > 0 && count > 0) {
    if (count > ((MPI_Count)1 << 62) / it->per) {
      lmpio_items_close(it);
      return lmpio__err(MPI_ERR_COUNT, call, "%lld instances of the datatype are too many items",
                        (long long)count);
    }
    if (lmpio__cursor_init_leaves(&it->cur, n, n->extent) != MPI_SUCCESS) {
      lmpio_items_close(it);
      return lmpio__err(MPI_ERR_NO_MEM, call, "out of memory");
    }
    it->have_cur = 1;
    it->left = count * it->per;
  }
  *items = it;
  return MPI_SUCCESS;
}

MPI_Count lmpio_items_next(lmpio_items it, MPI_Count max, MPI_Aint *offset, MPI_Datatype *basic,
                           MPI_Count *item_size) {
  if (!it || max <= 0 || it->left <= 0) return 0;
  MPI_Aint off;
  MPI_Datatype b;
  MPI_Count es;
  MPI_Count want = max < it->left ? max : it->left;
  MPI_Count n = lmpio__cursor_next_leaf(&it->cur, want, &off, &b, &es);
  /* The cursor steps one run (one instance of a predefined type) at a time:
   * runs that continue this one with the same type join it. */
  while (n < want && lmpio__cursor_peek_leaf(&it->cur) == b &&
         lmpio__cursor_peek(&it->cur) == off + (MPI_Aint)(n * es)) {
    MPI_Aint o;
    n += lmpio__cursor_next_leaf(&it->cur, want - n, &o, &b, &es);
  }
  it->pos += n;
  it->left -= n;
  if (offset) *offset = off + it->base;
  if (basic) *basic = b;
  if (item_size) *item_size = es;
  return n;
}

MPI_Count lmpio_items_skip(lmpio_items it, MPI_Count n) {
  if (!it || n <= 0 || it->left <= 0) return 0;
  if (n > it->left) n = it->left;
  MPI_Count todo = n;
  /* to the end of the instance the cursor stands in, item run by item run */
  while (todo > 0 && it->pos % it->per != 0) {
    MPI_Count rest = it->per - it->pos % it->per;
    todo -= lmpio_items_next(it, todo < rest ? todo : rest, NULL, NULL, NULL);
  }
  /* whole instances: the cursor stays, the offsets it gives move on */
  MPI_Count whole = todo / it->per;
  it->base += (MPI_Aint)whole * it->node->extent;
  it->left -= whole * it->per;
  todo -= whole * it->per;
  while (todo > 0) todo -= lmpio_items_next(it, todo, NULL, NULL, NULL);
  return n;
}

void lmpio_items_close(lmpio_items it) {
  if (!it) return;
  if (it->have_cur) lmpio__cursor_free(&it->cur);
  if (it->node) lmpio__typemap_release(it->node);
  free(it);
}

int lmpio_type_data_bounds(MPI_Datatype datatype, MPI_Aint *data_lb, MPI_Aint *data_ub, MPI_Aint *extent) {
  const char *call = "lmpio_type_data_bounds";
  if (!data_lb || !data_ub || !extent) return lmpio__err(MPI_ERR_ARG, call, "an output argument is NULL");
  const lmpio__tm_node *n;
  int rc = lmpio__typemap_get(datatype, &n, call);
  if (rc != MPI_SUCCESS) return rc;
  *data_lb = n->data_lb;
  *data_ub = n->data_ub;
  *extent = n->extent;
  lmpio__typemap_release(n);
  return MPI_SUCCESS;
}
