/* The list of the data access calls (core/src/calls.h): every call and its
 * large-count twin is lmpio.h's with the parameters the list gives it (a
 * mismatch does not compile), and the first agreement knows every
 * collective one by name. */
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

static void test_prototypes(void) {
  int n = 0;
  LMPIO__CALLS(PROTO)
  TL_EQ(n, 28);
}

#define IS_COLL_INDEP 0
#define IS_COLL_COLL 1
#define IS_COLL_ORDERED 1
#define KNOWN(name, pointer, coll, form, dir)                                                   \
  if (IS_COLL_##coll) {                                                                          \
    TL_CHECK(lmpio__agree_knows("lmpio_file_" #name));                                           \
    TL_CHECK(lmpio__agree_knows("lmpio_file_" #name "_c"));                                      \
  }

static void test_agreement_knows_them(void) {
  LMPIO__CALLS(KNOWN)
  TL_CHECK(!lmpio__agree_knows("lmpio_file_no_such_call"));
}

int main(int argc, char **argv) {
  tl_init(&argc, &argv);
  (void)tl_path; /* no files here */
  (void)tl_unlink;
  tl_run("calls: every call of the list and its _c twin have the list's parameters", test_prototypes);
  tl_run("calls: the first agreement knows every collective call of the list", test_agreement_knows_them);
  return tl_finish();
}
