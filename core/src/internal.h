/* Declarations shared by the files of the core; nothing here is exported.
 * Cross-file names are lmpio__<module>_<verb>. */
#ifndef LMPIO_INTERNAL_H
#define LMPIO_INTERNAL_H

#include "lmpio.h"
#include <stddef.h>
#include <stdint.h>

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
/* Whether comm's exchanges go through its shared segment now (tests). */
int lmpio__exchange_shared(MPI_Comm comm);
/* The first rank's records in comm's segment, NULL without one (tests:
 * they start on a cache line). */
const void *lmpio__exchange_records(MPI_Comm comm);
/* Whether a rank waiting in comm's segment yields its processor soon
 * (the ranks have fewer processors than there are of them). */
int lmpio__exchange_yields(MPI_Comm comm);
/* The element-wise MAX of every rank's n values (MPI_Allreduce's). */
int lmpio__exchange_max(MPI_Comm comm, const long long *mine, int n, long long *max);
/* Whether this thread's last lmpio__pending handed out a binding's failure
 * (the call stands in for one that failed before it began); cleared. */
int lmpio__take_standin(void);
/* Marks this thread's next first agreement as such a stand-in (a job run
 * for a call initiated on another thread). */
void lmpio__set_standin(void);

#include "os.h"
#include "hints.h"
#include "stats.h"

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
/* Whether list is a valid cb_config_list: 0, or -1. */
int lmpio__nodes_config_check(const char *list);
/* The cb_config_list in effect: list, or the default for the layout
 * ("*:1"; "*:*" on one node or when cb_nodes alone was given). */
const char *lmpio__nodes_list(const lmpio__nodes *n, const char *list, long long cb_nodes);
/* The aggregators for cb_config_list list ("" or NULL: the default) and
 * cb_nodes (0: not given), at most max: their ranks, ascending, into agg;
 * returns how many (at least 1), or -1 when out of memory.  Pure. */
int lmpio__nodes_aggregators(const lmpio__nodes *n, const char *list, long long cb_nodes, int *agg, int max);

/* ---- typemap: flattened datatypes ----------------------------------- */

typedef struct lmpio__tm_node lmpio__tm_node;

enum { LMPIO__RUN_FLAT, LMPIO__RUN_ELEMS, LMPIO__RUN_NEST };

/* A run is `count` elements spaced `stride` bytes apart from `disp`; an
 * element is either one predefined item (child == NULL, basic says which) or
 * one instance of a child node.  kind caches how the cursor walks it:
 * FLAT: the whole run is one segment; ELEMS: each element is one segment;
 * NEST: descend into the child. */
typedef struct {
  MPI_Aint disp, stride;
  MPI_Count count;
  MPI_Count esize;       /* data bytes of one element (> 0) */
  MPI_Count size_before; /* data bytes of the runs before this one */
  MPI_Aint lo;           /* first data byte of an element, from its start */
  const lmpio__tm_node *child;
  MPI_Datatype basic;
  int kind;
} lmpio__tm_run;

struct lmpio__tm_node {
  int refs;
  int nruns;
  int depth;                  /* frames a cursor needs */
  lmpio__tm_run *runs;        /* only runs with data */
  MPI_Count size;             /* data bytes */
  MPI_Count nitems;           /* predefined items (typemap entries) */
  int full_depth;             /* frames a leaf cursor needs */
  MPI_Aint lb, extent;        /* as MPI defines them (markers, resized) */
  MPI_Aint data_lb, data_ub;  /* bounds of the data bytes (0, 0 if none) */
  int monotone;               /* data in nondecreasing, non-overlapping order */
  int nondecreasing;          /* displacements never decrease (data may overlap) */
  int contiguous;             /* one segment: monotone and size == data span */
  lmpio__tm_node **owned;     /* children released with this node */
  int nowned;
};

typedef struct lmpio__datarep lmpio__datarep;

