/* The run layer: the file handle, the argument prologue (prologue.c), the
 * runs shared by the entries and the background jobs (run.c, collrun.c),
 * the shared pointer's store with the shared and ordered runs (pointer.c)
 * and the stream server (stream.c).
 * The entries (access, collective, shared, request, records, file)
 * include this header and define public functions only.  Below: path.h. */
#ifndef LMPIO_RUN_H
#define LMPIO_RUN_H

#include "path.h"

/* ---- file handle ---------------------------------------------------- */

/* The split collective in progress (request.c): kind NONE when none. */
enum { LMPIO__SPLIT_NONE, LMPIO__SPLIT_READ_ORDERED, LMPIO__SPLIT_WRITE_ORDERED,
       LMPIO__SPLIT_READ_AT_ALL, LMPIO__SPLIT_WRITE_AT_ALL, LMPIO__SPLIT_READ_ALL,
       LMPIO__SPLIT_WRITE_ALL };
typedef struct {
  int kind;
  MPI_Count bytes;           /* for the status of _end */
  const void *buf;           /* _end must pass the same */
  lmpio__job *job;           /* the transfer running in the background, or NULL */
} lmpio__split;

typedef struct lmpio__shared lmpio__shared; /* pointer.c */
typedef struct lmpio__pipe lmpio__pipe;     /* stream.c */
typedef struct lmpio__records lmpio__records; /* records.c */
struct lmpio__records {
  MPI_Comm comm;
  char *carry; /* rank 0: the unfinished record, then room for the next chunk */
  MPI_Count carry_len, carry_cap;
  unsigned long long moves; /* lmpio__shared_moves after the last call's read */
};

struct lmpio_file_s {
  MPI_Comm comm;            /* a duplicate of the caller's (handle_comm.c) */
  void *comm_slot;          /* ... kept on the caller's for the next open, or NULL */
  int rank, size;
  char *path;
  int fd;
  int amode;
  int fd_readable;          /* opened O_RDWR or O_RDONLY (sieving writes need it) */
  int fd_in_memory;         /* the file is on tmpfs/ramfs (os.c) */
  int one_node;             /* every rank on one node: one page cache for all */
  int coll_way[2];          /* per direction, 1 when the last multi-node collective call went two-phase
                             * (the next read's guess, collrun.c); the same on every rank */
  lmpio__nodes nodes;       /* where the ranks run (found at open) */
  int naggr;                /* two-phase aggregators in effect (hints and nodes) */
  int aggr[LMPIO__MAX_AGGREGATORS]; /* their ranks, ascending (copied into collective plans) */
  MPI_Offset fs_block;      /* the file system's block size (agreed at open) */
  int atomic;
  int busy;                 /* calls in progress on this handle (close refuses) */
  lmpio__view view;
  MPI_Offset fp;            /* individual file pointer, in etypes */
  lmpio__hints hints;       /* in effect */
  lmpio__shared *shared;    /* the shared file pointer (pointer.c) */
  lmpio__gate *gate;        /* lets direct writes go without their lock (gate.c; pointer.c opens it), or NULL */
  lmpio__split split;       /* the split collective in progress (request.c) */
  lmpio__workers workers;   /* run the handle's nonblocking operations, one per lane (async.c) */
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
   * instead of building one per call.  Whatever changes a field that lmpio__prologue_plan
   * or lmpio__prologue_coll_plan reads calls lmpio__prologue_refresh (open,
   * set_view, set_info, set_atomicity). */
  lmpio__coll_plan plans[2];
};

/* Snapshot of fh for a transfer in direction dir (prologue.c); a
 * collective one over comm. */
void lmpio__prologue_plan(lmpio__plan *p, lmpio_file fh, int dir);
void lmpio__prologue_coll_plan(lmpio__coll_plan *cp, lmpio_file fh, MPI_Comm comm, int dir);
/* Rebuilds fh->plans from the handle as it is now (releasing the old
 * ones); _drop releases them (close).  Neither runs during a data access
 * call on fh: they are called by collective calls that change the handle. */
