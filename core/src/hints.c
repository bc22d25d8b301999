/* The hints lmpio knows, in one table: defaults, parsing, validation,
 * get_info and the README's table all come from it. */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { SIZE, MODE, RANKS, COUNT, LIST, DRIVER };

typedef struct {
  const char *key;
  size_t field;      /* offset in lmpio__hints */
  int kind;          /* SIZE: bytes > 0; MODE: disable/enable/automatic; RANKS: 1..ranks;
                        COUNT: a number > 0; LIST: a cb_config_list;
                        DRIVER: automatic or a file-system driver's name */
  long long def;     /* default; 0 for SIZE, RANKS, COUNT, LIST: none (the hint was not given) */
  int agree;         /* every rank must pass the same value */
  const char *what;  /* for the README */
} hint_def;

#define F(name) offsetof(lmpio__hints, name)
static const hint_def table[] = {
    {"ind_rd_buffer_size", F(ind_rd_buffer_size), SIZE, 4194304, 0, "data sieving window of independent reads"},
    {"ind_wr_buffer_size", F(ind_wr_buffer_size), SIZE, 524288, 0, "data sieving window of independent writes"},
    {"romio_ds_read", F(ds_read), MODE, LMPIO__HINT_AUTOMATIC, 0, "data sieving of reads"},
    {"romio_ds_write", F(ds_write), MODE, LMPIO__HINT_AUTOMATIC, 0, "data sieving of writes"},
    {"romio_cb_read", F(cb_read), MODE, LMPIO__HINT_AUTOMATIC, 1, "two-phase collective reads"},
    {"romio_cb_write", F(cb_write), MODE, LMPIO__HINT_AUTOMATIC, 1, "two-phase collective writes"},
    {"cb_buffer_size", F(cb_buffer_size), SIZE, 16777216, 1, "two-phase window of each aggregator"},
    {"cb_nodes", F(cb_nodes), RANKS, 0, 1, "aggregators of two-phase calls"},
    {"cb_config_list", F(cb_config_list), LIST, 0, 1, "aggregators per node: `host:n` entries, `*` any host"},
    {"striping_factor", F(striping_factor), COUNT, 0, 1, "stripes of a new file (see below)"},
    {"striping_unit", F(striping_unit), SIZE, 0, 1, "stripe size; two-phase file domains are aligned to it (see below)"},
    {"lmpio_conversion_buffer_size", F(conv_buffer_size), SIZE, 4194304, 0,
     "staging buffer of data conversions"},
    {"lmpio_map_reads", F(map_reads), MODE, LMPIO__HINT_AUTOMATIC, 0,
     "reads copy their pieces out of a mapping of the file (local file systems; automatic: strided reads of 1 MiB and more)"},
    {"lmpio_fs_driver", F(fs_driver), DRIVER, LMPIO__HINT_FS_AUTOMATIC, 0,
     "file-system driver (read at open; get_info gives the one in effect, lmpio_fs_driver_reason why)"},
};
#undef F
#define NHINTS (int)(sizeof table / sizeof table[0])

/* Sizes up to 2^50 bytes: large enough for any buffer, small enough that
 * sums and products of them never overflow. */
#define SIZE_MAX_HINT (1LL << 50)

static const char *modes[] = {"disable", "enable", "automatic"};
/* lmpio_fs_driver's values: automatic, then the drivers by 1 + LMPIO__FS_*;
 * the last, stream, is reported by get_info but never chosen by a hint (a
 * file is a stream or it is not). */
static const char *drivers[] = {"automatic", "local", "coherent", "caching", "stream"};
#define NDRIVERS (int)(sizeof drivers / sizeof drivers[0] - 1)

/* The largest value in effect of a RANKS hint. */
static int max_ranks(int nranks) { return nranks < LMPIO__MAX_AGGREGATORS ? nranks : LMPIO__MAX_AGGREGATORS; }

static MPI_Offset *size_field(lmpio__hints *h, const hint_def *d) {
  return (MPI_Offset *)(void *)((char *)h + d->field);
}
static int *mode_field(lmpio__hints *h, const hint_def *d) { return (int *)(void *)((char *)h + d->field); }
static char *list_field(lmpio__hints *h, const hint_def *d) { return (char *)h + d->field; }

void lmpio__hints_default(lmpio__hints *h, int nranks) {
  (void)nranks; /* cb_nodes: not given, the nodes decide (nodes.c) */
  for (int i = 0; i < NHINTS; i++) {
    const hint_def *d = &table[i];
    if (d->kind == MODE || d->kind == DRIVER) *mode_field(h, d) = (int)d->def;
    else if (d->kind == LIST) list_field(h, d)[0] = '\0';
    else *size_field(h, d) = d->def;
  }
}