/* Whether t is a predefined (named) type, which is never freed or duplicated. */
int lmpio__type_is_named(MPI_Datatype t);
/* The flattened form of a datatype, cached on it; release when done. */
int lmpio__typemap_get(MPI_Datatype type, const lmpio__tm_node **node, const char *call);
/* The same laid out in a file representation (rep NULL: native): predefined
 * types take the representation's extents and portable types are rebuilt
 * with them.  Not cached. */
int lmpio__typemap_get_rep(MPI_Datatype type, const lmpio__datarep *rep,
                           const lmpio__tm_node **node, const char *call);
/* File extent of a predefined type in rep (MPI_ERR_CONVERSION when the
 * extent function fails, MPI_ERR_TYPE when rep has no such type). */
int lmpio__typemap_extent(const lmpio__datarep *rep, MPI_Datatype basic, MPI_Aint *ext);
void lmpio__typemap_release(const lmpio__tm_node *node);
void lmpio__typemap_retain(const lmpio__tm_node *node);
/* Data bytes of one instance of a monotone node at offsets below x. */
MPI_Count lmpio__typemap_bytes_before(const lmpio__tm_node *n, MPI_Aint x);

/* A cursor walks the data segments of a node tiled forever with a given
 * extent (instance i at i * extent), coalescing adjacent segments. */
typedef struct {
  const lmpio__tm_node *node;
  int run;
  MPI_Count elem;
  MPI_Aint base;
} lmpio__frame;

typedef struct {
  const lmpio__tm_node *root;
  MPI_Aint extent;
  MPI_Count tile;
  int sp;
  lmpio__frame *st;
  lmpio__frame inline_st[16];
  MPI_Aint seg_off;
  MPI_Count seg_left;         /* bytes, or items for a leaf cursor */
  int leaves;                 /* walks predefined items, no coalescing */
  MPI_Datatype leaf_basic;
  MPI_Count leaf_esize;
} lmpio__cursor;

/* root must have size > 0.  Returns MPI_ERR_NO_MEM on allocation failure. */
int lmpio__cursor_init(lmpio__cursor *c, const lmpio__tm_node *root, MPI_Aint extent);
void lmpio__cursor_free(lmpio__cursor *c);
/* Positions the cursor at data byte pos of the tiled stream. */
void lmpio__cursor_seek(lmpio__cursor *c, MPI_Count pos);
/* The next (coalesced) segment, at most max bytes: returns its length, its
 * offset in *off.  Never runs out: the stream is tiled forever. */
MPI_Count lmpio__cursor_next(lmpio__cursor *c, MPI_Count max, MPI_Aint *off);
/* Offset of the next data byte without consuming it. */
MPI_Aint lmpio__cursor_peek(lmpio__cursor *c);
/* A leaf cursor walks the predefined items of the tiled node in typemap
 * order: each step gives up to max items of one predefined type that lie
 * back to back at *off.  Starts at item 0. */
int lmpio__cursor_init_leaves(lmpio__cursor *c, const lmpio__tm_node *root, MPI_Aint extent);
MPI_Count lmpio__cursor_next_leaf(lmpio__cursor *c, MPI_Count max, MPI_Aint *off,
                                  MPI_Datatype *basic, MPI_Count *esize);
/* The predefined type of the next leaf item, without consuming it. */
MPI_Datatype lmpio__cursor_peek_leaf(lmpio__cursor *c);

/* ---- datarep: the registry (datarep.c) -------------------------------- */

/* A registered representation.  Conversion functions take an int count
 * (MPI_Register_datarep) or an MPI_Count (the large-count form). */
struct lmpio__datarep {
  char name[MPI_MAX_DATAREP_STRING];
  MPI_Datarep_conversion_function *read_fn, *write_fn;
  lmpio_datarep_conversion_function_c *read_fn_c, *write_fn_c;
  int large;                 /* the _c functions are the ones to call */
  MPI_Datarep_extent_function *extent_fn;
  void *extra;
  int builtin;               /* external32 layout, converted by lmpio itself */
  struct lmpio__datarep *next;
};

/* Looks a representation up: *rep is NULL for "native".  Returns
 * MPI_ERR_UNSUPPORTED_DATAREP (with a message) for an unknown name. */
int lmpio__datarep_find(const char *name, const lmpio__datarep **rep, const char *call);