void lmpio__prologue_refresh(lmpio_file fh);
void lmpio__prologue_drop(lmpio_file fh);
/* The plan a blocking call on fh runs in direction dir: the handle's own,
 * or, on a view that converts (its functions may change the handle during
 * the call, which still runs the view it started with), a copy made into
 * *own, which the caller frees (lmpio__plan_free, or
 * lmpio__coll_plan_free for _coll_). */
static inline const lmpio__plan *lmpio__plan_of(lmpio_file fh, int dir, lmpio__plan *own) {
  if (!fh->view.rep) return &fh->plans[dir].plan;
  lmpio__prologue_plan(own, fh, dir);
  return own;
}
static inline const lmpio__coll_plan *lmpio__coll_plan_of(lmpio_file fh, int dir, lmpio__coll_plan *own) {
  if (!fh->view.rep) return &fh->plans[dir];
  lmpio__prologue_coll_plan(own, fh, fh->comm, dir);
  return own;
}


/* ---- prologue and runs: what the entries and the background jobs share
 * (prologue.c, run.c) ------------------------------------------------------ */

/* Which file pointer a data access call uses. */
enum { LMPIO__EXPLICIT, LMPIO__INDIVIDUAL, LMPIO__SHARED };

/* Checks the arguments common to every data access call: inline, one test
 * each; the error, when there is one, is _refused's (prologue.c). */
int lmpio__check_access_refused(lmpio_file fh, MPI_Count count, MPI_Datatype type, int dir, int pointer,
                                const char *call);
static inline int lmpio__check_access(lmpio_file fh, MPI_Count count, MPI_Datatype type, int dir, int pointer,
                                      const char *call) {
  int forbids = (dir == LMPIO__WRITE ? MPI_MODE_RDONLY : MPI_MODE_WRONLY) |
                (pointer != LMPIO__SHARED ? MPI_MODE_SEQUENTIAL : 0);
  if (fh != LMPIO_FILE_NULL && count >= 0 && type != MPI_DATATYPE_NULL && !(fh->amode & forbids))
    return MPI_SUCCESS;
  return lmpio__check_access_refused(fh, count, type, dir, pointer, call);
}
/* The etypes that count items whose layout in the file is m (looked up
 * once) make in the view, or an error: inline for the default etype
 * (MPI_BYTE, no division), _counted (prologue.c) for the rest and the
 * errors. */
int lmpio__etypes_counted(lmpio_file fh, MPI_Count count, const lmpio__tm_node *m, MPI_Offset *n, const char *call);
static inline int lmpio__etypes_of(lmpio_file fh, MPI_Count count, const lmpio__tm_node *m, MPI_Offset *n,
                                   const char *call) {
  MPI_Count total;
  if (fh->view.esize != 1 || __builtin_mul_overflow(count, m->size, &total) || (total > 0 && fh->view.empty))
    return lmpio__etypes_counted(fh, count, m, n, call);
  *n = total;
  return MPI_SUCCESS;
}
/* Number of etypes that count items of type make in the view, or an error;
 * _held also gives the type's layout in the file (held: NULL, or where it
 * goes, which the caller releases; NULL on failure). */
int lmpio__etypes_held(lmpio_file fh, MPI_Count count, MPI_Datatype type, MPI_Offset *n,
                       const lmpio__tm_node **held, const char *call);
int lmpio__count_etypes(lmpio_file fh, MPI_Count count, MPI_Datatype type, MPI_Offset *n,
                        const char *call);
/* Checks that n etypes from etype `offset` of view v have file offsets that
 * fit an MPI_Offset (MPI_ERR_COUNT, MPI_ERR_ARG); *pos: the data byte of offset. */