static int parse_one(lmpio__hints *h, const hint_def *d, const char *val, int nranks, const char *call) {
  if (d->kind == DRIVER) {
    for (int m = 0; m < NDRIVERS; m++)
      if (strcmp(val, drivers[m]) == 0) {
        *mode_field(h, d) = m;
        return MPI_SUCCESS;
      }
    return lmpio__err(MPI_ERR_INFO_VALUE, call,
                      "hint %s=\"%s\": the value must be automatic, local, coherent or caching", d->key, val);
  }
  if (d->kind == MODE) {
    /* Any case, as ROMIO and OMPIO take them ("ENABLE" is common). */
    for (int m = 0; m < 3; m++)
      if (strcasecmp(val, modes[m]) == 0) {
        *mode_field(h, d) = m;
        return MPI_SUCCESS;
      }
    return lmpio__err(MPI_ERR_INFO_VALUE, call, "hint %s=\"%s\": the value must be enable, disable or automatic",
                      d->key, val);
  }
  if (d->kind == LIST) {
    if (strlen(val) > MPI_MAX_INFO_VAL || lmpio__nodes_config_check(val) < 0)
      return lmpio__err(MPI_ERR_INFO_VALUE, call,
                        "hint %s=\"%s\": the value must be a comma-separated list of host:count entries "
                        "(host * for any host, count a number or *)",
                        d->key, val);
    strcpy(list_field(h, d), val);
    return MPI_SUCCESS;
  }
  char *end;
  errno = 0;
  long long v = strtoll(val, &end, 10);
  while (end != val && *end == ' ') end++;
  long long hi = d->kind == RANKS || d->kind == COUNT ? 1LL << 30 : SIZE_MAX_HINT;
  if (end == val || *end || errno == ERANGE || v < 1 || v > hi)
    return lmpio__err(MPI_ERR_INFO_VALUE, call, "hint %s=\"%s\": the value must be %s from 1 to %lld",
                      d->key, val,
                      d->kind == RANKS ? "a number of processes" : d->kind == COUNT ? "a number" : "a size in bytes",
                      hi);
  /* More aggregators than ranks cannot be: the value in effect is the ranks
   * (and at most LMPIO__MAX_AGGREGATORS). */
  if (d->kind == RANKS && v > max_ranks(nranks)) v = max_ranks(nranks);
  *size_field(h, d) = v;
  return MPI_SUCCESS;
}

int lmpio__hints_parse(lmpio__hints *h, MPI_Info info, int nranks, const char *call) {
  if (info == MPI_INFO_NULL) return MPI_SUCCESS;
  lmpio__hints n = *h;
  for (int i = 0; i < NHINTS; i++) {
    char val[MPI_MAX_INFO_VAL + 1];
    int flag = 0;
    if (MPI_Info_get(info, table[i].key, MPI_MAX_INFO_VAL, val, &flag) != MPI_SUCCESS)
      return lmpio__err(MPI_ERR_INFO, call, "invalid info object");
    if (!flag) continue;
    int rc = parse_one(&n, &table[i], val, nranks, call);
    if (rc != MPI_SUCCESS) return rc;
  }
  *h = n;
  return MPI_SUCCESS;
}

void lmpio__hints_same(const lmpio__hints *h, int ok, long long *out) {
  int n = 0;
  for (int i = 0; i < NHINTS && n < LMPIO__HINTS_SAME; i++) {
    if (!table[i].agree) continue;
    lmpio__hints *m = (lmpio__hints *)h;
    long long v = table[i].kind == MODE || table[i].kind == DRIVER ? *mode_field(m, &table[i])
                  : table[i].kind == LIST                          ? lmpio__hash(list_field(m, &table[i]))
                                                                   : *size_field(m, &table[i]);
    out[n++] = ok ? v : 0;
  }
}

void lmpio__hints_same_labels(char *buf, size_t n) {
  size_t used = strlen(buf);
  for (int i = 0; i < NHINTS; i++) {
    if (!table[i].agree) continue;
    int w = snprintf(buf + used, n - used, "%svalues of the hint %s", used ? "|" : "", table[i].key);
    if (w < 0 || (size_t)w >= n - used) break;
    used += (size_t)w;
  }
}

int lmpio__hints_to_info(const lmpio__hints *h, MPI_Info info) {
  for (int i = 0; i < NHINTS; i++) {
    char v[32];
    const hint_def *d = &table[i];
    if (d->kind == RANKS || d->kind == LIST) continue;
    if (d->kind == MODE) snprintf(v, sizeof v, "%s", modes[*mode_field((lmpio__hints *)h, d)]);
    else if (d->kind == DRIVER) snprintf(v, sizeof v, "%s", drivers[*mode_field((lmpio__hints *)h, d)]);
    else if (d->def == 0 && *size_field((lmpio__hints *)h, d) == 0) continue;
    else snprintf(v, sizeof v, "%lld", (long long)*size_field((lmpio__hints *)h, d));
    if (MPI_Info_set(info, d->key, v) != MPI_SUCCESS) return MPI_ERR_INFO;
  }
  return MPI_SUCCESS;
}

const char *lmpio__hints_row(int i, char *buf, size_t n) {
  if (i < 0 || i >= NHINTS) return NULL;
  const hint_def *d = &table[i];
  char def[64];
  const char *values = d->kind == MODE    ? "`enable`, `disable`, `automatic`, in any case"
                       : d->kind == RANKS ? "1 up; more than the ranks (or 64) counts as that"
                       : d->kind == COUNT ? "1 up"
                       : d->kind == LIST  ? "`host:n`, `host:*`, `*:n`, `*:*`, comma-separated"
                       : d->kind == DRIVER ? "`automatic`, `local`, `coherent`, `caching`"
                                          : "bytes, 1 to 2^50";
  if (d->kind == MODE) snprintf(def, sizeof def, "%s", modes[d->def]);
  else if (d->kind == DRIVER) snprintf(def, sizeof def, "%s", drivers[d->def]);
  else if (d->kind == RANKS) snprintf(def, sizeof def, "as `cb_config_list` allows, at most %d", LMPIO__MAX_AGGREGATORS);
  else if (d->kind == LIST) snprintf(def, sizeof def, "`*:1`; on one node `*:*`");
  else if (d->def == 0) snprintf(def, sizeof def, "none");
  else snprintf(def, sizeof def, "%lld", d->def);
  snprintf(buf, n, "| `%s` | %s | %s | %s | %s |", d->key, d->what, def, values, d->agree ? "yes" : "no");
  return buf;
}
