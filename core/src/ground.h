/* The ground layer: error, agree and exchange, os, hints, stats, the
 * file-system drivers, nodes and the background workers.  Nothing here
 * knows the file handle, a view or a plan.  Cross-file names are
 * lmpio__<module>_<verb>; nothing here is exported. */
#ifndef LMPIO_GROUND_H
#define LMPIO_GROUND_H

#include "lmpio.h"
#include <stddef.h>
#include <stdint.h>

/* The direction of a transfer. */
enum { LMPIO__READ = 0, LMPIO__WRITE = 1 };

/* ---- error: classes and the per-thread detailed message ------------- */

/* Records the detailed message of a failure for this thread and returns cls.
 * The message says which call failed, then the formatted text and the rank. */
int lmpio__err(int cls, const char *call, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Replaces this thread's message (the agreement hands one rank's to all). */
void lmpio__err_set_message(const char *msg);
/* Collective entries call this first: rc, or the failure a binding asked for
 * with lmpio_fail_next_collective (then cleared). */
int lmpio__pending(int rc, const char *call);
/* The failure of a conversion or extent function of a user representation:
 * what, followed by the text the function gave (lmpio_conversion_error_detail,
 * per thread); _clear_detail before calling one, _detail sets the text. */
int lmpio__err_conversion(int cls, const char *call, const char *what);
void lmpio__err_clear_detail(void);
void lmpio__err_detail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Conversion and extent functions of user data representations running on
 * this thread (transfer.c, typemap.c count them in and out): the standard
 * makes a collective call from one erroneous, and such a call meets no
 * other rank (each converts its own data, as often as its data needs), so
 * every agreement refuses it at once on this rank (lmpio__agree_refuses). */
void lmpio__err_converting(int delta);
int lmpio__err_in_conversion(void);


/* ---- watch: long waits reported (watch.c) ----------------------------- */

/* Around a conversion or extent function of a user representation (the
 * binding's code, perhaps run inside a watched call, e.g. by MPI_Wait): no
 * report reads this thread's place until the resume; the wait counts on. */
void lmpio__watch_pause(void);
void lmpio__watch_resume(void);

/* ---- agree: the one agreement of collective calls (agree.c) ---------- */

/* Every rank passes its own outcome rc, nsame values that must be equal on
 * every rank, and nmax values that are reduced by MAX in place.  Returns on
 * every rank the class and message of the lowest failing rank; when no rank
 * failed but a value of `same` differs, MPI_ERR_NOT_SAME saying the ranks
 * passed different <label>: labels holds one label per value of same,
 * separated by '|' (the last one serves the values past it). */
int lmpio__agree_values(MPI_Comm comm, int rc, const long long *same, int nsame,
                        const char *labels, long long *max, int nmax, const char *call);
/* The same with one value that must match (0 on every rank: none). */
int lmpio__agree(MPI_Comm comm, int rc, long long same, const char *call);

/* The first exchange of every collective call on a file, before any other
 * communication of the call on the file's communicators: the agreement
 * above (same, labels, max: at most 8 each) plus values summed over the
 * ranks (sum: at most 2) and values of each rank (mine) gathered into
 * table (size * nmine, the caller's) when the exchange gathers
 * (lmpio__agree_gathers: then *gathered is set); nsame + nmax + nsum +
 * nmine <= 16.  It carries the identity of the call (from `call`, its
 * large-count form the same): ranks in different calls all fail with
 * MPI_ERR_NOT_SAME, the message naming both calls and ranks.  f may be
 * NULL: nothing but the outcome and the identity. */
typedef struct {
  const long long *same;
  int nsame;
  const char *labels;
  long long *max;
  int nmax;
  long long *sum;
  int nsum;
  const long long *mine;
  int nmine;
  long long *table;
  int gathered;
} lmpio__first;
int lmpio__agree_first(MPI_Comm comm, int rc, lmpio__first *f, const char *call);
/* The same, by a caller that knows its rank in comm and comm's size (the
 * collective calls: asking MPI was a tenth of a small call at 1 rank). */
int lmpio__agree_first_of(MPI_Comm comm, int rank, int size, int rc, lmpio__first *f, const char *call);
/* Whether call is one the first agreement tells apart by name, and the
 * name of the i-th it knows (NULL past the last): calls_test checks them
 * against the lists of calls.h. */
int lmpio__agree_knows(const char *call);
const char *lmpio__agree_call(int i);

/* 0, or MPI_ERR_OTHER when a conversion function runs on this thread
 * (lmpio__err_in_conversion): an agreement refuses the call at once. */
int lmpio__agree_refuses(const char *call);
/* Whether the first exchange among size ranks gathers every rank's values. */
int lmpio__agree_gathers(int size);
/* exchange.c: every rank's n values to every rank (all: size * n), through
 * shared memory when comm has it attached, else MPI_Allgather. */
int lmpio__exchange(MPI_Comm comm, const long long *mine, int n, long long *all);
/* Prepares comm's exchanges (not collective); from its 128th exchange on
 * (LMPIO_SHM_AGREEMENT_AT), they go through shared memory when every rank
 * is on one node.  Detach (collective) before freeing comm. */