/* ---- view (view.c) ----------------------------------------------------- */

typedef struct {
  MPI_Offset disp;
  MPI_Datatype etype, filetype;  /* our own handles (dups of derived types) */
  char datarep[MPI_MAX_DATAREP_STRING];
  const lmpio__datarep *rep;     /* NULL for "native" */
  const lmpio__tm_node *ft;      /* laid out in the file's representation */
  MPI_Count esize;               /* etype size in bytes, in the file */
  MPI_Aint eextent;
  int contiguous;                /* data of the tiled filetype is one run */
  int empty;                     /* the filetype has no data: only count 0 works */
  /* Some rank's view of this file has holes (agreed by set_view), so some
   * rank may sieve writes (read-modify-write of a window with holes): every
   * direct write then takes a shared byte-range lock that such a sieve's
   * exclusive lock excludes.  Sieved writes always lock. */
  int any_holes;
} lmpio__view;

/* Validates and builds a view into *v (which holds nothing yet).  writable:
 * the file is open for writing (a filetype that overlaps itself is then
 * refused; reading through one is allowed). */
int lmpio__view_build(lmpio__view *v, MPI_Offset disp, MPI_Datatype etype,
                      MPI_Datatype filetype, const char *datarep, int writable, const char *call);
void lmpio__view_free(lmpio__view *v);
/* The view's parts as MPI_File_get_view returns them (new handles for
 * derived types). */
int lmpio__view_get(const lmpio__view *v, MPI_Offset *disp, MPI_Datatype *etype,
                    MPI_Datatype *filetype, char *datarep, const char *call);
/* Absolute byte offset of data byte pos of the view, or MPI_ERR_ARG when it
 * does not fit in an MPI_Offset. */
int lmpio__view_byte(const lmpio__view *v, MPI_Offset pos, MPI_Offset *byte, const char *call);
/* Data bytes of the view that lie before absolute byte offset x. */
MPI_Offset lmpio__view_data_before(const lmpio__view *v, MPI_Offset x);

#include "driver.h"
#include "filemap.h"
#include "plan.h"

/* ---- transfer: the one transfer routine and the conversions (transfer.c) - */

/* Moves count items of type between buf and the view of plan p at data byte
 * pos of the view, converting through the bounded staging buffer.  *bytes:
 * native data bytes moved; *file_bytes: file data bytes moved. */
int lmpio__convert(const lmpio__plan *p, MPI_Offset pos, void *buf, MPI_Count count,
                   MPI_Datatype type, MPI_Count *bytes, MPI_Offset *file_bytes, const char *call);
/* The same conversion with the file bytes in memory instead of the view:
 * a write converts into the len bytes at mem (the caller sizes them: the
 * data's size in the representation), a read converts from them (fewer
 * than the data's size: end of file there).  cap: the staging buffer's
 * size (hint lmpio_conversion_buffer_size). */
int lmpio__convert_memory(const lmpio__datarep *rep, int dir, MPI_Offset cap, char *mem, MPI_Offset len, void *buf,
                          MPI_Count count, MPI_Datatype type, MPI_Count *bytes, MPI_Offset *file_bytes,
                          const char *call);
/* Memory for the file bytes of a staged transfer (request.c), len bytes:
 * the last block freed is kept for the next; _trim gives it back (close). */
char *lmpio__transfer_stage_alloc(size_t len);
void lmpio__transfer_stage_free(char *p, size_t len);
void lmpio__transfer_trim(void);

/* ---- file handle ---------------------------------------------------- */

/* The split collective in progress (request.c): kind NONE when none. */
enum { LMPIO__SPLIT_NONE, LMPIO__SPLIT_READ_ORDERED, LMPIO__SPLIT_WRITE_ORDERED,
       LMPIO__SPLIT_READ_AT_ALL, LMPIO__SPLIT_WRITE_AT_ALL, LMPIO__SPLIT_READ_ALL,
       LMPIO__SPLIT_WRITE_ALL };
