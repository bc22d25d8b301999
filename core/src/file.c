/* The file handle's lifecycle: open, close, delete; amode; hints; views;
 * size, preallocation, sync and atomicity. */
#include "run.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_fh(const struct lmpio_file_s *fh, const char *call) {
  if (fh == LMPIO_FILE_NULL) return lmpio__err(MPI_ERR_FILE, call, "file handle is LMPIO_FILE_NULL");
  return MPI_SUCCESS;
}

static int check_amode(int amode, const char *call) {
  int acc = ((amode & MPI_MODE_RDONLY) ? 1 : 0) + ((amode & MPI_MODE_RDWR) ? 1 : 0) +
            ((amode & MPI_MODE_WRONLY) ? 1 : 0);
  int known = MPI_MODE_RDONLY | MPI_MODE_RDWR | MPI_MODE_WRONLY | MPI_MODE_CREATE |
              MPI_MODE_EXCL | MPI_MODE_DELETE_ON_CLOSE | MPI_MODE_UNIQUE_OPEN |
              MPI_MODE_SEQUENTIAL | MPI_MODE_APPEND;
  if (amode & ~known) return lmpio__err(MPI_ERR_AMODE, call, "unknown bits 0x%x in amode", amode & ~known);
  if (acc != 1)
    return lmpio__err(MPI_ERR_AMODE, call, "amode must have exactly one of MPI_MODE_RDONLY, MPI_MODE_RDWR, MPI_MODE_WRONLY");
  if ((amode & MPI_MODE_RDONLY) && (amode & (MPI_MODE_CREATE | MPI_MODE_EXCL)))
    return lmpio__err(MPI_ERR_AMODE, call, "MPI_MODE_CREATE and MPI_MODE_EXCL are not allowed with MPI_MODE_RDONLY");
  if ((amode & MPI_MODE_RDWR) && (amode & MPI_MODE_SEQUENTIAL))
    return lmpio__err(MPI_ERR_AMODE, call, "MPI_MODE_SEQUENTIAL is not allowed with MPI_MODE_RDWR");
  return MPI_SUCCESS;
}

/* Opens path; with create, *created says whether this call made the file
 * (so a failed collective open can remove it again). */
static int open_fd_once(const char *path, int amode, int create, int *readable, int *created) {
  int flags = (amode & MPI_MODE_RDONLY) ? O_RDONLY : O_RDWR;
  int fd = -1;
  *created = 0;
  if (create) {
    fd = lmpio__os_open(path, flags | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) *created = 1;
    else if (errno != EEXIST || (amode & MPI_MODE_EXCL)) create = -1; /* a real failure, or EXCL */
  }
  if (fd < 0 && create != -1) fd = lmpio__os_open(path, flags | O_CLOEXEC, 0666);
  *readable = 1;
  /* Write-only files are opened read-write for data sieving when allowed. */
  if (fd < 0 && errno == EACCES && (amode & MPI_MODE_WRONLY) && create != -1) {
    fd = lmpio__os_open(path, O_WRONLY | O_CLOEXEC, 0666);
    *readable = 0;
  }
  /* A directory opens read-only but is not a file: refuse it as open(2)
   * does for writers. */
  struct stat st;
  if (fd >= 0 && lmpio__os_fstat(fd, &st) < 0) {
    int e = errno;
    lmpio__os_close(fd);
    errno = e;
    fd = -1;
  } else if (fd >= 0 && S_ISDIR(st.st_mode)) {
    lmpio__os_close(fd);
    errno = EISDIR;
    fd = -1;
  }
  return fd;
}

/* A caching client may still hold the name of a file that another machine
 * has removed since, and perhaps made again (a FUSE client within its entry
 * timeout): the open, or the first request of the descriptor it gave, then
 * fails with ESTALE, and the client looks the name up anew for the next
 * try.  Opens are tried again, backing off, as NFS's own client does. */
enum { STALE_TRIES = 10 }; /* pauses of 1, 2, 4, ... 512 ms: 1 s in all */

static int open_fd(const char *path, int amode, int create, int *readable, int *created) {
  for (int attempt = 0;; attempt++) {
    int fd = open_fd_once(path, amode, create, readable, created);
    if (fd >= 0 || errno != ESTALE || attempt == STALE_TRIES) return fd;
    lmpio__os_pause_ms(1L << attempt);
  }
}

/* Open is a synchronisation point: a caching client forgets what it cached
 * of the file before (another job may have written it since).  A refresh
 * that fails with ESTALE reached a file the server no longer has (above):
 * the name is opened again, and the new descriptor takes the old one's
 * place (nothing holds it yet: no lock, and the caching driver maps
 * nothing). */
static int refresh_fd(lmpio_file fh, const char *path, const char *call) {
  for (int attempt = 0;; attempt++) {
    if (fh->drv->refresh(fh->fd) == 0) return MPI_SUCCESS;
    if (errno != ESTALE || attempt == STALE_TRIES)
      return lmpio__os_error(errno, call, "cannot refresh the client's cache of", path);
    lmpio__os_pause_ms(1L << attempt);
    int readable, unused;
    int fd = open_fd(path, fh->amode & ~MPI_MODE_EXCL, 0, &readable, &unused);
    if (fd < 0) return lmpio__os_error(errno, call, "cannot open", path);
    lmpio__os_close(fh->fd);
    fh->fd = fh->workers.fd = fd;
    fh->fd_readable = readable;
    fh->fd_in_memory = lmpio__os_in_memory(fd);
    /* MPI_MODE_APPEND: the pointers start at the end of the file found now. */
    if ((fh->amode & MPI_MODE_APPEND) && fh->drv->size(fd, &fh->fp) < 0)
      return lmpio__os_error(errno, call, "cannot stat", path);
  }
}