int lmpio__exchange_attach(MPI_Comm comm);
void lmpio__exchange_detach(MPI_Comm comm);
/* gate.c: direct writes of a handle whose views have holes without their
 * byte-range lock, while no sieve of the handle is under way (and other
 * handles' sieves on the file go piece by piece).  open: mem is
 * lmpio__gate_bytes(size) zeroed bytes every rank of the handle maps, fd
 * the rank's descriptor of the data file, id the same on every rank and
 * unique per open; NULL: no gate (take the locks).  direct_begin: 1 when
 * the write may go without its lock (then direct_end after it), 0 when it
 * takes its lock.  sieve_begin (g may be NULL: another handle's sieve on a
 * local file system): 1 when the window may be sieved (then sieve_end
 * after it), 0 when its pieces go one by one. */
typedef struct lmpio__gate lmpio__gate;
size_t lmpio__gate_bytes(int size);
lmpio__gate *lmpio__gate_open(void *mem, int rank, int size, int fd, unsigned long long id);
void lmpio__gate_close(lmpio__gate *g);
int lmpio__gate_direct_begin(lmpio__gate *g);
void lmpio__gate_direct_end(lmpio__gate *g);
int lmpio__gate_sieve_begin(lmpio__gate *g, int fd);
void lmpio__gate_sieve_end(lmpio__gate *g, int fd);
/* handle_comm.c: the communicator of a file handle, a duplicate of comm.
 * idle: this rank has one kept on comm from a closed handle (not
 * collective: the caller agrees that every rank has before reuse=1).
 * take (collective when it duplicates): the kept one when reuse, else a
 * new one (kept on comm at release when none is yet); *slot for release.
 * release: kept for the next open, or freed (detached and freed). */
int lmpio__handle_comm_idle(MPI_Comm comm);
int lmpio__handle_comm_take(MPI_Comm comm, int reuse, MPI_Comm *dup, void **slot);
void lmpio__handle_comm_release(MPI_Comm *dup, void *slot);
/* A mapped page and its descriptor kept with slot's communicator (the
 * shared pointer's helper, pointer.c): page says whether there is one
 * (take: and hands it over); keep_page hands one to slot (1), or declines
 * (0: one is kept already, or none can be); unmapped and closed with the
 * communicator. */
int lmpio__handle_comm_page(void *slot, int take, void **page, int *fd);
int lmpio__handle_comm_keep_page(void *slot, void *page, size_t len, int fd);
/* Whether comm's exchanges go through its shared segment now (tests). */
int lmpio__exchange_shared(MPI_Comm comm);
/* The first rank's records in comm's segment, NULL without one (tests:
 * they start on a cache line). */
const void *lmpio__exchange_records(MPI_Comm comm);
/* The element-wise MAX of every rank's n values (MPI_Allreduce's). */
int lmpio__exchange_max(MPI_Comm comm, const long long *mine, int n, long long *max);
/* error.c: whether this thread's last lmpio__pending handed out a binding's
 * failure (the call stands in for one that failed before it began); cleared. */
int lmpio__take_standin(void);
/* Marks this thread's next first agreement as such a stand-in (a job run
 * for a call initiated on another thread). */
void lmpio__set_standin(void);
/* Keeps the object holding the core loaded until the process ends: called
 * before starting a thread or installing a signal handler (resident.c). */
void lmpio__stay_loaded(void);


#include "os.h"
#include "hints.h"
#include "stats.h"
#include "driver.h"

/* ---- nodes: where the ranks run, and the aggregators (nodes.c) --------- */

/* The nodes of a communicator's ranks, numbered in the order of their
 * lowest rank. */
typedef struct {
  int size, nnodes;
  int *node_of;   /* [size]: the node of each rank */
  int *first;     /* [nnodes + 1]: node j's ranks are by_node[first[j] .. first[j + 1]) */
  int *by_node;   /* [size]: ranks grouped by node, ascending within each */
  int *name_at;   /* [nnodes]: where node j's processor name starts in names */
  char *names;
} lmpio__nodes;

/* Finds the layout of comm's ranks (collective, agreed): nodes by
 * MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), named by MPI_Get_processor_name;
 * or as the environment variable LMPIO_TEST_NODES says (tests only). */
int lmpio__nodes_find(MPI_Comm comm, lmpio__nodes *n, const char *call);
/* The layout of size ranks: leader[r] the lowest rank of r's node (NULL:
 * ranks with equal names share a node); rank r's name at names + name_at[r]
 * (needed for the leaders only).  Pure; -1 when out of memory. */
int lmpio__nodes_build(lmpio__nodes *n, int size, const int *leader, const char *names, const int *name_at);
void lmpio__nodes_free(lmpio__nodes *n);
/* The layout kept on a communicator by lmpio__nodes_keep (an attribute,
 * dropped with it), or NULL; and a copy of one (-1: out of memory).  Not
 * collective: a caller agrees that every rank has one before using it. */