typedef struct lmpio__job lmpio__job;       /* async.c */
typedef struct {
  int kind;
  MPI_Count bytes;           /* for the status of _end */
  const void *buf;           /* _end must pass the same */
  lmpio__job *job;           /* the transfer running in the background, or NULL */
} lmpio__split;

typedef struct lmpio__shared lmpio__shared; /* shared.c */
typedef struct lmpio__worker lmpio__worker; /* async.c */
typedef struct lmpio__pipe lmpio__pipe;     /* stream.c */
typedef struct lmpio__records lmpio__records; /* records.c */
struct lmpio__records {
  MPI_Comm comm;
  char *carry; /* rank 0: the unfinished record, then room for the next chunk */
  MPI_Count carry_len, carry_cap;
  unsigned long long moves; /* lmpio__shared_moves after the last call's read */
};

struct lmpio_file_s {
  MPI_Comm comm;
  int rank, size;
  char *path;
  int fd;
  int amode;
  int fd_readable;          /* opened O_RDWR or O_RDONLY (sieving writes need it) */
  int fd_in_memory;         /* the file is on tmpfs/ramfs (os.c) */
  int one_node;             /* every rank on one node: one page cache for all */
  int coll_way[2];          /* per direction, 1 when the last multi-node collective call went two-phase
                             * (the next read's guess, collective.c); the same on every rank */
  lmpio__nodes nodes;       /* where the ranks run (found at open) */
  int naggr;                /* two-phase aggregators in effect (hints and nodes) */
  int aggr[LMPIO__MAX_AGGREGATORS]; /* their ranks, ascending (copied into collective plans) */
  MPI_Offset fs_block;      /* the file system's block size (agreed at open) */
  int atomic;
  int busy;                 /* calls in progress on this handle (close refuses) */
  lmpio__view view;
  MPI_Offset fp;            /* individual file pointer, in etypes */
  lmpio__hints hints;       /* in effect */
  lmpio__shared *shared;    /* the shared file pointer (shared.c) */
  lmpio__split split;       /* the split collective in progress (request.c) */
  lmpio__worker *async[2];  /* run the handle's nonblocking operations, one per lane (async.c), or NULL */
  const lmpio__driver *drv; /* the file system's operations (driver.h), chosen at open */
  char drv_why[256];        /* why that driver: for get_info */
  lmpio__pipe *pipe;        /* the stream driver's state (stream.c): only rank 0 has a descriptor; else NULL */
  lmpio__records *records;  /* read_records_ordered's state (records.c), or NULL */
  struct lmpio__xfer *requests; /* its requests' background jobs (request.c), until freed or closed */
  void (*requests_close)(lmpio_file fh); /* request.c's, set with the first request: close calls it */
  char unknown_hints[MPI_MAX_INFO_VAL + 1]; /* keys given that nobody knows (hints.c), for get_info */
  lmpio__stats *stats;      /* counters (stats.c); shared by the plans made of the handle; may be NULL */
  lmpio__filemap *map;      /* small accesses through a mapping (filemap.c); shared by the plans; may be NULL */
  /* The plans of the handle as it is, one per direction (LMPIO__READ,
   * LMPIO__WRITE), over comm: the blocking calls run them (lmpio__plan_of)
   * instead of building one per call.  Whatever changes a field that lmpio__plan_init
   * or lmpio__coll_plan_init reads calls lmpio__plan_refresh (open,
   * set_view, set_info, set_atomicity). */
  lmpio__coll_plan plans[2];
};

/* The plan a blocking call on fh runs in direction dir: the handle's own,
 * or, on a view that converts (its functions may change the handle during
 * the call, which still runs the view it started with), a copy made into
 * *own, which the caller frees (lmpio__plan_free, or
 * lmpio__coll_plan_free for _coll_). */
static inline const lmpio__plan *lmpio__plan_of(lmpio_file fh, int dir, lmpio__plan *own) {
  if (!fh->view.rep) return &fh->plans[dir].plan;
  lmpio__plan_init(own, fh, dir);
  return own;
}
static inline const lmpio__coll_plan *lmpio__coll_plan_of(lmpio_file fh, int dir, lmpio__coll_plan *own) {
  if (!fh->view.rep) return &fh->plans[dir];
  lmpio__coll_plan_init(own, fh, fh->comm, dir);
  return own;
}

