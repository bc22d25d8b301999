/* The blocking collective calls (*_all); collrun.c runs them. */
#include "run.h"
#include "calls.h"

#define COLLECTIVE(name, pointer, coll, form, dir, C, sfx)                                               \
  int lmpio_file_##name##sfx LMPIO__CALL_PARAMS(lmpio_file, C, pointer, form, dir) {                       \
    lmpio__stats *st = fh ? fh->stats : NULL;                                                             \
    long long t0 = lmpio__stats_start(st);                                                                \
    int rc = lmpio__collective(fh, LMPIO__CALL_OFFSET_VALUE_##pointer, LMPIO__CALL_USE_FP_##pointer,      \
                               (void *)buf, count, datatype, LMPIO__##dir, status, MPI_SUCCESS,           \
                               "lmpio_file_" #name #sfx);                                                 \
    lmpio__stats_call(st, LMPIO__K_COLL, LMPIO__##dir, t0);                                               \
    return rc;                                                                                            \
  }
#define DEFINE(name, pointer, coll, form, dir) COLLECTIVE(name, pointer, coll, form, dir, int, )
#define DEFINE_C(name, pointer, coll, form, dir) COLLECTIVE(name, pointer, coll, form, dir, MPI_Count, _c)
LMPIO__CALLS_COLLECTIVE(DEFINE)
LMPIO__CALLS_COLLECTIVE(DEFINE_C)
