/* The hints lmpio knows, in one table: defaults, parsing, validation,
 * get_info and the README's table all come from it. */
#include "ground.h"

#include <pthread.h>
#include <stdatomic.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { SIZE, MODE, RANKS, COUNT, LIST, DRIVER, OUTCOME };

typedef struct {
  const char *key;
  size_t field;      /* offset in lmpio__hints */
  int kind;          /* SIZE: bytes > 0; MODE: disable/enable/automatic; RANKS: 1..ranks;
                        COUNT: a number > 0; LIST: a cb_config_list;
                        DRIVER: automatic or a file-system driver's name;
                        OUTCOME: agreed or local */
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
     "reads copy their pieces out of a mapping of the file (local file systems; automatic: strided reads of 1 MiB and more, and contiguous ones, or a rank's whole runs of a view with holes, of data accessed twice before, in a file of up to 4 GiB)"},
    {"lmpio_map_writes", F(map_writes), MODE, LMPIO__HINT_AUTOMATIC, 0,
     "writes store their pieces into a mapping of the file (local file systems; automatic: strided writes of 1 MiB and more "
     "through the mapping the handle keeps of a file of up to 4 GiB open for reading too, or on tmpfs a mapping of each window, "
     "and contiguous ones, or a rank's whole runs of a view with holes, inside the file of data accessed twice before: on tmpfs "
     "of any size in a file of up to 4 GiB, else of 256 KiB and less; on a disk file system, even when "
     "enabled, only below the size seen before a pwrite of the handle that has returned)"},
    {"lmpio_fs_driver", F(fs_driver), DRIVER, LMPIO__HINT_FS_AUTOMATIC, 0,
     "file-system driver (read at open; get_info gives the one in effect, lmpio_fs_driver_reason why)"},
    {"lmpio_collective_outcome", F(collective_outcome), OUTCOME, LMPIO__OUTCOME_AGREED, 1,
     "agreed: every collective call succeeds on every rank or fails on every rank with one class; local: a collective "
     "call in which each rank moves only its own data makes no exchange, and each rank returns its own outcome (as OMPIO)"},
    {"lmpio_hint_warnings", F(hint_warnings), MODE, LMPIO__HINT_AUTOMATIC, 0,
     "report unknown hint keys on standard error (automatic: as LMPIO_HINT_WARNINGS says, 0 or 1; without it, on, "
     "and off in the drop-in library)"},
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
static const char *outcomes[] = {"agreed", "local"};

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
    if (d->kind == MODE || d->kind == DRIVER || d->kind == OUTCOME) *mode_field(h, d) = (int)d->def;
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
  if (d->kind == OUTCOME) {
    for (int m = 0; m < 2; m++)
      if (strcasecmp(val, outcomes[m]) == 0) {
        *mode_field(h, d) = m;
        return MPI_SUCCESS;
      }
    return lmpio__err(MPI_ERR_INFO_VALUE, call, "hint %s=\"%s\": the value must be agreed or local", d->key, val);
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
    long long v = table[i].kind == MODE || table[i].kind == DRIVER || table[i].kind == OUTCOME
                      ? *mode_field(m, &table[i])
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
    else if (d->kind == OUTCOME) snprintf(v, sizeof v, "%s", outcomes[*mode_field((lmpio__hints *)h, d)]);
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
                       : d->kind == OUTCOME ? "`agreed`, `local`, in any case"
                                          : "bytes, 1 to 2^50";
  if (d->kind == MODE) snprintf(def, sizeof def, "%s", modes[d->def]);
  else if (d->kind == DRIVER) snprintf(def, sizeof def, "%s", drivers[d->def]);
  else if (d->kind == OUTCOME) snprintf(def, sizeof def, "%s", outcomes[d->def]);
  else if (d->kind == RANKS) snprintf(def, sizeof def, "as `cb_config_list` allows, at most %d", LMPIO__MAX_AGGREGATORS);
  else if (d->kind == LIST) snprintf(def, sizeof def, "`*:1`; on one node `*:*`");
  else if (d->def == 0) snprintf(def, sizeof def, "none");
  else snprintf(def, sizeof def, "%lld", d->def);
  snprintf(buf, n, "| `%s` | %s | %s | %s | %s |", d->key, d->what, def, values, d->agree ? "yes" : "no");
  return buf;
}

/* ---- keys lmpio does not know ----------------------------------------------- */

/* Keys accepted without a word: the reserved keys of the standard, the keys
 * ROMIO's and OMPIO's file systems read (lmpio ignores those it does not
 * have: an unmodified program under the drop-in passes them), and the keys
 * lmpio's get_info reports (an info from get_info may be passed on). */