/* ---- async: a handle's worker thread (async.c) ----------------------------- */

/* A transfer run in the background.  The layer above embeds it at the start
 * of its own record (allocated with malloc; async.c frees it when the worker
 * and the request, or the joiner, are both done with it) and sets run. */
enum { LMPIO__LANE_INDEPENDENT, LMPIO__LANE_COLLECTIVE };
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
/* Whether jobs can run in the background: MPI_THREAD_MULTIPLE (and not
 * LMPIO_ASYNC=0 in the environment). */
int lmpio__async_available(void);
/* Gives fh a worker in lane (the first time); then the caller may make the
 * job's generalized request (job->req; MPI_REQUEST_NULL: none) and queue
 * it with lmpio__async_submit, behind the lane's earlier jobs.  The worker
 * completes the request when the job has run; without a request, the caller
 * waits with lmpio__async_join and then calls lmpio__async_release.  A
 * request's free function calls lmpio__async_release. */
int lmpio__async_prepare(lmpio_file fh, int lane, const char *call);
void lmpio__async_submit(lmpio_file fh, lmpio__job *job);
/* The descriptor a job of the lane uses (prepared): one of the worker's own
 * when it could open one, else fh->fd. */
int lmpio__async_fd(lmpio_file fh, int lane);
/* The communicator a collective job uses: a duplicate of fh->comm, made by
 * the first call (collective); prepares the collective lane. */
int lmpio__async_comm(lmpio_file fh, MPI_Comm *comm, const char *call);
void lmpio__async_join(lmpio_file fh, lmpio__job *job);
/* One more reference to a submitted job (dropped with lmpio__async_release). */
void lmpio__async_retain(lmpio__job *job);
void lmpio__async_release(lmpio__job *job);
/* Until every job of fh has run; _independent: every job of that lane
 * (which never waits for other ranks). */
void lmpio__async_wait(lmpio_file fh);
void lmpio__async_wait_independent(lmpio_file fh);
/* Waits, then gives the workers back (close; collective when some
 * collective job ran). */
void lmpio__async_close(lmpio_file fh);

/* ---- entry: checks and pieces shared by the data access calls ------------ */

enum { LMPIO__READ = 0, LMPIO__WRITE = 1 };
/* Which file pointer a data access call uses. */
enum { LMPIO__EXPLICIT, LMPIO__INDIVIDUAL, LMPIO__SHARED };

/* Checks the arguments common to every data access call. */
int lmpio__check_access(lmpio_file fh, MPI_Count count, MPI_Datatype type, int dir, int pointer,
                        const char *call);
/* The same for items whose layout in the file is m (looked up once). */
int lmpio__etypes_of(lmpio_file fh, MPI_Count count, const lmpio__tm_node *m, MPI_Offset *n, const char *call);
/* Number of etypes that count items of type make in the view, or an error. */
int lmpio__count_etypes(lmpio_file fh, MPI_Count count, MPI_Datatype type, MPI_Offset *n,
                        const char *call);
/* Checks that n etypes from etype `offset` of view v have file offsets that
 * fit an MPI_Offset (MPI_ERR_COUNT, MPI_ERR_ARG); *pos: the data byte of offset. */
int lmpio__check_range(const lmpio__view *v, MPI_Offset offset, MPI_Offset n, MPI_Offset *pos, const char *call);
/* Moves count items of type between buf and the view at `offset` etypes
 * (plan, then the engine or the conversion driver).  *bytes: native data
 * bytes moved (short at end of file); *etypes: whole etypes they filled. */
int lmpio__access(lmpio_file fh, MPI_Offset offset, void *buf, MPI_Count count, MPI_Datatype type,
                  int dir, MPI_Count *bytes, MPI_Offset *etypes, const char *call);
/* Moves count items of type between buf and data bytes [pos,
 * ...) of p's view; *bytes: native data bytes moved (short at end of file),
 * *fbytes: the file data bytes they fill. */
