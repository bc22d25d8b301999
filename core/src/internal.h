/* Declarations shared by the files of the core; nothing here is exported.
 * Cross-file names are lmpio__<module>_<verb>. */
#ifndef LMPIO_INTERNAL_H
#define LMPIO_INTERNAL_H

#include "lmpio.h"
#include <stddef.h>
#include <stdint.h>

/* ---- error: classes, detailed messages, agreement ------------------- */

/* Records the detailed message of a failure for this thread and returns cls.
 * The message says which call failed, then the formatted text and the rank. */
int lmpio__err(int cls, const char *call, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Same, for a failed system call on a path: appends strerror(e) and maps e
 * to its MPI error class. */
int lmpio__err_errno(int e, const char *call, const char *what, const char *path);
int lmpio__errno_class(int e);
/* Collective agreement on the outcome of a call: every rank passes its own
 * class and a value that must be the same on every rank (or 0).  Returns the
 * class of the lowest failing rank on every rank, with its message;
 * MPI_ERR_NOT_SAME when the values differ. */
int lmpio__agree(MPI_Comm comm, int rc, long long same, const char *call);

/* ---- posix: the only place where storage errors are born ------------- */

/* Full transfers: retry EINTR and short transfers; pread stops at end of file.
 * Return the bytes moved, or -1 with errno set. */
long long lmpio__posix_pread_all(int fd, void *buf, size_t len, MPI_Offset off);
long long lmpio__posix_pwrite_all(int fd, const void *buf, size_t len, MPI_Offset off);
/* Byte-range locks (fcntl, whole-process); 0 or -1 with errno set. */
int lmpio__posix_lock(int fd, int write, MPI_Offset off, MPI_Offset len);
int lmpio__posix_unlock(int fd, MPI_Offset off, MPI_Offset len);
/* Whether fd's file lives in memory (tmpfs, ramfs): system calls are cheap
 * there, so moving small blocks one by one pays off sooner. */
int lmpio__posix_in_memory(int fd);

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
  int contiguous;             /* one segment: monotone and size == data span */
  lmpio__tm_node **owned;     /* children released with this node */
  int nowned;
};

typedef struct lmpio__datarep lmpio__datarep;

/* The flattened form of a datatype, cached on it; release when done. */
int lmpio__typemap_get(MPI_Datatype type, const lmpio__tm_node **node, const char *call);
/* The same laid out in a file representation (rep NULL: native): predefined
 * types take the representation's extents and portable types are rebuilt
 * with them.  Not cached. */
int lmpio__typemap_get_rep(MPI_Datatype type, const lmpio__datarep *rep,
                           const lmpio__tm_node **node, const char *call);
void lmpio__typemap_release(const lmpio__tm_node *node);
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

/* ---- datarep: registry and conversion driver -------------------------- */

/* Looks a representation up: *rep is NULL for "native".  Returns
 * MPI_ERR_UNSUPPORTED_DATAREP (with a message) for an unknown name. */
int lmpio__datarep_find(const char *name, const lmpio__datarep **rep, const char *call);
/* File extent of a predefined type in rep (MPI_ERR_CONVERSION when the
 * extent function fails, MPI_ERR_TYPE when rep has no such type). */
int lmpio__datarep_type_extent(const lmpio__datarep *rep, MPI_Datatype basic, MPI_Aint *ext);
/* Records the detailed message of a failed conversion or extent function:
 * what, followed by the text the function gave (lmpio_conversion_error_detail). */
int lmpio__datarep_error(int cls, const char *call, const char *what);
/* Data access through the view's representation, converting through a
 * bounded staging buffer.  *bytes receives native data bytes moved. */
int lmpio__datarep_access(lmpio_file fh, MPI_Offset offset, void *buf, int count,
                          MPI_Datatype type, int dir, MPI_Count *bytes, MPI_Offset *etypes,
                          const char *call);

/* ---- view ----------------------------------------------------------- */

typedef struct {
  MPI_Offset disp;
  MPI_Datatype etype, filetype;  /* our own handles (dups of derived types) */
  char datarep[MPI_MAX_DATAREP_STRING + 1];
  const lmpio__datarep *rep;     /* NULL for "native" */
  const lmpio__tm_node *ft;      /* laid out in the file's representation */
  MPI_Count esize;               /* etype size in bytes, in the file */
  MPI_Aint eextent;
  int contiguous;                /* data of the tiled filetype is one run */
  /* Some rank's view of this file has holes (agreed by set_view), so some
   * rank may sieve writes (read-modify-write of a window with holes): every
   * write must then hold a byte-range lock that such a sieve respects.  When
   * no rank's view has holes, independent writes take no locks. */
  int any_holes;
} lmpio__view;

/* Validates and builds a view into *v (which holds nothing yet). */
int lmpio__view_build(lmpio__view *v, MPI_Offset disp, MPI_Datatype etype,
                      MPI_Datatype filetype, const char *datarep, const char *call);
void lmpio__view_free(lmpio__view *v);
/* Absolute byte offset of data byte pos of the view. */
MPI_Offset lmpio__view_byte(const lmpio__view *v, MPI_Offset pos);
/* Data bytes of the view that lie before absolute byte offset x. */
MPI_Offset lmpio__view_data_before(const lmpio__view *v, MPI_Offset x);

/* ---- file handle ---------------------------------------------------- */