static const char *const reserved[] = {
    /* MPI (the standard's reserved file hints) */
    "access_style", "collective_buffering", "cb_block_size", "chunked", "chunked_item", "chunked_size",
    "filename", "file_perm", "io_node_list", "nb_proc", "num_io_nodes",
    /* ROMIO: common, then by file system (PFS, XFS, Blue Gene; the others by prefix, below) */
    "romio_no_indep_rw", "romio_cb_pfr", "romio_cb_fr_types", "romio_cb_fr_type", "romio_cb_fr_alignment",
    "romio_cb_ds_threshold", "romio_cb_alltoall", "romio_filesystem_type", "romio_min_fdomain_size",
    "romio_visibility_immediate", "romio_synchronized_flush", "romio_aggregator_list", "start_iodevice",
    "pfs_svr_buf", "direct_read", "direct_write",
    "bg_nodes_pset",
    /* OMPIO: its collective components, Lustre, GPFS (and SIOX) */
    "num_aggregators", "ompio_num_aggregators", "bytes_per_agg", "cycle_buffer_size", "aggregators_cutoff_threshold",
    "max_aggregators_ratio", "grouping_option", "overwrite_amode", "pipeline_buffer_size", "use_accelerator_buffers",
    "verbose_info_parsing", "coll_timing_info", "stripe_size", "stripe_width", "useSIOXLib",
    /* lmpio's get_info */
    "lmpio_version", "lmpio_fs_driver_reason", "lmpio_aggregators", "lmpio_fd_alignment", "lmpio_unknown_hints",
};
/* Prefixes of keys that belong to MPI itself, to libraries that pass their
 * own hints through the file's info (PnetCDF), and to ROMIO's and OMPIO's
 * file systems (Lustre, PanFS, PVFS2, DAOS; GPFS: IBM_largeblock_io,
 * OMPIO's gpfsAccessRange, sioxByteRange, ...). */
static const char *const prefixes[] = {"mpi_", "nc_", "pnetcdf_", "romio_lustre_", "panfs_", "romio_pvfs2_",
                                       "romio_daos_", "IBM_", "gpfs", "siox"};
#define NRESERVED (int)(sizeof reserved / sizeof reserved[0])
#define NPREFIXES (int)(sizeof prefixes / sizeof prefixes[0])

static int known(const char *key) {
  for (int i = 0; i < NHINTS; i++)
    if (strcmp(key, table[i].key) == 0) return 1;
  for (int i = 0; i < NRESERVED; i++)
    if (strcmp(key, reserved[i]) == 0) return 1;
  for (int i = 0; i < NPREFIXES; i++)
    if (strncmp(key, prefixes[i], strlen(prefixes[i])) == 0) return 1;
  return 0;
}

/* Whether the comma-separated list holds key. */
static int listed(const char *list, const char *key) {
  size_t n = strlen(key);
  for (const char *p = list; *p;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    if (len == n && strncmp(p, key, n) == 0) return 1;
    if (!comma) break;
    p = comma + 1;
  }
  return 0;
}

int lmpio__hints_unknown(MPI_Info info, char *list, size_t n) {
  int nkeys = 0, found = 0;
  if (info == MPI_INFO_NULL || MPI_Info_get_nkeys(info, &nkeys) != MPI_SUCCESS) return 0;
  for (int k = 0; k < nkeys; k++) {
    char key[MPI_MAX_INFO_KEY + 1];
    if (MPI_Info_get_nthkey(info, k, key) != MPI_SUCCESS || known(key)) continue;
    found++;
    size_t used = strlen(list);
    if (listed(list, key) || used + strlen(key) + 2 > n) continue; /* a list too long keeps its first keys */
    snprintf(list + used, n - used, "%s%s", used ? "," : "", key);
  }
  return found;
}

