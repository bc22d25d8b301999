/* The data path: a plan (plan.c) turns a view, a position and a length into
 * windows of file pieces, each sieved or moved directly, with its lock; the
 * engine (engine.c) runs them, moving the bytes between the file and a
 * memory stream.  A plan is a snapshot: it holds what it needs (the view's
 * filetype, atomicity, hints, the descriptor) and no pointer into the
 * handle's mutable state, so it can run later. */
#ifndef LMPIO_PLAN_H
#define LMPIO_PLAN_H

/* File pieces: count blocks of len bytes, stride apart, from byte off. */
typedef struct { MPI_Offset off, len, stride, count; } lmpio__vec;

/* Lock a window takes (LOCK_NONE when the access holds one already). */
enum { LMPIO__LOCK_NONE, LMPIO__LOCK_SHARED, LMPIO__LOCK_EXCL };

typedef struct {
  lmpio__vec *v;
  size_t n, cap;
  MPI_Offset lo, hi;    /* the file bytes the pieces span */
  MPI_Count data;       /* data bytes of the pieces */
  int sieve;            /* one transfer of [lo, hi) and copies, or piece by piece */
  int fill;             /* sieved write: read [lo, hi) first (the pieces leave holes) */
  int lock;
  int zero_eof;         /* sieved read: bytes past end of file read as zero */
} lmpio__window;

typedef struct {
  int dir;
  int fd, fd_readable, fd_in_memory;
  const lmpio__driver *drv; /* the file system's operations on fd */
  const char *path;     /* for messages; the handle is held while a plan runs */
  MPI_Offset disp;
  const lmpio__tm_node *ft; /* retained */
  int contiguous;
  int atomic;
  int lock_direct;      /* direct writes take shared locks (some view has holes) */
  lmpio__gate *gate;    /* ... unless the handle's gate lets them go without (gate.c), or NULL */
  int sieve_check;      /* sieved writes ask other handles' gates first (a local file system) */
  lmpio__hints hints;
  const lmpio__datarep *rep;
  MPI_Count esize;
  lmpio__stats *stats;  /* the handle's counters (stats.h), or NULL */
  lmpio__filemap *map;  /* the handle's mapping of the file (filemap.c), or NULL */
  int aggregator;       /* two-phase's windows: counted as the aggregator's, not as this rank's data */
  int rank, size;       /* the handle's: where in a window this rank's stores begin (engine.c) */
} lmpio__plan;

void lmpio__plan_free(lmpio__plan *p);
/* The view p was made from, for the view's functions (v's filetype is
 * p's, borrowed; it has no etype or filetype handles). */
void lmpio__plan_view(const lmpio__plan *p, lmpio__view *v);

/* A collective transfer as initiated: the plan of the view and what the
 * rounds and the agreements need, taken from the handle once, so that a
 * background job runs after the handle changed (collrun.c runs it). */
typedef struct {
  lmpio__plan plan;     /* the view, in the call's direction */
  MPI_Comm comm;        /* the call's communicator (a job's: the worker's duplicate) */
  int rank, size;
  int one_node;         /* every rank on one node */
  int *way;             /* the handle's coll_way of the direction (run.h) */
  int naggr;            /* two-phase aggregators, and their ranks */
  int aggr[LMPIO__MAX_AGGREGATORS];
  MPI_Offset align;     /* of the file domains (lmpio__domain_alignment) */
} lmpio__coll_plan;

void lmpio__coll_plan_free(lmpio__coll_plan *cp);
/* Whether an access of total data bytes may go through a mapping of the
 * file (the driver, the hints, its size), and whether it then needs the
 * handle's kept mapping to serve it (automatic writes on a disk file
 * system); the engine finds out the rest (the file's size, the mapping). */
int lmpio__plan_may_map(const lmpio__plan *p, MPI_Offset total);
int lmpio__plan_needs_kept_map(const lmpio__plan *p);
/* The range atomic mode locks for data bytes [pos, pos + total): *lo, *hi;
 * MPI_ERR_NO_MEM when it cannot be found. */
