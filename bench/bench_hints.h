/* The hints of a bench's opens from the environment: VAR="key=value,..."
 * (LMPIO_BENCH_HINTS, LMPIO_BENCH_INFO) as an MPI_Info, the same for lmpio
 * and the MPI library's MPI-IO; MPI_INFO_NULL when VAR is unset or empty.
 * A pair without '=' is skipped and counted in *skipped (when skipped
 * is not NULL), for a bench that refuses it. */
#ifndef LMPIO_BENCH_HINTS_H
#define LMPIO_BENCH_HINTS_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline MPI_Info bench_hints(const char *var, int *skipped) {
  const char *env = getenv(var);
  if (skipped) *skipped = 0;
  if (!env || !*env) return MPI_INFO_NULL;
  MPI_Info hints;
  MPI_Info_create(&hints);
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", env);
  for (char *save = NULL, *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(kv, '=');
    if (!eq) {
      if (skipped) (*skipped)++;
      continue;
    }
    *eq = '\0';
    MPI_Info_set(hints, kv, eq + 1);
  }
  return hints;
}

#endif