const lmpio__nodes *lmpio__nodes_kept(MPI_Comm comm);
int lmpio__nodes_copy(const lmpio__nodes *from, lmpio__nodes *to);
void lmpio__nodes_keep(MPI_Comm comm, const lmpio__nodes *n);
/* Whether list is a valid cb_config_list: 0, or -1. */
int lmpio__nodes_config_check(const char *list);
/* The cb_config_list in effect: list, or the default for the layout
 * ("*:1"; "*:*" on one node or when cb_nodes alone was given). */
const char *lmpio__nodes_list(const lmpio__nodes *n, const char *list, long long cb_nodes);
/* The aggregators for cb_config_list list ("" or NULL: the default) and
 * cb_nodes (0: not given), at most max: their ranks, ascending, into agg;
 * returns how many (at least 1), or -1 when out of memory.  Pure. */
int lmpio__nodes_aggregators(const lmpio__nodes *n, const char *list, long long cb_nodes, int *agg, int max);


/* ---- async: a handle's worker thread (async.c) ----------------------------- */

/* A transfer run in the background.  The layer above embeds it at the start
 * of its own record (allocated with malloc; async.c frees it when the worker
 * and the request, or the joiner, are both done with it) and sets run. */
enum { LMPIO__LANE_INDEPENDENT, LMPIO__LANE_COLLECTIVE };
typedef struct lmpio__job lmpio__job;
struct lmpio__job {
  int (*run)(lmpio__job *job); /* on the worker: returns the class, sets bytes */
  void (*dispose)(lmpio__job *job); /* or NULL: frees what the record holds, before it is freed */
  int lane;                    /* LMPIO__LANE_*: set before lmpio__async_submit */
  MPI_Count bytes;             /* data bytes moved, for the status */
  int rc;                      /* run's outcome */
  char msg[1024];              /* and its message when it failed */
  /* async.c's */
  lmpio__job *next;
  int refs, done;
  MPI_Request req;
};
/* A handle's workers, one per lane (or NULL), and what they need of the
 * handle: its descriptor, communicator and name (set at open).  The
 * handle embeds it; async.c sees nothing else of the handle. */
typedef struct lmpio__worker lmpio__worker;
typedef struct {
  lmpio__worker *lane[2];
  int fd;
  MPI_Comm comm;
  const char *path;
} lmpio__workers;
/* Whether jobs can run in the background: MPI_THREAD_MULTIPLE (and not
 * LMPIO_ASYNC=0 in the environment). */
int lmpio__async_available(void);
/* Gives the handle a worker in lane (the first time); then the caller may make the
 * job's generalized request (job->req; MPI_REQUEST_NULL: none) and queue
 * it with lmpio__async_submit, behind the lane's earlier jobs.  The worker
 * completes the request when the job has run; without a request, the caller
 * waits with lmpio__async_join and then calls lmpio__async_release.  A
 * request's free function calls lmpio__async_release. */
int lmpio__async_prepare(lmpio__workers *ws, int lane, const char *call);
void lmpio__async_submit(lmpio__workers *ws, lmpio__job *job);
/* The descriptor a job of the lane uses (prepared): one of the worker's own
 * when it could open one, else the handle's. */
int lmpio__async_fd(lmpio__workers *ws, int lane);
/* The communicator a collective job uses: a duplicate of the handle's, made by
 * the first call (collective); prepares the collective lane. */
int lmpio__async_comm(lmpio__workers *ws, MPI_Comm *comm, const char *call);
void lmpio__async_join(lmpio__workers *ws, lmpio__job *job);
/* One more reference to a submitted job (dropped with lmpio__async_release). */
void lmpio__async_retain(lmpio__job *job);
void lmpio__async_release(lmpio__job *job);
/* Until every job of the handle has run; _independent: every job of that lane
 * (which never waits for other ranks). */
void lmpio__async_wait(lmpio__workers *ws);
void lmpio__async_wait_lane(lmpio__workers *ws, int lane);
static inline void lmpio__async_wait_independent(lmpio__workers *ws) {
  /* (inline: every blocking call waits, and most handles have no worker) */
  if (ws->lane[LMPIO__LANE_INDEPENDENT]) lmpio__async_wait_lane(ws, LMPIO__LANE_INDEPENDENT);
}
/* Waits, then gives the workers back (close; collective when some
 * collective job ran). */
void lmpio__async_close(lmpio__workers *ws);


/* ---- arithmetic ----------------------------------------------------------- */

/* A string hash (FNV-1a, nonnegative) for checking that ranks passed the
 * same argument. */
static inline long long lmpio__hash(const char *s) {
  unsigned long long h = 1469598103934665603ULL;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return (long long)(h >> 2);
}
/* Checked arithmetic on sizes and offsets from user input: 0 on overflow. */
static inline int lmpio__mul_ok(MPI_Offset a, MPI_Offset b, MPI_Offset *r) {
  return !__builtin_mul_overflow(a, b, r);
}
static inline int lmpio__add_ok(MPI_Offset a, MPI_Offset b, MPI_Offset *r) {
  return !__builtin_add_overflow(a, b, r);
}

#endif
