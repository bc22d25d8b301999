/* The one agreement of collective calls: a collective call succeeds on every
 * rank or fails on every rank with the same class and the same message (those
 * of the lowest failing rank).  One MPI_Allreduce carries each rank's outcome,
 * the values that must match, and values to reduce; a broadcast of the class
 * and message follows only when some rank failed.
 *
 * The first exchange of every collective call on a file is its first
 * agreement (lmpio__agree_first), and it is the same MPI operation with the
 * same count whatever the call: so ranks that entered different calls (one
 * closing the file while another writes, say) meet in it, and it carries
 * each rank's call (its identity, in a fixed header) to tell them so, instead
 * of a hang.  Up to GATHER_MAX ranks it is an MPI_Allgather of a fixed record
 * per rank (the caller may add values of its own to be gathered: the ranges
 * of a collective access, the sizes of an ordered one); above, an
 * MPI_Allreduce of a fixed vector (MAX, and SUM for its last values). */
#include "ground.h"
#include "calls.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_VALUES 16
#define MSG_MAX 1024

/* The failure of the lowest failing rank (root), on every rank: its class,
 * and a message that names that class (a rank that failed the same way
 * keeps its own, which names this rank; any other takes root's). */
static int spread_failure(MPI_Comm comm, int rank, int root, int rc) {
  struct { int rc; char msg[MSG_MAX]; } m;
  m.rc = rc;
  if (rank == root) snprintf(m.msg, sizeof m.msg, "%s", lmpio_last_error_message());
  MPI_Bcast(&m, (int)sizeof m, MPI_BYTE, root, comm);
  m.msg[MSG_MAX - 1] = '\0';
  if (rc != m.rc) lmpio__err_set_message(m.msg);
  return m.rc;
}

static int not_same(int i, const char *labels, const char *call) {
  const char *label = labels ? labels : "values for an argument that must match";
  for (int k = 0; k < i && strchr(label, '|'); k++) label = strchr(label, '|') + 1;
  int len = (int)strcspn(label, "|");
  return lmpio__err(MPI_ERR_NOT_SAME, call, "ranks passed different %.*s", len, label);
}

/* Conversion functions running on this thread (error.c counts them). */
int lmpio__agree_refuses(const char *call) {
  if (!lmpio__err_in_conversion()) return MPI_SUCCESS;
  (void)lmpio__take_standin(); /* (a binding's stand-in was for this call, which meets no one) */
  return lmpio__err(MPI_ERR_OTHER, call,
                    "called from a conversion function of a data representation: the standard makes a collective "
                    "call there erroneous, and the other ranks are not in it (each converts its own data)");
}

int lmpio__agree_values(MPI_Comm comm, int rc, const long long *same, int nsame,
                        const char *labels, long long *max, int nmax, const char *call) {
  if (lmpio__err_in_conversion()) return lmpio__agree_refuses(call);
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (nsame > MAX_VALUES || nmax > MAX_VALUES)
    return lmpio__err(MPI_ERR_INTERN, call, "too many values to agree on");
  /* [lowest failing rank as size - rank, same..., -same..., max...]: MAX of
   * both signs of a value tells whether it matched. */
  long long v[1 + 2 * MAX_VALUES + MAX_VALUES], r[1 + 2 * MAX_VALUES + MAX_VALUES];
  int n = 1 + 2 * nsame + nmax;
  v[0] = rc != MPI_SUCCESS ? (long long)(size - rank) : 0;
  for (int i = 0; i < nsame; i++) {
    v[1 + i] = same[i];
    v[1 + nsame + i] = -same[i];
  }
  for (int i = 0; i < nmax; i++) v[1 + 2 * nsame + i] = max[i];
  if (size == 1) {
    memcpy(r, v, sizeof(long long) * (size_t)n);
  } else {
    lmpio_watch_begin(call);
    int x = lmpio__exchange_max(comm, v, n, r);
    lmpio_watch_end();
    if (x != MPI_SUCCESS) return lmpio__err(MPI_ERR_OTHER, call, "agreement between ranks failed");
  }
  for (int i = 0; i < nmax; i++) max[i] = r[1 + 2 * nsame + i];
  if (r[0] > 0) return size == 1 ? rc : spread_failure(comm, rank, size - (int)r[0], rc);
  for (int i = 0; i < nsame; i++)
    if (r[1 + i] != -r[1 + nsame + i]) return not_same(i, labels, call);
  return MPI_SUCCESS;
}

