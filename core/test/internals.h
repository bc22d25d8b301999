/* The core's internal declarations, for the tests that reach below the
 * public API (every layer: run.h includes the ones below). */
#ifndef LMPIO_TEST_INTERNALS_H
#define LMPIO_TEST_INTERNALS_H
#include "run.h"
#endif
