/* The counting layer of bench/scale_bench.c: what this rank hands to MPI
 * while a pattern runs.  Every point-to-point send, one-sided put/get and
 * collective that a file library can call is defined here twice, as MPI_X
 * and as PMPI_X: the program's own definitions come first in the dynamic
 * symbol lookup, so they see the calls of liblmpio-mpi.so (which calls
 * MPI_X) and of Open MPI's ROMIO (mca_io_romio321.so calls PMPI_X), count
 * them, and pass them on to the library's PMPI_X (dlsym RTLD_NEXT).  OMPIO
 * calls Open MPI's collectives and point-to-point layer from inside the
 * library, past both names: its traffic is not seen here.
 *
 * Why not MPI_T: Open MPI 4.1.4's monitoring (--mca pml_monitoring_enable 1)
 * leaves pml_monitoring_messages_count/size invalid once MPI_Init has closed
 * the pml components (MPI_T_pvar_get_info returns MPI_T_ERR_INVALID, open-mpi
 * issue 9260; no finalize output either), and its osc interposer makes
 * MPI_Win_shared_query fail on a shared window (MPI_ERR_RMA_FLAVOR), which
 * lmpio needs.
 *
 * Counted: msgs and msg_bytes, point-to-point sends and puts/gets (their
 * payload); colls, collective calls (communicator and window creation
 * included), and coll_bytes, the larger of what the call takes from and
 * leaves in this rank's buffers (an allgather of k bytes: P*k).  What a
 * collective costs on the wire depends on Open MPI's algorithm (tuned: a
 * barrier, bcast or allreduce of a few bytes is O(log P) messages a rank). */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static struct {
  unsigned long long msgs, msg_bytes, colls, coll_bytes;
} scale_count;

static void *scale_real(const char *name) {
  void *f = dlsym(RTLD_NEXT, name);
  if (!f) {
    fprintf(stderr, "scale_bench: no %s after the counting layer\n", name);
    abort();
  }
  return f;
}

static long long sc_bytes(MPI_Datatype t, long long n) {
  int s = 0;
  if (t == MPI_DATATYPE_NULL || PMPI_Type_size(t, &s) != MPI_SUCCESS) return 0;
  return (long long)s * n;
}
static int sc_size(MPI_Comm c) {
  int s = 1;
  PMPI_Comm_size(c, &s);
  return s;
}
static int sc_rank(MPI_Comm c) {
  int r = 0;
  PMPI_Comm_rank(c, &r);
  return r;
}
static long long sc_sum(const int *v, MPI_Comm c) {
  long long s = 0;
  for (int i = 0, n = sc_size(c); v && i < n; i++) s += v[i];
  return s;
}
static long long sc_max(long long a, long long b) { return a > b ? a : b; }
/* alltoallw: the larger of what goes out and what comes in */
static long long sc_w(const void *s, const int *sn, const MPI_Datatype *st, const int *rn, const MPI_Datatype *rt,
                      MPI_Comm c) {
  long long out = 0, in = 0;
  for (int i = 0, p = sc_size(c); i < p; i++) {
    if (s != MPI_IN_PLACE) out += sc_bytes(st[i], sn[i]);
    in += sc_bytes(rt[i], rn[i]);
  }
  return sc_max(out, in);
}
static void sc_msg(long long b) {
  scale_count.msgs++;
  scale_count.msg_bytes += (unsigned long long)b;
}
static void sc_coll(long long b) {
  scale_count.colls++;
  scale_count.coll_bytes += (unsigned long long)b;
}

/* LMPIO_SCALE_TRACE=1: every counted call's name on stderr, with the
 * process id (which calls a pattern makes; not for timing). */
static void scale_trace(const char *name) {
  static int on = -1;
  if (on < 0) {
    const char *e = getenv("LMPIO_SCALE_TRACE");
    on = e && *e && e[0] != '0';
  }
  if (on) fprintf(stderr, "scale_trace %d MPI_%s\n", (int)getpid(), name);
}