int lmpio__check_range(const lmpio__view *v, MPI_Offset offset, MPI_Offset n, MPI_Offset *pos, const char *call);
/* The frame of one transfer of n > 0 etypes from etype `offset` of fh's
 * view (the runs': run.c's, pointer.c's): _hold checks the range, holds fh
 * and takes the plan to run (lmpio__plan_of); nothing is held when it
 * fails.  _release lets both go and gives the whole etypes that fbytes
 * (the file data bytes moved) filled. */
typedef struct {
  const lmpio__plan *plan; /* the handle's, or &own */
  lmpio__plan own;
  MPI_Offset pos;          /* the data byte where the transfer starts */
} lmpio__held;
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
  lmpio__async_wait_independent(&fh->workers);
  fh->busy++;
}
static inline void lmpio__hold_all(lmpio_file fh) {
  lmpio__async_wait(&fh->workers);
  fh->busy++;
}
static inline void lmpio__release(lmpio_file fh) { fh->busy--; }
/* (lmpio__transfer_hold and _release, above: inline, as they frame every transfer) */
static inline int lmpio__transfer_hold(lmpio_file fh, MPI_Offset offset, MPI_Offset n, int dir, lmpio__held *h,
                                       const char *call) {
  int rc = lmpio__check_range(&fh->view, offset, n, &h->pos, call);
  if (rc != MPI_SUCCESS) return rc;
  lmpio__hold(fh);
  h->plan = lmpio__plan_of(fh, dir, &h->own);
  return MPI_SUCCESS;
}
static inline MPI_Offset lmpio__transfer_release(lmpio_file fh, lmpio__held *h, MPI_Offset fbytes) {
  if (h->plan == &h->own) lmpio__plan_free(&h->own);
  lmpio__release(fh);
  return fh->view.esize == 1 ? fbytes : fbytes / fh->view.esize;
}
/* The alignment of two-phase file domains: the hint striping_unit, else
 * the file system's block size. */
static inline MPI_Offset lmpio__domain_alignment(const struct lmpio_file_s *fh) {
  return fh->hints.striping_unit > 0 ? fh->hints.striping_unit : fh->fs_block;
}

/* ---- shared: the pointer's store and the shared runs (pointer.c) ------ */

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
                          MPI_Offset *n, const lmpio__tm_node **held, const char *call);
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
                           MPI_Offset *at, MPI_Offset *n, int *agreed, const lmpio__tm_node **held,
                           const char *call);

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

/* Frees read_records_ordered's state (records.c's; run.c). */
void lmpio__records_free(lmpio_file fh);

/* ---- collective: the run of the *_all calls (collrun.c) ----------------- */

/* The blocking collective calls.  pre_rc: an error this rank already met
 * (agreed with the others like the call's own checks, before any transfer).
 * Fails on every rank while a split collective is active. */
int lmpio__collective(lmpio_file fh, MPI_Offset offset, int use_fp, void *buf, MPI_Count count,
                      MPI_Datatype type, int dir, MPI_Status *status, int pre_rc, const char *call);
/* The data byte of the view where a collective access at etype etpos
 * starts, or MPI_ERR_ARG when it overflows. */
int lmpio__coll_position(lmpio_file fh, MPI_Offset etpos, MPI_Offset *pos, const char *call);
/* The transfer under them, from the call's first agreement on, on cp alone
 * (never the handle): the blocking calls' and the background jobs'.  rc:
 * this rank's outcome of the entry's checks; n etypes from data byte pos;
 * m: type's layout (native views), which the caller holds, or NULL: looked
 * up.  Returns the agreed outcome; *bytes: for the status; *fbytes: the
 * file data bytes the individual pointer moves past. */
int lmpio__coll_transfer(const lmpio__coll_plan *cp, int rc, MPI_Offset pos, MPI_Offset n, void *buf,
                         MPI_Count count, MPI_Datatype type, const lmpio__tm_node *m, MPI_Count *bytes,
                         MPI_Offset *fbytes, const char *call);

#endif