int lmpio__agree(MPI_Comm comm, int rc, long long same, const char *call) {
  return lmpio__agree_values(comm, rc, &same, 1, NULL, NULL, 0, call);
}

/* ---- the first agreement: which call each rank is in ---------------------- */

/* The collective calls on a file, by the names messages give them: made
 * from the lists of calls (lmpio.h's LMPIO_CALLS, calls.h's
 * LMPIO__CALLS_FILE), with close and read_records_ordered, which the lists
 * do not hold.  A call's identity is its index + 1 (0: a rank standing in
 * for a call that failed in its binding before it began,
 * lmpio_fail_next_collective, which matches any).  Calls that differ only
 * in how each rank finds its position (an explicit offset or its own
 * pointer) are one call for the matching: a rank with nothing to do that
 * joins with write_all(NULL, 0) while the others call write_at_all, as
 * PnetCDF does, is in the same call (OMPIO and ROMIO complete both).  kin:
 * for a data access call, its kind (collective or ordered, form,
 * direction), which such calls share; -1 for the others (each its own). */
enum { KIN_COLL = 0, KIN_ORDERED = 1, KIN_BLOCKING = 0, KIN_NONBLOCKING = 2, KIN_BEGIN = 4, KIN_READ = 0,
       KIN_WRITE = 8, KINDS = 16 };
#define ROW_INDEP(name, kin)
#define ROW_COLL(name, kin) {#name, kin},
#define ROW_ORDERED(name, kin) {#name, kin},
#define DATA_ROW(name, pointer, coll, form, dir) ROW_##coll(name, KIN_##coll + KIN_##form + KIN_##dir)
#define FILE_ROW(name, coll, ...) ROW_##coll(name, -1)
static const struct {
  const char *name;
  int kin;
} calls[] = {
  LMPIO_CALLS(DATA_ROW) LMPIO__CALLS_FILE(FILE_ROW, FILE_ROW) {"close", -1}, {"read_records_ordered", -1},
};
#define NCALLS ((long long)(sizeof calls / sizeof calls[0]))
/* A word of the first agreement: (kin's class * ID_SPAN + identity) << 1
 * | exiting, where the class is the identity of a call without kin and
 * NCALLS + 1 + kin for one with.  Ranks match when their words agree above
 * ID_SPAN; the call's own identity is kept for the messages. */
#define ID_SPAN (1LL << 18)

static long long identity_of(const char *call) {
  const char *p = strncmp(call, "lmpio_file_", 11) == 0 ? call + 11 : call;
  size_t n = strlen(p);
  if (n > 2 && strcmp(p + n - 2, "_c") == 0) n -= 2; /* the large-count form is the same call */
  for (long long i = 0; i < NCALLS; i++)
    if (strlen(calls[i].name) == n && strncmp(calls[i].name, p, n) == 0)
      return (calls[i].kin < 0 ? i + 1 : NCALLS + 1 + calls[i].kin) * ID_SPAN + i + 1;
  /* not in the table (a new entry): still told apart */
  long long other = NCALLS + 1 + KINDS + lmpio__hash(p) % 100000;
  return other * ID_SPAN + other;
}

/* The names are the callers' string constants: a few are kept, by address
 * (a program alternating write_all and read_all looked its names up every
 * call, ~260 instructions each, with only the last one kept). */