struct lmpio_file_s {
  MPI_Comm comm;
  int rank, size;
  char *path;
  int fd;
  int amode;
  int fd_readable;          /* opened O_RDWR or O_RDONLY (sieving writes need it) */
  int fd_in_memory;         /* the file is on tmpfs/ramfs (posix.c) */
  int atomic;
  lmpio__view view;
  MPI_Offset fp;            /* individual file pointer, in etypes */
  /* hints in effect */
  MPI_Offset ind_rd_buffer_size, ind_wr_buffer_size;
  MPI_Offset conv_buffer_size;  /* staging buffer of data conversions */
  int ds_read, ds_write;    /* 0 disable, 1 enable, 2 automatic */
  /* collective buffering (collective.c): romio_cb_read / romio_cb_write
   * (0 disable, 1 enable, 2 automatic), cb_buffer_size, cb_nodes (aggregators) */
  int cb_read, cb_write;
  int one_node;             /* every rank on one node: one page cache for all */
  MPI_Offset cb_buffer_size;
  MPI_Offset cb_nodes;
  /* The shared file pointer (shared.c), in etypes of the current view.  With
   * one rank it lives here; otherwise in a helper file beside the data file,
   * updated under a byte-range lock, created on first use, removed at close. */
  MPI_Offset sh_local;      /* the pointer when the communicator has one rank */
  MPI_Offset sh_initial;    /* its value while the helper file is empty */
  char *sh_path;
  int sh_fd;
  /* The split collective in progress (LMPIO__SPLIT_NONE: none), with the
   * buffer its _begin received (its _end must pass the same). */
  int split_kind;
  int split_rc;
  MPI_Count split_bytes;
  const void *split_buf;
};

/* Kinds of split collective (shared.c keeps the state, request.c and
 * shared.c start them). */
enum { LMPIO__SPLIT_NONE, LMPIO__SPLIT_READ_ORDERED, LMPIO__SPLIT_WRITE_ORDERED,
       LMPIO__SPLIT_READ_AT_ALL, LMPIO__SPLIT_WRITE_AT_ALL, LMPIO__SPLIT_READ_ALL,
       LMPIO__SPLIT_WRITE_ALL };

/* ---- access: independent data access -------------------------------- */

enum { LMPIO__READ = 0, LMPIO__WRITE = 1 };

/* Moves count items of type between buf and the view at data offset `offset`
 * (in etypes), converting when the view's representation is not native.
 * *bytes receives the (native) data bytes moved (short at end of file),
 * *etypes the whole etypes of the view they filled (for the pointers). */
int lmpio__access(lmpio_file fh, MPI_Offset offset, void *buf, int count, MPI_Datatype type,
                  int dir, MPI_Count *bytes, MPI_Offset *etypes, const char *call);
/* The same without conversion, at data byte pos of the view. */
int lmpio__access_at(lmpio_file fh, MPI_Offset pos, void *buf, int count,
                     MPI_Datatype type, int dir, MPI_Count *bytes, const char *call);
/* Packs (dir WRITE: user memory to p) or unpacks (READ: p to user memory)
 * n data bytes of the user's buffer buf, from where the memory-type cursor
 * mc stands; the cursor moves past them. */
void lmpio__access_copy(lmpio__cursor *mc, char *buf, char *p, MPI_Count n, int dir);
/* The blocking independent calls (explicit offset, or the individual pointer
 * when use_fp, which advances it); request.c starts nonblocking ones with it. */
int lmpio__independent(lmpio_file fh, MPI_Offset offset, int use_fp, void *buf, int count,
                       MPI_Datatype type, int dir, MPI_Status *status, const char *call);
/* Sets the hints in effect from an info object (unknown keys are ignored). */
void lmpio__file_apply_hints(lmpio_file fh, MPI_Info info);
/* A string hash for checking that ranks passed the same argument. */
long long lmpio__hash(const char *s);

/* Which file pointer a data access call uses. */
enum { LMPIO__EXPLICIT, LMPIO__INDIVIDUAL, LMPIO__SHARED };
/* Checks the arguments common to every data access call. */
int lmpio__check_access(lmpio_file fh, int count, MPI_Datatype type, int dir, int pointer,
                        const char *call);
/* Number of etypes that count items of type make in the view, or an error. */
int lmpio__count_etypes(lmpio_file fh, int count, MPI_Datatype type, MPI_Offset *n,
                        const char *call);

/* ---- shared: the shared file pointer -------------------------------- */

/* Called by open on every rank once the file is open (collective). */
int lmpio__shared_init(lmpio_file fh, MPI_Offset initial, const char *call);
/* Called by close after every rank closed the file: removes the helper. */
void lmpio__shared_free(lmpio_file fh);
/* Sets the pointer to 0 for a new view (collective, inside set_view). */
int lmpio__shared_reset(lmpio_file fh, const char *call);
int lmpio__shared_get(lmpio_file fh, MPI_Offset *value, const char *call);
void lmpio__set_status(MPI_Status *status, MPI_Count bytes);
/* The blocking write_shared / read_shared. */
int lmpio__shared_access(lmpio_file fh, void *buf, int count, MPI_Datatype type, int dir,
                         MPI_Status *status, const char *call);
/* Split collective state: records a _begin that succeeded on every rank;
 * _end checks kind and buffer, clears the state and fills the status. */
void lmpio__split_record(lmpio_file fh, int kind, const void *buf, MPI_Count bytes);
int lmpio__split_end(lmpio_file fh, int kind, const void *buf, MPI_Status *status, const char *call);

/* ---- collective: the *_all calls ---------------------------------------- */

/* The blocking collective calls.  pre_rc: an error this rank already met
 * (agreed with the others like the call's own checks, before any transfer).
 * Fails on every rank while a split collective is active. */
int lmpio__collective(lmpio_file fh, MPI_Offset offset, int use_fp, void *buf, int count,
                      MPI_Datatype type, int dir, MPI_Status *status, int pre_rc, const char *call);

#endif
