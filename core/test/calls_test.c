/* The lists of the calls (lmpio.h's LMPIO_CALLS and LMPIO_CALLS_END,
 * calls.h's LMPIO__CALLS_FILE): every call (and a data access call's
 * large-count twin) is lmpio.h's with the parameters the list gives it (a
 * mismatch does not compile); the first agreement knows exactly the
 * collective ones by name; each data access call counts once, under the
 * statistics its kind names. */
#include "testlib.h"
#include "internals.h"
#include "calls.h"

/* Each call's pointer, taken through a pointer to the list's prototype. */
#define PROTO(name, pointer, coll, form, dir)                                                   \
  {                                                                                              \
    int(*f) LMPIO__CALL_PARAMS(lmpio_file, int, pointer, form, dir) = lmpio_file_##name;         \
    int(*fc) LMPIO__CALL_PARAMS(lmpio_file, MPI_Count, pointer, form, dir) = lmpio_file_##name##_c; \
    TL_CHECK(f != NULL && fc != NULL);                                                           \
    n++;                                                                                         \
  }
#define PROTO_END(name, pointer, coll, form, dir)                             \
  {                                                                            \
    int(*f) LMPIO__CALL_END_PARAMS(lmpio_file, dir) = lmpio_file_##name;       \
    TL_CHECK(f != NULL);                                                       \
    nend++;                                                                    \
  }
#define PROTO_FILE(name, coll, params, args)                                   \
  {                                                                            \
    int(*f) LMPIO__FILE_CALL_PARAMS(lmpio_file, params) = lmpio_file_##name;   \
    TL_CHECK(f != NULL);                                                       \
    nfile++;                                                                   \
  }
#define PROTO_BARE(name, coll)                                                 \
  {                                                                            \
    int (*f)(lmpio_file fh) = lmpio_file_##name;                               \
    TL_CHECK(f != NULL);                                                       \
    nfile++;                                                                   \
  }

static void test_prototypes(void) {
  int n = 0, nend = 0, nfile = 0;
  LMPIO_CALLS(PROTO)
  LMPIO_CALLS_END(PROTO_END)
  LMPIO__CALLS_FILE(PROTO_FILE, PROTO_BARE)
  TL_EQ(n, 28);
  TL_EQ(nend, 6);
  TL_EQ(nfile, 18);
}

/* The names of the lists' collective calls: every call that takes a count
 * and is not INDEP (a split collective's _begin matches the ranks; its _end
 * does not), the file calls marked COLL, close, and lmpio's own
 * read_records_ordered. */