static long long identity(const char *call) {
  static _Thread_local const char *kept_name[8];
  static _Thread_local long long kept_id[8];
  unsigned i = (unsigned)((uintptr_t)call >> 4) & 7;
  if (kept_name[i] != call) {
    kept_id[i] = identity_of(call);
    kept_name[i] = call;
  }
  return kept_id[i];
}

/* Whether two words of the first agreement name one call. */
static int same_call(long long wa, long long wb) { return (wa >> 1) / ID_SPAN == (wb >> 1) / ID_SPAN; }

static _Thread_local int exiting;

void lmpio_set_exiting(int flag) { exiting = flag != 0; }

/* "called write_at_all", "is closing the file (its script ended)" */
static void phrase(char *out, size_t n, long long word) {
  long long id = (word >> 1) % ID_SPAN;
  int ends = (int)(word & 1);
  const char *name = id >= 1 && id <= NCALLS ? calls[id - 1].name : "another collective call";
  if (ends && strcmp(name, "close") == 0) snprintf(out, n, "is closing the file (its script ended)");
  else snprintf(out, n, "called %s%s", name, ends ? " (its script ended)" : "");
}

static int mismatch(int ra, long long wa, int rb, long long wb, const char *call) {
  char a[96], b[96];
  phrase(a, sizeof a, wa);
  phrase(b, sizeof b, wb);
  return lmpio__err(MPI_ERR_NOT_SAME, call,
                    "ranks entered different collective calls on the file: rank %d %s while rank %d %s", rb, b, ra, a);
}

#ifndef GATHER_MAX
#define GATHER_MAX 64
#endif
#define SLOTS 11                 /* values of a rank's record (same, max, sum, mine) */
#define REC (2 + SLOTS)          /* [identity, class, slots...] */
/* (One count for every call: ranks in different calls meet in one
 * MPI_Allgather.  Through a shared segment a record's trailing zeros are not
 * sent, exchange.c: the slots a call leaves unused cost nothing, and a call
 * with up to 5 values of its own is one cache line a rank.) */
/* Above GATHER_MAX ranks: [failing, hi, lo, same[8], -same[8], max[8] | sum[2]] */
#define NMAXPART (3 + 3 * MAX_VALUES)
#define NSUM 2
#define NVEC (NMAXPART + NSUM)
#define RANK_BITS 20
#define WORD_TOP (1LL << 40)

/* The reduction of the vector: MAX over its first part, SUM over the last.
 * Every call reduces one vector (count 1 of vec_type), which MPI never
 * splits: len is 1. */
static void max_sum(void *in, void *inout, int *len, MPI_Datatype *type) {
  (void)len;
  (void)type;
  const long long *a = in;
  long long *b = inout;
  for (int i = 0; i < NMAXPART; i++)
    if (a[i] > b[i]) b[i] = a[i];
  for (int i = NMAXPART; i < NVEC; i++) b[i] += a[i];
}

static pthread_once_t vec_once = PTHREAD_ONCE_INIT;
static MPI_Datatype vec_type = MPI_DATATYPE_NULL;
static MPI_Op vec_op = MPI_OP_NULL;
static int gather_max = GATHER_MAX;

/* MPI_Finalize deletes MPI_COMM_SELF's attributes first: the type and the
 * operation go there (MPICH's yaksa reported the type as leaked). */
static int vec_gone(MPI_Comm comm, int keyval, void *value, void *extra) {
  (void)comm;
  (void)keyval;
  (void)value;
  (void)extra;
  if (vec_type != MPI_DATATYPE_NULL) MPI_Type_free(&vec_type);
  if (vec_op != MPI_OP_NULL) MPI_Op_free(&vec_op);
  return MPI_SUCCESS;
}