/* X counted by STMT, then passed to the real PMPI_X. */
#define SCALE_WRAP(X, PARAMS, ARGS, STMT)                             \
  static int (*scale_real_##X) PARAMS;                                \
  static int scale_##X PARAMS {                                       \
    STMT;                                                             \
    scale_trace(#X);                                                  \
    if (!scale_real_##X) scale_real_##X = (int(*) PARAMS)scale_real("PMPI_" #X); \
    return scale_real_##X ARGS;                                       \
  }                                                                   \
  int MPI_##X PARAMS { return scale_##X ARGS; }                       \
  int PMPI_##X PARAMS { return scale_##X ARGS; }

SCALE_WRAP(Send, (const void *b, int n, MPI_Datatype t, int to, int tag, MPI_Comm c), (b, n, t, to, tag, c),
           sc_msg(sc_bytes(t, n)))
SCALE_WRAP(Isend, (const void *b, int n, MPI_Datatype t, int to, int tag, MPI_Comm c, MPI_Request *r),
           (b, n, t, to, tag, c, r), sc_msg(sc_bytes(t, n)))
SCALE_WRAP(Issend, (const void *b, int n, MPI_Datatype t, int to, int tag, MPI_Comm c, MPI_Request *r),
           (b, n, t, to, tag, c, r), sc_msg(sc_bytes(t, n)))
SCALE_WRAP(Ssend, (const void *b, int n, MPI_Datatype t, int to, int tag, MPI_Comm c), (b, n, t, to, tag, c),
           sc_msg(sc_bytes(t, n)))
SCALE_WRAP(Put,
           (const void *o, int on, MPI_Datatype ot, int tr, MPI_Aint td, int tn, MPI_Datatype tt, MPI_Win w),
           (o, on, ot, tr, td, tn, tt, w), sc_msg(sc_bytes(ot, on)))
SCALE_WRAP(Get, (void *o, int on, MPI_Datatype ot, int tr, MPI_Aint td, int tn, MPI_Datatype tt, MPI_Win w),
           (o, on, ot, tr, td, tn, tt, w), sc_msg(sc_bytes(ot, on)))

SCALE_WRAP(Barrier, (MPI_Comm c), (c), sc_coll(0))
SCALE_WRAP(Bcast, (void *b, int n, MPI_Datatype t, int root, MPI_Comm c), (b, n, t, root, c),
           sc_coll(sc_bytes(t, n)))
SCALE_WRAP(Reduce, (const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c),
           (s, r, n, t, op, root, c), sc_coll(sc_bytes(t, n)))
SCALE_WRAP(Allreduce, (const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c), (s, r, n, t, op, c),
           sc_coll(sc_bytes(t, n)))
SCALE_WRAP(Exscan, (const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c), (s, r, n, t, op, c),
           sc_coll(sc_bytes(t, n)))
SCALE_WRAP(Allgather, (const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm c),
           (s, sn, st, r, rn, rt, c), sc_coll(sc_bytes(rt, (long long)rn * sc_size(c))))
SCALE_WRAP(Allgatherv,
           (const void *s, int sn, MPI_Datatype st, void *r, const int *rn, const int *rd, MPI_Datatype rt,
            MPI_Comm c),
           (s, sn, st, r, rn, rd, rt, c), sc_coll(sc_bytes(rt, sc_sum(rn, c))))
SCALE_WRAP(Alltoall, (const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm c),
           (s, sn, st, r, rn, rt, c), sc_coll(sc_bytes(rt, (long long)rn * sc_size(c))))
SCALE_WRAP(Ialltoall,
           (const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm c, MPI_Request *q),
           (s, sn, st, r, rn, rt, c, q), sc_coll(sc_bytes(rt, (long long)rn * sc_size(c))))
SCALE_WRAP(Alltoallv,
           (const void *s, const int *sn, const int *sd, MPI_Datatype st, void *r, const int *rn, const int *rd,
            MPI_Datatype rt, MPI_Comm c),
           (s, sn, sd, st, r, rn, rd, rt, c),
           sc_coll(sc_max(s == MPI_IN_PLACE ? 0 : sc_bytes(st, sc_sum(sn, c)), sc_bytes(rt, sc_sum(rn, c)))))
SCALE_WRAP(Alltoallw,
           (const void *s, const int *sn, const int *sd, const MPI_Datatype *st, void *r, const int *rn,
            const int *rd, const MPI_Datatype *rt, MPI_Comm c),
           (s, sn, sd, st, r, rn, rd, rt, c), sc_coll(sc_w(s, sn, st, rn, rt, c)))
SCALE_WRAP(Gather,
           (const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, int root, MPI_Comm c),
           (s, sn, st, r, rn, rt, root, c),
           sc_coll(sc_rank(c) == root ? sc_bytes(rt, (long long)rn * sc_size(c)) : sc_bytes(st, sn)))
SCALE_WRAP(Gatherv,
           (const void *s, int sn, MPI_Datatype st, void *r, const int *rn, const int *rd, MPI_Datatype rt,
            int root, MPI_Comm c),
           (s, sn, st, r, rn, rd, rt, root, c),
           sc_coll(sc_rank(c) == root ? sc_bytes(rt, sc_sum(rn, c)) : sc_bytes(st, sn)))
SCALE_WRAP(Comm_dup, (MPI_Comm c, MPI_Comm *n), (c, n), sc_coll(0))
SCALE_WRAP(Comm_idup, (MPI_Comm c, MPI_Comm *n, MPI_Request *q), (c, n, q), sc_coll(0))
SCALE_WRAP(Comm_split, (MPI_Comm c, int color, int key, MPI_Comm *n), (c, color, key, n), sc_coll(0))
SCALE_WRAP(Comm_split_type, (MPI_Comm c, int type, int key, MPI_Info i, MPI_Comm *n), (c, type, key, i, n),
           sc_coll(0))
SCALE_WRAP(Win_allocate_shared, (MPI_Aint sz, int du, MPI_Info i, MPI_Comm c, void *b, MPI_Win *w),
           (sz, du, i, c, b, w), sc_coll(0))
SCALE_WRAP(Win_create, (void *b, MPI_Aint sz, int du, MPI_Info i, MPI_Comm c, MPI_Win *w), (b, sz, du, i, c, w),
           sc_coll(0))
SCALE_WRAP(Win_free, (MPI_Win * w), (w), sc_coll(0))
