/* Data representations: the registry ("native", "internal", "external32"
 * and the ones users register) and the conversion driver.
 *
 * The driver walks the predefined items of the memory type (a leaf cursor)
 * and converts them through a staging buffer of bounded size (hint
 * "lmpio_conversion_buffer_size"): when the data does not fit, conversion
 * functions are called again with position advanced by the items already
 * converted, as the standard describes.  The file side of each chunk is an
 * ordinary access of bytes through the view, which the view's filetype lays
 * out with the representation's extents.
 *
 * "internal" uses the external32 layout: portable across machines, and the
 * one layout lmpio can always read back. */
#include "internal.h"
#include "external32.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static lmpio__datarep external32 = {"external32", NULL, NULL, NULL, NULL, 0, NULL, NULL, 1, NULL};
static lmpio__datarep internal = {"internal", NULL, NULL, NULL, NULL, 0, NULL, NULL, 1, &external32};
static lmpio__datarep *registry = &internal;
#define EXTENT_MAX ((MPI_Aint)1 << 40)
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

/* Why the last conversion or extent function failed, in its own words
 * (per thread): set through lmpio_conversion_error_detail. */
static _Thread_local char conversion_detail[512];

void lmpio_conversion_error_detail(const char *text) {
  snprintf(conversion_detail, sizeof conversion_detail, "%s", text ? text : "");
}

void lmpio__datarep_clear_detail(void) { conversion_detail[0] = '\0'; }

int lmpio__datarep_error(int cls, const char *call, const char *what) {
  int rc = lmpio__err(cls, call, "%s%s%s", what, conversion_detail[0] ? ": " : "", conversion_detail);
  conversion_detail[0] = '\0';
  return rc;
}

int lmpio__datarep_type_extent(const lmpio__datarep *rep, MPI_Datatype basic, MPI_Aint *ext) {
  if (rep->builtin) {
    *ext = lmpio__external32_size(basic);
    return *ext > 0 ? MPI_SUCCESS : MPI_ERR_TYPE;
  }
  MPI_Aint e = 0;
  conversion_detail[0] = '\0'; /* only what this call says counts */
  lmpio__agree_converting(1); /* (no collective call from in there: agree.c) */
  int code = rep->extent_fn(basic, &e, rep->extra);
  lmpio__agree_converting(-1);
  if (code != MPI_SUCCESS) return MPI_ERR_CONVERSION;
  /* An extent no item can have (at most 2^40 bytes) would make every size
   * computed from it wrap: the extent function is wrong. */
  if (e <= 0 || e > EXTENT_MAX) {
    char name[MPI_MAX_OBJECT_NAME] = "a predefined type";
    int len = 0;
    MPI_Type_get_name(basic, name, &len);
    snprintf(conversion_detail, sizeof conversion_detail,
             "the extent function of \"%s\" answered %lld bytes for %s (1 to 2^40 are possible)", rep->name,
             (long long)e, name);
    return MPI_ERR_CONVERSION;
  }
  *ext = e;
  return MPI_SUCCESS;
}