int lmpio__transfer(const lmpio__plan *p, MPI_Offset pos, void *buf, MPI_Count count, MPI_Datatype type,
                    MPI_Count *bytes, MPI_Offset *fbytes, const char *call);
/* The same with type's native typemap m, which the caller holds (NULL: looked up). */
int lmpio__transfer_node(const lmpio__plan *p, MPI_Offset pos, void *buf, MPI_Count count, MPI_Datatype type,
                         const lmpio__tm_node *m, MPI_Count *bytes, MPI_Offset *fbytes, const char *call);
/* The blocking independent calls (explicit offset, or the individual pointer
 * when use_fp, which advances it). */
int lmpio__independent(lmpio_file fh, MPI_Offset offset, int use_fp, void *buf, MPI_Count count,
                       MPI_Datatype type, int dir, MPI_Status *status, const char *call);
void lmpio__set_status(MPI_Status *status, MPI_Count bytes);
/* A call in progress keeps its handle from being closed under it (by a
 * conversion function, say). */
static inline void lmpio__hold(lmpio_file fh) {
  /* A blocking call first lets the handle's independent background
   * transfers finish (they run in program order with it); only collective
   * calls also wait for the collective lane (lmpio__hold_all), which may
   * wait for ranks that have not started its jobs yet. */
  lmpio__async_wait_independent(fh);
  fh->busy++;
}
static inline void lmpio__hold_all(lmpio_file fh) {
  lmpio__async_wait(fh);
  fh->busy++;
}
static inline void lmpio__release(lmpio_file fh) { fh->busy--; }
/* The alignment of two-phase file domains: the hint striping_unit, else
 * the file system's block size. */
static inline MPI_Offset lmpio__fd_alignment(const struct lmpio_file_s *fh) {
  return fh->hints.striping_unit > 0 ? fh->hints.striping_unit : fh->fs_block;
}
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

/* ---- shared: the shared file pointer (shared.c) ------------------------ */

/* Called by open on every rank once the file is open (collective). */
int lmpio__shared_init(lmpio_file fh, MPI_Offset initial, const char *call);
/* Called by close after every rank closed the file. */
void lmpio__shared_free(lmpio_file fh);
/* Removes what a crashed job may have left of the pointer of file path. */
void lmpio__shared_delete(const char *path);
/* How many calls of this rank moved the pointer so far (or might have:
 * seeks, views, shared and ordered accesses); read_records_ordered keeps
 * its unfinished record only while this stays. */
unsigned long long lmpio__shared_moves(lmpio_file fh);
/* Counts a move of the pointer (lmpio__shared_moves). */
void lmpio__shared_note_move(lmpio_file fh);
/* seek_shared after its entry's checks (rc: this rank's outcome so far). */
int lmpio__shared_seek(lmpio_file fh, int rc, MPI_Offset offset, int whence, const char *call);
/* Sets the pointer to 0 for a new view (collective, inside set_view). */
int lmpio__shared_reset(lmpio_file fh, const char *call);
int lmpio__shared_get(lmpio_file fh, MPI_Offset *value, const char *call);
/* The checks of write_shared / read_shared, then the pointer moves by the
 * *n etypes requested: the access is to start at etype *at. */
int lmpio__shared_reserve(lmpio_file fh, MPI_Count count, MPI_Datatype type, int dir, MPI_Offset *at,
                          MPI_Offset *n, const char *call);
/* The blocking write_shared / read_shared. */
int lmpio__shared_access(lmpio_file fh, void *buf, MPI_Count count, MPI_Datatype type, int dir,
                         MPI_Status *status, const char *call);
/* The ordered collectives; pre_rc: an error this rank already met (agreed
 * with the others).  *bytes receives the data bytes moved. */
int lmpio__ordered(lmpio_file fh, void *buf, MPI_Count count, MPI_Datatype type, int dir,
                   MPI_Count *bytes, int pre_rc, const char *call);