/* The aggregators of two-phase calls for hints h on fh's nodes. */
static int choose_aggregators(lmpio_file fh, const lmpio__hints *h, int *agg, int *n, const char *call) {
  *n = lmpio__nodes_aggregators(&fh->nodes, h->cb_config_list, h->cb_nodes, agg, LMPIO__MAX_AGGREGATORS);
  return *n < 0 ? lmpio__err(MPI_ERR_NO_MEM, call, "out of memory") : MPI_SUCCESS;
}

static void set_aggregators(lmpio_file fh, const int *agg, int n) {
  memcpy(fh->aggr, agg, sizeof(int) * (size_t)n);
  fh->naggr = n;
}

/* Keys of info nobody knows: kept for get_info, reported by rank 0. */
static void note_unknown(lmpio_file fh, MPI_Info info) {
  if (lmpio__hints_unknown(info, fh->unknown_hints, sizeof fh->unknown_hints))
    lmpio__hints_warn(&fh->hints, fh->unknown_hints, fh->rank);
}

static void free_handle(lmpio_file fh) {
  if (!fh) return;
  lmpio__nodes_free(&fh->nodes);
  lmpio__pipe_free(fh);
  lmpio__records_free(fh);
  if (fh->comm != MPI_COMM_NULL) {
    lmpio__handle_comm_release(&fh->comm, fh->comm_slot);
  }
  lmpio__prologue_drop(fh);
  lmpio__view_free(&fh->view);
  lmpio__filemap_free(fh->map);
  lmpio__stats_free(fh->stats);
  free(fh->path);
  free(fh);
}