int lmpio__plan_lock_range(const lmpio__plan *p, MPI_Offset pos, MPI_Offset total, MPI_Offset *lo, MPI_Offset *hi);
/* The sieve window size of the plan's direction. */
MPI_Count lmpio__plan_buffer(const lmpio__plan *p);

/* Walks data bytes [pos, end) of the view window by window. */
typedef struct {
  const lmpio__plan *p;
  MPI_Offset pos, end;
  int kind;
  lmpio__cursor fc;
  /* strided views: block k, byte koff of it */
  MPI_Offset first, len, stride, c, extent, k, koff;
  MPI_Offset segs;      /* segments of the window being built */
} lmpio__plan_iter;

int lmpio__plan_start(lmpio__plan_iter *it, const lmpio__plan *p, MPI_Offset pos, MPI_Offset end);
void lmpio__plan_stop(lmpio__plan_iter *it);
/* The next window, of at most bound file bytes (at least one piece);
 * decide: choose sieve or direct and the lock (otherwise w->sieve = 0).
 * Returns 1 with a window, 0 at the end, -1 out of memory. */
int lmpio__plan_next(lmpio__plan_iter *it, MPI_Offset bound, int decide, lmpio__window *w);
void lmpio__window_free(lmpio__window *w);
/* Appends pieces to w (merging with the last one where they continue it). */
int lmpio__window_push(lmpio__window *w, MPI_Offset off, MPI_Offset len, MPI_Offset stride,
                       MPI_Offset count);

/* The memory side of a transfer: count items of a memory type from buf. */
typedef struct {
  char *buf;
  const lmpio__tm_node *m;
  int contig;           /* data is one run at buf + m->data_lb */
  lmpio__cursor mc;
  MPI_Count done;       /* data bytes consumed */
  MPI_Count total;
} lmpio__stream;

/* The cursor of a stream whose memory is not contiguous (engine.c): the
 * two below are inline for the common contiguous case. */
int lmpio__stream_cursor(lmpio__stream *s);
void lmpio__stream_uncursor(lmpio__stream *s);
static inline int lmpio__stream_init(lmpio__stream *s, void *buf, const lmpio__tm_node *m, MPI_Count count) {
  /* Field by field: the cursor (half a KiB) is only used, and set, when
   * memory is not contiguous. */
  s->buf = buf;
  s->m = m;
  s->done = 0;
  s->total = count * m->size;
  s->contig = s->total == 0 || (m->contiguous && (count == 1 || m->size == m->extent));
  if (!s->contig) return lmpio__stream_cursor(s);
  s->buf = (char *)buf + (s->total ? m->data_lb : 0);
  return MPI_SUCCESS;
}
/* A stream over n contiguous bytes at buf. */
void lmpio__stream_bytes(lmpio__stream *s, void *buf, MPI_Count n);
static inline void lmpio__stream_free(lmpio__stream *s) {
  if (!s->contig) lmpio__stream_uncursor(s);
}
void lmpio__stream_seek(lmpio__stream *s, MPI_Count pos);
/* Copies n data bytes between the stream (at its position, which moves)
 * and p: to p for a write, from p for a read. */
void lmpio__stream_copy(lmpio__stream *s, char *p, MPI_Count n, int dir);

/* Scratch memory of the engine (the sieve buffer), reused across windows. */
typedef struct {
  char *stage;
  size_t size;
} lmpio__engine;

/* Runs one window against the stream; *eof is set when a read met end of
 * file (the stream then holds what was there). */
int lmpio__engine_window(const lmpio__plan *p, lmpio__engine *e, const lmpio__window *w,
                         lmpio__stream *s, int *eof, const char *call);
/* Moves the data bytes [pos, pos + s->total - s->done) of the plan's view;
 * reads stop early at end of file. */
int lmpio__engine_run(const lmpio__plan *p, MPI_Offset pos, lmpio__stream *s, const char *call);
void lmpio__engine_free(lmpio__engine *e);

#endif