/* Its first step: the ranks' positions, and the shared pointer moved past
 * all of them; *at: this rank's first etype, *n: its etypes.  A failure
 * with *agreed set is every rank's already; otherwise (or on success) the
 * transfer's outcome still needs an agreement.  Every rank has its place
 * once it returns: independent shared-pointer calls may follow at once (a
 * split _begin returns to the program). */
int lmpio__ordered_reserve(lmpio_file fh, MPI_Count count, MPI_Datatype type, int dir, int pre_rc,
                           MPI_Offset *at, MPI_Offset *n, int *agreed, const char *call);

/* ---- stream: non-seekable files through rank 0 (stream.c) -------------- */

/* Whether path names a stream (a FIFO, socket or character device, or
 * "/dev/stdout" / "/dev/stdin": rank 0's standard output / input); -1 with
 * errno when it cannot be examined.  *kind: 0 not a stream, 1 a character
 * device, 2 a FIFO, socket or standard stream. */
int lmpio__pipe_kind(const char *path, int *kind);
/* Rank 0 opens the stream for amode (read-only or write-only). */
int lmpio__pipe_open(const char *path, int amode);
/* The stream state of a handle opened as one (every rank), and its
 * communicator (collective). */
int lmpio__pipe_init(lmpio_file fh, const char *call);
int lmpio__pipe_comm(lmpio_file fh, const char *call);
void lmpio__pipe_free(lmpio_file fh);
/* Every collective call on a stream handle calls this first (nothing for
 * other handles): requests of write_shared and read_shared made before are
 * served, and nobody waits for a rank 0 that waits for it. */
void lmpio__pipe_enter(lmpio_file fh, const char *call);
/* The failure of a write that no collective reported yet (rank 0; 0: none);
 * then counts as reported. */
int lmpio__pipe_unreported(lmpio_file fh);
/* Refuses a view a stream cannot have (a user representation, holes). */
int lmpio__pipe_check_view(lmpio_file fh, const lmpio__view *v, const char *call);
/* write_shared / read_shared and the ordered collectives on a stream. */
int lmpio__pipe_shared(lmpio_file fh, void *buf, MPI_Count count, MPI_Datatype type, int dir,
                       MPI_Count *bytes, const char *call);
int lmpio__pipe_ordered(lmpio_file fh, void *buf, MPI_Count count, MPI_Datatype type, int dir,
                        MPI_Count *bytes, int pre_rc, const char *call);

/* Bytes of this rank's write_shared records sent to rank 0 and not yet
 * received there (copies held in memory); a writer waits while they would
 * exceed LMPIO__PIPE_INFLIGHT_MAX (rank 0 has a server thread). */
#define LMPIO__PIPE_INFLIGHT_MAX ((MPI_Count)4 << 20)
MPI_Count lmpio__pipe_inflight(lmpio_file fh);

/* Frees read_records_ordered's state (records.c). */
void lmpio__records_free(lmpio_file fh);

/* ---- collective: the *_all calls (collective.c) ------------------------- */

/* The blocking collective calls.  pre_rc: an error this rank already met
 * (agreed with the others like the call's own checks, before any transfer).
 * Fails on every rank while a split collective is active. */
int lmpio__collective(lmpio_file fh, MPI_Offset offset, int use_fp, void *buf, MPI_Count count,
                      MPI_Datatype type, int dir, MPI_Status *status, int pre_rc, const char *call);
/* The transfer under them, from the call's first agreement on, on cp alone
 * (never the handle): the blocking calls' and the background jobs'.  rc:
 * this rank's outcome of the entry's checks; n etypes from data byte pos.
 * Returns the agreed outcome; *bytes: for the status; *fbytes: the file
 * data bytes the individual pointer moves past. */
/* The data byte of the view where a collective access at etype etpos
 * starts, or MPI_ERR_ARG when it overflows. */
int lmpio__coll_position(lmpio_file fh, MPI_Offset etpos, MPI_Offset *pos, const char *call);
int lmpio__coll_transfer(const lmpio__coll_plan *cp, int rc, MPI_Offset pos, MPI_Offset n, void *buf,
                         MPI_Count count, MPI_Datatype type, MPI_Count *bytes, MPI_Offset *fbytes,
                         const char *call);

#endif