int lmpio_file_open(MPI_Comm comm, const char *filename, int amode, MPI_Info info,
                    lmpio_file *fhp) {
  const char *call = "lmpio_file_open";
  if (!fhp) return lmpio__err(MPI_ERR_ARG, call, "fh is NULL");
  *fhp = LMPIO_FILE_NULL;
  int inter = 0;
  if (comm == MPI_COMM_NULL || MPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
    return lmpio__err(MPI_ERR_COMM, call, "invalid or inter-communicator");
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int rc = MPI_SUCCESS;
  lmpio__hints hints;
  lmpio__hints_default(&hints, size);
  rc = lmpio__pending(rc, call);
  if (rc != MPI_SUCCESS) {
    /* a binding's argument error: agreed below */
  } else if (!filename || !*filename) {
    rc = lmpio__err(MPI_ERR_BAD_FILE, call, "empty or NULL file name");
  } else {
    rc = check_amode(amode, call);
  }
  if (rc == MPI_SUCCESS) rc = lmpio__hints_parse(&hints, info, size, call);
  long long same[2 + LMPIO__HINTS_SAME] = {rc == MPI_SUCCESS ? lmpio__hash(filename) : 0, rc == MPI_SUCCESS ? amode : 0};
  lmpio__hints_same(&hints, rc == MPI_SUCCESS, same + 2);
  char labels[512] = "file names|access modes (amode)";
  lmpio__hints_same_labels(labels, sizeof labels);
  /* The driver: a prefix names it, else the hint, else the file system
   * (below, once the file is open).  A prefix comes first: an info from
   * get_info, passed on, names the driver of another file. */
  char why[256] = "";
  int drv_id = -1, fs_known = 1;
  const char *path = rc == MPI_SUCCESS ? lmpio__driver_prefix(filename, &drv_id, why, sizeof why) : "";
  if (drv_id < 0 && hints.fs_driver != LMPIO__HINT_FS_AUTOMATIC) {
    drv_id = hints.fs_driver - 1;
    snprintf(why, sizeof why, "the hint lmpio_fs_driver");
  }
  /* Rank 0 looks whether the path is a stream (a pipe, a FIFO, a terminal,
   * "/dev/stdout"): then only rank 0 opens it (stream.c).  Its answer, and
   * whether every rank kept the nodes of comm from an open before, come
   * with the agreement on the arguments: [missing, kind, errno]. */
  int kind[2] = {0, 0}; /* the kind, errno */
  if (rank == 0 && rc == MPI_SUCCESS && lmpio__pipe_kind(path, &kind[0]) < 0) kind[1] = errno;
  const lmpio__nodes *kept = lmpio__nodes_kept(comm);
  long long known[4] = {kept == NULL, kind[0], kind[1], !lmpio__handle_comm_idle(comm)}; /* (only rank 0's kind and errno are not 0) */
  rc = lmpio__agree_values(comm, rc, same, 2 + LMPIO__HINTS_SAME, labels, known, 4, call);
  if (rc != MPI_SUCCESS) return rc;
  long long missing = known[0];
  int reuse = known[3] == 0; /* every rank has a communicator kept from a closed handle */
  kind[0] = (int)known[1];
  kind[1] = (int)known[2];
  /* The handle's communicator, from here on the one the agreements use. */
  MPI_Comm hcomm = MPI_COMM_NULL;
  void *hslot = NULL;
  if (lmpio__handle_comm_take(comm, reuse, &hcomm, &hslot) != MPI_SUCCESS)
    return lmpio__err(MPI_ERR_COMM, call, "cannot duplicate the communicator");
  lmpio__exchange_attach(hcomm);

  int fd = -1, readable = 1, created = 0, create = (amode & MPI_MODE_CREATE) != 0;
  int stream = kind[0] == 2 || (kind[0] == 1 && (amode & MPI_MODE_SEQUENTIAL));
  if (kind[1] != 0) {
    errno = kind[1];
  } else if (stream && !(amode & MPI_MODE_SEQUENTIAL)) {
    errno = ESPIPE; /* said below */
  } else if (stream) {
    if (rank == 0) fd = lmpio__pipe_open(path, amode);
    int e = rank == 0 && fd < 0 ? errno : 0;
    MPI_Bcast(&e, 1, MPI_INT, 0, comm);
    errno = e;
    if (e == 0 && rank != 0) fd = -2; /* no descriptor, and no failure */
  } else if (create) {
    /* Rank 0 creates the file and closes it again; then every rank opens
     * it alike.  A caching client keeps pages of the descriptor that
     * created the file, which other machines' writes do not refresh. */
    int e = 0;
    if (rank == 0) {
      fd = open_fd(path, amode, 1, &readable, &created);
      e = fd < 0 ? errno : 0;
      if (fd >= 0) lmpio__os_close(fd);
      fd = -1;
    }
    MPI_Bcast(&e, 1, MPI_INT, 0, comm);
    int unused;
    if (e == 0) fd = open_fd(path, amode & ~MPI_MODE_EXCL, 0, &readable, &unused);
    else errno = e;
    /* Removed since rank 0 made it (by another program: MPI_MODE_CREATE
     * still means the file is there after the open): made again. */
    if (e == 0 && fd < 0 && errno == ENOENT) fd = open_fd(path, amode & ~MPI_MODE_EXCL, 1, &readable, &unused);
  } else {
    fd = open_fd(path, amode, 0, &readable, &created);
  }
  if (stream && !(amode & MPI_MODE_SEQUENTIAL) && kind[1] == 0)
    rc = lmpio__err(MPI_ERR_UNSUPPORTED_OPERATION, call,
                    "\"%s\" is a pipe, a FIFO, a socket or a standard stream (no file offsets): open it with MPI_MODE_SEQUENTIAL",
                    path);
  else rc = fd < 0 && fd != -2 ? lmpio__os_error(errno, call, "cannot open", path) : MPI_SUCCESS;
  if (fd == -2) fd = -1;

  lmpio_file fh = NULL;
  if (rc == MPI_SUCCESS) {
    fh = calloc(1, sizeof *fh);
    if (fh) {
      fh->comm = hcomm;
      fh->comm_slot = hslot;
      hcomm = MPI_COMM_NULL;
      fh->path = strdup(path);
      fh->stats = lmpio__stats_new(); /* none: nothing is counted */
    }
    if (!fh || !fh->path) rc = lmpio__err(MPI_ERR_NO_MEM, call, "out of memory");
  }
  if (rc == MPI_SUCCESS) {
    fh->fd = fd;
    fh->workers.fd = fd;
    fh->workers.path = fh->path;
    fh->amode = amode;
    fh->fd_readable = readable;
    fh->fd_in_memory = lmpio__os_in_memory(fd);
    if (stream) {
      drv_id = LMPIO__FS_STREAM;
      snprintf(why, sizeof why, "a pipe, FIFO, socket, terminal or standard stream");
    } else if (drv_id < 0) {
      drv_id = lmpio__driver_of_fd(fd, why, sizeof why, &fs_known);
    }
    fh->drv = lmpio__driver_by_id(drv_id);
    snprintf(fh->drv_why, sizeof fh->drv_why, "%s", why);
    fh->rank = rank;
    fh->size = size;
    fh->hints = hints;
    rc = lmpio__view_build(&fh->view, 0, MPI_BYTE, MPI_BYTE, "native", 1, call);
    if (fh->drv->map_reads && readable && fd >= 0)
      fh->map = lmpio__filemap_new(fd, !(amode & MPI_MODE_RDONLY), fh->fd_in_memory);
  }
  if (rc == MPI_SUCCESS && stream) rc = lmpio__pipe_init(fh, call);
  if (rc == MPI_SUCCESS && (amode & MPI_MODE_APPEND) && !stream) {
    /* The default view counts bytes: the pointers start at the end. */
    if (fh->drv->size(fd, &fh->fp) < 0) rc = lmpio__os_error(errno, call, "cannot stat", path);
  }
  rc = lmpio__agree(fh ? fh->comm : hcomm, rc, 0, call);
  if (rc == MPI_SUCCESS) fh->workers.comm = fh->comm;
  if (rc == MPI_SUCCESS && stream) rc = lmpio__agree(fh->comm, lmpio__pipe_comm(fh, call), 0, call);
  /* The nodes and the aggregators; the most cautious driver any rank chose
   * (ranks whose clients differ, one caches, one does not, all take the
   * caching one's care); the largest block any rank's file system reports,
   * so that every rank cuts the same file domains. */
  int copied = MPI_SUCCESS;
  if (rc == MPI_SUCCESS && !missing && lmpio__nodes_copy(kept, &fh->nodes) < 0)
    copied = lmpio__err(MPI_ERR_NO_MEM, call, "out of memory"); /* (agreed below) */
  if (rc == MPI_SUCCESS && missing) {
    rc = lmpio__nodes_find(fh->comm, &fh->nodes, call);
    if (rc == MPI_SUCCESS) lmpio__nodes_keep(comm, &fh->nodes);
  }
  if (rc == MPI_SUCCESS && !fs_known) {
    /* A file system lmpio does not know: local under one kernel; on several
     * nodes its clients may cache, and the local driver would be wrong. */
    size_t len = strlen(why);
    if (fh->nodes.nnodes > 1) fh->drv = lmpio__driver_by_id(LMPIO__FS_CACHING);
    snprintf(why + len, sizeof why - len, fh->nodes.nnodes > 1 ? ": the ranks run on several nodes, so caching "
             "(right on every file system; hint lmpio_fs_driver=coherent if its clients keep no stale pages)"
             : ": every rank runs under one kernel, so local (hint lmpio_fs_driver=caching if its clients cache)");
    snprintf(fh->drv_why, sizeof fh->drv_why, "%s", why);
  }
  if (rc == MPI_SUCCESS) {
    int agg[LMPIO__MAX_AGGREGATORS], n = 0;
    long long max[2] = {fh->drv->id, fh->drv->block && fd >= 0 ? fh->drv->block(fd) : 0};
    int own = copied != MPI_SUCCESS ? copied : choose_aggregators(fh, &fh->hints, agg, &n, call);
    rc = lmpio__agree_values(fh->comm, own, NULL, 0, NULL, max, 2, call);
    if (rc == MPI_SUCCESS) set_aggregators(fh, agg, n);
    fh->one_node = fh->nodes.nnodes == 1;
    if (max[0] != fh->drv->id) {
      fh->drv = lmpio__driver_by_id((int)max[0]);
      snprintf(fh->drv_why, sizeof fh->drv_why, "another rank's file system (this rank's: %.200s)", why);
    }
    if (!fh->drv->map_reads) { /* (made for the driver this rank chose alone) */
      lmpio__filemap_free(fh->map);
      fh->map = NULL;
    }
    fh->fs_block = max[1] > 0 && max[1] <= 1 << 30 ? max[1] : 4096;
  }
  if (rc == MPI_SUCCESS) {
    int own = fh->drv->refresh && fd >= 0 ? refresh_fd(fh, path, call) : MPI_SUCCESS;
    fd = fh->fd;
    int src = lmpio__shared_init(fh, fh->fp, call);
    rc = lmpio__agree(fh->comm, src != MPI_SUCCESS ? src : own, 0, call);
  }
  if (rc != MPI_SUCCESS) {
    if (fd >= 0) lmpio__os_close(fd);
    if (fh) lmpio__shared_free(fh);
    free_handle(fh);
    if (hcomm != MPI_COMM_NULL) lmpio__handle_comm_release(&hcomm, hslot); /* (fh was never made) */
    /* A file this open created goes again: a failed open leaves nothing. */
    MPI_Barrier(comm);
    if (created) lmpio__os_unlink(path);
    return rc;
  }
  note_unknown(fh, info);
  lmpio__prologue_refresh(fh);
  *fhp = fh;
  return MPI_SUCCESS;
}

int lmpio_file_close(lmpio_file *fhp) {
  const char *call = "lmpio_file_close";
  if (!fhp || *fhp == LMPIO_FILE_NULL) return lmpio__err(MPI_ERR_FILE, call, "file handle is LMPIO_FILE_NULL");
  lmpio_file fh = *fhp;
  /* A call on this handle is in progress (a conversion function is closing
   * the file it converts for): refuse, here, without the collective. */
  if (fh->busy > 0)
    return lmpio__err(MPI_ERR_FILE, call, "file \"%s\" is in use by a call in progress on this rank", fh->path);
  /* Outstanding nonblocking operations finish first (async.c). */
  lmpio__async_wait(&fh->workers);
  /* A failure a binding asked for fails the close everywhere, and every
   * rank keeps its handle; so does a rank that entered another call. */
  lmpio__pipe_enter(fh, call);
  int rc = lmpio__pending(MPI_SUCCESS, call);
  /* Close is a synchronisation point: a caching client flushes what it
   * wrote before the agreement and forgets what it cached after it (below),
   * so that whoever reads the file next, through lmpio or not, reads what
   * every rank wrote.  A failed flush fails the close but not the closing. */
  int flushed = MPI_SUCCESS;
  if (rc == MPI_SUCCESS && fh->drv->refresh && fh->fd >= 0 && lmpio__os_fsync(fh->fd) < 0)
    flushed = lmpio__os_error(errno, call, "cannot flush", fh->path);
  /* The first exchange also tells whether some rank's LMPIO_STATS asks
   * for a summary (then one reduction more, below). */
  long long summary = lmpio__stats_wanted();
  lmpio__first first = {.max = &summary, .nmax = 1};
  rc = lmpio__agree_first(fh->comm, rc, &first, call);
  if (rc != MPI_SUCCESS) return rc;
  if (fh->drv->refresh && fh->fd >= 0 && fh->drv->refresh(fh->fd) < 0 && flushed == MPI_SUCCESS)
    flushed = lmpio__os_error(errno, call, "cannot refresh the client's cache of", fh->path);
  if (fh->requests_close) fh->requests_close(fh); /* freed requests' reads convert now (request.c) */
  lmpio__async_close(&fh->workers);
  if (summary) lmpio__stats_summary(fh->stats, fh->comm, fh->path);
  lmpio__transfer_trim();
  if (fh->split.job) { /* a split collective never ended: its transfer is done */
    lmpio__async_release(fh->split.job);
    fh->split.job = NULL;
  }
  /* A stream's failed write that no collective call reported yet (one of
   * write_shared's, served by rank 0) is reported now, on every rank. */
  rc = lmpio__pipe_unreported(fh);
  if (rc == MPI_SUCCESS) rc = flushed;
  lmpio__filemap_stamp(fh->map);
  if (fh->fd >= 0 && lmpio__os_close(fh->fd) < 0 && rc == MPI_SUCCESS)
    rc = lmpio__os_error(errno, call, "cannot close", fh->path);
  /* Agreement doubles as the barrier before a delete-on-close. */
  rc = lmpio__agree(fh->comm, rc, 0, call);
  if (fh->amode & MPI_MODE_DELETE_ON_CLOSE) {
    /* Every rank has closed; the file is gone when close returns anywhere. */
    int drc = MPI_SUCCESS;
    if (fh->rank == 0 && lmpio__os_unlink(fh->path) < 0 && errno != ENOENT)
      drc = lmpio__os_error(errno, call, "cannot delete", fh->path);
    drc = lmpio__agree(fh->comm, drc, 0, call);
    if (rc == MPI_SUCCESS) rc = drc;
  }
  lmpio__shared_free(fh);
  free_handle(fh);
  *fhp = LMPIO_FILE_NULL;
  return rc;
}

int lmpio_file_delete(const char *filename, MPI_Info info) {
  const char *call = "lmpio_file_delete";
  (void)info;
  if (!filename || !*filename) return lmpio__err(MPI_ERR_BAD_FILE, call, "empty or NULL file name");
  char why[256];
  int id;
  const char *path = lmpio__driver_prefix(filename, &id, why, sizeof why);
  if (lmpio__os_unlink(path) < 0) return lmpio__os_error(errno, call, "cannot delete", path);
  lmpio__shared_delete(path);
  return MPI_SUCCESS;
}

/* set_size and preallocate: arguments agreed, rank 0 acts, outcome agreed. */
static int resize(lmpio_file fh, MPI_Offset size, int grow_only, const char *call) {
  lmpio__async_wait(&fh->workers); /* outstanding nonblocking operations first */
  lmpio__pipe_enter(fh, call);
  int rc = lmpio__pending(MPI_SUCCESS, call);
  if (rc == MPI_SUCCESS && size < 0) rc = lmpio__err(MPI_ERR_ARG, call, "negative size %lld", (long long)size);
  else if (rc == MPI_SUCCESS && (fh->amode & MPI_MODE_RDONLY))
    rc = lmpio__err(MPI_ERR_READ_ONLY, call, "file \"%s\" was opened MPI_MODE_RDONLY", fh->path);
  else if (rc == MPI_SUCCESS && (fh->amode & MPI_MODE_SEQUENTIAL))
    rc = lmpio__err(MPI_ERR_UNSUPPORTED_OPERATION, call, "not allowed on file \"%s\" opened MPI_MODE_SEQUENTIAL", fh->path);
  lmpio__first f = {.same = (long long[]){rc == MPI_SUCCESS ? size : 0}, .nsame = 1, .labels = "sizes"};
  rc = lmpio__agree_first(fh->comm, rc, &f, call);
  if (rc != MPI_SUCCESS) return rc;
  if (fh->rank == 0) {
    MPI_Offset now;
    if (fh->drv->size(fh->fd, &now) < 0) {
      rc = lmpio__os_error(errno, call, "cannot stat", fh->path);
    } else if (!grow_only) {
      if (now != size && lmpio__os_ftruncate(fh->fd, size) < 0)
        rc = lmpio__os_error(errno, call, "cannot truncate", fh->path);
    } else if (size > now) {
      if (lmpio__os_fallocate(fh->fd, 0, size) < 0) rc = lmpio__os_error(errno, call, "cannot preallocate", fh->path);
    }
  }
  /* (Every rank: the file may be shorter than its mapping now.) */
  lmpio__filemap_forget(fh->map);
  return lmpio__agree(fh->comm, rc, 0, call);
}

int lmpio_file_set_size(lmpio_file fh, MPI_Offset size) {
  int rc = check_fh(fh, "lmpio_file_set_size");
  return rc ? rc : resize(fh, size, 0, "lmpio_file_set_size");
}

int lmpio_file_preallocate(lmpio_file fh, MPI_Offset size) {
  int rc = check_fh(fh, "lmpio_file_preallocate");
  return rc ? rc : resize(fh, size, 1, "lmpio_file_preallocate");
}

int lmpio_file_get_size(lmpio_file fh, MPI_Offset *size) {
  const char *call = "lmpio_file_get_size";
  int rc = check_fh(fh, call);
  if (rc) return rc;
  if (!size) return lmpio__err(MPI_ERR_ARG, call, "size is NULL");
  if (fh->drv->no_size) return lmpio__err(MPI_ERR_UNSUPPORTED_OPERATION, call, "file \"%s\" is %s", fh->path, fh->drv->no_size);
  if (fh->drv->size(fh->fd, size) < 0) return lmpio__os_error(errno, call, "cannot stat", fh->path);
  return MPI_SUCCESS;
}

int lmpio_file_get_group(lmpio_file fh, MPI_Group *group) {
  const char *call = "lmpio_file_get_group";
  int rc = check_fh(fh, call);
  if (rc) return rc;
  if (!group) return lmpio__err(MPI_ERR_ARG, call, "group is NULL");
  return MPI_Comm_group(fh->comm, group) == MPI_SUCCESS ? MPI_SUCCESS
                                                         : lmpio__err(MPI_ERR_OTHER, call, "MPI_Comm_group failed");
}

int lmpio_file_get_amode(lmpio_file fh, int *amode) {
  const char *call = "lmpio_file_get_amode";
  int rc = check_fh(fh, call);
  if (rc) return rc;
  if (!amode) return lmpio__err(MPI_ERR_ARG, call, "amode is NULL");
  *amode = fh->amode;
  return MPI_SUCCESS;
}

/* New hints, agreed: a bad value on one rank fails the call on every rank,
 * and the hints every rank must pass alike are checked. */
static int set_hints(lmpio_file fh, MPI_Info info, int rc, const char *call) {
  lmpio__pipe_enter(fh, call);
  lmpio__hints h = fh->hints;
  int agg[LMPIO__MAX_AGGREGATORS], n = 0;
  rc = lmpio__pending(rc, call);
  if (rc == MPI_SUCCESS) rc = lmpio__hints_parse(&h, info, fh->size, call);
  if (rc == MPI_SUCCESS) rc = choose_aggregators(fh, &h, agg, &n, call);
  long long same[LMPIO__HINTS_SAME];
  lmpio__hints_same(&h, rc == MPI_SUCCESS, same);
  char labels[512] = "";
  lmpio__hints_same_labels(labels, sizeof labels);
  lmpio__first f = {.same = same, .nsame = LMPIO__HINTS_SAME, .labels = labels};
  rc = lmpio__agree_first(fh->comm, rc, &f, call);
  if (rc == MPI_SUCCESS) {
    fh->hints = h;
    set_aggregators(fh, agg, n);
    note_unknown(fh, info);
    lmpio__prologue_refresh(fh);
  }
  return rc;
}

int lmpio_file_set_info(lmpio_file fh, MPI_Info info) {
  const char *call = "lmpio_file_set_info";
  int rc = check_fh(fh, call);
  if (rc) return rc;
  return set_hints(fh, info, MPI_SUCCESS, call);
}

/* What the nodes decide: cb_nodes and cb_config_list in effect, the
 * aggregators' ranks (lmpio_aggregators, "0,2"; cut after the last rank
 * that fits, then "...") and the alignment of file domains
 * (lmpio_fd_alignment, bytes). */
static int nodes_to_info(lmpio_file fh, MPI_Info info) {
  char v[MPI_MAX_INFO_VAL + 1];
  snprintf(v, sizeof v, "%d", fh->naggr);
  if (MPI_Info_set(info, "cb_nodes", v) != MPI_SUCCESS) return MPI_ERR_INFO;
  const char *list = lmpio__nodes_list(&fh->nodes, fh->hints.cb_config_list, fh->hints.cb_nodes);
  if (MPI_Info_set(info, "cb_config_list", list) != MPI_SUCCESS) return MPI_ERR_INFO;
  size_t used = 0;
  for (int k = 0; k < fh->naggr; k++) {
    char r[16];
    int w = snprintf(r, sizeof r, "%s%d", k ? "," : "", fh->aggr[k]);
    if (used + (size_t)w + (k + 1 < fh->naggr ? 4 : 0) > MPI_MAX_INFO_VAL) {
      strcpy(v + used, ",...");
      break;
    }
    memcpy(v + used, r, (size_t)w + 1);
    used += (size_t)w;
  }
  if (MPI_Info_set(info, "lmpio_aggregators", v) != MPI_SUCCESS) return MPI_ERR_INFO;
  snprintf(v, sizeof v, "%lld", (long long)lmpio__domain_alignment(fh));
  return MPI_Info_set(info, "lmpio_fd_alignment", v) != MPI_SUCCESS ? MPI_ERR_INFO : MPI_SUCCESS;
}

int lmpio_file_get_info(lmpio_file fh, MPI_Info *info_used) {
  const char *call = "lmpio_file_get_info";
  int rc = check_fh(fh, call);
  if (rc) return rc;
  if (!info_used) return lmpio__err(MPI_ERR_ARG, call, "info_used is NULL");
  MPI_Info info;
  if (MPI_Info_create(&info) != MPI_SUCCESS) return lmpio__err(MPI_ERR_INFO, call, "MPI_Info_create failed");
  /* The hint lmpio_fs_driver says the driver in effect; a second key why. */
  lmpio__hints h = fh->hints;
  h.fs_driver = fh->drv->id + 1;
  if (lmpio__hints_to_info(&h, info) != MPI_SUCCESS || nodes_to_info(fh, info) != MPI_SUCCESS ||
      MPI_Info_set(info, "lmpio_version", LMPIO_VERSION) != MPI_SUCCESS ||
      MPI_Info_set(info, "lmpio_fs_driver_reason", fh->drv_why) != MPI_SUCCESS ||
      (*fh->unknown_hints && MPI_Info_set(info, "lmpio_unknown_hints", fh->unknown_hints) != MPI_SUCCESS)) {
    MPI_Info_free(&info);
    return lmpio__err(MPI_ERR_INFO, call, "MPI_Info_set failed");
  }
  *info_used = info;
  return MPI_SUCCESS;
}

int lmpio_file_set_atomicity(lmpio_file fh, int flag) {
  const char *call = "lmpio_file_set_atomicity";
  int rc = check_fh(fh, call);
  if (rc) return rc;
  lmpio__async_wait(&fh->workers); /* outstanding nonblocking operations keep the mode they started with */
  lmpio__pipe_enter(fh, call);
  rc = lmpio__pending(MPI_SUCCESS, call);
  lmpio__first f = {.same = (long long[]){rc == MPI_SUCCESS && flag != 0}, .nsame = 1, .labels = "atomicity flags"};
  rc = lmpio__agree_first(fh->comm, rc, &f, call);
  if (rc == MPI_SUCCESS) {
    fh->atomic = flag != 0;
    lmpio__prologue_refresh(fh);
  }
  return rc;
}

int lmpio_file_get_atomicity(lmpio_file fh, int *flag) {
  const char *call = "lmpio_file_get_atomicity";
  int rc = check_fh(fh, call);
  if (rc) return rc;
  if (!flag) return lmpio__err(MPI_ERR_ARG, call, "flag is NULL");
  *flag = fh->atomic;
  return MPI_SUCCESS;
}

int lmpio_file_sync(lmpio_file fh) {
  const char *call = "lmpio_file_sync";
  int rc = check_fh(fh, call);
  if (rc) return rc;
  lmpio__async_wait(&fh->workers); /* what outstanding writes wrote is synced too */
  lmpio__pipe_enter(fh, call); /* a stream: written as it came, nothing to sync */
  rc = lmpio__pending(MPI_SUCCESS, call);
  lmpio__filemap_stamp(fh->map); /* (writes through the mapping left the modification time) */
  if (rc == MPI_SUCCESS && fh->drv->sync(fh->fd) < 0) rc = lmpio__os_error(errno, call, "sync of", fh->path);
  /* Another handle's changes become visible at a sync: its set_size may
   * have cut the file under this handle's mapping. */
  lmpio__filemap_forget(fh->map);
  return lmpio__agree_first(fh->comm, rc, NULL, call);
}

/* ---- views --------------------------------------------------------------- */

int lmpio_file_set_view(lmpio_file fh, MPI_Offset disp, MPI_Datatype etype,
                        MPI_Datatype filetype, const char *datarep, MPI_Info info) {
  const char *call = "lmpio_file_set_view";
  if (fh == LMPIO_FILE_NULL) return lmpio__err(MPI_ERR_FILE, call, "file handle is LMPIO_FILE_NULL");
  lmpio__async_wait(&fh->workers); /* outstanding operations use the view they started with */
  lmpio__pipe_enter(fh, call);
  lmpio__view nv;
  memset(&nv, 0, sizeof nv);
  int rc = lmpio__pending(MPI_SUCCESS, call);
  int seq = (fh->amode & MPI_MODE_SEQUENTIAL) != 0;
  if (rc == MPI_SUCCESS && fh->split.kind != LMPIO__SPLIT_NONE)
    rc = lmpio__err(MPI_ERR_OTHER, call, "a split collective is active on file \"%s\"", fh->path);
  else if (rc == MPI_SUCCESS && disp == MPI_DISPLACEMENT_CURRENT && !seq)
    rc = lmpio__err(MPI_ERR_ARG, call, "MPI_DISPLACEMENT_CURRENT is only valid on files opened MPI_MODE_SEQUENTIAL");
  int first = 1;
  if (seq && fh->size > 1) {
    /* Synchronise before reading the shared pointer: every write_shared a
     * rank made before entering set_view has then moved it, whichever rank
     * reads first.  (Nobody resets it before all have read: the reset below
     * is collective.) */
    rc = lmpio__agree_first(fh->comm, rc, NULL, call);
    if (rc != MPI_SUCCESS) return rc;
    first = 0;
  }
  if (rc == MPI_SUCCESS && disp == MPI_DISPLACEMENT_CURRENT) {
    /* Sequential files: the new view starts where the shared pointer is. */
    MPI_Offset sh = 0, pos = 0;
    if ((rc = lmpio__shared_get(fh, &sh, call)) == MPI_SUCCESS) {
      if (!lmpio__mul_ok(sh, fh->view.esize, &pos)) rc = lmpio__err(MPI_ERR_ARG, call, "shared file pointer overflows");
      else rc = lmpio__view_byte(&fh->view, pos, &disp, call);
    }
  }
  lmpio__hints h = fh->hints;
  if (rc == MPI_SUCCESS) rc = lmpio__view_build(&nv, disp, etype, filetype, datarep, !(fh->amode & MPI_MODE_RDONLY), call);
  if (rc == MPI_SUCCESS && fh->drv->id == LMPIO__FS_STREAM) rc = lmpio__pipe_check_view(fh, &nv, call);
  int agg[LMPIO__MAX_AGGREGATORS], n = 0;
  if (rc == MPI_SUCCESS) rc = lmpio__hints_parse(&h, info, fh->size, call);
  if (rc == MPI_SUCCESS) rc = choose_aggregators(fh, &h, agg, &n, call);
  /* The data representation, the etype extent and the hints that must
   * match agree on every rank; the same reduction tells every rank whether
   * some view has holes. */
  long long same[2 + LMPIO__HINTS_SAME] = {rc == MPI_SUCCESS && datarep ? lmpio__hash(datarep) : 0,
                                          rc == MPI_SUCCESS ? nv.eextent : 0};
  lmpio__hints_same(&h, rc == MPI_SUCCESS, same + 2);
  char labels[512] = "data representations|etypes (their extents in the file differ)";
  lmpio__hints_same_labels(labels, sizeof labels);
  long long holes = rc == MPI_SUCCESS && nv.any_holes;
  lmpio__first f = {.same = same, .nsame = 2 + LMPIO__HINTS_SAME, .labels = labels, .max = &holes, .nmax = 1};
  rc = first ? lmpio__agree_first(fh->comm, rc, &f, call)
             : lmpio__agree_values(fh->comm, rc, same, 2 + LMPIO__HINTS_SAME, labels, &holes, 1, call);
  if (rc != MPI_SUCCESS) {
    lmpio__view_free(&nv);
    return rc;
  }
  nv.any_holes = (int)holes;
  lmpio__view_free(&fh->view);
  fh->view = nv;
  fh->fp = 0;
  fh->hints = h;
  set_aggregators(fh, agg, n);
  note_unknown(fh, info);
  lmpio__prologue_refresh(fh);
  return lmpio__shared_reset(fh, call);
}

int lmpio_file_get_view(lmpio_file fh, MPI_Offset *disp, MPI_Datatype *etype,
                        MPI_Datatype *filetype, char *datarep) {
  const char *call = "lmpio_file_get_view";
  if (fh == LMPIO_FILE_NULL) return lmpio__err(MPI_ERR_FILE, call, "file handle is LMPIO_FILE_NULL");
  if (!disp || !etype || !filetype || !datarep) return lmpio__err(MPI_ERR_ARG, call, "NULL output argument");
  return lmpio__view_get(&fh->view, disp, etype, filetype, datarep, call);
}

int lmpio_file_get_byte_offset(lmpio_file fh, MPI_Offset offset, MPI_Offset *disp) {
  const char *call = "lmpio_file_get_byte_offset";
  if (fh == LMPIO_FILE_NULL) return lmpio__err(MPI_ERR_FILE, call, "file handle is LMPIO_FILE_NULL");
  if (!disp) return lmpio__err(MPI_ERR_ARG, call, "disp is NULL");
  if (offset < 0) return lmpio__err(MPI_ERR_ARG, call, "negative offset %lld", (long long)offset);
  MPI_Offset pos;
  if (!lmpio__mul_ok(offset, fh->view.esize, &pos))
    return lmpio__err(MPI_ERR_ARG, call, "offset %lld (etypes of %lld bytes) overflows a 64-bit file position",
                      (long long)offset, (long long)fh->view.esize);
  return lmpio__view_byte(&fh->view, pos, disp, call);
}

static int type_extent(lmpio_file fh, MPI_Datatype datatype, MPI_Count *extent, const char *call) {
  if (fh == LMPIO_FILE_NULL) return lmpio__err(MPI_ERR_FILE, call, "file handle is LMPIO_FILE_NULL");
  if (!extent) return lmpio__err(MPI_ERR_ARG, call, "extent is NULL");
  const lmpio__tm_node *n;
  int rc = lmpio__typemap_get_rep(datatype, fh->view.rep, &n, call);
  if (rc != MPI_SUCCESS) return rc;
  *extent = n->extent;
  lmpio__typemap_release(n);
  return MPI_SUCCESS;
}

int lmpio_file_get_type_extent(lmpio_file fh, MPI_Datatype datatype, MPI_Aint *extent) {
  MPI_Count e = 0;
  int rc = type_extent(fh, datatype, extent ? &e : NULL, "lmpio_file_get_type_extent");
  if (rc == MPI_SUCCESS) *extent = (MPI_Aint)e;
  return rc;
}

int lmpio_file_get_type_extent_c(lmpio_file fh, MPI_Datatype datatype, MPI_Count *extent) {
  return type_extent(fh, datatype, extent, "lmpio_file_get_type_extent_c");
}

int lmpio_file_get_stats(lmpio_file fh, double *values, int max, int *n) {
  const char *call = "lmpio_file_get_stats";
  if (fh == LMPIO_FILE_NULL) return lmpio__err(MPI_ERR_FILE, call, "file handle is LMPIO_FILE_NULL");
  if (max < 0 || (max > 0 && !values)) return lmpio__err(MPI_ERR_ARG, call, "values is NULL or max negative");
  lmpio__stats_values(fh->stats, values, max, n);
  return MPI_SUCCESS;
}
