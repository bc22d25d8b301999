/* The one agreement of collective calls: a collective call succeeds on every
 * rank or fails on every rank with the same class and the same message (those
 * of the lowest failing rank).  One MPI_Allreduce carries each rank's outcome,
 * the values that must match, and values to reduce; a broadcast of the class
 * and message follows only when some rank failed. */
#include "internal.h"

#include <stdio.h>
#include <string.h>

#define MAX_VALUES 16
#define MSG_MAX 1024

int lmpio__agree_values(MPI_Comm comm, int rc, const long long *same, int nsame,
                        const char *labels, long long *max, int nmax, const char *call) {
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
  } else if (MPI_Allreduce(v, r, n, MPI_LONG_LONG, MPI_MAX, comm) != MPI_SUCCESS) {
    return lmpio__err(MPI_ERR_OTHER, call, "agreement between ranks failed");
  }
  for (int i = 0; i < nmax; i++) max[i] = r[1 + 2 * nsame + i];
  if (r[0] > 0) {
    int root = size - (int)r[0];
    if (size == 1) return rc;
    struct { int rc; char msg[MSG_MAX]; } m;
    m.rc = rc;
    if (rank == root) snprintf(m.msg, sizeof m.msg, "%s", lmpio_last_error_message());
    MPI_Bcast(&m, (int)sizeof m, MPI_BYTE, root, comm);
    /* The class of the lowest failing rank, on every rank, and a message
     * that names that class: a rank that failed the same way keeps its own
     * (it names this rank), any other takes the lowest failing rank's. */
    m.msg[MSG_MAX - 1] = '\0';
    if (rc != m.rc) lmpio__err_set_message(m.msg);
    return m.rc;
  }
  for (int i = 0; i < nsame; i++)
    if (r[1 + i] != -r[1 + nsame + i]) {
      const char *label = labels ? labels : "values for an argument that must match";
      for (int k = 0; k < i && strchr(label, '|'); k++) label = strchr(label, '|') + 1;
      int len = (int)strcspn(label, "|");
      return lmpio__err(MPI_ERR_NOT_SAME, call, "ranks passed different %.*s", len, label);
    }
  return MPI_SUCCESS;
}

int lmpio__agree(MPI_Comm comm, int rc, long long same, const char *call) {
  return lmpio__agree_values(comm, rc, &same, 1, NULL, NULL, 0, call);
}