static void vec_init(void) {
  if (MPI_Type_contiguous(NVEC, MPI_LONG_LONG, &vec_type) != MPI_SUCCESS || MPI_Type_commit(&vec_type) != MPI_SUCCESS)
    vec_type = MPI_DATATYPE_NULL;
  if (MPI_Op_create(max_sum, 1, &vec_op) != MPI_SUCCESS) vec_op = MPI_OP_NULL;
  int keyval;
  if (MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, vec_gone, &keyval, NULL) == MPI_SUCCESS)
    MPI_Comm_set_attr(MPI_COMM_SELF, keyval, NULL);
  /* (tests run the reduced form at a few ranks; every rank must set it alike) */
  const char *env = getenv("LMPIO_AGREE_GATHER_MAX");
  if (env && *env) gather_max = atoi(env);
}

int lmpio__agree_gathers(int size) {
  pthread_once(&vec_once, vec_init);
  return size <= gather_max;
}

/* Up to GATHER_MAX ranks: every rank's record. */
static int first_gather(MPI_Comm comm, int rank, int size, int rc, long long word, lmpio__first *f, const char *call) {
  long long all[GATHER_MAX * REC], mine[REC] = {word, rc};
  long long *slot = mine + 2;
  for (int i = 0; i < f->nsame; i++) *slot++ = f->same[i];
  for (int i = 0; i < f->nmax; i++) *slot++ = f->max[i];
  for (int i = 0; i < f->nsum; i++) *slot++ = f->sum[i];
  for (int i = 0; i < f->nmine; i++) *slot++ = f->mine[i];
  long long *g = size <= GATHER_MAX ? all : malloc(sizeof(long long) * REC * (size_t)size);
  if (!g) return lmpio__err(MPI_ERR_NO_MEM, call, "out of memory"); /* (only when the tests lift GATHER_MAX) */
  lmpio_watch_begin(call);
  int x = lmpio__exchange(comm, mine, REC, g);
  lmpio_watch_end();
  if (x != MPI_SUCCESS) {
    if (g != all) free(g);
    return lmpio__err(MPI_ERR_OTHER, call, "agreement between ranks failed");
  }
  int a = -1, b = -1, root = -1;
  for (int r = 0; r < size; r++) {
    long long w = g[r * REC];
    if (w != 0 && a < 0) a = r;
    else if (w != 0 && b < 0 && !same_call(w, g[a * REC])) b = r;
    if (g[r * REC + 1] != MPI_SUCCESS && root < 0) root = r;
  }
  int out = MPI_SUCCESS;
  if (b >= 0) {
    out = mismatch(a, g[a * REC], b, g[b * REC], call);
  } else if (root >= 0) {
    out = spread_failure(comm, rank, root, rc);
  } else {
    for (int i = 0; i < f->nsame && out == MPI_SUCCESS; i++)
      for (int r = 1; r < size; r++)
        if (g[r * REC + 2 + i] != g[2 + i]) {
          out = not_same(i, f->labels, call);
          break;
        }
    for (int r = 0; r < size; r++) {
      const long long *s = g + r * REC + 2 + f->nsame;
      for (int i = 0; i < f->nmax; i++)
        if (r == 0 || s[i] > f->max[i]) f->max[i] = s[i];
      for (int i = 0; i < f->nsum; i++) f->sum[i] = (r == 0 ? 0 : f->sum[i]) + s[f->nmax + i];
      if (f->table)
        for (int i = 0; i < f->nmine; i++) f->table[(size_t)r * (size_t)f->nmine + (size_t)i] = s[f->nmax + f->nsum + i];
    }
    f->gathered = f->table != NULL;
  }
  if (g != all) free(g);
  return out;
}