/* Edit distance of a and b (both short keys), at most 64 characters of b. */
static int distance(const char *a, const char *b) {
  int row[MPI_MAX_INFO_KEY + 2];
  int lb = (int)strlen(b);
  if (lb > MPI_MAX_INFO_KEY) lb = MPI_MAX_INFO_KEY;
  for (int j = 0; j <= lb; j++) row[j] = j;
  for (int i = 1; a[i - 1]; i++) {
    int diag = row[0];
    row[0] = i;
    for (int j = 1; j <= lb; j++) {
      int up = row[j];
      int best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best) best = up + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[lb];
}

/* The known key closest to key, when it is close (a slip of the fingers). */
static const char *nearest(const char *key) {
  const char *best = NULL;
  int bestd = (int)strlen(key) / 4 + 1;
  if (bestd > 3) bestd = 3;
  for (int i = 0; i < NHINTS + NRESERVED; i++) {
    const char *k = i < NHINTS ? table[i].key : reserved[i - NHINTS];
    int d = distance(key, k);
    if (d <= bestd && (!best || d < bestd)) {
      best = k;
      bestd = d;
    }
  }
  return best;
}

/* The keys reported so far by this process (once per key). */
static pthread_mutex_t reported_lock = PTHREAD_MUTEX_INITIALIZER;
static char reported[4096];
/* The report when neither the hint nor LMPIO_HINT_WARNINGS says: on, but
 * off under a layer that serves programs not written for lmpio. */
static _Atomic int warn_by_default = 1;

void lmpio_set_hint_warnings(int on) { warn_by_default = on != 0; }

void lmpio__hints_warn(const lmpio__hints *h, const char *list, int rank) {
  if (rank != 0 || !*list || h->hint_warnings == LMPIO__HINT_DISABLE) return;
  if (h->hint_warnings == LMPIO__HINT_AUTOMATIC) {
    const char *env = getenv("LMPIO_HINT_WARNINGS");
    int on = env && *env ? strcmp(env, "0") != 0 : warn_by_default;
    if (!on) return;
  }
  pthread_mutex_lock(&reported_lock);
  for (const char *p = list; *p;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    char key[MPI_MAX_INFO_KEY + 1];
    snprintf(key, sizeof key, "%.*s", (int)len, p);
    if (!listed(reported, key)) {
      size_t used = strlen(reported);
      if (used + len + 2 < sizeof reported) snprintf(reported + used, sizeof reported - used, "%s%s", used ? "," : "", key);
      const char *near = nearest(key);
      if (near) fprintf(stderr, "lmpio: hint \"%s\" is not known (did you mean %s?)\n", key, near);
      else fprintf(stderr, "lmpio: hint \"%s\" is not known (lmpio ignores it)\n", key);
    }
    if (!comma) break;
    p = comma + 1;
  }
  pthread_mutex_unlock(&reported_lock);
}

/* The environment variables the core reads, where it reads them (getenv,
 * each in its own file): one table for the README's (hints_test checks the
 * README against it, and that every LMPIO_* variable of core/src is in it). */
static const struct {
  const char *name, *meaning, *values;
} knobs[] = {
    {"LMPIO_ASYNC", "nonblocking and split operations run in the background (async.c); `0`: they complete when they start",
     "`0`; else on"},
    {"LMPIO_ASYNC_BIND", "the background worker keeps the core the launcher bound the rank to (async.c)", "`1`; else unbound"},
    {"LMPIO_AGREE_GATHER_MAX", "the most ranks whose values the first agreement gathers (agree.c; above, it reduces them)",
     "a count (tests); default 64"},
    {"LMPIO_SHM_AGREEMENT", "the agreement of ranks on one node goes through shared memory (exchange.c); `0` on any rank: off",
     "`0`; else on"},
    {"LMPIO_SHM_AGREEMENT_AT", "the exchange of a file from which its agreement goes through shared memory (exchange.c)",
     "1 up; default 128"},
    {"LMPIO_SHARED_FP", "the shared file pointer's store (pointer.c); `lock` on any rank: the fcntl-locked helper file",
     "`lock`; else chosen at open"},
    {"LMPIO_STATS", "every file prints its statistics at close, and calls are timed (stats.c)", "`0`; else on when set"},
    {"LMPIO_HINT_WARNINGS", "unknown hint keys are reported (hints.c; see Unknown hint keys)", "`0`, `1`"},
    {"LMPIO_HANG_REPORT",
     "a rank waiting that many seconds inside one blocking call (a file's collective; a binding's collectives and message "
     "waits) says where, again at doubling intervals (watch.c)",
     "seconds; default 60, `0`: off"},
    {"LMPIO_TEST_NODES", "tests only: the node of each rank, `a,a,b,b`, in place of what MPI says (nodes.c)",
     "node names, comma-separated"},
};

const char *lmpio__hints_env_row(int i, char *buf, size_t n) {
  if (i < 0 || i >= (int)(sizeof knobs / sizeof knobs[0])) return NULL;
  snprintf(buf, n, "| `%s` | %s | %s |", knobs[i].name, knobs[i].meaning, knobs[i].values);
  return buf;
}
