/* Data representations: the registry ("native", "internal", "external32"
 * and the ones users register).  The extents of types in a representation
 * are typemap.c's (lmpio__typemap_extent), the conversions transfer.c's.
 *
 * "internal" uses the external32 layout: portable across machines, and the
 * one layout lmpio can always read back. */
#include "model.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static lmpio__datarep external32 = {"external32", NULL, NULL, NULL, NULL, 0, NULL, NULL, 1, NULL};
static lmpio__datarep internal = {"internal", NULL, NULL, NULL, NULL, 0, NULL, NULL, 1, &external32};
static lmpio__datarep *registry = &internal;
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;

static lmpio__datarep *lookup(const char *name) {
  for (lmpio__datarep *r = registry; r; r = r->next)
    if (strcmp(r->name, name) == 0) return r;
  return NULL;
}

int lmpio__datarep_find(const char *name, const lmpio__datarep **rep, const char *call) {
  *rep = NULL;
  if (strcmp(name, "native") == 0) return MPI_SUCCESS;
  pthread_mutex_lock(&registry_lock);
  *rep = lookup(name);
  pthread_mutex_unlock(&registry_lock);
  if (!*rep)
    return lmpio__err(MPI_ERR_UNSUPPORTED_DATAREP, call, "unknown data representation \"%s\"", name);
  return MPI_SUCCESS;
}

/* Registrations are permanent, as in MPI. */
static int add(const char *datarep, MPI_Datarep_conversion_function *rd, MPI_Datarep_conversion_function *wr,
               lmpio_datarep_conversion_function_c *rd_c, lmpio_datarep_conversion_function_c *wr_c,
               int large, MPI_Datarep_extent_function *extent_fn, void *extra, const char *call) {
  if (!datarep || !*datarep) return lmpio__err(MPI_ERR_ARG, call, "empty or NULL representation name");
  /* The name and its NUL must fit the MPI_MAX_DATAREP_STRING bytes that
   * MPI_File_get_view's caller provides. */
  if (strlen(datarep) >= MPI_MAX_DATAREP_STRING)
    return lmpio__err(MPI_ERR_ARG, call, "representation name of %zu characters is longer than MPI_MAX_DATAREP_STRING - 1 (%d)",
                      strlen(datarep), MPI_MAX_DATAREP_STRING - 1);
  if (!extent_fn) return lmpio__err(MPI_ERR_ARG, call, "the extent function is NULL");
  pthread_mutex_lock(&registry_lock);
  int dup = strcmp(datarep, "native") == 0 || lookup(datarep) != NULL;
  lmpio__datarep *r = dup ? NULL : calloc(1, sizeof *r);
  if (r) {
    strcpy(r->name, datarep);
    r->read_fn = rd;
    r->write_fn = wr;
    r->read_fn_c = rd_c;
    r->write_fn_c = wr_c;
    r->large = large;
    r->extent_fn = extent_fn;
    r->extra = extra;
    r->next = registry;
    registry = r;
  }
  pthread_mutex_unlock(&registry_lock);
  if (dup)
    return lmpio__err(MPI_ERR_DUP_DATAREP, call, "data representation \"%s\" is already registered", datarep);
  if (!r) return lmpio__err(MPI_ERR_NO_MEM, call, "out of memory");
  return MPI_SUCCESS;
}

int lmpio_register_datarep(const char *datarep, MPI_Datarep_conversion_function *read_conversion_fn,
                           MPI_Datarep_conversion_function *write_conversion_fn,
                           MPI_Datarep_extent_function *dtype_file_extent_fn, void *extra_state) {
  return add(datarep, read_conversion_fn, write_conversion_fn, NULL, NULL, 0, dtype_file_extent_fn,
             extra_state, "lmpio_register_datarep");
}

int lmpio_register_datarep_c(const char *datarep, lmpio_datarep_conversion_function_c *read_conversion_fn,
                             lmpio_datarep_conversion_function_c *write_conversion_fn,
                             MPI_Datarep_extent_function *dtype_file_extent_fn, void *extra_state) {
  return add(datarep, NULL, NULL, read_conversion_fn, write_conversion_fn, 1, dtype_file_extent_fn,
             extra_state, "lmpio_register_datarep_c");
}