#define IS_COLL_INDEP 0
#define IS_COLL_COLL 1
#define IS_COLL_ORDERED 1
#define NAME_IF_COLL(name, pointer, coll, form, dir) \
  if (IS_COLL_##coll) names[n++] = #name;
#define NAME_IF_COLL_FILE(name, coll, ...) \
  if (IS_COLL_##coll) names[n++] = #name;
#define NAME_OF(name, ...) all[nall++] = #name;

static int collective_names(const char **names) {
  int n = 0;
  LMPIO_CALLS(NAME_IF_COLL)
  LMPIO__CALLS_FILE(NAME_IF_COLL_FILE, NAME_IF_COLL_FILE)
  names[n++] = "close";
  names[n++] = "read_records_ordered";
  return n;
}

static int listed(const char *name, const char **names, int n) {
  for (int i = 0; i < n; i++)
    if (strcmp(names[i], name) == 0) return 1;
  return 0;
}

static void test_agreement_knows_them(void) {
  const char *names[64], *all[64];
  int n = collective_names(names), nall = 0;
  for (int i = 0; i < n; i++) {
    char full[64], twin[64];
    snprintf(full, sizeof full, "lmpio_file_%s", names[i]);
    snprintf(twin, sizeof twin, "lmpio_file_%s_c", names[i]);
    TL_CHECK(lmpio__agree_knows(full));
    TL_CHECK(lmpio__agree_knows(twin));
  }
  /* ...and nothing else: each name of its table is a collective call of
   * the lists, and no independent call is known. */
  int known = 0;
  for (const char *name; (name = lmpio__agree_call(known)) != NULL; known++) {
    if (!listed(name, names, n)) printf("# the agreement knows %s, not a collective call of the lists\n", name);
    TL_CHECK(listed(name, names, n));
  }
  TL_EQ(known, n);
  LMPIO_CALLS(NAME_OF)
  LMPIO_CALLS_END(NAME_OF)
  LMPIO__CALLS_FILE(NAME_OF, NAME_OF)
  for (int i = 0; i < nall; i++) {
    char full[64];
    snprintf(full, sizeof full, "lmpio_file_%s", all[i]);
    TL_CHECK(listed(all[i], names, n) == lmpio__agree_knows(full));
  }
  TL_CHECK(!lmpio__agree_knows("lmpio_file_no_such_call"));
}

/* ---- statistics: which public counters a call of the list adds to ------- */

enum { EXPLICIT, INDIVIDUAL, SHARED };
enum { INDEP, COLL, ORDERED };
enum { BLOCKING, NONBLOCKING, BEGIN };
enum { READ, WRITE };

/* The call counters (Darshan's MPIIO_*_READS/WRITES and lmpio's own). */
static const char *const counters[] = {
    "MPIIO_INDEP_READS", "MPIIO_INDEP_WRITES", "MPIIO_COLL_READS",     "MPIIO_COLL_WRITES",
    "MPIIO_SPLIT_READS", "MPIIO_SPLIT_WRITES", "MPIIO_NB_READS",       "MPIIO_NB_WRITES",
    "LMPIO_SHARED_READS", "LMPIO_SHARED_WRITES", "LMPIO_ORDERED_READS", "LMPIO_ORDERED_WRITES",
};
#define NCOUNTERS ((int)(sizeof counters / sizeof counters[0]))

/* Whether a call of this kind adds one to counter c: a split collective's
 * _begin counts as split, a nonblocking call as nonblocking, a shared one
 * also as independent, an ordered one also as collective. */
static int counts_under(int c, int pointer, int coll, int form, int dir) {
  const char *name = counters[c];
  int writes = strstr(name, "WRITES") != NULL;
  if (writes != (dir == WRITE)) return 0;
  if (form == BEGIN) return strstr(name, "SPLIT") != NULL;
  if (form == NONBLOCKING) return strstr(name, "_NB_") != NULL;
  if (strstr(name, "INDEP")) return coll == INDEP;
  if (strstr(name, "COLL")) return coll != INDEP;
  if (strstr(name, "SHARED")) return pointer == SHARED && coll == INDEP;
  if (strstr(name, "ORDERED")) return coll == ORDERED;
  return 0;
}

/* Calls a data access call of the list with one byte, and completes it
 * (a request's wait, a split collective's _end). */
#define CALL_ARGS_EXPLICIT fh, 0,
#define CALL_ARGS_INDIVIDUAL fh,
#define CALL_ARGS_SHARED fh,
#define CALL_TAIL_BLOCKING , MPI_STATUS_IGNORE
#define CALL_TAIL_NONBLOCKING , &req
#define CALL_TAIL_BEGIN
#define END_OF_BEGIN(name) name##_end
#define RUN(name, pointer, coll, form, dir)                                                          \
  if (strcmp(#name, which) == 0) {                                                                   \
    MPI_Request req = MPI_REQUEST_NULL;                                                              \
    TL_OK(lmpio_file_##name(CALL_ARGS_##pointer byte, 1, MPI_BYTE CALL_TAIL_##form));                 \
    if (req != MPI_REQUEST_NULL) TL_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));                            \
    if (form == BEGIN) TL_OK(end_split(fh, #name, byte));                                            \
    *pointer_out = pointer, *coll_out = coll, *form_out = form, *dir_out = dir;                      \
  }

/* The _end of a split collective begun by the call named begun. */
#define END_IF(name, pointer, coll, form, dir) \
  if (strcmp(#name, end) == 0) rc = lmpio_file_##name(fh, byte, MPI_STATUS_IGNORE);
static int end_split(lmpio_file fh, const char *begun, char *byte) {
  char end[64];
  snprintf(end, sizeof end, "%.*s_end", (int)(strlen(begun) - strlen("_begin")), begun);
  int rc = MPI_ERR_OTHER;
  LMPIO_CALLS_END(END_IF)
  return rc;
}

static void run_call(lmpio_file fh, const char *which, char *byte, int *pointer_out, int *coll_out, int *form_out,
                     int *dir_out) {
  LMPIO_CALLS(RUN)
}

#define NAME_OF_CALL(name, ...) calls[ncalls++] = #name;

static void test_statistics_count_each_call_under_its_kind(void) {
  char *path = tl_path("calls");
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  char bytes[4] = {'a', 'b', 'c', 'd'};
  TL_OK(lmpio_file_write_at_all(fh, 0, bytes, 4, MPI_BYTE, MPI_STATUS_IGNORE)); /* something to read */
  const char *calls[64];
  int ncalls = 0;
  LMPIO_CALLS(NAME_OF_CALL)
  for (int i = 0; i < ncalls; i++) {
    double before[NCOUNTERS], after[NCOUNTERS];
    for (int c = 0; c < NCOUNTERS; c++) {
      before[c] = tl_stat(fh, counters[c]);
      TL_CHECK(before[c] >= 0); /* a statistic of that name */
    }
    int pointer = -1, coll = -1, form = -1, dir = -1;
    char byte = 'x';
    run_call(fh, calls[i], &byte, &pointer, &coll, &form, &dir);
    for (int c = 0; c < NCOUNTERS; c++) {
      after[c] = tl_stat(fh, counters[c]);
      double want = before[c] + counts_under(c, pointer, coll, form, dir);
      if (after[c] != want) printf("# %s: %s went from %g to %g\n", calls[i], counters[c], before[c], after[c]);
      TL_CHECK(after[c] == want);
    }
  }
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

int main(int argc, char **argv) {
  tl_init(&argc, &argv);
  tl_run("calls: every call of the lists (and a data call's _c twin) has the list's parameters", test_prototypes);
  tl_run("calls: the first agreement knows exactly the collective calls of the lists", test_agreement_knows_them);
  tl_run("calls: each data access call counts once, under the statistics of its kind",
         test_statistics_count_each_call_under_its_kind);
  return tl_finish();
}