/* Above: one reduction, the same information less the gathered values. */
static int first_reduce(MPI_Comm comm, int rank, int size, int rc, long long word, lmpio__first *f, const char *call) {
  long long v[NVEC], r[NVEC];
  memset(v, 0, sizeof v);
  long long low = (long long)((size - 1 - rank) & ((1 << RANK_BITS) - 1)); /* MAX picks the lowest rank */
  v[0] = rc != MPI_SUCCESS ? (long long)(size - rank) : 0;
  v[1] = word ? (word << RANK_BITS) | low : 0;
  v[2] = word ? ((WORD_TOP - word) << RANK_BITS) | low : 0;
  for (int i = 0; i < f->nsame; i++) {
    v[3 + i] = f->same[i];
    v[3 + MAX_VALUES + i] = -f->same[i];
  }
  for (int i = 0; i < f->nmax; i++) v[3 + 2 * MAX_VALUES + i] = f->max[i];
  for (int i = 0; i < f->nsum; i++) v[NMAXPART + i] = f->sum[i];
  if (vec_type == MPI_DATATYPE_NULL || vec_op == MPI_OP_NULL) /* the same on every rank */
    return lmpio__err(MPI_ERR_OTHER, call, "cannot make the agreement's reduction");
  lmpio_watch_begin(call);
  int x = MPI_Allreduce(v, r, 1, vec_type, vec_op, comm);
  lmpio_watch_end();
  if (x != MPI_SUCCESS) return lmpio__err(MPI_ERR_OTHER, call, "agreement between ranks failed");
  long long whi = r[1] >> RANK_BITS, wlo = WORD_TOP - (r[2] >> RANK_BITS);
  int rhi = size - 1 - (int)(r[1] & ((1 << RANK_BITS) - 1)), rlo = size - 1 - (int)(r[2] & ((1 << RANK_BITS) - 1));
  if (r[1] != 0 && !same_call(whi, wlo))
    return rhi < rlo ? mismatch(rhi, whi, rlo, wlo, call) : mismatch(rlo, wlo, rhi, whi, call);
  if (r[0] > 0) return spread_failure(comm, rank, size - (int)r[0], rc);
  for (int i = 0; i < f->nmax; i++) f->max[i] = r[3 + 2 * MAX_VALUES + i];
  for (int i = 0; i < f->nsum; i++) f->sum[i] = r[NMAXPART + i];
  for (int i = 0; i < f->nsame; i++)
    if (r[3 + i] != -r[3 + MAX_VALUES + i]) return not_same(i, f->labels, call);
  return MPI_SUCCESS;
}

/* One rank: no one to meet or to compare with; the values are its own (as
 * the gather leaves them: a failure leaves them alone). */
static int first_alone(int rc, lmpio__first *f) {
  if (rc != MPI_SUCCESS) return rc;
  if (f->table)
    for (int i = 0; i < f->nmine; i++) f->table[i] = f->mine[i];
  f->gathered = f->table != NULL;
  return MPI_SUCCESS;
}

int lmpio__agree_first_of(MPI_Comm comm, int rank, int size, int rc, lmpio__first *f, const char *call) {
  if (lmpio__err_in_conversion()) return lmpio__agree_refuses(call);
  lmpio__first none;
  if (!f) {
    memset(&none, 0, sizeof none);
    f = &none;
  }
  f->gathered = 0;
  int standin = lmpio__take_standin();
  if (f->nsame > MAX_VALUES || f->nmax > MAX_VALUES || f->nsum > NSUM ||
      f->nsame + f->nmax + f->nsum + f->nmine > SLOTS)
    return lmpio__err(MPI_ERR_INTERN, call, "too many values to agree on"); /* a defect: the same on every rank */
  if (size == 1) return first_alone(rc, f);
  long long word = standin ? 0 : identity(call) << 1 | exiting;
  if (lmpio__agree_gathers(size)) return first_gather(comm, rank, size, rc, word, f, call);
  return first_reduce(comm, rank, size, rc, word, f, call);
}

int lmpio__agree_first(MPI_Comm comm, int rc, lmpio__first *f, const char *call) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  return lmpio__agree_first_of(comm, rank, size, rc, f, call);
}

int lmpio__agree_knows(const char *call) { return identity_of(call) % ID_SPAN <= NCALLS; }
const char *lmpio__agree_call(int i) { return i >= 0 && i < NCALLS ? calls[i].name : NULL; }
